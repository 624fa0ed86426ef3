//! A run's metrics: latency and answers from its results file, resources and bandwidth from
//! its samples, and the connections model beside them, each over the time after warm-up.

use super::{client_latency_ns, measured_at_s, Distribution, Sample, SummaryRow};
use crate::model::IndexSet;
use ldplayer_results::{QueryResult, ResultsError, ResultsReader};
use std::path::{Path, PathBuf};

/// Every metric a run can have, in the order of its rows. `handshake_ms` (connection set-up)
/// and `fresh_query_ms` (set-up plus the first query's latency) appear only when
/// queries opened connections, `model_connections` only for connection-oriented runs. A run
/// whose queries went over more than one transport (a population, `proto = "keep"`) also has
/// `latency_ms_<transport>` rows after `latency_ms`, one per transport used
/// (`PER_TRANSPORT_LATENCY`), in transport order. A recursive server with an emulated
/// hierarchy behind it also has the rows of [`crate::upstream::UpstreamCounts::rows`]
/// (`upstream_root`, `upstream_tld`, `upstream_below` and their `_nxdomain`) at the end. The
/// rows of `TRENDS` (how connections and memory drifted through the measured window) come
/// before `model_connections`, where their quantity is not about zero.
pub const METRICS: [&str; 16] = [
    "latency_ms",
    "latency_ms_nonbusy",
    "answered_share",
    "handshake_ms",
    "fresh_query_ms",
    "server_rss_mib",
    "server_cpu_pct",
    "tcp_established",
    "tcp_time_wait",
    "tcp_other",
    "socket_mem_kib",
    "response_bytes_per_s",
    "query_bytes_per_s",
    "response_packets_per_s",
    "query_packets_per_s",
    "model_connections",
];

/// The names of the per-transport latency rows, in transport code order (UDP, TCP, TLS,
/// HTTPS, QUIC).
pub const PER_TRANSPORT_LATENCY: [&str; 5] = [
    "latency_ms_udp",
    "latency_ms_tcp",
    "latency_ms_tls",
    "latency_ms_doh",
    "latency_ms_doq",
];

/// What a run left behind, as the summary needs it.
#[derive(Debug, Clone, Copy)]
pub struct RunMeasurements<'a> {
    /// The run's results file (`ldplayer_results` format).
    pub results: &'a Path,
    /// Its samples, in time order.
    pub samples: &'a [Sample],
    /// The replay's start (`CLOCK_REALTIME` ns): when the trace's first record was due, the
    /// zero of the samples' `t_s`.
    pub start_ns: i64,
    /// Seconds after the start left out of every metric.
    pub warmup_s: f64,
    /// Length of the replayed trace in seconds: queries due later, and samples later, are left
    /// out (the cool-down).
    pub duration_s: f64,
    /// The queries (by record index) of non-busy clients; `None` leaves
    /// `latency_ms_nonbusy` without values.
    pub nonbusy: Option<&'a IndexSet>,
    /// The model's open connections at each second of the trace for this run's idle timeout;
    /// `None` for runs without connections.
    pub model_connections: Option<&'a [u64]>,
    /// A recursive server's upstream queries by level of the hierarchy behind it (one value
    /// per run: over the whole run, warm-up included, as the cold cache is part of the story;
    /// and after the warm-up, from a warm cache).
    pub upstream: Option<&'a crate::upstream::UpstreamRecord>,
}

/// Why a run could not be summarised.
#[derive(Debug, thiserror::Error)]
pub enum SummaryError {
    /// The results file could not be read.
    #[error("reading the results {}", .path.display())]
    Results {
        /// The results file.
        path: PathBuf,
        /// What went wrong.
        #[source]
        source: ResultsError,
    },
}

