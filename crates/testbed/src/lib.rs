//! Real DNS servers for ldplayer's tests: knotd and nsd (Debian packages) started on loopback
//! with free ports and a configuration written into a scratch directory, killed on drop, and test
//! certificates made with openssl. A missing binary fails the test with a clear message: the
//! project's test script installs the packages, and a test that silently passes without its
//! server would prove nothing. [`slurm`] starts a one-node Slurm cluster of its own the same way.
//!
//! Only loopback addresses are used.

#![forbid(unsafe_code)]

pub mod browser;
pub mod prerequisite;
pub mod slurm;

use std::net::{SocketAddr, TcpListener, TcpStream, UdpSocket};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// A zone with a few names, a big TXT RRset (truncated over UDP without EDNS) and a wildcard.
pub const ZONE: &str = "$ORIGIN example.
$TTL 3600
@ IN SOA ns.example. admin.example. 1 3600 600 86400 300
@ IN NS ns.example.
ns IN A 127.0.0.1
www IN A 192.0.2.1
*.w IN A 192.0.2.2
";

fn zone_text() -> String {
    let mut z = ZONE.to_string();
    for i in 0..20 {
        z.push_str(&format!("big IN TXT \"{i:02}{}\"\n", "x".repeat(180)));
    }
    z
}

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

fn find_binary(name: &str) -> PathBuf {
    for dir in [
        "/usr/sbin",
        "/usr/bin",
        "/usr/local/sbin",
        "/usr/local/bin",
        "/sbin",
    ] {
        let p = Path::new(dir).join(name);
        if p.exists() {
            return p;
        }
    }
    panic!(
        "the DNS server binary `{name}` is not installed; these tests need it \
         (apt-get install knot nsd unbound)"
    );
}

