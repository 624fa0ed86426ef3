//! The accuracy and latency summary of a replay, in bounded memory.
//!
//! [`Summary`] takes results one at a time (it is a [`ResultSink`]) and keeps no per-query
//! state: counters, HdrHistograms and one pair of counters per second of the run. Per-querier
//! summaries combine with [`Summary::merge`]. [`Summary::report`] computes a [`SummaryReport`],
//! which serializes to JSON and displays as a few lines of text.
//!
//! Precision:
//! - latency is recorded in ns in an HdrHistogram with 3 significant digits up to 1 hour
//!   (longer saturates): exact below 2.048 µs, buckets of at most 1/1024 of the value above.
//! - timing error (sent − intended) is recorded in ns in two such histograms, one for late
//!   or on-time sends and one for the magnitude of early sends, up to 100 s (beyond saturates):
//!   exact below 2.048 µs, buckets of at most 1/1024 of the value above (≤ 1 µs up to 1 ms,
//!   ≤ 1 ms up to 1 s). Min, max and mean are exact.
//! - percentiles are nearest-rank (the ⌈p·n⌉-th smallest value) and reported as the middle of
//!   that value's histogram bucket, so within 0.05% of the exact value (0 below 2.048 µs), and
//!   never outside the exact minimum and maximum (a bucket's middle can lie beyond the values
//!   in it: it is then the nearer extreme); min and max are exact, the latency mean is
//!   HdrHistogram's.
//! - the rate error is exact: see [`RateErrorReport`].

use crate::file::ResultsError;
use crate::result::{ErrorCounts, Outcome, QueryResult, ResultSink};
use hdrhistogram::Histogram;
use ldplayer_dns::Rcode;
use ldplayer_trace::Proto;
use serde::Serialize;
use std::collections::BTreeMap;
use std::fmt;

/// Highest latency recorded exactly (1 hour, in ns); longer ones saturate.
const LATENCY_MAX_NS: u64 = 3_600 * 1_000_000_000;
/// Highest timing error magnitude recorded (100 s, in ns); larger ones saturate.
const TIMING_MAX_NS: u64 = 100 * 1_000_000_000;
const SIGFIG: u8 = 3;
const NS_PER_S: i64 = 1_000_000_000;

/// Nearest-rank position of the percentile `tenths` / 10 among `n` values (1-based), in integer
/// arithmetic so that 99.9% of 1000 values is the 999th, not the 1000th.
fn rank(tenths: u64, n: u64) -> u64 {
    (tenths * n).div_ceil(1000).clamp(1, n.max(1))
}

fn histogram(max: u64) -> Histogram<u64> {
    // The bounds are constants that HdrHistogram accepts.
    Histogram::new_with_bounds(1, max, SIGFIG).expect("valid histogram bounds")
}

fn merge_hist(into: &mut Option<Histogram<u64>>, from: &Option<Histogram<u64>>, max: u64) {
    if let Some(from) = from {
        let h = into.get_or_insert_with(|| histogram(max));
        // Same bounds on both sides: adding cannot fail.
        let _ = h.add(from);
    }
}

/// Durations in ns: their histogram, and their exact extremes (which a histogram only knows to
/// its buckets).
#[derive(Debug, Clone)]
struct Durations {
    hist: Histogram<u64>,
    min: u64,
    max: u64,
}

impl Durations {
    fn new() -> Durations {
        Durations {
            hist: histogram(LATENCY_MAX_NS),
            min: u64::MAX,
            max: 0,
        }
    }

    fn record(&mut self, ns: u64) {
        self.hist.saturating_record(ns);
        self.min = self.min.min(ns);
        self.max = self.max.max(ns);
    }

    fn merge(into: &mut Option<Durations>, from: &Option<Durations>) {
        if let Some(from) = from {
            let d = into.get_or_insert_with(Durations::new);
            // Same bounds on both sides: adding cannot fail.
            let _ = d.hist.add(&from.hist);
            d.min = d.min.min(from.min);
            d.max = d.max.max(from.max);
        }
    }
}

