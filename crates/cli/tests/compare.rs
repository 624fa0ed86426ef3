//! `ldplayer compare`: two replays against two builds of a real server (knotd with one and with
//! two workers), one against no server at all, and two real experiments; the exit status
//! follows `--max-regression` (0 within, 1 past a bound, 2 for a comparison that cannot be
//! made).

mod common;

use common::{ldplayer, ldplayer_unanswered, s, tools};
use ldplayer_testbed::{free_port, knot_with_workers, prerequisite};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// Runs `ldplayer compare ARGS...`, whatever its exit status.
fn compare(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_ldplayer"))
        .arg("compare")
        .args(args)
        .output()
        .expect("ldplayer runs")
}

fn status(out: &Output) -> Option<i32> {
    out.status.code()
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

fn json(out: &Output) -> serde_json::Value {
    serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("one JSON object ({e}): {}", text(&out.stdout)))
}

/// The row of `metric` in a `--json` comparison.
fn row<'a>(c: &'a serde_json::Value, name: &str) -> &'a serde_json::Value {
    c["metrics"]
        .as_array()
        .expect("metrics")
        .iter()
        .find(|r| r["name"] == name)
        .unwrap_or_else(|| panic!("no row {name} in {c}"))
}

/// A trace of 2000 queries for names of `example.` (the test zone), 30% over TCP.
fn trace(dir: &Path) -> PathBuf {
    let trace = dir.join("t.bin");
    ldplayer(&[
        "synth",
        "--workload",
        "poisson",
        "--rate",
        "2000",
        "-n",
        "2000",
        "--clients",
        "50",
        "--tcp-share",
        "0.3",
        "--zone",
        "example.",
        "--seed",
        "13",
        "-o",
        &s(&trace),
        "-q",
    ]);
    trace
}

/// Replays `trace` against `server` into the results file `name` in `dir`.
fn replay(trace: &Path, server: &str, dir: &Path, name: &str) -> PathBuf {
    let results = dir.join(name);
    ldplayer(&[
        "replay",
        &s(trace),
        "--server",
        server,
        "--speed",
        "2",
        "--results",
        &s(&results),
        "-q",
    ]);
    results
}

/// A replay against a loopback port nothing listens on: every query refused at once.
/// The replay exits 1 (nothing answered), its results written.
fn replay_to_nothing(trace: &Path, dir: &Path) -> PathBuf {
    let results = dir.join("down.res");
    ldplayer_unanswered(&[
        "replay",
        &s(trace),
        "--server",
        &format!("127.0.0.1:{}", free_port()),
        "--speed",
        "2",
        "--results",
        &s(&results),
        "-q",
    ]);
    results
}

