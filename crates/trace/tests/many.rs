//! `ldplayer_trace::many` reads many files as one: a capture cut into pieces at arbitrary
//! packets (TCP streams, messages split over several segments and fragmented datagrams crossing
//! the cuts) reads back, on one thread or several, to exactly the records and skips of the
//! whole capture; files given in any order are put in time order; gaps and overlaps between
//! files are reported; a damaged file costs only what follows its damage.

use ldplayer_trace::capture::PcapWriter;
use ldplayer_trace::many::{open_file, Many};
use ldplayer_trace::open::{open, Notes, ReadOptions};
use ldplayer_trace::{Collect, Proto, Record, Sink, Source};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::path::{Path, PathBuf};

fn options() -> ReadOptions {
    ReadOptions {
        notes: Notes::ignore(),
        ..ReadOptions::default()
    }
}

/// A shared sample capture, or a failure naming it when it is missing.
fn sample(name: &str) -> PathBuf {
    let path = Path::new(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../../shared/data/pcap"
    ))
    .join(name);
    assert!(
        path.is_file(),
        "missing test capture {} (see shared/data/README.md)",
        path.display()
    );
    path
}

/// A DNS message: a query for `i.example.`, or its answer with a TXT record of `txt` bytes.
fn message(id: u16, response: bool, txt: usize) -> Vec<u8> {
    let mut m = Vec::new();
    m.extend_from_slice(&id.to_be_bytes());
    m.extend_from_slice(&[if response { 0x84 } else { 0x01 }, 0]);
    m.extend_from_slice(&[0, 1, 0, u8::from(response), 0, 0, 0, 0]);
    let label = format!("q{id}");
    m.push(label.len() as u8);
    m.extend_from_slice(label.as_bytes());
    m.extend_from_slice(b"\x07example\x00\x00\x10\x00\x01");
    if response {
        m.extend_from_slice(&[0xc0, 12, 0, 16, 0, 1, 0, 0, 0, 60]);
        let strings: Vec<usize> = (0..txt.div_ceil(255))
            .map(|i| (txt - i * 255).min(255))
            .collect();
        let rdlen: usize = strings.iter().map(|s| s + 1).sum();
        m.extend_from_slice(&(rdlen as u16).to_be_bytes());
        for s in strings {
            m.push(s as u8);
            m.extend(std::iter::repeat_n(b'x', s));
        }
    }
    m
}

/// A capture of 60 s: 40 clients (IPv4 and IPv6), a third over long-lived TCP connections,
/// each asking every 0.4 s or so; one answer in 7 is 3,000 bytes (IP fragments over UDP, three
/// segments over TCP).
fn capture(dir: &Path) -> PathBuf {
    let path = dir.join("whole.pcap");
    let file = std::fs::File::create(&path).expect("create");
    let mut w = PcapWriter::new(file).expect("pcap writer");
    let server = |v6: bool| {
        if v6 {
            SocketAddr::new(
                IpAddr::V6(Ipv6Addr::new(0x2001, 0xdb8, 0, 0, 0, 0, 0, 53)),
                53,
            )
        } else {
            SocketAddr::new(IpAddr::V4(Ipv4Addr::new(192, 0, 2, 53)), 53)
        }
    };
    let t0 = 1_700_000_000_000_000_000i64;
    let mut n = 0u16;
    for step in 0..6_000i64 {
        let client = (step * 7 % 40) as u16;
        let v6 = client.is_multiple_of(5);
        let tcp = client.is_multiple_of(3);
        let src = if v6 {
            SocketAddr::new(
                IpAddr::V6(Ipv6Addr::new(0x2001, 0xdb8, 1, 0, 0, 0, 0, client)),
                40_000 + client,
            )
        } else {
            SocketAddr::new(
                IpAddr::V4(Ipv4Addr::new(10, 0, 0, client as u8)),
                40_000 + client,
            )
        };
        let time = t0 + step * 10_000_000 + (client as i64 * 37_000);
        n = n.wrapping_add(1);
        let (proto, conn) = if tcp {
            (Proto::Tcp, 1 + client as u64)
        } else {
            (Proto::Udp, 0)
        };
        let query = message(n, false, 0);
        let answer = message(n, true, if n.is_multiple_of(7) { 3_000 } else { 40 });
        for (wire, from, to, at) in [
            (&query, src, server(v6), time),
            (&answer, server(v6), src, time + 300_000),
        ] {
            w.record(&Record {
                time_ns: at,
                src: from,
                dst: to,
                proto,
                conn,
                wire,
            })
            .expect("write");
        }
    }
    w.finish().expect("flush");
    drop(w);
    path
}

