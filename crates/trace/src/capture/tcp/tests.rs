use super::*;
use crate::Collect;
use proptest::prelude::*;

const CLIENT: &str = "10.0.0.1:40000";
const SERVER: &str = "10.0.0.2:53";

/// A small DNS message: one question `n<id>.example.` type A.
fn message(id: u16, qr: bool) -> Vec<u8> {
    let mut m = Vec::new();
    m.extend_from_slice(&id.to_be_bytes());
    m.extend_from_slice(&(if qr { 0x8180u16 } else { 0x0100 }).to_be_bytes());
    m.extend_from_slice(&[0, 1, 0, 0, 0, 0, 0, 0]);
    let label = format!("n{id}");
    m.push(label.len() as u8);
    m.extend_from_slice(label.as_bytes());
    m.push(7);
    m.extend_from_slice(b"example");
    m.push(0);
    m.extend_from_slice(&[0, 1, 0, 1]);
    m
}

/// Messages with their length prefixes, as one byte stream.
fn stream(msgs: &[Vec<u8>]) -> Vec<u8> {
    let mut s = Vec::new();
    for m in msgs {
        s.extend_from_slice(&(m.len() as u16).to_be_bytes());
        s.extend_from_slice(m);
    }
    s
}

struct Harness {
    table: TcpTable,
    sink: Collect,
    packet: u64,
    keep_malformed: bool,
}

impl Harness {
    fn new() -> Self {
        Self::with_limits(TcpLimits {
            max_flows: 1000,
            max_buffer: 256 * 1024,
            gap_timeout_ns: 10_000_000_000,
            idle_timeout_ns: 300_000_000_000,
        })
    }

    fn with_limits(limits: TcpLimits) -> Self {
        Harness {
            table: TcpTable::new(limits),
            sink: Collect::default(),
            packet: 0,
            keep_malformed: false,
        }
    }

    #[allow(clippy::too_many_arguments)]
    fn seg_at(
        &mut self,
        src: &str,
        dst: &str,
        seq: u32,
        ack: Option<u32>,
        flags: u8,
        payload: &[u8],
        time: i64,
    ) {
        self.packet += 1;
        let h = TcpHeader {
            seq,
            ack: ack.unwrap_or(0),
            flags: flags | if ack.is_some() { tcp_flag::ACK } else { 0 },
            header_len: 20,
        };
        let mut out = Out {
            sink: &mut self.sink,
            packet: self.packet,
            keep: Keep::All,
            keep_malformed: self.keep_malformed,
        };
        self.table
            .segment(
                src.parse().unwrap(),
                dst.parse().unwrap(),
                &h,
                payload,
                time,
                &mut out,
            )
            .unwrap();
    }

    /// A segment from the client (`up`) or the server.
    fn seg(&mut self, up: bool, seq: u32, flags: u8, payload: &[u8]) {
        let (s, d) = if up {
            (CLIENT, SERVER)
        } else {
            (SERVER, CLIENT)
        };
        self.seg_at(s, d, seq, None, flags, payload, self.packet as i64);
    }

    fn finish(&mut self) {
        let mut out = Out {
            sink: &mut self.sink,
            packet: self.packet,
            keep: Keep::All,
            keep_malformed: self.keep_malformed,
        };
        self.table.finish(&mut out).unwrap();
    }

    fn wires(&self) -> Vec<Vec<u8>> {
        self.sink.records.iter().map(|r| r.wire.clone()).collect()
    }

    fn skipped(&self, r: SkipReason) -> u64 {
        self.sink.skipped.get(r)
    }
}

const ISN: u32 = 0xFFFF_FF00; // close to wrapping around

#[test]
fn several_messages_per_segment_and_one_message_over_several() {
    let mut h = Harness::new();
    h.seg(true, ISN, tcp_flag::SYN, &[]);
    h.seg(false, 5000, tcp_flag::SYN | tcp_flag::ACK, &[]);
    let q: Vec<_> = (1..=3).map(|i| message(i, false)).collect();
    h.seg(true, ISN.wrapping_add(1), 0, &stream(&q));
    let r = stream(&[message(1, true)]);
    for (i, chunk) in r.chunks(5).enumerate() {
        h.seg(false, 5001 + (i * 5) as u32, 0, chunk);
    }
    h.finish();
    let mut expected = q.clone();
    expected.push(message(1, true));
    assert_eq!(h.wires(), expected);
    let conns: Vec<u64> = h.sink.records.iter().map(|r| r.conn).collect();
    assert!(conns.iter().all(|&c| c == conns[0] && c != 0));
    assert_eq!(h.sink.records[3].src, SERVER.parse().unwrap());
    assert_eq!(h.sink.skipped.total(), 0);
}

