//! Helpers shared by the command-line tests.
#![allow(dead_code)]

use std::process::{Command, Output, Stdio};

/// Runs `ldplayer` with `args` and fails the test, showing its standard error, if it fails.
pub fn ldplayer(args: &[&str]) -> Output {
    let out = Command::new(env!("CARGO_BIN_EXE_ldplayer"))
        .args(args)
        .output()
        .expect("ldplayer runs");
    assert!(
        out.status.success(),
        "ldplayer {args:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

/// Whether this machine lets us make network namespaces (as root, or in a user namespace).
pub fn namespaces_work() -> bool {
    // SAFETY: geteuid has no preconditions.
    let root = unsafe { libc::geteuid() } == 0;
    Command::new("unshare")
        .arg(if root { "-n" } else { "-rn" })
        .args(["ip", "link", "set", "lo", "up"])
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}
