//! `ldplayer serve` in plain and split mode, queried by kdig (an independent client), raw
//! sockets and `ldplayer replay`: its answers, and the counters it reports as JSON on exit and
//! every second with `--stats`, checked against what was sent and, for bytes, against what
//! tcpdump saw on the wire (read by tshark).

mod binary;

use binary::{ldplayer, Serve};
use ldplayer_testbed::{prerequisite, witness::Tcpdump};
use std::io::{Read, Write};
use std::net::{TcpStream, UdpSocket};
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

/// Starts `ldplayer serve` on a free loopback port with `args` after the listen address;
/// returns it with its address.
fn serve(args: &[&str]) -> (Serve, String) {
    let port = ldplayer_testbed::free_port();
    let addr = format!("127.0.0.1:{port}");
    let mut all = vec!["--listen", &addr];
    all.extend(args);
    (Serve::start(&all), addr)
}

fn kdig(addr: &str, args: &[&str]) -> String {
    let (host, port) = addr.split_once(':').expect("addr");
    let out = Command::new("kdig")
        .arg(format!("@{host}"))
        .args(["-p", port, "+timeout=2", "+retry=0"])
        .args(args)
        .output()
        .expect("kdig must be installed (scripts/test.sh installs knot-dnsutils)");
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn s(p: &Path) -> String {
    p.to_string_lossy().into_owned()
}

/// A zone with a name, a big TXT RRset (truncated over UDP without EDNS) and nothing else.
fn example_zone(dir: &Path) -> String {
    let mut text = String::from(
        "$ORIGIN example.\n$TTL 60\n@ SOA ns admin 1 60 60 60 60\n@ NS ns\nns A 127.0.0.1\nwww A 192.0.2.1\n",
    );
    for i in 0..20 {
        text.push_str(&format!("big TXT \"{i:02}{}\"\n", "x".repeat(180)));
    }
    let zone = dir.join("example.zone");
    std::fs::write(&zone, text).expect("zone");
    s(&zone)
}

#[test]
fn serves_the_signed_root_zone_to_kdig_over_udp_and_tcp() {
    if !prerequisite::tools(&[("kdig", "knot-dnsutils")]) {
        return;
    }
    let Some(root) = prerequisite::shared_file("zones/root-signed-2017-08-21.zone") else {
        return;
    };
    let (_server, addr) = serve(&[&s(&root)]);
    let udp = kdig(&addr, &["www.example.com.", "A", "+dnssec"]);
    assert!(udp.contains("status: NOERROR"), "{udp}");
    assert!(
        udp.contains("com.") && udp.contains("NS"),
        "a referral to com: {udp}"
    );
    assert!(udp.contains("DS"), "DS with DO: {udp}");
    let tcp = kdig(&addr, &["nonexistent-tld-xyz.", "A", "+tcp"]);
    assert!(tcp.contains("status: NXDOMAIN"), "{tcp}");
    assert!(tcp.contains("Flags: qr aa"), "{tcp}");
}

#[test]
fn replay_against_ldplayer_serve() {
    let dir = tempfile::tempdir().expect("scratch");
    let zone = example_zone(dir.path());
    let (server, addr) = serve(&[&zone]);
    let trace = dir.path().join("t.bin");
    ldplayer(&[
        "synth",
        "--workload",
        "poisson",
        "--rate",
        "1000",
        "-n",
        "1000",
        "--clients",
        "30",
        "--tcp-share",
        "0.3",
        "--zone",
        "example.",
        "-q",
        "-o",
        &s(&trace),
    ]);
    let out = ldplayer(&[
        "replay",
        &s(&trace),
        "--server",
        &addr,
        "--speed",
        "4",
        "--json",
    ]);
    let summary: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
    assert_eq!(summary["sent"], 1000, "{summary}");
    assert_eq!(summary["answered"], 1000, "{summary}");
    assert_eq!(summary["rcodes"]["NXDOMAIN"], 1000, "{summary}");
    // The server counted what the replay sent, by transport.
    let stats: serde_json::Value =
        serde_json::from_str(&server.stop("INT")).expect("one JSON object on exit");
    let replay = &summary["replay"];
    assert_eq!(stats["queries"], 1000, "{stats}");
    assert_eq!(stats["rcodes"]["NXDOMAIN"], 1000, "{stats}");
    assert_eq!(
        stats["tcp_queries"], summary["latency_ms"]["tcp"]["count"],
        "{stats}"
    );
    assert_eq!(
        stats["tcp_accepted"], replay["connections_opened"],
        "{stats}"
    );
    assert_eq!(stats["tcp_open"], 0, "{stats}");
}

/// Reads a stats line's counters, leaving out the clock.
fn counters(v: &serde_json::Value) -> serde_json::Value {
    let mut v = v.clone();
    if let Some(o) = v.as_object_mut() {
        o.remove("time");
        o.remove("uptime_s");
    }
    v
}

/// Bytes of DNS messages to and from `port` in a capture, as tshark reads it: UDP payloads and
/// TCP segment payloads (length prefixes included).
fn wire_bytes(capture: &Path, port: u16) -> (u64, u64) {
    let out = Command::new("tshark")
        .arg("-r")
        .arg(capture)
        .args(["-T", "fields", "-E", "separator=,"])
        .args(["-e", "udp.srcport", "-e", "udp.dstport", "-e", "udp.length"])
        .args(["-e", "tcp.srcport", "-e", "tcp.dstport", "-e", "tcp.len"])
        .output()
        .expect("tshark must be installed (scripts/test.sh installs it)");
    let (mut to, mut from) = (0u64, 0u64);
    for line in String::from_utf8_lossy(&out.stdout).lines() {
        let f: Vec<u64> = line.split(',').map(|x| x.parse().unwrap_or(0)).collect();
        let (src, dst, len) = if f[0] != 0 {
            (f[0], f[1], f[2] - 8)
        } else {
            (f[3], f[4], f[5])
        };
        if dst == port as u64 {
            to += len;
        } else if src == port as u64 {
            from += len;
        }
    }
    (to, from)
}

/// Counts by kind of query and response, bytes in and out against tcpdump's witness, TCP
/// connections accepted, malformed and closed idle; the same counters every second with
/// `--stats` and as one JSON object on SIGTERM.
#[test]
fn serve_counts_what_was_sent_and_reports_json() {
    if !prerequisite::tools(&[
        ("kdig", "knot-dnsutils"),
        ("tcpdump", "tcpdump"),
        ("tshark", "tshark"),
    ]) {
        return;
    }
    let dir = tempfile::tempdir().expect("scratch");
    let zone = example_zone(dir.path());
    let stats_path = dir.path().join("stats.jsonl");
    let capture = dir.path().join("wire.pcap");
    let port = ldplayer_testbed::free_port();
    let addr = format!("127.0.0.1:{port}");
    let tcpdump = Tcpdump::start(&capture, &["port", &port.to_string()]);
    let server = Serve::start(&[
        "--listen",
        &addr,
        &zone,
        "--stats",
        &s(&stats_path),
        "--tcp-idle-timeout",
        "0.5",
    ]);
    assert!(
        server.stderr().contains("TCP idle timeout 0.5 s"),
        "{}",
        server.stderr()
    );

    for _ in 0..3 {
        assert!(kdig(&addr, &["www.example.", "A"]).contains("status: NOERROR"));
    }
    for _ in 0..2 {
        assert!(kdig(&addr, &["nope.example.", "A"]).contains("status: NXDOMAIN"));
    }
    assert!(kdig(&addr, &["www.other.", "A"]).contains("status: REFUSED"));
    let big = kdig(&addr, &["big.example.", "TXT", "+noedns", "+ignore"]);
    assert!(big.contains(" tc"), "truncated: {big}");
    for _ in 0..2 {
        assert!(kdig(&addr, &["www.example.", "A", "+tcp"]).contains("status: NOERROR"));
    }
    // Five bytes that are no query.
    let udp = UdpSocket::bind("127.0.0.1:0").expect("bind");
    udp.send_to(&[1, 2, 3, 4, 5], &addr).expect("send");
    // A TCP length prefix shorter than a DNS header: the server closes.
    let mut bad = TcpStream::connect(&addr).expect("connect");
    bad.set_read_timeout(Some(Duration::from_secs(10)))
        .expect("timeout");
    bad.write_all(&[0, 3, 1, 2, 3]).expect("write");
    assert_eq!(bad.read(&mut [0u8; 16]).unwrap_or(0), 0);
    // A connection that sends nothing: closed after the idle timeout.
    let mut idle = TcpStream::connect(&addr).expect("connect");
    idle.set_read_timeout(Some(Duration::from_secs(10)))
        .expect("timeout");
    assert_eq!(idle.read(&mut [0u8; 16]).expect("closed by the server"), 0);

    // At least two lines of --stats, then stop with SIGTERM.
    let deadline = Instant::now() + Duration::from_secs(20);
    while std::fs::read_to_string(&stats_path).map_or(0, |t| t.lines().count()) < 2 {
        assert!(Instant::now() < deadline, "no --stats lines in 20 s");
        std::thread::sleep(Duration::from_millis(100));
    }
    let exit = server.stop("TERM");
    tcpdump.stop();
    let v: serde_json::Value = serde_json::from_str(&exit).expect("one JSON object on exit");
    assert_eq!(exit.lines().count(), 1, "{exit}");

    assert_eq!(v["udp_queries"], 3 + 2 + 1 + 1 + 1, "{v}");
    assert_eq!(v["tcp_queries"], 2, "{v}");
    assert_eq!(v["queries"], 10, "{v}");
    assert_eq!(v["responses"], 9, "{v}");
    assert_eq!(
        (v["udp_responses"].clone(), v["tcp_responses"].clone()),
        (7.into(), 2.into())
    );
    assert_eq!(v["rcodes"]["NOERROR"], 3 + 1 + 2, "{v}");
    assert_eq!(v["rcodes"]["NXDOMAIN"], 2, "{v}");
    assert_eq!(v["rcodes"]["REFUSED"], 1, "{v}");
    assert_eq!(v["rcodes"]["SERVFAIL"], 0, "{v}");
    assert_eq!(v["kinds"]["answer"], 3 + 1 + 2, "{v}");
    assert_eq!(v["truncated"], 1, "{v}");
    assert_eq!(v["dropped"], 1, "{v}");
    assert_eq!(v["tcp_malformed"], 1, "{v}");
    assert_eq!(v["tcp_accepted"], 4, "{v}");
    assert_eq!(v["tcp_idle_closed"], 1, "{v}");
    assert_eq!(v["tcp_open"], 0, "{v}");
    assert!(v["tcp_peak_open"].as_u64().unwrap_or(0) >= 1, "{v}");
    assert_eq!(v["refused_by_address"], 0, "{v}");

    // Bytes: the wire's, without the TCP length prefixes and the malformed stream's 5 bytes.
    let (to, from) = wire_bytes(&capture, port);
    assert_eq!(v["bytes_in"], to - 2 * 2 - 5, "{v}, wire {to}");
    assert_eq!(v["bytes_out"], from - 2 * 2, "{v}, wire {from}");

    // --stats: JSON Lines, one a second, time increasing, counters never going back, the last
    // one the exit report.
    let text = std::fs::read_to_string(&stats_path).expect("stats file");
    let lines: Vec<serde_json::Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).expect("a JSON object per line"))
        .collect();
    assert!(lines.len() >= 3, "{text}");
    for w in lines.windows(2) {
        assert!(w[1]["time"].as_f64() > w[0]["time"].as_f64(), "{text}");
        assert!(
            w[1]["uptime_s"].as_f64() > w[0]["uptime_s"].as_f64(),
            "{text}"
        );
        assert!(
            w[1]["queries"].as_u64() >= w[0]["queries"].as_u64(),
            "{text}"
        );
    }
    assert_eq!(counters(&lines[lines.len() - 1]), counters(&v));
}

