//! A reader that goes away (`ldplayer ... | head`) ends ldplayer quietly, as it ends `cat`: no
//! panic about a broken pipe, no error message.

mod binary;

use binary::{ldplayer, s};
use std::io::{BufRead, BufReader};
use std::os::unix::process::ExitStatusExt;
use std::process::{Command, Stdio};

#[test]
fn a_closed_pipe_ends_the_output_quietly() {
    let dir = tempfile::tempdir().expect("scratch");
    let trace = dir.path().join("t.bin");
    ldplayer(&["synth", "-n", "200000", "-o", &s(&trace), "-q"]);
    let mut child = Command::new(env!("CARGO_BIN_EXE_ldplayer"))
        .args(["convert", &s(&trace), "--to", "text", "-o", "-", "-q"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("ldplayer runs");
    let mut first = String::new();
    BufReader::new(child.stdout.take().expect("stdout"))
        .read_line(&mut first)
        .expect("a line");
    assert!(first.starts_with("#ldplayer-text/"), "{first}");
    // The reader is gone now (its end of the pipe was dropped with the BufReader).
    let out = child.wait_with_output().expect("ldplayer ends");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!err.contains("panicked") && err.is_empty(), "{err}");
    assert_eq!(out.status.signal(), Some(libc::SIGPIPE), "{:?}", out.status);
}