/// Accumulates results into counts, latency and timing-error histograms and per-second rates.
#[derive(Debug, Clone)]
pub struct Summary {
    results: u64,
    sent: u64,
    answered: u64,
    timeouts: u64,
    errors: ErrorCounts,
    truncated: u64,
    rcodes: BTreeMap<Rcode, u64>,
    /// Latency in ns by transport code.
    latency: [Option<Durations>; Proto::ALL.len()],
    /// Connection set-up time (TCP and TLS handshakes) in ns by transport code.
    handshake: [Option<Durations>; Proto::ALL.len()],
    opened: u64,
    reused: u64,
    /// Timing error ≥ 0, ns.
    late: Option<Histogram<u64>>,
    /// −(timing error) for timing error < 0, ns.
    early: Option<Histogram<u64>>,
    timing_min: i64,
    timing_max: i64,
    timing_sum: i128,
    first_sent: Option<i64>,
    last_sent: Option<i64>,
    last_received: Option<i64>,
    first_intended: Option<i64>,
    last_intended: Option<i64>,
    /// Per second: [queries intended in it, queries sent in it].
    seconds: BTreeMap<i64, [u64; 2]>,
}

impl Default for Summary {
    fn default() -> Self {
        Summary::new()
    }
}

fn min_opt(a: Option<i64>, b: Option<i64>) -> Option<i64> {
    match (a, b) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    }
}

fn max_opt(a: Option<i64>, b: Option<i64>) -> Option<i64> {
    match (a, b) {
        (Some(a), Some(b)) => Some(a.max(b)),
        (a, b) => a.or(b),
    }
}

impl Summary {
    /// An empty summary.
    pub fn new() -> Summary {
        Summary {
            results: 0,
            sent: 0,
            answered: 0,
            timeouts: 0,
            errors: ErrorCounts::default(),
            truncated: 0,
            rcodes: BTreeMap::new(),
            latency: Default::default(),
            handshake: Default::default(),
            opened: 0,
            reused: 0,
            late: None,
            early: None,
            timing_min: i64::MAX,
            timing_max: i64::MIN,
            timing_sum: 0,
            first_sent: None,
            last_sent: None,
            last_received: None,
            first_intended: None,
            last_intended: None,
            seconds: BTreeMap::new(),
        }
    }

    /// Adds one result.
    pub fn add(&mut self, r: &QueryResult) {
        self.results += 1;
        match r.outcome {
            Outcome::Answered => {
                self.answered += 1;
                *self.rcodes.entry(r.rcode).or_default() += 1;
                self.truncated += r.truncated as u64;
                if let Some(lat) = r.latency_ns() {
                    self.latency[r.proto as usize]
                        .get_or_insert_with(Durations::new)
                        .record(lat.max(0) as u64);
                }
                self.last_received = max_opt(self.last_received, Some(r.received_ns));
            }
            Outcome::Timeout => self.timeouts += 1,
            Outcome::Error(k) => self.errors.add(k, 1),
        }
        self.first_intended = min_opt(self.first_intended, Some(r.intended_ns));
        self.last_intended = max_opt(self.last_intended, Some(r.intended_ns));
        self.seconds
            .entry(r.intended_ns.div_euclid(NS_PER_S))
            .or_default()[0] += 1;
        if r.sent_ns != 0 {
            self.sent += 1;
            if r.new_connection {
                self.opened += 1;
                if r.handshake_ns > 0 {
                    self.handshake[r.proto as usize]
                        .get_or_insert_with(Durations::new)
                        .record(r.handshake_ns as u64);
                }
            } else if r.proto.is_connection() {
                self.reused += 1;
            }
            self.first_sent = min_opt(self.first_sent, Some(r.sent_ns));
            self.last_sent = max_opt(self.last_sent, Some(r.sent_ns));
            self.seconds
                .entry(r.sent_ns.div_euclid(NS_PER_S))
                .or_default()[1] += 1;
            let e = r.sent_ns - r.intended_ns;
            self.timing_min = self.timing_min.min(e);
            self.timing_max = self.timing_max.max(e);
            self.timing_sum += e as i128;
            let (h, mag) = if e >= 0 {
                (&mut self.late, e as u64)
            } else {
                (&mut self.early, e.unsigned_abs())
            };
            h.get_or_insert_with(|| histogram(TIMING_MAX_NS))
                .saturating_record(mag);
        }
    }