/// Split mode: a query to an address of no nameserver is refused and counted as such.
#[test]
fn split_mode_counts_queries_to_addresses_of_no_nameserver() {
    if !prerequisite::tools(&[("kdig", "knot-dnsutils")]) {
        return;
    }
    let dir = tempfile::tempdir().expect("scratch");
    example_zone(dir.path());
    std::fs::write(dir.path().join("manifest"), "127.0.0.1 example.zone\n").expect("manifest");
    let port = ldplayer_testbed::free_port();
    let (one, three) = (format!("127.0.0.1:{port}"), format!("127.0.0.3:{port}"));
    let server = Serve::start(&[
        "--manifest",
        &s(&dir.path().join("manifest")),
        "--listen",
        &one,
        "--listen",
        &three,
    ]);
    assert!(kdig(&one, &["www.example.", "A"]).contains("status: NOERROR"));
    assert!(kdig(&three, &["www.example.", "A"]).contains("status: REFUSED"));
    assert!(kdig(&three, &["www.example.", "A", "+tcp"]).contains("status: REFUSED"));
    let v: serde_json::Value = serde_json::from_str(&server.stop("INT")).expect("json");
    assert_eq!(v["refused_by_address"], 2, "{v}");
    assert_eq!(v["rcodes"]["REFUSED"], 2, "{v}");
    assert_eq!(v["rcodes"]["NOERROR"], 1, "{v}");
}

