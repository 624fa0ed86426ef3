//! knotd and nsd (Debian packages) started on loopback with free ports, for tests: their
//! configuration written by `ldplayer-serverconf` (the writer the experiments' servers use)
//! into a scratch directory, their certificates made with rcgen, the process killed on drop.
//! A missing program fails the test saying which package to install.

use std::net::{IpAddr, Ipv4Addr, SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use ldplayer_serverconf::{KnotConfig, NsdConfig, NsdTls, ZoneFile};

use crate::{free_port, prerequisite, ZONE};

/// The address every test server listens on.
const LOOPBACK: IpAddr = IpAddr::V4(Ipv4Addr::LOCALHOST);

/// How long a server is given to accept TCP connections.
const START_TIMEOUT: Duration = Duration::from_secs(15);

/// A running server, killed on drop.
pub struct Server {
    child: Child,
    /// Where it answers over UDP and TCP (loopback, a free port).
    pub addr: SocketAddr,
    /// Where it answers over TLS, when started with a certificate.
    pub tls_addr: Option<SocketAddr>,
    /// Its log (what it wrote on standard error, or its own log file).
    pub log: PathBuf,
    /// Its scratch directory (configuration, zone, certificate, log), removed on drop.
    pub dir: tempfile::TempDir,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// [`ZONE`] with a TXT RRset of twenty 182-byte strings at `big`: truncated over UDP without
/// EDNS.
fn zone_text() -> String {
    let mut z = ZONE.to_string();
    for i in 0..20 {
        z.push_str(&format!("big IN TXT \"{i:02}{}\"\n", "x".repeat(180)));
    }
    z
}

/// Writes [`zone_text`] as `example.zone` in `dir`; returns its path.
fn example_zone(dir: &Path) -> PathBuf {
    let path = dir.join("example.zone");
    std::fs::write(&path, zone_text()).expect("writing the test zone");
    path
}

/// The path of `program`, or the test fails naming the Debian `package` to install.
fn program(program: &str, package: &str) -> PathBuf {
    prerequisite::installed(program).unwrap_or_else(|| {
        panic!(
            "the DNS server `{program}` is not installed; these tests need it \
             (apt-get install {package}; scripts/test.sh does)"
        )
    })
}

/// Starts knotd on 127.0.0.1 with [`ZONE`].
pub fn knot() -> Server {
    knot_with_workers(1)
}

/// Starts knotd on 127.0.0.1 with [`ZONE`] and `workers` UDP and TCP workers: two builds of
/// one server to compare.
pub fn knot_with_workers(workers: usize) -> Server {
    let dir = tempfile::tempdir().expect("tempdir");
    let zone = example_zone(dir.path());
    knot_in(
        dir,
        &[ZoneFile {
            origin: "example.",
            file: &zone,
        }],
        workers,
    )
}

/// Starts knotd on 127.0.0.1 serving `zones`, with one UDP and one TCP worker.
pub fn knot_serving(zones: &[ZoneFile<'_>]) -> Server {
    knot_in(tempfile::tempdir().expect("tempdir"), zones, 1)
}

/// Starts knotd with `zones` and `workers` workers, its files in `dir`.
fn knot_in(dir: tempfile::TempDir, zones: &[ZoneFile<'_>], workers: usize) -> Server {
    let knotd = program("knotd", "knot");
    let port = free_port();
    let config = KnotConfig {
        dir: dir.path(),
        listen: &[LOOPBACK],
        port,
        tcp_idle_seconds: 5,
        tcp_max_clients: None,
        workers: Some(workers),
        extra: "",
        zones,
    }
    .write()
    .expect("writing knot.conf");
    let log = dir.path().join("knotd.log");
    let stderr = std::fs::File::create(&log).expect("knotd's log");
    let child = Command::new(knotd)
        .arg("-c")
        .arg(&config)
        .stdout(Stdio::null())
        .stderr(stderr)
        .spawn()
        .expect("start knotd");
    started(child, (LOOPBACK, port).into(), None, log, dir)
}

/// Makes a CA and a server certificate for 127.0.0.1 / localhost (rcgen, through
/// `ldplayer-serverconf`); returns (ca.pem, server.key, server.pem).
pub fn make_certs(dir: &Path) -> (PathBuf, PathBuf, PathBuf) {
    let files = ldplayer_serverconf::make_certificate(dir, &[LOOPBACK], &["localhost".into()])
        .expect("making a test certificate");
    (files.ca, files.key, files.cert)
}

/// Starts nsd on 127.0.0.1 with [`ZONE`], plain DNS on one port and DNS over TLS on another,
/// with a server certificate signed by a test CA; returns the server and the CA's certificate.
pub fn nsd_tls() -> (Server, PathBuf) {
    let dir = tempfile::tempdir().expect("tempdir");
    let (ca, key, cert) = make_certs(dir.path());
    (nsd_tls_with(dir, &key, &cert), ca)
}

/// Like [`nsd_tls`] with a self-signed certificate made as `openssl req -x509` makes it by
/// default: CA:TRUE, which kdig accepts with `+tls-ca` and rustls refuses as a server's own.
/// Returns the server and its certificate.
pub fn nsd_tls_self_signed_ca() -> (Server, PathBuf) {
    let dir = tempfile::tempdir().expect("tempdir");
    let files =
        ldplayer_serverconf::make_self_signed_ca(dir.path(), &[LOOPBACK], &["localhost".into()])
            .expect("making a self-signed certificate");
    (nsd_tls_with(dir, &files.key, &files.cert), files.cert)
}

/// Starts nsd with [`ZONE`] on two loopback ports, plain and TLS with `key` and `cert`, in `dir`.
fn nsd_tls_with(dir: tempfile::TempDir, key: &Path, cert: &Path) -> Server {
    let zone = example_zone(dir.path());
    let zones = [ZoneFile {
        origin: "example.",
        file: &zone,
    }];
    let tls = NsdTls {
        port: free_port(),
        key,
        cert,
    };
    nsd_in(dir, &zones, Some(tls), "")
}

/// Starts nsd on 127.0.0.1 serving `zones` (plain DNS only), with `extra` lines in its
/// `server:` section (`    hide-version: yes\n`).
pub fn nsd_serving(zones: &[ZoneFile<'_>], extra: &str) -> Server {
    nsd_in(tempfile::tempdir().expect("tempdir"), zones, None, extra)
}

/// Starts nsd with `zones`, TLS when given and `extra` configuration lines, its files in `dir`.
fn nsd_in(
    dir: tempfile::TempDir,
    zones: &[ZoneFile<'_>],
    tls: Option<NsdTls<'_>>,
    extra: &str,
) -> Server {
    let nsd = program("nsd", "nsd");
    let port = free_port();
    let log = dir.path().join("nsd.log");
    // NSD's own defaults for connections and idle time.
    let config = NsdConfig {
        dir: dir.path(),
        listen: &[LOOPBACK],
        port,
        tls,
        workers: 1,
        tcp_count: 100,
        tcp_idle_seconds: 120,
        log: &log,
        extra,
        zones,
    }
    .write()
    .expect("writing nsd.conf");
    let child = Command::new(nsd)
        .arg("-d")
        .arg("-c")
        .arg(&config)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("start nsd");
    let tls_addr = tls.map(|t| SocketAddr::from((LOOPBACK, t.port)));
    started(child, (LOOPBACK, port).into(), tls_addr, log, dir)
}

/// The server `child` once it accepts TCP connections on `addr` (and `tls_addr`); the test
/// fails with its log if it exits or does not listen in time.
fn started(
    mut child: Child,
    addr: SocketAddr,
    tls_addr: Option<SocketAddr>,
    log: PathBuf,
    dir: tempfile::TempDir,
) -> Server {
    for a in std::iter::once(addr).chain(tls_addr) {
        if let Err(why) = wait_tcp(a, &mut child) {
            let _ = child.kill();
            let _ = child.wait();
            let text = std::fs::read_to_string(&log).unwrap_or_default();
            panic!("the test server {why}; its log {}:\n{text}", log.display());
        }
    }
    Server {
        child,
        addr,
        tls_addr,
        log,
        dir,
    }
}

/// Waits until `addr` accepts a TCP connection (then a moment for UDP too), or says why not.
fn wait_tcp(addr: SocketAddr, child: &mut Child) -> Result<(), String> {
    let start = Instant::now();
    while start.elapsed() < START_TIMEOUT {
        if let Ok(Some(status)) = child.try_wait() {
            return Err(format!("exited early: {status}"));
        }
        if TcpStream::connect_timeout(&addr, Duration::from_millis(100)).is_ok() {
            std::thread::sleep(Duration::from_millis(100));
            return Ok(());
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    Err(format!("did not start listening on {addr}"))
}

/// An authoritative server to compare ldplayer's answers with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Authoritative {
    /// NSD, with `hide-version`.
    Nsd,
    /// Knot DNS.
    Knot,
}

/// How long [`authoritative`] waits for the first zone to be served (a root zone takes a while
/// to load on a busy machine).
const SERVING_TIMEOUT: Duration = Duration::from_secs(60);

/// Starts `kind` on 127.0.0.1 serving `zones` (origin, file) and waits until it answers the
/// first zone's SOA over UDP; the test fails with the server's log if it does not in time.
pub fn authoritative(kind: Authoritative, zones: &[(&str, &Path)]) -> Server {
    let files: Vec<ZoneFile> = zones
        .iter()
        .map(|&(origin, file)| ZoneFile { origin, file })
        .collect();
    let server = match kind {
        Authoritative::Nsd => nsd_serving(&files, "    hide-version: yes\n"),
        Authoritative::Knot => knot_serving(&files),
    };
    let origin = zones.first().map_or(".", |z| z.0);
    let probe = crate::dns::query(0xfeed, origin, 6u16, None);
    let start = Instant::now();
    loop {
        let answer = crate::dns::ask_udp(server.addr, &probe);
        // NOERROR with an answer.
        if answer.is_some_and(|r| r.len() > 12 && r[3] & 0xF == 0 && r[7] > 0) {
            return server;
        }
        if start.elapsed() > SERVING_TIMEOUT {
            let text = std::fs::read_to_string(&server.log).unwrap_or_default();
            panic!("{kind:?} does not serve {origin} SOA; its log:\n{text}");
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}
