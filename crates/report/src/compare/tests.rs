use super::*;
use ldplayer_dns::Rcode;
use ldplayer_results::{ErrorKind, Outcome, QueryResult, ResultsWriter};
use ldplayer_trace::Proto;
use std::path::PathBuf;

fn measured(values: &[(&str, Option<&str>, Worse, f64)]) -> Measured {
    let mut m = Measured::new(InputKind::Replay, PathBuf::from("x.res"));
    for &(metric, run, worse, value) in values {
        m.push(metric.into(), run, worse, value);
    }
    m
}

fn bounds(texts: &[&str]) -> Vec<Bound> {
    texts.iter().map(|t| Bound::parse(t).unwrap()).collect()
}

fn row<'a>(c: &'a Comparison, name: &str) -> &'a Row {
    c.metrics
        .iter()
        .find(|r| r.name == name)
        .unwrap_or_else(|| panic!("no row {name}"))
}

#[test]
fn each_metric_worsens_its_own_way() {
    assert_eq!(worsening_pct(Worse::Higher, 8.0, 10.0), 25.0);
    assert_eq!(worsening_pct(Worse::Higher, 10.0, 9.0), 0.0);
    assert_eq!(worsening_pct(Worse::Lower, 1.0, 0.5), 50.0);
    assert_eq!(worsening_pct(Worse::Lower, 1.0, 1.5), 0.0);
    assert_eq!(worsening_pct(Worse::Either, 4.0, 3.0), 25.0);
    assert_eq!(worsening_pct(Worse::Higher, 0.0, 0.01), f64::INFINITY);
    assert_eq!(worsening_pct(Worse::Higher, 0.0, 0.0), 0.0);
    assert_eq!(change_pct(0.0, 0.0), Some(0.0));
    assert_eq!(change_pct(0.0, 1.0), None);
    assert_eq!(change_pct(-2.0, -1.0), Some(50.0));
    // Percentiles of the same samples summed in another order.
    let (a, b) = (5.5, 5.500000000000001);
    assert_eq!(change_pct(a, b), Some(0.0));
    assert_eq!(worsening_pct(Worse::Higher, a, b), 0.0);
    let c = compare_measured(
        &measured(&[("server_cpu_pct.p50", Some("001"), Worse::Higher, a)]),
        &measured(&[("server_cpu_pct.p50", Some("001"), Worse::Higher, b)]),
        &[],
    )
    .unwrap();
    assert_eq!(c.metrics[0].verdict, Verdict::Same);
}

#[test]
fn a_worsening_of_exactly_the_bound_is_within_it_despite_rounding() {
    // (11 − 10) / 10 × 100 is 10.000000000000009 in floating point.
    let base = measured(&[("latency_ms.udp.p50", None, Worse::Higher, 10.0)]);
    let new = measured(&[("latency_ms.udp.p50", None, Worse::Higher, 11.0)]);
    let c = compare_measured(&base, &new, &bounds(&["latency_ms.udp.p50=10"])).unwrap();
    assert!(!c.regressed);
    let c = compare_measured(&base, &new, &bounds(&["latency_ms.udp.p50=9.99"])).unwrap();
    assert!(c.regressed);
}

