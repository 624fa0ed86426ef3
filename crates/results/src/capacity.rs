//! The capacity of a server found by a ramp of offered load (`replay --ramp-to`), computed as
//! resperf computes its "maximum throughput", in bounded memory.
//!
//! A ramp offers a rate rising linearly from 0 to [`RampSpec::to_qps`] over
//! [`RampSpec::ramp_s`] seconds. [`Capacity`] takes the results (it is a [`ResultSink`]) and
//! bins each query by the second of its due time since the ramp's start (the second that ends
//! at or after it): queries due in that second (offered), sent, answered (any response code,
//! as resperf counts them), answers that are failures (neither NOERROR nor NXDOMAIN, resperf's
//! "failure responses"), and a latency histogram of the answers. A query counts in the second it was due in, whenever its answer
//! came, as resperf draws its plots "at the point in time when the query was sent".
//!
//! [`Capacity::report`] then walks the complete seconds in time order, as resperf's
//! `print_statistics` walks its buckets: it stops at the first second whose loss (queries due
//! and not answered, in %) exceeds [`RampSpec::max_loss_pct`] (resperf's `-L`) or, when
//! given, whose latency at [`RampSpec::latency_percentile`] exceeds
//! [`RampSpec::max_latency_ms`]; the capacity is the highest answer rate of the seconds
//! before it. Where ldplayer differs from resperf:
//! - seconds, not resperf's half-second buckets (`-i 0.5`), and queries binned by their due
//!   time rather than by when they were sent (the same while the replay keeps its schedule,
//!   which its timing error says); a query never sent (a connection refused) is offered and
//!   lost, where resperf would not count it;
//! - the latency bound, which resperf leaves to the reader of its plots;
//! - the seconds cut short at the end (the ramp's last partial second, or where the trace ran
//!   out) are left out, as resperf leaves out its last bucket;
//! - ramps longer than [`MAX_BINS`] seconds are binned in wider bins, so that memory stays
//!   bounded.

use crate::result::{Outcome, QueryResult, ResultSink};
use hdrhistogram::Histogram;
use ldplayer_dns::Rcode;
use serde::{Deserialize, Serialize};
use std::fmt;

/// The most bins a ramp is cut into; a ramp longer than this many seconds gets bins of
/// `ramp_s / MAX_BINS` seconds. Each bin with answers holds a latency histogram of about 13 KB.
pub const MAX_BINS: usize = 3600;
/// Latencies are recorded in µs up to an hour, to 2 significant digits (1%).
const LATENCY_MAX_US: u64 = 3_600_000_000;
const NS_PER_S: f64 = 1e9;

/// The default bound on loss, in %: resperf's `-L` default, no bound (the capacity is then
/// the highest answer rate of the whole ramp).
pub const DEFAULT_MAX_LOSS_PCT: f64 = 100.0;
/// The default percentile of a second's latency held against the latency bound.
pub const DEFAULT_LATENCY_PERCENTILE: f64 = 95.0;

fn default_percentile() -> f64 {
    DEFAULT_LATENCY_PERCENTILE
}

/// A ramp and how its capacity is judged: what `replay --ramp-to` records in its results
/// file's run info (`ramp`), so that `results summary` and `report` find the capacity the
/// replay printed.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct RampSpec {
    /// The offered rate at the end of the ramp, queries per second.
    pub to_qps: f64,
    /// The ramp's length, seconds.
    pub ramp_s: f64,
    /// The most loss (queries due in a second and not answered, %) a second may have for the
    /// server to count as keeping up.
    pub max_loss_pct: f64,
    /// The highest latency (ms, at `latency_percentile`) a second may have for the server to
    /// count as keeping up; `None`: no bound.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_latency_ms: Option<f64>,
    /// The percentile of each second's latencies held against `max_latency_ms`.
    #[serde(default = "default_percentile")]
    pub latency_percentile: f64,
}

/// Why a [`RampSpec`] cannot be used.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{0}")]
pub struct RampSpecError(String);

impl RampSpec {
    /// A ramp to `to_qps` over `ramp_s` seconds, judged as resperf judges it by default (no
    /// bound on loss, none on latency).
    pub fn new(to_qps: f64, ramp_s: f64) -> RampSpec {
        RampSpec {
            to_qps,
            ramp_s,
            max_loss_pct: DEFAULT_MAX_LOSS_PCT,
            max_latency_ms: None,
            latency_percentile: DEFAULT_LATENCY_PERCENTILE,
        }
    }

