//! Joining results with the replayed trace: numbering as the engine numbers records (responses
//! counted, not replayed), results in completion order, and every way a trace can fail to match.

use ldplayer_dns::{Rcode, Rtype};
use ldplayer_results::file::{BLOCK_HEADER_LEN, FILE_HEADER_LEN, RESULT_LEN};
use ldplayer_results::{
    CsvWriter, JoinError, JoinReport, JsonlWriter, Outcome, QueryResult, ResultSink, ResultsReader,
    ResultsWriter, TraceFields, TraceJoin,
};
use ldplayer_trace::{Proto, RecordBuf, Sink, SinkError};
use std::time::Duration;

const T0: i64 = 1_520_000_000_000_000_000;

/// A DNS message: `name` (labels separated by dots, no escapes) and `qtype`, QR as asked.
fn message(id: u16, name: &str, qtype: u16, qr: bool) -> Vec<u8> {
    let mut m = id.to_be_bytes().to_vec();
    m.extend_from_slice(&[if qr { 0x80 } else { 0 }, 0, 0, 1, 0, 0, 0, 0, 0, 0]);
    for label in name.split('.').filter(|l| !l.is_empty()) {
        m.push(label.len() as u8);
        m.extend_from_slice(label.as_bytes());
    }
    m.push(0);
    m.extend_from_slice(&qtype.to_be_bytes());
    m.extend_from_slice(&1u16.to_be_bytes());
    m
}

/// A trace of `n` queries, each followed by its response when `responses`; query `i` comes
/// from 10.0.0.(i % 5), asks `q{i},x.example.` (a comma in the name) type A or AAAA, over UDP or
/// TCP.
fn trace(n: usize, responses: bool) -> Vec<RecordBuf> {
    let mut records = Vec::new();
    for i in 0..n {
        let name = format!("q{i},x.example.");
        let qtype = if i % 2 == 0 { 1 } else { 28 };
        let proto = if i % 3 == 0 { Proto::Tcp } else { Proto::Udp };
        let client = format!("10.0.0.{}:4000", i % 5).parse().unwrap();
        let server = "192.0.2.53:53".parse().unwrap();
        records.push(RecordBuf {
            time_ns: T0 + i as i64 * 1_000_000,
            src: client,
            dst: server,
            proto,
            conn: 0,
            wire: message(i as u16, &name, qtype, false),
        });
        if responses {
            records.push(RecordBuf {
                time_ns: T0 + i as i64 * 1_000_000 + 500,
                src: server,
                dst: client,
                proto,
                conn: 0,
                wire: message(i as u16, &name, qtype, true),
            });
        }
    }
    records
}

/// The engine's numbering: every record counts, responses get no result.
fn results_for(records: &[RecordBuf]) -> Vec<QueryResult> {
    records
        .iter()
        .enumerate()
        .filter(|(_, r)| r.wire[2] & 0x80 == 0)
        .map(|(index, r)| QueryResult {
            index: index as u64,
            trace_ns: r.time_ns,
            intended_ns: T0 + 7,
            sent_ns: T0 + 9,
            received_ns: T0 + 1000,
            proto: Proto::Udp,
            new_connection: false,
            handshake_ns: 0,
            rcode: Rcode::NOERROR,
            response_len: 100,
            truncated: false,
            outcome: Outcome::Answered,
            target: 0,
        })
        .collect()
}

/// Completion order: each group of `k` results reversed.
fn shuffled(mut results: Vec<QueryResult>, k: usize) -> Vec<QueryResult> {
    for chunk in results.chunks_mut(k) {
        chunk.reverse();
    }
    results
}

fn results_file(results: &[QueryResult], block: usize) -> Vec<u8> {
    let mut w =
        ResultsWriter::with_block_limits(Vec::new(), block, Duration::from_secs(3600)).unwrap();
    for r in results {
        w.result(r).unwrap();
    }
    w.into_inner().unwrap()
}

type Rows = Vec<(QueryResult, TraceFields)>;

/// Feeds `records` to a join of `file` (window `window`); returns the rows, the outcome and how
/// many records were fed before the join asked to stop.
fn join(
    file: &[u8],
    records: &[RecordBuf],
    window: usize,
) -> (Rows, Result<JoinReport, JoinError>, usize) {
    let mut reader = ResultsReader::new(file).unwrap();
    let mut rows = Vec::new();
    let mut fed = 0;
    let outcome = {
        let mut j = TraceJoin::with_window(
            &mut reader,
            |r: &QueryResult, t: &TraceFields| {
                rows.push((*r, t.clone()));
                Ok(())
            },
            window,
        );
        for r in records {
            fed += 1;
            match j.record(&r.as_record()) {
                Ok(()) => {}
                Err(SinkError::Stopped) => break,
                Err(e) => panic!("{e}"),
            }
        }
        j.finish()
    };
    (rows, outcome, fed)
}

