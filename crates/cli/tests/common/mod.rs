//! Helpers shared by the command-line tests.
#![allow(dead_code)]

use ldplayer_testbed::prerequisite;
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

/// A file of the shared test data (`../shared/data` beside the workspace); `None` only when it
/// is missing and `LDPLAYER_ALLOW_SKIP=1` (the caller then returns: the skip is listed).
pub fn shared_data(relative: &str) -> Option<std::path::PathBuf> {
    prerequisite::shared_data(env!("CARGO_MANIFEST_DIR"), relative)
}

/// Every one of `tools` (program, Debian package) installed; false only when one is missing
/// and `LDPLAYER_ALLOW_SKIP=1` (the caller then returns: the skip is listed).
pub fn tools(tools: &[(&str, &str)]) -> bool {
    tools
        .iter()
        .all(|(tool, package)| prerequisite::tool(tool, package).is_some())
}

/// The path as a string, for argument lists.
pub fn s(p: &std::path::Path) -> String {
    p.to_string_lossy().into_owned()
}

/// Debian's Python, which has the Debian packages' modules.
pub const DEBIAN_PYTHON: &str = prerequisite::DEBIAN_PYTHON;

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

/// tcpdump writing what passes on loopback with `filter` to `file`, from [`Tcpdump::start`]
/// (which returns once it listens) until [`Tcpdump::stop`].
pub struct Tcpdump {
    child: std::process::Child,
    file: std::path::PathBuf,
}

impl Tcpdump {
    pub fn start(file: &std::path::Path, filter: &[&str]) -> Tcpdump {
        Self::start_with(Command::new("tcpdump"), "lo", file, filter)
    }

    /// Like [`start`](Self::start), on interface `iface` of network namespace `netns`.
    pub fn start_in_netns(
        netns: &str,
        iface: &str,
        file: &std::path::Path,
        filter: &[&str],
    ) -> Tcpdump {
        let mut cmd = Command::new("ip");
        cmd.args(["netns", "exec", netns, "tcpdump"]);
        Self::start_with(cmd, iface, file, filter)
    }

    fn start_with(
        mut cmd: Command,
        iface: &str,
        file: &std::path::Path,
        filter: &[&str],
    ) -> Tcpdump {
        use std::io::BufRead;
        let mut child = cmd
            // Immediate mode: without it the last, partly filled capture block is lost on SIGINT.
            // A 32 MiB kernel buffer: on a loaded machine tcpdump is not scheduled for a while,
            // and the default 2 MiB overflowed (packets "dropped by kernel") in a CI run.
            .args([
                "-i",
                iface,
                "-n",
                "-U",
                "--immediate-mode",
                "-B",
                "32768",
                "-w",
            ])
            .arg(file)
            .args(filter)
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("tcpdump must be installed (scripts/test.sh installs it)");
        let mut err = std::io::BufReader::new(child.stderr.take().expect("stderr"));
        let mut line = String::new();
        let _ = err.read_line(&mut line);
        assert!(line.contains("listening"), "tcpdump: {line}");
        // Handed back for `stop` to read the closing statistics from.
        child.stderr = Some(err.into_inner());
        Tcpdump {
            child,
            file: file.to_path_buf(),
        }
    }

    /// Stops it (SIGINT) once what was sent has been written: when the capture file has not
    /// grown for a second (on a busy machine tcpdump may lag behind the packets, and what it
    /// has not read when it stops is lost: a 300 ms pause once cut a capture to half), at most
    /// 10 s after the call; then waits for it and
    /// returns its closing statistics (packets captured, dropped by the kernel), for tests that
    /// must tell a witness that missed packets from a replay that lost them.
    pub fn stop(mut self) -> String {
        let size = || std::fs::metadata(&self.file).map_or(0, |m| m.len());
        let give_up = std::time::Instant::now() + std::time::Duration::from_secs(10);
        let mut last = size();
        loop {
            std::thread::sleep(std::time::Duration::from_secs(1));
            let now = size();
            if now == last || std::time::Instant::now() > give_up {
                break;
            }
            last = now;
        }
        let _ = Command::new("kill")
            .args(["-INT", &self.child.id().to_string()])
            .status();
        let _ = self.child.wait();
        let mut statistics = String::new();
        if let Some(mut err) = self.child.stderr.take() {
            use std::io::Read;
            let _ = err.read_to_string(&mut statistics);
        }
        statistics.split_whitespace().collect::<Vec<_>>().join(" ")
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

/// Packets in `pcap` that tshark's display `filter` keeps. A capture cut short (a witness
/// stopped mid-write) counts what it holds; a filter tshark cannot read fails the test, so
/// that a count of 0 means no such packet.
pub fn packets_in(pcap: &std::path::Path, filter: &str) -> usize {
    let out = std::process::Command::new("tshark")
        .arg("-r")
        .arg(pcap)
        .args(["-Y", filter, "-T", "fields", "-e", "frame.number"])
        .output()
        .expect("tshark runs (scripts/test.sh installs it)");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        !stderr.contains("filter"),
        "tshark -r {} -Y {filter}: {stderr}",
        pcap.display()
    );
    String::from_utf8_lossy(&out.stdout).lines().count()
}

/// Runs the checker `cmd` (`named-checkzone`, `kzonecheck`, ...) in `dir`; fails the test with
/// its output when it rejects what it checks.
pub fn checker_accepts(cmd: &str, args: &[&str], dir: &std::path::Path) {
    let out = Command::new(cmd)
        .args(args)
        .current_dir(dir)
        .output()
        .unwrap_or_else(|e| panic!("{cmd} must be installed (scripts/test.sh installs it): {e}"));
    assert!(
        out.status.success(),
        "{cmd} {args:?} rejects the output: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
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
