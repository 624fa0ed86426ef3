//! The reader on hand-made captures: link types, pcap variants, pcapng, fragments, filters,
//! damaged input.

mod agreement;

use agreement::message;

use etherparse::PacketBuilder;
use ldplayer_dns::DnsError;
use ldplayer_trace::capture::{read_capture_bytes, CaptureOptions, CaptureReader, Keep};
use ldplayer_trace::{Collect, Proto, SkipReason, Source, TraceError};
use proptest::prelude::*;
use std::net::SocketAddr;

const SRC4: [u8; 4] = [192, 0, 2, 1];
const DST4: [u8; 4] = [192, 0, 2, 53];

fn udp4(payload: &[u8], sport: u16, dport: u16) -> Vec<u8> {
    let mut v = Vec::new();
    PacketBuilder::ipv4(SRC4, DST4, 64)
        .udp(sport, dport)
        .write(&mut v, payload)
        .unwrap();
    v
}

fn udp6(payload: &[u8]) -> Vec<u8> {
    let mut src = [0u8; 16];
    src[0] = 0x20;
    src[1] = 0x01;
    src[15] = 1;
    let mut dst = src;
    dst[15] = 0x53;
    let mut v = Vec::new();
    PacketBuilder::ipv6(src, dst, 64)
        .udp(40000, 53)
        .write(&mut v, payload)
        .unwrap();
    v
}

/// A little-endian (or big-endian) pcap with microsecond or nanosecond timestamps.
fn pcap(link: u32, nanos: bool, big: bool, packets: &[(i64, Vec<u8>)]) -> Vec<u8> {
    let u32b = |v: u32| {
        if big {
            v.to_be_bytes()
        } else {
            v.to_le_bytes()
        }
    };
    let u16b = |v: u16| {
        if big {
            v.to_be_bytes()
        } else {
            v.to_le_bytes()
        }
    };
    let mut f = Vec::new();
    f.extend_from_slice(&u32b(if nanos { 0xA1B2_3C4D } else { 0xA1B2_C3D4 }));
    f.extend_from_slice(&u16b(2));
    f.extend_from_slice(&u16b(4));
    f.extend_from_slice(&[0; 8]);
    f.extend_from_slice(&u32b(262_144));
    f.extend_from_slice(&u32b(link));
    for (t, data) in packets {
        let frac = if nanos {
            t % 1_000_000_000
        } else {
            t % 1_000_000_000 / 1000
        };
        f.extend_from_slice(&u32b((t / 1_000_000_000) as u32));
        f.extend_from_slice(&u32b(frac as u32));
        f.extend_from_slice(&u32b(data.len() as u32));
        f.extend_from_slice(&u32b(data.len() as u32));
        f.extend_from_slice(data);
    }
    f
}

fn read(data: &[u8]) -> Collect {
    read_with(data, CaptureOptions::default())
}

fn read_with(data: &[u8], options: CaptureOptions) -> Collect {
    let mut c = Collect::default();
    CaptureReader::new(data, options)
        .unwrap()
        .run(&mut c)
        .unwrap();
    c
}

fn ether(ethertype: u16, tags: &[u16], ip: &[u8]) -> Vec<u8> {
    let mut f = vec![2, 0, 0, 0, 0, 2, 2, 0, 0, 0, 0, 1];
    for &t in tags {
        f.extend_from_slice(&t.to_be_bytes());
        f.extend_from_slice(&[0, 7]); // VLAN 7
    }
    f.extend_from_slice(&ethertype.to_be_bytes());
    f.extend_from_slice(ip);
    f
}

