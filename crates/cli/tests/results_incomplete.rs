//! A replay killed with SIGKILL leaves its results file marked unfinished (`complete: false`
//! in its header): every reader says so plainly, `results summary` (text and JSON), `results
//! export`, `report` (a warning box at the top of the page), `compare` and `results merge`
//! (whose output is unfinished too). Garbage appended to a whole file is said as trailing
//! garbage, not as results lost. Real replays against knotd on loopback.

mod binary;

use binary::{ldplayer, s};
use ldplayer_testbed::knot;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

fn json(out: &std::process::Output) -> serde_json::Value {
    serde_json::from_slice(&out.stdout).expect("one JSON object")
}

/// A trace of 5 s at 1,000 queries per second from 10 clients.
fn trace(dir: &Path) -> PathBuf {
    let trace = dir.join("t.bin");
    ldplayer(&[
        "synth",
        "--workload",
        "fixed",
        "--interval",
        "0.001",
        "-n",
        "5000",
        "--clients",
        "10",
        "--zone",
        "example.",
        "-o",
        &s(&trace),
        "-q",
    ]);
    trace
}

/// Whether the results file at `path` holds a whole block yet.
fn has_a_block(path: &Path) -> bool {
    let Ok(bytes) = std::fs::read(path) else {
        return false;
    };
    let Some(header) = bytes.get(10..12) else {
        return false;
    };
    let header = u16::from_le_bytes([header[0], header[1]]) as usize;
    bytes.len() >= header + 16 + 56
}

/// Replays `trace` into `results` and kills the replay with SIGKILL once its file holds a
/// block, mid-run.
fn killed_replay(trace: &Path, server: &str, results: &Path) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_ldplayer"))
        .args([
            "replay",
            &s(trace),
            "--server",
            server,
            "--results",
            &s(results),
            "-q",
        ])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("ldplayer starts");
    let give_up = Instant::now() + Duration::from_secs(30);
    while !has_a_block(results) && Instant::now() < give_up {
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(has_a_block(results), "no block written in 30 s");
    assert!(
        child.try_wait().expect("wait").is_none(),
        "the replay is still running when killed"
    );
    child.kill().expect("SIGKILL");
    child.wait().expect("reaped");
}

#[test]
fn every_reader_says_a_killed_replays_results_are_incomplete() {
    let server = knot();
    let addr = server.addr.to_string();
    let dir = tempfile::tempdir().expect("scratch");
    let trace = trace(dir.path());
    let killed = dir.path().join("killed.res");
    killed_replay(&trace, &addr, &killed);
    let done = dir.path().join("done.res");
    ldplayer(&[
        "replay",
        &s(&trace),
        "--server",
        &addr,
        "--fast",
        "--results",
        &s(&done),
        "-q",
    ]);
    let says = "killed.res is INCOMPLETE";

    // results summary, text: the warning comes first.
    let out = ldplayer(&["results", "summary", &s(&killed)]);
    let first = text(&out.stdout)
        .lines()
        .next()
        .unwrap_or_default()
        .to_string();
    assert!(
        first.starts_with("WARNING: ") && first.contains(says),
        "{first}"
    );
    let out = ldplayer(&["results", "summary", &s(&done)]);
    assert!(
        !text(&out.stdout).contains("WARNING"),
        "{}",
        text(&out.stdout)
    );
    // ... and JSON.
    let out = ldplayer(&["results", "summary", &s(&killed), "--json"]);
    let v = json(&out);
    assert_eq!(v["complete"], false, "{v}");
    assert!(
        v["warnings"][0].as_str().unwrap_or_default().contains(says),
        "{v}"
    );
    assert!(text(&out.stderr).contains(says), "{}", text(&out.stderr));
    let v = json(&ldplayer(&["results", "summary", &s(&done), "--json"]));
    assert_eq!(
        (v["complete"].clone(), v["warnings"].clone()),
        (true.into(), serde_json::json!([]))
    );

    // results export.
    let out = ldplayer(&[
        "results",
        "export",
        &s(&killed),
        "--csv",
        "-o",
        &s(&dir.path().join("k.csv")),
    ]);
    assert!(text(&out.stderr).contains(says), "{}", text(&out.stderr));
    let out = ldplayer(&[
        "results",
        "export",
        &s(&killed),
        "--jsonl",
        "-o",
        &s(&dir.path().join("k.jsonl")),
        "--json",
    ]);
    assert_eq!(json(&out)["complete"], false);

    // report: a warning box before the figures.
    let html = dir.path().join("r.html");
    ldplayer(&["report", &s(&killed), "-o", &s(&html), "-q"]);
    let page = std::fs::read_to_string(&html).expect("the page");
    let warning = page.find("<p class=\"warning\"").expect("a warning box");
    assert!(warning < page.find("<main>").expect("main") && page[warning..].contains(says));

    // compare.
    let out = Command::new(env!("CARGO_BIN_EXE_ldplayer"))
        .args(["compare", &s(&done), &s(&killed)])
        .output()
        .expect("compare runs");
    assert!(text(&out.stderr).contains(says), "{}", text(&out.stderr));

    // results merge: named, and the merged file is unfinished too.
    let merged = dir.path().join("merged.res");
    let out = ldplayer(&["results", "merge", &s(&killed), "-o", &s(&merged)]);
    assert!(
        text(&out.stderr).contains("merged.res is INCOMPLETE"),
        "{}",
        text(&out.stderr)
    );
    let v = json(&ldplayer(&["results", "summary", &s(&merged), "--json"]));
    assert_eq!(v["complete"], false, "{v}");
    let whole = dir.path().join("whole.res");
    ldplayer(&["results", "merge", &s(&done), "-o", &s(&whole)]);
    let v = json(&ldplayer(&["results", "summary", &s(&whole), "--json"]));
    assert_eq!(v["complete"], true, "{v}");
}

/// 5,000 bytes of garbage after a whole results file were read as "89 results lost": they are
/// trailing garbage, said with where they start.
#[test]
fn garbage_after_a_whole_results_file_is_not_results_lost() {
    let server = knot();
    let dir = tempfile::tempdir().expect("scratch");
    let trace = trace(dir.path());
    let res = dir.path().join("r.res");
    ldplayer(&[
        "replay",
        &s(&trace),
        "--server",
        &server.addr.to_string(),
        "--fast",
        "--results",
        &s(&res),
        "-q",
    ]);
    let mut bytes = std::fs::read(&res).expect("results");
    let end = bytes.len();
    let mut x = 0x9E37_79B9_7F4A_7C15u64;
    bytes.extend((0..5000).map(|_| {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        (x >> 32) as u8
    }));
    std::fs::write(&res, &bytes).expect("write");
    let out = ldplayer(&["results", "summary", &s(&res), "--json"]);
    let v = json(&out);
    assert_eq!(v["results"], 5000, "{v}");
    assert_eq!(v["file_damage"]["results_lost"], 0, "{v}");
    assert_eq!(v["file_damage"]["trailing_garbage"], 5000, "{v}");
    assert_eq!(v["file_damage"]["trailing_garbage_at"], end, "{v}");
    let err = text(&out.stderr);
    assert!(
        err.contains(&format!("5000 bytes of trailing garbage at offset {end}"))
            && !err.contains("lost"),
        "{err}"
    );
}
