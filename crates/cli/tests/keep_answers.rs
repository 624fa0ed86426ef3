//! `replay --keep-answers`: every answer is kept byte for byte with its result, over UDP, TCP,
//! DNS over TLS, DNS over HTTPS and DNS over QUIC, against `ldplayer serve`. tcpdump is the
//! witness for UDP: the answers kept are the very payloads that crossed loopback.

mod binary;

use binary::{ldplayer, query_trace, s, Query, Serve};
use ldplayer_results::{Outcome, ResultsReader};
use ldplayer_testbed::{prerequisite::tools, witness::Tcpdump};
use std::collections::BTreeMap;
use std::path::Path;

const ZONE: &str = "$ORIGIN example.\n$TTL 300\n\
@ SOA ns admin 1 3600 600 86400 300\n@ NS ns\nns A 127.0.0.1\n\
www A 192.0.2.1\nwww AAAA 2001:db8::1\nwww TXT \"hello world\"\nmail MX 10 www\n\
alias CNAME www\nsub NS ns.sub\nns.sub A 192.0.2.53\n";

/// The trace: names that exist, an alias, a delegation, absent names; with and without EDNS.
fn queries() -> Vec<Query<'static>> {
    let names = [
        ("www.example.", "A"),
        ("www.example.", "AAAA"),
        ("www.example.", "TXT"),
        ("mail.example.", "MX"),
        ("alias.example.", "A"),
        ("a.sub.example.", "A"),
        ("nothere.example.", "A"),
        ("www.example.", "SRV"),
    ];
    (0..80)
        .map(|i| {
            let (qname, qtype) = names[i % names.len()];
            Query {
                qname,
                qtype,
                flags: "-",
                dnssec_ok: [None, Some(false), Some(true)][i % 3],
            }
        })
        .collect()
}

/// Each result of `file` by trace index, with its answer; every result must be answered and
/// carry its answer.
fn answers(file: &Path) -> BTreeMap<u64, Vec<u8>> {
    let mut reader = ResultsReader::open(file).expect("results");
    assert!(reader.keeps_answers(), "{} keeps answers", file.display());
    assert_eq!(
        reader.run_info().and_then(|i| i.answers),
        Some(true),
        "the run info says so"
    );
    let mut out = BTreeMap::new();
    while let Some((r, answer)) = reader.next_with_answer().expect("reads") {
        assert_eq!(r.outcome, Outcome::Answered, "{r:?}");
        let answer = answer.expect("an answered result keeps its answer");
        assert_eq!(answer.len(), usize::from(r.response_len));
        assert!(out.insert(r.index, answer.to_vec()).is_none());
    }
    assert!(reader.damage().is_clean());
    out
}

/// The answer without its ID (the replay may rewrite IDs per connection).
fn without_id(answer: &[u8]) -> Vec<u8> {
    let mut a = answer.to_vec();
    a[0] = 0;
    a[1] = 0;
    a
}

#[test]
fn every_transport_keeps_every_answer_byte_for_byte() {
    if !tools(&[("tcpdump", "tcpdump"), ("tshark", "tshark")]) {
        return;
    }
    let dir = tempfile::tempdir().expect("scratch");
    let zone = dir.path().join("example.zone");
    std::fs::write(&zone, ZONE).expect("zone");
    let free = ldplayer_testbed::free_port;
    let (port, tls, https, quic) = (free(), free(), free(), free());
    let certs = dir.path().join("tls");
    let _server = Serve::start(&[
        &s(&zone),
        "--listen",
        &format!("127.0.0.1:{port}"),
        "--tls-listen",
        &format!("127.0.0.1:{tls}"),
        "--https-listen",
        &format!("127.0.0.1:{https}"),
        "--quic-listen",
        &format!("127.0.0.1:{quic}"),
        "--tls-self-signed",
        &s(&certs),
    ]);
    let trace = dir.path().join("t.txt");
    let queries = queries();
    query_trace(&trace, &queries, 8);
    let ca = s(&certs.join("ca.pem"));

    let pcap = dir.path().join("udp.pcap");
    let witness = Tcpdump::start(&pcap, &["udp", "and", "src", "port", &port.to_string()]);
    let mut kept = BTreeMap::new();
    for (proto, at) in [
        ("udp", port),
        ("tcp", port),
        ("tls", tls),
        ("doh", https),
        ("doq", quic),
    ] {
        let results = dir.path().join(format!("{proto}.res"));
        ldplayer(&[
            "replay",
            &s(&trace),
            "--server",
            &format!("127.0.0.1:{at}"),
            "--proto",
            proto,
            "--tls-ca",
            &ca,
            "--speed",
            "4",
            "--results",
            &s(&results),
            "--keep-answers",
            "-q",
        ]);
        let answers = answers(&results);
        assert_eq!(answers.len(), queries.len(), "{proto}: every query");
        kept.insert(proto, answers);
    }
    let stats = witness.stop();

    // The UDP answers are the payloads tcpdump saw, byte for byte.
    let out = std::process::Command::new("tshark")
        .arg("-r")
        .arg(&pcap)
        .args(["-T", "fields", "-e", "udp.payload"])
        .output()
        .expect("tshark runs");
    let mut seen: Vec<Vec<u8>> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|hex| {
            let hex = hex.replace(':', "");
            (0..hex.len() / 2)
                .map(|i| u8::from_str_radix(&hex[2 * i..2 * i + 2], 16).expect("hex"))
                .collect()
        })
        .collect();
    let mut udp: Vec<Vec<u8>> = kept["udp"].values().cloned().collect();
    seen.sort();
    udp.sort();
    assert_eq!(seen.len(), udp.len(), "tcpdump: {stats}");
    assert!(seen == udp, "the UDP answers kept are the ones on the wire");

    // Each answer answers its own query, and every transport got the same answer (the ID
    // aside): the server answers a query the same way whatever carries it.
    for (index, answer) in &kept["udp"] {
        let q = &queries[*index as usize];
        let msg = ldplayer_dns::Message::parse(answer).expect("an answer parses");
        let mut name = Vec::new();
        assert!(msg.qname_wire(&mut name));
        let mut text = String::new();
        ldplayer_dns::name_to_presentation(&name, &mut text);
        assert_eq!(text, q.qname);
        assert_eq!(msg.qtype().map(|t| t.to_string()).as_deref(), Some(q.qtype));
        for proto in ["tcp", "tls", "doh", "doq"] {
            assert_eq!(
                without_id(&kept[proto][index]),
                without_id(answer),
                "query {index} over {proto}"
            );
        }
    }

    // Split over processes, the shards' answers are merged with their results.
    let merged = dir.path().join("processes.res");
    ldplayer(&[
        "replay",
        &s(&trace),
        "--server",
        &format!("127.0.0.1:{port}"),
        "--processes",
        "2",
        "--speed",
        "4",
        "--results",
        &s(&merged),
        "--keep-answers",
        "-q",
    ]);
    let answers = answers(&merged);
    assert_eq!(answers.len(), queries.len());
    for (index, answer) in &answers {
        assert_eq!(
            without_id(answer),
            without_id(&kept["udp"][index]),
            "query {index}"
        );
    }
}