/// The rows of one run: `run` its name, `varied` its varied values in `[vary]` order.
pub fn rows_for_run(
    run: &str,
    varied: &[String],
    m: &RunMeasurements<'_>,
) -> Result<Vec<SummaryRow>, SummaryError> {
    let queries = QueryMetrics::read(m)?;
    let mut metrics: Vec<(&str, Distribution)> =
        vec![("latency_ms", Distribution::of(&queries.latency_ms))];
    let transports = queries.per_transport.iter().filter(|v| !v.is_empty());
    if transports.count() > 1 {
        for (name, values) in PER_TRANSPORT_LATENCY.iter().zip(&queries.per_transport) {
            if !values.is_empty() {
                metrics.push((name, Distribution::of(values)));
            }
        }
    }
    metrics.extend([
        (
            "latency_ms_nonbusy",
            Distribution::of(&queries.latency_ms_nonbusy),
        ),
        ("answered_share", queries.answered_share()),
    ]);
    if !queries.handshake_ms.is_empty() {
        metrics.push(("handshake_ms", Distribution::of(&queries.handshake_ms)));
        metrics.push(("fresh_query_ms", Distribution::of(&queries.fresh_query_ms)));
    }
    let window = SampleWindow::new(m);
    let per_sample: [(&str, SampleValue); 10] = [
        ("server_rss_mib", |s, _| s.rss_kib as f64 / 1024.0),
        ("server_cpu_pct", |s, _| s.cpu_pct),
        ("tcp_established", |s, _| s.tcp_established as f64),
        ("tcp_time_wait", |s, _| s.tcp_time_wait as f64),
        ("tcp_other", |s, _| s.tcp_other as f64),
        ("socket_mem_kib", |s, _| s.socket_mem_kib as f64),
        ("response_bytes_per_s", |s, dt| s.s2c_bytes as f64 / dt),
        ("query_bytes_per_s", |s, dt| s.c2s_bytes as f64 / dt),
        ("response_packets_per_s", |s, dt| s.s2c_packets as f64 / dt),
        ("query_packets_per_s", |s, dt| s.c2s_packets as f64 / dt),
    ];
    for (name, value) in per_sample {
        metrics.push((name, Distribution::of(&window.values(value))));
    }
    // Whether the window is steady: the drift of connections and memory through it.
    for (name, value) in TRENDS {
        if let Some(t) = super::steady::trend_pct(&window.series(value)) {
            metrics.push((name, Distribution::of(&[t])));
        }
    }
    if let Some(series) = m.model_connections {
        let values: Vec<f64> = series
            .iter()
            .enumerate()
            .filter(|(s, _)| window.holds(*s as f64))
            .map(|(_, &n)| n as f64)
            .collect();
        metrics.push(("model_connections", Distribution::of(&values)));
    }
    if let Some(u) = m.upstream {
        let warm_from = m.start_ns + (m.warmup_s * 1e9) as i64;
        for (name, value) in u.total.rows().into_iter().chain(u.warm_rows(warm_from)) {
            metrics.push((name, Distribution::of(&[value as f64])));
        }
    }
    Ok(metrics
        .into_iter()
        .map(|(metric, dist)| SummaryRow {
            run: run.to_string(),
            varied: varied.to_vec(),
            metric: metric.to_string(),
            dist,
        })
        .collect())
}

/// A metric's value in a sample that counts `dt` seconds.
type SampleValue = fn(&Sample, f64) -> f64;

/// The rows that say how much a quantity drifted over the measured window, in percent of its
/// mean (a least-squares line: see [`super::steady::trend_pct`]); a row only where the
/// quantity is not about zero. More than [`super::steady::STEADY_TREND_PCT`]: not steady.
pub const TRENDS: [(&str, SampleValue); 2] = [
    ("trend_tcp_established_pct", |s, _| s.tcp_established as f64),
    ("trend_server_rss_pct", |s, _| s.rss_kib as f64 / 1024.0),
];

/// The rows of the run `run` (its id and varied values).
pub fn rows_for_spec(
    run: &crate::plan::RunSpec,
    m: &RunMeasurements<'_>,
) -> Result<Vec<SummaryRow>, SummaryError> {
    let varied: Vec<String> = run.varied.iter().map(|(_, v)| v.clone()).collect();
    rows_for_run(&run.id, &varied, m)
}

/// The per-query metrics of the queries due after warm-up and before the trace's end.
#[derive(Debug, Default)]
struct QueryMetrics {
    latency_ms: Vec<f64>,
    latency_ms_nonbusy: Vec<f64>,
    /// `latency_ms` by the transport the query went over, in code order.
    per_transport: [Vec<f64>; 5],
    handshake_ms: Vec<f64>,
    fresh_query_ms: Vec<f64>,
    /// Per second from the start: (queries due, answered).
    per_second: Vec<(u64, u64)>,
}