#[test]
fn bounds_pass_or_fail_by_the_worsening_in_percent_of_base() {
    let base = measured(&[
        ("answered_share", None, Worse::Lower, 1.0),
        ("latency_ms.udp.p50", None, Worse::Higher, 2.0),
        ("rcode_share.SERVFAIL", None, Worse::Higher, 0.0),
    ]);
    let new = measured(&[
        ("answered_share", None, Worse::Lower, 0.9),
        ("latency_ms.udp.p50", None, Worse::Higher, 1.0),
        ("rcode_share.SERVFAIL", None, Worse::Higher, 0.001),
    ]);
    let loose = compare_measured(&base, &new, &bounds(&["answered_share=10%"])).unwrap();
    assert!(!loose.regressed);
    assert_eq!(row(&loose, "answered_share").bound, Some(BoundVerdict::Ok));
    assert_eq!(row(&loose, "answered_share").verdict, Verdict::Worse);
    assert_eq!(row(&loose, "latency_ms.udp.p50").verdict, Verdict::Better);
    assert_eq!(row(&loose, "latency_ms.udp.p50").change_pct, Some(-50.0));
    assert_eq!(row(&loose, "latency_ms.udp.p50").bound, None);

    let tight = compare_measured(
        &base,
        &new,
        &bounds(&["answered_share=5", "latency_ms.udp.p50=0"]),
    )
    .unwrap();
    assert!(tight.regressed);
    let names: Vec<&str> = tight.exceeded().map(|r| r.name.as_str()).collect();
    assert_eq!(
        names,
        ["answered_share"],
        "a better latency keeps any bound"
    );
    assert_eq!(tight.bounds[0].exceeded, ["answered_share"]);
    assert_eq!(tight.bounds[1].checked, ["latency_ms.udp.p50"]);

    let from_zero = compare_measured(&base, &new, &bounds(&["rcode_share.SERVFAIL=1000"])).unwrap();
    assert!(from_zero.regressed, "any SERVFAIL where there was none");
    assert_eq!(row(&from_zero, "rcode_share.SERVFAIL").change_pct, None);
}

#[test]
fn a_metric_only_one_input_has_is_reported_and_counts_against_new() {
    let base = measured(&[("latency_ms.tcp.p50", None, Worse::Higher, 1.0)]);
    let new = measured(&[("latency_ms.udp.p50", None, Worse::Higher, 1.0)]);
    let c = compare_measured(&base, &new, &bounds(&["latency_ms.udp.p50=1"])).unwrap();
    assert_eq!(row(&c, "latency_ms.tcp.p50").verdict, Verdict::OnlyBase);
    assert_eq!(row(&c, "latency_ms.udp.p50").verdict, Verdict::OnlyNew);
    assert!(!c.regressed, "nothing to regress from");
    let c = compare_measured(&base, &new, &bounds(&["latency_ms.tcp.p50=1"])).unwrap();
    assert!(c.regressed, "NEW no longer measures it");
}

#[test]
fn a_bound_on_a_metric_neither_input_has_names_those_they_have() {
    let base = measured(&[("answered_share", None, Worse::Lower, 1.0)]);
    let err = compare_measured(&base, &base, &bounds(&["latency_p50=5"]))
        .unwrap_err()
        .to_string();
    assert!(err.contains("latency_p50=5"), "{err}");
    assert!(err.contains("they have: answered_share"), "{err}");
}

#[test]
fn rcodes_one_input_lacks_are_zero_there() {
    let mut base = measured(&[
        ("answered_share", None, Worse::Lower, 1.0),
        ("rcode_share.NOERROR", None, Worse::Lower, 1.0),
    ]);
    let mut new = measured(&[
        ("rcode_share.NOERROR", None, Worse::Lower, 0.9),
        ("rcode_share.FORMERR", None, Worse::Higher, 0.1),
    ]);
    replay_input::align_rcode_shares(&mut base, &mut new);
    let c = compare_measured(&base, &new, &bounds(&["rcode_share.FORMERR=50"])).unwrap();
    assert_eq!(row(&c, "rcode_share.FORMERR").base, Some(0.0));
    assert!(c.regressed);
    let names: Vec<&str> = c.metrics.iter().map(|r| r.name.as_str()).collect();
    assert_eq!(
        names,
        [
            "answered_share",
            "rcode_share.NOERROR",
            "rcode_share.FORMERR"
        ],
        "beside the other codes"
    );
}

fn result(
    index: u64,
    proto: Proto,
    outcome: Outcome,
    rcode: Rcode,
    latency_ms: i64,
) -> QueryResult {
    let sent = 1_700_000_000_000_000_000 + index as i64 * 1_000_000;
    QueryResult {
        index,
        trace_ns: 1_600_000_000_000_000_000 + index as i64 * 1_000_000,
        intended_ns: sent,
        sent_ns: sent,
        received_ns: if outcome == Outcome::Answered {
            sent + latency_ms * 1_000_000
        } else {
            0
        },
        proto,
        new_connection: false,
        handshake_ns: 0,
        rcode,
        response_len: 100,
        truncated: false,
        outcome,
        target: 0,
    }
}

