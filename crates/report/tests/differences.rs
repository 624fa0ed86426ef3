//! The report's answer differences: drawn for replays that kept their answers, with the table
//! by field and the most frequent differing names; absent for replays that did not.

use ldplayer_report::input::{read_all, report};
use ldplayer_results::{Outcome, Proto, QueryResult, ResultSink, ResultsWriter, RunInfo};

/// A response for `name` (labels, absolute) type A with `rcode`, ID `id`.
fn answer(id: u16, name: &str, rcode: u8) -> Vec<u8> {
    let mut m = id.to_be_bytes().to_vec();
    m.extend_from_slice(&[0x84, rcode, 0, 1, 0, 0, 0, 0, 0, 0]);
    for label in name.split('.').filter(|l| !l.is_empty()) {
        m.push(label.len() as u8);
        m.extend_from_slice(label.as_bytes());
    }
    m.extend_from_slice(&[0, 0, 1, 0, 1]);
    m
}

fn result(index: u64, target: u16, len: usize) -> QueryResult {
    QueryResult {
        index,
        trace_ns: 1_000 + index as i64,
        intended_ns: 2_000,
        sent_ns: 2_000,
        received_ns: 3_000,
        proto: Proto::Udp,
        new_connection: false,
        handshake_ns: 0,
        rcode: ldplayer_dns::Rcode::NOERROR,
        response_len: len as u16,
        truncated: false,
        outcome: Outcome::Answered,
        target,
    }
}

/// A replay to two targets of 100 queries; the second answers NXDOMAIN to every fifth.
fn two_targets(path: &std::path::Path, keep: bool) {
    let info = RunInfo {
        answers: keep.then_some(true),
        targets: Some(vec!["127.0.0.1:5300".into(), "127.0.0.1:5301".into()]),
        ..RunInfo::default()
    };
    let mut w = ResultsWriter::create_with_run_info(path, &info).expect("results file");
    for i in 0..100u64 {
        let name = format!("q{}.example.", i % 7);
        for target in [0u16, 1] {
            let rcode = if target == 1 && i % 5 == 0 { 3 } else { 0 };
            let a = answer(i as u16, &name, rcode);
            w.result_with_answer(&result(i, target, a.len()), &a)
                .expect("written");
        }
    }
    w.finish().expect("finished");
}

#[test]
fn replays_with_answers_get_a_differences_section() {
    let dir = tempfile::tempdir().expect("scratch");
    let kept = dir.path().join("kept.res");
    two_targets(&kept, true);
    let inputs = read_all(&[kept]).expect("read");
    let r = report("t", &inputs);
    let section = r
        .sections
        .iter()
        .find(|s| s.title == "Answer differences")
        .expect("a differences section");
    let text = section.paragraphs.join("\n");
    assert!(text.contains("Target 1 (127.0.0.1:5301"), "{text}");
    assert!(
        text.contains("100 compared, of which 20 (20.00%) differ"),
        "{text}"
    );
    let (_, by_field) = &section.tables[0];
    assert_eq!(by_field.rows, vec![vec!["rcode", "20", "20.00%"]]);
    let (_, names) = &section.tables[1];
    assert_eq!(names.rows.len(), 1);
    assert!(names.rows[0][1].starts_with("q"), "{:?}", names.rows[0]);
    assert!(
        names.rows[0][2].contains("rcode NXDOMAIN"),
        "{:?}",
        names.rows[0]
    );
    assert!(
        names.rows[0][3].contains("rcode NOERROR"),
        "{:?}",
        names.rows[0]
    );

    // The same replay without answers: no such section.
    let plain = dir.path().join("plain.res");
    two_targets(&plain, false);
    let inputs = read_all(&[plain]).expect("read");
    let r = report("t", &inputs);
    assert!(r.sections.iter().all(|s| s.title != "Answer differences"));
}