    /// Summarizes a stream of results (a [`ResultsReader`](crate::ResultsReader), for one);
    /// stops at the first error.
    pub fn from_results<I>(results: I) -> Result<Summary, ResultsError>
    where
        I: IntoIterator<Item = Result<QueryResult, ResultsError>>,
    {
        let mut s = Summary::new();
        for r in results {
            s.add(&r?);
        }
        Ok(s)
    }

    /// Adds everything `other` counted (per-querier summaries into one).
    pub fn merge(&mut self, other: &Summary) {
        self.results += other.results;
        self.sent += other.sent;
        self.answered += other.answered;
        self.timeouts += other.timeouts;
        self.errors.merge(&other.errors);
        self.truncated += other.truncated;
        for (&k, &v) in &other.rcodes {
            *self.rcodes.entry(k).or_default() += v;
        }
        for (a, b) in self.latency.iter_mut().zip(&other.latency) {
            Durations::merge(a, b);
        }
        for (a, b) in self.handshake.iter_mut().zip(&other.handshake) {
            Durations::merge(a, b);
        }
        self.opened += other.opened;
        self.reused += other.reused;
        merge_hist(&mut self.late, &other.late, TIMING_MAX_NS);
        merge_hist(&mut self.early, &other.early, TIMING_MAX_NS);
        self.timing_min = self.timing_min.min(other.timing_min);
        self.timing_max = self.timing_max.max(other.timing_max);
        self.timing_sum += other.timing_sum;
        self.first_sent = min_opt(self.first_sent, other.first_sent);
        self.last_sent = max_opt(self.last_sent, other.last_sent);
        self.last_received = max_opt(self.last_received, other.last_received);
        self.first_intended = min_opt(self.first_intended, other.first_intended);
        self.last_intended = max_opt(self.last_intended, other.last_intended);
        for (&s, c) in &other.seconds {
            let e = self.seconds.entry(s).or_default();
            e[0] += c[0];
            e[1] += c[1];
        }
    }

    /// Results taken.
    pub fn results(&self) -> u64 {
        self.results
    }

    /// The `k`-th smallest signed timing error (1-based), ns, from the two histograms.
    fn timing_at_rank(&self, k: u64) -> i64 {
        let n_early = self.early.as_ref().map_or(0, |h| h.len());
        if k <= n_early {
            if let Some(h) = &self.early {
                return -(nth_smallest(h, n_early - k + 1) as i64);
            }
        }
        self.late
            .as_ref()
            .map_or(0, |h| nth_smallest(h, k - n_early) as i64)
    }

    /// The timing error at percentile `tenths` / 10, ns, within the exact extremes.
    fn timing_percentile(&self, tenths: u64) -> i64 {
        self.timing_at_rank(rank(tenths, self.sent))
            .clamp(self.timing_min, self.timing_max)
    }

    /// The queries due and the queries sent in every second of the run that lies wholly inside
    /// both the intended and the actual span and was due at least one query, in time order:
    /// the seconds the rate error is computed over ([`RateErrorReport`], and the report's
    /// rate error figure).
    pub fn whole_seconds(&self) -> Vec<(u64, u64)> {
        let (Some(fi), Some(li), Some(fs), Some(ls)) = (
            self.first_intended,
            self.last_intended,
            self.first_sent,
            self.last_sent,
        ) else {
            return Vec::new();
        };
        let lo = fi.max(fs).div_euclid(NS_PER_S) + 1;
        let hi = li.min(ls).div_euclid(NS_PER_S) - 1;
        if lo > hi {
            return Vec::new();
        }
        self.seconds
            .range(lo..=hi)
            .filter(|(_, &[intended, _])| intended > 0)
            .map(|(_, &[intended, actual])| (intended, actual))
            .collect()
    }

