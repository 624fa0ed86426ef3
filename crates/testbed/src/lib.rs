//! Real DNS servers for ldplayer's tests: knotd and nsd (Debian packages) started on loopback
//! with free ports and a configuration written into a scratch directory (by
//! `ldplayer-serverconf`, the writer the experiments' servers use), killed on drop, and test
//! certificates made with rcgen. A missing binary fails the test with a clear message: the
//! project's test script installs the packages, and a test that silently passes without its
//! server would prove nothing. [`slurm`] starts a one-node Slurm cluster of its own the same way,
//! and [`aioquic`] aioquic's DoQ and DoH3 test servers (Python, from PyPI).
//!
//! Only loopback addresses are used.

#![forbid(unsafe_code)]

pub mod aioquic;
pub mod browser;
mod dns;
mod dns_server;
pub mod prerequisite;
pub mod slurm;
pub mod witness;

use std::net::{TcpListener, UdpSocket};
use std::path::{Path, PathBuf};

pub use dns::{ask_tcp, ask_udp, query, recursive_query};
pub use dns_server::{
    authoritative, knot, knot_serving, knot_with_workers, make_certs, nsd_serving, nsd_tls,
    nsd_tls_self_signed_ca, Authoritative, Server,
};
pub use ldplayer_serverconf::ZoneFile;

/// A zone with a few names, a big TXT RRset (truncated over UDP without EDNS) and a wildcard.
pub const ZONE: &str = "$ORIGIN example.
$TTL 3600
@ IN SOA ns.example. admin.example. 1 3600 600 86400 300
@ IN NS ns.example.
ns IN A 127.0.0.1
www IN A 192.0.2.1
*.w IN A 192.0.2.2
";

/// The files of `dir` whose names end in `.EXTENSION`, sorted: a test's data files.
pub fn files_with_extension(dir: &Path, extension: &str) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.expect("directory entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == extension))
        .collect();
    files.sort();
    files
}

/// The example program `name` of the crate under test, which `cargo test -p CRATE` builds
/// beside the test binary (`target/PROFILE/examples/NAME`): for tests that run the examples
/// the docs show.
pub fn cargo_example(name: &str) -> PathBuf {
    let exe = std::env::current_exe().expect("this test's path");
    let profile = exe
        .parent()
        .and_then(|deps| deps.parent())
        .expect("the target folder");
    let example = profile.join("examples").join(name);
    assert!(
        example.exists(),
        "{} is missing: `cargo test` of its crate builds it",
        example.display()
    );
    example
}

/// A free loopback port for both UDP and TCP (best effort).
pub fn free_port() -> u16 {
    for _ in 0..100 {
        let t = TcpListener::bind("127.0.0.1:0").expect("bind tcp");
        let port = t.local_addr().expect("addr").port();
        if UdpSocket::bind(("127.0.0.1", port)).is_ok() {
            return port;
        }
    }
    panic!("no free port");
}