    /// Checks that every number is one a ramp can be judged with.
    pub fn validate(&self) -> Result<(), RampSpecError> {
        let bad = |m: String| Err(RampSpecError(m));
        if !(self.to_qps.is_finite() && self.to_qps > 0.0) {
            return bad(format!(
                "the ramp's rate must be above 0 and finite, not {}",
                self.to_qps
            ));
        }
        if !(self.ramp_s.is_finite() && self.ramp_s > 0.0 && self.ramp_s <= 86_400.0) {
            return bad(format!(
                "the ramp's length must be above 0 and at most a day (86400 s), not {}",
                self.ramp_s
            ));
        }
        if !(0.0..=100.0).contains(&self.max_loss_pct) {
            return bad(format!(
                "the loss bound is a percentage from 0 to 100, not {}",
                self.max_loss_pct
            ));
        }
        if let Some(ms) = self.max_latency_ms {
            if !(ms.is_finite() && ms > 0.0) {
                return bad(format!(
                    "the latency bound must be above 0 ms and finite, not {ms}"
                ));
            }
        }
        if !(self.latency_percentile > 0.0 && self.latency_percentile <= 100.0) {
            return bad(format!(
                "the latency percentile must be above 0 and at most 100, not {}",
                self.latency_percentile
            ));
        }
        Ok(())
    }

    /// The width of the bins, seconds: 1, or more for ramps longer than [`MAX_BINS`] s.
    pub fn bin_s(&self) -> f64 {
        (self.ramp_s / MAX_BINS as f64).max(1.0)
    }
}

/// One bin of the ramp.
#[derive(Debug, Clone, Default)]
struct Bin {
    due: u64,
    sent: u64,
    answered: u64,
    failures: u64,
    /// Answers' latency in µs (created with the first answer).
    latency: Option<Histogram<u32>>,
}

/// The ramp's bins, filled from results (a [`ResultSink`]); [`Capacity::report`] judges them.
#[derive(Debug, Clone)]
pub struct Capacity {
    spec: RampSpec,
    start_ns: i64,
    bin_ns: f64,
    bins: Vec<Bin>,
    /// The latest due time of a query in the ramp, ns after its start.
    last_due_ns: i64,
    /// Results due outside the ramp (before its start or after its end): not binned.
    outside: u64,
}

impl Capacity {
    /// Empty bins for the ramp `spec` that started at `start_ns` (`CLOCK_REALTIME`).
    pub fn new(spec: RampSpec, start_ns: i64) -> Capacity {
        let bin_s = spec.bin_s();
        let n = (spec.ramp_s / bin_s).ceil().clamp(1.0, MAX_BINS as f64) as usize;
        Capacity {
            spec,
            start_ns,
            bin_ns: bin_s * NS_PER_S,
            bins: vec![Bin::default(); n],
            last_due_ns: 0,
            outside: 0,
        }
    }

    /// The bins of the ramp that a results file's run info records (its ramp and its start),
    /// if it records one.
    pub fn for_run(info: Option<&crate::RunInfo>) -> Option<Capacity> {
        let info = info?;
        Some(Capacity::new(info.ramp?, info.start_ns?))
    }

    /// The capacity of the ramp whose results file is at `path`, if it is a ramp's (its run
    /// info records a ramp and its start): what `replay --ramp-to` printed.
    pub fn of_file(path: &std::path::Path) -> Result<Option<CapacityReport>, crate::ResultsError> {
        let mut reader = crate::ResultsReader::open(path)?;
        let Some(mut capacity) = Capacity::for_run(reader.run_info()) else {
            return Ok(None);
        };
        for r in &mut reader {
            capacity.add(&r?);
        }
        Ok(Some(capacity.report()))
    }

    /// The ramp judged.
    pub fn spec(&self) -> &RampSpec {
        &self.spec
    }

