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

/// A file of the shared test data (`../shared/data` beside the workspace). When it is missing
/// the test fails saying so, unless `LDPLAYER_ALLOW_SKIP=1`, which makes this return `None`
/// (the caller then skips, printing why).
pub fn shared_data(relative: &str) -> Option<std::path::PathBuf> {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../../shared/data")
        .join(relative);
    if path.exists() {
        return Some(path);
    }
    let why = format!(
        "the shared test data {} is missing (expected at {})",
        relative,
        path.display()
    );
    if std::env::var("LDPLAYER_ALLOW_SKIP").as_deref() == Ok("1") {
        eprintln!("skipped: {why}");
        return None;
    }
    panic!("{why}; set LDPLAYER_ALLOW_SKIP=1 to skip instead");
}

/// The path as a string, for argument lists.
pub fn s(p: &std::path::Path) -> String {
    p.to_string_lossy().into_owned()
}

/// Whether a test's prerequisite (a tool, a Python module, shared data) is there. A missing one
/// fails the test with `what` and how to get it, unless `LDPLAYER_ALLOW_SKIP=1` is set: then
/// the test is skipped (false is returned, with a note on standard error).
pub fn prerequisite(present: bool, what: &str) -> bool {
    if present {
        return true;
    }
    if std::env::var("LDPLAYER_ALLOW_SKIP").as_deref() == Ok("1") {
        eprintln!("skipped (LDPLAYER_ALLOW_SKIP=1): {what}");
        return false;
    }
    panic!(
        "{what}: this test needs it (scripts/test.sh installs it); set LDPLAYER_ALLOW_SKIP=1 to \
         skip the test instead"
    );
}

/// Debian's Python (`/usr/bin/python3`, not a pyenv build on PATH), which has the Debian
/// packages' modules.
pub const DEBIAN_PYTHON: &str = "/usr/bin/python3";

/// Whether Debian's Python imports every one of `modules`.
pub fn debian_python_has(modules: &[&str]) -> bool {
    Command::new(DEBIAN_PYTHON)
        .arg("-c")
        .arg(format!("import {}", modules.join(", ")))
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// Whether `tool` runs (with `arg`, e.g. `--version`).
pub fn tool_runs(tool: &str, arg: &str) -> bool {
    Command::new(tool)
        .arg(arg)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// The shared test data (captures, zones), `../shared/data` from the workspace.
pub fn data_dir() -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/data")
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

/// tcpdump writing what passes on loopback with `filter` to `file`, from [`Tcpdump::start`]
/// (which returns once it listens) until [`Tcpdump::stop`].
pub struct Tcpdump {
    child: std::process::Child,
    file: std::path::PathBuf,
}

impl Tcpdump {
    pub fn start(file: &std::path::Path, filter: &[&str]) -> Tcpdump {
        use std::io::BufRead;
        let mut child = Command::new("tcpdump")
            // Immediate mode: without it the last, partly filled capture block is lost on SIGINT.
            .args(["-i", "lo", "-n", "-U", "--immediate-mode", "-w"])
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
        Tcpdump {
            child,
            file: file.to_path_buf(),
        }
    }

    /// Stops it (SIGINT) once what was sent has been written: when the capture file has not
    /// grown for 300 ms (on a busy machine tcpdump may lag behind the packets, and what it has
    /// not read when it stops is lost), at most 10 s after the call; then waits for it.
    pub fn stop(mut self) {
        let size = || std::fs::metadata(&self.file).map_or(0, |m| m.len());
        let give_up = std::time::Instant::now() + std::time::Duration::from_secs(10);
        let mut last = size();
        loop {
            std::thread::sleep(std::time::Duration::from_millis(300));
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
    }
}