/// A running server, killed on drop.
pub struct Server {
    child: Child,
    /// Where it answers over UDP and TCP (loopback, a free port).
    pub addr: SocketAddr,
    /// Where it answers over TLS, when started with a certificate.
    pub tls_addr: Option<SocketAddr>,
    /// Its scratch directory (configuration, zone, certificate), removed on drop.
    pub dir: tempfile::TempDir,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn wait_tcp(addr: SocketAddr, child: &mut Child, name: &str) {
    let start = Instant::now();
    while start.elapsed() < Duration::from_secs(15) {
        if let Ok(Some(status)) = child.try_wait() {
            panic!("{name} exited early: {status}");
        }
        if TcpStream::connect_timeout(&addr, Duration::from_millis(100)).is_ok() {
            // Give UDP a moment too.
            std::thread::sleep(Duration::from_millis(100));
            return;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    panic!("{name} did not start listening on {addr}");
}

/// Starts knotd on 127.0.0.1 with [`ZONE`].
pub fn knot() -> Server {
    knot_with_workers(1)
}

/// Starts knotd on 127.0.0.1 with [`ZONE`] and `workers` UDP and TCP workers: two builds of
/// one server to compare.
pub fn knot_with_workers(workers: u32) -> Server {
    let bin = find_binary("knotd");
    let dir = tempfile::tempdir().expect("tempdir");
    let port = free_port();
    let d = dir.path().display();
    std::fs::write(dir.path().join("example.zone"), zone_text()).expect("zone");
    let conf = format!(
        "server:\n    rundir: \"{d}\"\n    listen: 127.0.0.1@{port}\n    udp-workers: {workers}\n    tcp-workers: {workers}\n    background-workers: 1\n    tcp-idle-timeout: 5s\n\
         database:\n    storage: \"{d}\"\n\
         log:\n  - target: stderr\n    any: warning\n\
         template:\n  - id: default\n    storage: \"{d}\"\n    file: \"%s.zone\"\n    semantic-checks: off\n\
         zone:\n  - domain: example.\n"
    );
    let conf_path = dir.path().join("knot.conf");
    std::fs::write(&conf_path, conf).expect("conf");
    let mut child = Command::new(bin)
        .arg("-c")
        .arg(&conf_path)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("start knotd");
    let addr: SocketAddr = ([127, 0, 0, 1], port).into();
    wait_tcp(addr, &mut child, "knotd");
    Server {
        child,
        addr,
        tls_addr: None,
        dir,
    }
}

/// Makes a CA and a server certificate for 127.0.0.1 / localhost with openssl; returns
/// (ca.pem, key.pem, cert.pem).
pub fn make_certs(dir: &Path) -> (PathBuf, PathBuf, PathBuf) {
    let openssl = find_binary("openssl");
    let run = |args: &[&str]| {
        let out = Command::new(&openssl)
            .args(args)
            .current_dir(dir)
            .output()
            .expect("run openssl");
        assert!(
            out.status.success(),
            "openssl {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    };
    run(&[
        "req",
        "-x509",
        "-newkey",
        "ec",
        "-pkeyopt",
        "ec_paramgen_curve:prime256v1",
        "-nodes",
        "-keyout",
        "ca.key",
        "-out",
        "ca.pem",
        "-days",
        "2",
        "-subj",
        "/CN=ldplayer test CA",
    ]);
    run(&[
        "req",
        "-newkey",
        "ec",
        "-pkeyopt",
        "ec_paramgen_curve:prime256v1",
        "-nodes",
        "-keyout",
        "server.key",
        "-out",
        "server.csr",
        "-subj",
        "/CN=localhost",
    ]);
    std::fs::write(
        dir.join("ext.cnf"),
        "basicConstraints=CA:FALSE\nsubjectAltName=IP:127.0.0.1,DNS:localhost\nkeyUsage=digitalSignature\nextendedKeyUsage=serverAuth\n",
    )
    .expect("ext");
    run(&[
        "x509",
        "-req",
        "-in",
        "server.csr",
        "-CA",
        "ca.pem",
        "-CAkey",
        "ca.key",
        "-CAcreateserial",
        "-out",
        "server.pem",
        "-days",
        "2",
        "-extfile",
        "ext.cnf",
    ]);
    (
        dir.join("ca.pem"),
        dir.join("server.key"),
        dir.join("server.pem"),
    )
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
    let openssl = find_binary("openssl");
    let out = Command::new(&openssl)
        .args([
            "req",
            "-x509",
            "-newkey",
            "ec",
            "-pkeyopt",
            "ec_paramgen_curve:prime256v1",
        ])
        .args([
            "-nodes", "-keyout", "self.key", "-out", "self.pem", "-days", "2",
        ])
        .args([
            "-subj",
            "/CN=localhost",
            "-addext",
            "subjectAltName=IP:127.0.0.1,DNS:localhost",
        ])
        .current_dir(dir.path())
        .output()
        .expect("run openssl");
    assert!(
        out.status.success(),
        "openssl req -x509: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let (key, cert) = (dir.path().join("self.key"), dir.path().join("self.pem"));
    (nsd_tls_with(dir, &key, &cert), cert)
}

/// Starts nsd with [`ZONE`] on two loopback ports, plain and TLS with `key` and `cert`, in `dir`.
fn nsd_tls_with(dir: tempfile::TempDir, key: &Path, cert: &Path) -> Server {
    let bin = find_binary("nsd");
    let port = free_port();
    let tls_port = free_port();
    let d = dir.path().display();
    std::fs::write(dir.path().join("example.zone"), zone_text()).expect("zone");
    let conf = format!(
        "server:\n    ip-address: 127.0.0.1@{port}\n    ip-address: 127.0.0.1@{tls_port}\n    tls-port: {tls_port}\n\
         \x20   tls-service-key: \"{}\"\n    tls-service-pem: \"{}\"\n\
         \x20   server-count: 1\n    username: \"\"\n    chroot: \"\"\n    zonesdir: \"{d}\"\n\
         \x20   database: \"\"\n    pidfile: \"{d}/nsd.pid\"\n    xfrdfile: \"{d}/xfrd.state\"\n\
         \x20   zonelistfile: \"{d}/zone.list\"\n    xfrdir: \"{d}\"\n    logfile: \"{d}/nsd.log\"\n    verbosity: 1\n\
         remote-control:\n    control-enable: no\n\
         zone:\n    name: example.\n    zonefile: \"{d}/example.zone\"\n",
        key.display(),
        cert.display()
    );
    let conf_path = dir.path().join("nsd.conf");
    std::fs::write(&conf_path, conf).expect("conf");
    let mut child = Command::new(bin)
        .arg("-d")
        .arg("-c")
        .arg(&conf_path)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("start nsd");
    let addr: SocketAddr = ([127, 0, 0, 1], port).into();
    let tls_addr: SocketAddr = ([127, 0, 0, 1], tls_port).into();
    wait_tcp(addr, &mut child, "nsd");
    wait_tcp(tls_addr, &mut child, "nsd (tls)");
    Server {
        child,
        addr,
        tls_addr: Some(tls_addr),
        dir,
    }
}
