//! The figures of replays: results files written by `ResultsWriter`, clean, damaged, cut short,
//! of a newer version or not results at all; and properties of the figures of random results.

use ldplayer_dns::Rcode;
use ldplayer_report::replay::{section, ReplayData};
use ldplayer_report::{Figure, Plot, ReportError, Section};
use ldplayer_results::{ErrorKind, Outcome, QueryResult, ResultsError, ResultsWriter, Summary};
use ldplayer_trace::Proto;
use proptest::prelude::*;
use std::fs::File;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// The run's start, ns since the epoch.
const T0: i64 = 1_700_000_000_000_000_000;
/// Results per block of the files written here.
const BLOCK: usize = 100;

/// The `i`-th of a replay at 1000 queries per second over UDP, TCP and TLS, with a few
/// timeouts and errors, NXDOMAIN answers, new connections, and sends up to ±1 ms off schedule.
fn result(i: u64) -> QueryResult {
    let intended_ns = T0 + i as i64 * 1_000_000;
    let sent_ns = intended_ns + (i as i64 * 7919 % 2000 - 1000) * 1000;
    let proto = Proto::ALL[(i % 3) as usize];
    let latency = (100 + i as i64 % 50) * 10_000;
    let outcome = if i.is_multiple_of(97) {
        Outcome::Timeout
    } else if i.is_multiple_of(101) {
        Outcome::Error(ErrorKind::Reset)
    } else {
        Outcome::Answered
    };
    let answered = outcome == Outcome::Answered;
    QueryResult {
        index: i * 2,
        trace_ns: i as i64 * 1_000_000,
        intended_ns,
        sent_ns,
        received_ns: if answered { sent_ns + latency } else { 0 },
        proto,
        new_connection: proto != Proto::Udp && i % 10 == 1,
        handshake_ns: 0,
        rcode: if answered && i.is_multiple_of(5) {
            Rcode::NXDOMAIN
        } else {
            Rcode::NOERROR
        },
        response_len: if answered { 80 } else { 0 },
        truncated: false,
        outcome,
        target: 0,
    }
}

/// `n` results, in a completion order that is not trace order (reversed in runs of ten).
fn results(n: u64) -> Vec<QueryResult> {
    let mut all: Vec<QueryResult> = (0..n).map(result).collect();
    for chunk in all.chunks_mut(10) {
        chunk.reverse();
    }
    all
}

/// Writes `results` as a results file of blocks of [`BLOCK`] results.
fn write(path: &Path, results: &[QueryResult]) {
    let mut w = ResultsWriter::with_block_limits(
        File::create(path).unwrap(),
        BLOCK,
        Duration::from_secs(3600),
    )
    .unwrap();
    for r in results {
        w.write(r).unwrap();
    }
    w.into_inner().unwrap();
}

fn file_of(dir: &tempfile::TempDir, name: &str, results: &[QueryResult]) -> PathBuf {
    let path = dir.path().join(name);
    write(&path, results);
    path
}

fn figure<'a>(section: &'a Section, id: &str) -> &'a Figure {
    section
        .figures
        .iter()
        .find(|f| f.id == id)
        .unwrap_or_else(|| panic!("no figure {id}"))
}

/// The cell of `column` in the row whose first cell is `series`.
fn cell<'a>(figure: &'a Figure, series: &str, column: &str) -> &'a str {
    let col = figure
        .table
        .columns
        .iter()
        .position(|c| c == column)
        .unwrap_or_else(|| panic!("{}: no column {column}", figure.id));
    let row = figure
        .table
        .rows
        .iter()
        .find(|r| r[0] == series)
        .unwrap_or_else(|| panic!("{}: no row {series}", figure.id));
    &row[col]
}

fn number(figure: &Figure, series: &str, column: &str) -> f64 {
    let text = cell(figure, series, column);
    text.parse()
        .unwrap_or_else(|_| panic!("{}: {series} {column} = {text:?}", figure.id))
}

/// The sum of the `total` column of a time-series figure.
fn total(figure: &Figure) -> u64 {
    figure
        .table
        .rows
        .iter()
        .map(|r| r[1].parse::<u64>().unwrap())
        .sum()
}

