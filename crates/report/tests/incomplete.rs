//! A results file whose replay did not finish (killed, out of disk space, still running) is
//! said to be incomplete by the report, in a warning box at the top of the page, and by
//! `compare`, in its warnings; garbage after a file's last block is said as such, not as
//! results lost.

use ldplayer_report::compare::compare;
use ldplayer_report::input;
use ldplayer_results::{mark_complete, Outcome, QueryResult, ResultsWriter, RunInfo};
use ldplayer_trace::Proto;
use std::path::{Path, PathBuf};

fn result(i: u64) -> QueryResult {
    let sent_ns = 1_700_000_000_000_000_000 + i as i64 * 1_000_000;
    QueryResult {
        index: i,
        trace_ns: i as i64 * 1_000_000,
        intended_ns: sent_ns,
        sent_ns,
        received_ns: sent_ns + 300_000,
        proto: Proto::Udp,
        new_connection: false,
        handshake_ns: 0,
        rcode: ldplayer_dns::Rcode::NOERROR,
        response_len: 80,
        truncated: false,
        outcome: Outcome::Answered,
        target: 0,
    }
}

/// A results file of `n` results as `ldplayer replay` writes it: its run marked unfinished
/// at the start, and complete at the end when `finished`.
fn replay_file(dir: &Path, name: &str, n: u64, finished: bool) -> PathBuf {
    let path = dir.join(name);
    let info = RunInfo {
        complete: Some(false),
        ..RunInfo::default()
    };
    let mut w = ResultsWriter::create_with_run_info(&path, &info).expect("create");
    for i in 0..n {
        w.write(&result(i)).expect("write");
    }
    w.into_inner().expect("finish");
    if finished {
        assert!(mark_complete(&path).expect("mark"));
    }
    path
}

#[test]
fn the_report_of_an_unfinished_replay_warns_at_the_top() {
    let dir = tempfile::tempdir().expect("scratch");
    let killed = replay_file(dir.path(), "killed.res", 300, false);
    let done = replay_file(dir.path(), "done.res", 300, true);
    let inputs = input::read_all(&[killed.clone(), done]).expect("read");
    let report = input::report("two runs", &inputs);
    assert_eq!(report.warnings.len(), 1, "{:?}", report.warnings);
    assert!(
        report.warnings[0].contains("killed.res is INCOMPLETE"),
        "{:?}",
        report.warnings
    );
    let html = report.to_html().expect("html");
    let warning = html.find("<p class=\"warning\"").expect("a warning box");
    assert!(
        warning < html.find("<main>").expect("main"),
        "before the figures"
    );
    assert!(html[warning..].contains("killed.res is INCOMPLETE"));
    // Said among what could not be read, too.
    assert!(input::notes(&inputs)
        .iter()
        .any(|n| n.starts_with("killed: ") && n.contains("INCOMPLETE")));
    assert!(!input::notes(&inputs)
        .iter()
        .any(|n| n.starts_with("done: ")));
}

#[test]
fn compare_warns_that_an_input_did_not_finish() {
    let dir = tempfile::tempdir().expect("scratch");
    let killed = replay_file(dir.path(), "killed.res", 300, false);
    let done = replay_file(dir.path(), "done.res", 300, true);
    let comparison = compare(&done, &killed, &[]).expect("compare");
    assert!(
        comparison
            .warnings
            .iter()
            .any(|w| w.contains("killed.res is INCOMPLETE")),
        "{:?}",
        comparison.warnings
    );
    let comparison = compare(&done, &done, &[]).expect("compare");
    assert!(
        !comparison.warnings.iter().any(|w| w.contains("INCOMPLETE")),
        "{:?}",
        comparison.warnings
    );
}

#[test]
fn garbage_after_the_last_block_is_said_as_garbage_not_results_lost() {
    let dir = tempfile::tempdir().expect("scratch");
    let path = replay_file(dir.path(), "r.res", 300, true);
    let clean_len = std::fs::metadata(&path).expect("size").len();
    let mut bytes = std::fs::read(&path).expect("read");
    bytes.extend_from_slice(&b"appended by mistake, not results\n".repeat(150));
    std::fs::write(&path, &bytes).expect("write");
    let inputs = input::read_all(std::slice::from_ref(&path)).expect("read");
    let notes = input::notes(&inputs);
    assert!(
        notes
            .iter()
            .any(|n| n.contains(&format!("trailing garbage at offset {clean_len}"))),
        "{notes:?}"
    );
    assert!(!notes.iter().any(|n| n.contains("lost")), "{notes:?}");
    let comparison = compare(&path, &path, &[]).expect("compare");
    assert!(
        comparison
            .warnings
            .iter()
            .any(|w| w.contains("trailing garbage") && !w.contains("lost")),
        "{:?}",
        comparison.warnings
    );
}