#[test]
fn link_types() {
    let q = message(1, false, 0);
    let ip4 = udp4(&q, 40000, 53);
    let ip6 = udp6(&q);
    let mut padded = ether(0x0800, &[], &ip4);
    padded.extend_from_slice(&[0xEE; 24]); // Ethernet padding / trailer junk
    let sll = |proto: u16, ip: &[u8]| {
        let mut f = vec![0, 0, 0, 1, 0, 6, 2, 0, 0, 0, 0, 1, 0, 0];
        f.extend_from_slice(&proto.to_be_bytes());
        f.extend_from_slice(ip);
        f
    };
    let sll2 = |proto: u16, ip: &[u8]| {
        let mut f = proto.to_be_bytes().to_vec();
        f.extend_from_slice(&[0, 0, 0, 0, 0, 2, 1, 0, 0, 6, 2, 0, 0, 0, 0, 1, 0, 0]);
        f.extend_from_slice(ip);
        f
    };
    let family = |fam: [u8; 4], ip: &[u8]| {
        let mut f = fam.to_vec();
        f.extend_from_slice(ip);
        f
    };
    let cases: Vec<(&str, u32, Vec<u8>, bool)> = vec![
        ("ethernet", 1, ether(0x0800, &[], &ip4), false),
        ("ethernet ipv6", 1, ether(0x86DD, &[], &ip6), true),
        ("802.1Q", 1, ether(0x0800, &[0x8100], &ip4), false),
        ("QinQ", 1, ether(0x86DD, &[0x88A8, 0x8100], &ip6), true),
        ("padding", 1, padded, false),
        ("sll", 113, sll(0x0800, &ip4), false),
        ("sll ipv6", 113, sll(0x86DD, &ip6), true),
        ("sll2", 276, sll2(0x0800, &ip4), false),
        ("sll2 ipv6", 276, sll2(0x86DD, &ip6), true),
        ("raw", 101, ip4.clone(), false),
        ("raw ipv6", 101, ip6.clone(), true),
        ("dlt 12", 12, ip4.clone(), false),
        ("dlt 14", 14, ip6.clone(), true),
        ("ipv4", 228, ip4.clone(), false),
        ("ipv6", 229, ip6.clone(), true),
        ("null le", 0, family([2, 0, 0, 0], &ip4), false),
        ("null be", 0, family([0, 0, 0, 2], &ip4), false),
        ("null darwin ipv6", 0, family([30, 0, 0, 0], &ip6), true),
        ("null linux ipv6", 0, family([10, 0, 0, 0], &ip6), true),
        ("loop", 108, family([0, 0, 0, 2], &ip4), false),
        ("loop ipv6", 108, family([0, 0, 0, 24], &ip6), true),
    ];
    for (name, link, frame, v6) in cases {
        let file = pcap(link, true, false, &[(1_700_000_000_123_456_789, frame)]);
        let c = read(&file);
        assert_eq!(c.records.len(), 1, "{name}: {:?}", c.skipped);
        let r = &c.records[0];
        assert_eq!(r.wire, q, "{name}");
        assert_eq!(r.time_ns, 1_700_000_000_123_456_789, "{name}");
        assert_eq!(r.proto, Proto::Udp);
        assert_eq!(r.conn, 0);
        assert_eq!(r.dst.port(), 53);
        assert_eq!(r.src.port(), 40000);
        assert_eq!(r.src.is_ipv6(), v6, "{name}");
        if !v6 {
            assert_eq!(r.src, SocketAddr::from((SRC4, 40000)));
        }
        assert_eq!(c.skipped.total(), 0, "{name}");
    }
}

#[test]
fn unsupported_link_type_and_non_ip_frames() {
    let q = message(1, false, 0);
    let ip4 = udp4(&q, 40000, 53);
    let file = pcap(105, false, false, &[(0, ip4.clone()), (1000, ip4.clone())]);
    let c = read(&file);
    assert!(c.records.is_empty());
    assert_eq!(c.skipped.get(SkipReason::UnsupportedLinkType), 2);
    // ARP and non-DNS UDP are not DNS: ignored, not skipped.
    let arp = ether(0x0806, &[], &[0; 28]);
    let other = ether(0x0800, &[], &udp4(&q, 40000, 80));
    let c = read(&pcap(1, false, false, &[(0, arp), (0, other)]));
    assert!(c.records.is_empty());
    assert_eq!(c.skipped.total(), 0);
}

#[test]
fn pcap_variants() {
    let q = message(1, false, 0);
    let times = [1_600_000_000_000_001_000i64, 1_600_000_001_999_999_000];
    for big in [false, true] {
        for nanos in [false, true] {
            let pkts: Vec<_> = times.iter().map(|&t| (t, udp4(&q, 1, 53))).collect();
            let c = read(&pcap(101, nanos, big, &pkts));
            let got: Vec<i64> = c.records.iter().map(|r| r.time_ns).collect();
            assert_eq!(got, times, "big {big} nanos {nanos}");
        }
    }
}