/// Defaults that meet agree: serve keeps idle TCP connections as long as replay does, says so
/// at start, and both commands document the same default.
#[test]
fn serve_and_replay_idle_timeouts_agree() {
    let replay = ldplayer_replay::ReplayConfig::new("127.0.0.1:53".parse().expect("addr"));
    let serve_default = ldplayer_server::ServerConfig::default().tcp_idle_timeout;
    assert_eq!(serve_default, replay.tcp_idle_timeout);
    let default_of = |command: &str, flag: &str| -> String {
        let help = String::from_utf8(ldplayer(&[command, "--help"]).stdout).expect("utf-8");
        let at = help
            .find(flag)
            .unwrap_or_else(|| panic!("{flag} in {help}"));
        let rest = &help[at..];
        let d = rest.find("[default: ").expect("a default") + "[default: ".len();
        rest[d..rest[d..].find(']').expect("]") + d].to_string()
    };
    let serve_flag = default_of("serve", "--idle-timeout");
    assert_eq!(serve_flag, default_of("replay", "--idle-timeout"));
    assert_eq!(serve_flag, serve_default.as_secs().to_string());
    let dir = tempfile::tempdir().expect("scratch");
    let (server, _) = serve(&[&example_zone(dir.path())]);
    assert!(
        server
            .stderr()
            .contains(&format!("TCP idle timeout {serve_flag} s")),
        "{}",
        server.stderr()
    );
}

