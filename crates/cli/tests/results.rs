//! `ldplayer results summary` and `results export --with-trace` after real replays against
//! knotd on loopback, tshark as the independent reader of the replayed capture, and a results
//! file damaged on purpose.

mod binary;

use binary::ldplayer;
use ldplayer_testbed::{knot, prerequisite};
use std::path::Path;
use std::process::{Command, Output};

fn s(p: &Path) -> String {
    p.to_string_lossy().into_owned()
}

/// A file of the shared test data; `None` only when it is missing and skipping is allowed.
fn data(name: &str) -> Option<String> {
    prerequisite::shared_file(name).map(|p| s(&p))
}

/// Runs `ldplayer` with `args`, successful or not.
fn run(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_ldplayer"))
        .args(args)
        .output()
        .expect("ldplayer runs")
}

/// The lines of `replay`'s text output before its engine line: the summary part.
fn summary_part(replay_text: &str) -> String {
    replay_text
        .lines()
        .take_while(|l| !l.starts_with("engine:"))
        .map(|l| format!("{l}\n"))
        .collect()
}

/// `results summary` prints what `replay` printed at the end, as text and as JSON with the
/// same keys; the text breaks the answers down by response code.
#[test]
fn results_summary_prints_the_replay_summary_again() {
    let server = knot();
    let dir = tempfile::tempdir().expect("scratch");
    let trace = dir.path().join("t.bin");
    let res = dir.path().join("r.res");
    ldplayer(&[
        "synth",
        "--workload",
        "poisson",
        "--rate",
        "2000",
        "-n",
        "1500",
        "--clients",
        "30",
        "--tcp-share",
        "0.3",
        "--zone",
        "example.",
        "--seed",
        "8",
        "-o",
        &s(&trace),
        "-q",
    ]);
    let addr = server.addr.to_string();
    let replay = ldplayer(&[
        "replay",
        &s(&trace),
        "--server",
        &addr,
        "--speed",
        "4",
        "--results",
        &s(&res),
    ]);
    let replay_text = String::from_utf8(replay.stdout).expect("utf-8");
    let again = ldplayer(&["results", "summary", &s(&res)]);
    let again_text = String::from_utf8(again.stdout).expect("utf-8");
    assert_eq!(again_text, summary_part(&replay_text), "{replay_text}");
    // Every synthetic name is absent from knotd's zone: the answers are NXDOMAIN, and say so.
    assert!(
        again_text.starts_with("1500 queries: 1500 sent, 1500 answered (NXDOMAIN 1500), "),
        "{again_text}"
    );
    assert!(
        again.stderr.is_empty(),
        "{}",
        String::from_utf8_lossy(&again.stderr)
    );

    let json_replay = ldplayer(&[
        "replay",
        &s(&trace),
        "--server",
        &addr,
        "--speed",
        "4",
        "--results",
        &s(&res),
        "--json",
    ]);
    let mut from_replay: serde_json::Value =
        serde_json::from_slice(&json_replay.stdout).expect("one JSON object");
    let from_file: serde_json::Value =
        serde_json::from_slice(&ldplayer(&["results", "summary", &s(&res), "--json"]).stdout)
            .expect("one JSON object");
    from_replay
        .as_object_mut()
        .expect("object")
        .remove("replay")
        .expect("the engine's part");
    let mut want: Vec<String> = from_replay
        .as_object()
        .expect("object")
        .keys()
        .cloned()
        .collect();
    want.extend(["file_damage", "complete", "warnings"].map(String::from));
    want.sort();
    let mut got: Vec<String> = from_file
        .as_object()
        .expect("object")
        .keys()
        .cloned()
        .collect();
    got.sort();
    assert_eq!(got, want);
    for key in [
        "results",
        "sent",
        "answered",
        "timeouts",
        "errors",
        "rcodes",
        "truncated",
        "connections",
        "latency_ms",
        "timing_error_us",
        "rate_error",
        "qps",
    ] {
        assert_eq!(from_file[key], from_replay[key], "{key}");
    }
    assert_eq!(from_file["rcodes"]["NXDOMAIN"], 1500);
    assert_eq!(from_file["file_damage"]["damaged_blocks"], 0);
    // The replay finished: its file says so, and nothing is to be warned of.
    assert_eq!(from_file["complete"], true);
    assert_eq!(from_file["warnings"], serde_json::json!([]));
}

