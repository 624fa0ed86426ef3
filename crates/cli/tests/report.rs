//! `ldplayer report` (issue 13) on what ldplayer really wrote: replays of a real server and a
//! real experiment, read in headless Chromium with the network off (no console message, nothing
//! fetched, every figure drawn); damaged and foreign inputs; and the demo's study.
//!
//! Screenshots and pages are kept in `target/test-artifacts/cli-report/`.

mod binary;

use binary::{ldplayer, ldplayer_fails, s};
use ldplayer_testbed::{
    browser::{self, Rect, Screenshot},
    prerequisite,
};
use std::path::{Path, PathBuf};
use std::sync::Mutex;

/// Experiments share two cores: one at a time.
static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

/// Where a test leaves its pages and screenshots, emptied first.
fn artifacts(name: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../target/test-artifacts/cli-report")
        .join(name);
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("artifact directory");
    dir
}

/// Loads `html` in Chromium and checks it as a reader would: nothing logged, nothing fetched,
/// the figures `expected` (ids without `fig-`) all there and each with drawn content.
fn check_in_browser(html: &Path, out: &Path, expected: &[&str]) {
    let rendering = browser::render(html, out).expect("render in chromium");
    eprintln!("screenshot: {}", rendering.screenshot.display());
    assert!(
        rendering.console.is_empty(),
        "console: {:#?}",
        rendering.console
    );
    assert!(
        rendering.fetched.is_empty(),
        "fetched: {:?}",
        rendering.fetched
    );
    assert!(
        rendering.page_height <= browser::MAX_HEIGHT,
        "the page ({} px) does not fit in one screenshot",
        rendering.page_height
    );
    let found: Vec<&str> = rendering
        .figures
        .iter()
        .map(|f| f.id.trim_start_matches("fig-"))
        .collect();
    for id in expected {
        assert!(found.contains(id), "no figure {id} in {found:?}");
    }
    let screenshot = Screenshot::open(&rendering.screenshot).expect("screenshot");
    for figure in &rendering.figures {
        let Some(drawing) = figure.drawing else {
            // A figure not worth drawing (all 0, too few values) says why in its place.
            let note = figure.note.as_deref().unwrap_or_default();
            assert!(!note.is_empty(), "{} has no drawing and no note", figure.id);
            assert!(!screenshot.ink(figure.rect).is_blank(), "{}", figure.id);
            continue;
        };
        // Every text of the drawing (title, ticks, legend) is shown whole, inside it.
        for text in &figure.texts {
            assert!(
                drawing.contains(&text.rect) && !text.text.contains('…'),
                "{}: {:?} is not shown whole ({:?} in {drawing:?})",
                figure.id,
                text.text,
                text.rect
            );
        }
        let ink = screenshot.ink(drawing);
        assert!(!ink.is_blank(), "{} is blank: {ink:?}", figure.id);
        // Curves, marks and boxes are in colour; axes and text are black and grey. The legend
        // (the right quarter of a figure) has coloured samples of its own, so it is left out.
        let legend = drawing.width * 200 / ldplayer_report::render::WIDTH;
        let plot = Rect {
            width: drawing.width - legend,
            ..drawing
        };
        let ink = screenshot.ink(plot);
        assert!(
            ink.vivid > 30,
            "{}: nothing drawn in colour: {ink:?}",
            figure.id
        );
    }
}

fn read_json(out: &std::process::Output) -> serde_json::Value {
    serde_json::from_slice(&out.stdout).expect("one JSON object")
}

