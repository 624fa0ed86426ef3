//! What a test needs from the machine (a tool, the shared test data): present, or the test
//! fails saying what is missing, unless `LDPLAYER_ALLOW_SKIP=1` lets it skip (with a line on
//! standard error). A test that passed silently without its witness would prove nothing.

use std::path::{Path, PathBuf};

/// The variable that lets tests skip when a prerequisite is missing.
pub const ALLOW_SKIP: &str = "LDPLAYER_ALLOW_SKIP";

/// True when `what` is there; when it is not, false if skipping is allowed (said on standard
/// error), else the test fails naming it and `how` to get it.
pub fn require(present: bool, what: &str, how: &str) -> bool {
    if present {
        return true;
    }
    if std::env::var(ALLOW_SKIP).is_ok_and(|v| v == "1") {
        eprintln!("skipped: {what} is missing ({ALLOW_SKIP}=1)");
        return false;
    }
    panic!("{what} is missing: {how} (or set {ALLOW_SKIP}=1 to skip)");
}

/// The path of a tool installed in the usual places, if any.
pub fn installed(tool: &str) -> Option<PathBuf> {
    std::env::var_os("PATH")
        .map(|p| std::env::split_paths(&p).collect::<Vec<_>>())
        .unwrap_or_default()
        .into_iter()
        .chain(["/usr/sbin", "/usr/bin", "/sbin", "/usr/local/sbin"].map(PathBuf::from))
        .map(|dir| dir.join(tool))
        .find(|p| p.is_file())
}

/// A tool the test needs (its path), given the Debian package that has it; `None` only when
/// skipping is allowed.
pub fn tool(tool: &str, package: &str) -> Option<PathBuf> {
    let found = installed(tool);
    require(
        found.is_some(),
        &format!("the tool `{tool}`"),
        &format!("apt-get install {package} (scripts/test.sh does)"),
    )
    .then(|| found.unwrap_or_default())
}

/// A file or directory of the shared test data (`shared/data` beside the repository), given
/// relative to it from a crate's directory (`CARGO_MANIFEST_DIR`); `None` only when skipping is
/// allowed.
pub fn shared_data(crate_dir: &str, relative: &str) -> Option<PathBuf> {
    let path = Path::new(crate_dir)
        .join("../../../shared/data")
        .join(relative);
    require(
        path.exists(),
        &format!("the shared test data {}", path.display()),
        "check out the shared data beside the repository (../shared/data)",
    )
    .then_some(path)
}
