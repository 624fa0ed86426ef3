//! `ldplayer compare` of two real experiments: runs paired by their ids, and experiments whose
//! runs are numbered differently paired by their varied values (the replays: compare.rs).

mod binary;
mod comparing;

use binary::{ldplayer, s};
use comparing::*;
use ldplayer_testbed::prerequisite;
use std::path::Path;

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

/// The `p50` of `metric` for `run` in an experiment's `summary.csv`, read on its own.
fn summary_p50(experiment: &str, run: &str, metric: &str) -> f64 {
    let text = std::fs::read_to_string(Path::new(experiment).join("summary.csv")).expect("csv");
    let mut lines = text.lines();
    let header: Vec<&str> = lines.next().expect("header").split(',').collect();
    let column = |name: &str| header.iter().position(|h| *h == name).expect(name);
    let (r, m, p50) = (column("run"), column("metric"), column("p50"));
    lines
        .map(|l| l.split(',').collect::<Vec<_>>())
        .find(|cells| cells[r] == run && cells[m] == metric)
        .and_then(|cells| cells[p50].parse().ok())
        .unwrap_or_else(|| panic!("no {metric} p50 of {run} in\n{text}"))
}

/// Whether a JSON number is `expected` but for the last digits (serde_json reads decimal
/// numbers to within an ulp or so, not always to the nearest double).
fn close(value: &serde_json::Value, expected: f64) -> bool {
    value
        .as_f64()
        .is_some_and(|v| (v - expected).abs() <= 1e-12 * expected.abs())
}