    /// The per-second rate comparison (see [`RateErrorReport`]).
    fn rate_error(&self) -> RateErrorReport {
        let mut rel = Vec::new();
        let (mut within_0_1, mut within_1) = (0u64, 0u64);
        for (intended, actual) in self.whole_seconds() {
            let diff = actual.abs_diff(intended) as u128;
            within_0_1 += (diff * 1000 <= intended as u128) as u64;
            within_1 += (diff * 100 <= intended as u128) as u64;
            rel.push((actual as f64 - intended as f64) / intended as f64 * 100.0);
        }
        if rel.is_empty() {
            return RateErrorReport::default();
        }
        rel.sort_by(f64::total_cmp);
        let n = rel.len();
        let at = |q: f64| rel[((q * n as f64).ceil() as usize).clamp(1, n) - 1];
        RateErrorReport {
            seconds: n as u64,
            within_0_1pct: Some(within_0_1 as f64 / n as f64),
            within_1pct: Some(within_1 as f64 / n as f64),
            min_pct: Some(rel[0]),
            p25_pct: Some(at(0.25)),
            p50_pct: Some(at(0.5)),
            p75_pct: Some(at(0.75)),
            max_pct: Some(rel[n - 1]),
        }
    }

    /// Computes the report.
    pub fn report(&self) -> SummaryReport {
        let errors = self.errors.iter().map(|(k, n)| (k.name(), n)).collect();
        let rcodes = self
            .rcodes
            .iter()
            .map(|(&k, &v)| (k.to_string(), v))
            .collect();
        let by_proto = |durations: &[Option<Durations>]| {
            let mut out = BTreeMap::new();
            for p in Proto::ALL {
                if let Some(d) = durations[p as usize]
                    .as_ref()
                    .filter(|d| !d.hist.is_empty())
                {
                    out.insert(p.as_str(), LatencyReport::of(d));
                }
            }
            out
        };
        let latency_ms = by_proto(&self.latency);
        let handshake_ms = by_proto(&self.handshake);
        let timing_error_us = (self.sent > 0).then(|| {
            let us = |ns: i64| ns as f64 / 1e3;
            TimingErrorReport {
                count: self.sent,
                mean: self.timing_sum as f64 / self.sent as f64 / 1e3,
                min: us(self.timing_min),
                p25: us(self.timing_percentile(250)),
                p50: us(self.timing_percentile(500)),
                p75: us(self.timing_percentile(750)),
                p99: us(self.timing_percentile(990)),
                max: us(self.timing_max),
            }
        });
        let secs = |a: Option<i64>, b: Option<i64>| match (a, b) {
            (Some(a), Some(b)) if b > a => (b - a) as f64 / 1e9,
            _ => 0.0,
        };
        let answer_span = secs(self.first_sent, self.last_received);
        let sent_span = secs(self.first_sent, self.last_sent);
        let rate = |n: u64, s: f64| if s > 0.0 { n as f64 / s } else { 0.0 };
        SummaryReport {
            results: self.results,
            sent: self.sent,
            answered: self.answered,
            timeouts: self.timeouts,
            errors,
            truncated: self.truncated,
            rcodes,
            qps: rate(self.answered, answer_span),
            sent_qps: rate(self.sent, sent_span),
            duration_s: secs(self.first_sent, max_opt(self.last_sent, self.last_received)),
            latency_ms,
            handshake_ms,
            connections: ConnectionsReport {
                opened: self.opened,
                reused: self.reused,
            },
            timing_error_us,
            rate_error: self.rate_error(),
        }
    }
}

/// The value of the `k`-th smallest recorded value (1-based), as the middle of its bucket.
fn nth_smallest(h: &Histogram<u64>, k: u64) -> u64 {
    let mut seen = 0;
    for v in h.iter_recorded() {
        seen += v.count_at_value();
        if seen >= k {
            return h.median_equivalent(v.value_iterated_to());
        }
    }
    h.max()
}

impl ResultSink for Summary {
    fn result(&mut self, r: &QueryResult) -> std::io::Result<()> {
        self.add(r);
        Ok(())
    }
}

impl fmt::Display for Summary {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.report().fmt(f)
    }
}

/// Latency percentiles of one transport, in milliseconds.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct LatencyReport {
    /// Answers counted.
    pub count: u64,
    /// Mean.
    pub mean: f64,
    /// Smallest (exact).
    pub min: f64,
    /// 5th percentile.
    pub p5: f64,
    /// 25th percentile.
    pub p25: f64,
    /// Median.
    pub p50: f64,
    /// 75th percentile.
    pub p75: f64,
    /// 95th percentile.
    pub p95: f64,
    /// 99th percentile.
    pub p99: f64,
    /// 99.9th percentile.
    #[serde(rename = "p99.9")]
    pub p99_9: f64,
    /// Largest (exact).
    pub max: f64,
}