/// A byte flipped in the first block of a real results file costs that block only: export and
/// summary read the rest and say on standard error what was lost; the JSON summary counts it.
#[test]
fn a_damaged_results_file_loses_only_the_damaged_block() {
    let server = knot();
    let dir = tempfile::tempdir().expect("scratch");
    let trace = dir.path().join("t.bin");
    let res = dir.path().join("r.res");
    // 2.5 s of queries at their own timing: the writer writes a block at least every second.
    ldplayer(&[
        "synth",
        "--workload",
        "fixed",
        "--interval",
        "0.001",
        "-n",
        "2500",
        "--clients",
        "10",
        "--zone",
        "example.",
        "-o",
        &s(&trace),
        "-q",
    ]);
    ldplayer(&[
        "replay",
        &s(&trace),
        "--server",
        &server.addr.to_string(),
        "--results",
        &s(&res),
        "-q",
    ]);
    let mut bytes = std::fs::read(&res).expect("results file");
    // The header's length (16, and the run info replay records), then the first block's header.
    let header = u16::from_le_bytes([bytes[10], bytes[11]]) as usize;
    assert!(header > 16, "replay records its run info: {header}");
    let first_count =
        u32::from_le_bytes(bytes[header + 4..header + 8].try_into().expect("4 bytes")) as usize;
    assert!(first_count < 2500, "one block only: {first_count}");
    bytes[header + 16 + 100] ^= 0x10;
    let damaged = dir.path().join("damaged.res");
    std::fs::write(&damaged, &bytes).expect("write");

    let export = ldplayer(&["results", "export", &s(&damaged), "--csv"]);
    let rows = String::from_utf8(export.stdout)
        .expect("utf-8")
        .lines()
        .count()
        - 1;
    assert_eq!(rows, 2500 - first_count);
    let err = String::from_utf8(export.stderr).expect("utf-8");
    assert!(
        err.contains(&format!(
            "1 damaged block skipped: {first_count} results lost"
        )),
        "{err}"
    );
    let summary = ldplayer(&["results", "summary", &s(&damaged), "--json"]);
    let v: serde_json::Value = serde_json::from_slice(&summary.stdout).expect("json");
    assert_eq!(v["results"], 2500 - first_count as u64, "{v}");
    assert_eq!(v["file_damage"]["damaged_blocks"], 1, "{v}");
    assert_eq!(v["file_damage"]["results_lost"], first_count as u64, "{v}");
    assert!(String::from_utf8_lossy(&summary.stderr).contains("damaged block"));

    // Joined with the trace, the lost results are allowed for.
    let joined = ldplayer(&[
        "results",
        "export",
        &s(&damaged),
        "--jsonl",
        "--with-trace",
        &s(&trace),
    ]);
    assert_eq!(
        String::from_utf8(joined.stdout)
            .expect("utf-8")
            .lines()
            .count(),
        2500 - first_count
    );
    assert!(
        String::from_utf8_lossy(&joined.stderr).contains(&format!("{first_count} queries of")),
        "{}",
        String::from_utf8_lossy(&joined.stderr)
    );

    // Cut in the middle of the last block.
    let cut = dir.path().join("cut.res");
    std::fs::write(&cut, &bytes[..bytes.len() - 10]).expect("write");
    let v: serde_json::Value =
        serde_json::from_slice(&ldplayer(&["results", "summary", &s(&cut), "--json"]).stdout)
            .expect("json");
    assert_eq!(v["file_damage"]["cut_short"], true, "{v}");
}