#[test]
fn message_time_is_that_of_the_completing_segment() {
    let mut h = Harness::new();
    h.seg(true, 100, tcp_flag::SYN, &[]);
    let s = stream(&[message(1, false)]);
    h.seg_at(CLIENT, SERVER, 101, None, 0, &s[..10], 1000);
    h.seg_at(CLIENT, SERVER, 111, None, 0, &s[10..], 2000);
    assert_eq!(h.sink.records[0].time_ns, 2000);
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    /// Arbitrary splits, local reordering and duplicates give the same messages, in order.
    #[test]
    fn split_shuffled_duplicated_segments(
        n in 1usize..20,
        cuts in proptest::collection::vec(1usize..60, 1..80),
        swaps in proptest::collection::vec((0usize..100, 1usize..4), 0..30),
        dups in proptest::collection::vec(0usize..100, 0..10),
        with_syn in any::<bool>(),
    ) {
        let msgs: Vec<_> = (0..n as u16).map(|i| message(i, false)).collect();
        let s = stream(&msgs);
        let mut segs = Vec::new();
        let mut at = 0;
        let mut i = 0;
        while at < s.len() {
            let len = cuts[i % cuts.len()].min(s.len() - at);
            segs.push((at, len));
            at += len;
            i += 1;
        }
        // Without a SYN, the first segment must come first (it is where the stream starts).
        let first = if with_syn { 0 } else { 1 };
        for &(a, d) in &swaps {
            if segs.len() > first + 1 {
                let x = first + a % (segs.len() - first);
                let y = (x + d).min(segs.len() - 1);
                segs.swap(x, y);
            }
        }
        for &d in &dups {
            let x = d % segs.len();
            let dup = segs[x];
            segs.insert((x + 3).min(segs.len()), dup);
        }
        let mut h = Harness::new();
        if with_syn {
            h.seg(true, ISN, tcp_flag::SYN, &[]);
        }
        for &(a, len) in &segs {
            h.seg(true, ISN.wrapping_add(1).wrapping_add(a as u32), 0, &s[a..a + len]);
        }
        h.finish();
        prop_assert_eq!(h.wires(), msgs);
        prop_assert_eq!(h.sink.skipped.total(), 0);
    }

    /// A lost segment loses the messages it touches; resynchronization finds the others.
    #[test]
    fn gap_resynchronizes(
        n in 3usize..20,
        cut in 1usize..40,
        lost in 1usize..1000,
    ) {
        let msgs: Vec<_> = (0..n as u16).map(|i| message(i, false)).collect();
        let s = stream(&msgs);
        let segs: Vec<(usize, usize)> = (0..s.len()).step_by(cut).map(|a| (a, cut.min(s.len() - a))).collect();
        prop_assume!(segs.len() >= 3);
        let lost = 1 + lost % (segs.len() - 2); // neither the first nor the last
        let (gap_start, gap_len) = segs[lost];
        let gap_end = gap_start + gap_len;
        let mut h = Harness::new();
        h.seg(true, ISN, tcp_flag::SYN, &[]);
        for (i, &(a, len)) in segs.iter().enumerate() {
            if i != lost {
                h.seg(true, ISN.wrapping_add(1).wrapping_add(a as u32), 0, &s[a..a + len]);
            }
        }
        h.finish();
        let mut expected = Vec::new();
        let mut at = 0;
        for m in &msgs {
            let end = at + 2 + m.len();
            if end <= gap_start || at >= gap_end {
                expected.push(m.clone());
            }
            at = end;
        }
        prop_assert_eq!(h.wires(), expected);
        prop_assert_eq!(h.skipped(SkipReason::TcpGap), 1);
    }
}

#[test]
fn capture_starting_mid_connection() {
    let msgs: Vec<_> = (0..5).map(|i| message(i, false)).collect();
    let s = stream(&msgs);
    // At a message boundary: everything, nothing skipped.
    let mut h = Harness::new();
    h.seg(true, 7, 0, &s);
    h.finish();
    assert_eq!(h.wires(), msgs);
    assert_eq!(h.sink.skipped.total(), 0);
    // In the middle of the first message: the rest, one gap.
    let mut h = Harness::new();
    h.seg(true, 7, 0, &s[5..30]);
    h.seg(true, 7 + 25, 0, &s[30..]);
    h.finish();
    assert_eq!(h.wires(), msgs[1..].to_vec());
    assert_eq!(h.skipped(SkipReason::TcpGap), 1);
}

