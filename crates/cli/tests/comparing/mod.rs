//! What the `compare` tests share: running `ldplayer compare` and reading what it printed.

#![allow(dead_code)] // each test binary uses its own share of these

use std::process::{Command, Output};

/// Runs `ldplayer compare ARGS...`, whatever its exit status.
pub fn compare(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_ldplayer"))
        .arg("compare")
        .args(args)
        .output()
        .expect("ldplayer runs")
}

pub fn status(out: &Output) -> Option<i32> {
    out.status.code()
}

pub fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

pub fn json(out: &Output) -> serde_json::Value {
    serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("one JSON object ({e}): {}", text(&out.stdout)))
}

/// The row of `metric` in a `--json` comparison.
pub fn row<'a>(c: &'a serde_json::Value, name: &str) -> &'a serde_json::Value {
    c["metrics"]
        .as_array()
        .expect("metrics")
        .iter()
        .find(|r| r["name"] == name)
        .unwrap_or_else(|| panic!("no row {name} in {c}"))
}
