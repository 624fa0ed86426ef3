//! `ldplayer replay --proto doh` against three DNS-over-HTTPS servers that share no code with
//! the replay's HTTP/2 client: ldplayer serve (h2 over tokio-rustls), unbound (nghttp2) and BIND
//! 9.18 (nghttp2), POST and GET; `--proto doq` against a DoQ server on aioquic. Against unbound
//! (DoT and DoH) and aioquic (DoQ, DoH over HTTP/3), both stacks: `--stack lean` and
//! `--stack reference` (rustls' ClientConnection, h2, quinn, h3).

mod binary;

use binary::{ldplayer, ldplayer_unanswered, s, Serve};
use ldplayer_testbed::aioquic::{self, Script};
use ldplayer_testbed::prerequisite::tools;
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
    // A path the server does not serve: every query an HTTP error, counted by status (and the
    // replay exits 1: not one query was answered).
    let out = ldplayer_unanswered(&[
        "replay",
        &trace,
        "--server",
        &at,
        "--proto",
        "doh",
        "--json",
        "--speed",
        "4",
        "--tls-ca",
        &ca,
        "--doh-path",
        "/nope",
    ]);
    let summary: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON");
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
    if !tools(&[("unbound", "unbound")]) {
        return;
    }
    let dir = tempfile::tempdir().expect("scratch");
    let (ca, key, cert) = ldplayer_testbed::make_certs(dir.path());
    let (dns, https) = (ldplayer_testbed::free_port(), ldplayer_testbed::free_port());
    let dot = ldplayer_testbed::free_port();
    let conf = dir.path().join("unbound.conf");
    std::fs::write(
        &conf,
        format!(
            "server:\n  interface: 127.0.0.1@{dns}\n  interface: 127.0.0.1@{https}\n  \
             interface: 127.0.0.1@{dot}\n  tls-port: {dot}\n  \
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
    wait_for(dot, &mut daemon);
    let trace = trace(dir.path(), 300, 15);
    let at = format!("127.0.0.1:{https}");
    for stack in ["lean", "reference"] {
        for method in ["post", "get"] {
            let summary = replay_doh(
                &trace,
                &at,
                &[
                    "--tls-ca",
                    &s(&ca),
                    "--doh-method",
                    method,
                    "--stack",
                    stack,
                ],
            );
            assert_all_answered(&summary, 300, 15, &format!("unbound {method} {stack}"));
            assert_eq!(summary["replay"]["stacks"][0], stack, "{summary}");
        }
        // DNS over TLS on the same unbound.
        let out = ldplayer(&[
            "replay",
            &trace,
            "--server",
            &format!("127.0.0.1:{dot}"),
            "--proto",
            "tls",
            "--tls-ca",
            &s(&ca),
            "--stack",
            stack,
            "--json",
            "--speed",
            "4",
        ]);
        let summary: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON");
        assert_eq!(summary["answered"], 300, "DoT {stack}: {summary}");
        assert_eq!(
            summary["connections"]["opened"], 15,
            "DoT {stack}: {summary}"
        );
        assert_eq!(summary["replay"]["stacks"][0], stack, "{summary}");
        assert_eq!(
            summary["replay"]["timestamps"]["tls"]["receive"], "kernel",
            "{summary}"
        );
    }
}

#[test]
fn doh_replay_against_bind() {
    if !tools(&[("named", "bind9")]) {
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

/// `replay --proto doq` against a DoQ server on aioquic and dnspython (another QUIC stack and
/// another TLS than the replay's): every query answered over one connection per client; after
/// the server's idle timeout, each client's next connection resumes in 0-RTT, as the server
/// counts it; with --no-zero-rtt it resumes without.
#[test]
fn doq_replay_against_an_aioquic_server() {
    if !aioquic::available() {
        return;
    }
    let dir = tempfile::tempdir().expect("scratch");
    let (ca, key, cert) = ldplayer_testbed::make_certs(dir.path());
    let port = ldplayer_testbed::free_port();
    let start = || aioquic::start(Script::Doq, port, &cert, &key, &[]);
    let trace_file = dir.path().join("t.txt");
    two_rounds(&trace_file, "quic", 5, 20, |i| {
        if i % 2 == 0 {
            "www.example."
        } else {
            "nope.example."
        }
    });
    for (stack, zero_rtt) in [
        ("lean", true),
        ("lean", false),
        ("reference", true),
        ("reference", false),
    ] {
        let server = start();
        let at = format!("127.0.0.1:{port}");
        let mut args = vec![
            "replay",
            trace_file.to_str().expect("utf-8"),
            "--server",
            &at,
            "--tls-ca",
            ca.to_str().expect("utf-8"),
            "--json",
            "--stack",
            stack,
        ];
        if !zero_rtt {
            args.push("--no-zero-rtt");
        }
        let out = ldplayer(&args);
        let summary: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON");
        let served = server.stop();
        assert_eq!(summary["answered"], 40, "{stack}: {summary}");
        assert_eq!(summary["replay"]["stacks"][0], stack, "{summary}");
        assert_eq!(summary["replay"]["tls_resumed"], 5, "{stack}: {summary}");
        assert_eq!(summary["rcodes"]["NOERROR"], 20, "{summary}");
        assert_eq!(summary["rcodes"]["NXDOMAIN"], 20, "{summary}");
        assert_eq!(summary["replay"]["connections_opened"], 10, "{summary}");
        assert!(
            summary["latency_ms"]["quic"]["p50"].as_f64().is_some(),
            "{summary}"
        );
        assert_eq!(served["queries"], 40, "{served}");
        assert_eq!(served["connections"], 10, "{served}");
        assert_eq!(served["resumed"], 5, "{served}");
        if zero_rtt {
            assert_eq!(summary["replay"]["quic_zero_rtt"], 5, "{summary}");
            assert_eq!(summary["replay"]["quic_zero_rtt_accepted"], 5, "{summary}");
            assert_eq!(served["zero_rtt"], 5, "{served}");
        } else {
            assert_eq!(summary["replay"]["quic_zero_rtt"], 0, "{summary}");
            assert_eq!(served["zero_rtt"], 0, "{served}");
        }
    }
}

/// `replay --proto doq` against the aioquic DoQ server starting a QUIC key update (RFC 9001 §6)
/// after every third answer on a connection: the client follows each and keeps its session,
/// every query answered on the one connection, no new handshake.
/// (The DoT half, a TLS KeyUpdate, is crates/replay/tests/reference.rs.)
#[test]
fn doq_replay_keeps_its_session_through_the_servers_key_updates() {
    if !aioquic::available() {
        return;
    }
    let dir = tempfile::tempdir().expect("scratch");
    let (ca, key, cert) = ldplayer_testbed::make_certs(dir.path());
    let trace_file = dir.path().join("t.txt");
    // 24 queries from one client, 5 ms apart: one connection, within the server's idle
    // timeout.
    rounds(&trace_file, "quic", 1, 24, 1, |_| "www.example.");
    // The lean stack only: quinn (`--stack reference`) closes the connection with
    // KEY_UPDATE_ERROR after a few of aioquic's updates (RFC 9001 §6.5 lets an endpoint refuse
    // an update that comes before it has answered the previous one), and three of the 24
    // queries fail with it. Once with the client's default update count, once with its own
    // updates every two packets besides the server's: aioquic then updates again before it
    // has sent a packet in the phase the client started (against §6.1), which the client
    // follows (a run in which it did not stalled with 2 of 24 answered); the client's own
    // updates against quinn's server are crates/stacks/tests/doq_against_quinn.rs, and the
    // lean connection alone against this server crates/stacks/tests/doq_against_aioquic.rs.
    for extra in [None, Some("2")] {
        let stack = "lean";
        let port = ldplayer_testbed::free_port();
        let server = aioquic::start(Script::Doq, port, &cert, &key, &["3"]);
        let at = format!("127.0.0.1:{port}");
        let mut args = vec![
            "replay",
            trace_file.to_str().expect("utf-8"),
            "--server",
            &at,
            "--tls-ca",
            ca.to_str().expect("utf-8"),
            "--json",
            "--stack",
            stack,
        ];
        if let Some(n) = extra {
            args.extend(["--quic-key-update-packets", n]);
        }
        let what = format!("{stack} {extra:?}");
        let out = ldplayer(&args);
        let summary: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON");
        let served = server.stop();
        assert_eq!(summary["sent"], 24, "{what}: {summary}");
        assert_eq!(summary["answered"], 24, "{what}: {summary}");
        assert_eq!(summary["rcodes"]["NOERROR"], 24, "{what}: {summary}");
        assert_eq!(
            summary["replay"]["connections_opened"], 1,
            "{what}: {summary}"
        );
        assert_eq!(served["queries"], 24, "{what}: {served}");
        assert_eq!(served["connections"], 1, "{what}: {served}");
        assert_eq!(served["key_updates"], 8, "{what}: {served}");
    }
}

/// Writes a text trace of two rounds, 2 s apart (the aioquic servers' idle timeout of 1 s
/// closes every connection in between), of `per_round` queries from `clients` clients over
/// `proto`, query `i` of a round asking for `name(i)`.
fn two_rounds(
    path: &Path,
    proto: &str,
    clients: u32,
    per_round: u32,
    name: impl Fn(u32) -> &'static str,
) {
    rounds(path, proto, clients, per_round, 2, name);
}

/// [`two_rounds`], with `n` rounds.
fn rounds(
    path: &Path,
    proto: &str,
    clients: u32,
    per_round: u32,
    n: u32,
    name: impl Fn(u32) -> &'static str,
) {
    let mut text = String::from(
        "#ldplayer-text/2\ntime\tsrc\tsport\tdst\tdport\tproto\tconn\tid\tqr\topcode\trcode\tflags\tqname\tqclass\tqtype\tedns\tbufsize\tdo\tednsopts\twire\n",
    );
    for round in 0..n {
        for i in 0..per_round {
            let client = i % clients + 1;
            let t = 1_700_000_000.0 + f64::from(round) * 2.0 + f64::from(i) * 0.005;
            let name = name(i);
            text.push_str(&format!(
                "{t:.9}\t10.0.0.{client}\t4000{client}\t192.0.2.53\t53\t{proto}\t{client}\t{i}\t0\tQUERY\tNOERROR\t-\t{name}\tIN\tA\t-\t-\t-\t-\t-\n"
            ));
        }
    }
    std::fs::write(path, text).expect("trace");
}

/// `replay --proto doh --doh-http3` against a DoH server on HTTP/3 (aioquic's HTTP/3 and QPACK,
/// dnspython): by POST and by GET every query is answered, one connection per client, each
/// client's second connection (after the server's 1 s idle timeout) resumed in 0-RTT as the
/// server counts it; an HTTP status other than 200 and a content type other than
/// application/dns-message fail their queries as `http` with their causes, and the run
/// completes. No other DNS tool has DoH over HTTP/3, so aioquic is the only peer.
#[test]
fn doh_over_http3_against_an_aioquic_server() {
    if !aioquic::available() {
        return;
    }
    let dir = tempfile::tempdir().expect("scratch");
    let (ca, key, cert) = ldplayer_testbed::make_certs(dir.path());
    let port = ldplayer_testbed::free_port();
    let trace_file = dir.path().join("t.txt");
    // In each round, 2 queries fail on purpose.
    two_rounds(&trace_file, "https", 4, 12, |i| match i {
        5 => "a.status503.example.",
        6 => "b.text.example.",
        _ if i % 2 == 0 => "www.example.",
        _ => "nope.example.",
    });
    for (stack, method) in [
        ("lean", "post"),
        ("lean", "get"),
        ("reference", "post"),
        ("reference", "get"),
    ] {
        let server = aioquic::start(Script::Doh3, port, &cert, &key, &[]);
        let at = format!("127.0.0.1:{port}");
        let out = ldplayer(&[
            "replay",
            trace_file.to_str().expect("utf-8"),
            "--server",
            &at,
            "--tls-ca",
            ca.to_str().expect("utf-8"),
            "--doh-http3",
            "--doh-method",
            method,
            "--stack",
            stack,
            "--json",
        ]);
        let summary: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON");
        let served = server.stop();
        assert_eq!(summary["answered"], 20, "{stack} {method}: {summary}");
        assert_eq!(summary["replay"]["stacks"][0], stack, "{summary}");
        assert_eq!(summary["rcodes"]["NOERROR"], 10, "{summary}");
        assert_eq!(summary["rcodes"]["NXDOMAIN"], 10, "{summary}");
        assert_eq!(summary["errors"]["http"], 4, "{summary}");
        let causes: Vec<(String, u64)> = summary["replay"]["error_causes"]
            .as_array()
            .expect("causes")
            .iter()
            .map(|c| {
                (
                    c["cause"].as_str().unwrap_or("").to_string(),
                    c["count"].as_u64().unwrap_or(0),
                )
            })
            .collect();
        assert!(causes.contains(&("http-503".into(), 2)), "{causes:?}");
        assert!(
            causes.contains(&("not-dns-content".into(), 2)),
            "{causes:?}"
        );
        assert!(
            summary["latency_ms"]["https"]["p50"].as_f64().is_some(),
            "{summary}"
        );
        assert_eq!(summary["replay"]["connections_opened"], 8, "{summary}");
        assert_eq!(summary["replay"]["tls_resumed"], 4, "{summary}");
        assert_eq!(summary["replay"]["quic_zero_rtt_accepted"], 4, "{summary}");
        assert_eq!(served["queries"], 24, "{served}");
        assert_eq!(served[method], 24, "{served}");
        assert_eq!(served["connections"], 8, "{served}");
        assert_eq!(served["resumed"], 4, "{served}");
        assert_eq!(served["zero_rtt"], 4, "{served}");
    }
}
