//! dnstap files as traces: what the writer writes the reader reads back, every type and
//! transport mapped; damaged files (cut anywhere, a frame that is not protobuf, an unknown
//! message type, another content type) keep every whole frame and count the rest by reason;
//! and `open` detects dnstap by content, compressed or not.

use bytes::Bytes;
use ldplayer_dns::{build, name_from_presentation, Class, Fields, Question, Rcode, Rtype};
use ldplayer_dnstap::fstrm::{Control, ControlType, FrameWriter, DNSTAP_CONTENT_TYPE};
use ldplayer_dnstap::{MessageType, Tap, Transport};
use ldplayer_trace::dnstap::{DnstapReader, DnstapTypes, DnstapWriter};
use ldplayer_trace::input::Format;
use ldplayer_trace::open::{open_reader, Notes, ReadNote, ReadOptions};
use ldplayer_trace::{Collect, Proto, RecordBuf, SkipReason, Source};
use proptest::prelude::*;
use std::net::SocketAddr;
use std::path::Path;
use std::sync::{Arc, Mutex};

fn message(i: u32, qr: bool) -> Vec<u8> {
    build(&Fields {
        id: i as u16,
        qr,
        opcode: 0,
        flags: 0x0100,
        rcode: Rcode::NOERROR,
        question: Some(Question {
            name: name_from_presentation(&format!("q{i}.example.")).expect("name"),
            qtype: Rtype::A,
            qclass: Class::IN,
        }),
        edns: None,
    })
    .expect("message")
}

/// `n` exchanges: a query and its response each.
fn exchanges(n: u32) -> Vec<RecordBuf> {
    let server: SocketAddr = "192.0.2.53:53".parse().expect("addr");
    (0..n)
        .flat_map(|i| {
            let client: SocketAddr = format!("[2001:db8::{}]:{}", i + 1, 1024 + i)
                .parse()
                .expect("addr");
            let t = 1_700_000_000_000_000_000 + i as i64 * 1_000_000;
            [
                RecordBuf {
                    time_ns: t,
                    src: client,
                    dst: server,
                    proto: Proto::Udp,
                    conn: 0,
                    wire: message(i, false),
                },
                RecordBuf {
                    time_ns: t + 500_000,
                    src: server,
                    dst: client,
                    proto: Proto::Udp,
                    conn: 0,
                    wire: message(i, true),
                },
            ]
        })
        .collect()
}

fn write(records: &[RecordBuf]) -> Vec<u8> {
    let mut w = DnstapWriter::new(Vec::new()).expect("writer");
    for r in records {
        w.write(&r.as_record()).expect("write");
    }
    w.into_inner().expect("stop")
}

fn read(bytes: &[u8], types: DnstapTypes) -> (Collect, DnstapReader<&[u8]>) {
    let mut reader = DnstapReader::new(bytes, types);
    let mut got = Collect::default();
    reader.run(&mut got).expect("reads");
    (got, reader)
}

/// Where every data frame of `bytes` ends (the file's START is 42 bytes).
fn frame_ends(bytes: &[u8]) -> Vec<usize> {
    let mut at = 42;
    let mut ends = Vec::new();
    while at + 4 <= bytes.len() {
        let len = u32::from_be_bytes(bytes[at..at + 4].try_into().expect("4 bytes")) as usize;
        if len == 0 {
            break;
        }
        at += 4 + len;
        ends.push(at);
    }
    ends
}

/// A v4 address beside a v6 one is written as IPv4-mapped IPv6; compare them as read.
fn mapped(a: SocketAddr) -> SocketAddr {
    match a {
        SocketAddr::V4(v4) => SocketAddr::new(v4.ip().to_ipv6_mapped().into(), v4.port()),
        v6 => v6,
    }
}

#[test]
fn what_is_written_is_read_back() {
    let records = exchanges(50);
    let bytes = write(&records);
    let (got, reader) = read(&bytes, DnstapTypes::default());
    assert_eq!(got.skipped.total(), 0);
    assert_eq!(got.records.len(), records.len());
    for (a, b) in got.records.iter().zip(&records) {
        assert_eq!(a.time_ns, b.time_ns);
        assert_eq!((a.src, a.dst), (mapped(b.src), mapped(b.dst)));
        assert_eq!((a.proto, a.conn, &a.wire), (b.proto, 0, &b.wire));
    }
    assert_eq!(reader.census().of_type(MessageType::ClientQuery), 50);
    assert_eq!(reader.census().of_type(MessageType::ClientResponse), 50);
    // Queries only: the responses are counted, not read.
    let (got, reader) = read(&bytes, DnstapTypes::of([MessageType::ClientQuery]));
    assert_eq!(got.records.len(), 50);
    assert!(got.records.iter().all(|r| r.wire[2] & 0x80 == 0));
    assert_eq!(reader.census().total(), 100);
}