impl QueryMetrics {
    fn read(m: &RunMeasurements<'_>) -> Result<QueryMetrics, SummaryError> {
        let error = |source| SummaryError::Results {
            path: m.results.to_path_buf(),
            source,
        };
        let mut q = QueryMetrics::default();
        for r in ResultsReader::open(m.results).map_err(error)? {
            q.add(&r.map_err(error)?, m);
        }
        Ok(q)
    }

    /// Counts `r` if it was due in the measured window.
    fn add(&mut self, r: &QueryResult, m: &RunMeasurements<'_>) {
        let Some(at_s) = measured_at_s(r, m.start_ns, m.warmup_s, m.duration_s) else {
            return;
        };
        let second = at_s as usize;
        if second >= self.per_second.len() {
            self.per_second.resize(second + 1, (0, 0));
        }
        self.per_second[second].0 += 1;
        if let Some(ns) = client_latency_ns(r) {
            let ms = ns as f64 / 1e6;
            self.per_second[second].1 += 1;
            self.latency_ms.push(ms);
            self.per_transport[r.proto as usize].push(ms);
            if m.nonbusy.is_some_and(|set| set.contains(r.index)) {
                self.latency_ms_nonbusy.push(ms);
            }
        }
        if r.new_connection && r.handshake_ns > 0 {
            self.handshake_ms.push(r.handshake_ns as f64 / 1e6);
            // A fresh connection's first answer: set-up and query, about 2 RTT over TCP and
            // 3 over TLS 1.3.
            if let Some(ns) = r.latency_ns() {
                self.fresh_query_ms.push((r.handshake_ns + ns) as f64 / 1e6);
            }
        }
    }

    /// The share answered of each second's queries; the mean is the share of all queries.
    fn answered_share(&self) -> Distribution {
        let shares: Vec<f64> = self
            .per_second
            .iter()
            .filter(|(due, _)| *due > 0)
            .map(|&(due, answered)| answered as f64 / due as f64)
            .collect();
        let (due, answered) = self
            .per_second
            .iter()
            .fold((0, 0), |(d, a), &(dd, aa)| (d + dd, a + aa));
        Distribution {
            mean: if due == 0 {
                f64::NAN
            } else {
                answered as f64 / due as f64
            },
            ..Distribution::of(&shares)
        }
    }
}

/// The samples taken after warm-up and up to the trace's end, each with the length of the
/// interval it counts (from the previous sample, or from the start for the first).
struct SampleWindow<'a> {
    samples: Vec<(&'a Sample, f64)>,
    warmup_s: f64,
    duration_s: f64,
}

impl<'a> SampleWindow<'a> {
    fn new(m: &RunMeasurements<'a>) -> Self {
        let mut previous = 0.0;
        let mut samples = Vec::new();
        for s in m.samples {
            let dt = s.t_s - previous;
            previous = s.t_s;
            if dt > 0.0 && s.t_s > m.warmup_s && s.t_s <= m.duration_s + 1e-9 {
                samples.push((s, dt));
            }
        }
        SampleWindow {
            samples,
            warmup_s: m.warmup_s,
            duration_s: m.duration_s,
        }
    }

    /// Whether second `t` of the run lies in the window.
    fn holds(&self, t: f64) -> bool {
        t >= self.warmup_s && t <= self.duration_s
    }

    fn values(&self, value: SampleValue) -> Vec<f64> {
        self.samples.iter().map(|&(s, dt)| value(s, dt)).collect()
    }

