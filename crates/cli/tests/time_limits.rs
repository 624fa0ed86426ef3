//! Times that do not fit are refused: a trace's times are signed 64-bit nanoseconds since the
//! epoch (1677 to 2262), and `mutate --time-scale`/`--time-shift` and `synth --start`,
//! `--interval`, `--rate` and `--duration` used to write wrong times, saturated or wrapped, with
//! exit 0. Each flag now fails with an error that names it and the limit, up front where the
//! value alone is wrong, at the first record that would leave the range otherwise, and leaves
//! no output behind.

mod binary;

use binary::{ldplayer, ldplayer_fails, s};
use std::path::Path;

/// Runs a command that must be refused: non-zero exit, `flag` and the limit in the error, and
/// `output` not created.
fn refused(args: &[&str], flag: &str, output: &Path) {
    let out = ldplayer_fails(args);
    let err = String::from_utf8_lossy(&out.stderr);
    // The range of a trace's times, or the option's own range where the value alone is out
    // of any use (checked as the option is parsed).
    assert!(
        err.contains(flag) && (err.contains("2262") || err.contains("expected")),
        "{args:?}: the error should name {flag} and the limit: {err}"
    );
    assert!(!output.exists(), "{args:?} left {}", output.display());
}

fn start_of(trace: &Path) -> f64 {
    let out = ldplayer(&["inspect", &s(trace), "--json"]);
    let summary: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
    summary["start"].as_f64().expect("start")
}

#[test]
fn mutate_refuses_time_edits_that_leave_the_range() {
    let dir = tempfile::tempdir().expect("scratch");
    let trace = dir.path().join("t.bin");
    // 2024-01-01 and 10 queries 1 ms apart.
    ldplayer(&[
        "synth",
        "-n",
        "10",
        "--interval",
        "0.001",
        "-o",
        &s(&trace),
        "-q",
    ]);
    let out = dir.path().join("out.bin");
    let o = s(&out);
    let t = s(&trace);
    // Per record: the second record is 1 ms after the start, times 1e300.
    refused(
        &["mutate", &t, "-o", &o, "--time-scale", "1e300"],
        "time-scale",
        &out,
    );
    // Per record: a shift that is a valid time but moves 2024 past 2262.
    refused(
        &["mutate", &t, "-o", &o, "--time-shift", "9e9"],
        "time-shift",
        &out,
    );
    // Up front: shifts no time can hold.
    for shift in ["9999999999", "-9999999999", "nan", "inf"] {
        refused(
            &["mutate", &t, "-o", &o, "--time-shift", shift],
            "--time-shift",
            &out,
        );
    }
    // Up front: factors that mean nothing.
    for k in ["nan", "inf", "-1", "0"] {
        let out_err = ldplayer_fails(&["mutate", &t, "-o", &o, &format!("--time-scale={k}")]);
        let err = String::from_utf8_lossy(&out_err.stderr);
        assert!(err.contains("--time-scale"), "{k}: {err}");
        assert!(!out.exists());
    }
    // What fits still works: back by 1e9 s (2024 to 1992) and stretched 1000 times.
    ldplayer(&[
        "mutate",
        &t,
        "-o",
        &o,
        "--time-shift",
        "-1e9",
        "--time-scale",
        "1000",
        "-q",
    ]);
    assert!((start_of(&out) - (start_of(&trace) - 1e9)).abs() < 1e-3);
}

#[test]
fn synth_refuses_times_that_leave_the_range() {
    let dir = tempfile::tempdir().expect("scratch");
    let out = dir.path().join("s.bin");
    let o = s(&out);
    for (args, flag) in [
        (vec!["--start", "1e300"], "--start"),
        (vec!["--start=-1e11"], "--start"),
        (vec!["--start", "nan"], "--start"),
        (vec!["--interval", "1e300"], "--interval"),
        (vec!["--interval", "inf"], "--interval"),
        (vec!["--duration", "1e300"], "--duration"),
        // Each value fits, the last query does not: 10 queries 1e9 s apart from 2024.
        (vec!["--interval", "1e9"], "--interval"),
        (vec!["--start", "9223372030", "--interval", "1"], "--start"),
        // Poisson gaps at the slowest rate from near the end of the range: a later query is
        // out of it.
        (
            vec![
                "--workload",
                "poisson",
                "--rate",
                "0.001",
                "--start",
                "9223370000",
            ],
            "lower the count, the interval or the start, or raise the rate",
        ),
    ] {
        let mut argv = vec!["synth", "-n", "10", "-o", &o];
        argv.extend(args);
        refused(&argv, flag, &out);
    }
    // Below a nanosecond: the resolution of times.
    let e = ldplayer_fails(&["synth", "-n", "10", "-o", &o, "--interval", "1e-12"]);
    assert!(String::from_utf8_lossy(&e.stderr).contains("--interval"));
    // What fits still works, to the last second of 2262.
    ldplayer(&[
        "synth",
        "-n",
        "10",
        "--start",
        "9223372000",
        "--interval",
        "1",
        "-o",
        &o,
        "-q",
    ]);
    assert_eq!(start_of(&out), 9_223_372_000.0);
}