#[test]
fn a_clean_file_is_read_whole_and_every_figure_drawn_with_its_table() {
    let dir = tempfile::tempdir().unwrap();
    let all = results(5000);
    let data = ReplayData::read(&file_of(&dir, "run.res", &all)).unwrap();
    assert_eq!(data.results(), 5000);
    assert!(data.notes().is_empty(), "{:?}", data.notes());
    assert!(data.damage().is_clean());
    let expected = Summary::from_results(all.iter().map(|r| Ok(*r))).unwrap();
    assert_eq!(data.summary(), expected.report());

    let s = section(&[("run", &data)]);
    let ids: Vec<&str> = s.figures.iter().map(|f| f.id.as_str()).collect();
    assert_eq!(
        ids,
        [
            "replay-latency-cdf",
            "replay-latency-ccdf",
            "replay-answers-per-second",
            "replay-timing-error-cdf",
            "replay-connections-per-second",
            "replay-rcodes-per-second",
            "replay-rate-error-cdf",
            "replay-interarrival-cdf",
        ]
    );
    for f in &s.figures {
        assert!(
            f.id.chars()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-'),
            "{}",
            f.id
        );
        assert!(!f.table.rows.is_empty(), "{} has an empty table", f.id);
        for row in &f.table.rows {
            assert_eq!(row.len(), f.table.columns.len(), "{}: {row:?}", f.id);
        }
        let Plot::Lines(chart) = &f.plot else {
            panic!("{} is not a line chart", f.id)
        };
        assert!(
            chart.series.iter().all(|s| !s.points.is_empty()),
            "{}",
            f.id
        );
    }
    // One input: series are named by what they show alone.
    assert_eq!(
        figure(&s, "replay-latency-cdf").plot.series_names(),
        ["udp", "tcp", "tls"]
    );
    assert_eq!(
        figure(&s, "replay-rcodes-per-second").plot.series_names(),
        ["NOERROR", "NXDOMAIN", "timeout", "error reset"]
    );
    // Every query counts once among the endings, and once in the trace's rate.
    assert_eq!(total(figure(&s, "replay-rcodes-per-second")), 5000);
    assert_eq!(
        cell(
            figure(&s, "replay-answers-per-second"),
            "trace rate",
            "total"
        ),
        "5000"
    );
    assert_eq!(
        cell(figure(&s, "replay-answers-per-second"), "answers", "total"),
        expected.report().answered.to_string()
    );
    let opened = all.iter().filter(|r| r.new_connection).count();
    assert_eq!(
        cell(
            figure(&s, "replay-connections-per-second"),
            "opened",
            "total"
        ),
        opened.to_string()
    );
    // All queries were sent: 4999 gaps in trace order, every one of 1 ms in the trace.
    let ia = figure(&s, "replay-interarrival-cdf");
    assert_eq!(cell(ia, "original", "gaps"), "4999");
    assert_eq!(number(ia, "original", "p50"), 1.0);
    assert_eq!(number(ia, "original", "max"), 1.0);
    // The paragraph says it in words.
    assert!(
        s.paragraphs[0].starts_with("run: 5000 queries, 5000 sent"),
        "{}",
        s.paragraphs[0]
    );
}

#[test]
fn the_tables_agree_with_the_replays_summary() {
    let all = results(20_000);
    let data = ReplayData::from_results(&all);
    let summary = data.summary();
    let s = section(&[("run", &data)]);
    // Tables print four significant digits: they agree to rounding.
    let close = |table: f64, summary: Option<f64>| {
        let summary = summary.unwrap();
        assert!(
            (table - summary).abs() <= summary.abs() * 1e-3 + 1e-9,
            "{table} vs {summary}"
        );
    };
    let latency = figure(&s, "replay-latency-cdf");
    assert_eq!(summary.latency_ms.len(), 3);
    for (proto, l) in &summary.latency_ms {
        close(number(latency, proto, "p50"), Some(l.p50));
        close(number(latency, proto, "p99.9"), Some(l.p99_9));
    }
    let rate = figure(&s, "replay-rate-error-cdf");
    let r = &summary.rate_error;
    assert!(r.seconds >= 15, "{r:?}");
    assert_eq!(cell(rate, "rate error", "seconds"), r.seconds.to_string());
    close(number(rate, "rate error", "min"), r.min_pct);
    close(number(rate, "rate error", "p25"), r.p25_pct);
    close(number(rate, "rate error", "p50"), r.p50_pct);
    close(number(rate, "rate error", "p75"), r.p75_pct);
    close(number(rate, "rate error", "max"), r.max_pct);
    assert_eq!(
        cell(rate, "rate error", "within ±1%"),
        format!("{:.2}%", r.within_1pct.unwrap() * 100.0)
    );
    let timing = figure(&s, "replay-timing-error-cdf");
    let t = summary.timing_error_us.as_ref().unwrap();
    close(number(timing, "timing error", "p50"), Some(t.p50));
    close(number(timing, "timing error", "p99"), Some(t.p99));
}

