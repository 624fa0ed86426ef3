//! Records written by `PcapWriter` read back identical, and tshark decodes them.

mod agreement;

use agreement::message;

use ldplayer_trace::capture::{read_capture_bytes, CaptureOptions, PcapWriter};
use ldplayer_trace::{Collect, Proto, RecordBuf, Sink};
use std::collections::HashMap;
use std::net::SocketAddr;

fn rec(t: i64, src: &str, dst: &str, proto: Proto, conn: u64, wire: Vec<u8>) -> RecordBuf {
    RecordBuf {
        time_ns: t,
        src: src.parse().unwrap(),
        dst: dst.parse().unwrap(),
        proto,
        conn,
        wire,
    }
}

const T0: i64 = 1_700_000_000_000_000_000;

fn records() -> Vec<RecordBuf> {
    let c4 = "192.0.2.1:40000";
    let s4 = "192.0.2.53:53";
    let c6 = "[2001:db8::1]:40001";
    let s6 = "[2001:db8::53]:53";
    vec![
        rec(T0, c4, s4, Proto::Udp, 0, message(1, false, 0)),
        rec(T0 + 1, s4, c4, Proto::Udp, 0, message(1, true, 300)),
        rec(T0 + 2, c6, s6, Proto::Udp, 0, message(2, false, 0)),
        rec(T0 + 3, s6, c6, Proto::Udp, 0, message(2, true, 0)),
        // Two TCP connections, interleaved; the second carries large messages.
        rec(T0 + 10, c4, s4, Proto::Tcp, 7, message(3, false, 0)),
        rec(
            T0 + 11,
            "192.0.2.2:1000",
            s4,
            Proto::Tcp,
            9,
            message(4, false, 0),
        ),
        rec(T0 + 12, c4, s4, Proto::Tcp, 7, message(5, false, 0)),
        rec(
            T0 + 13,
            s4,
            "192.0.2.2:1000",
            Proto::Tcp,
            9,
            message(4, true, 5000),
        ),
        rec(T0 + 14, s4, c4, Proto::Tcp, 7, message(3, true, 0)),
        rec(T0 + 15, s4, c4, Proto::Tcp, 7, message(5, true, 60_000)),
        // TCP over IPv6.
        rec(T0 + 20, c6, s6, Proto::Tcp, 11, message(6, false, 0)),
        rec(T0 + 21, s6, c6, Proto::Tcp, 11, message(6, true, 0)),
        // The 4-tuple of connection 7 again, as a new connection.
        rec(T0 + 30, c4, s4, Proto::Tcp, 12, message(8, false, 0)),
        rec(T0 + 31, s4, c4, Proto::Tcp, 12, message(8, true, 0)),
        // TCP without a connection number: one per pair of endpoints.
        rec(
            T0 + 40,
            "192.0.2.3:3000",
            s4,
            Proto::Tcp,
            0,
            message(9, false, 0),
        ),
        rec(
            T0 + 41,
            s4,
            "192.0.2.3:3000",
            Proto::Tcp,
            0,
            message(9, true, 0),
        ),
        // A UDP message too large for one IPv4 packet: written as fragments.
        rec(T0 + 50, s4, c4, Proto::Udp, 0, message(10, true, 65_400)),
        rec(T0 + 51, s6, c6, Proto::Udp, 0, message(11, true, 65_400)),
    ]
}

fn write(records: &[RecordBuf]) -> Vec<u8> {
    let mut w = PcapWriter::new(Vec::new()).unwrap();
    for r in records {
        w.record(&r.as_record()).unwrap();
    }
    w.finish().unwrap();
    w.into_inner().unwrap()
}

#[test]
fn round_trip() {
    let records = records();
    let file = write(&records);
    let mut back = Collect::default();
    read_capture_bytes(&file, &CaptureOptions::default(), &mut back).unwrap();
    assert_eq!(back.skipped.total(), 0, "{:?}", back.skipped);
    assert_eq!(back.records.len(), records.len());
    // Connection numbers are renumbered, consistently: a bijection between the two.
    let mut map: HashMap<u64, u64> = HashMap::new();
    let mut rev: HashMap<u64, u64> = HashMap::new();
    for (a, b) in records.iter().zip(&back.records) {
        assert_eq!(a.time_ns, b.time_ns);
        assert_eq!(a.src, b.src);
        assert_eq!(a.dst, b.dst);
        assert_eq!(a.proto, b.proto);
        assert_eq!(a.wire, b.wire);
        if a.proto == Proto::Udp {
            assert_eq!(b.conn, 0);
            continue;
        }
        assert_ne!(b.conn, 0);
        // Without a number, the written connection is the pair of endpoints.
        let written = if a.conn != 0 {
            a.conn
        } else {
            1000 + a.src.port() as u64 + a.dst.port() as u64
        };
        assert_eq!(*map.entry(written).or_insert(b.conn), b.conn);
        assert_eq!(*rev.entry(b.conn).or_insert(written), written);
    }
    assert_eq!(map.len(), 5);
}