/// A capture with queries and responses, replayed (the responses are not sent), joined with its
/// results: each row carries its query's client, name, type and transport, as tshark reads
/// them from the same capture; another capture is refused.
#[test]
fn export_with_trace_adds_each_querys_fields_from_the_capture() {
    if !prerequisite::tools(&[("tshark", "tshark")]) {
        return;
    }
    let (Some(capture), Some(other_capture)) = (
        data("pcap/dnscap_dns.pcap"),
        data("pcap/dnscap_dnso1tcp.pcap"),
    ) else {
        return;
    };
    let server = knot();
    let dir = tempfile::tempdir().expect("scratch");
    let res = dir.path().join("r.res");
    ldplayer(&[
        "replay",
        &capture,
        "--server",
        &server.addr.to_string(),
        "--fast",
        "--results",
        &s(&res),
        "-q",
    ]);
    let out = ldplayer(&[
        "results",
        "export",
        &s(&res),
        "--csv",
        "--with-trace",
        &capture,
    ]);
    let csv = String::from_utf8(out.stdout).expect("utf-8");
    let mut lines = csv.lines();
    let header: Vec<&str> = lines.next().expect("header").split(',').collect();
    let mut want: Vec<&str> = ldplayer_results::COLUMNS.to_vec();
    want.extend(ldplayer_results::TRACE_COLUMNS);
    assert_eq!(header, want);
    let col = |name: &str| header.iter().position(|c| *c == name).expect("column");
    let mut rows: Vec<Vec<String>> = lines
        .map(|l| l.split(',').map(str::to_string).collect())
        .collect();
    assert_eq!(rows.len(), 41);
    rows.sort_by_key(|r| r[col("index")].parse::<u64>().expect("index"));

    // tshark: the capture's DNS messages in capture order, with their position among them.
    let tshark = Command::new("tshark")
        .args([
            "-r",
            &capture,
            "-Y",
            "dns",
            "-T",
            "fields",
            "-e",
            "dns.flags.response",
        ])
        .args(["-e", "ip.src", "-e", "dns.qry.name", "-e", "dns.qry.type"])
        .output()
        .expect("tshark must be installed (scripts/test.sh installs it)");
    let witness: Vec<Vec<String>> = String::from_utf8_lossy(&tshark.stdout)
        .lines()
        .enumerate()
        .map(|(i, l)| {
            let mut fields: Vec<String> = l.split('\t').map(str::to_string).collect();
            fields.push(i.to_string());
            fields
        })
        .filter(|f| f[0] == "0")
        .map(|mut f| f.split_off(1))
        .collect();
    assert_eq!(witness.len(), 41, "tshark saw {} queries", witness.len());
    for (row, w) in rows.iter().zip(&witness) {
        assert_eq!(row[col("client")], w[0], "{row:?} {w:?}");
        assert_eq!(row[col("qname")], format!("{}.", w[1]), "{row:?} {w:?}");
        let qtype: u16 = w[2].parse().expect("type number");
        assert_eq!(
            row[col("qtype")].parse(),
            Ok(ldplayer_dns::Rtype(qtype)),
            "{row:?} {w:?}"
        );
        assert_eq!(row[col("trace_proto")], "udp");
        // Every DNS message counts (responses too, but not the capture's ICMP), from 0.
        assert_eq!(row[col("index")], w[3], "{row:?} {w:?}");
        // knotd serves only example.: everything else is refused.
        assert_eq!(row[col("rcode_name")], "REFUSED");
    }

    // Another capture's queries do not fit the results.
    let other = run(&[
        "results",
        "export",
        &s(&res),
        "--csv",
        "--with-trace",
        &other_capture,
    ]);
    assert!(!other.status.success());
    let err = String::from_utf8_lossy(&other.stderr);
    assert!(err.contains("not the trace this run replayed"), "{err}");
    assert!(err.contains("dnscap_dnso1tcp.pcap"), "{err}");
}