    /// Bins one result.
    pub fn add(&mut self, r: &QueryResult) {
        // A query the run was stopped before sending (Ctrl-C) was not offered.
        if r.outcome == Outcome::Error(crate::ErrorKind::Stopped) && r.sent_ns == 0 {
            return;
        }
        // Bins hold the queries due in (start of bin, end of bin], so that the k-th query of
        // the ramp, due where the integral of the rate reaches k, falls in the bin whose
        // integral reached it; the query due at the very start goes in the first.
        let offset = r.intended_ns.saturating_sub(self.start_ns);
        let i = ((offset as f64 / self.bin_ns).ceil() - 1.0).max(0.0);
        let Some(bin) = (offset >= 0)
            .then_some(i as usize)
            .and_then(|i| self.bins.get_mut(i))
        else {
            self.outside += 1;
            return;
        };
        self.last_due_ns = self.last_due_ns.max(offset);
        bin.due += 1;
        bin.sent += (r.sent_ns != 0) as u64;
        if let Some(ns) = r.latency_ns() {
            bin.answered += 1;
            bin.failures += !(r.rcode == Rcode::NOERROR || r.rcode == Rcode::NXDOMAIN) as u64;
            let us = (ns.max(0) as u64 / 1_000).clamp(1, LATENCY_MAX_US);
            bin.latency
                .get_or_insert_with(|| {
                    // Constant bounds that HdrHistogram accepts.
                    Histogram::new_with_bounds(1, LATENCY_MAX_US, 2).expect("valid bounds")
                })
                .saturating_record(us);
        }
    }

    /// How far the ramp's offered load went, ns after its start: its whole length when its
    /// last query is due within a query's gap of the end, else the last query's due time
    /// (the trace ran out first).
    fn end_ns(&self) -> f64 {
        let length = self.spec.ramp_s * NS_PER_S;
        let last_gap = 2.0 / self.spec.to_qps * NS_PER_S;
        if self.last_due_ns as f64 + last_gap >= length {
            length
        } else {
            self.last_due_ns as f64
        }
    }

    /// The bins that lie wholly inside the offered load, with their numbers.
    pub fn seconds(&self) -> Vec<RampSecond> {
        let end = self.end_ns();
        let width = self.bin_ns / NS_PER_S;
        let pct = self.spec.latency_percentile;
        self.bins
            .iter()
            .enumerate()
            .take_while(|(i, _)| (*i as f64 + 1.0) * self.bin_ns <= end + 1.0)
            .filter(|(_, b)| b.due > 0)
            .map(|(i, b)| {
                let at = |q: f64| {
                    b.latency
                        .as_ref()
                        .filter(|h| !h.is_empty())
                        .map(|h| h.value_at_quantile(q / 100.0) as f64 / 1e3)
                };
                RampSecond {
                    t_s: i as f64 * width,
                    offered_qps: b.due as f64 / width,
                    sent_qps: b.sent as f64 / width,
                    answered_qps: b.answered as f64 / width,
                    failures_qps: b.failures as f64 / width,
                    loss_pct: (b.due - b.answered) as f64 * 100.0 / b.due as f64,
                    latency_p50_ms: at(50.0),
                    latency_p95_ms: at(95.0),
                    latency_p99_ms: at(99.0),
                    latency_bound_ms: at(pct),
                }
            })
            .collect()
    }

    /// Judges the ramp: the capacity, where it was reached, the knee, and every second.
    pub fn report(&self) -> CapacityReport {
        let seconds = self.seconds();
        let mut best: Option<&RampSecond> = None;
        let mut knee = None;
        for s in &seconds {
            let over_loss = s.loss_pct > self.spec.max_loss_pct;
            let over_latency = match (self.spec.max_latency_ms, s.latency_bound_ms) {
                (Some(max), Some(ms)) => ms > max,
                _ => false,
            };
            if over_loss || over_latency {
                knee = Some((s, if over_loss { "loss" } else { "latency" }));
                break;
            }
            if best.is_none_or(|b| s.answered_qps > b.answered_qps) {
                best = Some(s);
            }
        }
        CapacityReport {
            spec: self.spec,
            capacity_qps: best.map_or(0.0, |b| b.answered_qps),
            offered_qps: best.map_or(0.0, |b| b.offered_qps),
            loss_pct: best.map_or(0.0, |b| b.loss_pct),
            at_s: best.map(|b| b.t_s),
            limited_by: knee.map_or("none", |k| k.1),
            knee_s: knee.map(|k| k.0.t_s),
            knee_offered_qps: knee.map(|k| k.0.offered_qps),
            knee_loss_pct: knee.map(|k| k.0.loss_pct),
            knee_latency_ms: knee.and_then(|k| k.0.latency_bound_ms),
            reached_qps: seconds.iter().map(|s| s.offered_qps).fold(0.0, f64::max),
            bin_s: self.bin_ns / NS_PER_S,
            outside: self.outside,
            seconds,
        }
    }
}