#[test]
fn keep_filter_and_ports() {
    let q = message(1, false, 0);
    let r = message(1, true, 0);
    let pkts = vec![
        (0, udp4(&q, 40000, 53)),
        (1, udp4(&r, 53, 40000)),
        (2, udp4(&q, 40000, 5353)),
    ];
    let file = pcap(101, true, false, &pkts);
    let count = |keep, ports: Vec<u16>| {
        read_with(
            &file,
            CaptureOptions {
                keep,
                dns_ports: ports,
                ..CaptureOptions::default()
            },
        )
        .records
        .len()
    };
    assert_eq!(count(Keep::All, vec![53]), 2);
    assert_eq!(count(Keep::Queries, vec![53]), 1);
    assert_eq!(count(Keep::Responses, vec![53]), 1);
    assert_eq!(count(Keep::All, vec![53, 5353]), 3);
    assert_eq!(count(Keep::Queries, vec![5353]), 1);
}

#[test]
fn malformed_dns_and_packets_are_skipped_with_reasons() {
    let mut bad = message(1, false, 0);
    bad[5] = 9; // nine questions
    let mut cut_udp = udp4(&message(2, false, 0), 1, 53);
    cut_udp.truncate(30); // cut by a snap length
    let mut bad_ip = udp4(&message(3, false, 0), 1, 53);
    bad_ip[0] = 0x43; // header length 12
    let pkts = vec![
        (0, udp4(&bad, 1, 53)),
        (0, cut_udp),
        (0, bad_ip),
        (0, vec![0x45]),
        (0, udp4(&message(4, false, 0), 1, 53)),
    ];
    let file = pcap(101, true, false, &pkts);
    let dropping = read_with(
        &file,
        CaptureOptions {
            keep_malformed: false,
            ..CaptureOptions::default()
        },
    );
    assert_eq!(dropping.records.len(), 1);
    assert_eq!(dropping.skipped.get(SkipReason::TruncatedPacket), 2);
    assert_eq!(dropping.skipped.get(SkipReason::MalformedIp), 1);
    assert_eq!(
        dropping
            .skipped
            .get(SkipReason::Dns(DnsError::AbsurdCounts)),
        1
    );
    assert_eq!(dropping.skipped.total(), 4);
    assert_eq!(dropping.malformed.total(), 0);
    // By default the malformed message is kept, byte for byte, and noted.
    let keeping = read(&file);
    let wires: Vec<&[u8]> = keeping.records.iter().map(|r| &r.wire[..]).collect();
    assert_eq!(wires, [&bad[..], &message(4, false, 0)[..]]);
    assert_eq!(keeping.skipped.total(), 3);
    assert_eq!(
        keeping
            .malformed
            .get(SkipReason::Dns(DnsError::AbsurdCounts)),
        1
    );
    // A payload shorter than a header is never a message.
    let short = read(&pcap(101, true, false, &[(0, udp4(&bad[..11], 1, 53))]));
    assert_eq!(short.records.len(), 0);
    assert_eq!(short.skipped.get(SkipReason::Dns(DnsError::ShortHeader)), 1);
}

#[test]
fn the_census_names_the_ports_the_traffic_was_on() {
    let q = message(1, false, 0);
    let r = message(1, true, 0);
    let mut pkts = Vec::new();
    for i in 0..5u16 {
        pkts.push((0, udp4(&q, 40000 + i, 5392)));
        pkts.push((1, udp4(&r, 5392, 40000 + i)));
    }
    pkts.push((2, udp4(&q, 1234, 4321)));
    let file = pcap(101, true, false, &pkts);
    let mut reader = CaptureReader::new(&file[..], CaptureOptions::default()).unwrap();
    let mut sink = Collect::default();
    reader.run(&mut sink).unwrap();
    assert_eq!(sink.records.len(), 0);
    let census = reader.census();
    assert_eq!((census.dns_packets(), census.other_packets()), (0, 11));
    assert_eq!(census.busiest(3), vec![(5392, 10), (40000, 2), (40001, 2)]);
    // On the right port, the same capture is DNS.
    let mut reader = CaptureReader::new(
        &file[..],
        CaptureOptions {
            dns_ports: vec![5392],
            ..CaptureOptions::default()
        },
    )
    .unwrap();
    let mut sink = Collect::default();
    reader.run(&mut sink).unwrap();
    assert_eq!(sink.records.len(), 10);
    assert_eq!(reader.census().dns_packets(), 10);
    assert_eq!(reader.census().busiest(3), vec![(1234, 1), (4321, 1)]);
}

