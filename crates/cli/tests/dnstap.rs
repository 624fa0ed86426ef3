//! dnstap against real emitters and readers: `convert --to dnstap` read by the dnstap tools
//! (golang `dnstap`, `dnstap-ldns`, BIND's `dnstap-read`) with the same messages; unbound's
//! dnstap, written to a file by `fstrm_capture` and collected by `ldplayer dnstap listen`,
//! agreeing message for message with tcpdump's capture of the same queries; and the
//! collector's damage (a writer gone mid-frame, another content type) counted by reason.

mod binary;

use binary::{ldplayer, s};
use ldplayer_dnstap::fstrm::FrameReader;
use ldplayer_testbed::{
    free_port,
    prerequisite::{shared_file, tools},
    witness::Tcpdump,
};
use std::collections::BTreeMap;
use std::io::{BufRead, Write};
use std::os::unix::net::UnixStream;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// One message as both sides can tell it: QR, ID, question name (lower case, with its final
/// dot), transport, source and destination `ip:port`.
type Key = (bool, u16, String, String, String, String);

/// The messages of a trace as `ldplayer convert --to text` reads them, with their times (s).
fn text_messages(trace: &Path, extra: &[&str]) -> Vec<(Key, f64)> {
    let mut args = vec![
        "convert",
        trace.to_str().expect("utf-8"),
        "-o",
        "-",
        "--to",
        "text",
        "-q",
    ];
    args.extend_from_slice(extra);
    let out = ldplayer(&args);
    let text = String::from_utf8(out.stdout).expect("utf-8");
    let mut lines = text.lines().skip(1);
    let header: Vec<&str> = lines.next().expect("header").split('\t').collect();
    let col = |name: &str| header.iter().position(|h| *h == name).expect(name);
    let (time, src, sport, dst, dport, proto, id, qr, qname) = (
        col("time"),
        col("src"),
        col("sport"),
        col("dst"),
        col("dport"),
        col("proto"),
        col("id"),
        col("qr"),
        col("qname"),
    );
    lines
        .map(|l| {
            let f: Vec<&str> = l.split('\t').collect();
            let addr = |a: usize, p: usize| {
                let ip = f[a].trim_start_matches("::ffff:");
                if ip.contains(':') {
                    format!("[{ip}]:{}", f[p])
                } else {
                    format!("{ip}:{}", f[p])
                }
            };
            (
                (
                    f[qr] == "1",
                    f[id].parse().expect("id"),
                    f[qname].to_lowercase(),
                    f[proto].to_string(),
                    addr(src, sport),
                    addr(dst, dport),
                ),
                f[time].parse().expect("time"),
            )
        })
        .collect()
}

fn multiset(keys: impl IntoIterator<Item = Key>) -> BTreeMap<Key, usize> {
    let mut m = BTreeMap::new();
    for k in keys {
        *m.entry(k).or_insert(0) += 1;
    }
    m
}