impl LatencyReport {
    /// The percentiles of durations in nanoseconds, in milliseconds: bucket middles kept
    /// within the exact extremes, which are reported as they are.
    fn of(d: &Durations) -> LatencyReport {
        let h = &d.hist;
        let ms = |ns: u64| ns as f64 / 1e6;
        let at = |tenths: u64| ms(nth_smallest(h, rank(tenths, h.len())).clamp(d.min, d.max));
        LatencyReport {
            count: h.len(),
            mean: (h.mean() / 1e6).clamp(ms(d.min), ms(d.max)),
            min: ms(d.min),
            p5: at(50),
            p25: at(250),
            p50: at(500),
            p75: at(750),
            p95: at(950),
            p99: at(990),
            p99_9: at(999),
            max: ms(d.max),
        }
    }
}

/// Connections opened by queries and queries that reused one.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct ConnectionsReport {
    /// Queries that opened a new connection.
    pub opened: u64,
    /// Queries sent on a connection-oriented transport over an existing connection.
    pub reused: u64,
}

/// How late queries were sent (sent − intended), in microseconds; negative: early.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TimingErrorReport {
    /// Queries sent.
    pub count: u64,
    /// Mean (exact).
    pub mean: f64,
    /// Earliest (exact).
    pub min: f64,
    /// First quartile.
    pub p25: f64,
    /// Median.
    pub p50: f64,
    /// Third quartile.
    pub p75: f64,
    /// 99th percentile.
    pub p99: f64,
    /// Latest (exact).
    pub max: f64,
}

/// The per-second query rate of the replay against the trace (the LDplayer paper's Figure 8).
///
/// Queries are binned by the second of their intended time (the trace time mapped onto the
/// run) and by the second of their actual send time. For each full second (those wholly
/// inside both the intended and the actual span: the first and last seconds are left out)
/// with at least one intended query, the relative error is (sent − intended) / intended.
/// Shares are fractions (0..1) of those seconds; errors are percentages; quantiles are
/// nearest-rank. Everything but `seconds` is `null` when no second qualifies.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct RateErrorReport {
    /// Seconds compared.
    pub seconds: u64,
    /// Share of seconds whose rate is within ±0.1% of the trace's.
    pub within_0_1pct: Option<f64>,
    /// Share of seconds whose rate is within ±1% of the trace's.
    pub within_1pct: Option<f64>,
    /// Smallest relative error, %.
    pub min_pct: Option<f64>,
    /// First quartile of the relative error, %.
    pub p25_pct: Option<f64>,
    /// Median relative error, %.
    pub p50_pct: Option<f64>,
    /// Third quartile of the relative error, %.
    pub p75_pct: Option<f64>,
    /// Largest relative error, %.
    pub max_pct: Option<f64>,
}

/// The summary of a replay: JSON through `serde`, a few lines of text through `Display`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SummaryReport {
    /// Results counted (every query of the replay).
    pub results: u64,
    /// Queries sent.
    pub sent: u64,
    /// Queries answered.
    pub answered: u64,
    /// Queries that timed out.
    pub timeouts: u64,
    /// Failed queries by error kind (every kind, by [`ErrorKind::name`](crate::ErrorKind::name)).
    pub errors: BTreeMap<&'static str, u64>,
    /// Answers with the TC bit.
    pub truncated: u64,
    /// Answers by response code mnemonic.
    pub rcodes: BTreeMap<String, u64>,
    /// Answers per second: answered / (last received − first sent); 0 if undefined.
    pub qps: f64,
    /// Queries sent per second: sent / (last sent − first sent); 0 if undefined.
    pub sent_qps: f64,
    /// From the first send to the last send or receive, seconds.
    pub duration_s: f64,
    /// Latency percentiles by transport (only transports with answers).
    pub latency_ms: BTreeMap<&'static str, LatencyReport>,
    /// Connection set-up times by transport (TCP handshake, and TLS handshake for TLS), over the
    /// connections that became ready; `count` is their number. Latencies leave these out.
    pub handshake_ms: BTreeMap<&'static str, LatencyReport>,
    /// Connections opened and reused.
    pub connections: ConnectionsReport,
    /// Send timing error; `null` when nothing was sent.
    pub timing_error_us: Option<TimingErrorReport>,
    /// Per-second rate error against the trace.
    pub rate_error: RateErrorReport,
}

