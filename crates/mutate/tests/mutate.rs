//! The mutations on hand-built records.

use ldplayer_dns::{
    build, flag, name_from_presentation, Class, EdnsFields, Fields, Message, Question, Rcode, Rtype,
};
use ldplayer_mutate::{
    Direction, IpPrefix, MutateConfig, MutateError, MutateStats, Mutation, Mutator,
};
use ldplayer_trace::{Collect, Proto, Record, RecordBuf, Sink, SkipReason};
use std::collections::{HashMap, HashSet};
use std::net::{IpAddr, Ipv4Addr, SocketAddr};

const T0: i64 = 1_704_067_200_000_000_000;

fn server() -> SocketAddr {
    "192.0.2.53:53".parse().unwrap()
}

fn fields(name: &str, qtype: Rtype, response: bool, edns: Option<(u16, bool)>) -> Fields {
    Fields {
        id: 0x1234,
        qr: response,
        opcode: 0,
        flags: if response {
            flag::RA | flag::RD
        } else {
            flag::RD
        },
        rcode: Rcode::NOERROR,
        question: Some(Question {
            name: name_from_presentation(name).unwrap(),
            qtype,
            qclass: Class::IN,
        }),
        edns: edns.map(|(udp_size, dnssec_ok)| EdnsFields {
            version: 0,
            udp_size,
            dnssec_ok,
            options: Vec::new(),
        }),
    }
}

/// A UDP query from `client` at `T0 + offset_ns`.
fn query(
    client: &str,
    offset_ns: i64,
    name: &str,
    qtype: Rtype,
    edns: Option<(u16, bool)>,
) -> RecordBuf {
    RecordBuf {
        time_ns: T0 + offset_ns,
        src: SocketAddr::new(client.parse().unwrap(), 5353),
        dst: server(),
        proto: Proto::Udp,
        conn: 0,
        wire: build(&fields(name, qtype, false, edns)).unwrap(),
    }
}

/// The response to a query from `client`.
fn response(client: &str, offset_ns: i64, name: &str, qtype: Rtype) -> RecordBuf {
    RecordBuf {
        time_ns: T0 + offset_ns,
        src: server(),
        dst: SocketAddr::new(client.parse().unwrap(), 5353),
        proto: Proto::Udp,
        conn: 0,
        wire: build(&fields(name, qtype, true, Some((1232, false)))).unwrap(),
    }
}

fn run(seed: u64, mutations: Vec<Mutation>, input: &[RecordBuf]) -> (Vec<RecordBuf>, MutateStats) {
    let mut m = Mutator::new(MutateConfig { seed, mutations }, Collect::default()).unwrap();
    for r in input {
        m.record(&r.as_record()).unwrap();
    }
    m.finish().unwrap();
    let (sink, stats) = m.into_parts();
    assert_eq!(
        stats.records_in,
        stats.records_out + stats.filtered_total() + stats.dropped_total()
    );
    (sink.records, stats)
}

fn edns_of(r: &RecordBuf) -> Option<EdnsFields> {
    Fields::of(&Message::parse(&r.wire).unwrap()).edns
}

fn qname_of(r: &RecordBuf) -> String {
    let mut wire = Vec::new();
    Message::parse(&r.wire).unwrap().qname_wire(&mut wire);
    let mut s = String::new();
    ldplayer_dns::name_to_presentation(&wire, &mut s);
    s
}

/// `n` queries, one per client 10.x.y.z, one millisecond apart.
fn many_clients(n: u32) -> Vec<RecordBuf> {
    (0..n)
        .map(|i| {
            let ip = Ipv4Addr::from(0x0a00_0000 + i + 1).to_string();
            query(
                &ip,
                i as i64 * 1_000_000,
                "www.example.com.",
                Rtype::A,
                None,
            )
        })
        .collect()
}