#[test]
fn junk_between_messages_is_skipped() {
    let msgs: Vec<_> = (0..4).map(|i| message(i, false)).collect();
    let mut s = stream(&msgs[..2]);
    s.extend_from_slice(&[0, 3, 0xFF, 0xFF, 0x12]); // a length too short, then noise
    s.extend_from_slice(&stream(&msgs[2..]));
    let mut h = Harness::new();
    h.seg(true, 1, tcp_flag::SYN, &[]);
    h.seg(true, 2, 0, &s);
    h.finish();
    assert_eq!(h.wires(), msgs);
    assert_eq!(h.skipped(SkipReason::TcpJunk), 1);
    // Junk at the end of the stream.
    let mut h = Harness::new();
    h.seg(true, 1, tcp_flag::SYN, &[]);
    let mut s = stream(&msgs);
    s.extend_from_slice(b"\x00\x20 some trailing junk");
    h.seg(true, 2, 0, &s);
    h.seg(true, 2 + s.len() as u32, tcp_flag::FIN, &[]);
    assert_eq!(h.wires(), msgs);
    assert_eq!(h.skipped(SkipReason::TcpJunk), 1);
}

#[test]
fn malformed_message_in_good_framing_counts_as_dns_error() {
    let msgs: Vec<_> = (0..3).map(|i| message(i, false)).collect();
    let mut bad = message(9, false);
    bad[12] = 0xC0; // a compression pointer into the header
    let mut all = msgs.clone();
    all.insert(1, bad);
    let mut h = Harness::new();
    h.seg(true, 1, tcp_flag::SYN, &[]);
    h.seg(true, 2, 0, &stream(&all));
    h.finish();
    assert_eq!(h.wires(), msgs);
    assert_eq!(h.sink.skipped.total(), 1);
    assert!(matches!(
        h.sink.skipped.iter().next(),
        Some((SkipReason::Dns(_), 1))
    ));
}

#[test]
fn malformed_message_in_good_framing_is_kept_when_asked() {
    let msgs: Vec<_> = (0..3).map(|i| message(i, false)).collect();
    let mut bad = message(9, false);
    bad[12] = 0xC0; // a compression pointer into the header
    let mut last_bad = message(10, false);
    last_bad[5] = 7; // seven questions: absurd counts
    let mut all = msgs.clone();
    all.insert(1, bad.clone());
    all.push(last_bad.clone());
    let mut h = Harness::new();
    h.keep_malformed = true;
    h.seg(true, 1, tcp_flag::SYN, &[]);
    // Split so that the bad message is held while the next one is still incomplete.
    let s = stream(&all);
    let cut = 2 + msgs[0].len() + 2 + bad.len() + 5;
    h.seg(true, 2, 0, &s[..cut]);
    h.seg(true, 2 + cut as u32, tcp_flag::FIN, &s[cut..]);
    h.finish();
    let want = vec![
        msgs[0].clone(),
        bad,
        msgs[1].clone(),
        msgs[2].clone(),
        last_bad,
    ];
    assert_eq!(h.wires(), want);
    assert_eq!(h.sink.skipped.total(), 0);
    assert_eq!(
        h.sink.malformed.get(SkipReason::Dns(DnsError::BadPointer)),
        1
    );
    assert_eq!(
        h.sink
            .malformed
            .get(SkipReason::Dns(DnsError::AbsurdCounts)),
        1
    );
    // Junk that is not followed by a message right after its "length" stays junk.
    let mut h = Harness::new();
    h.keep_malformed = true;
    h.seg(true, 1, tcp_flag::SYN, &[]);
    let mut s = stream(&msgs[..1]);
    s.extend_from_slice(&[0, 20, 0xff, 0xff, 0xff]); // a length, then a header that is cut
    s.extend_from_slice(&stream(&msgs[1..]));
    h.seg(true, 2, 0, &s);
    h.finish();
    assert_eq!(h.wires(), msgs);
    assert_eq!(h.sink.malformed.total(), 0);
    assert_eq!(h.skipped(SkipReason::TcpJunk), 1);
}

#[test]
fn connection_numbers() {
    let q = stream(&[message(1, false)]);
    let mut h = Harness::new();
    h.seg(true, 100, tcp_flag::SYN, &[]);
    h.seg(true, 100, tcp_flag::SYN, &[]); // retransmitted SYN: same connection
    h.seg(true, 101, 0, &q);
    h.seg(true, 101 + q.len() as u32, tcp_flag::FIN, &[]);
    h.seg(true, 9000, tcp_flag::SYN, &[]); // the 4-tuple again: a new connection
    h.seg(true, 9001, 0, &q);
    h.seg_at("10.0.0.3:1234", SERVER, 5, None, 0, &q, 0); // another one, without SYN
    h.finish();
    let conns: Vec<u64> = h.sink.records.iter().map(|r| r.conn).collect();
    assert_eq!(conns, vec![1, 2, 3]);
}

