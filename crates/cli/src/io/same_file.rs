//! Refusing to write an output over one of the command's own inputs.
//!
//! `convert b.txt -o b.txt` used to truncate its input before reading it and exit 0 with a
//! fraction of the trace. Files are compared by identity (device and inode, symbolic links
//! followed), so a hard link, a symbolic link or another spelling of the same path is caught
//! too. Standard input and output (`-`) and anything that is not a regular file (a pipe,
//! `/dev/null`) are exempt.

use anyhow::{bail, Result};
use std::os::unix::fs::MetadataExt;
use std::path::Path;

/// The identity (device, inode) of the regular file at `path`, symbolic links followed; `None`
/// for `-`, a missing file or anything else than a regular file.
fn identity(path: &Path) -> Option<(u64, u64)> {
    if path == Path::new("-") {
        return None;
    }
    let meta = std::fs::metadata(path).ok()?;
    meta.is_file().then(|| (meta.dev(), meta.ino()))
}

/// Fails, naming both files, when `output` is the same file as one of `inputs`; call it before
/// the output is created. An output that does not exist yet clashes with nothing.
pub fn refuse_same_file<'a>(
    output: &Path,
    inputs: impl IntoIterator<Item = &'a Path>,
) -> Result<()> {
    let Some(out) = identity(output) else {
        return Ok(());
    };
    for input in inputs {
        if identity(input) == Some(out) {
            bail!(
                "refusing to write {}: it is the same file as the input {} (the same name, a hard \
                 link or a symbolic link), which writing would destroy; choose another output",
                output.display(),
                input.display()
            );
        }
    }
    Ok(())
}

/// [`refuse_same_file`] for an optional output (no output clashes with nothing).
pub fn refuse_same_file_opt<'a>(
    output: Option<&Path>,
    inputs: impl IntoIterator<Item = &'a Path>,
) -> Result<()> {
    match output {
        Some(output) => refuse_same_file(output, inputs),
        None => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::refuse_same_file;
    use std::path::Path;

    #[test]
    fn same_file_by_any_name_is_refused_and_others_pass() {
        let dir = tempfile::tempdir().expect("scratch");
        let a = dir.path().join("a.txt");
        let b = dir.path().join("b.txt");
        std::fs::write(&a, "a").expect("write");
        std::fs::write(&b, "b").expect("write");
        let hard = dir.path().join("hard.txt");
        std::fs::hard_link(&a, &hard).expect("hard link");
        let soft = dir.path().join("soft.txt");
        std::os::unix::fs::symlink(&a, &soft).expect("symlink");
        let dotted = dir.path().join(".").join("a.txt");
        for clash in [&a, &hard, &soft, &dotted] {
            let e = refuse_same_file(clash, [a.as_path()]).expect_err("same file");
            let text = e.to_string();
            assert!(
                text.contains(&clash.display().to_string())
                    && text.contains(&a.display().to_string()),
                "{text}"
            );
        }
        refuse_same_file(&b, [a.as_path()]).expect("different files");
        refuse_same_file(&dir.path().join("new.txt"), [a.as_path()]).expect("new file");
        refuse_same_file(Path::new("-"), [Path::new("-")]).expect("stdio is exempt");
        refuse_same_file(Path::new("/dev/null"), [Path::new("/dev/null")])
            .expect("devices are exempt");
    }
}