/// The messages of a dnstap file as the golang `dnstap` tool reads them (`-j`).
fn golang_dnstap_messages(file: &Path) -> Vec<(Key, f64)> {
    let out = Command::new("dnstap")
        .arg("-r")
        .arg(file)
        .arg("-j")
        .output()
        .expect("dnstap runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout)
        .expect("utf-8")
        .lines()
        .map(|line| {
            let v: serde_json::Value = serde_json::from_str(line).expect("JSON");
            let m = &v["message"];
            let kind = m["type"].as_str().expect("type");
            let response = kind.ends_with("RESPONSE");
            let text = m[if response {
                "response_message"
            } else {
                "query_message"
            }]
            .as_str()
            .expect("message");
            let id = text
                .split("id: ")
                .nth(1)
                .and_then(|t| t.split(|c: char| !c.is_ascii_digit()).next())
                .and_then(|t| t.parse().ok())
                .expect("id");
            let qname = text
                .split(";; QUESTION SECTION:\n;")
                .nth(1)
                .and_then(|t| t.split('\t').next())
                .expect("question")
                .to_lowercase();
            let proto = match m["socket_protocol"].as_str().expect("protocol") {
                "UDP" => "udp",
                "TCP" => "tcp",
                "DOT" => "tls",
                "DOH" => "https",
                "DOQ" => "quic",
                other => panic!("{other}"),
            };
            let addr = |a: &str, p: &str| {
                let ip = m[a]
                    .as_str()
                    .expect("address")
                    .trim_start_matches("::ffff:");
                let port = m[p].as_u64().expect("port");
                if ip.contains(':') {
                    format!("[{ip}]:{port}")
                } else {
                    format!("{ip}:{port}")
                }
            };
            let (q, r) = (
                addr("query_address", "query_port"),
                addr("response_address", "response_port"),
            );
            let (src, dst) = if response { (r, q) } else { (q, r) };
            let time = m[if response {
                "response_time"
            } else {
                "query_time"
            }]
            .as_str()
            .expect("time");
            let t: jiff::Timestamp = time.parse().expect("RFC 3339 time");
            (
                (response, id, qname, proto.into(), src, dst),
                t.as_nanosecond() as f64 / 1e9,
            )
        })
        .collect()
}

/// Lines a tool prints about a file.
fn lines_of(cmd: &str, args: &[&str], file: &Path) -> usize {
    let out = Command::new(cmd)
        .args(args)
        .arg(file)
        .output()
        .expect("runs");
    assert!(
        out.status.success(),
        "{cmd}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).lines().count()
}

#[test]
fn convert_to_dnstap_is_read_by_dnstaps_own_tools_with_the_same_messages() {
    if !tools(&[
        ("dnstap", "golang-github-dnstap-golang-dnstap-cli"),
        ("dnstap-ldns", "dnstap-ldns"),
        ("dnstap-read", "bind9-dnsutils"),
    ]) {
        return;
    }
    let dir = tempfile::tempdir().expect("scratch");
    // UDP over IPv4, IPv6, and TCP.
    for capture in [
        "dnscap_dns.pcap",
        "dnscap_dns6.pcap",
        "dnscap_dnso1tcp.pcap",
    ] {
        let Some(pcap) = shared_file(&format!("pcap/{capture}")) else {
            return;
        };
        let tap = dir.path().join(format!("{capture}.dnstap"));
        ldplayer(&["convert", &s(&pcap), "-o", &s(&tap), "-q"]);
        let ours = text_messages(&pcap, &[]);
        assert!(!ours.is_empty(), "{capture}");
        let theirs = golang_dnstap_messages(&tap);
        assert_eq!(theirs.len(), ours.len(), "{capture}");
        for ((a, ta), (b, tb)) in ours.iter().zip(&theirs) {
            assert_eq!(a, b, "{capture}");
            // The golang tool prints microseconds.
            assert!((ta - tb).abs() < 2e-6, "{capture}: {ta} against {tb}");
        }
        // And the two C readers read every message.
        assert_eq!(
            lines_of("dnstap-ldns", &["-q", "-r"], &tap),
            ours.len(),
            "{capture}"
        );
        assert_eq!(lines_of("dnstap-read", &[], &tap), ours.len(), "{capture}");
        // Read back by ldplayer itself, the same messages again.
        let back = text_messages(&tap, &[]);
        assert_eq!(
            back.iter().map(|(k, _)| k.clone()).collect::<Vec<_>>(),
            ours.iter().map(|(k, _)| k.clone()).collect::<Vec<_>>()
        );
    }
}

/// An unbound answering `*.example.` from local data on 127.0.0.1:`port`, logging its client
/// side as dnstap to the Unix socket `socket`.
struct Unbound {
    child: Child,
}

impl Unbound {
    fn start(dir: &Path, port: u16, socket: &Path) -> Unbound {
        let conf = dir.join("unbound.conf");
        let mut text = format!(
            "server:\n  interface: 127.0.0.1\n  port: {port}\n  username: \"\"\n  chroot: \"\"\n  \
             directory: \"{d}\"\n  pidfile: \"\"\n  use-syslog: no\n  logfile: \"{d}/unbound.log\"\n  \
             num-threads: 1\n  access-control: 127.0.0.0/8 allow\n  local-zone: \"example.\" static\n",
            d = dir.display()
        );
        for i in 0..20 {
            text.push_str(&format!(
                "  local-data: \"n{i}.example. 300 IN A 192.0.2.{i}\"\n"
            ));
        }
        text.push_str(&format!(
            "remote-control:\n  control-enable: no\ndnstap:\n  dnstap-enable: yes\n  \
             dnstap-socket-path: \"{}\"\n  dnstap-bidirectional: yes\n  dnstap-send-identity: yes\n  \
             dnstap-identity: \"lab-unbound\"\n  dnstap-log-client-query-messages: yes\n  \
             dnstap-log-client-response-messages: yes\n",
            socket.display()
        ));
        std::fs::write(&conf, text).expect("config");
        let child = Command::new("unbound")
            .arg("-d")
            .arg("-c")
            .arg(&conf)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("unbound runs");
        let start = Instant::now();
        while Command::new("kdig")
            .args([
                "@127.0.0.1",
                "-p",
                &port.to_string(),
                "+retry=0",
                "+timeout=1",
            ])
            .arg("n0.example.")
            .output()
            .map(|o| !String::from_utf8_lossy(&o.stdout).contains("NOERROR"))
            .unwrap_or(true)
        {
            assert!(
                start.elapsed() < Duration::from_secs(20),
                "unbound did not start"
            );
            std::thread::sleep(Duration::from_millis(100));
        }
        Unbound { child }
    }

    /// Stops it once its dnstap has gone out: Unbound sends what it logged about once a second
    /// and drops what is still queued when it stops.
    fn stop(mut self) {
        std::thread::sleep(Duration::from_secs(3));
        let _ = Command::new("kill")
            .args(["-TERM", &self.child.id().to_string()])
            .status();
        let _ = self.child.wait();
    }
}

impl Drop for Unbound {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// 20 queries over UDP and 20 over TCP, with kdig.
fn send_queries(port: u16) {
    for tcp in [false, true] {
        for i in 0..20 {
            let mut cmd = Command::new("kdig");
            cmd.args(["@127.0.0.1", "-p", &port.to_string(), "+retry=1"]);
            if tcp {
                cmd.arg("+tcp");
            }
            let out = cmd
                .arg(format!("n{i}.example."))
                .output()
                .expect("kdig runs");
            assert!(String::from_utf8_lossy(&out.stdout).contains("NOERROR"));
        }
    }
}

/// Now, in Unix seconds.
fn now() -> f64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .expect("after 1970")
        .as_secs_f64()
}

/// Compares the records of `tap` (read from dnstap) from `since` on (the queries that waited
/// for unbound to start came before) to those of `pcap` (tcpdump's capture, started at
/// `since`, of the same traffic on port `port`): the same 80 messages, times within 50 ms.
fn agree_with_capture(tap: &Path, pcap: &Path, port: u16, since: f64) {
    let captured = text_messages(pcap, &["--dns-port", &port.to_string()]);
    let logged: Vec<_> = text_messages(tap, &[])
        .into_iter()
        .filter(|(_, t)| *t >= since)
        .collect();
    assert_eq!(
        captured.len(),
        80,
        "tcpdump saw 40 queries and 40 responses"
    );
    assert_eq!(
        multiset(logged.iter().map(|(k, _)| k.clone())),
        multiset(captured.iter().map(|(k, _)| k.clone())),
        "dnstap and tcpdump disagree"
    );
    let times: BTreeMap<&Key, f64> = captured.iter().map(|(k, t)| (k, *t)).collect();
    for (k, t) in &logged {
        let c = times[k];
        assert!((t - c).abs() < 0.05, "{k:?}: dnstap {t}, tcpdump {c}");
    }
    // Both transports are there.
    assert_eq!(logged.iter().filter(|(k, _)| k.3 == "tcp").count(), 40);
}

fn dnstap_tools_present() -> bool {
    tools(&[
        ("unbound", "unbound"),
        ("kdig", "knot-dnsutils"),
        ("tcpdump", "tcpdump"),
        ("fstrm_capture", "fstrm-bin"),
    ])
}

#[test]
fn unbounds_dnstap_file_from_fstrm_capture_agrees_with_tcpdump() {
    if !dnstap_tools_present() {
        return;
    }
    let dir = tempfile::tempdir().expect("scratch");
    let socket = dir.path().join("dnstap.sock");
    let file = dir.path().join("unbound.fstrm");
    let mut capture = Command::new("fstrm_capture")
        .args(["-t", "protobuf:dnstap.Dnstap", "-u"])
        .arg(&socket)
        .arg("-w")
        .arg(&file)
        .stderr(Stdio::null())
        .spawn()
        .expect("fstrm_capture runs");
    let start = Instant::now();
    while !socket.exists() {
        assert!(start.elapsed() < Duration::from_secs(10), "no socket");
        std::thread::sleep(Duration::from_millis(20));
    }
    let port = free_port();
    let pcap = dir.path().join("lo.pcap");
    let unbound = Unbound::start(dir.path(), port, &socket);
    let tcpdump = Tcpdump::start(&pcap, &["port", &port.to_string()]);
    let since = now();
    send_queries(port);
    unbound.stop();
    tcpdump.stop();
    let _ = Command::new("kill")
        .args(["-INT", &capture.id().to_string()])
        .status();
    let _ = capture.wait();
    agree_with_capture(&file, &pcap, port, since);
    // inspect counts the log by type and identity.
    let out = ldplayer(&["inspect", &s(&file), "--json"]);
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON");
    let warmup = v["dnstap"]["types"]["CLIENT_QUERY"]
        .as_u64()
        .expect("count")
        - 40;
    assert_eq!(
        v["dnstap"]["types"]["CLIENT_RESPONSE"].as_u64(),
        Some(40 + warmup)
    );
    assert_eq!(
        v["dnstap"]["identities"]["lab-unbound"].as_u64(),
        Some(80 + 2 * warmup)
    );
}

/// A running `ldplayer dnstap listen ... --json`, stopped with SIGINT (killed if the test
/// fails first).
struct Listen {
    child: Option<Child>,
}

impl Drop for Listen {
    fn drop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

impl Listen {
    fn start(args: &[&str]) -> Listen {
        let mut child = Command::new(env!("CARGO_BIN_EXE_ldplayer"))
            .args(["dnstap", "listen"])
            .args(args)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("ldplayer runs");
        let mut err = std::io::BufReader::new(child.stderr.take().expect("stderr"));
        let mut line = String::new();
        err.read_line(&mut line).expect("read");
        assert!(line.contains("listening on"), "{line}");
        child.stderr = Some(err.into_inner());
        Listen { child: Some(child) }
    }

    /// SIGINT, then its JSON summary and standard error.
    fn stop(mut self) -> (serde_json::Value, String) {
        let child = self.child.take().expect("running");
        let _ = Command::new("kill")
            .args(["-INT", &child.id().to_string()])
            .status();
        let out = child.wait_with_output().expect("exits");
        let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
        assert!(out.status.success(), "{stderr}");
        (
            serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}: {stderr}")),
            stderr,
        )
    }
}

#[test]
fn the_collector_takes_unbounds_dnstap_and_agrees_with_tcpdump() {
    if !dnstap_tools_present() {
        return;
    }
    let dir = tempfile::tempdir().expect("scratch");
    let socket = dir.path().join("dnstap.sock");
    let trace = dir.path().join("unbound.bin");
    let listen = Listen::start(&["--unix", &s(&socket), "-o", &s(&trace), "--json"]);
    let port = free_port();
    let pcap = dir.path().join("lo.pcap");
    let unbound = Unbound::start(dir.path(), port, &socket);
    let tcpdump = Tcpdump::start(&pcap, &["port", &port.to_string()]);
    let since = now();
    send_queries(port);
    unbound.stop();
    tcpdump.stop();
    let (summary, stderr) = listen.stop();
    assert!(stderr.contains("connection 1"), "{stderr}");
    assert_eq!(summary["connections"].as_u64(), Some(1));
    assert_eq!(summary["frames"], summary["written"], "{summary}");
    agree_with_capture(&trace, &pcap, port, since);
}

/// A connection to the collector at `socket`, and a frame reader of its answers.
fn socket_writer(socket: &Path) -> (UnixStream, FrameReader<UnixStream>) {
    let s = UnixStream::connect(socket).expect("connect");
    let reader = FrameReader::new(s.try_clone().expect("clone"));
    (s, reader)
}

#[test]
fn a_writer_gone_mid_frame_and_another_content_type_are_counted_and_the_rest_kept() {
    use ldplayer_dnstap::fstrm::{handshake, DNSTAP_CONTENT_TYPE};
    let Some(pcap) = shared_file("pcap/dnscap_dns.pcap") else {
        return;
    };
    let dir = tempfile::tempdir().expect("scratch");
    // Real messages: a capture converted to dnstap, its frames sent by hand.
    let tap = dir.path().join("dns.dnstap");
    ldplayer(&["convert", &s(&pcap), "-o", &s(&tap), "-q"]);
    let bytes = std::fs::read(&tap).expect("read");
    let mut frames = Vec::new();
    let mut r = FrameReader::new(&bytes[..]);
    while let Ok(Some(f)) = r.next_frame() {
        if let ldplayer_dnstap::fstrm::Frame::Data(d) = f {
            frames.push(d);
        }
    }
    let socket = dir.path().join("c.sock");
    let out = dir.path().join("out.txt");
    let listen = Listen::start(&["--unix", &s(&socket), "-o", &s(&out), "--json"]);
    // One writer sends 10 frames and half of the 11th, and goes away.
    let (mut w, mut reader) = socket_writer(&socket);
    handshake::connect(&mut reader, &mut w, DNSTAP_CONTENT_TYPE).expect("handshake");
    for f in &frames[..10] {
        w.write_all(&(f.len() as u32).to_be_bytes()).expect("write");
        w.write_all(f).expect("write");
    }
    let f = &frames[10];
    w.write_all(&(f.len() as u32).to_be_bytes()).expect("write");
    w.write_all(&f[..f.len() / 2]).expect("write");
    drop((w, reader));
    // Another offers another content type.
    let (mut w, mut reader) = socket_writer(&socket);
    assert!(handshake::connect(&mut reader, &mut w, b"protobuf:other").is_err());
    // A third sends the rest properly.
    let (mut w, mut reader) = socket_writer(&socket);
    handshake::connect(&mut reader, &mut w, DNSTAP_CONTENT_TYPE).expect("handshake");
    for f in &frames[11..] {
        w.write_all(&(f.len() as u32).to_be_bytes()).expect("write");
        w.write_all(f).expect("write");
    }
    handshake::stop(&mut reader, &mut w).expect("FINISH");
    std::thread::sleep(Duration::from_millis(300));
    let (summary, stderr) = listen.stop();
    assert_eq!(
        summary["frames"].as_u64(),
        Some(frames.len() as u64 - 1),
        "{summary}"
    );
    assert_eq!(summary["refused"].as_u64(), Some(1), "{summary}");
    assert_eq!(
        summary["skipped"],
        serde_json::json!([{"name": "dnstap-cut-frame", "count": 1}]),
        "{summary}"
    );
    assert!(stderr.contains("inside a frame"), "{stderr}");
    assert!(stderr.contains("protobuf:other"), "{stderr}");
    // What was kept is every message but the cut one, in the text format asked for.
    let kept = text_messages(&out, &[]);
    let all = text_messages(&tap, &[]);
    let mut want: Vec<Key> = all.iter().map(|(k, _)| k.clone()).collect();
    want.remove(10);
    assert_eq!(kept.into_iter().map(|(k, _)| k).collect::<Vec<_>>(), want);
}
