//! Malformed queries, as root servers receive them (a readable header, a body that does not
//! parse), in a capture built by dnspython and framed by hand: ldplayer keeps them with their
//! bytes, counts them by reason, shows what it can read of them (and `-` for the rest),
//! carries them byte for byte through text and binary, skips them with `--drop-malformed`, and
//! replays them byte for byte: tcpdump records what went on the wire. tshark, reading the same
//! capture, flags the same messages.

mod binary;

use binary::ldplayer;
use ldplayer_testbed::prerequisite::{self, DEBIAN_PYTHON};
use ldplayer_trace::binary::BinaryReader;
use ldplayer_trace::{Collect, Source};
use std::collections::BTreeMap;
use std::io::{BufRead, BufReader};
use std::net::UdpSocket;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

fn s(p: &Path) -> String {
    p.to_string_lossy().into_owned()
}

/// The IDs of the malformed queries the script writes (UDP, then the one over TCP).
const MALFORMED_IDS: [u16; 7] = [0x3001, 0x3002, 0x3003, 0x3004, 0x3005, 0x3006, 0x2002];
/// The one whose only fault is two OPT records (RFC 6891 §6.1.1), which tshark does not check.
const TWO_OPT_ID: u16 = 0x3006;

/// Writes the capture; returns its path and the malformed queries' reasons in capture order.
fn capture(dir: &Path) -> Option<(PathBuf, Vec<String>)> {
    if !prerequisite::debian_python(&["dns.message"], "python3-dnspython") {
        return None;
    }
    let pcap = dir.join("malformed.pcap");
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/scripts/malformed_queries.py");
    let out = Command::new(DEBIAN_PYTHON)
        .arg(&script)
        .arg(&pcap)
        .output()
        .expect("python runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let kinds: Vec<String> = serde_json::from_slice(&out.stdout).expect("the script's JSON");
    Some((pcap, kinds))
}

fn by_reason(kinds: &[String]) -> BTreeMap<String, u64> {
    let mut m = BTreeMap::new();
    for k in kinds {
        *m.entry(k.clone()).or_insert(0) += 1;
    }
    m
}

/// `[{"name": .., "count": ..}, ...]` as a map.
fn counts(v: &serde_json::Value) -> BTreeMap<String, u64> {
    v.as_array()
        .expect("a list")
        .iter()
        .map(|c| {
            (
                c["name"].as_str().expect("name").to_string(),
                c["count"].as_u64().expect("count"),
            )
        })
        .collect()
}

fn inspect(path: &Path, extra: &[&str]) -> serde_json::Value {
    let mut args = vec!["inspect", path.to_str().expect("UTF-8 path"), "--json"];
    args.extend_from_slice(extra);
    serde_json::from_slice(&ldplayer(&args).stdout).expect("JSON")
}

/// The data lines of a text trace, split into columns.
fn rows(text: &Path) -> Vec<Vec<String>> {
    std::fs::read_to_string(text)
        .expect("text trace")
        .lines()
        .skip(2)
        .map(|l| l.split('\t').map(str::to_string).collect())
        .collect()
}

#[test]
fn malformed_queries_are_kept_counted_shown_and_dropped_on_request() {
    let dir = tempfile::tempdir().expect("scratch");
    let Some((pcap, kinds)) = capture(dir.path()) else {
        return;
    };
    let text = dir.path().join("m.txt");
    let out = ldplayer(&["convert", &s(&pcap), "--to", "text", "-o", &s(&text)]);
    let summary = String::from_utf8_lossy(&out.stderr).to_string();
    assert!(summary.contains("21 messages (7 malformed: "), "{summary}");
    for (reason, n) in by_reason(&kinds) {
        assert!(summary.contains(&format!("{reason}={n}")), "{summary}");
    }
    assert!(summary.contains("skipped: dns-short-header=1"), "{summary}");

    // Counted by reason, and as queries by their header.
    let json = inspect(&text, &[]);
    assert_eq!(counts(&json["malformed"]), by_reason(&kinds));
    assert_eq!(
        (
            &json["messages"],
            &json["queries"],
            &json["responses"],
            &json["not_dns"]
        ),
        (&21.into(), &12.into(), &9.into(), &0.into())
    );
    assert_eq!(counts(&inspect(&pcap, &[])["malformed"]), by_reason(&kinds));

    // Shown with what reads of them, `-` for the rest.
    let rows = rows(&text);
    let row = |id: u16| {
        rows.iter()
            .find(|r| r[7] == id.to_string() && r[8] == "0")
            .unwrap_or_else(|| panic!("query {id:#x}"))
    };
    for (id, question) in [
        (0x3001, Some(("absurd.example.", "AAAA"))),
        (0x3002, None),
        (0x3003, None),
        (0x3004, None),
        (0x3005, None),
        (0x3006, Some(("twice.example.", "MX"))),
        (0x2002, Some(("tcp-absurd.example.", "A"))),
    ] {
        let r = row(id);
        assert_eq!(&r[9..12], ["QUERY", "NOERROR", "-"], "{r:?}");
        match question {
            Some((name, qtype)) => assert_eq!(&r[12..15], [name, "IN", qtype], "{r:?}"),
            None => assert_eq!(&r[12..15], ["-", "-", "-"], "{r:?}"),
        }
        assert_eq!(&r[15..19], ["-", "-", "-", "-"], "{r:?}");
        assert!(r[19].len() > 12, "the wire column keeps the bytes: {r:?}");
    }
    assert_eq!(row(0x1000)[15..18], ["0", "1232", "1"]);

    // Byte-identical through binary and back, from the capture or from the text.
    let bin = dir.path().join("m.bin");
    let again = dir.path().join("again.txt");
    ldplayer(&["convert", &s(&pcap), "--to", "binary", "-o", &s(&bin), "-q"]);
    ldplayer(&["convert", &s(&bin), "--to", "text", "-o", &s(&again), "-q"]);
    assert_eq!(
        std::fs::read(&text).unwrap(),
        std::fs::read(&again).unwrap()
    );
    let bin2 = dir.path().join("m2.bin");
    ldplayer(&[
        "convert",
        &s(&text),
        "--to",
        "binary",
        "-o",
        &s(&bin2),
        "-q",
    ]);
    assert_eq!(std::fs::read(&bin).unwrap(), std::fs::read(&bin2).unwrap());

    // --drop-malformed skips them, by reason, whatever the input format.
    let mut dropped = Vec::new();
    for input in [&pcap, &text, &bin] {
        let out_path = dir.path().join(format!("dropped-{}.txt", dropped.len()));
        let out = ldplayer(&[
            "convert",
            &s(input),
            "--to",
            "text",
            "-o",
            &s(&out_path),
            "--drop-malformed",
        ]);
        let summary = String::from_utf8_lossy(&out.stderr).to_string();
        assert!(summary.contains(": 14 messages from"), "{summary}");
        for (reason, n) in by_reason(&kinds) {
            assert!(summary.contains(&format!("{reason}={n}")), "{summary}");
        }
        let json = inspect(input, &["--drop-malformed"]);
        assert_eq!(counts(&json["malformed"]), BTreeMap::new());
        assert_eq!(json["messages"], 14);
        let skipped = counts(&json["skipped"]);
        for (reason, n) in by_reason(&kinds) {
            assert_eq!(skipped.get(&reason), Some(&n), "{skipped:?}");
        }
        dropped.push(std::fs::read(&out_path).unwrap());
    }
    assert!(dropped.windows(2).all(|w| w[0] == w[1]));

    // tshark, reading the same capture, flags the same queries (but for the OPT rule it does
    // not check).
    if prerequisite::tool("tshark", "tshark").is_none() {
        return;
    }
    let out = Command::new("tshark")
        .arg("-r")
        .arg(&pcap)
        .args(["-o", "tcp.desegment_tcp_streams:TRUE", "-Y", "dns"])
        .args(["-T", "fields", "-E", "separator=/t", "-E", "occurrence=f"])
        .args([
            "-e",
            "dns.id",
            "-e",
            "dns.flags.response",
            "-e",
            "dns.qry.name",
        ])
        .args(["-e", "_ws.malformed", "-e", "udp.length"])
        .env("LC_ALL", "C")
        .output()
        .expect("tshark runs");
    let mut flagged: Vec<u16> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| {
            let f: Vec<&str> = l.split('\t').collect();
            let unreadable = f[2].starts_with('<') && f[2] != "<Root>";
            let short = f[4] == "19"; // the 11-byte payload: not a message for ldplayer
            let id = u16::from_str_radix(f[0].trim_start_matches("0x"), 16).ok()?;
            (f[1] == "0" && (unreadable || !f[3].is_empty()) && !short).then_some(id)
        })
        .collect();
    flagged.push(TWO_OPT_ID);
    flagged.sort_unstable();
    let mut ours = MALFORMED_IDS.to_vec();
    ours.sort_unstable();
    assert_eq!(flagged, ours);
}