#[test]
fn transports_a_pcap_cannot_say() {
    let c = "192.0.2.1:40000";
    let s: SocketAddr = "192.0.2.53:53".parse().unwrap();
    let records = vec![
        rec(T0, c, "192.0.2.53:53", Proto::Tls, 3, message(1, false, 0)),
        rec(
            T0 + 1,
            "192.0.2.53:53",
            c,
            Proto::Https,
            3,
            message(1, true, 0),
        ),
        rec(
            T0 + 2,
            c,
            "192.0.2.53:53",
            Proto::Quic,
            4,
            message(2, false, 0),
        ),
    ];
    let mut back = Collect::default();
    read_capture_bytes(&write(&records), &CaptureOptions::default(), &mut back).unwrap();
    let protos: Vec<Proto> = back.records.iter().map(|r| r.proto).collect();
    assert_eq!(protos, vec![Proto::Tcp, Proto::Tcp, Proto::Udp]);
    assert_eq!(back.records[1].src, s);
}

#[test]
fn mixed_families_become_ipv4_mapped_ipv6() {
    let records = vec![rec(
        T0,
        "192.0.2.1:4",
        "[2001:db8::53]:53",
        Proto::Udp,
        0,
        message(1, false, 0),
    )];
    let mut back = Collect::default();
    read_capture_bytes(&write(&records), &CaptureOptions::default(), &mut back).unwrap();
    assert_eq!(back.records[0].src, "[::ffff:192.0.2.1]:4".parse().unwrap());
}

#[test]
fn unrepresentable_time_is_an_error() {
    let mut w = PcapWriter::new(Vec::new()).unwrap();
    let r = rec(
        -1,
        "192.0.2.1:4",
        "192.0.2.2:53",
        Proto::Udp,
        0,
        message(1, false, 0),
    );
    assert!(w.record(&r.as_record()).is_err());
}

#[test]
fn empty_trace_is_a_valid_capture() {
    let mut w = PcapWriter::new(Vec::new()).unwrap();
    w.finish().unwrap();
    let file = w.into_inner().unwrap();
    assert_eq!(file.len(), 24);
    let mut back = Collect::default();
    read_capture_bytes(&file, &CaptureOptions::default(), &mut back).unwrap();
    assert!(back.records.is_empty());
}

#[test]
fn tshark_decodes_what_was_written() {
    let records = records();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("written.pcap");
    std::fs::write(&path, write(&records)).unwrap();
    let found = agreement::tshark_messages(&path);
    assert_eq!(found.malformed, 0);
    let theirs = found.keys;
    assert_eq!(theirs.len(), records.len());
    let mut ours = Collect::default();
    read_capture_bytes(
        &std::fs::read(&path).unwrap(),
        &CaptureOptions::default(),
        &mut ours,
    )
    .unwrap();
    let ours: Vec<_> = ours.records.iter().filter_map(agreement::key).collect();
    assert_eq!(
        ours.len(),
        records.len(),
        "every record written is well-formed"
    );
    assert_eq!(agreement::multiset(theirs), agreement::multiset(ours));
    // And tshark finds the checksums right.
    let out = std::process::Command::new("tshark")
        .arg("-r")
        .arg(&path)
        .args([
            "-o",
            "ip.check_checksum:TRUE",
            "-o",
            "udp.check_checksum:TRUE",
        ])
        .args(["-o", "tcp.check_checksum:TRUE"])
        .args([
            "-Y",
            "_ws.expert.severity >= warning || _ws.malformed",
            "-T",
            "fields",
        ])
        .args(["-e", "frame.number", "-e", "_ws.expert.message"])
        .output()
        .expect("tshark runs");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success() && text.trim().is_empty(),
        "tshark warnings:\n{text}"
    );
}

#[test]
fn largest_udp_messages() {
    let base = message(1, true, 1).len() - 1;
    let sized = |n: usize| message(1, true, n - base);
    let (c4, s4) = ("192.0.2.1:4", "192.0.2.2:53");
    let (c6, s6) = ("[2001:db8::1]:4", "[2001:db8::2]:53");
    let ok = vec![
        rec(T0, s4, c4, Proto::Udp, 0, sized(65_507)),
        rec(T0, s6, c6, Proto::Udp, 0, sized(65_527)),
        rec(T0, s4, c4, Proto::Tcp, 1, sized(65_535)),
    ];
    let mut back = Collect::default();
    read_capture_bytes(&write(&ok), &CaptureOptions::default(), &mut back).unwrap();
    let sizes: Vec<usize> = back.records.iter().map(|r| r.wire.len()).collect();
    assert_eq!(sizes, vec![65_507, 65_527, 65_535]);
    for too_big in [
        rec(T0, s4, c4, Proto::Udp, 0, sized(65_508)),
        rec(T0, s6, c6, Proto::Udp, 0, sized(65_528)),
    ] {
        let mut w = PcapWriter::new(Vec::new()).unwrap();
        assert!(w.record(&too_big.as_record()).is_err());
    }
}
