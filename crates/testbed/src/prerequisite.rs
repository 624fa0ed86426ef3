//! What a test needs from the machine (a tool, the shared test data, network namespaces, IPv6 on
//! loopback): present, or the test fails saying what is missing and how to get it. A test that
//! passed silently without its witness would prove nothing.
//!
//! With `LDPLAYER_ALLOW_SKIP=1` a test whose prerequisite is missing skips instead: it says so
//! on standard error and appends one line (the test, what is missing) to the skip log, the file
//! named by `LDPLAYER_SKIP_LOG` (default `target/skipped-tests.txt`), which `scripts/test.sh`
//! lists at the end of the run. Every helper here returns whether the test may go on.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// The variable that lets tests skip when a prerequisite is missing.
pub const ALLOW_SKIP: &str = "LDPLAYER_ALLOW_SKIP";

/// The variable naming the file where skipped tests are listed, one line each.
pub const SKIP_LOG: &str = "LDPLAYER_SKIP_LOG";

/// How to get network namespaces, for the messages of tests that need them.
pub const NETNS_HOW: &str = "run as root, or allow unprivileged user namespaces \
     (sysctl kernel.unprivileged_userns_clone=1, user.max_user_namespaces > 0) and network \
     namespaces (user.max_net_namespaces > 0): `unshare -rn true` must work";

/// How to get the shared test data, for the messages of tests that need it.
pub const SHARED_DATA_HOW: &str =
    "check out the shared test data (captures, zones, Deckard scenarios) as ../shared/data \
     beside the repository";

/// True when `what` is there; when it is not, false if skipping is allowed (said on standard
/// error and written to the skip log), else the test fails naming it and `how` to get it.
pub fn require(present: bool, what: &str, how: &str) -> bool {
    present || skip_or_fail(what, how, skipping_allowed(), &skip_log())
}

/// The missing prerequisite `what`: fails the test, or when `allow` skips it (false), listing
/// it in `log`.
fn skip_or_fail(what: &str, how: &str, allow: bool, log: &Path) -> bool {
    if !allow {
        panic!("{what} is missing: {how} (or set {ALLOW_SKIP}=1 to skip this test)");
    }
    let test = current_test();
    eprintln!("skipped {test}: {what} is missing ({ALLOW_SKIP}=1)");
    log_skip(log, &format!("{test}: {what} is missing ({how})\n"));
    false
}

/// Whether `LDPLAYER_ALLOW_SKIP=1` is set.
pub fn skipping_allowed() -> bool {
    std::env::var(ALLOW_SKIP).is_ok_and(|v| v == "1")
}

/// The skip log: `LDPLAYER_SKIP_LOG`, else `skipped-tests.txt` in the Cargo target directory
/// holding the running test binary.
pub fn skip_log() -> PathBuf {
    if let Some(path) = std::env::var_os(SKIP_LOG) {
        return PathBuf::from(path);
    }
    let exe = std::env::current_exe().unwrap_or_default();
    let target = exe
        .ancestors()
        .find(|dir| dir.file_name().is_some_and(|n| n == "target"))
        .map_or_else(|| PathBuf::from("target"), Path::to_path_buf);
    target.join("skipped-tests.txt")
}

/// Appends `line` with one write to a file opened in append mode, so that tests skipping at
/// the same time in parallel (threads or test binaries) do not overwrite each other's lines.
fn log_skip(path: &Path, line: &str) {
    let written = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .and_then(|mut f| f.write_all(line.as_bytes()));
    if let Err(e) = written {
        eprintln!("could not list the skip in {}: {e}", path.display());
    }
}