fn mixed() -> Vec<RecordBuf> {
    vec![
        query(
            "10.0.0.1",
            0,
            "www.example.com.",
            Rtype::A,
            Some((1232, false)),
        ),
        response("10.0.0.1", 1_000, "www.example.com.", Rtype::A),
        query(
            "10.0.0.2",
            1_000_000_000,
            "badexample.com.",
            Rtype::AAAA,
            None,
        ),
        query(
            "2001:db8::1",
            2_000_000_000,
            "Mail.EXAMPLE.com.",
            Rtype::MX,
            Some((4096, true)),
        ),
        response("2001:db8::1", 2_000_001_000, "Mail.EXAMPLE.com.", Rtype::MX),
        query("192.168.1.1", 3_500_000_000, "example.org.", Rtype::A, None),
    ]
}

#[test]
fn no_mutations_change_nothing() {
    let input = mixed();
    let (out, stats) = run(0, vec![], &input);
    assert_eq!(out, input);
    assert_eq!((stats.records_in, stats.records_out), (6, 6));
    assert!(stats.changed.is_empty());
}

#[test]
fn skips_and_finish_go_through() {
    let mut m = Mutator::new(MutateConfig::default(), Collect::default()).unwrap();
    m.skipped(SkipReason::TextLine, 3);
    m.finish().unwrap();
    assert_eq!(m.inner().skipped.get(SkipReason::TextLine), 1);
}

#[test]
fn direction_filter() {
    let (out, stats) = run(0, vec![Mutation::Direction(Direction::Queries)], &mixed());
    assert_eq!(out.len(), 4);
    assert_eq!(stats.filtered["direction"], 2);
    let (out, _) = run(0, vec![Mutation::Direction(Direction::Responses)], &mixed());
    assert_eq!(out.len(), 2);
    assert!(out.iter().all(|r| r.src == server()));
}

#[test]
fn time_window_is_relative_to_the_first_record() {
    let window = |from_s, to_s| vec![Mutation::TimeWindow { from_s, to_s }];
    let (out, stats) = run(0, window(Some(1.0), Some(3.0)), &mixed());
    let offsets: Vec<i64> = out.iter().map(|r| r.time_ns - T0).collect();
    assert_eq!(offsets, [1_000_000_000, 2_000_000_000, 2_000_001_000]);
    assert_eq!(stats.filtered["time-window"], 3);
    let (out, _) = run(0, window(None, Some(0.000_001)), &mixed());
    assert_eq!(out.len(), 1, "the end is exclusive");
    let (out, _) = run(0, window(None, Some(0.000_002)), &mixed());
    assert_eq!(out.len(), 2);
    let (out, _) = run(0, window(Some(3.5), None), &mixed());
    assert_eq!(out.len(), 1);
}

#[test]
fn client_prefix_filter_uses_the_client_side() {
    let prefixes: Vec<IpPrefix> = vec![
        "10.0.0.0/31".parse().unwrap(),
        "2001:db8::/32".parse().unwrap(),
    ];
    let (out, stats) = run(0, vec![Mutation::ClientPrefixes(prefixes)], &mixed());
    // 10.0.0.1's query and response, 2001:db8::1's query and response.
    assert_eq!(out.len(), 4);
    assert_eq!(stats.filtered["client-prefix"], 2);
    assert!(out.iter().all(
        |r| ldplayer_mutate::client_of(&r.as_record()) != "10.0.0.2".parse::<IpAddr>().unwrap()
    ));
}

#[test]
fn qtype_filter() {
    let (out, stats) = run(
        0,
        vec![Mutation::Qtypes(vec![Rtype::A, Rtype::MX])],
        &mixed(),
    );
    assert_eq!(out.len(), 5);
    assert_eq!(stats.filtered["qtype"], 1);
}

#[test]
fn qname_suffix_filter_is_label_aware_and_case_insensitive() {
    let (out, stats) = run(
        0,
        vec![Mutation::QnameSuffixes(vec!["example.COM".into()])],
        &mixed(),
    );
    let names: Vec<String> = out.iter().map(qname_of).collect();
    assert_eq!(
        names,
        [
            "www.example.com.",
            "www.example.com.",
            "Mail.EXAMPLE.com.",
            "Mail.EXAMPLE.com."
        ]
    );
    assert_eq!(stats.filtered["qname-suffix"], 2);
    let (out, _) = run(
        0,
        vec![Mutation::QnameSuffixes(vec![
            "org.".into(),
            "badexample.com".into(),
        ])],
        &mixed(),
    );
    assert_eq!(out.len(), 2);
}