#[test]
fn several_inputs_are_overlaid_under_their_labels() {
    let a = ReplayData::from_results(&results(3000));
    let b = ReplayData::from_results(&results(2000)[..]);
    let s = section(&[("base", &a), ("new", &b)]);
    assert_eq!(
        figure(&s, "replay-latency-cdf").plot.series_names(),
        ["base udp", "base tcp", "base tls", "new udp", "new tcp", "new tls"]
    );
    assert_eq!(
        figure(&s, "replay-answers-per-second").plot.series_names(),
        [
            "base answers",
            "base trace rate",
            "new answers",
            "new trace rate"
        ]
    );
    assert_eq!(s.paragraphs.len(), 2);
    assert!(
        s.paragraphs[1].starts_with("new: 2000 queries"),
        "{}",
        s.paragraphs[1]
    );
}

#[test]
fn a_damaged_block_costs_only_its_results_and_is_said() {
    let dir = tempfile::tempdir().unwrap();
    let path = file_of(&dir, "damaged.res", &results(1000));
    let mut bytes = std::fs::read(&path).unwrap();
    // A byte in the payload of the third block (16-byte file header, blocks of 16 + 100 × 56).
    let at = 16 + 2 * (16 + BLOCK * 56) + 16 + 500;
    bytes[at] ^= 0xff;
    std::fs::write(&path, &bytes).unwrap();
    let data = ReplayData::read(&path).unwrap();
    assert_eq!(data.results(), 900);
    assert_eq!(data.damage().damaged_blocks, 1);
    let notes = data.notes().join(" ");
    assert!(notes.contains("1 damaged block failed"), "{notes}");
    assert!(notes.contains("100 results lost"), "{notes}");
    assert!(
        notes.contains("the 900 results that could be read"),
        "{notes}"
    );
    let s = section(&[("run", &data)]);
    assert!(
        s.paragraphs
            .iter()
            .any(|p| p.starts_with("run: 1 damaged block")),
        "{:?}",
        s.paragraphs
    );
    assert_eq!(total(figure(&s, "replay-rcodes-per-second")), 900);
}

#[test]
fn a_file_cut_short_is_read_up_to_its_last_whole_block() {
    let dir = tempfile::tempdir().unwrap();
    let path = file_of(&dir, "cut.res", &results(1000));
    let len = std::fs::metadata(&path).unwrap().len();
    File::options()
        .write(true)
        .open(&path)
        .unwrap()
        .set_len(len - 1000)
        .unwrap();
    let data = ReplayData::read(&path).unwrap();
    assert_eq!(data.results(), 900);
    assert!(data.damage().cut_short);
    let notes = data.notes().join(" ");
    assert!(notes.contains("ends in a block cut short"), "{notes}");
    assert!(notes.contains("100 results lost"), "{notes}");
}

#[test]
fn a_file_cut_inside_its_header_is_an_error() {
    let dir = tempfile::tempdir().unwrap();
    let path = file_of(&dir, "header.res", &results(10));
    File::options()
        .write(true)
        .open(&path)
        .unwrap()
        .set_len(10)
        .unwrap();
    let err = ReplayData::read(&path).unwrap_err();
    assert!(
        matches!(
            &err,
            ReportError::Results {
                source: ResultsError::NotResults(_),
                ..
            }
        ),
        "{err:?}"
    );
    let text = err.to_string();
    assert!(
        text.contains("header.res") && text.contains("shorter than its header"),
        "{text}"
    );
}

#[test]
fn a_file_of_a_newer_version_is_refused_with_its_version() {
    let dir = tempfile::tempdir().unwrap();
    let path = file_of(&dir, "newer.res", &results(10));
    let mut bytes = std::fs::read(&path).unwrap();
    bytes[8..10].copy_from_slice(&3u16.to_le_bytes());
    std::fs::write(&path, &bytes).unwrap();
    let err = ReplayData::read(&path).unwrap_err();
    assert!(
        matches!(
            &err,
            ReportError::Results {
                source: ResultsError::Version(3),
                ..
            }
        ),
        "{err:?}"
    );
    assert!(
        err.to_string().contains("version 3 is not supported"),
        "{err}"
    );
}

#[test]
fn a_file_that_is_not_results_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("trace.txt");
    std::fs::write(&path, "1700000000.000001 udp 192.0.2.1 53 example. A\n").unwrap();
    let err = ReplayData::read(&path).unwrap_err();
    assert!(
        err.to_string().contains("not an ldplayer results file"),
        "{err}"
    );
}