#[test]
fn joins_by_record_index_counting_responses() {
    let records = trace(200, true);
    let results = shuffled(results_for(&records), 7);
    let file = results_file(&results, 16);
    let (rows, outcome, fed) = join(&file, &records, 1000);
    let report = outcome.unwrap();
    assert_eq!(fed, 400);
    assert_eq!(
        report,
        JoinReport {
            rows: 200,
            records: 400,
            queries: 200,
            other_shards: 0,
            missing: 0,
            queries_after_last_result: false
        }
    );
    // In the results file's order, each with its own query's fields.
    assert_eq!(rows.len(), 200);
    for ((r, t), want) in rows.iter().zip(&results) {
        assert_eq!(r, want);
        let q = &records[r.index as usize];
        let i = r.index / 2;
        assert_eq!(t.time_ns, q.time_ns);
        assert_eq!(t.client, q.src.ip());
        assert_eq!(
            t.qname.as_deref(),
            Some(format!("q{i},x.example.").as_str())
        );
        assert_eq!(
            t.qtype,
            Some(if i % 2 == 0 { Rtype::A } else { Rtype::AAAA })
        );
        assert_eq!(t.proto, q.proto);
    }
}

#[test]
fn csv_and_jsonl_rows_end_with_the_trace_columns() {
    let records = trace(3, true);
    let results = results_for(&records);
    let file = results_file(&results, 16);
    let mut csv = CsvWriter::with_trace_columns(Vec::new()).unwrap();
    let mut jsonl = JsonlWriter::new(Vec::new());
    let (rows, outcome, _) = join(&file, &records, 1000);
    outcome.unwrap();
    for (r, t) in &rows {
        csv.write_with_trace(r, t).unwrap();
        jsonl.write_with_trace(r, t).unwrap();
    }
    let csv = String::from_utf8(csv.into_inner().unwrap()).unwrap();
    let mut lines = csv.lines();
    assert_eq!(
        lines.next(),
        Some("index,trace_ns,intended_ns,sent_ns,received_ns,latency_ns,timing_error_ns,proto,new_connection,rcode,rcode_name,response_len,truncated,outcome,handshake_ns,target,client,qname,qtype,trace_proto")
    );
    assert_eq!(
        lines.next(),
        Some("0,1520000000000000000,1520000000000000007,1520000000000000009,1520000000000001000,991,2,udp,0,0,NOERROR,100,0,answered,,0,10.0.0.0,\"q0,x.example.\",A,tcp")
    );
    assert!(lines
        .next()
        .unwrap()
        .ends_with(",10.0.0.1,\"q1,x.example.\",AAAA,udp"));
    let jsonl = String::from_utf8(jsonl.into_inner().unwrap()).unwrap();
    let first: serde_json::Value = serde_json::from_str(jsonl.lines().next().unwrap()).unwrap();
    let keys: Vec<&str> = first
        .as_object()
        .unwrap()
        .keys()
        .map(|k| k.as_str())
        .collect();
    let mut want: Vec<&str> = ldplayer_results::COLUMNS.to_vec();
    want.extend(ldplayer_results::TRACE_COLUMNS);
    let mut sorted_want = want.clone();
    sorted_want.sort();
    let mut sorted_keys = keys.clone();
    sorted_keys.sort();
    assert_eq!(sorted_keys, sorted_want);
    assert_eq!(first["qname"], "q0,x.example.");
    assert_eq!(first["client"], "10.0.0.0");
    assert_eq!(first["qtype"], "A");
    assert_eq!(first["trace_proto"], "tcp");
    assert_eq!(first["proto"], "udp");
    // Keys in column order.
    let line = jsonl.lines().next().unwrap();
    let positions: Vec<usize> = want
        .iter()
        .map(|k| line.find(&format!("\"{k}\":")).unwrap())
        .collect();
    assert!(positions.windows(2).all(|w| w[0] < w[1]), "{line}");
}

#[test]
fn a_trace_with_other_times_is_refused() {
    let records = trace(50, false);
    let mut other = records.clone();
    other[0].time_ns += 1;
    let file = results_file(&results_for(&records), 16);
    let (rows, outcome, _) = join(&file, &other, 1000);
    let err = outcome.unwrap_err();
    assert!(
        matches!(err, JoinError::TimeMismatch { index: 0, .. }),
        "{err}"
    );
    assert!(
        err.to_string().contains("not the trace this run replayed"),
        "{err}"
    );
    assert!(rows.is_empty());
}

#[test]
fn a_shorter_trace_is_refused() {
    let records = trace(50, false);
    let file = results_file(&results_for(&records), 16);
    let (_, outcome, _) = join(&file, &records[..40], 1000);
    let err = outcome.unwrap_err();
    assert!(
        matches!(err, JoinError::BeyondTrace { records: 40, .. }),
        "{err}"
    );
}

#[test]
fn results_for_responses_are_refused() {
    // Replayed without its responses, joined with them: the numbering shifts.
    let without = trace(20, false);
    let file = results_file(&results_for(&without), 16);
    let (_, outcome, _) = join(&file, &trace(20, true), 1000);
    let err = outcome.unwrap_err();
    assert!(
        matches!(
            err,
            JoinError::NotAQuery { .. } | JoinError::TimeMismatch { .. }
        ),
        "{err}"
    );
}