#[test]
fn messages_that_do_not_parse_fail_question_filters_and_pass_edits_unchanged() {
    let mut junk = query("10.0.0.1", 0, "a.", Rtype::A, None);
    junk.wire.truncate(14);
    let (out, stats) = run(0, vec![Mutation::Qtypes(vec![Rtype::A])], &[junk.clone()]);
    assert!(out.is_empty());
    assert_eq!(stats.filtered["qtype"], 1);
    // Without a filter or an edit that needs the message, it goes through untouched.
    let (out, _) = run(0, vec![Mutation::TimeShift(5)], &[junk.clone()]);
    assert_eq!(out[0].wire, junk.wire);
    // A query to edit that does not parse goes on byte for byte, counted as unedited; the
    // changes that do not touch the message still apply.
    let (out, stats) = run(
        0,
        vec![Mutation::ClearDo, Mutation::TimeShift(5)],
        &[junk.clone()],
    );
    assert_eq!(out.len(), 1);
    assert_eq!(out[0].wire, junk.wire);
    assert_eq!(out[0].time_ns, junk.time_ns + 5);
    assert_eq!(stats.unedited["malformed"], 1);
    assert!(stats.dropped.is_empty());
}

#[test]
fn client_share_is_per_client_and_close_to_the_share() {
    let mut input = many_clients(10_000);
    // Every client asks a second time, later.
    let again: Vec<RecordBuf> = input
        .iter()
        .map(|r| RecordBuf {
            time_ns: r.time_ns + 20_000_000_000,
            ..r.clone()
        })
        .collect();
    input.extend(again);
    let (out, stats) = run(9, vec![Mutation::ClientShare(0.3)], &input);
    let mut per_client: HashMap<IpAddr, u32> = HashMap::new();
    for r in &out {
        *per_client.entry(r.src.ip()).or_default() += 1;
    }
    assert!(per_client.values().all(|&n| n == 2), "a client was split");
    let share = per_client.len() as f64 / 10_000.0;
    assert!((share - 0.3).abs() < 0.015, "{share}");
    assert_eq!(stats.filtered["client-share"] as usize, 20_000 - out.len());
    // Reproducible with the seed, different with another.
    let (again, _) = run(9, vec![Mutation::ClientShare(0.3)], &input);
    assert_eq!(again, out);
    let (other, _) = run(10, vec![Mutation::ClientShare(0.3)], &input);
    assert_ne!(other, out);
}

#[test]
fn transport_for_all_clients_gives_one_connection_each() {
    let mut input = mixed();
    input.extend(mixed());
    let (out, stats) = run(
        0,
        vec![Mutation::Transport {
            proto: Proto::Tcp,
            client_share: 1.0,
        }],
        &input,
    );
    let mut conn_of: HashMap<IpAddr, u64> = HashMap::new();
    for r in &out {
        assert_eq!(r.proto, Proto::Tcp);
        let c = *conn_of
            .entry(ldplayer_mutate::client_of(&r.as_record()))
            .or_insert(r.conn);
        assert_eq!(c, r.conn, "one connection per client, both directions");
    }
    let mut conns: Vec<u64> = conn_of.values().copied().collect();
    conns.sort();
    assert_eq!(conns, [1, 2, 3, 4]);
    assert_eq!(conn_of[&"10.0.0.1".parse::<IpAddr>().unwrap()], 1);
    assert_eq!(stats.changed["transport"], 12);
    // And back to UDP: connection 0.
    let tcp = out.clone();
    let (udp, _) = run(
        0,
        vec![Mutation::Transport {
            proto: Proto::Udp,
            client_share: 1.0,
        }],
        &tcp,
    );
    assert!(udp.iter().all(|r| r.proto == Proto::Udp && r.conn == 0));
}