/// Answers every datagram with itself, QR set, until stopped (or for a minute at most).
fn echo_server() -> (u16, Arc<AtomicBool>, std::thread::JoinHandle<()>) {
    let socket = UdpSocket::bind("127.0.0.1:0").expect("bind");
    socket
        .set_read_timeout(Some(Duration::from_millis(50)))
        .expect("timeout");
    let port = socket.local_addr().expect("addr").port();
    let stop = Arc::new(AtomicBool::new(false));
    let flag = stop.clone();
    let handle = std::thread::spawn(move || {
        let started = Instant::now();
        let mut buf = [0u8; 65536];
        while !flag.load(Ordering::Relaxed) && started.elapsed() < Duration::from_secs(60) {
            if let Ok((n, from)) = socket.recv_from(&mut buf) {
                if n >= 3 {
                    buf[2] |= 0x80;
                }
                let _ = socket.send_to(&buf[..n], from);
            }
        }
    });
    (port, stop, handle)
}

#[test]
fn malformed_queries_are_replayed_byte_for_byte_as_tcpdump_sees_it() {
    let dir = tempfile::tempdir().expect("scratch");
    let Some((pcap, kinds)) = capture(dir.path()) else {
        return;
    };
    let root = ldplayer_system::process::is_root();
    if !prerequisite::require(
        root,
        "root, for tcpdump to capture on lo",
        "run the tests as root",
    ) || prerequisite::tool("tcpdump", "tcpdump").is_none()
        || prerequisite::tool("tshark", "tshark").is_none()
    {
        return;
    }
    let trace = dir.path().join("trace.bin");
    ldplayer(&[
        "convert",
        &s(&pcap),
        "--to",
        "binary",
        "-o",
        &s(&trace),
        "-q",
    ]);
    // The queries of the trace, as they are in it.
    let mut records = Collect::default();
    BinaryReader::new(BufReader::new(std::fs::File::open(&trace).expect("trace")))
        .expect("a binary trace")
        .run(&mut records)
        .expect("reads");
    let mut want: Vec<String> = records
        .records
        .iter()
        .filter(|r| r.wire[2] & 0x80 == 0)
        .map(|r| hex(&r.wire))
        .collect();
    assert_eq!(want.len(), 12);

    let (port, stop, server) = echo_server();
    let wire = dir.path().join("wire.pcap");
    let mut tcpdump = Command::new("tcpdump")
        // Immediate mode: without it the last, partly filled capture block is lost on SIGINT.
        .args(["-i", "lo", "-n", "-U", "--immediate-mode", "-w"])
        .arg(&wire)
        .args(["udp", "and", "dst", "port", &port.to_string()])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("tcpdump runs");
    let mut err = BufReader::new(tcpdump.stderr.take().expect("stderr"));
    let mut line = String::new();
    let _ = err.read_line(&mut line);
    assert!(line.contains("listening"), "tcpdump: {line}");
    std::thread::sleep(Duration::from_millis(200));
    let out = ldplayer(&[
        "replay",
        &s(&trace),
        "--server",
        &format!("127.0.0.1:{port}"),
        "--proto",
        "udp",
        "--rate",
        "200",
        "--timeout",
        "1",
        "--json",
    ]);
    std::thread::sleep(Duration::from_millis(300));
    let _ = Command::new("kill")
        .args(["-INT", &tcpdump.id().to_string()])
        .status();
    let _ = tcpdump.wait();
    stop.store(true, Ordering::Relaxed);
    let _ = server.join();

    let summary: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON");
    assert_eq!(summary["sent"], 12, "{summary}");
    let trace_malformed: BTreeMap<String, u64> =
        serde_json::from_value(summary["replay"]["trace_malformed"].clone()).expect("counts");
    assert_eq!(trace_malformed, by_reason(&kinds));

    // What went on the wire, as tshark reads tcpdump's capture: every query, byte for byte.
    let seen = Command::new("tshark")
        .arg("-r")
        .arg(&wire)
        .args(["-T", "fields", "-e", "udp.payload"])
        .output()
        .expect("tshark runs");
    let mut got: Vec<String> = String::from_utf8_lossy(&seen.stdout)
        .lines()
        .map(|l| l.replace(':', ""))
        .collect();
    got.sort();
    want.sort();
    assert_eq!(got, want);

    // Without them: only the well-formed queries are sent.
    let (port, stop, server) = echo_server();
    let out = ldplayer(&[
        "replay",
        &s(&trace),
        "--server",
        &format!("127.0.0.1:{port}"),
        "--proto",
        "udp",
        "--rate",
        "200",
        "--timeout",
        "1",
        "--json",
        "--drop-malformed",
    ]);
    stop.store(true, Ordering::Relaxed);
    let _ = server.join();
    let summary: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON");
    assert_eq!(summary["sent"], 5, "{summary}");
    assert_eq!(summary["answered"], 5, "{summary}");
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}