#[test]
fn two_knot_builds_are_compared_and_bounds_set_the_exit_status() {
    if !tools(&[("knotd", "knot")]) {
        return;
    }
    let dir = tempfile::tempdir().expect("scratch");
    let trace = trace(dir.path());
    let one = {
        let server = knot_with_workers(1);
        replay(&trace, &server.addr.to_string(), dir.path(), "one.res")
    };
    let two = {
        let server = knot_with_workers(2);
        replay(&trace, &server.addr.to_string(), dir.path(), "two.res")
    };
    let down = replay_to_nothing(&trace, dir.path());
    let (one, two, down) = (s(&one), s(&two), s(&down));

    // The two builds, side by side: every figure of both, latency per transport.
    let out = compare(&[&one, &two]);
    assert_eq!(status(&out), Some(0), "{}", text(&out.stderr));
    let table = text(&out.stdout);
    let header = table
        .lines()
        .find(|l| l.starts_with("metric"))
        .unwrap_or_else(|| panic!("no header in\n{table}"));
    let columns: Vec<&str> = header.split_whitespace().collect();
    assert_eq!(columns, ["metric", "base", "new", "change", "verdict"]);
    for metric in [
        "answered_share",
        "rcode_share.NOERROR",
        "latency_ms.udp.p50",
        "latency_ms.tcp.p99",
        "handshake_ms.tcp.p50",
    ] {
        let line = table
            .lines()
            .find(|l| l.split_whitespace().next() == Some(metric))
            .unwrap_or_else(|| panic!("no {metric} in\n{table}"));
        let cells: Vec<&str> = line.split_whitespace().collect();
        assert!(
            cells[1].parse::<f64>().is_ok() && cells[2].parse::<f64>().is_ok(),
            "both columns have a value: {line}"
        );
    }
    assert!(
        table.contains(&format!("base  {one} (2000 queries)")),
        "{table}"
    );
    // Which build is faster depends on the machine's load, but the exit status follows what
    // the comparison measured: with a bound of 0%, any slower median of NEW fails.
    let out = compare(&[
        &one,
        &two,
        "--json",
        "--max-regression",
        "latency_ms.udp.p50=0",
    ]);
    let c = json(&out);
    let udp = row(&c, "latency_ms.udp.p50");
    let (base, new) = (udp["base"].as_f64(), udp["new"].as_f64());
    let slower = match (base, new) {
        (Some(b), Some(n)) => n > b,
        _ => panic!("both builds answered over UDP: {udp}"),
    };
    assert_eq!(status(&out), Some(if slower { 1 } else { 0 }), "{udp}");
    assert_eq!(
        udp["bound"],
        if slower { "exceeded" } else { "ok" },
        "{udp}"
    );
    assert_eq!(c["regressed"], slower);

    // No server at all: the answered share falls from 1 to 0.
    let tight = compare(&[&one, &down, "--max-regression", "answered_share=5"]);
    assert_eq!(status(&tight), Some(1), "{}", text(&tight.stderr));
    let err = text(&tight.stderr);
    // knotd answers (nearly) every query on loopback; a loaded machine may lose a few.
    assert!(
        err.contains("answered_share regressed past its bound of 5%: ")
            && err.contains(" -> 0 (-100.0%)"),
        "{err}"
    );
    assert!(text(&tight.stdout).contains("OVER BOUND 5%"));
    let loose = compare(&[&one, &down, "--max-regression", "answered_share=100"]);
    assert_eq!(status(&loose), Some(0), "{}", text(&loose.stderr));

    let out = compare(&[
        &one,
        &down,
        "--json",
        "--max-regression",
        "answered_share=5",
        "--max-regression=error_share=1000",
    ]);
    assert_eq!(status(&out), Some(1), "{}", text(&out.stderr));
    let c = json(&out);
    for key in [
        "kind",
        "base",
        "new",
        "warnings",
        "metrics",
        "bounds",
        "regressed",
    ] {
        assert!(c.get(key).is_some(), "no {key} in {c}");
    }
    assert_eq!(c["kind"], "replay");
    assert_eq!(c["regressed"], true);
    assert_eq!(c["base"]["queries"], 2000);
    assert_eq!(c["base"]["path"], one.as_str());
    assert_eq!(c["bounds"][0]["bound"], "answered_share=5");
    assert_eq!(c["bounds"][0]["metric"], "answered_share");
    assert_eq!(c["bounds"][0]["pct"], 5.0);
    assert_eq!(c["bounds"][0]["checked"][0], "answered_share");
    assert_eq!(c["bounds"][0]["exceeded"][0], "answered_share");
    assert_eq!(
        c["bounds"][1]["exceeded"][0], "error_share",
        "from no errors to errors: past any bound"
    );
    let answered = row(&c, "answered_share");
    for key in [
        "name",
        "metric",
        "run",
        "worse",
        "base",
        "new",
        "change_pct",
        "verdict",
        "bound_pct",
        "bound",
    ] {
        assert!(answered.get(key).is_some(), "no {key} in {answered}");
    }
    assert_eq!(answered["worse"], "lower");
    assert!(
        answered["base"].as_f64().is_some_and(|v| v > 0.9),
        "{answered}"
    );
    assert_eq!(answered["new"].as_f64(), Some(0.0));
    assert_eq!(answered["change_pct"], -100.0);
    assert_eq!(answered["verdict"], "worse");
    assert_eq!(answered["bound"], "exceeded");
    let udp = row(&c, "latency_ms.udp.p50");
    assert_eq!(udp["verdict"], "only-base", "no answers, no latency: {udp}");
    assert!(udp["new"].is_null());
}

#[test]
fn unknown_metrics_malformed_bounds_and_mixed_inputs_exit_2() {
    let dir = tempfile::tempdir().expect("scratch");
    let trace = trace(dir.path());
    let down = s(&replay_to_nothing(&trace, dir.path()));

    let out = compare(&[&down, &down, "--max-regression", "latency_p50_ms.udp=10"]);
    assert_eq!(status(&out), Some(2), "{}", text(&out.stderr));
    let err = text(&out.stderr);
    assert!(err.contains("latency_p50_ms.udp=10"), "{err}");
    assert!(
        err.contains("they have: answered_share, timeout_share, error_share"),
        "the metrics there are: {err}"
    );

    let out = compare(&[&down, &down, "--max-regression", "answered_share"]);
    assert_eq!(status(&out), Some(2), "{}", text(&out.stderr));
    assert!(text(&out.stderr).contains("expected METRIC=PCT"));

    let experiment = dir.path().join("experiment");
    std::fs::create_dir(&experiment).expect("mkdir");
    std::fs::write(
        experiment.join("summary.csv"),
        "run,metric,p5,p25,p50,p75,p95,mean,n\n001-r1,server_rss_mib,1,1,1,1,1,1,1\n",
    )
    .expect("summary.csv");
    let out = compare(&[&s(&experiment), &down]);
    assert_eq!(status(&out), Some(2), "{}", text(&out.stderr));
    let err = text(&out.stderr);
    assert!(
        err.contains("is an experiment directory and") && err.contains("is a replay results file"),
        "{err}"
    );
    let out = compare(&[&down, &s(&dir.path().join("missing.res"))]);
    assert_eq!(status(&out), Some(2), "{}", text(&out.stderr));
    assert!(text(&out.stderr).contains("missing.res"));
}