#[test]
fn acknowledged_hole_is_skipped_at_once() {
    let msgs: Vec<_> = (0..3).map(|i| message(i, true)).collect();
    let s = stream(&msgs);
    let l0 = 2 + msgs[0].len();
    let l1 = 2 + msgs[1].len();
    let mut h = Harness::new();
    h.seg_at(CLIENT, SERVER, 10, None, tcp_flag::SYN, &[], 0);
    h.seg_at(SERVER, CLIENT, 500, Some(11), tcp_flag::SYN, &[], 0);
    h.seg_at(SERVER, CLIENT, 501, Some(11), 0, &s[..l0], 1);
    // msgs[1] is not captured; msgs[2] is.
    h.seg_at(
        SERVER,
        CLIENT,
        501 + (l0 + l1) as u32,
        Some(11),
        0,
        &s[l0 + l1..],
        2,
    );
    assert_eq!(h.sink.records.len(), 1);
    // The client acknowledges everything: the hole will never be filled.
    h.seg_at(CLIENT, SERVER, 11, Some(501 + s.len() as u32), 0, &[], 3);
    assert_eq!(h.wires(), vec![msgs[0].clone(), msgs[2].clone()]);
    assert_eq!(h.sink.records[1].time_ns, 2);
    assert_eq!(h.skipped(SkipReason::TcpGap), 1);
}

#[test]
fn buffer_limit_gives_up_the_hole() {
    let mut h = Harness::with_limits(TcpLimits {
        max_flows: 10,
        max_buffer: 0, // raised to the minimum: two largest messages
        gap_timeout_ns: 10_000_000_000,
        idle_timeout_ns: 300_000_000_000,
    });
    h.seg(true, 1, tcp_flag::SYN, &[]);
    let msgs: Vec<_> = (0..12_000).map(|i| message(i, false)).collect();
    let s = stream(&msgs);
    // Everything but the first byte: it all waits on the hole until the limit.
    for (i, chunk) in s[1..].chunks(1000).enumerate() {
        h.seg(true, 3 + (i * 1000) as u32, 0, chunk);
    }
    assert_eq!(h.skipped(SkipReason::TcpOverflow), 1);
    h.finish();
    assert!(h.sink.records.len() > 11_000);
    assert!(h.sink.records.len() < 12_000);
}

#[test]
fn hole_times_out() {
    let msgs: Vec<_> = (0..3).map(|i| message(i, false)).collect();
    let s = stream(&msgs);
    let l0 = 2 + msgs[0].len();
    let l1 = 2 + msgs[1].len();
    let mut h = Harness::new();
    h.seg_at(CLIENT, SERVER, 1, None, tcp_flag::SYN, &[], 0);
    h.seg_at(
        CLIENT,
        SERVER,
        2 + (l0 + l1) as u32,
        None,
        0,
        &s[l0 + l1..],
        0,
    );
    let mut out = Out {
        sink: &mut h.sink,
        packet: 3,
        keep: Keep::All,
        keep_malformed: false,
    };
    h.table.sweep(5_000_000_000, &mut out).unwrap();
    assert_eq!(h.sink.records.len(), 0);
    let mut out = Out {
        sink: &mut h.sink,
        packet: 4,
        keep: Keep::All,
        keep_malformed: false,
    };
    h.table.sweep(11_000_000_000, &mut out).unwrap();
    assert_eq!(h.wires(), vec![msgs[2].clone()]);
    assert_eq!(h.skipped(SkipReason::TcpGap), 1);
}

#[test]
fn flow_table_is_bounded() {
    let mut h = Harness::with_limits(TcpLimits {
        max_flows: 4,
        max_buffer: 1 << 20,
        gap_timeout_ns: 10_000_000_000,
        idle_timeout_ns: 300_000_000_000,
    });
    let s = stream(&[message(1, false)]);
    for port in 0..20u16 {
        let src = format!("10.0.0.9:{}", 1000 + port);
        // Half a message each: the rest never comes.
        h.seg_at(&src, SERVER, 1, None, 0, &s[..10], 0);
        assert!(h.table.len() <= 4);
    }
    assert_eq!(h.skipped(SkipReason::TcpOverflow), 16);
}

#[test]
fn rst_flushes_and_closes() {
    let msgs: Vec<_> = (0..2).map(|i| message(i, false)).collect();
    let s = stream(&msgs);
    let mut h = Harness::new();
    h.seg(true, 1, tcp_flag::SYN, &[]);
    h.seg(true, 2, 0, &s[..10]);
    h.seg(true, 12 + 5, 0, &s[15..]); // a hole at 10..15
    h.seg(false, 77, tcp_flag::RST, &[]);
    assert_eq!(h.wires(), vec![msgs[1].clone()]);
    assert_eq!(h.skipped(SkipReason::TcpGap), 1);
}