/// `serve --tls-listen` with `--tls-self-signed`: kdig, trusting the CA serve made, gets the
/// root's SOA over TLS (and over UDP on the plain address, unchanged); a client that sends
/// junk to the TLS port is closed and counted and the next kdig is still served; a connection
/// that stays silent is closed after the idle timeout; the JSON report has the TLS counters.
#[test]
fn serves_dns_over_tls_with_a_self_signed_certificate() {
    if !prerequisite::tools(&[("kdig", "knot-dnsutils")]) {
        return;
    }
    let Some(root) = prerequisite::shared_file("zones/root-2018-03-12.zone") else {
        return;
    };
    let dir = tempfile::tempdir().expect("scratch");
    let tls_dir = dir.path().join("tls");
    let tls_addr = format!("127.0.0.1:{}", ldplayer_testbed::free_port());
    let (server, addr) = serve(&[
        "--tls-listen",
        &tls_addr,
        "--tls-self-signed",
        &s(&tls_dir),
        "--idle-timeout",
        "1",
        &s(&root),
    ]);
    assert!(
        server
            .stderr()
            .contains(&format!("DNS over TLS on {tls_addr}")),
        "{}",
        server.stderr()
    );
    let ca = format!("+tls-ca={}", s(&tls_dir.join("ca.pem")));
    let soa = "a.root-servers.net. nstld.verisign-grs.com. 2018031200 1800 900 604800 86400";
    let out = kdig(&tls_addr, &["+tls", &ca, ".", "SOA", "+norec"]);
    assert!(out.contains(";; TLS session (TLS1.3)"), "{out}");
    assert!(
        out.contains("status: NOERROR") && out.contains(soa),
        "{out}"
    );
    let out = kdig(&addr, &[".", "SOA", "+norec"]);
    assert!(out.contains(soa), "UDP as before: {out}");

    // Junk in place of a ClientHello: closed (after an alert at most).
    let mut junk = TcpStream::connect(&tls_addr).expect("connect");
    junk.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    junk.write_all(b"\x00\x1d not a TLS record, just noise ......")
        .unwrap();
    let mut rest = Vec::new();
    let _ = junk.read_to_end(&mut rest);
    assert!(rest.len() <= 7, "at most an alert: {rest:?}");
    let out = kdig(&tls_addr, &["+tls", &ca, "com.", "NS", "+norec"]);
    assert!(
        out.contains("status: NOERROR"),
        "served after the junk: {out}"
    );

    // A silent connection is closed after the 1 s idle timeout.
    let mut silent = TcpStream::connect(&tls_addr).expect("connect");
    silent
        .set_read_timeout(Some(Duration::from_secs(5)))
        .unwrap();
    let started = Instant::now();
    let mut buf = [0u8; 16];
    let n = silent.read(&mut buf).unwrap_or(0);
    let waited = started.elapsed();
    assert_eq!(n, 0, "closed without a word");
    assert!(
        waited >= Duration::from_millis(800) && waited < Duration::from_secs(3),
        "closed after {waited:?}"
    );

    let v: serde_json::Value = serde_json::from_str(&server.stop("INT")).expect("json");
    assert_eq!(v["tls_queries"], 2, "{v}");
    assert_eq!(v["tls_responses"], 2, "{v}");
    assert_eq!(v["tls_handshakes"], 2, "{v}");
    assert_eq!(v["tls_errors"], 1, "{v}");
    assert_eq!(v["tls_accepted"], 4, "{v}");
    assert_eq!(v["udp_queries"], 1, "{v}");
    assert_eq!(v["queries"], 3, "{v}");
    assert_eq!(v["tcp_idle_closed"], 1, "{v}");
}