/// Runs the quick example plan (UDP, TCP, TLS at an emulated RTT) at a tiny scale into `out`,
/// with `sets` more.
fn quick_experiment(out: &Path, sets: &[&str]) -> String {
    let plan = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/experiments/quick.toml");
    let mut args = vec![
        "experiment".to_string(),
        s(&plan),
        "-o".into(),
        s(out),
        "-q".into(),
    ];
    let tiny = [
        "trace.synth.rate=100",
        "trace.synth.duration_s=3",
        "run.warmup_s=1",
    ];
    for set in tiny.iter().chain(sets) {
        args.extend(["--set".to_string(), set.to_string()]);
    }
    ldplayer(&args.iter().map(String::as_str).collect::<Vec<_>>());
    s(out)
}

#[test]
fn two_experiments_pair_their_runs() {
    if !prerequisite::netns() {
        return;
    }
    let dir = tempfile::tempdir().expect("scratch");
    let near = quick_experiment(&dir.path().join("near"), &["network.rtt_ms=20"]);
    let far = quick_experiment(&dir.path().join("far"), &["network.rtt_ms=60"]);

    // An experiment against itself: every metric the same, every bound holds.
    let out = compare(&[
        &near,
        &near,
        "--json",
        "--max-regression",
        "server_rss_mib.p50=0",
        "--max-regression",
        "latency_ms.p95@2=0",
    ]);
    assert_eq!(status(&out), Some(0), "{}", text(&out.stderr));
    let c = json(&out);
    assert_eq!(c["kind"], "experiment");
    assert_eq!(c["regressed"], false);
    let runs = c["base"]["runs"].as_array().expect("runs");
    assert_eq!(runs.len(), 3, "{c}");
    assert_eq!(runs[1], "002-proto=tcp-r1");
    assert_eq!(
        c["bounds"][0]["checked"].as_array().map(Vec::len),
        Some(3),
        "every run: {c}"
    );
    assert_eq!(
        c["bounds"][1]["checked"][0], "latency_ms.p95@002-proto=tcp-r1",
        "{c}"
    );
    let cpu = row(&c, "server_cpu_pct.p50@001-proto=udp-r1");
    assert_eq!(cpu["worse"], "higher");
    assert_eq!(cpu["verdict"], "same");
    let noerror = row(&c, "rcode_share.NOERROR@003-proto=tls-r1");
    assert!(
        noerror["base"].as_f64().is_some_and(|v| v > 0.0),
        "{noerror}"
    );

    // Three times the round trip: every run's median latency about three times BASE's (UDP
    // one round trip, TCP two, TLS three), past a bound of 100%, within one of 400%.
    let out = compare(&[
        &near,
        &far,
        "--json",
        "--max-regression",
        "latency_ms.p50=100",
    ]);
    assert_eq!(status(&out), Some(1), "{}", text(&out.stderr));
    let c = json(&out);
    assert_eq!(
        c["bounds"][0]["exceeded"].as_array().map(Vec::len),
        Some(3),
        "{c}"
    );
    let tcp = row(&c, "latency_ms.p50@002-proto=tcp-r1");
    let change = tcp["change_pct"].as_f64().unwrap_or_default();
    assert!((150.0..250.0).contains(&change), "{tcp}");
    assert_eq!(tcp["verdict"], "worse");
    let out = compare(&[&near, &far, "--max-regression", "latency_ms.p50=400"]);
    assert_eq!(status(&out), Some(0), "{}", text(&out.stderr));

    let table = compare(&[&near, &far, "--only", "server_rss_mib.p50"]);
    assert_eq!(status(&table), Some(0), "{}", text(&table.stderr));
    let table = text(&table.stdout);
    assert_eq!(
        table
            .lines()
            .filter(|l| l.starts_with("server_rss_mib.p50@"))
            .count(),
        3,
        "{table}"
    );
    assert!(!table.contains("latency_ms"), "{table}");
}