#[test]
fn transport_for_a_share_of_clients() {
    let mut input = many_clients(10_000);
    // A pre-existing TCP connection per tenth client, and a second query from each client.
    for (i, r) in input.iter_mut().enumerate() {
        if i % 10 == 0 {
            r.proto = Proto::Tcp;
            r.conn = i as u64 / 10 + 1;
        }
    }
    let again: Vec<RecordBuf> = input
        .iter()
        .map(|r| RecordBuf {
            time_ns: r.time_ns + 1,
            ..r.clone()
        })
        .collect();
    input.extend(again);
    let change = vec![Mutation::Transport {
        proto: Proto::Tls,
        client_share: 0.25,
    }];
    let (out, _) = run(3, change.clone(), &input);
    let mut seen: HashMap<IpAddr, (Proto, u64)> = HashMap::new();
    for (r, orig) in out.iter().zip(&input) {
        let e = *seen.entry(r.src.ip()).or_insert((r.proto, r.conn));
        assert_eq!(
            e,
            (r.proto, r.conn),
            "client changed transport or connection"
        );
        if r.proto == Proto::Tls {
            assert_eq!(r.conn % 2, 1);
        } else {
            assert_eq!((r.proto, r.conn), (orig.proto, orig.conn * 2));
        }
    }
    let tls = seen.values().filter(|v| v.0 == Proto::Tls).count();
    assert!((tls as f64 / 10_000.0 - 0.25).abs() < 0.015, "{tls}");
    let conns: HashSet<u64> = seen.values().map(|v| v.1).filter(|&c| c != 0).collect();
    let nonzero = seen.values().filter(|v| v.1 != 0).count();
    assert_eq!(conns.len(), nonzero, "connection numbers collide");
    let (again, _) = run(3, change, &input);
    assert_eq!(again, out);
}

#[test]
fn set_do_on_all_queries() {
    let (out, stats) = run(0, vec![Mutation::SetDo { share: 1.0 }], &mixed());
    for r in &out {
        let e = edns_of(r).unwrap();
        let msg = Message::parse(&r.wire).unwrap();
        if msg.header().qr() {
            assert!(!e.dnssec_ok, "responses are left alone");
        } else {
            assert!(e.dnssec_ok);
        }
    }
    // Queries without EDNS get it with the default size; those with keep theirs.
    assert_eq!(edns_of(&out[2]).unwrap().udp_size, 1232);
    assert_eq!(edns_of(&out[3]).unwrap().udp_size, 4096);
    assert_eq!(stats.changed["do-set"], 3);
    // Nothing but the OPT record changed.
    let mut before = Fields::of(&Message::parse(&mixed()[0].wire).unwrap());
    before.edns.as_mut().unwrap().dnssec_ok = true;
    assert_eq!(Fields::of(&Message::parse(&out[0].wire).unwrap()), before);
}

#[test]
fn set_do_on_a_share_of_queries() {
    let input = many_clients(20_000);
    let (out, _) = run(
        5,
        vec![
            Mutation::AddEdns { udp_size: 1400 },
            Mutation::SetDo { share: 0.4 },
        ],
        &input,
    );
    let dnssec_ok = out.iter().filter(|r| edns_of(r).unwrap().dnssec_ok).count();
    assert!((dnssec_ok as f64 / 20_000.0 - 0.4).abs() < 0.015);
    assert!(out.iter().all(|r| edns_of(r).unwrap().udp_size == 1400));
    let (again, _) = run(
        5,
        vec![
            Mutation::SetDo { share: 0.4 },
            Mutation::AddEdns { udp_size: 1400 },
        ],
        &input,
    );
    assert_eq!(
        again, out,
        "list order does not matter, the seed makes it reproducible"
    );
}