/// --tls-listen without a certificate, and a certificate without --tls-listen, are refused.
#[test]
fn tls_flags_are_checked() {
    let dir = tempfile::tempdir().expect("scratch");
    let zone = example_zone(dir.path());
    let out = binary::ldplayer_fails(&[
        "serve",
        "--listen",
        "127.0.0.1:0",
        "--tls-listen",
        "127.0.0.1:0",
        &zone,
    ]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("--tls-listen needs a certificate"), "{err}");
    let out = binary::ldplayer_fails(&[
        "serve",
        "--listen",
        "127.0.0.1:0",
        "--tls-self-signed",
        &s(dir.path()),
        &zone,
    ]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("need --tls-listen"), "{err}");
    let out = binary::ldplayer_fails(&[
        "serve",
        "--tls-listen",
        "127.0.0.1:0",
        "--tls-cert",
        &zone,
        "--tls-key",
        &zone,
        &zone,
    ]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("TLS"), "{err}");
}

/// The status and the answer section of one kdig output, for comparing transports.
fn status_and_answer(out: &str) -> (String, Vec<String>) {
    let status = out
        .lines()
        .filter(|l| l.starts_with(";; ->>HEADER<<-"))
        .find_map(|l| l.split("status: ").nth(1))
        .map(|s| s.split(';').next().unwrap_or(s).trim().to_string())
        .unwrap_or_default();
    let answer = out
        .lines()
        .skip_while(|l| !l.starts_with(";; ANSWER SECTION:"))
        .skip(1)
        .take_while(|l| !l.trim().is_empty())
        .map(|l| l.split_whitespace().collect::<Vec<_>>().join(" "))
        .collect();
    (status, answer)
}

