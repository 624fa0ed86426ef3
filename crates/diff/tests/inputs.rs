//! Reading results files together: each query's results of every target gathered by trace
//! index, in memory that follows the queries in flight, not the length of the files, even when
//! one target of a file ran far ahead of another (`replay --fast`).

use ldplayer_diff::{diff, Inputs, Options};
use ldplayer_results::{Outcome, Proto, QueryResult, ResultSink, ResultsWriter, RunInfo};
use std::path::Path;

fn answer(id: u16) -> Vec<u8> {
    let mut m = id.to_be_bytes().to_vec();
    m.extend_from_slice(&[0x84, 0, 0, 1, 0, 0, 0, 0, 0, 0]);
    m.extend_from_slice(b"\x03www\x07example\x00\x00\x01\x00\x01");
    m
}

fn result(index: u64, target: u16, outcome: Outcome) -> QueryResult {
    QueryResult {
        index,
        trace_ns: 5_000 + index as i64,
        intended_ns: 0,
        sent_ns: 1,
        received_ns: 2,
        proto: Proto::Udp,
        new_connection: false,
        handshake_ns: 0,
        rcode: ldplayer_dns::Rcode::NOERROR,
        response_len: 0,
        truncated: false,
        outcome,
        target,
    }
}

/// A file of two targets: `order` gives the (index, target) of each result as written.
fn file(path: &Path, order: impl IntoIterator<Item = (u64, u16)>) {
    let info = RunInfo {
        answers: Some(true),
        targets: Some(vec!["a".into(), "b".into()]),
        ..RunInfo::default()
    };
    let mut w = ResultsWriter::create_with_run_info(path, &info).expect("file");
    for (i, t) in order {
        let a = answer(i as u16);
        let mut r = result(i, t, Outcome::Answered);
        r.response_len = a.len() as u16;
        w.result_with_answer(&r, &a).expect("written");
    }
    w.finish().expect("finished");
}

#[test]
fn a_target_far_ahead_of_the_other_in_its_file_costs_no_memory() {
    let dir = tempfile::tempdir().expect("scratch");
    let path = dir.path().join("r.res");
    let n = 50_000u64;
    // Every result of target 0, then every result of target 1.
    file(&path, (0..n).map(|i| (i, 0)).chain((0..n).map(|i| (i, 1))));
    let mut inputs = Inputs::open(std::slice::from_ref(&path)).expect("open");
    let mut groups = 0;
    while let Some(g) = inputs.next_group().expect("read") {
        assert!(g.entries.iter().all(Option::is_some), "query {}", g.index);
        groups += 1;
    }
    assert_eq!(groups, n);
    assert!(
        inputs.peak_waiting() < 10,
        "{} queries waited at once",
        inputs.peak_waiting()
    );
    let run = diff(&[path], &Options::default(), None).expect("diff");
    let c = run.differ.counts();
    assert_eq!((c.compared, c.same, c.different), (n, n, 0));
}

#[test]
fn files_of_one_target_each_join_by_index_in_completion_order() {
    let dir = tempfile::tempdir().expect("scratch");
    let (a, b) = (dir.path().join("a.res"), dir.path().join("b.res"));
    let one = |path: &Path, order: Vec<u64>| {
        let info = RunInfo {
            answers: Some(true),
            targets: Some(vec!["x".into()]),
            ..RunInfo::default()
        };
        let mut w = ResultsWriter::create_with_run_info(path, &info).expect("file");
        for i in order {
            let a = answer(i as u16);
            let mut r = result(i, 0, Outcome::Answered);
            r.response_len = a.len() as u16;
            w.result_with_answer(&r, &a).expect("written");
        }
        w.finish().expect("finished");
    };
    // Completion order: pairs swapped in one, runs of ten reversed in the other; one query
    // timed out in b (a result without an answer).
    let mut first: Vec<u64> = (0..1000).collect();
    first.chunks_mut(2).for_each(<[u64]>::reverse);
    one(&a, first);
    let mut second: Vec<u64> = (0..1000).collect();
    second.chunks_mut(10).for_each(<[u64]>::reverse);
    second.retain(|&i| i != 500);
    one(&b, second);
    let run = diff(&[a, b], &Options::default(), None).expect("diff");
    let c = run.differ.counts();
    assert_eq!(c.queries, 1000);
    assert_eq!((c.compared, c.not_compared), (999, 1), "{c:?}");
    assert_eq!(c.different, 0);
}