#[test]
fn types_transports_and_times_map_as_dnstap_proto_says() {
    let client: SocketAddr = "198.51.100.7:4444".parse().expect("addr");
    let server: SocketAddr = "192.0.2.1:853".parse().expect("addr");
    let mut frames = FrameWriter::new(Vec::new(), DNSTAP_CONTENT_TYPE).expect("start");
    let transports = [
        (Transport::Udp, Proto::Udp),
        (Transport::Tcp, Proto::Tcp),
        (Transport::Dot, Proto::Tls),
        (Transport::Doh, Proto::Https),
        (Transport::Doq, Proto::Quic),
        (Transport::DnsCryptUdp, Proto::Udp),
        (Transport::DnsCryptTcp, Proto::Tcp),
    ];
    for (i, (t, _)) in transports.iter().enumerate() {
        // A resolver's exchange: the query time and the response time both said, as unbound
        // logs them; each record takes the time of its direction.
        for kind in [MessageType::ResolverQuery, MessageType::ResolverResponse] {
            let (src, dst) = if kind.is_query() {
                (client, server)
            } else {
                (server, client)
            };
            let mut tap = Tap::new(
                kind,
                Some(*t),
                src,
                dst,
                1_000_000_000 * (i as i64 + 1),
                Bytes::from(message(i as u32, !kind.is_query())),
            );
            tap.query_time = Some((i as u64 + 1, 0));
            tap.response_time = Some((i as u64 + 1, 7));
            tap.query_message = Some(Bytes::from(message(i as u32, false)));
            tap.response_message = Some(Bytes::from(message(i as u32, true)));
            frames.write_frame(&tap.encode()).expect("frame");
        }
    }
    let bytes = frames.finish().expect("stop");
    let (got, _) = read(&bytes, DnstapTypes::default());
    assert!(got.records.is_empty(), "client types by default");
    let (got, _) = read(&bytes, DnstapTypes::RESOLVER);
    assert_eq!(got.records.len(), 2 * transports.len());
    for (i, pair) in got.records.chunks(2).enumerate() {
        let proto = transports[i].1;
        let (q, r) = (&pair[0], &pair[1]);
        assert_eq!((q.src, q.dst, q.proto), (client, server, proto));
        assert_eq!((r.src, r.dst, r.proto), (server, client, proto));
        assert_eq!(q.time_ns, (i as i64 + 1) * 1_000_000_000);
        assert_eq!(r.time_ns, (i as i64 + 1) * 1_000_000_000 + 7);
        assert_eq!((q.wire[2] & 0x80, r.wire[2] & 0x80), (0, 0x80));
        // Both directions of a connection share its number; UDP has none.
        assert_eq!(q.conn, r.conn);
        assert_eq!(q.conn == 0, !proto.is_connection());
    }
}

#[test]
fn a_file_cut_anywhere_keeps_every_whole_frame() {
    let records = exchanges(6);
    let bytes = write(&records);
    let ends = frame_ends(&bytes);
    assert_eq!(ends.len(), records.len());
    for cut in 0..bytes.len() {
        let mut reader = DnstapReader::new(&bytes[..cut], DnstapTypes::default());
        let mut got = Collect::default();
        reader
            .run(&mut got)
            .expect("a cut is counted, not an error");
        let whole = ends.iter().filter(|&&e| e <= cut).count();
        assert_eq!(got.records.len(), whole, "cut at {cut}");
        let at_boundary = cut == 0 || cut == 42 || ends.contains(&cut) || cut == bytes.len();
        let want = u64::from(!at_boundary);
        assert_eq!(
            got.skipped.get(SkipReason::TruncatedFile),
            want,
            "cut at {cut}"
        );
    }
}

