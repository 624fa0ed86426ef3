//! `ldplayer compare`: two replays against two builds of a real server (knotd with one and with
//! two workers) and one against no server at all; the exit status follows `--max-regression`
//! (0 within, 1 past a bound, 2 for a comparison that cannot be made). A UDP replay and a TLS
//! replay of one trace against ldplayer's server, set against each other with `--as udp=tls`.
//! Experiments compared: compare_experiments.rs.

mod binary;
mod comparing;

use binary::{ldplayer, ldplayer_unanswered, s, Serve};
use comparing::*;
use ldplayer_testbed::{free_port, knot_with_workers, prerequisite::tools};
use std::path::{Path, PathBuf};

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

/// `ldplayer results summary FILE --json`: what a replay measured, read on its own.
fn summary(results: &str) -> serde_json::Value {
    let out = ldplayer(&["results", "summary", results, "--json"]);
    serde_json::from_slice(&out.stdout).expect("one JSON object")
}

/// The names of a `--json` comparison's rows.
fn names(c: &serde_json::Value) -> Vec<String> {
    c["metrics"]
        .as_array()
        .expect("metrics")
        .iter()
        .map(|r| r["name"].as_str().expect("name").to_string())
        .collect()
}

#[test]
fn a_udp_replay_and_a_tls_replay_of_one_trace_compare_with_as() {
    let dir = tempfile::tempdir().expect("scratch");
    std::fs::write(
        dir.path().join("example.zone"),
        "$ORIGIN example.\n$TTL 60\n@ SOA ns admin 1 60 60 60 60\n@ NS ns\nns A 127.0.0.1\n",
    )
    .expect("zone");
    let (port, tls_port) = (free_port(), free_port());
    let tls = dir.path().join("tls");
    let server = Serve::start(&[
        "--listen",
        &format!("127.0.0.1:{port}"),
        "--tls-listen",
        &format!("127.0.0.1:{tls_port}"),
        "--tls-self-signed",
        &s(&tls),
        &s(&dir.path().join("example.zone")),
    ]);
    // The trace keeps 30% of its queries on TCP: replayed as it is, it is a UDP and TCP run.
    let trace = trace(dir.path());
    let plain = format!("127.0.0.1:{port}");
    let replay_over = |proto: &str, server: &str, name: &str, extra: &[&str]| {
        let results = dir.path().join(name);
        let mut args = vec![
            "replay",
            trace.to_str().expect("utf-8"),
            "--server",
            server,
            "--speed",
            "4",
            "--results",
            results.to_str().expect("utf-8"),
            "-q",
        ];
        if !proto.is_empty() {
            args.extend(["--proto", proto]);
        }
        args.extend_from_slice(extra);
        ldplayer(&args);
        s(&results)
    };
    let ca = s(&tls.join("ca.pem"));
    let udp = replay_over("udp", &plain, "udp.res", &[]);
    let tls_at = format!("127.0.0.1:{tls_port}");
    let over_tls = replay_over("tls", &tls_at, "tls.res", &["--tls-ca", &ca]);
    let mixed = replay_over("", &plain, "mixed.res", &[]);
    drop(server);
    let (udp_summary, tls_summary) = (summary(&udp), summary(&over_tls));
    assert_eq!(udp_summary["answered"], 2000, "{udp_summary}");
    assert_eq!(tls_summary["answered"], 2000, "{tls_summary}");

    // Without --as: the latencies have no counterpart, and the warning says which --as would
    // set them against each other.
    let out = compare(&[&udp, &over_tls]);
    assert_eq!(status(&out), Some(0), "{}", text(&out.stderr));
    let err = text(&out.stderr);
    assert!(
        err.contains("BASE's queries over udp have no counterpart in NEW, nor NEW's over tls")
            && err.contains("--as udp=tls sets them against each other"),
        "{err}"
    );
    // A bound on UDP's latency, which the TLS replay cannot have: a comparison that cannot
    // be made (2), not a regression (1), and the error says what to give instead.
    let out = compare(&[&udp, &over_tls, "--max-regression", "latency_ms.udp.p50=10"]);
    assert_eq!(status(&out), Some(2), "{}", text(&out.stderr));
    let err = text(&out.stderr);
    assert!(
        err.contains("replayed no query over udp (its queries went over tls)")
            && err.contains("give --as udp=tls and bound latency_ms.udp=tls.p50"),
        "{err}"
    );

    // With --as udp=tls: BASE's UDP figures against NEW's TLS figures, under the pair's name.
    let out = compare(&[&udp, &over_tls, "--as", "udp=tls", "--json"]);
    assert_eq!(status(&out), Some(0), "{}", text(&out.stderr));
    let c = json(&out);
    assert_eq!(c["as"], serde_json::json!(["udp=tls"]), "{c}");
    assert!(c["warnings"].as_array().is_some_and(Vec::is_empty), "{c}");
    assert!(c["shared"].as_u64().is_some_and(|n| n >= 15), "{c}");
    let rows = names(&c);
    assert!(
        !rows
            .iter()
            .any(|n| n.starts_with("latency_ms.udp.") || n.starts_with("latency_ms.tls.")),
        "the paired transports have no rows of their own: {rows:?}"
    );
    for stat in ["p50", "p99", "mean"] {
        let r = row(&c, &format!("latency_ms.udp=tls.{stat}"));
        assert_eq!(r["base"], udp_summary["latency_ms"]["udp"][stat], "{r}");
        assert_eq!(r["new"], tls_summary["latency_ms"]["tls"][stat], "{r}");
        assert_eq!(r["metric"], format!("latency_ms.udp=tls.{stat}"));
        assert!(
            r["verdict"] != "only-base" && r["verdict"] != "only-new",
            "{r}"
        );
    }
    // UDP has no connection to set up: TLS's handshake is NEW's alone.
    let handshake = row(&c, "handshake_ms.udp=tls.p50");
    assert_eq!(handshake["verdict"], "only-new", "{handshake}");
    assert_eq!(
        handshake["new"], tls_summary["handshake_ms"]["tls"]["p50"],
        "{handshake}"
    );
    assert_eq!(row(&c, "answered_share")["verdict"], "same");

    // Bounds name the pair's rows. Which transport is faster on loopback depends on the
    // machine, but the exit status follows what was measured.
    let p50 = row(&c, "latency_ms.udp=tls.p50");
    let slower = p50["new"].as_f64() > p50["base"].as_f64();
    let out = compare(&[
        &udp,
        &over_tls,
        "--as",
        "udp=tls",
        "--max-regression",
        "latency_ms.udp=tls.p50=0",
    ]);
    assert_eq!(
        status(&out),
        Some(if slower { 1 } else { 0 }),
        "{}",
        text(&out.stderr)
    );
    if slower {
        assert!(
            text(&out.stderr).contains("latency_ms.udp=tls.p50 regressed past its bound of 0%"),
            "{}",
            text(&out.stderr)
        );
    }
    let table = text(&out.stdout);
    let line = table
        .lines()
        .find(|l| l.starts_with("latency_ms.udp=tls.p50 "))
        .unwrap_or_else(|| panic!("no pair row in\n{table}"));
    let cells: Vec<&str> = line.split_whitespace().collect();
    assert!(
        cells[1].parse::<f64>().is_ok() && cells[2].parse::<f64>().is_ok(),
        "{line}"
    );
    let out = compare(&[
        &udp,
        &over_tls,
        "--as",
        "udp=tls",
        "--max-regression",
        "latency_ms.udp=tls.p50=100000",
    ]);
    assert_eq!(status(&out), Some(0), "{}", text(&out.stderr));
    // A bound on the plain name of a paired transport names no row: the error lists the rows.
    let out = compare(&[
        &udp,
        &over_tls,
        "--as",
        "udp=tls",
        "--max-regression",
        "latency_ms.udp.p50=10",
    ]);
    assert_eq!(status(&out), Some(2), "{}", text(&out.stderr));
    assert!(
        text(&out.stderr).contains("they have: answered_share")
            && text(&out.stderr).contains("latency_ms.udp=tls.p50"),
        "{}",
        text(&out.stderr)
    );

    // Several pairs: the UDP and the TCP queries of the mixed replay, each against TLS.
    let mixed_summary = summary(&mixed);
    let out = compare(&[
        &mixed, &over_tls, "--as", "udp=tls", "--as", "tcp=tls", "--json",
    ]);
    assert_eq!(status(&out), Some(0), "{}", text(&out.stderr));
    let c = json(&out);
    for proto in ["udp", "tcp"] {
        let r = row(&c, &format!("latency_ms.{proto}=tls.p50"));
        assert_eq!(r["base"], mixed_summary["latency_ms"][proto]["p50"], "{r}");
        assert_eq!(r["new"], tls_summary["latency_ms"]["tls"]["p50"], "{r}");
    }
    let tcp_handshake = row(&c, "handshake_ms.tcp=tls.p50");
    assert_eq!(
        tcp_handshake["base"], mixed_summary["handshake_ms"]["tcp"]["p50"],
        "TCP's set-up against TLS's: {tcp_handshake}"
    );

    // A transport a side did not use, a malformed pair: exit 2, saying why.
    for (pair, why) in [
        (
            "udp=tcp",
            "--as udp=tcp: NEW (".to_string() + &over_tls + ") replayed no query over tcp",
        ),
        (
            "tls=udp",
            "--as tls=udp: BASE (".to_string() + &udp + ") replayed no query over tls",
        ),
        ("udp", "--as udp: expected BASE=NEW".to_string()),
        ("udp=udp", "is what compare does without --as".to_string()),
    ] {
        let out = compare(&[&udp, &over_tls, "--as", pair]);
        assert_eq!(status(&out), Some(2), "{pair}: {}", text(&out.stderr));
        assert!(
            text(&out.stderr).contains(&why),
            "{pair}: {}",
            text(&out.stderr)
        );
    }
}