impl ResultSink for Capacity {
    fn result(&mut self, r: &QueryResult) -> std::io::Result<()> {
        self.add(r);
        Ok(())
    }
}

/// One second (bin) of a ramp: what was offered, sent and answered, and how fast. Rates are
/// per second, over the bin's queries (by due time).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RampSecond {
    /// The bin's start, seconds after the ramp's.
    pub t_s: f64,
    /// Queries due.
    pub offered_qps: f64,
    /// Queries sent.
    pub sent_qps: f64,
    /// Queries answered (any response code).
    pub answered_qps: f64,
    /// Answers neither NOERROR nor NXDOMAIN (resperf's failure responses: SERVFAIL and
    /// REFUSED from a server that sheds load so).
    pub failures_qps: f64,
    /// Queries due and not answered, %.
    pub loss_pct: f64,
    /// Answers' median latency, ms (1% precision); `null` without answers.
    pub latency_p50_ms: Option<f64>,
    /// 95th percentile of latency, ms.
    pub latency_p95_ms: Option<f64>,
    /// 99th percentile of latency, ms.
    pub latency_p99_ms: Option<f64>,
    /// The latency at [`RampSpec::latency_percentile`], ms: what the latency bound judges.
    pub latency_bound_ms: Option<f64>,
}

/// A ramp's capacity (the `ramp` object of `replay --json` and `results summary --json`).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CapacityReport {
    /// The ramp and its bounds.
    #[serde(flatten)]
    pub spec: RampSpec,
    /// The capacity: the highest answer rate (answers per second, by the second their query
    /// was due) of the seconds before the first one over a bound, resperf's "maximum
    /// throughput"; 0 when the first second is already over a bound.
    pub capacity_qps: f64,
    /// The offered rate of the second where the capacity was reached.
    pub offered_qps: f64,
    /// The loss in that second, % (resperf's "lost at that point").
    pub loss_pct: f64,
    /// When that second began, seconds after the ramp's start.
    pub at_s: Option<f64>,
    /// What ended the search: `loss` or `latency` (the first second over that bound: the
    /// knee), or `none`: the server kept up with every second of the ramp, so the capacity
    /// is only a lower bound (ramp higher).
    pub limited_by: &'static str,
    /// The first second over a bound (the knee), seconds after the start.
    pub knee_s: Option<f64>,
    /// Its offered rate.
    pub knee_offered_qps: Option<f64>,
    /// Its loss, %.
    pub knee_loss_pct: Option<f64>,
    /// Its latency at the bound's percentile, ms.
    pub knee_latency_ms: Option<f64>,
    /// The highest offered rate of the complete seconds: the ramp's top, less where the
    /// trace ran out first.
    pub reached_qps: f64,
    /// The width of the bins, s (1 unless the ramp is longer than [`MAX_BINS`] s).
    pub bin_s: f64,
    /// Results due outside the ramp, not counted (none for a ramp's own results).
    pub outside: u64,
    /// Every complete second of the ramp.
    pub seconds: Vec<RampSecond>,
}

impl CapacityReport {
    /// Whether the server kept up with the whole ramp: the capacity is then a lower bound.
    pub fn kept_up(&self) -> bool {
        self.limited_by == "none"
    }
}

/// A rate with one decimal and thousands left unseparated (as the summary prints rates).
fn qps(v: f64) -> String {
    format!("{v:.1}")
}

impl fmt::Display for CapacityReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let s = &self.spec;
        let bounds = match s.max_latency_ms {
            Some(ms) => format!(
                "loss ≤ {}%, latency p{} ≤ {ms} ms",
                s.max_loss_pct, s.latency_percentile
            ),
            None => format!("loss ≤ {}%", s.max_loss_pct),
        };
        writeln!(
            f,
            "ramp: 0 to {} queries/s over {} s ({} complete seconds, up to {} offered); {bounds}",
            s.to_qps,
            s.ramp_s,
            self.seconds.len(),
            qps(self.reached_qps)
        )?;
        match (self.at_s, self.knee_s) {
            (None, Some(k)) => writeln!(
                f,
                "capacity: 0 answers/s: the first second ({k} s) was already over the bound \
                 ({})",
                self.knee_words()
            ),
            (None, None) => writeln!(f, "capacity: unknown: no complete second of the ramp"),
            (Some(at), knee) => {
                write!(
                    f,
                    "capacity: {} answers/s at {} queries/s offered ({:.1}% lost), {at} s into \
                     the ramp",
                    qps(self.capacity_qps),
                    qps(self.offered_qps),
                    self.loss_pct
                )?;
                match knee {
                    Some(k) => writeln!(f, "; knee at {k} s: {}", self.knee_words()),
                    None => writeln!(
                        f,
                        "; the server kept up with the whole ramp: a lower bound, ramp higher"
                    ),
                }
            }
        }
    }
}

