//! Helpers shared by the command-line tests.
#![allow(dead_code)]

use std::process::{Command, Output};

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