#[test]
fn clear_do_strip_add_and_size() {
    let (out, stats) = run(0, vec![Mutation::ClearDo], &mixed());
    assert!(!edns_of(&out[3]).unwrap().dnssec_ok);
    assert_eq!(stats.changed["do-clear"], 1);

    let (out, stats) = run(0, vec![Mutation::StripEdns], &mixed());
    assert!(edns_of(&out[0]).is_none() && edns_of(&out[3]).is_none());
    assert!(edns_of(&out[1]).is_some(), "responses are left alone");
    assert_eq!(stats.changed["edns-strip"], 2);

    let (out, stats) = run(0, vec![Mutation::AddEdns { udp_size: 512 }], &mixed());
    assert_eq!(
        edns_of(&out[0]).unwrap().udp_size,
        1232,
        "existing EDNS is kept"
    );
    let added = edns_of(&out[2]).unwrap();
    assert_eq!(
        (added.version, added.udp_size, added.dnssec_ok),
        (0, 512, false)
    );
    assert_eq!(stats.changed["edns-add"], 2);

    let (out, stats) = run(0, vec![Mutation::UdpSize(4096)], &mixed());
    assert_eq!(edns_of(&out[0]).unwrap().udp_size, 4096);
    assert!(edns_of(&out[2]).is_none());
    assert_eq!(
        stats.changed["udp-size"], 1,
        "the 4096 query already had it"
    );
}

#[test]
fn recursion_desired_set_and_cleared_on_queries_only() {
    let rd = |r: &RecordBuf| Fields::of(&Message::parse(&r.wire).unwrap()).flags & flag::RD != 0;
    let (out, stats) = run(0, vec![Mutation::RecursionDesired(false)], &mixed());
    assert!(!rd(&out[0]) && !rd(&out[2]) && !rd(&out[5]));
    assert!(rd(&out[1]), "responses are left alone");
    assert_eq!(stats.changed["rd-clear"], 4);
    // Everything else stays.
    let mut want = Fields::of(&Message::parse(&mixed()[3].wire).unwrap());
    want.flags &= !flag::RD;
    assert_eq!(Fields::of(&Message::parse(&out[3].wire).unwrap()), want);

    let (back, stats) = run(0, vec![Mutation::RecursionDesired(true)], &out);
    assert_eq!(stats.changed["rd-set"], 4);
    assert_eq!(
        back,
        mixed(),
        "setting RD again restores the original bytes"
    );
    let (_, stats) = run(0, vec![Mutation::RecursionDesired(true)], &mixed());
    assert!(
        !stats.changed.contains_key("rd-set"),
        "already set: no change"
    );
}

#[test]
fn qname_prefix_numbers_records() {
    let (out, stats) = run(0, vec![Mutation::QnamePrefix("ldp".into())], &mixed());
    let names: Vec<String> = out.iter().map(qname_of).collect();
    assert_eq!(names[0], "ldp1.www.example.com.");
    assert_eq!(names[1], "www.example.com.", "responses are left alone");
    assert_eq!(names[2], "ldp3.badexample.com.");
    assert_eq!(names[5], "ldp6.example.org.");
    assert_eq!(stats.changed["qname-prefix"], 4);
    // Everything else stays.
    let mut want = Fields::of(&Message::parse(&mixed()[3].wire).unwrap());
    want.question.as_mut().unwrap().name =
        name_from_presentation("ldp4.Mail.EXAMPLE.com.").unwrap();
    assert_eq!(Fields::of(&Message::parse(&out[3].wire).unwrap()), want);
    // Sequence numbers are input positions in hex.
    let input = many_clients(300);
    let (out, _) = run(0, vec![Mutation::QnamePrefix(String::new())], &input);
    assert_eq!(qname_of(&out[299]), "12c.www.example.com.");
}

#[test]
fn qname_prefix_drops_names_that_would_be_too_long() {
    let long = format!("{}.", vec!["a".repeat(62); 4].join("."));
    assert_eq!(name_from_presentation(&long).unwrap().len(), 253);
    let input = vec![
        query("10.0.0.1", 0, &long, Rtype::A, None),
        query("10.0.0.1", 1, "a.", Rtype::A, None),
    ];
    let (out, stats) = run(0, vec![Mutation::QnamePrefix("ldp".into())], &input);
    assert_eq!(out.len(), 1);
    assert_eq!(stats.dropped["qname-too-long"], 1);
    assert_eq!(stats.changed["qname-prefix"], 1);
}

