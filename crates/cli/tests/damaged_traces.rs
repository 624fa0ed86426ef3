//! Traces damaged in the middle (a bad length field in a pcap, a pcapng or a binary trace; text
//! lines cut short or not UTF-8; a binary trace whose header is cut) are read as far as they go:
//! every command that reads them prints the summary of what it read (and `replay` of what it
//! sent and recorded, its results file complete), then the error naming the damage and where
//! it is, and exits non-zero. Real files: the shared dnscap capture, as pcap and as pcapng made
//! by Wireshark's editcap, and the binary trace ldplayer makes of it; the replay goes to knotd.

mod binary;

use binary::{ldplayer, s};
use ldplayer_testbed::{
    knot,
    prerequisite::{self, shared_file},
};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// Runs `ldplayer ARGS` and returns its output, whatever its status.
fn run(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_ldplayer"))
        .args(args)
        .output()
        .expect("ldplayer runs")
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// The offsets of the records of a file: a pcap's packet records (after its 24-byte header),
/// a pcapng's blocks, a binary trace's records (after its 16-byte header).
fn record_offsets(data: &[u8], kind: &str) -> Vec<usize> {
    let u32_at = |at: usize| u32::from_le_bytes(data[at..at + 4].try_into().expect("4 bytes"));
    let (mut at, mut offsets) = (
        match kind {
            "pcap" => 24,
            "bin" => 16,
            _ => 0,
        },
        Vec::new(),
    );
    while at < data.len() {
        offsets.push(at);
        at += match kind {
            "pcap" => 16 + u32_at(at + 8) as usize,
            "pcapng" => u32_at(at + 4) as usize,
            _ => u32_at(at) as usize,
        };
    }
    offsets
}

/// A copy of `good` (a pcap, pcapng or binary trace) whose record at `index` has an impossible
/// length, in `dir`; returns the file, the offset of the damaged length's record and the file
/// cut right before that record.
fn damage(dir: &Path, good: &[u8], kind: &str, index: usize) -> (PathBuf, usize, PathBuf) {
    let at = record_offsets(good, kind)[index];
    let mut bad = good.to_vec();
    let (field, value): (usize, u32) = match kind {
        // A packet of 4 GiB; a block of 13 bytes (not a multiple of 4); a record of 12345.
        "pcap" => (at + 8, 0xffff_fff0),
        "pcapng" => (at + 4, 13),
        _ => (at, 12345),
    };
    bad[field..field + 4].copy_from_slice(&value.to_le_bytes());
    let file = dir.join(format!("bad.{kind}"));
    std::fs::write(&file, &bad).expect("write");
    let cut = dir.join(format!("cut.{kind}"));
    std::fs::write(&cut, &good[..at]).expect("write");
    (file, at, cut)
}

/// The messages `inspect --json` finds in a file that reads without error.
fn messages_in(file: &Path) -> u64 {
    let out = ldplayer(&["inspect", &s(file), "--json"]);
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON");
    json["messages"].as_u64().expect("messages")
}

#[test]
fn damage_in_the_middle_keeps_every_summary_and_names_where_it_is() {
    let dir = tempfile::tempdir().expect("scratch");
    let Some(pcap) = shared_file("pcap/dnscap_dns.pcap") else {
        return;
    };
    if !prerequisite::tools(&[("editcap", "wireshark-common")]) {
        return;
    }
    let pcapng = dir.path().join("dns.pcapng");
    let status = Command::new("editcap")
        .args(["-F", "pcapng", &s(&pcap), &s(&pcapng)])
        .status()
        .expect("editcap runs");
    assert!(status.success(), "editcap: {status}");
    let bin = dir.path().join("dns.bin");
    ldplayer(&["convert", &s(&pcap), "--to", "binary", "-o", &s(&bin), "-q"]);
    for (kind, good, index) in [
        ("pcap", &pcap, 39),
        ("pcapng", &pcapng, 45),
        ("bin", &bin, 39),
    ] {
        let good = std::fs::read(good).expect("read");
        let (bad, at, cut) = damage(dir.path(), &good, kind, index);
        // What comes before the damage, read from a copy that ends there.
        let before = messages_in(&cut);
        assert!(before > 0, "{kind}: nothing before the damage");
        let named = |err: &str| {
            assert!(
                err.contains(&format!("at byte {at}")),
                "{kind}: the error names where the damage is (byte {at}): {err}"
            );
        };

        let out = run(&["inspect", &s(&bad), "--json"]);
        let err = text(&out.stderr);
        assert!(
            !out.status.success(),
            "{kind}: inspect --json exit 0: {err}"
        );
        let json: serde_json::Value = serde_json::from_slice(&out.stdout)
            .unwrap_or_else(|e| panic!("{kind}: inspect --json prints its summary ({e}): {err}"));
        assert_eq!(json["messages"], before, "{kind}: {json}");
        named(&err);

        let out = run(&["inspect", &s(&bad)]);
        let (summary, err) = (text(&out.stdout), text(&out.stderr));
        assert!(!out.status.success(), "{kind}: inspect exit 0");
        assert!(
            summary.contains("messages") && summary.contains(&before.to_string()),
            "{kind}: inspect prints its summary: {summary:?} {err}"
        );
        named(&err);

        let converted = dir.path().join(format!("converted-{kind}.txt"));
        let out = run(&["convert", &s(&bad), "-o", &s(&converted)]);
        let err = text(&out.stderr);
        assert!(!out.status.success(), "{kind}: convert exit 0");
        assert!(
            err.contains(&format!("ldplayer: {before} messages from")),
            "{kind}: convert prints its summary: {err}"
        );
        assert!(
            err.contains(&format!("{before} records written before it are kept")),
            "{err}"
        );
        named(&err);

        let mutated = dir.path().join(format!("mutated-{kind}.bin"));
        let out = run(&["mutate", &s(&bad), "-o", &s(&mutated), "--set-rd"]);
        let err = text(&out.stderr);
        assert!(!out.status.success(), "{kind}: mutate exit 0");
        assert!(
            err.contains(&format!("ldplayer: {before} records in")),
            "{kind}: mutate prints its summary: {err}"
        );
        named(&err);
        assert_eq!(messages_in(&mutated), before, "{kind}: what mutate kept");
    }
}

#[test]
fn a_replay_of_a_damaged_trace_prints_its_summary_and_keeps_its_results_complete() {
    let server = knot();
    let dir = tempfile::tempdir().expect("scratch");
    let trace = dir.path().join("t.bin");
    ldplayer(&[
        "synth",
        "--workload",
        "fixed",
        "--interval",
        "0.0002",
        "-n",
        "3000",
        "--clients",
        "20",
        "--zone",
        "example.",
        "-o",
        &s(&trace),
        "-q",
    ]);
    let good = std::fs::read(&trace).expect("read");
    let (bad, at, _) = damage(dir.path(), &good, "bin", 1499);
    let results = dir.path().join("r.res");
    let out = run(&[
        "replay",
        &s(&bad),
        "--server",
        &server.addr.to_string(),
        "--fast",
        "--results",
        &s(&results),
    ]);
    let (summary, err) = (text(&out.stdout), text(&out.stderr));
    assert!(!out.status.success(), "replay exit 0: {summary} {err}");
    assert!(
        summary.contains("1499 queries: 1499 sent"),
        "the summary of what was sent: {summary:?} {err}"
    );
    assert!(err.contains(&format!("at byte {at}")), "{err}");
    let merged = dir.path().join("m.res");
    let out = ldplayer(&[
        "results",
        "merge",
        &s(&results),
        "-o",
        &s(&merged),
        "--json",
    ]);
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON");
    assert_eq!(json["inputs"][0]["results"], 1499, "{json}");
    assert_eq!(json["inputs"][0]["complete"], true, "{json}");
}

/// The text trace of the shared capture, its lines.
fn text_trace(dir: &Path) -> Option<Vec<String>> {
    let pcap = shared_file("pcap/dnscap_dns.pcap")?;
    let txt = dir.join("dns.txt");
    ldplayer(&["convert", &s(&pcap), "--to", "text", "-o", &s(&txt), "-q"]);
    Some(
        std::fs::read_to_string(&txt)
            .expect("read")
            .lines()
            .map(String::from)
            .collect(),
    )
}

#[test]
fn text_lines_cut_short_or_not_utf8_are_skipped_with_their_line_numbers() {
    let dir = tempfile::tempdir().expect("scratch");
    let Some(lines) = text_trace(dir.path()) else {
        return;
    };
    let columns = |line: &str, n: usize| line.split('\t').take(n).collect::<Vec<_>>().join("\t");
    let mut bytes = Vec::new();
    for (i, line) in lines.iter().enumerate().take(8) {
        let mut line = line.as_bytes().to_vec();
        match i + 1 {
            // A query cut after `id` (8 columns), a response cut after `qname`, a line with a
            // byte that is not UTF-8 in its name.
            3 => line = columns(&lines[2], 8).into_bytes(),
            4 => line = columns(&lines[3], 13).into_bytes(),
            6 => {
                let at = line.len() - 3;
                line[at] = 0xff;
            }
            _ => {}
        }
        bytes.extend_from_slice(&line);
        bytes.push(b'\n');
    }
    let file = dir.path().join("damaged.txt");
    std::fs::write(&file, &bytes).expect("write");
    let out_file = dir.path().join("out.txt");
    let out = ldplayer(&["convert", &s(&file), "-o", &s(&out_file)]);
    let err = text(&out.stderr);
    for line in [3, 4, 6] {
        assert!(
            err.contains(&format!("line {line} skipped")),
            "line {line} is named: {err}"
        );
    }
    assert!(err.contains("has 8 columns"), "{err}");
    assert!(err.contains("UTF-8"), "{err}");
    assert!(
        err.contains("ldplayer: 3 messages") && err.contains("skipped: text-bad-line=3"),
        "{err}"
    );
    let kept: Vec<String> = std::fs::read_to_string(&out_file)
        .expect("read")
        .lines()
        .skip(2)
        .map(String::from)
        .collect();
    assert_eq!(
        kept,
        [lines[4].clone(), lines[6].clone(), lines[7].clone()],
        "only whole lines are read"
    );

    let out = ldplayer(&["inspect", &s(&file), "--json"]);
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON");
    assert_eq!(json["messages"], 3, "{json}");
    assert_eq!(
        json["skipped"],
        serde_json::json!([{"name": "text-bad-line", "count": 3}])
    );

    // A header line that is not UTF-8 is refused with its line number.
    let mut bytes = lines[0].as_bytes().to_vec();
    bytes.extend_from_slice(b"\ntime\tsrc\tdst\xff\n");
    std::fs::write(&file, &bytes).expect("write");
    let out = binary::ldplayer_fails(&["inspect", &s(&file)]);
    let err = text(&out.stderr);
    assert!(err.contains("line 2") && err.contains("UTF-8"), "{err}");
}

#[test]
fn a_binary_trace_whose_header_is_cut_says_so() {
    let dir = tempfile::tempdir().expect("scratch");
    let trace = dir.path().join("t.bin");
    ldplayer(&["synth", "-n", "10", "-o", &s(&trace), "-q"]);
    let good = std::fs::read(&trace).expect("read");
    let cut = dir.path().join("cut.bin");
    std::fs::write(&cut, &good[..12]).expect("write");
    let out = binary::ldplayer_fails(&["inspect", &s(&cut)]);
    let err = text(&out.stderr);
    assert!(
        !err.contains("bad magic") && err.contains("header") && err.contains("12 of its 16 bytes"),
        "{err}"
    );
}

/// The parts of an error line (`ldplayer: A: B: C`) that are said twice.
fn repeated_parts(line: &str) -> Vec<String> {
    let parts: Vec<&str> = line.trim().split(": ").skip(1).collect();
    let mut repeated = Vec::new();
    for (i, p) in parts.iter().enumerate() {
        let p = p.trim();
        if p.len() > 3 && parts[i + 1..].iter().any(|q| q.contains(p)) {
            repeated.push(p.to_string());
        }
    }
    repeated
}

#[test]
fn errors_do_not_repeat_their_cause() {
    let dir = tempfile::tempdir().expect("scratch");
    let junk = dir.path().join("junk.bin");
    std::fs::write(&junk, b"LDPTRACE but not a results file").expect("write");
    let trace = dir.path().join("t.bin");
    ldplayer(&["synth", "-n", "10", "-o", &s(&trace), "-q"]);
    let out = binary::ldplayer_fails(&["report", &s(&trace), "-o", &s(&dir.path().join("r.html"))]);
    let err = text(&out.stderr);
    assert!(err.contains("not an ldplayer results file"), "{err}");
    assert_eq!(repeated_parts(&err), Vec::<String>::new(), "{err}");
    for args in [
        vec!["inspect".to_string(), s(&junk)],
        vec![
            "replay".into(),
            s(&junk),
            "--server".into(),
            "127.0.0.1:9".into(),
        ],
        vec![
            "convert".into(),
            s(&junk),
            "-o".into(),
            s(&dir.path().join("o.txt")),
        ],
    ] {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let err = text(&binary::ldplayer_fails(&args).stderr);
        assert_eq!(
            repeated_parts(&err),
            Vec::<String>::new(),
            "{args:?}: {err}"
        );
    }
}