#[test]
fn duplicate_results_are_refused() {
    let records = trace(20, false);
    let mut results = results_for(&records);
    results.push(results[3]);
    let file = results_file(&results, 16);
    let (_, outcome, _) = join(&file, &records, 1000);
    let err = outcome.unwrap_err();
    assert!(
        matches!(
            err,
            JoinError::Duplicate { index: 3 } | JoinError::OutOfWindow { index: 3, .. }
        ),
        "{err}"
    );
}

#[test]
fn a_query_without_a_result_is_a_count_mismatch() {
    let records = trace(50, true);
    let mut results = results_for(&records);
    results.remove(10);
    let file = results_file(&results, 16);
    let (_, outcome, _) = join(&file, &records, 1000);
    let err = outcome.unwrap_err();
    assert!(
        matches!(
            err,
            JoinError::Missing {
                missing: 1,
                lost: 0,
                ..
            }
        ),
        "{err}"
    );
}

/// Results lost in a damaged block of the results file explain queries without a result.
#[test]
fn results_lost_in_damaged_blocks_are_allowed_for() {
    let records = trace(50, false);
    let results = results_for(&records);
    let mut file = results_file(&results, 10);
    // Damage the second block (results 10..20).
    file[FILE_HEADER_LEN + BLOCK_HEADER_LEN + 10 * RESULT_LEN + BLOCK_HEADER_LEN + 5] ^= 1;
    let (rows, outcome, _) = join(&file, &records, 1000);
    let report = outcome.unwrap();
    assert_eq!(report.rows, 40);
    assert_eq!(report.missing, 10);
    assert!(rows.iter().all(|(r, _)| !(10..20).contains(&r.index)));
}

/// A replay stopped early has results for the first queries only: the join stops reading the
/// trace at the first query after the last result and says so.
#[test]
fn a_replay_stopped_early_joins_what_it_has() {
    let records = trace(1000, true);
    let results = shuffled(results_for(&records[..600]), 5);
    let file = results_file(&results, 64);
    let (rows, outcome, fed) = join(&file, &records, 1000);
    let report = outcome.unwrap();
    assert_eq!(rows.len(), 300);
    assert!(report.queries_after_last_result);
    assert_eq!(report.missing, 0);
    assert!(fed <= 602, "read {fed} records of 2000");
}

/// Results further out of trace order than the window are refused, not buffered without end.
#[test]
fn results_too_far_out_of_order_are_refused() {
    let records = trace(100, false);
    let mut results = results_for(&records);
    let first = results.remove(0);
    results.push(first);
    let file = results_file(&results, 16);
    let (_, outcome, _) = join(&file, &records, 1000);
    outcome.unwrap();
    let (_, outcome, _) = join(&file, &records, 50);
    let err = outcome.unwrap_err();
    assert!(
        matches!(
            err,
            JoinError::OutOfWindow {
                index: 0,
                window: 50
            }
        ),
        "{err}"
    );
}

/// A replay to several servers: one result per query and target, each joined with its query;
/// a result twice for one target, or one target's result missing, is refused as for one.
#[test]
fn each_target_of_a_replay_to_several_joins_with_the_query() {
    let records = trace(50, true);
    let one = results_for(&records);
    let both: Vec<QueryResult> = one
        .iter()
        .flat_map(|r| [*r, QueryResult { target: 1, ..*r }])
        .collect();
    let info = ldplayer_results::RunInfo {
        targets: Some(vec!["127.0.0.1:5300".into(), "127.0.0.1:5301".into()]),
        ..Default::default()
    };
    let file = |results: &[QueryResult]| {
        let mut w = ResultsWriter::with_run_info(Vec::new(), &info).unwrap();
        for r in shuffled(results.to_vec(), 7) {
            w.result(&r).unwrap();
        }
        w.into_inner().unwrap()
    };
    let (rows, outcome, _) = join(&file(&both), &records, 1000);
    assert_eq!(outcome.unwrap().rows, 100);
    for target in [0, 1] {
        let mut indexes: Vec<u64> = rows
            .iter()
            .filter(|(r, _)| r.target == target)
            .map(|(r, t)| {
                assert_eq!(t.time_ns, r.trace_ns);
                r.index
            })
            .collect();
        indexes.sort_unstable();
        assert_eq!(indexes, one.iter().map(|r| r.index).collect::<Vec<_>>());
    }
    let mut twice = both.clone();
    twice[5].target = 0;
    twice[4].target = 0;
    let (_, outcome, _) = join(&file(&twice), &records, 1000);
    assert!(
        matches!(outcome, Err(JoinError::Duplicate { .. })),
        "{outcome:?}"
    );
    let mut short = both.clone();
    short.remove(11);
    let (_, outcome, _) = join(&file(&short), &records, 1000);
    assert!(
        matches!(outcome, Err(JoinError::Missing { missing: 1, .. })),
        "{outcome:?}"
    );
    let mut stray = both;
    stray[3].target = 2;
    let (_, outcome, _) = join(&file(&stray), &records, 1000);
    assert!(
        matches!(outcome, Err(JoinError::UnknownTarget { target: 2, .. })),
        "{outcome:?}"
    );
}