    /// `value` against the sample's time.
    fn series(&self, value: SampleValue) -> Vec<(f64, f64)> {
        self.samples
            .iter()
            .map(|&(s, dt)| (s.t_s, value(s, dt)))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ldplayer_results::{Outcome, ResultSink, ResultsWriter};
    use ldplayer_trace::Proto;

    const START: i64 = 1_700_000_000_000_000_000;

    /// A result due `at_s` after the start, answered after `latency_ms` (`None`: timed out).
    fn result(index: u64, at_s: f64, latency_ms: Option<f64>) -> QueryResult {
        let intended_ns = START + (at_s * 1e9) as i64;
        QueryResult {
            index,
            trace_ns: intended_ns,
            intended_ns,
            sent_ns: intended_ns + 1_000,
            received_ns: latency_ms.map_or(0, |ms| intended_ns + 1_000 + (ms * 1e6) as i64),
            proto: Proto::Tcp,
            new_connection: false,
            handshake_ns: 0,
            rcode: ldplayer_dns::Rcode::NOERROR,
            response_len: if latency_ms.is_some() { 100 } else { 0 },
            truncated: false,
            outcome: if latency_ms.is_some() {
                Outcome::Answered
            } else {
                Outcome::Timeout
            },
            target: 0,
        }
    }

    fn sample(t_s: f64, rss_kib: u64, s2c_bytes: u64) -> Sample {
        Sample {
            t_s,
            rss_kib,
            s2c_bytes,
            tcp_established: rss_kib / 1024,
            ..Sample::default()
        }
    }

    fn metric<'a>(rows: &'a [SummaryRow], name: &str) -> &'a Distribution {
        &rows
            .iter()
            .find(|r| r.metric == name)
            .unwrap_or_else(|| panic!("no {name}"))
            .dist
    }

    #[test]
    fn a_tiny_run_summarises_after_warm_up_and_before_the_end() {
        let dir = tempfile::tempdir().unwrap();
        let results = dir.path().join("results");
        let mut w = ResultsWriter::create(&results).unwrap();
        let mut opened = result(3, 3.2, Some(20.0));
        opened.new_connection = true;
        opened.handshake_ns = 5_000_000;
        for r in [
            result(0, 1.0, Some(1.0)), // warm-up
            result(1, 2.5, Some(10.0)),
            result(2, 2.7, None),
            opened,
            result(4, 4.0, Some(30.0)),
            result(5, 6.0, Some(40.0)), // after the trace's end
        ] {
            w.result(&r).unwrap();
        }
        w.finish().unwrap();
        drop(w);
        let samples = [
            sample(1.0, 0, 0),
            sample(2.0, 0, 0),
            sample(3.0, 1024, 1000),
            sample(4.5, 2048, 3000),
            sample(5.0, 3072, 1500),
            sample(6.0, 9999, 9999),
        ];
        let mut nonbusy = IndexSet::default();
        nonbusy.insert(1);
        nonbusy.insert(4);
        let model = [0, 1, 2, 3, 4, 5, 6, 7];
        let m = RunMeasurements {
            results: &results,
            samples: &samples,
            start_ns: START,
            warmup_s: 2.0,
            duration_s: 5.0,
            nonbusy: Some(&nonbusy),
            model_connections: Some(&model),
            upstream: None,
        };
        let rows = rows_for_run("001-proto=tcp-r1", &["tcp".to_string()], &m).unwrap();
        assert!(rows
            .iter()
            .all(|r| r.run == "001-proto=tcp-r1" && r.varied == ["tcp"]));
        let names: Vec<&str> = rows.iter().map(|r| r.metric.as_str()).collect();
        let trends = TRENDS.map(|(name, _)| name);
        let (before, model) = METRICS.split_at(METRICS.len() - 1);
        let trend_rows: Vec<&str> = names
            .iter()
            .copied()
            .filter(|n| trends.contains(n))
            .collect();
        let expected: Vec<&str> = before
            .iter()
            .copied()
            .chain(trend_rows)
            .chain(model.iter().copied())
            .collect();
        assert_eq!(names, expected, "every metric, in order");

        // The query that opened its connection waited for the 5 ms set-up too.
        let latency = metric(&rows, "latency_ms");
        assert_eq!(latency.n, 3);
        assert!((latency.p50 - 25.0).abs() < 1e-9, "{latency:?}");
        assert!((latency.mean - 65.0 / 3.0).abs() < 1e-9, "{latency:?}");
        let nonbusy = metric(&rows, "latency_ms_nonbusy");
        assert_eq!(nonbusy.n, 2);
        assert!((nonbusy.p5 - 11.0).abs() < 1e-9, "{nonbusy:?}");
        let share = metric(&rows, "answered_share");
        assert_eq!((share.n, share.p5, share.p50), (3, 0.55, 1.0));
        assert_eq!(share.mean, 0.75, "the mean is the share of all queries");
        let handshake = metric(&rows, "handshake_ms");
        assert_eq!((handshake.n, handshake.p50), (1, 5.0));

        let rss = metric(&rows, "server_rss_mib");
        assert_eq!((rss.n, rss.p5, rss.p50, rss.p95), (3, 1.1, 2.0, 2.9));
        assert_eq!(metric(&rows, "tcp_established").mean, 2.0);
        let bandwidth = metric(&rows, "response_bytes_per_s");
        assert_eq!(
            (bandwidth.p50, bandwidth.mean),
            (2000.0, 2000.0),
            "bytes over each interval"
        );
        let model = metric(&rows, "model_connections");
        assert_eq!((model.n, model.mean), (4, 3.5), "seconds 2 to 5");
    }

    /// The measurements of a results file alone, over its first second.
    fn first_second(results: &std::path::Path) -> RunMeasurements<'_> {
        RunMeasurements {
            results,
            samples: &[],
            start_ns: START,
            warmup_s: 0.0,
            duration_s: 1.0,
            nonbusy: None,
            model_connections: None,
            upstream: None,
        }
    }

    #[test]
    fn a_run_over_several_transports_has_a_latency_row_for_each() {
        let dir = tempfile::tempdir().unwrap();
        let results = dir.path().join("results");
        let mut w = ResultsWriter::create(&results).unwrap();
        let over = |index, proto, ms| QueryResult {
            proto,
            ..result(index, 0.5, Some(ms))
        };
        w.result(&over(0, Proto::Udp, 1.0)).unwrap();
        w.result(&over(1, Proto::Udp, 3.0)).unwrap();
        w.result(&over(2, Proto::Https, 7.0)).unwrap();
        w.result(&over(3, Proto::Quic, 5.0)).unwrap();
        w.result(&QueryResult {
            proto: Proto::Https,
            ..result(4, 0.5, None)
        })
        .unwrap();
        w.finish().unwrap();
        drop(w);
        let m = first_second(&results);
        let rows = rows_for_run("001-r1", &[], &m).unwrap();
        let names: Vec<&str> = rows.iter().map(|r| r.metric.as_str()).collect();
        assert_eq!(
            names[..4],
            [
                "latency_ms",
                "latency_ms_udp",
                "latency_ms_doh",
                "latency_ms_doq"
            ],
            "after latency_ms, the transports used, in order"
        );
        assert_eq!(metric(&rows, "latency_ms").n, 4);
        let udp = metric(&rows, "latency_ms_udp");
        assert_eq!((udp.n, udp.p50), (2, 2.0));
        let doh = metric(&rows, "latency_ms_doh");
        assert_eq!(
            (doh.n, doh.p50),
            (1, 7.0),
            "the unanswered query has no latency"
        );
        assert_eq!(metric(&rows, "latency_ms_doq").p50, 5.0);
    }

    #[test]
    fn a_udp_run_without_handshakes_or_model_leaves_those_rows_out() {
        let dir = tempfile::tempdir().unwrap();
        let results = dir.path().join("results");
        let mut w = ResultsWriter::create(&results).unwrap();
        w.result(&result(0, 0.5, Some(2.0))).unwrap();
        w.finish().unwrap();
        drop(w);
        let m = first_second(&results);
        let rows = rows_for_run("001-r1", &[], &m).unwrap();
        let names: Vec<&str> = rows.iter().map(|r| r.metric.as_str()).collect();
        assert!(!names.contains(&"handshake_ms") && !names.contains(&"model_connections"));
        assert_eq!(metric(&rows, "latency_ms").n, 1);
        assert_eq!(metric(&rows, "latency_ms_nonbusy").n, 0);
        assert_eq!(metric(&rows, "server_rss_mib").n, 0);
        let missing = RunMeasurements {
            results: &dir.path().join("none"),
            ..m
        };
        assert!(rows_for_run("001-r1", &[], &missing).is_err());
    }
}