fn write_results(path: &Path, results: &[QueryResult]) {
    let mut w = ResultsWriter::create(path).unwrap();
    for r in results {
        w.write(r).unwrap();
    }
    w.into_inner().unwrap();
}

#[test]
fn results_files_give_shares_rcodes_and_latency_per_transport() {
    let dir = tempfile::tempdir().unwrap();
    let (base, new) = (dir.path().join("base.res"), dir.path().join("new.res"));
    let ok = |i, p, ms| result(i, p, Outcome::Answered, Rcode::NOERROR, ms);
    write_results(
        &base,
        &[
            ok(0, Proto::Udp, 2),
            ok(1, Proto::Udp, 2),
            ok(2, Proto::Tcp, 4),
            ok(3, Proto::Tcp, 4),
        ],
    );
    write_results(
        &new,
        &[
            ok(0, Proto::Udp, 3),
            result(1, Proto::Udp, Outcome::Answered, Rcode::SERVFAIL, 3),
            result(2, Proto::Tcp, Outcome::Timeout, Rcode::NOERROR, 0),
            result(
                3,
                Proto::Tcp,
                Outcome::Error(ErrorKind::Reset),
                Rcode::NOERROR,
                0,
            ),
        ],
    );
    let c = compare(
        &base,
        &new,
        &bounds(&["answered_share=49", "latency_ms.tcp.p50=100"]),
    )
    .unwrap();
    assert_eq!(c.kind, InputKind::Replay);
    assert_eq!(c.base.queries, 4);
    assert!(c.warnings.is_empty(), "{:?}", c.warnings);
    assert_eq!(row(&c, "answered_share").new, Some(0.5));
    assert_eq!(row(&c, "timeout_share").new, Some(0.25));
    assert_eq!(row(&c, "error_share").new, Some(0.25));
    assert_eq!(row(&c, "rcode_share.NOERROR").new, Some(0.5));
    assert_eq!(row(&c, "rcode_share.SERVFAIL").base, Some(0.0));
    assert_eq!(row(&c, "rcode_share.SERVFAIL").new, Some(0.5));
    let udp = row(&c, "latency_ms.udp.p50");
    assert!((udp.base.unwrap() - 2.0).abs() < 0.01, "{udp:?}");
    assert!((udp.new.unwrap() - 3.0).abs() < 0.01, "{udp:?}");
    assert_eq!(udp.verdict, Verdict::Worse);
    assert_eq!(row(&c, "latency_ms.tcp.p99.9").verdict, Verdict::OnlyBase);
    let exceeded: Vec<&str> = c.exceeded().map(|r| r.name.as_str()).collect();
    assert_eq!(exceeded, ["answered_share", "latency_ms.tcp.p50"]);

    let json = serde_json::to_value(&c).unwrap();
    for key in [
        "kind",
        "base",
        "new",
        "warnings",
        "metrics",
        "bounds",
        "regressed",
    ] {
        assert!(json.get(key).is_some(), "{key} in {json}");
    }
    assert_eq!(json["metrics"][0]["worse"], "lower");
    assert_eq!(json["bounds"][0]["exceeded"][0], "answered_share");
    assert_eq!(json["metrics"][0]["bound"], "exceeded");

    // A shorter replay of the same trace: said, and still compared.
    write_results(&new, &[ok(1, Proto::Udp, 2)]);
    let c = compare(&base, &new, &[]).unwrap();
    assert_eq!(c.warnings.len(), 2, "{:?}", c.warnings);
    assert!(
        c.warnings[0].contains("BASE has 4 queries and NEW 1"),
        "{:?}",
        c.warnings
    );
}