#[test]
fn time_scale_and_shift_are_exact() {
    let (out, stats) = run(0, vec![Mutation::TimeScale(0.5)], &mixed());
    let offsets: Vec<i64> = out.iter().map(|r| r.time_ns - T0).collect();
    assert_eq!(
        offsets,
        [
            0,
            500,
            500_000_000,
            1_000_000_000,
            1_000_000_500,
            1_750_000_000
        ]
    );
    assert_eq!(stats.changed["time-scale"], 5);
    let (out, _) = run(
        0,
        vec![Mutation::TimeShift(-T0), Mutation::TimeScale(3.0)],
        &mixed(),
    );
    let times: Vec<i64> = out.iter().map(|r| r.time_ns).collect();
    assert_eq!(
        times,
        [
            0,
            3_000,
            3_000_000_000,
            6_000_000_000,
            6_000_003_000,
            10_500_000_000
        ]
    );
}

#[test]
fn anonymization_changes_the_client_side_only_and_consistently() {
    let key = Some([42; 16]);
    let (out, stats) = run(0, vec![Mutation::Anonymize { key }], &mixed());
    let input = mixed();
    assert_eq!(
        out[0].src.ip(),
        out[1].dst.ip(),
        "query and response of a client agree"
    );
    assert_ne!(out[0].src.ip(), input[0].src.ip());
    assert_eq!(out[0].src.port(), input[0].src.port());
    assert_eq!((out[0].dst, out[1].src), (server(), server()));
    assert!(out[3].src.is_ipv6());
    // 10.0.0.1 and 10.0.0.2 share 30 bits, exactly.
    let (a, b) = (out[0].src.ip(), out[2].src.ip());
    let (IpAddr::V4(a), IpAddr::V4(b)) = (a, b) else {
        panic!("family changed")
    };
    assert_eq!((u32::from(a) ^ u32::from(b)).leading_zeros(), 30);
    assert_eq!(stats.changed["anonymize"], 6);
    let (again, _) = run(1, vec![Mutation::Anonymize { key }], &mixed());
    assert_eq!(again, out, "the key, not the seed, decides");
    let (seeded, _) = run(1, vec![Mutation::Anonymize { key: None }], &mixed());
    assert_ne!(seeded, out);
    assert_eq!(
        run(1, vec![Mutation::Anonymize { key: None }], &mixed()).0,
        seeded
    );
}

#[test]
fn composition_filter_do_and_transport() {
    let mut input = many_clients(2_000);
    input.extend(mixed().into_iter().map(|r| RecordBuf {
        time_ns: r.time_ns + 10_000_000_000,
        ..r
    }));
    let mutations = vec![
        Mutation::Transport {
            proto: Proto::Tcp,
            client_share: 1.0,
        },
        Mutation::SetDo { share: 1.0 },
        Mutation::ClientPrefixes(vec!["10.0.0.0/8".parse().unwrap()]),
        Mutation::Direction(Direction::Queries),
        Mutation::TimeWindow {
            from_s: Some(1.0),
            to_s: None,
        },
    ];
    let (out, stats) = run(0, mutations, &input);
    // Clients 10.0.3.233.. (from 1 s on) plus 10.0.0.1 and 10.0.0.2 from `mixed`.
    assert_eq!(out.len(), 1_000 + 2);
    assert!(out
        .iter()
        .all(|r| r.proto == Proto::Tcp && r.conn >= 1 && edns_of(r).unwrap().dnssec_ok));
    assert!(out
        .iter()
        .all(|r| !Message::parse(&r.wire).unwrap().header().qr()));
    assert_eq!(stats.filtered["time-window"], 1_000);
    assert_eq!(stats.filtered["direction"], 2);
    assert_eq!(stats.filtered["client-prefix"], 2);
    assert_eq!(stats.changed["transport"], 1_002);
    assert_eq!(stats.changed["do-set"], 1_002);
    let conns: HashSet<u64> = out.iter().map(|r| r.conn).collect();
    assert_eq!(conns.len(), 1_002);
    assert_eq!(conns.iter().max(), Some(&1_002));
}