/// Splits the IP payload of an IPv4 packet into fragments (offsets multiple of 8).
fn fragment4(packet: &[u8], size: usize, id: u16) -> Vec<Vec<u8>> {
    let payload = &packet[20..];
    let mut out = Vec::new();
    let mut off = 0;
    while off < payload.len() {
        let end = (off + size).min(payload.len());
        let mut h = packet[..20].to_vec();
        h[2..4].copy_from_slice(&((20 + end - off) as u16).to_be_bytes());
        h[4..6].copy_from_slice(&id.to_be_bytes());
        let more = if end < payload.len() { 0x2000 } else { 0 };
        h[6..8].copy_from_slice(&(((off / 8) as u16) | more).to_be_bytes());
        h.extend_from_slice(&payload[off..end]);
        out.push(h);
        off = end;
    }
    out
}

/// The same for IPv6, with a fragment header.
fn fragment6(packet: &[u8], size: usize, id: u32) -> Vec<Vec<u8>> {
    let payload = &packet[40..];
    let nh = packet[6];
    let mut out = Vec::new();
    let mut off = 0;
    while off < payload.len() {
        let end = (off + size).min(payload.len());
        let mut h = packet[..40].to_vec();
        h[4..6].copy_from_slice(&((8 + end - off) as u16).to_be_bytes());
        h[6] = 44;
        let more = u16::from(end < payload.len());
        h.extend_from_slice(&[nh, 0]);
        h.extend_from_slice(&((off as u16) | more).to_be_bytes());
        h.extend_from_slice(&id.to_be_bytes());
        h.extend_from_slice(&payload[off..end]);
        out.push(h);
        off = end;
    }
    out
}

#[test]
fn ip_fragments_reassemble_in_any_order() {
    let big = message(7, true, 4000);
    for v6 in [false, true] {
        let frags = if v6 {
            fragment6(&udp6(&big), 1232, 99)
        } else {
            fragment4(&udp4(&big, 53, 40000), 1480, 99)
        };
        assert!(frags.len() >= 3);
        let mut order: Vec<_> = frags.iter().rev().cloned().collect();
        order.insert(1, frags[1].clone()); // a duplicate
                                           // Another datagram's first fragment that never completes.
        order.push(frags[0].clone());
        let last = order.len() - 1;
        if v6 {
            order[last][47] ^= 1; // another identification
        } else {
            order[last][5] ^= 1;
        }
        let pkts: Vec<_> = order.into_iter().map(|f| (5, f)).collect();
        let c = read(&pcap(101, true, false, &pkts));
        assert_eq!(c.records.len(), 1, "v6 {v6}: {:?}", c.skipped);
        assert_eq!(c.records[0].wire, big);
        assert_eq!(c.skipped.get(SkipReason::IpFragmentIncomplete), 1);
    }
}

#[test]
fn fragment_memory_bound_and_timeout() {
    let big = message(7, true, 4000);
    let frags = fragment4(&udp4(&big, 53, 40000), 1480, 1);
    // Too little memory for even one datagram: overflow.
    let pkts: Vec<_> = frags.iter().map(|f| (0, f.clone())).collect();
    let c = read_with(
        &pcap(101, true, false, &pkts),
        CaptureOptions {
            max_frag_bytes: 2000,
            ..CaptureOptions::default()
        },
    );
    assert!(c.records.is_empty());
    assert!(c.skipped.get(SkipReason::IpFragmentOverflow) >= 1);
    // The last fragment comes after the timeout.
    let mut pkts: Vec<_> = frags.iter().map(|f| (0, f.clone())).collect();
    let n = pkts.len();
    pkts[n - 1].0 = 31_000_000_000;
    let c = read(&pcap(101, true, false, &pkts));
    assert!(c.records.is_empty());
    assert_eq!(c.skipped.get(SkipReason::IpFragmentIncomplete), 2);
}

/// pcapng blocks, little-endian.
fn ng_block(kind: u32, body: &[u8]) -> Vec<u8> {
    let mut body = body.to_vec();
    while body.len() & 3 != 0 {
        body.push(0);
    }
    let len = (12 + body.len()) as u32;
    let mut b = kind.to_le_bytes().to_vec();
    b.extend_from_slice(&len.to_le_bytes());
    b.extend_from_slice(&body);
    b.extend_from_slice(&len.to_le_bytes());
    b
}

fn shb() -> Vec<u8> {
    let mut body = 0x1A2B_3C4Du32.to_le_bytes().to_vec();
    body.extend_from_slice(&1u16.to_le_bytes());
    body.extend_from_slice(&0u16.to_le_bytes());
    body.extend_from_slice(&(-1i64).to_le_bytes());
    ng_block(0x0A0D_0D0A, &body)
}

