//! Output files written under a temporary name beside them and renamed into place when done.
//!
//! A run that fails (a write error, a disk that fills up, a bad argument found at the first
//! record) then leaves an existing file of that name as it was, and a reader of the output
//! never sees half a file. The temporary file is created in the output's own directory (the
//! rename stays on one file system), hidden (`.NAME.XXXXXX.part`), with the permissions a new
//! file gets (or those of the file it replaces); a run killed with SIGKILL leaves it there.
//! An output that is a symbolic link is written where the link points (the link stays); one
//! that is not a regular file (`/dev/null`, a named pipe) is written directly.

use crate::OutputError;
use std::fs::{File, Permissions};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use tempfile::NamedTempFile;

/// Where an output's bytes go until it is complete.
pub enum Destination {
    /// A temporary file, renamed over the output by [`AtomicFile::commit`].
    Atomic(AtomicFile),
    /// The output itself (not a regular file: a device, a pipe).
    Direct(File),
}

/// A temporary file that becomes `target` when committed and disappears when dropped.
pub struct AtomicFile {
    temp: NamedTempFile,
    target: PathBuf,
}

impl Destination {
    /// Prepares to write `path`: a temporary file beside it, or `path` itself when it exists and
    /// is not a regular file.
    pub fn create(path: &Path) -> Result<Destination, OutputError> {
        let target = match std::fs::symlink_metadata(path) {
            Ok(m) if m.file_type().is_symlink() => {
                std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf())
            }
            _ => path.to_path_buf(),
        };
        let existing = std::fs::metadata(&target).ok();
        if existing.as_ref().is_some_and(|m| !m.is_file()) {
            let file =
                File::create(&target).map_err(|e| OutputError::io("cannot open", path, e))?;
            return Ok(Destination::Direct(file));
        }
        let name = target
            .file_name()
            .ok_or_else(|| {
                OutputError::io(
                    "cannot create",
                    path,
                    std::io::Error::new(std::io::ErrorKind::InvalidInput, "it names no file"),
                )
            })?
            .to_string_lossy()
            .into_owned();
        let dir = match target.parent() {
            Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
            _ => PathBuf::from("."),
        };
        // Created with mode 0666 less the umask, as File::create would; a replaced file's own
        // mode is kept.
        let temp = tempfile::Builder::new()
            .prefix(&format!(".{name}."))
            .suffix(".part")
            .permissions(Permissions::from_mode(0o666))
            .tempfile_in(&dir)
            .map_err(|e| OutputError::io("cannot create", path, e))?;
        if let Some(m) = existing {
            temp.as_file()
                .set_permissions(m.permissions())
                .map_err(|e| OutputError::io("cannot create", path, e))?;
        }
        Ok(Destination::Atomic(AtomicFile { temp, target }))
    }

    /// A handle to write the bytes through.
    pub fn writer(&self) -> Result<File, OutputError> {
        match self {
            Destination::Atomic(a) => a
                .temp
                .as_file()
                .try_clone()
                .map_err(|e| OutputError::io("cannot open", &a.target, e)),
            Destination::Direct(f) => f
                .try_clone()
                .map_err(|e| OutputError::io("cannot open", Path::new("the output"), e)),
        }
    }

    /// Puts the written bytes in place (a no-op for a direct output).
    pub fn commit(self) -> Result<(), OutputError> {
        match self {
            Destination::Atomic(a) => a.commit(),
            Destination::Direct(_) => Ok(()),
        }
    }
}

impl AtomicFile {
    /// Renames the temporary file over the target.
    pub fn commit(self) -> Result<(), OutputError> {
        let target = self.target;
        self.temp
            .persist(&target)
            .map(drop)
            .map_err(|e| OutputError::io("cannot rename the finished output to", &target, e.error))
    }
}

#[cfg(test)]
mod tests {
    use super::Destination;
    use std::io::Write;
    use std::os::unix::fs::PermissionsExt;

    fn entries(dir: &std::path::Path) -> Vec<String> {
        let mut v: Vec<String> = std::fs::read_dir(dir)
            .expect("list")
            .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
            .collect();
        v.sort();
        v
    }

    #[test]
    fn commit_replaces_drop_leaves_the_old_file() {
        let dir = tempfile::tempdir().expect("scratch");
        let out = dir.path().join("out.txt");
        std::fs::write(&out, "old").expect("write");
        std::fs::set_permissions(&out, std::fs::Permissions::from_mode(0o640)).expect("chmod");

        let d = Destination::create(&out).expect("create");
        d.writer()
            .expect("writer")
            .write_all(b"half")
            .expect("write");
        drop(d);
        assert_eq!(std::fs::read_to_string(&out).expect("read"), "old");
        assert_eq!(
            entries(dir.path()),
            ["out.txt"],
            "the temporary file is removed"
        );

        let d = Destination::create(&out).expect("create");
        d.writer()
            .expect("writer")
            .write_all(b"new")
            .expect("write");
        d.commit().expect("commit");
        assert_eq!(std::fs::read_to_string(&out).expect("read"), "new");
        let mode = std::fs::metadata(&out).expect("meta").permissions().mode();
        assert_eq!(mode & 0o777, 0o640, "the replaced file's mode is kept");
        assert_eq!(entries(dir.path()), ["out.txt"]);
    }

    #[test]
    fn a_symbolic_link_is_written_through() {
        let dir = tempfile::tempdir().expect("scratch");
        let real = dir.path().join("real.bin");
        std::fs::write(&real, "old").expect("write");
        let link = dir.path().join("link.bin");
        std::os::unix::fs::symlink(&real, &link).expect("symlink");
        let d = Destination::create(&link).expect("create");
        d.writer()
            .expect("writer")
            .write_all(b"new")
            .expect("write");
        d.commit().expect("commit");
        assert!(std::fs::symlink_metadata(&link)
            .expect("meta")
            .file_type()
            .is_symlink());
        assert_eq!(std::fs::read_to_string(&real).expect("read"), "new");
    }

    #[test]
    fn devices_are_written_directly() {
        let d = Destination::create(std::path::Path::new("/dev/null")).expect("create");
        assert!(matches!(d, Destination::Direct(_)));
        d.writer().expect("writer").write_all(b"x").expect("write");
        d.commit().expect("commit");
    }
}