#[test]
fn replays_of_a_real_server_make_a_report_a_browser_shows() {
    if browser::chromium().is_none() {
        return;
    }
    let server = ldplayer_testbed::knot();
    let dir = tempfile::tempdir().expect("scratch");
    let trace = dir.path().join("q.bin");
    ldplayer(&[
        "synth",
        "--workload",
        "poisson",
        "--rate",
        "400",
        "-n",
        "1200",
        "--clients",
        "40",
        "--zone",
        "example.",
        "-o",
        &s(&trace),
        "-q",
    ]);
    let mut inputs = Vec::new();
    for proto in ["udp", "tcp"] {
        let results = dir.path().join(format!("{proto}.res"));
        ldplayer(&[
            "replay",
            &s(&trace),
            "--server",
            &server.addr.to_string(),
            "--proto",
            proto,
            "--results",
            &s(&results),
            "-q",
        ]);
        inputs.push(s(&results));
    }
    let out_dir = artifacts("replays");
    let html = out_dir.join("report.html");
    let mut args = vec!["report".to_string()];
    args.extend(inputs);
    args.extend(["-o".into(), s(&html), "--json".into()]);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let v = read_json(&ldplayer(&args));
    assert!(v["figures"].as_u64().unwrap() >= 8, "{v}");
    assert_eq!(v["notes"].as_array().map(Vec::len), Some(0), "{v}");
    let page = std::fs::read_to_string(&html).expect("report");
    // Both inputs side by side, each transport named.
    for series in ["udp udp", "tcp tcp"] {
        assert!(page.contains(series), "no series {series:?}");
    }
    for id in [
        "replay-latency-cdf",
        "replay-latency-ccdf",
        "replay-interarrival-cdf",
    ] {
        assert!(
            out_dir.join(format!("report-figures/{id}.svg")).is_file(),
            "{id}.svg"
        );
        assert!(
            out_dir.join(format!("report-figures/{id}.png")).is_file(),
            "{id}.png"
        );
    }
    check_in_browser(
        &html,
        &out_dir,
        &[
            "replay-latency-cdf",
            "replay-latency-ccdf",
            "replay-answers-per-second",
            "replay-timing-error-cdf",
            "replay-connections-per-second",
            "replay-rcodes-per-second",
            "replay-rate-error-cdf",
            "replay-interarrival-cdf",
        ],
    );
}

#[test]
fn an_experiment_draws_its_report_and_a_browser_shows_it() {
    let _one = ONE_AT_A_TIME.lock();
    if !prerequisite::netns() || browser::chromium().is_none() {
        return;
    }
    let out_dir = artifacts("experiment");
    let exp = out_dir.join("quick");
    let examples = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/experiments");
    let v = read_json(&ldplayer(&[
        "experiment",
        &s(&examples.join("quick.toml")),
        "-o",
        &s(&exp),
        "--set",
        "trace.synth.rate=150",
        "--set",
        "trace.synth.duration_s=4",
        "--set",
        "run.warmup_s=1",
        "--json",
    ]));
    let html = exp.join("report.html");
    assert_eq!(v["report"].as_str(), Some(s(&html).as_str()), "{v}");
    let page = std::fs::read_to_string(&html).expect("the experiment's report");
    // The header names the machine and the plan's varied values.
    for fact in ["kernel", "proto", "udp, tcp, tls"] {
        assert!(page.contains(fact), "no {fact:?} in the header");
    }
    check_in_browser(
        &html,
        &out_dir,
        &[
            "exp-latency",
            "exp-latency-nonbusy",
            "exp-server-memory",
            "exp-server-cpu",
            "exp-tcp-established",
            "exp-response-bandwidth",
            "exp-memory-over-time",
            "exp-connections-model",
        ],
    );
    // `report` draws the same experiment again, with a title of our own.
    let again = out_dir.join("again/report.html");
    ldplayer(&[
        "report",
        &s(&exp),
        "-o",
        &s(&again),
        "--title",
        "quick <again> & more",
        "-q",
    ]);
    let page = std::fs::read_to_string(&again).expect("report");
    assert!(page.contains("quick &lt;again&gt; &amp; more"));
}

