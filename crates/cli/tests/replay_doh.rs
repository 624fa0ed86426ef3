//! `ldplayer replay --proto doh` against three DNS-over-HTTPS servers that share no code with
//! the replay's HTTP/2 client: ldplayer serve (h2 over tokio-rustls), unbound (nghttp2) and BIND
//! 9.18 (nghttp2), POST and GET; and the failures a DoH client meets, counted by kind.

mod common;

use common::{ldplayer, s, tools, Serve};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// A trace of `n` queries from `clients` clients under `example.` (names that do not exist).
fn trace(dir: &Path, n: u32, clients: u32) -> String {
    let trace = dir.join("t.bin");
    ldplayer(&[
        "synth",
        "--workload",
        "poisson",
        "--rate",
        "1000",
        "-n",
        &n.to_string(),
        "--clients",
        &clients.to_string(),
        "--zone",
        "example.",
        "--seed",
        "7",
        "-o",
        &s(&trace),
        "-q",
    ]);
    s(&trace)
}

/// Replays `trace` over DoH to `server` with `extra` flags; the JSON summary.
fn replay_doh(trace: &str, server: &str, extra: &[&str]) -> serde_json::Value {
    let mut args = vec![
        "replay", trace, "--server", server, "--proto", "doh", "--json", "--speed", "4",
    ];
    args.extend_from_slice(extra);
    let out = ldplayer(&args);
    serde_json::from_slice(&out.stdout).expect("one JSON object")
}

/// Every query answered over HTTPS, one connection per client, each reused after.
fn assert_all_answered(summary: &serde_json::Value, n: u64, clients: u64, what: &str) {
    assert_eq!(summary["sent"], n, "{what}: {summary}");
    assert_eq!(summary["answered"], n, "{what}: {summary}");
    assert_eq!(
        summary["connections"]["opened"], clients,
        "{what}: {summary}"
    );
    assert_eq!(
        summary["connections"]["reused"],
        n - clients,
        "{what}: {summary}"
    );
    assert!(
        summary["latency_ms"]["https"]["p50"].as_f64().is_some(),
        "{what}: {summary}"
    );
}

#[test]
fn doh_replay_against_ldplayer_serve_post_and_get() {
    let dir = tempfile::tempdir().expect("scratch");
    std::fs::write(
        dir.path().join("example.zone"),
        "$ORIGIN example.\n$TTL 60\n@ SOA ns admin 1 60 60 60 60\n@ NS ns\nns A 127.0.0.1\n",
    )
    .expect("zone");
    std::fs::write(dir.path().join("manifest"), "127.0.0.1 example.zone\n").expect("manifest");
    let (port, https) = (ldplayer_testbed::free_port(), ldplayer_testbed::free_port());
    let tls = dir.path().join("tls");
    let server = Serve::start(&[
        "--manifest",
        &s(&dir.path().join("manifest")),
        "--listen",
        &format!("127.0.0.1:{port}"),
        "--https-listen",
        &format!("127.0.0.1:{https}"),
        "--tls-self-signed",
        &s(&tls),
    ]);
    let trace = trace(dir.path(), 400, 20);
    let ca = s(&tls.join("ca.pem"));
    let at = format!("127.0.0.1:{https}");
    for method in ["post", "get"] {
        let summary = replay_doh(&trace, &at, &["--tls-ca", &ca, "--doh-method", method]);
        assert_all_answered(&summary, 400, 20, method);
    }
    // A path the server does not serve: every query an HTTP error, counted by status.
    let summary = replay_doh(&trace, &at, &["--tls-ca", &ca, "--doh-path", "/nope"]);
    assert_eq!(summary["errors"]["http"], 400, "{summary}");
    assert_eq!(summary["answered"], 0, "{summary}");
    let causes = summary["replay"]["error_causes"].to_string();
    assert!(causes.contains("http-404"), "{summary}");
    drop(server);
}