#[test]
fn an_empty_file_or_a_directory_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("empty.res");
    std::fs::write(&path, b"").unwrap();
    let err = ReplayData::read(&path).unwrap_err();
    assert!(matches!(err, ReportError::UnknownInput { .. }), "{err:?}");
    assert!(err.to_string().contains("empty"), "{err}");
    let err = ReplayData::read(dir.path()).unwrap_err();
    assert!(matches!(err, ReportError::UnknownInput { .. }), "{err:?}");
    let err = ReplayData::read(&dir.path().join("missing.res")).unwrap_err();
    assert!(matches!(err, ReportError::Io { .. }), "{err:?}");
}

#[test]
fn a_file_without_results_reads_as_an_empty_run() {
    let dir = tempfile::tempdir().unwrap();
    let path = file_of(&dir, "none.res", &[]);
    let data = ReplayData::read(&path).unwrap();
    assert_eq!(data.results(), 0);
    assert_eq!(data.notes(), ["The file holds no results."]);
    let s = section(&[("none", &data)]);
    assert!(s.figures.is_empty());
    assert!(
        s.paragraphs
            .iter()
            .any(|p| p.starts_with("Not drawn, for want of data")),
        "{:?}",
        s.paragraphs
    );
}

#[test]
fn results_too_late_to_be_put_in_order_are_counted_and_said() {
    // The first query of the trace completes after 70,000 later ones (beyond the window).
    let mut all: Vec<QueryResult> = (1..70_001).map(result).collect();
    all.push(result(0));
    let data = ReplayData::from_results(&all);
    let notes = data.notes().join(" ");
    assert!(
        notes.contains("1 result reached the file more than 65536 results"),
        "{notes}"
    );
    let s = section(&[("run", &data)]);
    let ia = figure(&s, "replay-interarrival-cdf");
    assert_eq!(cell(ia, "original", "gaps"), "69999");
}

/// A random result: any transport and outcome, sent or not, latencies from 1 µs to 10 s.
fn any_result() -> impl Strategy<Value = QueryResult> {
    (
        0u64..1_000_000,
        0i64..5_000_000_000,
        prop_oneof![Just(None), (-100_000i64..1_000_000).prop_map(Some)],
        (3.0f64..10.0).prop_map(|e| 10f64.powf(e) as i64),
        0usize..3,
        any::<bool>(),
        prop_oneof![Just(0u16), Just(2), Just(3)],
        0u8..4,
    )
        .prop_map(
            |(index, at, timing, latency, proto, new_connection, rcode, fate)| {
                let intended_ns = T0 + at;
                let sent_ns = timing.map_or(0, |t| intended_ns + t);
                let outcome = match (fate, sent_ns) {
                    (_, 0) => Outcome::Error(ErrorKind::Send),
                    (0, _) => Outcome::Timeout,
                    (1, _) => Outcome::Error(ErrorKind::Reset),
                    _ => Outcome::Answered,
                };
                let proto = Proto::ALL[proto];
                QueryResult {
                    index,
                    trace_ns: at / 2,
                    intended_ns,
                    sent_ns,
                    received_ns: if outcome == Outcome::Answered {
                        sent_ns + latency
                    } else {
                        0
                    },
                    proto,
                    new_connection: new_connection && proto != Proto::Udp && sent_ns != 0,
                    handshake_ns: 0,
                    rcode: Rcode(rcode),
                    response_len: 0,
                    truncated: false,
                    outcome,
                    target: 0,
                }
            },
        )
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn figures_of_random_results_are_monotone_exact_and_complete(
        all in prop::collection::vec(any_result(), 1..400)
    ) {
        let data = ReplayData::from_results(&all);
        let s = section(&[("run", &data)]);
        for f in &s.figures {
            let Plot::Lines(chart) = &f.plot else { continue };
            let ccdf = f.id.ends_with("-ccdf");
            if !(ccdf || f.id.ends_with("-cdf")) {
                continue;
            }
            for series in &chart.series {
                for w in series.points.windows(2) {
                    prop_assert!(w[0].0 <= w[1].0, "{} {}: x {:?}", f.id, series.name, w);
                    if ccdf {
                        prop_assert!(w[0].1 >= w[1].1, "{} {}: y {:?}", f.id, series.name, w);
                    } else {
                        prop_assert!(w[0].1 <= w[1].1, "{} {}: y {:?}", f.id, series.name, w);
                    }
                }
                prop_assert!(series.points.iter().all(|p| p.1 > 0.0 && p.1 <= 1.0));
            }
        }
        // The median latency per transport, against the sorted values (nearest rank).
        for proto in Proto::ALL {
            let mut ms: Vec<f64> = all
                .iter()
                .filter(|r| r.proto == proto)
                .filter_map(|r| r.latency_ns())
                .map(|ns| ns as f64 / 1e6)
                .collect();
            if ms.is_empty() {
                continue;
            }
            ms.sort_by(f64::total_cmp);
            let exact = ms[ms.len().div_ceil(2) - 1];
            let drawn = number(figure(&s, "replay-latency-cdf"), proto.as_str(), "p50");
            prop_assert!(
                (drawn - exact).abs() <= exact * 2e-3 + 1e-6,
                "{proto:?}: p50 {drawn} vs {exact}"
            );
        }
        // Every result counts once per second among the endings and in the trace's rate.
        let n = all.len() as u64;
        prop_assert_eq!(total(figure(&s, "replay-rcodes-per-second")), n);
        let answers = figure(&s, "replay-answers-per-second");
        prop_assert_eq!(cell(answers, "trace rate", "total"), n.to_string());
        let answered = all.iter().filter(|r| r.outcome == Outcome::Answered).count();
        prop_assert_eq!(cell(answers, "answers", "total"), answered.to_string());
        let connections = all.iter().filter(|r| r.sent_ns != 0 && r.proto.is_connection()).count();
        prop_assert_eq!(total(figure(&s, "replay-connections-per-second")), connections as u64);
    }
}