impl CapacityReport {
    /// The knee in words: its offered rate and what it broke.
    fn knee_words(&self) -> String {
        let offered = self.knee_offered_qps.map_or(String::new(), qps);
        match self.limited_by {
            "latency" => format!(
                "{offered} queries/s offered, latency p{} {:.3} ms over {} ms",
                self.spec.latency_percentile,
                self.knee_latency_ms.unwrap_or(f64::NAN),
                self.spec.max_latency_ms.unwrap_or(f64::NAN)
            ),
            _ => format!(
                "{offered} queries/s offered, {:.1}% lost over {}%",
                self.knee_loss_pct.unwrap_or(f64::NAN),
                self.spec.max_loss_pct
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ErrorKind;
    use ldplayer_trace::Proto;

    const T0: i64 = 1_700_000_000_000_000_000;

    /// A query due `at_s` after the start, answered after `latency_ms` (or not: `None`).
    fn result(at_s: f64, latency_ms: Option<f64>) -> QueryResult {
        let due = T0 + (at_s * 1e9) as i64;
        QueryResult {
            index: 0,
            trace_ns: 0,
            intended_ns: due,
            sent_ns: due,
            received_ns: latency_ms.map_or(0, |ms| due + (ms * 1e6) as i64),
            proto: Proto::Udp,
            new_connection: false,
            handshake_ns: 0,
            rcode: Rcode::NOERROR,
            response_len: 0,
            truncated: false,
            outcome: match latency_ms {
                Some(_) => Outcome::Answered,
                None => Outcome::Timeout,
            },
            target: 0,
        }
    }

    /// A ramp to `to` over `secs` whose server answers at most `limit` queries per second
    /// (the first ones of each second), after 1 ms, or after `slow_ms` beyond `slow_from` q/s.
    fn ramp(spec: RampSpec, limit: f64, slow: Option<(f64, f64)>) -> CapacityReport {
        let mut c = Capacity::new(spec, T0);
        let total = (spec.to_qps * spec.ramp_s / 2.0).floor() as u64;
        let mut per_second = std::collections::HashMap::new();
        for k in 1..=total {
            let t = (2.0 * k as f64 * spec.ramp_s / spec.to_qps).sqrt();
            let n = per_second.entry(t.ceil() as i64).or_insert(0.0);
            *n += 1.0;
            let rate = spec.to_qps * t / spec.ramp_s;
            let latency = match slow {
                Some((from, ms)) if rate > from => ms,
                _ => 1.0,
            };
            c.add(&result(t, (*n <= limit).then_some(latency)));
        }
        c.report()
    }

    #[test]
    fn a_results_file_has_a_capacity_when_its_run_info_records_a_ramp() {
        use crate::{ResultSink, ResultsWriter, RunInfo};
        let dir = tempfile::tempdir().unwrap();
        let write = |name: &str, info: &RunInfo| {
            let path = dir.path().join(name);
            let mut w = ResultsWriter::create_with_run_info(&path, info).unwrap();
            for k in 1..=10 {
                w.result(&result(k as f64 / 10.0, Some(1.0))).unwrap();
            }
            w.finish().unwrap();
            path
        };
        let ramp = RunInfo {
            start_ns: Some(T0),
            ramp: Some(RampSpec::new(20.0, 1.0)),
            ..RunInfo::default()
        };
        let report = Capacity::of_file(&write("ramp.res", &ramp))
            .unwrap()
            .expect("a ramp's file");
        assert_eq!(report.capacity_qps, 10.0, "{report:?}");
        let plain = RunInfo {
            start_ns: Some(T0),
            ..RunInfo::default()
        };
        assert!(Capacity::of_file(&write("plain.res", &plain))
            .unwrap()
            .is_none());
        assert!(Capacity::of_file(&dir.path().join("none.res")).is_err());
    }

    #[test]
    fn the_capacity_is_the_highest_answer_rate_before_the_loss_bound() {
        // 0 to 4000 q/s over 10 s: 200, 600, ..., 3800 q/s offered per second; 2000 answered
        // at most.
        let spec = RampSpec {
            max_loss_pct: 10.0,
            ..RampSpec::new(4000.0, 10.0)
        };
        let r = ramp(spec, 2000.0, None);
        assert_eq!(r.seconds.len(), 10);
        assert_eq!(r.seconds[3].offered_qps, 1400.0);
        // 2200 offered, 2000 answered: 9.1% lost, kept; 2600 offered: 23% lost, the knee.
        assert_eq!(r.capacity_qps, 2000.0);
        assert_eq!(r.offered_qps, 2200.0);
        assert_eq!(r.at_s, Some(5.0));
        assert_eq!((r.limited_by, r.knee_s), ("loss", Some(6.0)));
        assert_eq!(r.knee_offered_qps, Some(2600.0));
        assert_eq!(r.reached_qps, 3800.0);
        // Without a bound (resperf's default), the highest answer rate of all.
        let r = ramp(RampSpec::new(4000.0, 10.0), 2000.0, None);
        assert_eq!((r.capacity_qps, r.limited_by), (2000.0, "none"));
        // A server that keeps up: a lower bound, the ramp's top.
        let r = ramp(spec, 1e9, None);
        assert_eq!((r.capacity_qps, r.limited_by), (3800.0, "none"));
        assert!(r.kept_up());
        let text = r.to_string();
        assert!(text.contains("lower bound"), "{text}");
    }

    #[test]
    fn the_latency_bound_stops_the_search_where_answers_slow_down() {
        let spec = RampSpec {
            max_latency_ms: Some(10.0),
            ..RampSpec::new(4000.0, 10.0)
        };
        // Answers slow to 50 ms once more than 3000 q/s are offered.
        let r = ramp(spec, 1e9, Some((3000.0, 50.0)));
        assert_eq!(r.limited_by, "latency");
        assert_eq!(r.capacity_qps, 2600.0);
        assert_eq!(r.knee_offered_qps, Some(3000.0));
        let knee = r.knee_latency_ms.unwrap();
        assert!((knee - 50.0).abs() < 1.0, "{knee}");
        assert!(r.to_string().contains("latency p95"), "{r}");
    }

    #[test]
    fn partial_seconds_and_stopped_queries_are_left_out() {
        // The trace ran out at 4.5 s of a 10 s ramp: four complete seconds.
        let spec = RampSpec::new(1000.0, 10.0);
        let mut c = Capacity::new(spec, T0);
        for k in 1..=1012u64 {
            let t = (2.0 * k as f64 * 10.0 / 1000.0).sqrt();
            c.add(&result(t, Some(1.0)));
        }
        let stopped = QueryResult {
            sent_ns: 0,
            outcome: Outcome::Error(ErrorKind::Stopped),
            ..result(1.5, None)
        };
        c.add(&stopped);
        c.add(&result(-1.0, Some(1.0)));
        let r = c.report();
        assert_eq!(r.seconds.len(), 4);
        assert_eq!(r.seconds[1].offered_qps, 150.0);
        assert_eq!(r.outside, 1);
        assert_eq!(r.reached_qps, 350.0);
    }

    #[test]
    fn long_ramps_get_wider_bins_and_bad_specs_are_refused() {
        let spec = RampSpec::new(10.0, 7200.0);
        assert_eq!(spec.bin_s(), 2.0);
        assert_eq!(Capacity::new(spec, 0).bins.len(), MAX_BINS);
        for bad in [
            RampSpec::new(0.0, 1.0),
            RampSpec::new(f64::NAN, 1.0),
            RampSpec::new(1.0, 0.0),
            RampSpec::new(1.0, 1e6),
            RampSpec {
                max_loss_pct: 101.0,
                ..RampSpec::new(1.0, 1.0)
            },
            RampSpec {
                max_latency_ms: Some(0.0),
                ..RampSpec::new(1.0, 1.0)
            },
            RampSpec {
                latency_percentile: 0.0,
                ..RampSpec::new(1.0, 1.0)
            },
        ] {
            assert!(bad.validate().is_err(), "{bad:?}");
        }
        assert!(RampSpec::new(1.0, 1.0).validate().is_ok());
    }
}
