//! aioquic's test servers on loopback: DNS over QUIC (`scripts/doq_server.py`) and DNS over
//! HTTPS on HTTP/3 (`scripts/doh3_server.py`), on aioquic and dnspython from PyPI. Another QUIC
//! stack and another TLS than ldplayer's, in another language: the independent peer of the
//! replay's DoQ and DoH3 tests and of the lean QUIC client's own tests in `ldplayer-stacks`.
//! Both answer www.example. A with 192.0.2.1 and other names with NXDOMAIN, and print what they
//! counted (queries, connections, resumed and 0-RTT handshakes...) as one JSON line when
//! stopped. The scripts live here, in the crate every test that needs them already reaches.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use ldplayer_system::process::{signal, Signal};

use crate::prerequisite;

/// How long a server is given to write its ready file, and to exit once told to stop.
const TIMEOUT: Duration = Duration::from_secs(20);

/// How to get what the servers need, for the message of a test that lacks it.
pub const HOW: &str =
    "python3 -m pip install dnspython==2.7.0 aioquic==1.2.0 (scripts/test.sh does)";

/// Which of the aioquic test servers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Script {
    /// DNS over QUIC (RFC 9250), ALPN `doq`; its one optional argument starts a QUIC key
    /// update after every that many answers on a connection.
    Doq,
    /// DNS over HTTPS on HTTP/3, ALPN `h3`, POST and GET.
    Doh3,
}

impl Script {
    /// The script's file name in [`scripts_dir`].
    pub fn file_name(self) -> &'static str {
        match self {
            Script::Doq => "doq_server.py",
            Script::Doh3 => "doh3_server.py",
        }
    }
}

/// The folder of the aioquic scripts (and of the module they share, `aioquic_common.py`).
pub fn scripts_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts")
}

/// Whether `python3` (on PATH, as `scripts/test.sh` installs into it) imports aioquic and
/// dnspython.
pub fn python_has_aioquic() -> bool {
    Command::new("python3")
        .args(["-c", "import aioquic, dns.message"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// The servers' prerequisite for a test: true when python3 has aioquic and dnspython; when it
/// has not, the test fails saying how to get them, or (with `LDPLAYER_ALLOW_SKIP=1`) false and
/// the skip listed.
pub fn available() -> bool {
    prerequisite::require(
        python_has_aioquic(),
        "python3 with aioquic and dnspython (the aioquic test servers)",
        HOW,
    )
}

/// A running aioquic server, killed on drop unless [`AioquicServer::stop`]ped.
pub struct AioquicServer {
    child: Child,
    script: Script,
    /// Its ready file's folder, removed on drop.
    _dir: tempfile::TempDir,
}

/// Starts `script` on 127.0.0.1:`port` with the certificate `cert` and its key `key` (PEM),
/// with `extra` arguments after the usual ones, and waits until it says it is listening. A
/// server that exits or stays silent for 20 s fails the test with what it wrote on standard
/// error (a missing aioquic among it: call [`available`] first).
pub fn start(script: Script, port: u16, cert: &Path, key: &Path, extra: &[&str]) -> AioquicServer {
    let dir = tempfile::tempdir().expect("a scratch folder for the ready file");
    let ready = dir.path().join("ready");
    let child = Command::new("python3")
        .arg(scripts_dir().join(script.file_name()))
        .arg("127.0.0.1")
        .arg(port.to_string())
        .args([cert, key, &ready])
        .args(extra)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("python3 does not run ({e}): {HOW}"));
    let mut server = AioquicServer {
        child,
        script,
        _dir: dir,
    };
    let began = Instant::now();
    while !ready.exists() {
        if let Ok(Some(status)) = server.child.try_wait() {
            panic!(
                "{} exited: {status}: {} (it needs aioquic: {HOW})",
                script.file_name(),
                server.stderr()
            );
        }
        assert!(
            began.elapsed() < TIMEOUT,
            "{} not ready in {TIMEOUT:?}",
            script.file_name()
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    server
}

impl AioquicServer {
    /// Stops the server (SIGINT) and returns what it counted: the JSON object it prints on
    /// exit (`queries`, `connections`, `resumed`, `zero_rtt`, and per script `key_updates` or
    /// `post` and `get`). Fails the test if it does not exit within 20 s or prints no JSON.
    pub fn stop(mut self) -> serde_json::Value {
        let name = self.script.file_name();
        let _ = signal(self.child.id(), Signal::INT);
        let began = Instant::now();
        loop {
            match self.child.try_wait() {
                Ok(Some(_)) => break,
                Ok(None) if began.elapsed() < TIMEOUT => {
                    std::thread::sleep(Duration::from_millis(20));
                }
                other => panic!("{name} did not exit on SIGINT in {TIMEOUT:?}: {other:?}"),
            }
        }
        let mut out = String::new();
        if let Some(mut o) = self.child.stdout.take() {
            let _ = o.read_to_string(&mut out);
        }
        serde_json::from_str(out.trim()).unwrap_or_else(|e| {
            panic!(
                "{name} printed no counts ({e}): {out:?}; stderr: {}",
                self.stderr()
            )
        })
    }

    /// What the server has written on standard error (once it has exited: read to the end).
    fn stderr(&mut self) -> String {
        let mut err = String::new();
        if let Some(mut e) = self.child.stderr.take() {
            let _ = e.read_to_string(&mut err);
        }
        err
    }
}

impl Drop for AioquicServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_script_and_the_module_they_share_are_there() {
        for file in [
            Script::Doq.file_name(),
            Script::Doh3.file_name(),
            "aioquic_common.py",
        ] {
            let path = scripts_dir().join(file);
            assert!(path.is_file(), "{} is missing", path.display());
        }
    }

    #[test]
    fn a_doq_server_starts_and_counts_nothing_when_asked_nothing() {
        if !available() {
            return;
        }
        let dir = tempfile::tempdir().expect("scratch");
        let (_ca, key, cert) = crate::make_certs(dir.path());
        let server = start(Script::Doq, crate::free_port(), &cert, &key, &[]);
        let counts = server.stop();
        assert_eq!(counts["queries"], 0, "{counts}");
        assert_eq!(counts["connections"], 0, "{counts}");
        assert_eq!(counts["key_updates"], 0, "{counts}");
    }
}
