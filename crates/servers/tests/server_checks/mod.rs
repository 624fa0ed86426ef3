//! What the servers' tests check of a running server (idle connections closed, connections
//! held) and where they run it (a fresh network namespace); the rest is in ldplayer-testbed.

#![allow(dead_code)]

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use ldplayer_servers::{RunningServer, ServerKind};
use ldplayer_testbed::prerequisite;
use ldplayer_testbed::witness::run;

/// `kdig`, which the tests ask with; `None` only when skipping is allowed.
pub fn kdig() -> Option<PathBuf> {
    prerequisite::tool("kdig", "knot-dnsutils")
}

/// Whether `kind`'s program is installed (the embedded one always is); false only when
/// skipping is allowed.
pub fn server_installed(kind: ServerKind) -> bool {
    kind.is_embedded() || prerequisite::tool(kind.program(), kind.debian_package()).is_some()
}

/// One query for `name` SOA on a TCP connection, then silence: the server must close the
/// connection after `idle` (not much before, not long after).
pub fn closes_idle_connections(
    kind: ServerKind,
    server: &RunningServer,
    idle: Duration,
    name: &str,
) {
    let mut stream = TcpStream::connect(server.address()).expect("connect");
    stream
        .set_read_timeout(Some(idle + Duration::from_secs(6)))
        .expect("timeout");
    let query = ldplayer_testbed::recursive_query(0x5a5a, name, 6u16);
    let mut framed = (query.len() as u16).to_be_bytes().to_vec();
    framed.extend_from_slice(&query);
    stream.write_all(&framed).expect("send the query");
    let mut len = [0u8; 2];
    stream.read_exact(&mut len).expect("an answer");
    let mut answer = vec![0u8; usize::from(u16::from_be_bytes(len))];
    stream.read_exact(&mut answer).expect("the whole answer");
    assert_eq!(answer[..2], [0x5a, 0x5a], "{kind}: the answer to the query");
    let idle_since = Instant::now();
    let mut rest = [0u8; 64];
    // A signal meant for another part of the test process (a child's SIGCHLD) interrupts the
    // read with EINTR; that says nothing about the connection, so read again.
    let read = loop {
        match stream.read(&mut rest) {
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            other => break other,
        }
    };
    let waited = idle_since.elapsed();
    let closed = matches!(read, Ok(0))
        || read
            .as_ref()
            .is_err_and(|e| e.kind() == std::io::ErrorKind::ConnectionReset);
    assert!(
        closed,
        "{kind} should close an idle connection after {idle:?}; after {waited:?}: {read:?}"
    );
    assert!(
        waited >= idle - Duration::from_millis(300) && waited <= idle + Duration::from_secs(4),
        "{kind} closed an idle connection after {waited:?}, configured {idle:?}"
    );
    eprintln!("{kind} closed an idle TCP connection after {waited:?} (configured {idle:?})");
}

/// Whether a test thread can move into a new network namespace (root, `unshare`, `ip`); false
/// only when skipping is allowed.
pub fn fresh_namespaces() -> bool {
    prerequisite::tool("ip", "iproute2").is_some()
        && prerequisite::require(
            prerequisite::effective_uid_is_root() && prerequisite::namespaces_work(),
            "root, to move a test thread into a new network namespace",
            prerequisite::NETNS_HOW,
        )
}

/// Runs `test` on a thread of its own moved into a new network namespace with loopback up and
/// `addresses` (`10.53.0.1/32`, `fd53::1/128`) added to it; the servers it starts (threads and
/// processes) are in that namespace too, which disappears with them.
pub fn in_fresh_namespace(addresses: &[&str], test: impl FnOnce() + Send + 'static) {
    let addresses: Vec<String> = addresses.iter().map(ToString::to_string).collect();
    let joined = std::thread::spawn(move || {
        // SAFETY: unshare affects only the calling thread's namespaces; no memory is touched.
        let r = unsafe { libc::unshare(libc::CLONE_NEWNET) };
        assert_eq!(r, 0, "unshare: {}", std::io::Error::last_os_error());
        run(Path::new("ip"), ["link", "set", "lo", "up"]);
        for a in &addresses {
            let nodad = a.contains(':').then_some("nodad");
            run(
                Path::new("ip"),
                ["addr", "add", a.as_str(), "dev", "lo"]
                    .into_iter()
                    .chain(nodad),
            );
        }
        test();
    })
    .join();
    if let Err(panic) = joined {
        std::panic::resume_unwind(panic);
    }
}

/// The server holds `asked` TCP connections, or fewer only when the file descriptor limit here
/// is lower, and then its log says so.
pub fn holds_what_it_can(server: &RunningServer, asked: usize) {
    let held = server.max_tcp_clients();
    let log = std::fs::read_to_string(server.log_path().expect("a log")).expect("the log");
    if held < asked {
        let hard = Command::new("sh")
            .args(["-c", "ulimit -Hn"])
            .output()
            .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
            .unwrap_or_default();
        assert!(
            hard.parse::<usize>().is_ok_and(|h| h < asked + 8192),
            "{} held {held} of {asked} connections under a hard limit of {hard}",
            server.kind()
        );
        assert!(
            log.contains(&format!("max_tcp_clients {asked} lowered to {held}")),
            "{log}"
        );
        eprintln!(
            "{}: {held} of {asked} connections (hard limit {hard})",
            server.kind()
        );
    } else {
        assert_eq!(held, asked);
    }
}