#[test]
fn damaged_frames_are_counted_by_reason_and_the_rest_is_read() {
    let good = |i: u32| {
        Tap::new(
            MessageType::ClientQuery,
            Some(Transport::Udp),
            "127.0.0.1:5000".parse().expect("addr"),
            "127.0.0.1:53".parse().expect("addr"),
            1_000 + i as i64,
            Bytes::from(message(i, false)),
        )
        .encode()
    };
    let mut frames = FrameWriter::new(Vec::new(), DNSTAP_CONTENT_TYPE).expect("start");
    frames.write_frame(&good(1)).expect("frame");
    // Not protobuf: a field of wire type 7 does not exist.
    frames.write_frame(&[0x0f, 0xff, 0xff]).expect("frame");
    // A MESSAGE of type 99.
    frames
        .write_frame(&[0x78, 1, 0x72, 2, 0x08, 99])
        .expect("frame");
    // A CLIENT_QUERY without its query message.
    let mut no_wire = Tap::decode(Bytes::from(good(2))).expect("decodes");
    no_wire.query_message = None;
    frames.write_frame(&no_wire.encode()).expect("frame");
    // Without its time.
    let mut no_time = Tap::decode(Bytes::from(good(3))).expect("decodes");
    no_time.query_time = None;
    frames.write_frame(&no_time.encode()).expect("frame");
    frames.write_frame(&good(4)).expect("frame");
    let mut bytes = frames.finish().expect("stop");
    // A second stream, of another content type: its frames are counted, not read.
    let mut other = FrameWriter::new(Vec::new(), b"protobuf:other.Thing").expect("start");
    other.write_frame(&good(5)).expect("frame");
    other.write_frame(&good(6)).expect("frame");
    bytes.extend(other.finish().expect("stop"));
    // A third, of dnstap again, with a control frame that does not decode inside.
    let mut third = FrameWriter::new(Vec::new(), DNSTAP_CONTENT_TYPE).expect("start");
    third.write_frame(&good(7)).expect("frame");
    let mut third = third.finish().expect("stop");
    let stop = third.split_off(third.len() - 12);
    third.extend_from_slice(&[0, 0, 0, 0, 0, 0, 0, 2, 0, 0]);
    third.extend(stop);
    bytes.extend(third);
    // And a data frame after the last STOP.
    bytes.extend_from_slice(&[0, 0, 0, 1, 0]);

    let (got, reader) = read(&bytes, DnstapTypes::default());
    let ids: Vec<u16> = got
        .records
        .iter()
        .map(|r| u16::from_be_bytes([r.wire[0], r.wire[1]]))
        .collect();
    assert_eq!(ids, [1, 4, 7]);
    for (reason, n) in [
        (SkipReason::DnstapNotProtobuf, 1),
        (SkipReason::DnstapUnknownType, 1),
        (SkipReason::DnstapNoMessage, 1),
        (SkipReason::DnstapBadTime, 1),
        (SkipReason::DnstapContentType, 2),
        (SkipReason::DnstapBadFrame, 2),
    ] {
        assert_eq!(got.skipped.get(reason), n, "{reason}");
    }
    assert_eq!(got.skipped.total(), 8);
    assert_eq!(reader.census().of_type(MessageType::ClientQuery), 5);
}

#[test]
fn an_impossible_frame_length_ends_the_run_with_an_error_after_what_came_before() {
    let mut bytes = write(&exchanges(2));
    let ends = frame_ends(&bytes);
    bytes.truncate(ends[1]);
    bytes.extend_from_slice(&0x7fff_ffffu32.to_be_bytes());
    bytes.extend_from_slice(&[0; 64]);
    let mut reader = DnstapReader::new(&bytes[..], DnstapTypes::default());
    let mut got = Collect::default();
    let e = reader.run(&mut got).expect_err("framing lost");
    assert_eq!(got.records.len(), 2);
    assert!(
        e.to_string().contains("the 2 frames before it were read"),
        "{e}"
    );
}

#[test]
fn open_detects_dnstap_plain_and_compressed_and_tells_its_census() {
    let bytes = write(&exchanges(20));
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    std::io::Write::write_all(&mut gz, &bytes).expect("gzip");
    let gz = gz.finish().expect("gzip");
    let zst = zstd::encode_all(&bytes[..], 3).expect("zstd");
    for input in [bytes, gz, zst] {
        let noted = Arc::new(Mutex::new(Vec::new()));
        let keep = noted.clone();
        let options = ReadOptions {
            notes: Notes::to(move |n| keep.lock().expect("lock").push(n.clone())),
            dnstap_types: DnstapTypes::of([MessageType::ClientResponse]),
            ..ReadOptions::default()
        };
        let mut opened = open_reader(
            Box::new(std::io::Cursor::new(input)),
            Path::new("t"),
            &options,
        )
        .expect("opens");
        assert_eq!(opened.format, Format::Dnstap);
        let mut got = Collect::default();
        opened.source.run(&mut got).expect("reads");
        assert_eq!(got.records.len(), 20);
        let noted = noted.lock().expect("lock");
        match &noted[..] {
            [note @ ReadNote::Dnstap { census, kept }] => {
                assert_eq!(census.total(), 40);
                assert_eq!(kept.to_string(), "CLIENT_RESPONSE");
                assert!(!note.is_descriptive());
                assert!(
                    note.to_string().contains("20 of types other than"),
                    "{note}"
                );
            }
            other => panic!("{other:?}"),
        }
    }
}

