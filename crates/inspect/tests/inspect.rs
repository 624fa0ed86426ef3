//! The inspector's counts, rates, shares and clients on traces built message by message.

use ldplayer_dns::{build, Class, EdnsFields, Fields, Question, Rcode, Rtype};
use ldplayer_inspect::Inspector;
use ldplayer_trace::{Proto, Record, Sink, SkipReason};
use std::net::SocketAddr;

fn query(qtype: Rtype, dnssec_ok: Option<bool>) -> Vec<u8> {
    build(&Fields {
        id: 1,
        qr: false,
        opcode: 0,
        flags: 0,
        rcode: Rcode::NOERROR,
        question: Some(Question {
            name: b"\x07example\x00".to_vec(),
            qtype,
            qclass: Class::IN,
        }),
        edns: dnssec_ok.map(|d| EdnsFields {
            version: 0,
            udp_size: 1232,
            dnssec_ok: d,
            options: vec![],
        }),
    })
    .unwrap()
}

fn response(rcode: Rcode) -> Vec<u8> {
    let mut f =
        ldplayer_dns::Fields::of(&ldplayer_dns::Message::parse(&query(Rtype::A, None)).unwrap());
    f.qr = true;
    f.rcode = rcode;
    build(&f).unwrap()
}

fn feed(ins: &mut Inspector, t_ns: i64, client: u8, proto: Proto, wire: &[u8], qr: bool) {
    let c = SocketAddr::from(([10, 0, 0, client], 5000));
    let s = SocketAddr::from(([192, 0, 2, 1], 53));
    let (src, dst) = if qr { (s, c) } else { (c, s) };
    ins.record(&Record {
        time_ns: t_ns,
        src,
        dst,
        proto,
        conn: if proto == Proto::Udp {
            0
        } else {
            client as u64
        },
        wire,
    })
    .unwrap();
}

#[test]
fn counts_rates_shares_and_clients() {
    let mut ins = Inspector::new();
    // 200 clients; client 0 sends 300 queries, the others 1 each: 500 queries over 5 seconds,
    // 100 per second, one every 10 ms.
    let a = query(Rtype::A, Some(true));
    let aaaa = query(Rtype::AAAA, Some(false));
    let plain = query(Rtype::NS, None);
    for i in 0..500i64 {
        let (client, wire) = if i % 5 < 3 {
            (0u8, &a)
        } else {
            ((i % 199 + 1) as u8, if i % 5 == 3 { &aaaa } else { &plain })
        };
        feed(
            &mut ins,
            1_000_000_000_000 + i * 10_000_000,
            client,
            if i % 10 == 0 { Proto::Tcp } else { Proto::Udp },
            wire,
            false,
        );
    }
    for i in 0..50 {
        feed(
            &mut ins,
            1_000_000_000_000 + i * 100_000_000,
            1,
            Proto::Udp,
            &response(if i < 40 {
                Rcode::NOERROR
            } else {
                Rcode::NXDOMAIN
            }),
            true,
        );
    }
    ins.skipped(SkipReason::TcpGap, 7);
    let s = ins.summary();
    assert_eq!((s.messages, s.queries, s.responses), (550, 500, 50));
    assert_eq!(s.start, Some(1000.0));
    assert!((s.duration_s - 4.99).abs() < 1e-9);
    assert!((s.interarrival_mean_s.unwrap() - 0.01).abs() < 1e-9);
    assert!(s.interarrival_std_s.unwrap() < 1e-9);
    let rate = s.qps_1s.unwrap();
    assert_eq!(
        (rate.bins, rate.min, rate.median, rate.max),
        (4, 100, 100, 100)
    );
    assert_eq!(s.edns_share, 0.8);
    assert_eq!(s.do_share, 0.6);
    assert_eq!(s.top_qtypes[0].name, "A");
    assert_eq!(s.top_qtypes[0].count, 300);
    assert_eq!(s.top_rcodes[0].name, "NOERROR");
    assert_eq!(s.top_rcodes[1].name, "NXDOMAIN");
    assert_eq!(s.query_transports[0].name, "udp");
    assert_eq!(s.query_transports[1].count, 50);
    // Clients: 0 plus 1..=199 minus those never drawn.
    assert!(s.unique_clients > 100);
    let busiest = s.unique_clients.div_ceil(100);
    assert_eq!(s.busiest_1pct_clients, busiest);
    assert!(s.busiest_1pct_share >= 0.6, "{}", s.busiest_1pct_share);
    assert_eq!(s.skipped[0].name, "tcp-gap");
    let json = serde_json::to_value(&s).unwrap();
    assert_eq!(json["queries"], 500);
    assert_eq!(json["responses"], 50);
    // The human summary names every figure.
    let text = s.to_string();
    for key in [
        "queries",
        "responses",
        "unique clients",
        "qps min/median/max",
        "DO share",
        "busiest 1%",
    ] {
        assert!(text.contains(key), "{key} missing from\n{text}");
    }
}