#[test]
fn bad_configurations_are_rejected() {
    let bad = |mutations: Vec<Mutation>| {
        Mutator::new(MutateConfig { seed: 0, mutations }, Collect::default()).unwrap_err()
    };
    assert!(matches!(
        bad(vec![Mutation::ClientShare(1.5)]),
        MutateError::BadShare { .. }
    ));
    assert!(matches!(
        bad(vec![Mutation::Transport {
            proto: Proto::Tcp,
            client_share: -1.0
        }]),
        MutateError::BadShare { .. }
    ));
    assert!(matches!(
        bad(vec![Mutation::SetDo { share: f64::NAN }]),
        MutateError::BadShare { .. }
    ));
    assert!(matches!(
        bad(vec![Mutation::TimeWindow {
            from_s: Some(2.0),
            to_s: Some(1.0)
        }]),
        MutateError::BadWindow(_)
    ));
    assert!(matches!(
        bad(vec![Mutation::TimeWindow {
            from_s: Some(-1.0),
            to_s: None
        }]),
        MutateError::BadWindow(_)
    ));
    assert_eq!(
        bad(vec![Mutation::TimeScale(0.0)]),
        MutateError::BadScale(0.0)
    );
    assert!(matches!(
        bad(vec![Mutation::TimeScale(f64::INFINITY)]),
        MutateError::BadScale(_)
    ));
    assert_eq!(
        bad(vec![Mutation::Qtypes(vec![])]),
        MutateError::EmptyList("qtype")
    );
    assert_eq!(
        bad(vec![Mutation::ClientPrefixes(vec![])]),
        MutateError::EmptyList("client prefix")
    );
    assert!(matches!(
        bad(vec![Mutation::QnameSuffixes(vec!["a..b".into()])]),
        MutateError::BadName { .. }
    ));
    assert!(matches!(
        bad(vec![Mutation::QnamePrefix("a.b".into())]),
        MutateError::BadLabelPrefix(_)
    ));
    assert!(matches!(
        bad(vec![Mutation::QnamePrefix("x".repeat(48))]),
        MutateError::BadLabelPrefix(_)
    ));
    assert_eq!(
        bad(vec![Mutation::TimeShift(1), Mutation::TimeShift(2)]),
        MutateError::Duplicate("time-shift")
    );
    assert_eq!(
        bad(vec![Mutation::StripEdns, Mutation::SetDo { share: 1.0 }]),
        MutateError::Conflict("strip-edns", "set-do")
    );
    assert_eq!(
        bad(vec![Mutation::ClearDo, Mutation::SetDo { share: 1.0 }]),
        MutateError::Conflict("set-do", "clear-do")
    );
}

#[test]
fn a_stopping_inner_sink_stops_the_mutator() {
    struct Stop;
    impl Sink for Stop {
        fn record(&mut self, _: &Record<'_>) -> Result<(), ldplayer_trace::SinkError> {
            Err(ldplayer_trace::SinkError::Stopped)
        }
    }
    let mut m = Mutator::new(MutateConfig::default(), Stop).unwrap();
    assert!(m.record(&mixed()[0].as_record()).is_err());
    assert_eq!(m.stats().records_out, 0);
}

#[test]
fn time_edits_that_leave_the_range_end_the_run_naming_the_record() {
    let records = [
        query("10.0.0.1", 0, "a.example.", Rtype::A, None),
        query("10.0.0.1", 1_000_000, "b.example.", Rtype::A, None),
    ];
    for (mutation, name, bad_record) in [
        (Mutation::TimeScale(1e300), "time-scale 1e300", 2),
        (Mutation::TimeShift(i64::MAX - T0 + 1), "time-shift", 1),
    ] {
        let config = MutateConfig {
            seed: 1,
            mutations: vec![mutation],
        };
        let mut m = Mutator::new(config, Collect::default()).unwrap();
        let mut error = None;
        for r in &records {
            if let Err(e) = m.record(&r.as_record()) {
                error = Some(e.to_string());
                break;
            }
        }
        let error = error.unwrap_or_else(|| panic!("{name}: no error"));
        assert!(
            error.contains(name)
                && error.contains(&format!("record {bad_record} "))
                && error.contains("2262"),
            "{error}"
        );
        assert_eq!(m.inner().records.len(), bad_record - 1, "{name}");
    }
}