#[test]
fn another_content_type_alone_is_read_as_nothing_but_counted() {
    let mut frames = FrameWriter::new(Vec::new(), b"protobuf:other").expect("start");
    frames.write_frame(b"x").expect("frame");
    let bytes = frames.finish().expect("stop");
    assert_eq!(
        Control::decode(&bytes[8..42 - 8]).map(|c| c.kind),
        Ok(ControlType::Start)
    );
    let (got, _) = read(&bytes, DnstapTypes::ALL);
    assert!(got.records.is_empty());
    assert_eq!(got.skipped.get(SkipReason::DnstapContentType), 1);
}

#[test]
fn type_lists_parse_as_the_flag_takes_them() {
    assert_eq!(
        "CLIENT_QUERY,CLIENT_RESPONSE".parse::<DnstapTypes>(),
        Ok(DnstapTypes::CLIENT)
    );
    assert_eq!(
        "resolver_response".parse::<DnstapTypes>(),
        Ok(DnstapTypes::RESOLVER_RESPONSE)
    );
    assert_eq!("all".parse::<DnstapTypes>(), Ok(DnstapTypes::ALL));
    assert_eq!(DnstapTypes::ALL.iter().count(), 14);
    assert!("CLIENT_QUERY,NOPE".parse::<DnstapTypes>().is_err());
    assert!(",".parse::<DnstapTypes>().is_err());
}

fn arb_record() -> impl Strategy<Value = RecordBuf> {
    let addr = prop_oneof![
        (any::<[u8; 4]>(), any::<u16>()).prop_map(|(ip, p)| SocketAddr::from((ip, p))),
        (any::<[u8; 16]>(), any::<u16>()).prop_map(|(ip, p)| SocketAddr::from((ip, p))),
    ];
    (
        0..i64::MAX,
        addr.clone(),
        addr,
        0u8..5,
        proptest::collection::vec(any::<u8>(), 0..600),
    )
        .prop_map(|(time_ns, src, dst, proto, wire)| RecordBuf {
            time_ns,
            src,
            dst,
            proto: Proto::from_code(proto).expect("code"),
            conn: 0,
            wire,
        })
}

proptest! {
    #[test]
    fn any_records_round_trip(records in proptest::collection::vec(arb_record(), 0..20)) {
        let bytes = write(&records);
        let (got, _) = read(&bytes, DnstapTypes::CLIENT);
        prop_assert_eq!(got.records.len(), records.len());
        for (a, b) in got.records.iter().zip(&records) {
            let v6 = b.src.is_ipv6() || b.dst.is_ipv6();
            let fam = |s: SocketAddr| if v6 { mapped(s) } else { s };
            prop_assert_eq!(a.time_ns, b.time_ns);
            prop_assert_eq!((a.src, a.dst), (fam(b.src), fam(b.dst)));
            prop_assert_eq!(a.proto, b.proto);
            prop_assert_eq!(&a.wire, &b.wire);
        }
    }

    #[test]
    fn any_bytes_after_start_never_panic(tail in proptest::collection::vec(any::<u8>(), 0..2000)) {
        let mut bytes = write(&[]);
        bytes.truncate(42);
        bytes.extend(tail);
        let mut reader = DnstapReader::new(&bytes[..], DnstapTypes::ALL);
        let mut got = Collect::default();
        let _ = reader.run(&mut got);
    }

    #[test]
    fn flipped_bytes_lose_only_their_frame(seed in any::<u64>(), n in 1usize..8) {
        let records = exchanges(8);
        let mut bytes = write(&records);
        let ends = frame_ends(&bytes);
        // Change bytes inside the payloads only (not the length prefixes).
        let mut s = seed;
        let mut hit = std::collections::BTreeSet::new();
        for _ in 0..n {
            s = s.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            let f = (s >> 33) as usize % ends.len();
            let start = if f == 0 { 42 } else { ends[f - 1] } + 4;
            let at = start + (s >> 17) as usize % (ends[f] - start);
            bytes[at] ^= 0x5a;
            hit.insert(f);
        }
        let mut reader = DnstapReader::new(&bytes[..], DnstapTypes::ALL);
        let mut got = Collect::default();
        reader.run(&mut got).expect("no framing lost");
        // Every untouched frame is read as it was.
        let untouched: Vec<_> = (0..records.len()).filter(|f| !hit.contains(f)).collect();
        for f in untouched {
            prop_assert!(got.records.iter().any(|r| r.wire == records[f].wire && r.time_ns == records[f].time_ns));
        }
        prop_assert!(got.records.len() + got.skipped.total() as usize <= records.len());
    }
}