/// `serve --https-listen` in split mode with `--tls-self-signed` and `--doh-path`: kdig over
/// DNS over HTTPS, POST (`+https`) and GET (`+https-get`), trusting the CA serve made, checked
/// by address or by name, gets from each nameserver address the status and answer section it
/// gets over UDP, and so does dnspython (httpx and h2) as a second client; another path is
/// answered 404; the JSON report counts it all.
#[test]
fn serves_dns_over_https_to_kdig_as_over_udp() {
    if !prerequisite::tools(&[("kdig", "knot-dnsutils")]) {
        return;
    }
    let dir = tempfile::tempdir().expect("scratch");
    example_zone(dir.path());
    std::fs::write(
        dir.path().join("other.zone"),
        "$ORIGIN other.\n$TTL 60\n@ SOA ns admin 1 60 60 60 60\n@ NS ns\nns A 127.0.0.2\n\
         www A 198.51.100.7\n",
    )
    .expect("zone");
    std::fs::write(
        dir.path().join("manifest"),
        "127.0.0.1 example.zone\n127.0.0.2 other.zone\n",
    )
    .expect("manifest");
    let tls_dir = dir.path().join("tls");
    let (port, https) = (ldplayer_testbed::free_port(), ldplayer_testbed::free_port());
    let at = |ip: &str, port: u16| format!("{ip}:{port}");
    let server = Serve::start(&[
        "--manifest",
        &s(&dir.path().join("manifest")),
        "--listen",
        &at("127.0.0.1", port),
        "--listen",
        &at("127.0.0.2", port),
        "--https-listen",
        &at("127.0.0.1", https),
        "--https-listen",
        &at("127.0.0.2", https),
        "--doh-path",
        "/resolve",
        "--tls-self-signed",
        &s(&tls_dir),
    ]);
    assert!(
        server.stderr().contains(&format!(
            "DNS over HTTPS on https://127.0.0.1:{https} 127.0.0.2:{https}/resolve"
        )),
        "{}",
        server.stderr()
    );
    let ca = format!("+tls-ca={}", s(&tls_dir.join("ca.pem")));
    let mut asked = 0;
    for (ip, mine, theirs) in [
        ("127.0.0.1", "www.example.", "www.other."),
        ("127.0.0.2", "www.other.", "www.example."),
    ] {
        for (name, status) in [
            (mine, "NOERROR"),
            ("nope.example.", ""),
            (theirs, "REFUSED"),
        ] {
            let udp = status_and_answer(&kdig(&at(ip, port), &[name, "A"]));
            if !status.is_empty() {
                assert_eq!(udp.0, status, "{name} at {ip} over UDP");
            }
            for how in [
                vec!["+https=/resolve", &ca],
                vec![
                    "+https=/resolve",
                    "+https-get",
                    &ca,
                    "+tls-hostname=localhost",
                ],
            ] {
                let mut args = how.clone();
                args.extend([name, "A"]);
                let out = kdig(&at(ip, https), &args);
                assert!(out.contains("(status: 200)"), "{args:?}: {out}");
                assert_eq!(
                    status_and_answer(&out),
                    udp,
                    "{name} at {ip}, {how:?}: {out}"
                );
                asked += 1;
            }
        }
    }
    assert_eq!(
        status_and_answer(&kdig(&at("127.0.0.1", port), &["www.example.", "A"])).1,
        ["www.example. 60 IN A 192.0.2.1"],
        "the answer section is read"
    );
    // A second client: dnspython over httpx and h2 (POST), the same status and answer as UDP.
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/scripts/dnspython_query.py");
    let ca_file = s(&tls_dir.join("ca.pem"));
    for (ip, name, status) in [
        ("127.0.0.1", "www.example.", "NOERROR"),
        ("127.0.0.2", "www.other.", "NOERROR"),
        ("127.0.0.1", "www.other.", "REFUSED"),
    ] {
        let ask = |mode: &str, port: u16| {
            let out = std::process::Command::new("python3")
                .arg(&script)
                .args([mode, ip, &port.to_string(), &ca_file, name, "A", "/resolve"])
                .output()
                .expect("python3 runs");
            assert!(
                out.status.success(),
                "dnspython {mode} {name} at {ip}: {}",
                String::from_utf8_lossy(&out.stderr)
            );
            String::from_utf8_lossy(&out.stdout).into_owned()
        };
        let over_https = ask("https", https);
        assert!(
            over_https.starts_with(status),
            "{name} at {ip}: {over_https}"
        );
        assert_eq!(over_https, ask("udp", port), "{name} at {ip}");
        asked += 1;
    }
    let out = kdig(
        &at("127.0.0.1", https),
        &["+https", &ca, "www.example.", "A"],
    );
    assert!(
        out.contains("(status: 404)"),
        "the default path is not served: {out}"
    );

    let v: serde_json::Value = serde_json::from_str(&server.stop("INT")).expect("json");
    assert_eq!(v["doh_queries"], asked, "{v}");
    assert_eq!(v["doh_responses"], asked, "{v}");
    assert_eq!(v["doh_errors"]["not_found"], 1, "{v}");
    assert_eq!(v["doh_errors"]["tls"], 0, "{v}");
    assert_eq!(v["doh_handshakes"], asked + 1, "{v}");
    assert_eq!(v["udp_queries"], 7 + 3, "{v}");
    assert_eq!(v["queries"], asked + 7 + 3, "{v}");
}

/// --https-listen needs a certificate, and its path must be a path.
#[test]
fn https_flags_are_checked() {
    let dir = tempfile::tempdir().expect("scratch");
    let zone = example_zone(dir.path());
    let out = binary::ldplayer_fails(&["serve", "--https-listen", "127.0.0.1:0", &zone]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("--https-listen needs a certificate"), "{err}");
    let tls = s(&dir.path().join("tls"));
    let out = binary::ldplayer_fails(&[
        "serve",
        "--https-listen",
        "127.0.0.1:0",
        "--tls-self-signed",
        &tls,
        "--doh-path",
        "dns-query",
        &zone,
    ]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("--doh-path must start with /"), "{err}");
}