/// Cuts a pcap (legacy format) into files of `each` packets: `part-000.pcap`...
fn cut(capture: &Path, each: usize, dir: &Path) -> Vec<PathBuf> {
    let data = std::fs::read(capture).expect("read");
    let (header, mut rest) = data.split_at(24);
    let big_endian =
        header[..4] == [0xa1, 0xb2, 0xc3, 0xd4] || header[..4] == [0xa1, 0xb2, 0x3c, 0x4d];
    let mut files = Vec::new();
    let mut out = Vec::new();
    let mut in_file = 0;
    while rest.len() >= 16 {
        let l: [u8; 4] = rest[8..12].try_into().expect("4 bytes");
        let len = if big_endian {
            u32::from_be_bytes(l)
        } else {
            u32::from_le_bytes(l)
        } as usize;
        let (packet, tail) = rest.split_at(16 + len);
        if in_file == 0 {
            out = header.to_vec();
        }
        out.extend_from_slice(packet);
        in_file += 1;
        rest = tail;
        if in_file == each || rest.len() < 16 {
            let path = dir.join(format!("part-{:04}.pcap", files.len()));
            std::fs::write(&path, &out).expect("write a part");
            files.push(path);
            in_file = 0;
        }
    }
    files
}

fn read_one(path: &Path) -> Collect {
    let mut input = open(path, &options()).expect("open");
    let mut sink = Collect::default();
    input.source.run(&mut sink).expect("read");
    sink
}

fn read_many(paths: &[PathBuf], jobs: usize) -> (Collect, Many) {
    let mut many = Many::open(paths, &options(), jobs, open_file()).expect("open many");
    let mut sink = Collect::default();
    many.run(&mut sink).expect("read many");
    (sink, many)
}

fn assert_same(whole: &Collect, joined: &Collect, what: &str) {
    assert_eq!(whole.records.len(), joined.records.len(), "{what}: records");
    for (i, (a, b)) in whole.records.iter().zip(&joined.records).enumerate() {
        assert_eq!(a, b, "{what}: record {i}");
    }
    assert_eq!(whole.skipped, joined.skipped, "{what}: skips");
    assert_eq!(whole.malformed, joined.malformed, "{what}: malformed");
}

#[test]
fn a_capture_cut_anywhere_reads_back_as_the_whole_on_any_number_of_threads() {
    let dir = tempfile::tempdir().expect("scratch");
    let whole = capture(dir.path());
    let expected = read_one(&whole);
    assert!(
        expected.records.len() >= 12_000,
        "{}",
        expected.records.len()
    );
    let tcp = expected
        .records
        .iter()
        .filter(|r| r.proto == Proto::Tcp)
        .count();
    let big = expected
        .records
        .iter()
        .filter(|r| r.wire.len() > 1_500)
        .count();
    assert!(tcp > 3_000 && big > 500, "{tcp} TCP, {big} big");
    let parts = dir.path().join("parts");
    std::fs::create_dir(&parts).expect("mkdir");
    // 97 packets a file: every cut falls inside TCP streams, some inside a message's
    // segments or a datagram's fragments.
    let mut files = cut(&whole, 97, &parts);
    assert!(files.len() > 100, "{}", files.len());
    // Given in any order, read in time order.
    files.reverse();
    files.swap(3, 40);
    for jobs in [1, 2, 5] {
        let (joined, many) = read_many(&files, jobs);
        assert_same(&expected, &joined, &format!("{jobs} jobs"));
        let report = many.report().expect("a report");
        assert!(report.seams.is_empty(), "{:?}", report.seams);
        assert!(report.inputs.iter().all(|i| i.error.is_none()));
        let in_order: Vec<&Path> = report.inputs.iter().map(|i| i.path.as_path()).collect();
        let mut sorted = in_order.clone();
        sorted.sort();
        assert_eq!(in_order, sorted, "the parts in time order");
    }
}

