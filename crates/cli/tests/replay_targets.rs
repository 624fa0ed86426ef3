//! `replay --server A --server B`: every query goes to each target on one schedule, each target
//! with its own sockets and connections; the results record the target, `results export` has
//! a `target` column and `results summary` speaks of each target. tcpdump counts what reached
//! each server.

mod binary;

use binary::{ldplayer, ldplayer_fails, query_trace, s, Query, Serve};
use ldplayer_results::{Outcome, ResultsReader};
use ldplayer_testbed::{
    prerequisite::tools,
    witness::{packets_in, Tcpdump},
};
use std::collections::BTreeMap;

const ZONE: &str = "$ORIGIN example.\n$TTL 300\n@ SOA ns admin 1 3600 600 86400 300\n\
@ NS ns\nns A 127.0.0.1\nwww A 192.0.2.1\n";

#[test]
fn every_query_goes_to_each_target_on_one_schedule() {
    if !tools(&[("tcpdump", "tcpdump"), ("tshark", "tshark")]) {
        return;
    }
    let dir = tempfile::tempdir().expect("scratch");
    let zone = dir.path().join("example.zone");
    std::fs::write(&zone, ZONE).expect("zone");
    let (a, b) = (ldplayer_testbed::free_port(), ldplayer_testbed::free_port());
    let _first = Serve::start(&[&s(&zone), "--listen", &format!("127.0.0.1:{a}")]);
    let _second = Serve::start(&[
        &s(&zone),
        "--listen",
        &format!("127.0.0.1:{b}"),
        "--minimal-responses",
    ]);
    let trace = dir.path().join("t.txt");
    let queries: Vec<_> = (0..200)
        .map(|i| Query {
            qname: if i % 2 == 0 {
                "www.example."
            } else {
                "no.example."
            },
            qtype: "A",
            flags: "rd",
            dnssec_ok: None,
        })
        .collect();
    query_trace(&trace, &queries, 10);
    let pcap = dir.path().join("both.pcap");
    let filter = format!("port {a} or port {b}");
    let witness = Tcpdump::start(&pcap, &[&filter]);
    let results = dir.path().join("r.res");
    let (sa, sb) = (format!("127.0.0.1:{a}"), format!("127.0.0.1:{b}"));
    let out = ldplayer(&[
        "replay",
        &s(&trace),
        "--server",
        &sa,
        "--server",
        &sb,
        "--results",
        &s(&results),
        "--keep-answers",
        "--json",
    ]);
    // Over TCP too, for the connections.
    let tcp = ldplayer(&[
        "replay",
        &s(&trace),
        "--server",
        &sa,
        "--server",
        &sb,
        "--proto",
        "tcp",
        "--json",
    ]);
    witness.stop();
    let tcp: serde_json::Value = serde_json::from_slice(&tcp.stdout).expect("JSON");
    let summary: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON");
    assert_eq!(summary["results"], 400, "{summary}");
    assert_eq!(summary["answered"], 400, "{summary}");
    let targets = summary["targets"]
        .as_array()
        .expect("one object per target");
    assert_eq!(targets.len(), 2);
    for (i, t) in targets.iter().enumerate() {
        assert_eq!(t["target"], i, "{t}");
        assert_eq!(t["server"], [&sa, &sb][i].as_str(), "{t}");
        assert_eq!(t["answered"], 200, "{t}");
        // Each target has its own socket, and connection, per client, as if it were replayed
        // alone.
        assert_eq!(t["replay"]["udp_sockets_opened"], 10, "{t}");
        let t = &tcp["targets"][i];
        assert_eq!(t["answered"], 200, "{t}");
        assert_eq!(t["replay"]["connections_opened"], 10, "{t}");
    }
    // The wire: each server got every query, from sockets and over connections of its own.
    let mut sources = Vec::new();
    for port in [a, b] {
        let queries = packets_in(&pcap, &format!("udp.dstport == {port}"));
        assert_eq!(queries, 200, "queries that reached port {port}");
        let syns = packets_in(
            &pcap,
            &format!("tcp.dstport == {port} && tcp.flags.syn == 1 && tcp.flags.ack == 0"),
        );
        assert_eq!(syns, 10, "connections to port {port}");
        let out = std::process::Command::new("tshark")
            .arg("-r")
            .arg(&pcap)
            .args([
                "-Y",
                &format!("udp.dstport == {port}"),
                "-T",
                "fields",
                "-e",
                "udp.srcport",
            ])
            .output()
            .expect("tshark");
        let mut ports: Vec<String> = String::from_utf8_lossy(&out.stdout)
            .lines()
            .map(str::to_string)
            .collect();
        ports.sort();
        ports.dedup();
        assert_eq!(ports.len(), 10, "one socket per client to port {port}");
        sources.push(ports);
    }
    assert!(
        sources[0].iter().all(|p| !sources[1].contains(p)),
        "no socket shared between targets"
    );

    // The results: each query once per target, on the same schedule, each with its answer.
    let mut reader = ResultsReader::open(&results).expect("results");
    let info = reader.run_info().cloned().expect("run info");
    assert_eq!(info.targets, Some(vec![sa.clone(), sb.clone()]));
    let mut by_index: BTreeMap<u64, Vec<(u16, i64, Vec<u8>)>> = BTreeMap::new();
    while let Some((r, answer)) = reader.next_with_answer().expect("reads") {
        assert_eq!(r.outcome, Outcome::Answered);
        by_index.entry(r.index).or_default().push((
            r.target,
            r.intended_ns,
            answer.expect("kept").to_vec(),
        ));
    }
    assert_eq!(by_index.len(), 200);
    let mut additional_differs = 0;
    for (index, mut got) in by_index {
        got.sort_by_key(|g| g.0);
        assert_eq!(got.len(), 2, "query {index}");
        assert_eq!((got[0].0, got[1].0), (0, 1));
        assert_eq!(got[0].1, got[1].1, "query {index}: one schedule");
        // Minimal responses leave the authority section out of positive answers.
        let ns = |a: &[u8]| u16::from_be_bytes([a[8], a[9]]);
        if ns(&got[0].2) != ns(&got[1].2) {
            additional_differs += 1;
        }
    }
    assert_eq!(
        additional_differs, 100,
        "the positive answers differ in authority"
    );

    // `results export` has the target column; `results summary` each target.
    let csv = String::from_utf8(ldplayer(&["results", "export", &s(&results), "--csv"]).stdout)
        .expect("utf-8");
    let header: Vec<&str> = csv.lines().next().expect("header").split(',').collect();
    let col = header
        .iter()
        .position(|c| *c == "target")
        .expect("a target column");
    let per_target = |t: &str| {
        csv.lines()
            .skip(1)
            .filter(|l| l.split(',').nth(col) == Some(t))
            .count()
    };
    assert_eq!((per_target("0"), per_target("1")), (200, 200));
    let text =
        String::from_utf8(ldplayer(&["results", "summary", &s(&results)]).stdout).expect("utf-8");
    assert!(text.contains(&format!("target 0: {sa}")), "{text}");
    assert!(text.contains(&format!("target 1: {sb}")), "{text}");
    let json: serde_json::Value =
        serde_json::from_slice(&ldplayer(&["results", "summary", &s(&results), "--json"]).stdout)
            .expect("JSON");
    assert_eq!(json["targets"][1]["answered"], 200, "{json}");
    // `--with-trace` joins each target's result with its query.
    let joined = ldplayer(&[
        "results",
        "export",
        &s(&results),
        "--csv",
        "--with-trace",
        &s(&trace),
    ]);
    assert_eq!(String::from_utf8_lossy(&joined.stdout).lines().count(), 401);
}

#[test]
fn one_transport_address_for_several_targets_is_refused() {
    let dir = tempfile::tempdir().expect("scratch");
    let trace = dir.path().join("t.txt");
    query_trace(
        &trace,
        &[Query {
            qname: "www.example.",
            qtype: "A",
            flags: "-",
            dnssec_ok: None,
        }],
        1,
    );
    let out = ldplayer_fails(&[
        "replay",
        &s(&trace),
        "--server",
        "127.0.0.1:5300",
        "--server",
        "127.0.0.2:5300",
        "--tls-server",
        "127.0.0.1:853",
    ]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("--tls-server names one server"), "{err}");
    let out = ldplayer_fails(&[
        "replay",
        &s(&trace),
        "--server",
        "127.0.0.1:5300",
        "--keep-answers",
    ]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("--results"), "{err}");
}
