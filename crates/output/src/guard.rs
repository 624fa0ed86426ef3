//! The registry of the process's inputs and claimed outputs, and the check every write makes.

use std::collections::HashMap;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, MutexGuard};

/// Why an output was not written.
#[derive(Debug, thiserror::Error)]
pub enum OutputError {
    /// The output is one of the process's inputs.
    #[error(
        "refusing to write {}: it is the same file as the input {} (the same name, a hard link \
         or a symbolic link), which writing would destroy; choose another output",
        output.display(),
        input.display()
    )]
    IsInput {
        /// The output as named.
        output: PathBuf,
        /// The input as named.
        input: PathBuf,
    },
    /// Two outputs of one command name the same file.
    #[error(
        "refusing to write {} as {second}: {first} names the same file, and one would overwrite \
         the other; give them different files",
        output.display()
    )]
    ClaimedTwice {
        /// The output as named the second time.
        output: PathBuf,
        /// What claimed it first (an option, such as `--results`).
        first: String,
        /// What claimed it second.
        second: String,
    },
    /// The file system refused.
    #[error("{what} {}", path.display())]
    Io {
        /// What was being done (`cannot create`).
        what: &'static str,
        /// The file.
        path: PathBuf,
        /// The cause.
        #[source]
        source: std::io::Error,
    },
}

impl OutputError {
    pub(crate) fn io(what: &'static str, path: &Path, source: std::io::Error) -> OutputError {
        OutputError::Io {
            what,
            path: path.to_path_buf(),
            source,
        }
    }
}

/// For libraries whose errors carry an `io::Error` and the path themselves: a refusal becomes
/// an error of kind `InvalidInput` that says why, a failure of the file system its own cause.
impl From<OutputError> for std::io::Error {
    fn from(e: OutputError) -> std::io::Error {
        match e {
            OutputError::Io { source, .. } => source,
            refusal => std::io::Error::new(std::io::ErrorKind::InvalidInput, refusal),
        }
    }
}

/// A file as the guard knows it.
#[derive(Debug)]
struct Known {
    /// Device and inode, when it exists as a regular file.
    identity: Option<(u64, u64)>,
    /// Its absolute path, symbolic links resolved.
    resolved: PathBuf,
    /// As the user named it, for messages.
    shown: PathBuf,
}

impl Known {
    fn new(path: &Path) -> Known {
        Known {
            identity: identity(path),
            resolved: resolve(path),
            shown: path.to_path_buf(),
        }
    }

    /// Whether `other` is this file. An identity is only trusted while this file's path still
    /// has it: a file removed since it was named frees its inode for a new file, which is not
    /// the one that was named.
    fn same(&self, other: &Known) -> bool {
        match (self.identity, other.identity) {
            (Some(a), Some(b)) if a == b => identity(&self.resolved) == Some(a),
            (Some(_), Some(_)) => false,
            _ => self.resolved == other.resolved,
        }
    }
}

#[derive(Debug, Default)]
struct Registry {
    inputs: Inputs,
    claims: Vec<(Known, String)>,
}

/// The inputs, indexed by identity and by resolved path: a manifest of hundreds of thousands of
/// zone files registers each, and a scan of every input before each added one took minutes.
#[derive(Debug)]
struct Inputs {
    list: Vec<Known>,
    by_identity: Option<HashMap<(u64, u64), Vec<usize>>>,
    by_resolved: Option<HashMap<PathBuf, Vec<usize>>>,
}

impl Inputs {
    const fn new() -> Inputs {
        Inputs {
            list: Vec::new(),
            by_identity: None,
            by_resolved: None,
        }
    }

    /// The first input (in the order registered) that is `file` ([`Known::same`]): only those
    /// of its identity or of its resolved path can be.
    fn find(&self, file: &Known) -> Option<&Known> {
        let by_identity = file
            .identity
            .and_then(|a| self.by_identity.as_ref()?.get(&a))
            .into_iter()
            .flatten();
        let by_path = self
            .by_resolved
            .as_ref()
            .and_then(|m| m.get(&file.resolved))
            .into_iter()
            .flatten();
        by_identity
            .chain(by_path)
            .copied()
            .filter(|&i| self.list[i].same(file))
            .min()
            .map(|i| &self.list[i])
    }