#[test]
fn real_captures_cut_at_every_packet_read_back_as_the_whole() {
    for name in [
        "dnscap_frags.pcap",
        "dnscap_dnso1tcp.pcap",
        "dnscap_dnso1tcp-midmiss.pcap",
        "dnsjit_pellets.pcap",
        "dnsjit_ip6-tcp-padd.pcap",
        "dnsjit_tcp-response-with-trailing-junk.pcap",
        "zeek_dns-edns-tcp-keepalive.pcap",
    ] {
        let capture = sample(name);
        let dir = tempfile::tempdir().expect("scratch");
        let files = cut(&capture, 1, dir.path());
        let expected = read_one(&capture);
        for jobs in [1, 3] {
            let (joined, _) = read_many(&files, jobs);
            assert_same(&expected, &joined, &format!("{name}, {jobs} jobs"));
        }
    }
}

/// Writes `records` (time in seconds, client) as a capture of UDP queries.
fn queries(path: &Path, seconds: &[f64]) {
    let file = std::fs::File::create(path).expect("create");
    let mut w = PcapWriter::new(file).expect("pcap writer");
    for (i, s) in seconds.iter().enumerate() {
        let wire = message(i as u16, false, 0);
        w.record(&Record {
            time_ns: 1_700_000_000_000_000_000 + (s * 1e9) as i64,
            src: SocketAddr::from(([10, 0, 0, 1], 4000)),
            dst: SocketAddr::from(([192, 0, 2, 53], 53)),
            proto: Proto::Udp,
            conn: 0,
            wire: &wire,
        })
        .expect("write");
    }
    w.finish().expect("flush");
}

#[test]
fn gaps_and_overlaps_between_files_are_reported_and_overlaps_interleaved() {
    let dir = tempfile::tempdir().expect("scratch");
    let p = |n: &str| dir.path().join(n);
    queries(&p("a.pcap"), &[0.0, 0.1, 0.2, 0.3]);
    queries(&p("b.pcap"), &[0.35, 0.5, 0.6]);
    // 20 s later.
    queries(&p("c.pcap"), &[20.6, 20.7, 20.9]);
    // Overlaps c.
    queries(&p("d.pcap"), &[20.65, 20.8, 21.0]);
    let files = [p("d.pcap"), p("c.pcap"), p("b.pcap"), p("a.pcap")];
    let (joined, many) = read_many(&files, 2);
    let times: Vec<i64> = joined
        .records
        .iter()
        .map(|r| (r.time_ns - 1_700_000_000_000_000_000) / 1_000_000)
        .collect();
    assert_eq!(
        times,
        [0, 100, 200, 300, 350, 500, 600, 20_600, 20_650, 20_700, 20_800, 20_900, 21_000]
    );
    let seams = &many.report().expect("report").seams;
    assert_eq!(seams.len(), 2, "{seams:?}");
    assert!(!seams[0].is_overlap());
    assert_eq!(seams[0].before, p("b.pcap"));
    assert_eq!(seams[0].after, p("c.pcap"));
    assert_eq!(seams[0].length_ns(), 20_000_000_000);
    assert!(seams[1].is_overlap(), "{}", seams[1]);
    assert_eq!(
        (&seams[1].before, &seams[1].after),
        (&p("c.pcap"), &p("d.pcap"))
    );
}

#[test]
fn a_damaged_file_costs_what_follows_its_damage_and_is_named() {
    let dir = tempfile::tempdir().expect("scratch");
    let whole = capture(dir.path());
    let parts = dir.path().join("parts");
    std::fs::create_dir(&parts).expect("mkdir");
    let files = cut(&whole, 2_000, &parts);
    assert!(files.len() >= 4);
    // The second file's fifth packet claims 2 GB: the rest of that file cannot be found.
    let damaged = &files[1];
    let mut bytes = std::fs::read(damaged).expect("read");
    let mut at = 24;
    for _ in 0..4 {
        let len = u32::from_le_bytes(bytes[at + 8..at + 12].try_into().expect("4")) as usize;
        at += 16 + len;
    }
    bytes[at + 8..at + 12].copy_from_slice(&0x7fff_ffffu32.to_le_bytes());
    std::fs::write(damaged, &bytes).expect("write");
    let mut many = Many::open(&files, &options(), 2, open_file()).expect("open many");
    let mut sink = Collect::default();
    let error = many.run(&mut sink).expect_err("a damaged file is an error");
    let report = many.report().expect("a report");
    let failed: Vec<&Path> = report
        .inputs
        .iter()
        .filter(|i| i.error.is_some())
        .map(|i| i.path.as_path())
        .collect();
    assert_eq!(failed, [damaged.as_path()], "{error}");
    // Everything of the other files is there: every UDP message from the next file on (TCP
    // streams lost segments in the damage: how they resume is the reassembly's matter).
    let mut before_damage = Collect::default();
    let read = open(damaged, &options())
        .expect("open")
        .source
        .run(&mut before_damage);
    assert!(read.is_err());
    assert!(before_damage.records.len() > 2);
    let next = report.inputs[2]
        .span
        .first_ns
        .expect("the next file's start");
    let whole = read_one(&whole);
    let after = |records: &[ldplayer_trace::RecordBuf]| -> Vec<(i64, SocketAddr, usize)> {
        records
            .iter()
            .filter(|r| r.time_ns >= next && r.proto == Proto::Udp)
            .map(|r| (r.time_ns, r.src, r.wire.len()))
            .collect()
    };
    let (got, wanted) = (after(&sink.records), after(&whole.records));
    assert!(wanted.len() > 1_000, "{}", wanted.len());
    assert!(
        got == wanted,
        "{} of {} UDP messages",
        got.len(),
        wanted.len()
    );
    assert!(sink.records.len() < whole.records.len());
}