/// Response codes listed first in the text summary, in this order; the others follow by name.
pub use ldplayer_dns::MAIN_RCODES;

impl SummaryReport {
    /// The answers by response code, e.g. `NOERROR 950, NXDOMAIN 48, SERVFAIL 2`: the
    /// [`MAIN_RCODES`] first, then the others by name; codes with no answer are left out.
    pub fn rcodes_text(&self) -> String {
        let main = MAIN_RCODES
            .iter()
            .filter_map(|rc| self.rcodes.get_key_value(rc.mnemonic()?));
        let others = self
            .rcodes
            .iter()
            .filter(|(name, _)| !MAIN_RCODES.iter().any(|rc| rc.mnemonic() == Some(name)));
        main.chain(others)
            .filter(|(_, &n)| n > 0)
            .map(|(name, n)| format!("{name} {n}"))
            .collect::<Vec<_>>()
            .join(", ")
    }
}

/// Formats a duration given in ms with a unit that suits it.
fn fmt_ms(ms: f64) -> String {
    if ms.abs() >= 1000.0 {
        format!("{:.3} s", ms / 1000.0)
    } else if ms.abs() >= 1.0 {
        format!("{ms:.3} ms")
    } else {
        format!("{:.1} µs", ms * 1000.0)
    }
}

fn pct(share: f64) -> String {
    format!("{:.1}%", share * 100.0)
}

impl fmt::Display for SummaryReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let errors: u64 = self.errors.values().sum();
        write!(
            f,
            "{} queries: {} sent, {} answered",
            self.results, self.sent, self.answered
        )?;
        if self.answered > 0 {
            write!(f, " ({})", self.rcodes_text())?;
        }
        write!(f, ", {} timeouts, {} errors", self.timeouts, errors)?;
        if errors > 0 {
            let kinds: Vec<String> = self
                .errors
                .iter()
                .filter(|(_, &n)| n > 0)
                .map(|(k, n)| format!("{k} {n}"))
                .collect();
            write!(f, " ({})", kinds.join(", "))?;
        }
        writeln!(f)?;
        writeln!(
            f,
            "run {:.3} s: {:.1} answers/s, {:.1} queries sent/s",
            self.duration_s, self.qps, self.sent_qps
        )?;
        for (proto, l) in &self.latency_ms {
            writeln!(
                f,
                "latency {proto}: p50 {}, p95 {}, p99 {}, p99.9 {} ({} answers)",
                fmt_ms(l.p50),
                fmt_ms(l.p95),
                fmt_ms(l.p99),
                fmt_ms(l.p99_9),
                l.count
            )?;
        }
        if self.connections.opened + self.connections.reused > 0 {
            writeln!(
                f,
                "connections: {} opened, {} reused",
                self.connections.opened, self.connections.reused
            )?;
        }
        for (proto, h) in &self.handshake_ms {
            writeln!(
                f,
                "handshake {proto}: p50 {}, p95 {}, max {} ({} connections)",
                fmt_ms(h.p50),
                fmt_ms(h.p95),
                fmt_ms(h.max),
                h.count
            )?;
        }
        if let Some(t) = &self.timing_error_us {
            writeln!(
                f,
                "timing error: p50 {}, p99 {}, min {}, max {}",
                fmt_ms(t.p50 / 1e3),
                fmt_ms(t.p99 / 1e3),
                fmt_ms(t.min / 1e3),
                fmt_ms(t.max / 1e3)
            )?;
        }
        let r = &self.rate_error;
        if let (Some(w01), Some(w1), Some(p50)) = (r.within_0_1pct, r.within_1pct, r.p50_pct) {
            writeln!(
                f,
                "rate error: {} full seconds, {} within ±0.1%, {} within ±1%, median {:+.3}%",
                r.seconds,
                pct(w01),
                pct(w1),
                p50
            )?;
        }
        Ok(())
    }
}
