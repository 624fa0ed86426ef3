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
pub struct Tcpdump(std::process::Child);

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
        Tcpdump(child)
    }

    /// Stops it (SIGINT) once what was sent has had time to pass, and waits for the file.
    pub fn stop(mut self) {
        std::thread::sleep(std::time::Duration::from_millis(300));
        let _ = Command::new("kill")
            .args(["-INT", &self.0.id().to_string()])
            .status();
        let _ = self.0.wait();
    }
}
