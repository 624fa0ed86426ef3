//! What a replay says through its exit status and `-q`: `-q` prints nothing but errors, a replay
//! in which not one query was answered exits 1 after its summary, and a replay that did not keep
//! its trace's timing says so after the summary (and fails with `--strict`), as does `results
//! summary` of its results afterwards.

mod binary;

use binary::{ldplayer, ldplayer_unanswered, s, Serve};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// A zone for `example.`, which the synthetic names fall under (they are answered NXDOMAIN).
fn zone(dir: &Path) -> PathBuf {
    let zone = dir.join("example.zone");
    std::fs::write(
        &zone,
        "example. 3600 IN SOA ns.example. host.example. 1 7200 3600 1209600 300\n\
         example. 3600 IN NS ns.example.\n\
         ns.example. 3600 IN A 192.0.2.1\n",
    )
    .expect("write zone");
    zone
}

/// A trace of `n` queries `interval` seconds apart from 50 clients, in `dir`.
fn trace(dir: &Path, name: &str, n: u32, interval: &str) -> PathBuf {
    let trace = dir.join(name);
    ldplayer(&[
        "synth",
        "--workload",
        "fixed",
        "--interval",
        interval,
        "-n",
        &n.to_string(),
        "--clients",
        "50",
        "--zone",
        "example.",
        "-o",
        &s(&trace),
        "-q",
    ]);
    trace
}

/// Runs `ldplayer ARGS` and returns its output, whatever its exit status.
fn run(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_ldplayer"))
        .args(args)
        .output()
        .expect("ldplayer runs")
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

#[test]
fn quiet_prints_nothing_and_json_only_its_object() {
    let dir = tempfile::tempdir().expect("scratch");
    let server_addr = format!("127.0.0.1:{}", ldplayer_testbed::free_port());
    let _server = Serve::start(&["--listen", &server_addr, &s(&zone(dir.path()))]);
    let trace = trace(dir.path(), "t.bin", 100, "0.002");
    let results = dir.path().join("r.res");
    let out = ldplayer(&[
        "replay",
        &s(&trace),
        "--server",
        &server_addr,
        "--results",
        &s(&results),
        "-q",
    ]);
    assert!(
        out.stdout.is_empty() && out.stderr.is_empty(),
        "replay -q printed: {}{}",
        text(&out.stdout),
        text(&out.stderr)
    );
    assert!(results.is_file());
    let out = ldplayer(&[
        "replay",
        &s(&trace),
        "--server",
        &server_addr,
        "--json",
        "-q",
    ]);
    let printed = text(&out.stdout);
    assert_eq!(printed.lines().count(), 1, "{printed}");
    let v: serde_json::Value = serde_json::from_str(&printed).expect("one JSON object");
    assert_eq!(v["answered"], 100, "{v}");
    assert!(v["fidelity"]["ok"].is_boolean(), "{v}");
    assert!(v["fidelity"]["problems"].is_array(), "{v}");
}

#[test]
fn nothing_answered_exits_1_after_the_summary_and_the_results() {
    let dir = tempfile::tempdir().expect("scratch");
    let trace = trace(dir.path(), "t.bin", 40, "0.002");
    let results = dir.path().join("down.res");
    let nobody = format!("127.0.0.1:{}", ldplayer_testbed::free_port());
    let out = ldplayer_unanswered(&[
        "replay",
        &s(&trace),
        "--server",
        &nobody,
        "--timeout",
        "0.2",
        "--results",
        &s(&results),
    ]);
    let summary = text(&out.stdout);
    assert!(summary.starts_with("40 queries: "), "{summary}");
    assert!(summary.contains(" 0 answered"), "{summary}");
    assert!(
        text(&out.stderr).contains("is the server up, and at this address?"),
        "{}",
        text(&out.stderr)
    );
    // The results are all there, and the run is marked finished.
    let again = ldplayer(&["results", "summary", &s(&results), "--json"]);
    let v: serde_json::Value = serde_json::from_slice(&again.stdout).expect("JSON");
    assert_eq!(v["results"], 40, "{v}");
    assert_eq!(v["complete"], true, "{v}");
}

/// 20,000 queries due within 2 ms cannot all be sent on time by any machine (the kernel alone
/// takes about a microsecond per datagram): the replay must say that its timing was not kept.
#[test]
fn a_timing_not_kept_is_said_and_fails_with_strict() {
    let dir = tempfile::tempdir().expect("scratch");
    let server_addr = format!("127.0.0.1:{}", ldplayer_testbed::free_port());
    let _server = Serve::start(&["--listen", &server_addr, &s(&zone(dir.path()))]);
    let burst = trace(dir.path(), "burst.bin", 20_000, "0.0000001");
    let results = dir.path().join("burst.res");
    let replay = |extra: &[&str]| {
        let mut args = vec![
            "replay".to_string(),
            s(&burst),
            "--server".into(),
            server_addr.clone(),
        ];
        args.extend(extra.iter().map(|a| a.to_string()));
        run(&args.iter().map(String::as_str).collect::<Vec<_>>())
    };

    // Said after the summary, exit status 0 without --strict.
    let out = replay(&["--results", &s(&results)]);
    let said = text(&out.stdout);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let line = said
        .lines()
        .find(|l| l.starts_with("timing: "))
        .unwrap_or_else(|| panic!("no timing line: {said}"));
    assert!(
        line.starts_with("timing: NOT KEPT") && line.contains("timing error p99"),
        "{line}"
    );
    // ... and again by `results summary`, from the file alone.
    let again = ldplayer(&["results", "summary", &s(&results)]);
    assert!(
        text(&again.stdout).contains("timing: NOT KEPT"),
        "{}",
        text(&again.stdout)
    );
    let v: serde_json::Value =
        serde_json::from_slice(&ldplayer(&["results", "summary", &s(&results), "--json"]).stdout)
            .expect("JSON");
    assert_eq!(v["fidelity"]["ok"], false, "{v}");

    // --strict: the exit status says it.
    let out = replay(&["--strict", "-q"]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stdout));
    assert!(out.stdout.is_empty(), "{}", text(&out.stdout));
    assert!(
        text(&out.stderr).contains("--strict: the replay did not keep the trace's timing"),
        "{}",
        text(&out.stderr)
    );

    // As fast as answers come there is no schedule to keep: nothing is judged.
    let out = replay(&["--fast", "--strict", "--json"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON");
    assert_eq!(v["fidelity"]["ok"], true, "{v}");
}