#[test]
fn damaged_and_foreign_inputs_get_clear_errors_or_what_could_be_read() {
    let dir = tempfile::tempdir().expect("scratch");
    let d = dir.path();
    // A real results file, from a replay against a real server.
    let server = ldplayer_testbed::knot();
    let trace = d.join("q.bin");
    ldplayer(&[
        "synth",
        "--workload",
        "fixed",
        "--interval",
        "0.001",
        "-n",
        "3000",
        "--clients",
        "10",
        "--zone",
        "example.",
        "-o",
        &s(&trace),
        "-q",
    ]);
    let results = d.join("run.res");
    ldplayer(&[
        "replay",
        &s(&trace),
        "--server",
        &server.addr.to_string(),
        "--fast",
        "--results",
        &s(&results),
        "-q",
    ]);
    let bytes = std::fs::read(&results).expect("results");

    // Cut in its middle: the blocks before the cut are drawn, the loss is said.
    let cut = d.join("cut.res");
    std::fs::write(&cut, &bytes[..bytes.len() * 2 / 3]).expect("write");
    let out = ldplayer(&["report", &s(&cut), "-o", &s(&d.join("cut/report.html"))]);
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(said.contains("cut"), "no word of the damage: {said}");
    let page = std::fs::read_to_string(d.join("cut/report.html")).expect("report");
    assert!(
        page.contains("What could not be read"),
        "no section on the loss"
    );

    // A newer format version: refused, saying so.
    let newer = d.join("newer.res");
    let mut b = bytes.clone();
    b[8] = 3; // the u16 version after the 8-byte magic, little-endian
    b[9] = 0;
    std::fs::write(&newer, &b).expect("write");
    let out = ldplayer_fails(&["report", &s(&newer), "-o", &s(&d.join("n.html"))]);
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(said.contains("version"), "{said}");
    assert!(
        !d.join("n.html").exists(),
        "a report of nothing was written"
    );

    // Not results at all, and an empty folder.
    let junk = d.join("junk.res");
    std::fs::write(&junk, b"this is not a results file at all, just some words").expect("write");
    let out = ldplayer_fails(&["report", &s(&junk), "-o", &s(&d.join("j.html"))]);
    assert!(!out.stderr.is_empty());
    let empty = d.join("empty");
    std::fs::create_dir(&empty).expect("mkdir");
    let out = ldplayer_fails(&["report", &s(&empty), "-o", &s(&d.join("e.html"))]);
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(said.contains("experiment"), "{said}");
    // One bad input among good ones: nothing is drawn, the bad one is named.
    let out = ldplayer_fails(&[
        "report",
        &s(&results),
        &s(&junk),
        "-o",
        &s(&d.join("mixed.html")),
    ]);
    assert!(String::from_utf8_lossy(&out.stderr).contains("junk.res"));
}

#[test]
fn the_demo_is_a_study_that_ends_with_its_report_and_findings() {
    let _one = ONE_AT_A_TIME.lock();
    if !prerequisite::netns() {
        return;
    }
    // As README's first command runs it, without --dir, from a folder that must stay empty:
    // the study goes into the Cargo target folder the program was built in.
    let cwd = tempfile::tempdir().expect("scratch");
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_ldplayer"))
        .arg("demo")
        .current_dir(cwd.path())
        .output()
        .expect("ldplayer runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let left: Vec<_> = std::fs::read_dir(cwd.path())
        .expect("list")
        .filter_map(|e| e.ok().map(|e| e.file_name()))
        .collect();
    assert!(
        left.is_empty(),
        "the demo left files where it was run: {left:?}"
    );
    // The report's path, then three findings.
    let text = String::from_utf8_lossy(&out.stdout);
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 4, "{text}");
    let report = std::path::PathBuf::from(
        lines[0]
            .strip_prefix("report: ")
            .unwrap_or_else(|| panic!("{text}")),
    );
    let study = report.parent().expect("the study's folder").to_path_buf();
    let target = Path::new(env!("CARGO_BIN_EXE_ldplayer"))
        .parent()
        .and_then(Path::parent)
        .expect("the target folder");
    assert_eq!(
        study.parent().map(|p| p.canonicalize().expect("exists")),
        Some(target.canonicalize().expect("exists")),
        "{}",
        study.display()
    );
    assert!(report.is_file());
    for (line, proto) in lines[1..].iter().zip(["UDP", "TCP", "TLS"]) {
        assert!(line.starts_with(proto), "{line}");
        assert!(line.contains(" ms"), "{line}");
    }
    for file in ["summary.csv", "plan.toml", "report-figures/exp-latency.svg"] {
        assert!(study.join(file).is_file(), "{file}");
    }
    std::fs::remove_dir_all(&study).expect("the study is removed");
}