#[test]
fn empty_seconds_count_as_zero() {
    let mut ins = Inspector::new();
    let q = query(Rtype::A, None);
    for t in [0i64, 1, 5, 9] {
        for k in 0..3 {
            feed(&mut ins, t * 1_000_000_000 + k, 1, Proto::Udp, &q, false);
        }
    }
    let r = ins.summary().qps_1s.unwrap();
    // Seconds 0..=8 from the first query (the last, which holds the end, left out): 0, 1 and 5
    // have 3 queries, six are empty.
    assert_eq!((r.bins, r.min, r.median, r.max), (9, 0, 0, 3));
}

/// Queries in the first and the last second only: the first second is whole and counted.
#[test]
fn seconds_start_at_the_first_query() {
    let mut ins = Inspector::new();
    let q = query(Rtype::A, None);
    // Two queries in the first second (from 10.5 s), one 7 s later.
    for t in [10_500_000_000i64, 10_600_000_000, 17_700_000_000] {
        feed(&mut ins, t, 1, Proto::Udp, &q, false);
    }
    let r = ins.summary().qps_1s.unwrap();
    assert_eq!((r.bins, r.min, r.median, r.max), (7, 0, 0, 2));
    // Shorter than a second: no whole second to count.
    let mut short = Inspector::new();
    for t in [0i64, 400_000_000] {
        feed(&mut short, t, 1, Proto::Udp, &q, false);
    }
    assert!(short.summary().qps_1s.is_none());
}

#[test]
fn empty_trace_has_no_rates() {
    let s = Inspector::new().summary();
    assert_eq!(s.messages, 0);
    assert!(s.qps_1s.is_none() && s.start.is_none() && s.interarrival_mean_s.is_none());
}

/// Malformed messages count as queries or responses by their header, and by reason; records
/// too short for a header are "not DNS"; UPDATE and TSIG show in the opcode mix and the signed
/// count.
#[test]
fn malformed_messages_and_updates_are_counted() {
    let mut ins = Inspector::new();
    // A query whose answer count (40000) the message cannot hold, with a readable AAAA question.
    let mut absurd = query(Rtype::AAAA, None);
    absurd[6..8].copy_from_slice(&40000u16.to_be_bytes());
    // A response cut in the middle of its question.
    let cut = response(Rcode::NXDOMAIN)[..23].to_vec();
    // An UPDATE of example. signed with TSIG (algorithm gss-tsig.).
    let mut update = vec![0, 9, 0x28, 0, 0, 1, 0, 0, 0, 0, 0, 1];
    update.extend_from_slice(b"\x07example\x00\x00\x06\x00\x01");
    update.extend_from_slice(b"\x03key\x00\x00\xfa\x00\xff\x00\x00\x00\x00\x00\x1a");
    update.extend_from_slice(
        b"\x08gss-tsig\x00\x00\x00\x65\x4f\x1a\x2b\x01\x2c\x00\x00\x00\x09\x00\x00\x00\x00",
    );
    for (i, (wire, qr)) in [
        (query(Rtype::A, None), false),
        (absurd, false),
        (cut, true),
        (b"tiny".to_vec(), false),
        (update, false),
    ]
    .iter()
    .enumerate()
    {
        feed(&mut ins, i as i64, 1, Proto::Udp, wire, *qr);
    }
    let s = ins.summary();
    assert_eq!(
        (s.messages, s.queries, s.responses, s.not_dns),
        (5, 3, 1, 1)
    );
    let malformed: Vec<(&str, u64)> = s.malformed.iter().map(|c| (&c.name[..], c.count)).collect();
    assert_eq!(
        malformed,
        [
            ("dns-short-header", 1),
            ("dns-truncated", 1),
            ("dns-absurd-counts", 1)
        ]
    );
    let qtypes: Vec<(&str, u64)> = s
        .top_qtypes
        .iter()
        .map(|c| (&c.name[..], c.count))
        .collect();
    assert_eq!(qtypes, [("A", 1), ("SOA", 1), ("AAAA", 1)]);
    assert_eq!(s.top_rcodes[0].name, "NXDOMAIN");
    let opcodes: Vec<(&str, u64)> = s.opcodes.iter().map(|c| (&c.name[..], c.count)).collect();
    assert_eq!(opcodes, [("QUERY", 3), ("UPDATE", 1)]);
    assert_eq!(s.tsig_signed, 1);
    let json = serde_json::to_value(&s).unwrap();
    assert_eq!(json["malformed"][2]["name"], "dns-absurd-counts");
    assert_eq!(json["not_dns"], 1);
    let text = s.to_string();
    assert!(
        text.contains("malformed                    3: dns-short-header 1, dns-truncated 1, dns-absurd-counts 1"),
        "{text}"
    );
}
