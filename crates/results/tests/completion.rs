//! Whether a results file's run finished, as every reader must say: the run info's `complete`
//! flag (written `false`, turned `true` once every result is in) and a last block cut short.

use ldplayer_results::{
    mark_complete, Outcome, QueryResult, ResultsReader, ResultsWriter, RunInfo,
};
use ldplayer_trace::Proto;

fn result(i: u64) -> QueryResult {
    QueryResult {
        index: i,
        trace_ns: 1_000 + i as i64,
        intended_ns: 2_000 + i as i64,
        sent_ns: 2_001 + i as i64,
        received_ns: 2_501 + i as i64,
        proto: Proto::Udp,
        new_connection: false,
        handshake_ns: 0,
        rcode: ldplayer_dns::Rcode::NOERROR,
        response_len: 40,
        truncated: false,
        outcome: Outcome::Answered,
        target: 0,
    }
}

/// Writes a results file of `n` results at `path` with `info` in its header.
fn write(path: &std::path::Path, info: &RunInfo, n: u64) {
    let mut w = ResultsWriter::create_with_run_info(path, info).expect("create");
    for i in 0..n {
        w.write(&result(i)).expect("write");
    }
    w.into_inner().expect("finish");
}

/// Reads the file to the end; its completeness and warning.
fn read(path: &std::path::Path) -> (Option<bool>, Option<String>) {
    let mut reader = ResultsReader::open(path).expect("open");
    while reader.next_result().expect("read").is_some() {}
    (reader.complete(), reader.incomplete_warning("r.res"))
}

#[test]
fn a_run_that_did_not_mark_its_file_complete_is_said_to_be_incomplete() {
    let dir = tempfile::tempdir().expect("scratch");
    let path = dir.path().join("r.res");
    let unfinished = RunInfo {
        complete: Some(false),
        ..RunInfo::default()
    };
    // Killed after its last whole block: the file reads cleanly, but its flag says so.
    write(&path, &unfinished, 5);
    let (complete, warning) = read(&path);
    assert_eq!(complete, Some(false));
    let warning = warning.expect("a warning");
    assert!(
        warning.contains("r.res is INCOMPLETE") && warning.contains("the 5 results"),
        "{warning}"
    );
    // Marked complete at the end of its run: nothing to say.
    assert!(mark_complete(&path).expect("mark"));
    assert_eq!(read(&path), (Some(true), None));
    // Cut in its last block, whatever its flag says.
    let bytes = std::fs::read(&path).expect("read");
    std::fs::write(&path, &bytes[..bytes.len() - 7]).expect("cut");
    let (complete, warning) = read(&path);
    assert_eq!(complete, Some(false));
    assert!(warning.is_some_and(|w| w.contains("the 0 results")));
    // No run info: the file does not say.
    write(&path, &RunInfo::default(), 3);
    assert_eq!(read(&path), (None, None));
}