fn idb(link: u16, tsresol: Option<u8>) -> Vec<u8> {
    let mut body = link.to_le_bytes().to_vec();
    body.extend_from_slice(&[0, 0]);
    body.extend_from_slice(&0u32.to_le_bytes());
    if let Some(r) = tsresol {
        body.extend_from_slice(&9u16.to_le_bytes());
        body.extend_from_slice(&1u16.to_le_bytes());
        body.extend_from_slice(&[r, 0, 0, 0]);
        body.extend_from_slice(&[0, 0, 0, 0]); // opt_endofopt
    }
    ng_block(1, &body)
}

fn epb(iface: u32, ts: u64, data: &[u8]) -> Vec<u8> {
    let mut body = iface.to_le_bytes().to_vec();
    body.extend_from_slice(&((ts >> 32) as u32).to_le_bytes());
    body.extend_from_slice(&(ts as u32).to_le_bytes());
    body.extend_from_slice(&(data.len() as u32).to_le_bytes());
    body.extend_from_slice(&(data.len() as u32).to_le_bytes());
    body.extend_from_slice(data);
    ng_block(6, &body)
}

fn spb(data: &[u8]) -> Vec<u8> {
    let mut body = (data.len() as u32).to_le_bytes().to_vec();
    body.extend_from_slice(data);
    ng_block(3, &body)
}

fn pcapng_two_interfaces() -> Vec<u8> {
    let q = message(1, false, 0);
    let r = message(1, true, 0);
    let mut f = shb();
    f.extend(idb(1, None)); // Ethernet, microseconds
    f.extend(idb(101, Some(9))); // raw IP, nanoseconds
    f.extend(idb(113, Some(0x80 | 20))); // SLL, 2^-20 s
    f.extend(epb(
        0,
        1_700_000_000_000_001,
        &ether(0x0800, &[], &udp4(&q, 40000, 53)),
    ));
    f.extend(ng_block(0x0000_0BAD, &[1, 2, 3, 4])); // an unknown block: ignored
    f.extend(epb(1, 1_700_000_000_000_000_002, &udp4(&r, 53, 40000)));
    f.extend(spb(&ether(0x0800, &[], &udp4(&q, 40001, 53))));
    let mut sll = vec![0, 0, 0, 1, 0, 6, 2, 0, 0, 0, 0, 1, 0, 0, 0x08, 0];
    sll.extend(udp4(&q, 40002, 53));
    f.extend(epb(2, 3 << 20, &sll));
    f
}

#[test]
fn pcapng_interfaces_with_their_own_link_types_and_resolutions() {
    let c = read(&pcapng_two_interfaces());
    assert_eq!(c.skipped.total(), 0, "{:?}", c.skipped);
    let got: Vec<(i64, u16)> = c
        .records
        .iter()
        .map(|r| (r.time_ns, r.src.port()))
        .collect();
    assert_eq!(
        got,
        vec![
            (1_700_000_000_000_001_000, 40000),
            (1_700_000_000_000_000_002, 53),
            // A simple packet block has no time: the last one seen.
            (1_700_000_000_000_000_002, 40001),
            (3_000_000_000, 40002),
        ]
    );
}

#[test]
fn pcapng_packet_on_an_undeclared_interface_is_a_bad_block() {
    let mut f = shb();
    f.extend(idb(101, None));
    f.extend(epb(5, 0, &udp4(&message(1, false, 0), 1, 53)));
    f.extend(epb(0, 0, &udp4(&message(1, false, 0), 1, 53)));
    let c = read(&f);
    assert_eq!(c.records.len(), 1);
    assert_eq!(c.skipped.get(SkipReason::BadBlock), 1);
}

#[test]
fn not_a_capture() {
    for data in [
        &b""[..],
        b"abc",
        b"hello world, this is not a capture at all",
    ] {
        let mut c = Collect::default();
        let e = read_capture_bytes(data, &CaptureOptions::default(), &mut c).unwrap_err();
        assert!(
            matches!(&e, TraceError::Format(m) if m == "not a pcap or pcapng capture"),
            "{e:?}"
        );
    }
}

#[test]
fn not_a_capture_fails_when_opened() {
    let e = CaptureReader::new(&b"GIF89a, not a capture"[..], CaptureOptions::default()).err();
    assert!(matches!(e, Some(TraceError::Format(_))), "{e:?}");
}

