//! The text format reads in pandas with `pandas.read_csv(f, sep="\t", comment="#")` and nothing
//! more (Debian's python3-pandas): the right columns, rows and values, including a name with a
//! `#`, the NULL type and a malformed message's `-` columns; a file in the version-1 layout
//! still reads.

mod binary;

use binary::{ldplayer, s};
use ldplayer_testbed::prerequisite::{self, shared_file, DEBIAN_PYTHON};
use std::path::Path;
use std::process::Command;

/// Reads `path` with exactly `pandas.read_csv(f, sep="\t", comment="#")` and returns the
/// columns, the row count and every row as strings.
fn pandas(path: &Path) -> serde_json::Value {
    let code = r##"
import json, sys
import pandas
with open(sys.argv[1]) as f:
    df = pandas.read_csv(f, sep="\t", comment="#")
print(json.dumps({
    "columns": list(df.columns),
    "rows": len(df),
    "values": [[None if pandas.isna(v) else str(v) for v in row] for row in df.itertuples(index=False)],
    "time_is_float": str(df["time"].dtype) == "float64",
}))
"##;
    let out = Command::new(DEBIAN_PYTHON)
        .args(["-c", code])
        .arg(path)
        .output()
        .expect("python runs");
    assert!(
        out.status.success(),
        "pandas: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("JSON")
}

#[test]
fn pandas_reads_text_traces_as_they_are() {
    if !prerequisite::debian_python(&["pandas"], "python3-pandas") {
        return;
    }
    let dir = tempfile::tempdir().expect("scratch");
    // Written by hand in the version-1 layout (tag and columns on one line): two queries built
    // from their columns (a name with `#`, the NULL type) and a malformed query given by its
    // bytes (ID 48879, RD and AD, www.example. AAAA, 40000 answers announced and absent).
    let old = dir.path().join("old.txt");
    std::fs::write(
        &old,
        "#ldplayer-text/1\ttime\tsrc\tsport\tdst\tdport\tid\tqname\tqtype\twire\n\
         1.25\t10.0.0.1\t4000\t192.0.2.53\t53\t7\tweird#name.example.\tNULL\t-\n\
         1.5\t10.0.0.2\t4001\t192.0.2.53\t53\t8\twww.example.\tA\t-\n\
         2\t10.0.0.3\t4002\t192.0.2.53\t53\t-\t-\t-\tvu8BIAABnEAAAAAAA3d3dwdleGFtcGxlAAAcAAE=\n",
    )
    .expect("write");
    let new = dir.path().join("new.txt");
    let out = ldplayer(&[
        "convert",
        &old.to_string_lossy(),
        "--to",
        "text",
        "-o",
        &new.to_string_lossy(),
    ]);
    let summary = String::from_utf8_lossy(&out.stderr);
    assert!(
        summary.contains("3 messages (1 malformed: dns-absurd-counts=1)"),
        "{summary}"
    );
    let written = std::fs::read_to_string(&new).expect("text");
    assert!(
        written.starts_with("#ldplayer-text/2\ntime\tsrc\t"),
        "{written}"
    );

    let df = pandas(&new);
    let columns: Vec<&str> = df["columns"]
        .as_array()
        .expect("columns")
        .iter()
        .map(|c| c.as_str().expect("name"))
        .collect();
    assert_eq!(columns, ldplayer_trace::text::COLUMNS);
    assert_eq!(df["rows"], 3);
    assert_eq!(df["time_is_float"], true);
    let col = |name: &str| columns.iter().position(|c| *c == name).expect("column");
    let value = |row: usize, name: &str| df["values"][row][col(name)].clone();
    // `#` in a name is escaped, so pandas does not cut the line there; NULL is TYPE10, which
    // pandas does not take for a missing value.
    assert_eq!(value(0, "qname"), "weird\\035name.example.");
    assert_eq!(value(0, "qtype"), "TYPE10");
    assert_eq!(value(0, "id"), "7");
    assert_eq!(
        value(0, "wire"),
        "AAcAAAABAAAAAAAACndlaXJkI25hbWUHZXhhbXBsZQAACgAB"
    );
    assert_eq!(value(1, "qname"), "www.example.");
    assert_eq!(value(1, "sport"), "4001");
    // The malformed query: its header and question, `-` for what cannot be read.
    for (name, want) in [
        ("id", "48879"),
        ("qr", "0"),
        ("opcode", "QUERY"),
        ("rcode", "NOERROR"),
        ("flags", "rd,ad"),
        ("qname", "www.example."),
        ("qclass", "IN"),
        ("qtype", "AAAA"),
        ("edns", "-"),
        ("bufsize", "-"),
        ("do", "-"),
        ("ednsopts", "-"),
        ("wire", "vu8BIAABnEAAAAAAA3d3dwdleGFtcGxlAAAcAAE="),
    ] {
        assert_eq!(value(2, name), want, "{name}");
    }

    // A real capture: one row per message, every column named.
    let Some(data) = shared_file("pcap/dnscap_dns.pcap") else {
        return;
    };
    let text = dir.path().join("dns.txt");
    ldplayer(&[
        "convert",
        &data.to_string_lossy(),
        "--to",
        "text",
        "-o",
        &text.to_string_lossy(),
        "-q",
    ]);
    let df = pandas(&text);
    assert_eq!(df["rows"], 82);
    assert_eq!(df["columns"].as_array().map(Vec::len), Some(20));
    assert!(df["values"].as_array().expect("rows").iter().all(|row| row
        .as_array()
        .expect("row")
        .iter()
        .all(|v| !v.is_null())));
}

/// The root workload's heavy tail as docs/cli.md states it: the share of the busiest 1% of the
/// clients a trace shows, by the trace's length.
#[test]
fn root_workload_busiest_clients_share_is_as_documented() {
    let dir = tempfile::tempdir().expect("scratch");
    for (n, documented) in [(5_000, 0.25), (20_000, 0.40), (100_000, 0.55)] {
        let trace = dir.path().join(format!("root-{n}.bin"));
        ldplayer(&[
            "synth",
            "--workload",
            "root",
            "--rate",
            "10000",
            "-n",
            &n.to_string(),
            "-o",
            &s(&trace),
            "-q",
        ]);
        let out = ldplayer(&["inspect", &s(&trace), "--json"]);
        let summary: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
        let share = summary["busiest_1pct_share"].as_f64().expect("share");
        assert!(
            (share - documented).abs() < 0.03,
            "{n} queries: the busiest 1% send {share}, docs/cli.md says about {documented}"
        );
    }
}