/// The running test as `binary::module::test` (libtest names each test's thread after it).
fn current_test() -> String {
    let exe = std::env::current_exe().unwrap_or_default();
    let stem = exe.file_stem().map(|s| s.to_string_lossy().into_owned());
    // Cargo names test binaries `NAME-HASH`.
    let binary = stem
        .as_deref()
        .map_or("?", |s| s.rsplit_once('-').map_or(s, |(name, _)| name))
        .to_string();
    match std::thread::current().name() {
        Some(test) if test != "main" => format!("{binary}::{test}"),
        _ => binary,
    }
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

/// Every one of `tools` (program, Debian package) installed; false only when one is missing and
/// skipping is allowed (the caller then returns: the skip is listed).
pub fn tools(tools: &[(&str, &str)]) -> bool {
    tools
        .iter()
        .all(|(program, package)| tool(program, package).is_some())
}

/// The shared test data directory, `../shared/data` beside the repository, from a crate's
/// directory (`CARGO_MANIFEST_DIR`), whether or not it is there.
pub fn shared_data_dir(crate_dir: &str) -> PathBuf {
    Path::new(crate_dir).join("../../../shared/data")
}

/// A file or directory of the shared test data, given relative to it from a crate's directory
/// (`CARGO_MANIFEST_DIR`); `None` only when skipping is allowed.
pub fn shared_data(crate_dir: &str, relative: &str) -> Option<PathBuf> {
    let path = shared_data_dir(crate_dir).join(relative);
    require(
        path.exists(),
        &format!("the shared test data {}", path.display()),
        SHARED_DATA_HOW,
    )
    .then_some(path)
}

/// A file or directory of the shared test data, given relative to it (`zones/root.zone`);
/// `None` only when it is missing and skipping is allowed. Every crate sits in `crates/`, so
/// the data is where it is from this crate's directory.
pub fn shared_file(relative: &str) -> Option<PathBuf> {
    shared_data(env!("CARGO_MANIFEST_DIR"), relative)
}

/// Debian's Python (`/usr/bin/python3`, not a pyenv build on PATH), which has the Debian
/// packages' modules.
pub const DEBIAN_PYTHON: &str = "/usr/bin/python3";

/// Debian's Python importing every one of `modules` (from the Debian `package`), for a test
/// that runs a Python script; false only when skipping is allowed.
pub fn debian_python(modules: &[&str], package: &str) -> bool {
    let imports = Command::new(DEBIAN_PYTHON)
        .arg("-c")
        .arg(format!("import {}", modules.join(", ")))
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    require(
        imports,
        &format!("{DEBIAN_PYTHON} with the module(s) {}", modules.join(", ")),
        &format!("apt-get install python3 {package} (scripts/test.sh does)"),
    )
}

/// Whether this process may make network namespaces: `unshare -n` as root, `unshare -rn` (in a
/// new user namespace) otherwise, the way the lab and the split-horizon tests make them.
pub fn namespaces_work() -> bool {
    let root = effective_uid_is_root();
    Command::new("unshare")
        .arg(if root { "-n" } else { "-rn" })
        .arg("true")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// Network namespaces, for a test that makes them; false only when skipping is allowed.
pub fn netns() -> bool {
    require(namespaces_work(), "network namespaces", NETNS_HOW)
}

/// Whether this process runs as root (`id -u` is 0), in whatever user namespace it is.
pub fn effective_uid_is_root() -> bool {
    Command::new("id")
        .arg("-u")
        .output()
        .is_ok_and(|o| o.stdout.trim_ascii() == b"0")
}

/// Whether a socket can be bound on the IPv6 loopback address `[::1]`.
pub fn ipv6_loopback_works() -> bool {
    std::net::UdpSocket::bind("[::1]:0").is_ok()
}

/// IPv6 on loopback, for a test that uses `[::1]`; false only when skipping is allowed.
pub fn ipv6_loopback() -> bool {
    require(
        ipv6_loopback_works(),
        "IPv6 on loopback ([::1])",
        "sysctl net.ipv6.conf.lo.disable_ipv6=0",
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_present_prerequisite_lets_the_test_go_on() {
        assert!(require(true, "anything", "nothing to do"));
    }

    #[test]
    fn a_missing_prerequisite_fails_naming_it_and_how_to_get_it() {
        let log = tempfile::tempdir().expect("scratch directory");
        let log = log.path().join("skipped");
        let failure =
            std::panic::catch_unwind(|| skip_or_fail("the tool `x`", "apt-get y", false, &log))
                .expect_err("a missing prerequisite fails the test");
        let message = failure
            .downcast_ref::<String>()
            .expect("a formatted message");
        assert!(
            message.contains("the tool `x` is missing: apt-get y"),
            "{message}"
        );
        assert!(message.contains(ALLOW_SKIP), "{message}");
        assert!(!log.exists(), "a failure is not a skip");
    }

    #[test]
    fn an_allowed_skip_is_listed_once_per_test_and_appended() {
        let dir = tempfile::tempdir().expect("scratch directory");
        let log = dir.path().join("skipped");
        assert!(!skip_or_fail("network namespaces", "unshare", true, &log));
        assert!(!skip_or_fail(
            "the tool `kdig`",
            "apt-get install knot-dnsutils",
            true,
            &log
        ));
        let listed = std::fs::read_to_string(&log).expect("the skip log");
        let lines: Vec<&str> = listed.lines().collect();
        assert_eq!(lines.len(), 2, "{listed}");
        assert!(lines[0].contains("an_allowed_skip_is_listed_once_per_test_and_appended: network namespaces is missing (unshare)"), "{listed}");
        assert!(
            lines[1].contains("the tool `kdig` is missing (apt-get install knot-dnsutils)"),
            "{listed}"
        );
    }

    #[test]
    fn the_test_name_is_the_thread_name_under_the_binary() {
        let name = std::thread::Builder::new()
            .name("module::some_test".into())
            .spawn(current_test)
            .expect("thread")
            .join()
            .expect("no panic");
        assert!(name.ends_with("::module::some_test"), "{name}");
        assert!(name.starts_with("ldplayer_testbed"), "{name}");
    }
}
