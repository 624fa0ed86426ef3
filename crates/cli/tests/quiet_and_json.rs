//! Every command that prints takes `-q` (nothing but errors) and `--json` (its summary as one
//! JSON object on standard output), and `convert` tells the output format from the output's
//! name as `synth` and `mutate` do.

mod binary;

use binary::{ldplayer, ldplayer_fails, ldplayer_unanswered, s};
use ldplayer_testbed::prerequisite::shared_file;
use std::path::Path;

/// Runs `args` and checks that it printed nothing at all.
fn silent(args: &[&str]) {
    let out = ldplayer(args);
    assert!(
        out.stdout.is_empty() && out.stderr.is_empty(),
        "{args:?} printed: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Runs `args` and returns the one JSON object it printed on standard output.
fn json(args: &[&str]) -> serde_json::Value {
    let out = ldplayer(args);
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(text.lines().count(), 1, "{args:?}: {text}");
    let v: serde_json::Value = serde_json::from_str(&text).expect("one JSON object");
    assert!(v.is_object(), "{args:?}: {v}");
    v
}

fn has_keys(v: &serde_json::Value, keys: &[&str]) {
    for k in keys {
        assert!(v.get(*k).is_some(), "no {k:?} in {v}");
    }
}

#[test]
fn convert_takes_the_format_from_the_name_or_asks_for_to() {
    let Some(capture) = shared_file("pcap/dnscap_dns.pcap") else {
        return;
    };
    let dir = tempfile::tempdir().expect("scratch");
    let d = dir.path();
    let c = s(&capture);
    for (name, format) in [
        ("a.txt", "text"),
        ("a.tsv.gz", "text"),
        ("a.pcap", "pcap"),
        ("a.bin", "binary"),
        ("a.bin.zst", "binary"),
    ] {
        let v = json(&["convert", &c, "-o", &s(&d.join(name)), "--json"]);
        assert_eq!(v["output_format"], format, "{name}: {v}");
        assert_eq!(v["written"], 82, "{name}: {v}");
    }
    // The text written by name and by --to are the same.
    ldplayer(&[
        "convert",
        &c,
        "--to",
        "text",
        "-o",
        &s(&d.join("b.out")),
        "-q",
    ]);
    assert_eq!(
        std::fs::read(d.join("a.txt")).expect("read"),
        std::fs::read(d.join("b.out")).expect("read")
    );
    for output in ["-", &s(&d.join("a.trace"))] {
        let out = ldplayer_fails(&["convert", &c, "-o", output]);
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains("--to"), "{output}: {err}");
    }
    assert!(!d.join("a.trace").exists());
    // `-o -` with --to still works, and --json cannot share standard output with the trace.
    let out = ldplayer(&["convert", &c, "--to", "text", "-o", "-", "-q"]);
    // The format tag, the column line and 82 messages.
    assert_eq!(String::from_utf8_lossy(&out.stdout).lines().count(), 84);
    for cmd in [
        vec!["convert", c.as_str(), "--to", "text"],
        vec!["mutate", c.as_str(), "--to", "text"],
        vec!["synth", "-n", "5", "--to", "text"],
    ] {
        let mut argv = cmd.clone();
        argv.extend(["-o", "-", "--json"]);
        let out = ldplayer_fails(&argv);
        assert!(
            String::from_utf8_lossy(&out.stderr).contains("--json"),
            "{argv:?}"
        );
    }
}

#[test]
fn trace_commands_are_quiet_or_print_one_json_object() {
    let dir = tempfile::tempdir().expect("scratch");
    let d = dir.path();
    let trace = d.join("t.bin");
    let t = s(&trace);
    silent(&["synth", "-n", "300", "--seed", "2", "-o", &t, "-q"]);
    let v = json(&["synth", "-n", "300", "--seed", "2", "-o", &t, "--json"]);
    has_keys(&v, &["queries", "output", "output_format", "interrupted"]);
    assert_eq!(v["queries"], 300);

    silent(&["convert", &t, "-o", &s(&d.join("t.txt")), "-q"]);
    silent(&["mutate", &t, "-o", &s(&d.join("m.bin")), "--set-do", "-q"]);
    let v = json(&[
        "mutate",
        &t,
        "-o",
        &s(&d.join("m.bin")),
        "--set-do",
        "--json",
    ]);
    has_keys(
        &v,
        &[
            "records_in",
            "records_out",
            "changed",
            "filtered",
            "dropped",
            "skipped",
        ],
    );
    assert_eq!(v["changed"]["do-set"], 300, "{v}");

    silent(&["inspect", &t, "-q"]);
    // inspect --json keeps its keys.
    let v = json(&["inspect", &t, "--json"]);
    has_keys(
        &v,
        &[
            "start",
            "messages",
            "queries",
            "responses",
            "unique_clients",
            "qps_1s",
            "top_qtypes",
            "skipped",
        ],
    );
    // A trace that cannot be read is still an error with -q.
    std::fs::write(d.join("junk"), "not a trace").expect("write");
    let out = ldplayer_fails(&["inspect", &s(&d.join("junk")), "-q"]);
    assert!(!out.stderr.is_empty());
}

#[test]
fn zones_results_and_demo_are_quiet_or_print_one_json_object() {
    let Some(capture) = shared_file("pcap/rfcdnscomp_response.pcap") else {
        return;
    };
    let Some(scenario) = shared_file("hierarchy/deckard_iter_minim_a.rpl") else {
        return;
    };
    let dir = tempfile::tempdir().expect("scratch");
    let d = dir.path();
    silent(&[
        "zones",
        "build",
        &s(&capture),
        "-o",
        &s(&d.join("h1")),
        "-q",
    ]);
    let v = json(&[
        "zones",
        "build",
        &s(&capture),
        "-o",
        &s(&d.join("h2")),
        "--json",
    ]);
    assert_eq!(v["responses_used"], 8, "{v}");
    // deckard-queries: -q leaves the names and drops the notes.
    let out = ldplayer(&["zones", "deckard-queries", &s(&scenario), "-q"]);
    assert!(
        out.stderr.is_empty(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(!out.stdout.is_empty());

    // A results file from a replay against a socket that never answers.
    let silent_server = std::net::UdpSocket::bind("127.0.0.1:0").expect("bind");
    let trace = d.join("q.bin");
    silent(&["synth", "-n", "4", "-o", &s(&trace), "-q"]);
    let results = d.join("r.res");
    // Nothing answered: exit status 1, the results written all the same.
    ldplayer_unanswered(&[
        "replay",
        &s(&trace),
        "--server",
        &silent_server.local_addr().expect("addr").to_string(),
        "--timeout",
        "0.2",
        "--results",
        &s(&results),
        "-q",
    ]);
    let csv = d.join("r.csv");
    silent(&[
        "results",
        "export",
        &s(&results),
        "--csv",
        "-o",
        &s(&csv),
        "-q",
    ]);
    let v = json(&[
        "results",
        "export",
        &s(&results),
        "--jsonl",
        "-o",
        &s(&d.join("r.jsonl")),
        "--json",
    ]);
    assert_eq!(v["results"], 4, "{v}");
    assert_eq!(v["ignored_bytes"], 0, "{v}");
    // Exporting to standard output leaves no room for --json.
    ldplayer_fails(&["results", "export", &s(&results), "--csv", "--json"]);

    let demo = |flag: &str, sub: &str| -> std::process::Output {
        ldplayer(&[
            "demo",
            "--pipeline",
            "-n",
            "2000",
            "--dir",
            &s(&d.join(sub)),
            flag,
        ])
    };
    let out = demo("-q", "demo-q");
    assert!(out.stdout.is_empty() && out.stderr.is_empty());
    let out = demo("--json", "demo-json");
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("one JSON object");
    has_keys(&v, &["steps", "trace", "replay", "server"]);
    assert_eq!(v["trace"]["messages"], 2000, "{v}");
    assert_eq!(v["replay"]["sent"], 2000, "{v}");
    assert!(Path::new(&d.join("demo-json/root-like.bin")).exists());
}