/// The Python with dnspython and aioquic (PyPI) for the DNS over QUIC witness; false only when
/// skipping is allowed.
fn doq_python() -> bool {
    let works = std::process::Command::new("python3")
        .args(["-c", "import dns.query, aioquic; dns.query.quic"])
        .output()
        .is_ok_and(|o| o.status.success());
    prerequisite::require(
        works,
        "python3 with dnspython and aioquic (the DNS over QUIC witness)",
        "python3 -m pip install dnspython==2.7.0 aioquic==1.2.0 (scripts/test.sh does)",
    )
}

/// dnspython's DNS over QUIC client (aioquic, an independent QUIC stack), trusting the CA serve
/// made, gets from each nameserver address the response code and answer section dnspython gets
/// over UDP; the JSON report counts the QUIC connections and queries.
#[test]
fn serves_dns_over_quic_to_dnspython_as_over_udp() {
    if !doq_python() {
        return;
    }
    let dir = tempfile::tempdir().expect("scratch");
    example_zone(dir.path());
    std::fs::write(
        dir.path().join("other.zone"),
        "$ORIGIN other.\n$TTL 60\n@ SOA ns admin 1 60 60 60 60\n@ NS ns\nns A 127.0.0.2\n\
         www A 198.51.100.7\n",
    )
    .expect("zone");
    std::fs::write(
        dir.path().join("manifest"),
        "127.0.0.1 example.zone\n127.0.0.2 other.zone\n",
    )
    .expect("manifest");
    let tls_dir = dir.path().join("tls");
    let (port, quic) = (ldplayer_testbed::free_port(), ldplayer_testbed::free_port());
    let at = |ip: &str, port: u16| format!("{ip}:{port}");
    let server = Serve::start(&[
        "--manifest",
        &s(&dir.path().join("manifest")),
        "--listen",
        &at("127.0.0.1", port),
        "--listen",
        &at("127.0.0.2", port),
        "--quic-listen",
        &at("127.0.0.1", quic),
        "--quic-listen",
        &at("127.0.0.2", quic),
        "--tls-self-signed",
        &s(&tls_dir),
    ]);
    assert!(
        server.stderr().contains(&format!(
            "DNS over QUIC on 127.0.0.1:{quic} 127.0.0.2:{quic}"
        )),
        "{}",
        server.stderr()
    );
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/scripts/dnspython_query.py");
    let ca = s(&tls_dir.join("ca.pem"));
    let ask = |mode: &str, ip: &str, port: u16, name: &str| -> String {
        let out = std::process::Command::new("python3")
            .arg(&script)
            .args([mode, ip, &port.to_string(), &ca, name, "A"])
            .output()
            .expect("python3 runs");
        assert!(
            out.status.success(),
            "{mode} {name} at {ip}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    let mut asked = 0;
    for (ip, mine, theirs) in [
        ("127.0.0.1", "www.example.", "www.other."),
        ("127.0.0.2", "www.other.", "www.example."),
    ] {
        for (name, status) in [
            (mine, "NOERROR"),
            ("nope.example.", ""),
            (theirs, "REFUSED"),
        ] {
            let udp = ask("udp", ip, port, name);
            if !status.is_empty() {
                assert!(udp.starts_with(status), "{name} at {ip} over UDP: {udp}");
            }
            assert_eq!(ask("quic", ip, quic, name), udp, "{name} at {ip}");
            asked += 1;
        }
    }
    assert_eq!(
        ask("quic", "127.0.0.1", quic, "www.example."),
        "NOERROR\nwww.example. 60 IN A 192.0.2.1\n",
        "the answer section is read"
    );
    asked += 1;
    let v: serde_json::Value = serde_json::from_str(&server.stop("INT")).expect("json");
    assert_eq!(v["doq_queries"], asked, "{v}");
    assert_eq!(v["doq_responses"], asked, "{v}");
    assert_eq!(
        v["doq_handshakes"], asked,
        "one connection per dnspython query: {v}"
    );
    assert_eq!(v["doq_errors"]["nonzero_id"], 0, "{v}");
    assert_eq!(v["queries"], 2 * asked - 1, "{v}");
}