/// The joined read feeds any sink, and refuses split-mode parts elsewhere.
#[test]
fn a_sink_that_cannot_join_refuses_a_split_capture() {
    let mut sink = Collect::default();
    let refused = sink.deferred(ldplayer_trace::capture::Deferred::Packet {
        time_ns: 0,
        number: 1,
    });
    assert!(refused.is_err());
}

/// Cuts a pcap (legacy format) at the packet numbers in `cuts` (sorted, from 1).
fn cut_at(capture: &Path, cuts: &[usize], dir: &Path) -> Vec<PathBuf> {
    let data = std::fs::read(capture).expect("read");
    let (header, mut rest) = data.split_at(24);
    let mut files = Vec::new();
    let mut out = header.to_vec();
    let mut packet = 0;
    let mut next_cut = cuts.iter().copied().peekable();
    while rest.len() >= 16 {
        let len = u32::from_le_bytes(rest[8..12].try_into().expect("4 bytes")) as usize;
        let (p, tail) = rest.split_at(16 + len);
        if next_cut.peek() == Some(&packet) {
            next_cut.next();
            let path = dir.join(format!("cut-{:03}.pcap", files.len()));
            std::fs::write(&path, &out).expect("write a part");
            files.push(path);
            out = header.to_vec();
        }
        out.extend_from_slice(p);
        packet += 1;
        rest = tail;
    }
    let path = dir.join(format!("cut-{:03}.pcap", files.len()));
    std::fs::write(&path, &out).expect("write a part");
    files.push(path);
    files
}

/// The synthetic capture and what reading it whole gives, made once for the property test.
fn shared_capture() -> &'static (tempfile::TempDir, PathBuf, Collect, usize) {
    static CAPTURE: std::sync::OnceLock<(tempfile::TempDir, PathBuf, Collect, usize)> =
        std::sync::OnceLock::new();
    CAPTURE.get_or_init(|| {
        let dir = tempfile::tempdir().expect("scratch");
        let whole = capture(dir.path());
        let expected = read_one(&whole);
        let data = std::fs::read(&whole).expect("read");
        let (mut at, mut packets) = (24, 0);
        while at + 16 <= data.len() {
            at += 16 + u32::from_le_bytes(data[at + 8..at + 12].try_into().expect("4")) as usize;
            packets += 1;
        }
        (dir, whole, expected, packets)
    })
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(12))]

    /// Wherever the cuts fall, in whatever order the files are named, on any number of threads,
    /// the files read back to the whole capture's records and skips.
    #[test]
    fn cuts_anywhere_read_back_as_the_whole(
        cuts in proptest::collection::btree_set(1usize..24_000, 1..8),
        jobs in 1usize..4,
        rotate in 0usize..8,
    ) {
        let (_, whole, expected, packets) = shared_capture();
        let cuts: Vec<usize> = cuts.into_iter().filter(|c| c < packets).collect();
        let dir = tempfile::tempdir().expect("scratch");
        let mut files = cut_at(whole, &cuts, dir.path());
        let n = files.len();
        files.rotate_left(rotate % n);
        let (joined, _) = read_many(&files, jobs);
        assert_same(expected, &joined, &format!("cuts {cuts:?}, {jobs} jobs"));
    }
}