#[test]
fn experiments_numbered_differently_pair_runs_by_their_varied_values() {
    if !prerequisite::netns() {
        return;
    }
    let dir = tempfile::tempdir().expect("scratch");
    // 001-proto=udp-r1, 002-proto=tcp-r1 against 001-proto=tcp-r1, 002-proto=tls-r1, and
    // against 001-proto=tls-r1 alone.
    let udp_tcp = quick_experiment(
        &dir.path().join("udp-tcp"),
        &[r#"vary.proto=["udp","tcp"]"#],
    );
    let tcp_tls = quick_experiment(
        &dir.path().join("tcp-tls"),
        &[r#"vary.proto=["tcp","tls"]"#],
    );
    let tls = quick_experiment(&dir.path().join("tls"), &[r#"vary.proto=["tls"]"#]);

    // TCP's runs pair, whatever their numbers; the others are said to have no partner.
    let out = compare(&[&udp_tcp, &tcp_tls, "--json"]);
    assert_eq!(status(&out), Some(0), "{}", text(&out.stderr));
    let c = json(&out);
    assert_eq!(
        c["run_pairs"],
        serde_json::json!([
            {"base": "001-proto=udp-r1", "new": null, "transports": null},
            {"base": "002-proto=tcp-r1", "new": "001-proto=tcp-r1", "transports": null},
            {"base": null, "new": "002-proto=tls-r1", "transports": null},
        ]),
        "{c}"
    );
    let tcp = row(&c, "latency_ms.p50@002-proto=tcp-r1");
    assert_eq!(tcp["run"], "002-proto=tcp-r1");
    assert_eq!(tcp["new_run"], "001-proto=tcp-r1");
    let expected = summary_p50(&tcp_tls, "001-proto=tcp-r1", "latency_ms");
    assert!(close(&tcp["new"], expected), "{tcp}");
    let expected = summary_p50(&udp_tcp, "002-proto=tcp-r1", "latency_ms");
    assert!(close(&tcp["base"], expected), "{tcp}");
    assert_eq!(
        row(&c, "rcode_share.NOERROR@002-proto=tcp-r1")["verdict"],
        "same",
        "the response codes of the paired runs' results files"
    );
    assert_eq!(
        row(&c, "latency_ms.p50@001-proto=udp-r1")["verdict"],
        "only-base"
    );
    assert_eq!(
        row(&c, "latency_ms.p50@002-proto=tls-r1")["verdict"],
        "only-new"
    );
    let warnings = c["warnings"].to_string();
    for said in [
        "runs only BASE has: 001-proto=udp-r1",
        "runs only NEW has: 002-proto=tls-r1",
        "--as udp=tls pairs them",
    ] {
        assert!(warnings.contains(said), "{said}: {warnings}");
    }
    // The table says which runs paired; a bound names a run by BASE's name or by NEW's.
    let out = compare(&[
        &udp_tcp,
        &tcp_tls,
        "--only",
        "latency_ms.p50",
        "--max-regression",
        "server_cpu_pct.p50@001-proto=tcp-r1=1000000",
    ]);
    assert_eq!(status(&out), Some(0), "{}", text(&out.stderr));
    let table = text(&out.stdout);
    let pairs: Vec<Vec<&str>> = table
        .lines()
        .skip_while(|l| !l.starts_with("runs paired by their varied values"))
        .skip(2)
        .take(3)
        .map(|l| l.split_whitespace().collect())
        .collect();
    assert_eq!(
        pairs,
        [
            vec!["001-proto=udp-r1", "-"],
            vec!["002-proto=tcp-r1", "001-proto=tcp-r1"],
            vec!["-", "002-proto=tls-r1"]
        ],
        "{table}"
    );
    let out = compare(&[
        &udp_tcp,
        &tcp_tls,
        "--json",
        "--max-regression",
        "latency_ms.p50@001-proto=tcp-r1=1000000",
    ]);
    assert_eq!(
        json(&out)["bounds"][0]["checked"],
        serde_json::json!(["latency_ms.p50@002-proto=tcp-r1"]),
        "NEW's name of the run"
    );

    // --as udp=tls: the UDP run against the TLS run, a third of the latency at 20 ms RTT
    // (UDP one round trip, TLS three).
    let out = compare(&[
        &udp_tcp,
        &tcp_tls,
        "--as",
        "udp=tls",
        "--json",
        "--max-regression",
        "latency_ms.p50@1=100",
    ]);
    assert_eq!(status(&out), Some(1), "{}", text(&out.stderr));
    let c = json(&out);
    assert_eq!(c["run_pairs"][0]["new"], "002-proto=tls-r1", "{c}");
    assert_eq!(c["run_pairs"][0]["transports"], "udp=tls", "{c}");
    assert_eq!(c["run_pairs"].as_array().map(Vec::len), Some(2), "{c}");
    let udp_tls = row(&c, "latency_ms.p50@001-proto=udp-r1");
    assert_eq!(udp_tls["new_run"], "002-proto=tls-r1");
    let change = udp_tls["change_pct"].as_f64().unwrap_or_default();
    assert!((150.0..250.0).contains(&change), "{udp_tls}");
    assert_eq!(udp_tls["bound"], "exceeded");

    // No run in common: said plainly, with the --as that pairs them; and with it, compared.
    let out = compare(&[&udp_tcp, &tls]);
    assert_eq!(status(&out), Some(0), "{}", text(&out.stderr));
    let table = text(&out.stdout);
    assert!(
        table.contains("nothing compared: BASE and NEW share no metric"),
        "{table}"
    );
    assert!(
        !table.lines().any(|l| l.ends_with("only in base")),
        "no row listed: {table}"
    );
    let err = text(&out.stderr);
    assert!(
        err.contains("no run of NEW has the varied values and repeat of a run of BASE")
            && err.contains("--as udp=tls --as tcp=tls pairs them"),
        "{err}"
    );
    let out = compare(&[
        &udp_tcp, &tls, "--as", "udp=tls", "--as", "tcp=tls", "--json",
    ]);
    assert_eq!(status(&out), Some(0), "{}", text(&out.stderr));
    let c = json(&out);
    let tls_p50 = summary_p50(&tls, "001-proto=tls-r1", "latency_ms");
    for run in ["001-proto=udp-r1", "002-proto=tcp-r1"] {
        let r = row(&c, &format!("latency_ms.p50@{run}"));
        assert!(close(&r["new"], tls_p50), "{r}");
        assert_eq!(r["new_run"], "001-proto=tls-r1", "{r}");
    }
    // A transport a side's runs do not have, or two pairs for one run of BASE: exit 2.
    for (pairs, why) in [
        (&["udp=tcp"][..], "NEW ("),
        (
            &["udp=tls", "udp=https"][..],
            "a run of BASE pairs with one run of NEW",
        ),
    ] {
        let mut args = vec![udp_tcp.as_str(), tls.as_str()];
        for p in pairs {
            args.extend(["--as", p]);
        }
        let out = compare(&args);
        assert_eq!(status(&out), Some(2), "{pairs:?}: {}", text(&out.stderr));
        assert!(text(&out.stderr).contains(why), "{}", text(&out.stderr));
    }
}
