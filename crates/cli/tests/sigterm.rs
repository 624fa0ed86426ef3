//! SIGTERM (what `kill` and `timeout` send) ends a long-running command the way Ctrl-C does:
//! the replay stops sending, waits for what is in flight, writes its results and prints its
//! summary; the server prints what it answered.

mod binary;

use binary::{ldplayer, s};
use ldplayer_testbed::{free_port, knot, prerequisite};
use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

fn sigterm(child: &Child) {
    // The child is ours and not reaped yet, so its pid is still its own.
    ldplayer_system::process::signal(child.id(), ldplayer_system::Signal::TERM)
        .unwrap_or_else(|e| panic!("kill: {e}"));
}

/// Waits for `child` to exit, killing it (and failing) if it takes longer than `limit`.
fn wait_bounded(mut child: Child, limit: Duration) -> std::process::Output {
    let started = Instant::now();
    while child.try_wait().expect("try_wait").is_none() {
        if started.elapsed() > limit {
            let _ = child.kill();
            panic!("the command did not end within {limit:?} of SIGTERM");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    child.wait_with_output().expect("output")
}

#[test]
fn sigterm_ends_a_replay_with_its_summary_and_every_result_so_far() {
    let server = knot();
    let dir = tempfile::tempdir().expect("scratch");
    let trace = dir.path().join("long.bin");
    // 60 s of queries, 2 ms apart: far longer than the test waits.
    ldplayer(&[
        "synth",
        "--workload",
        "fixed",
        "--interval",
        "0.002",
        "-n",
        "30000",
        "--clients",
        "20",
        "--zone",
        "example.",
        "-o",
        &s(&trace),
        "-q",
    ]);
    let results_file = dir.path().join("run.res");
    let child = Command::new(env!("CARGO_BIN_EXE_ldplayer"))
        .args([
            "replay",
            &s(&trace),
            "--server",
            &server.addr.to_string(),
            "--results",
            &s(&results_file),
            "--json",
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("ldplayer runs");
    // Let it replay a while: until its results file has its first blocks (bounded).
    let started = Instant::now();
    while std::fs::metadata(&results_file).map_or(0, |m| m.len()) < 4096 {
        assert!(
            started.elapsed() < Duration::from_secs(30),
            "no results written"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    sigterm(&child);
    let out = wait_bounded(child, Duration::from_secs(30));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "exit status {} after SIGTERM: {stderr}",
        out.status
    );
    let summary: serde_json::Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("no JSON summary after SIGTERM ({e}): {stderr}"));
    // Every query read has a result: answered if it was sent, "stopped" if the stop came first.
    let results = summary["results"].as_u64().expect("results");
    let sent = summary["sent"].as_u64().expect("sent");
    assert!(
        sent > 0 && sent <= results && results < 30000,
        "the replay stopped early: {summary}"
    );
    assert_eq!(summary["answered"], sent, "{summary}");
    assert_eq!(
        summary["errors"]["stopped"].as_u64(),
        Some(results - sent),
        "{summary}"
    );

    // The results file reads to its end, with every result, in trace order.
    let export = dir.path().join("run.csv");
    let out = ldplayer(&[
        "results",
        "export",
        &s(&results_file),
        "--csv",
        "-o",
        &s(&export),
        "--json",
    ]);
    let exported: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
    assert_eq!(exported["results"], results, "{exported}");
    assert_eq!(exported["ignored_bytes"], 0, "{exported}");
    let csv = std::fs::read_to_string(&export).expect("csv");
    let mut indexes: Vec<u64> = csv
        .lines()
        .skip(1)
        .map(|l| l.split(',').next().expect("index").parse().expect("number"))
        .collect();
    indexes.sort_unstable();
    assert!(
        indexes.iter().copied().eq(0..results),
        "results are not the first {results} queries"
    );
}

#[test]
fn sigterm_stops_the_server_with_its_counters() {
    let Some(zone) = prerequisite::shared_file("zones/knot_example.com.zone") else {
        return;
    };
    let port = free_port();
    let listen = format!("127.0.0.1:{port}");
    let mut child = Command::new(env!("CARGO_BIN_EXE_ldplayer"))
        .args(["serve", "--listen", &listen, &s(&zone)])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("ldplayer runs");
    let mut stderr = BufReader::new(child.stderr.take().expect("stderr"));
    let mut log = String::new();
    while !log.contains("answering") {
        let mut line = String::new();
        if stderr.read_line(&mut line).expect("read") == 0 {
            panic!("the server ended before answering: {log}");
        }
        log.push_str(&line);
    }
    let trace = tempfile::tempdir().expect("scratch");
    let queries = trace.path().join("q.bin");
    ldplayer(&[
        "synth",
        "-n",
        "20",
        "--interval",
        "0.001",
        "--zone",
        "example.com.",
        "-o",
        &s(&queries),
        "-q",
    ]);
    ldplayer(&["replay", &s(&queries), "--server", &listen, "-q"]);
    sigterm(&child);
    let started = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().expect("try_wait") {
            break status;
        }
        assert!(
            started.elapsed() < Duration::from_secs(30),
            "serve did not stop on SIGTERM"
        );
        std::thread::sleep(Duration::from_millis(50));
    };
    let mut rest = String::new();
    std::io::Read::read_to_string(&mut stderr, &mut rest).expect("read");
    assert!(status.success(), "{status}: {rest}");
    assert!(rest.contains("20 UDP and 0 TCP queries"), "{rest}");
}

/// The lab runs in namespaces in a process group of its own: SIGTERM to the `ldplayer lab`
/// command reaches the replay inside it (which prints its summary and keeps its results), the
/// resolver and the meta-server (which prints its counters), as a terminal's Ctrl-C does.
#[test]
fn sigterm_ends_a_lab_replay_with_its_summary_and_results() {
    if !prerequisite::netns() || prerequisite::tool("unbound", "unbound").is_none() {
        return;
    }
    let Some(capture) = prerequisite::shared_file("pcap/rfcdnscomp_response.pcap") else {
        return;
    };
    let dir = tempfile::tempdir().expect("scratch");
    let hier = dir.path().join("hier");
    ldplayer(&["zones", "build", &s(&capture), "-o", &s(&hier), "-q"]);
    let trace = dir.path().join("stub.bin");
    // 60 s of stub queries under nic.cz.
    ldplayer(&[
        "synth",
        "--workload",
        "poisson",
        "--rate",
        "50",
        "-n",
        "3000",
        "--zone",
        "nic.cz.",
        "--rd",
        "-o",
        &s(&trace),
        "-q",
    ]);
    let results_file = dir.path().join("lab.res");
    let child = Command::new(env!("CARGO_BIN_EXE_ldplayer"))
        .arg("lab")
        .arg("--manifest")
        .arg(hier.join("manifest"))
        .arg("--trace")
        .arg(&trace)
        .arg("--results")
        .arg(&results_file)
        .arg("--json")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("ldplayer runs");
    let started = Instant::now();
    while std::fs::metadata(&results_file).map_or(0, |m| m.len()) < 4096 {
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "the lab wrote no results"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    sigterm(&child);
    let out = wait_bounded(child, Duration::from_secs(60));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{}: {stderr}", out.status);
    let summary: serde_json::Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("no JSON summary after SIGTERM ({e}): {stderr}"));
    let results = summary["results"].as_u64().expect("results");
    assert!(
        summary["sent"].as_u64().expect("sent") > 0 && results < 3000,
        "{summary}"
    );
    assert!(stderr.contains("meta-server:"), "{stderr}");
    let out = ldplayer(&["results", "export", &s(&results_file), "--jsonl"]);
    assert_eq!(
        String::from_utf8_lossy(&out.stdout).lines().count() as u64,
        results
    );
}