/// A daemon the test started, killed on drop.
struct Daemon(Child, &'static str);

impl Drop for Daemon {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Waits until `port` on 127.0.0.1 accepts TCP connections (the daemon is up).
fn wait_for(port: u16, daemon: &mut Daemon) {
    let start = Instant::now();
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        if let Ok(Some(status)) = daemon.0.try_wait() {
            panic!("{} exited early: {status}", daemon.1);
        }
        assert!(
            start.elapsed() < Duration::from_secs(20),
            "{} did not listen on {port}",
            daemon.1
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn doh_replay_against_unbound() {
    if !tools(&[("unbound", "unbound"), ("openssl", "openssl")]) {
        return;
    }
    let dir = tempfile::tempdir().expect("scratch");
    let (ca, key, cert) = ldplayer_testbed::make_certs(dir.path());
    let (dns, https) = (ldplayer_testbed::free_port(), ldplayer_testbed::free_port());
    let conf = dir.path().join("unbound.conf");
    std::fs::write(
        &conf,
        format!(
            "server:\n  interface: 127.0.0.1@{dns}\n  interface: 127.0.0.1@{https}\n  \
             https-port: {https}\n  http-endpoint: \"/dns-query\"\n  \
             tls-service-key: \"{}\"\n  tls-service-pem: \"{}\"\n  \
             username: \"\"\n  chroot: \"\"\n  directory: \"{}\"\n  pidfile: \"\"\n  \
             use-syslog: no\n  do-daemonize: no\n  verbosity: 1\n  \
             access-control: 127.0.0.0/8 allow\n  incoming-num-tcp: 200\n  \
             local-zone: \"example.\" static\n  \
             local-data: \"example. 60 IN SOA ns.example. admin.example. 1 60 60 60 60\"\n\
             remote-control:\n  control-enable: no\n",
            s(&key),
            s(&cert),
            s(dir.path())
        ),
    )
    .expect("config");
    let child = Command::new("unbound")
        .args(["-d", "-c", &s(&conf)])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("unbound starts");
    let mut daemon = Daemon(child, "unbound");
    wait_for(https, &mut daemon);
    let trace = trace(dir.path(), 300, 15);
    let at = format!("127.0.0.1:{https}");
    for method in ["post", "get"] {
        let summary = replay_doh(&trace, &at, &["--tls-ca", &s(&ca), "--doh-method", method]);
        assert_all_answered(&summary, 300, 15, &format!("unbound {method}"));
    }
}

#[test]
fn doh_replay_against_bind() {
    if !tools(&[("named", "bind9"), ("openssl", "openssl")]) {
        return;
    }
    let dir = tempfile::tempdir().expect("scratch");
    let (ca, key, cert) = ldplayer_testbed::make_certs(dir.path());
    let (dns, https) = (ldplayer_testbed::free_port(), ldplayer_testbed::free_port());
    std::fs::write(
        dir.path().join("example.zone"),
        "$ORIGIN example.\n$TTL 60\n@ SOA ns admin 1 60 60 60 60\n@ NS ns\nns A 127.0.0.1\n",
    )
    .expect("zone");
    let d = s(dir.path());
    let conf = dir.path().join("named.conf");
    std::fs::write(
        &conf,
        format!(
            "tls local {{ key-file \"{}\"; cert-file \"{}\"; }};\n\
             http local {{ endpoints {{ \"/dns-query\"; }}; }};\n\
             options {{ directory \"{d}\"; pid-file none; recursion no;\n  \
             listen-on port {dns} {{ 127.0.0.1; }};\n  \
             listen-on port {https} tls local http local {{ 127.0.0.1; }};\n  \
             listen-on-v6 {{ none; }}; }};\n\
             zone \"example.\" {{ type primary; file \"{d}/example.zone\"; }};\n",
            s(&key),
            s(&cert)
        ),
    )
    .expect("config");
    let named = ["/usr/sbin/named", "named"]
        .into_iter()
        .find(|p| Path::new(p).exists())
        .unwrap_or("named");
    let child = Command::new(named)
        .args(["-g", "-u", "root", "-n", "1", "-c", &s(&conf)])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("named starts");
    let mut daemon = Daemon(child, "named");
    wait_for(https, &mut daemon);
    let trace = trace(dir.path(), 300, 15);
    let at = format!("127.0.0.1:{https}");
    for method in ["post", "get"] {
        let summary = replay_doh(&trace, &at, &["--tls-ca", &s(&ca), "--doh-method", method]);
        assert_all_answered(&summary, 300, 15, &format!("bind {method}"));
    }
}