fn experiment_dir(dir: &Path, rss_udp: f64) {
    std::fs::create_dir_all(dir.join("runs/001-proto=udp-r1")).unwrap();
    std::fs::write(
        dir.join("summary.csv"),
        format!(
            "run,proto,metric,p5,p25,p50,p75,p95,mean,n\n\
             001-proto=udp-r1,udp,latency_ms,1,2,3,4,5,3,10\n\
             001-proto=udp-r1,udp,server_rss_mib,{rss_udp},{rss_udp},{rss_udp},{rss_udp},{rss_udp},{rss_udp},3\n\
             002-proto=tcp-r1,tcp,server_rss_mib,20,20,20,20,20,20,3\n\
             002-proto=tcp-r1,tcp,tcp_established,5,5,5,5,5,5,3\n"
        ),
    )
    .unwrap();
    write_results(
        &dir.join("runs/001-proto=udp-r1/results.res"),
        &[result(0, Proto::Udp, Outcome::Answered, Rcode::NOERROR, 1)],
    );
}

#[test]
fn experiments_pair_runs_by_name_and_bounds_reach_every_run_or_one() {
    let dir = tempfile::tempdir().unwrap();
    let (base, new) = (dir.path().join("base"), dir.path().join("new"));
    experiment_dir(&base, 10.0);
    experiment_dir(&new, 12.0);
    let c = compare(&base, &new, &bounds(&["server_rss_mib.p50=10"])).unwrap();
    assert_eq!(c.kind, InputKind::Experiment);
    assert_eq!(c.base.runs, ["001-proto=udp-r1", "002-proto=tcp-r1"]);
    let udp = row(&c, "server_rss_mib.p50@001-proto=udp-r1");
    assert_eq!((udp.base, udp.new), (Some(10.0), Some(12.0)));
    assert_eq!(udp.worse, Worse::Higher);
    assert_eq!(udp.bound, Some(BoundVerdict::Exceeded));
    assert_eq!(c.bounds[0].checked.len(), 2, "every run");
    assert_eq!(
        c.bounds[0].exceeded,
        ["server_rss_mib.p50@001-proto=udp-r1"]
    );
    assert_eq!(
        row(&c, "tcp_established.p50@002-proto=tcp-r1").worse,
        Worse::Either
    );
    assert_eq!(
        row(&c, "rcode_share.NOERROR@001-proto=udp-r1").new,
        Some(1.0)
    );
    assert!(
        c.warnings
            .iter()
            .any(|w| w.contains("002-proto=tcp-r1/results.res: missing")),
        "{:?}",
        c.warnings
    );

    let only_tcp = compare(&base, &new, &bounds(&["server_rss_mib.p50@2=10"])).unwrap();
    assert!(!only_tcp.regressed, "run 2's memory did not change");
    let err = compare(&base, &new, &bounds(&["server_rss_mib.p50@3=10"]))
        .unwrap_err()
        .to_string();
    assert!(err.contains("002-proto=tcp-r1"), "{err}");
}

#[test]
fn inputs_of_two_kinds_or_of_no_kind_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let exp = dir.path().join("exp");
    experiment_dir(&exp, 10.0);
    let res = dir.path().join("run.res");
    write_results(&res, &[]);
    let err = compare(&exp, &res, &[]).unwrap_err();
    assert!(matches!(err, ReportError::KindMismatch { .. }), "{err}");
    let text = err.to_string();
    assert!(text.contains("is an experiment directory and"), "{text}");
    assert!(text.contains("is a replay results file"), "{text}");

    let empty = dir.path().join("empty");
    std::fs::create_dir(&empty).unwrap();
    let err = compare(&empty, &empty, &[]).unwrap_err().to_string();
    assert!(err.contains("without summary.csv"), "{err}");
    let text_file = dir.path().join("notes.txt");
    std::fs::write(&text_file, "hello").unwrap();
    let err = compare(&text_file, &res, &[]).unwrap_err().to_string();
    assert!(err.contains("does not start like a results file"), "{err}");
    let err = compare(&dir.path().join("nope"), &res, &[])
        .unwrap_err()
        .to_string();
    assert!(err.contains("nope"), "{err}");
}