/// `all` moved by `ns` on the clock: the same replay of the same trace, begun at another time.
fn shifted(all: &[QueryResult], ns: i64) -> Vec<QueryResult> {
    all.iter()
        .map(|r| {
            let at = |t: i64| if t == 0 { 0 } else { t + ns };
            QueryResult {
                intended_ns: r.intended_ns + ns,
                sent_ns: at(r.sent_ns),
                received_ns: at(r.received_ns),
                ..*r
            }
        })
        .collect()
}

#[test]
fn two_replays_of_one_trace_have_the_same_per_second_curves() {
    // The same replay, begun on a whole second and 0.6 s past one.
    let all = results(5000);
    let on_time = ReplayData::from_results(&all);
    let later = ReplayData::from_results(&shifted(&all, 600_000_000));
    let (a, b) = (section(&[("run", &on_time)]), section(&[("run", &later)]));
    for id in [
        "replay-answers-per-second",
        "replay-connections-per-second",
        "replay-rcodes-per-second",
    ] {
        let (fa, fb) = (figure(&a, id), figure(&b, id));
        let (Plot::Lines(ca), Plot::Lines(cb)) = (&fa.plot, &fb.plot) else {
            panic!("{id}: lines")
        };
        for (sa, sb) in ca.series.iter().zip(&cb.series) {
            assert_eq!(sa.points, sb.points, "{id} {}", sa.name);
        }
        assert_eq!(fa.table, fb.table, "{id}");
        assert_eq!(ca.x_label, "time since the run's start (s)");
    }
    // The trace's rate per second starts with a whole second of it: 1000 queries.
    let Plot::Lines(answers) = &figure(&b, "replay-answers-per-second").plot else {
        panic!("lines")
    };
    let rate = &answers.series[1];
    assert_eq!(rate.name, "trace rate");
    assert_eq!(&rate.points[..2], [(0.0, 1000.0), (1.0, 1000.0)]);
}

#[test]
fn the_run_s_start_a_results_file_records_is_where_its_seconds_start() {
    // A shard started with --start-at records its start: 0.25 s before its first query was due.
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("shard.res");
    let info = ldplayer_results::RunInfo {
        start_ns: Some(T0 - 250_000_000),
        ..Default::default()
    };
    let mut w = ResultsWriter::with_run_info(File::create(&path).unwrap(), &info).unwrap();
    for r in results(3000) {
        w.write(&r).unwrap();
    }
    w.into_inner().unwrap();
    let data = ReplayData::read(&path).unwrap();
    let s = section(&[("run", &data)]);
    let Plot::Lines(answers) = &figure(&s, "replay-answers-per-second").plot else {
        panic!("lines")
    };
    let rate = &answers.series[1];
    // 0.75 s of queries in the first second, then whole seconds of 1000.
    assert_eq!(
        &rate.points[..3],
        [(0.0, 750.0), (1.0, 1000.0), (2.0, 1000.0)]
    );
}
