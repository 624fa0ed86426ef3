//! Running the `ldplayer` binary in the command-line tests: a command that must succeed, fail
//! or answer nothing, `ldplayer serve` in the background, and hand-written text traces for it.
//! The prerequisites and the witnesses (tcpdump, tshark, zone checkers) come from
//! ldplayer-testbed.
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

/// Runs `ldplayer` with `args`, expecting it to fail; returns its output.
pub fn ldplayer_fails(args: &[&str]) -> Output {
    let out = Command::new(env!("CARGO_BIN_EXE_ldplayer"))
        .args(args)
        .output()
        .expect("ldplayer runs");
    assert!(
        !out.status.success(),
        "ldplayer {args:?} succeeded but should have failed; stderr: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

/// Runs a `ldplayer replay` in which not one query is answered (a server that is down or
/// refuses every session): the results and the summary are written, then it exits with status
/// 1 saying so. Returns its output.
pub fn ldplayer_unanswered(args: &[&str]) -> Output {
    let out = Command::new(env!("CARGO_BIN_EXE_ldplayer"))
        .args(args)
        .output()
        .expect("ldplayer runs");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(
        out.status.code(),
        Some(1),
        "ldplayer {args:?} should exit 1 with nothing answered; stderr: {stderr}"
    );
    assert!(
        stderr.contains("queries was answered"),
        "ldplayer {args:?}: {stderr}"
    );
    out
}

/// The path as a string, for argument lists.
pub fn s(p: &std::path::Path) -> String {
    p.to_string_lossy().into_owned()
}

/// A running `ldplayer serve`, stopped with SIGINT on drop (or [`Serve::stop`]).
pub struct Serve {
    child: Option<std::process::Child>,
    stderr: std::sync::Arc<std::sync::Mutex<String>>,
}

impl Serve {
    /// Starts `ldplayer serve ARGS...` and waits for its "answering on" line.
    pub fn start(args: &[&str]) -> Serve {
        use std::io::BufRead;
        let mut child = Command::new(env!("CARGO_BIN_EXE_ldplayer"))
            .arg("serve")
            .args(args)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("ldplayer serve starts");
        let mut err = std::io::BufReader::new(child.stderr.take().expect("stderr"));
        let mut lines = String::new();
        while !lines.contains("answering on") {
            let n = err.read_line(&mut lines).expect("read stderr");
            assert!(n > 0, "ldplayer serve {args:?} ended: {lines}");
        }
        let stderr = std::sync::Arc::new(std::sync::Mutex::new(lines));
        let sink = stderr.clone();
        std::thread::spawn(move || {
            for line in err.lines().map_while(Result::ok) {
                if let Ok(mut s) = sink.lock() {
                    s.push_str(&line);
                    s.push('\n');
                }
            }
        });
        Serve {
            child: Some(child),
            stderr,
        }
    }

    /// What it wrote on standard error so far.
    pub fn stderr(&self) -> String {
        self.stderr.lock().map(|s| s.clone()).unwrap_or_default()
    }

    /// Sends `signal` (`INT`, `TERM`), waits for the exit and returns its standard output.
    pub fn stop(mut self, signal: &str) -> String {
        let child = self.child.take().expect("running");
        let _ = Command::new("kill")
            .args([&format!("-{signal}"), &child.id().to_string()])
            .status();
        let out = child.wait_with_output().expect("serve exits");
        assert!(out.status.success(), "serve: {}", self.stderr());
        String::from_utf8(out.stdout).expect("utf-8")
    }
}

impl Drop for Serve {
    fn drop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = Command::new("kill")
                .args(["-INT", &child.id().to_string()])
                .status();
            let _ = child.wait();
        }
    }
}

/// A shared start `seconds` from now, as Unix seconds for `replay --start-at`.
pub fn start_in(seconds: f64) -> String {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .expect("after 1970")
        .as_secs_f64();
    format!("{:.3}", now + seconds)
}

/// One query of a hand-written trace: its name, type, header flags (`rd`, `rd,cd`, `-` for
/// none) and whether it carries EDNS with DO set (`Some(true)`), EDNS without DO
/// (`Some(false)`) or no EDNS (`None`).
pub struct Query<'a> {
    pub qname: &'a str,
    pub qtype: &'a str,
    pub flags: &'a str,
    pub dnssec_ok: Option<bool>,
}

/// Writes `queries` as a text trace (`#ldplayer-text/2`, messages built from the columns) to
/// `path`: one every millisecond from 1520000000 s, from 10.0.0.(i % clients + 1) over UDP.
pub fn query_trace(path: &std::path::Path, queries: &[Query<'_>], clients: usize) {
    let mut text = String::from(
        "#ldplayer-text/2\ntime\tsrc\tsport\tdst\tdport\tproto\tconn\tid\tqr\topcode\trcode\tflags\tqname\tqclass\tqtype\tedns\tbufsize\tdo\tednsopts\twire\n",
    );
    for (i, q) in queries.iter().enumerate() {
        let (edns, bufsize, dnssec_ok) = match q.dnssec_ok {
            None => ("-", "-", "0"),
            Some(d) => ("0", "1232", if d { "1" } else { "0" }),
        };
        text.push_str(&format!(
            "{}.{:09}\t10.0.0.{}\t{}\t192.0.2.53\t53\tudp\t-\t{}\t0\tQUERY\tNOERROR\t{}\t{}\tIN\t{}\t{edns}\t{bufsize}\t{dnssec_ok}\t-\t-\n",
            1_520_000_000 + i / 1000,
            (i % 1000) * 1_000_000,
            i % clients.max(1) + 1,
            40000 + i % 20000,
            i % 65536,
            q.flags,
            q.qname,
            q.qtype,
        ));
    }
    std::fs::write(path, text).expect("writing a trace");
}