    fn push(&mut self, file: Known) {
        let i = self.list.len();
        if let Some(a) = file.identity {
            self.by_identity
                .get_or_insert_with(HashMap::new)
                .entry(a)
                .or_default()
                .push(i);
        }
        self.by_resolved
            .get_or_insert_with(HashMap::new)
            .entry(file.resolved.clone())
            .or_default()
            .push(i);
        self.list.push(file);
    }
}

impl Default for Inputs {
    fn default() -> Inputs {
        Inputs::new()
    }
}

/// Whether the guard is on: a program turns it on for its commands ([`enable`]); in a library
/// used on its own (a test that reads a file and writes it again) it stays out of the way.
static ENABLED: AtomicBool = AtomicBool::new(false);

/// Turns the guard on for the rest of the process: from now on, inputs are protected and
/// outputs checked. The `ldplayer` command does it first thing.
pub fn enable() {
    ENABLED.store(true, Ordering::SeqCst);
}

fn enabled() -> bool {
    ENABLED.load(Ordering::SeqCst)
}

static REGISTRY: Mutex<Registry> = Mutex::new(Registry {
    inputs: Inputs::new(),
    claims: Vec::new(),
});

fn registry() -> MutexGuard<'static, Registry> {
    // A panic elsewhere while holding the lock leaves the lists whole (each change is one push).
    REGISTRY
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// Remembers `path` as an input of this process: no output may be written over it from now on.
/// Standard input, directories and anything else that is not a regular file are ignored.
pub fn protect_input(path: &Path) {
    if !enabled() || exempt(path) || path.is_dir() {
        return;
    }
    let known = Known::new(path);
    let mut r = registry();
    if r.inputs.find(&known).is_none() {
        r.inputs.push(known);
    }
}

/// Fails when writing `path` would overwrite an input of this process.
pub fn check(path: &Path) -> Result<(), OutputError> {
    if !enabled() || exempt(path) {
        return Ok(());
    }
    let out = Known::new(path);
    let r = registry();
    match r.inputs.find(&out) {
        Some(input) => Err(OutputError::IsInput {
            output: path.to_path_buf(),
            input: input.shown.clone(),
        }),
        None => Ok(()),
    }
}

/// Claims `path` as the output that `what` (an option, such as `--report`) names: fails when it
/// is an input, or when another claim names the same file. Call it for every output named on
/// the command line before anything is written.
pub fn claim(path: &Path, what: &str) -> Result<(), OutputError> {
    check(path)?;
    if !enabled() || exempt(path) {
        return Ok(());
    }
    let out = Known::new(path);
    let mut r = registry();
    if let Some((_, first)) = r.claims.iter().find(|(k, _)| k.same(&out)) {
        return Err(OutputError::ClaimedTwice {
            output: path.to_path_buf(),
            first: first.clone(),
            second: what.to_string(),
        });
    }
    r.claims.push((out, what.to_string()));
    Ok(())
}

/// Standard input or output, or an existing file that is not a regular file or a directory (a
/// device, a pipe): never clashes.
fn exempt(path: &Path) -> bool {
    path == Path::new("-") || std::fs::metadata(path).is_ok_and(|m| !m.is_file() && !m.is_dir())
}

/// The identity (device, inode) of the regular file at `path`, symbolic links followed.
fn identity(path: &Path) -> Option<(u64, u64)> {
    let meta = std::fs::metadata(path).ok()?;
    meta.is_file().then(|| (meta.dev(), meta.ino()))
}