#[test]
fn truncated_files_keep_what_was_read() {
    let q = message(1, false, 0);
    let pkts: Vec<_> = (0..3).map(|i| (i, udp4(&q, 1, 53))).collect();
    for file in [pcap(101, true, false, &pkts), pcapng_two_interfaces()] {
        let full = read(&file).records.len();
        for cut in 4..file.len() {
            let mut c = Collect::default();
            let r = read_capture_bytes(&file[..cut], &CaptureOptions::default(), &mut c);
            assert!(r.is_ok(), "cut at {cut}: {r:?}");
            assert!(c.records.len() <= full);
            let whole = c.skipped.get(SkipReason::TruncatedFile) == 0;
            if !whole {
                assert_eq!(c.skipped.get(SkipReason::TruncatedFile), 1);
            }
        }
        // A cut in the last packet keeps the ones before.
        let mut c = Collect::default();
        read_capture_bytes(&file[..file.len() - 3], &CaptureOptions::default(), &mut c).unwrap();
        assert_eq!(c.records.len(), full - 1);
        assert_eq!(c.skipped.get(SkipReason::TruncatedFile), 1);
    }
}

#[test]
fn absurd_record_length_is_an_error_not_an_allocation() {
    let q = message(1, false, 0);
    let mut file = pcap(
        101,
        true,
        false,
        &[(0, udp4(&q, 1, 53)), (0, udp4(&q, 1, 53))],
    );
    let second = 24 + 16 + udp4(&q, 1, 53).len();
    file[second + 8..second + 12].copy_from_slice(&u32::MAX.to_le_bytes());
    let mut c = Collect::default();
    let r = read_capture_bytes(&file, &CaptureOptions::default(), &mut c);
    assert_eq!(c.records.len(), 1);
    assert!(matches!(r, Err(TraceError::Format(_))), "{r:?}");
}

#[test]
fn reads_from_a_trickling_reader() {
    /// Returns at most 3 bytes per read.
    struct Trickle<'a>(&'a [u8]);
    impl std::io::Read for Trickle<'_> {
        fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
            let n = buf.len().min(3).min(self.0.len());
            buf[..n].copy_from_slice(&self.0[..n]);
            self.0 = &self.0[n..];
            Ok(n)
        }
    }
    let file = pcapng_two_interfaces();
    let mut c = Collect::default();
    CaptureReader::new(Trickle(&file), CaptureOptions::default())
        .unwrap()
        .run(&mut c)
        .unwrap();
    assert_eq!(c.records.len(), 4);
}

#[test]
fn large_blocks_grow_the_buffer() {
    let mut frame = udp4(&message(1, false, 0), 1, 53);
    frame.resize(3 << 20, 0); // 3 MiB of trailer after the IP packet
    let file = pcap(101, true, false, &[(0, frame.clone()), (1, frame)]);
    let c = read(&file);
    assert_eq!(c.records.len(), 2);
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]

    /// Damaged captures never panic.
    #[test]
    fn damaged_captures_never_panic(
        ng in any::<bool>(),
        edits in proptest::collection::vec((any::<usize>(), any::<u8>()), 1..20),
        cut in any::<usize>(),
    ) {
        let q = message(1, false, 0);
        let mut file = if ng {
            pcapng_two_interfaces()
        } else {
            let pkts: Vec<_> = (0..4).map(|i| (i, ether(0x0800, &[0x8100], &udp4(&q, 1, 53)))).collect();
            pcap(1, false, false, &pkts)
        };
        for (at, v) in edits {
            let i = at % file.len();
            file[i] = v;
        }
        let cut = cut % (file.len() + 1);
        let mut c = Collect::default();
        let _ = read_capture_bytes(&file[..cut], &CaptureOptions::default(), &mut c);
    }

    /// Random bytes after a valid pcap header never panic.
    #[test]
    fn garbage_packets_never_panic(
        link in prop::sample::select(vec![0u32, 1, 12, 101, 108, 113, 228, 229, 276]),
        frames in proptest::collection::vec(proptest::collection::vec(any::<u8>(), 0..200), 1..20),
    ) {
        let pkts: Vec<_> = frames.into_iter().enumerate().map(|(i, f)| (i as i64, f)).collect();
        let mut c = Collect::default();
        read_capture_bytes(&pcap(link, true, false, &pkts), &CaptureOptions::default(), &mut c).unwrap();
    }
}