/// `path` made absolute with every symbolic link resolved, also when the file (or the target of
/// a dangling link) does not exist yet: its directory is resolved and its name kept.
fn resolve(path: &Path) -> PathBuf {
    if let Ok(p) = std::fs::canonicalize(path) {
        return p;
    }
    let mut p = std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf());
    // A dangling link: follow it by hand (as the kernel would, up to its limit of 40).
    for _ in 0..40 {
        let Ok(target) = std::fs::read_link(&p) else {
            break;
        };
        p = match p.parent() {
            Some(dir) => dir.join(target),
            None => target,
        };
    }
    match (p.parent(), p.file_name()) {
        (Some(dir), Some(name)) => std::fs::canonicalize(dir)
            .unwrap_or_else(|_| dir.to_path_buf())
            .join(name),
        _ => p,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_input_is_refused_by_any_name_and_other_files_pass() {
        enable();
        let dir = tempfile::tempdir().expect("scratch");
        let a = dir.path().join("a.txt");
        std::fs::write(&a, "a").expect("write");
        let hard = dir.path().join("hard.txt");
        std::fs::hard_link(&a, &hard).expect("hard link");
        let soft = dir.path().join("soft.txt");
        std::os::unix::fs::symlink(&a, &soft).expect("symlink");
        let dotted = dir.path().join(".").join("a.txt");
        protect_input(&soft);
        for clash in [&a, &hard, &soft, &dotted] {
            let e = check(clash).expect_err("an input");
            let text = e.to_string();
            assert!(
                text.contains(&clash.display().to_string()) && text.contains("soft.txt"),
                "{text}"
            );
        }
        check(&dir.path().join("b.txt")).expect("another file");
        check(Path::new("-")).expect("standard output");
        check(Path::new("/dev/null")).expect("a device");
    }

    #[test]
    fn many_inputs_are_found_by_identity_or_path_the_first_registered_named() {
        let dir = tempfile::tempdir().expect("scratch");
        let mut inputs = Inputs::new();
        // Files that do not exist (known by path) and files that do (known by identity).
        for i in 0..2000 {
            inputs.push(Known::new(&dir.path().join(format!("z{i}.zone"))));
        }
        let a = dir.path().join("a");
        std::fs::write(&a, "a").expect("write");
        let hard = dir.path().join("hard");
        std::fs::hard_link(&a, &hard).expect("hard link");
        inputs.push(Known::new(&hard));
        inputs.push(Known::new(&a));
        let found = |p: &Path| inputs.find(&Known::new(p)).map(|k| k.shown.clone());
        assert_eq!(
            found(&a),
            Some(hard.clone()),
            "the first registered of one file"
        );
        assert_eq!(
            found(&dir.path().join(".").join("z1999.zone")),
            Some(dir.path().join("z1999.zone"))
        );
        assert_eq!(found(&dir.path().join("z2000.zone")), None);
        // A file made since it was named by path is still that input.
        std::fs::write(dir.path().join("z7.zone"), "z").expect("write");
        assert_eq!(
            found(&dir.path().join("z7.zone")),
            Some(dir.path().join("z7.zone"))
        );
    }

    #[test]
    fn two_claims_of_one_file_are_refused_also_before_it_exists() {
        enable();
        let dir = tempfile::tempdir().expect("scratch");
        let out = dir.path().join("run.res");
        let link = dir.path().join("link.res");
        std::os::unix::fs::symlink(&out, &link).expect("dangling symlink");
        claim(&out, "--results").expect("first claim");
        for again in [out.clone(), link, dir.path().join(".").join("run.res")] {
            let e = claim(&again, "--report").expect_err("claimed");
            let text = e.to_string();
            assert!(
                text.contains("--results") && text.contains("--report"),
                "{text}"
            );
        }
        claim(&dir.path().join("report.html"), "--report").expect("another file");
    }

    /// An input removed while the process runs gives its inode back to the file system: a new
    /// file that gets it is not the input.
    #[test]
    fn a_removed_input_does_not_protect_its_inode() {
        enable();
        let dir = tempfile::tempdir().expect("scratch");
        let input = dir.path().join("gone.bin");
        std::fs::write(&input, "x").expect("write");
        protect_input(&input);
        let ino = identity(&input).expect("a file");
        std::fs::remove_file(&input).expect("remove");
        // Find a new file that got the inode back (the file system may give another).
        for i in 0..200 {
            let out = dir.path().join(format!("out{i}.csv"));
            std::fs::write(&out, "y").expect("write");
            if identity(&out) == Some(ino) {
                check(&out).expect("not the removed input");
                return;
            }
        }
        // No reuse seen: the check still passes for a new file.
        check(&dir.path().join("other.csv")).expect("a new file");
    }
}
