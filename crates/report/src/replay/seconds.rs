//! Per-second counters of a run: what the trace asked for, what was sent, how queries ended.
//!
//! Seconds are counted from the run's start, not from the wall clock's whole seconds: the
//! start its results file records (a shared `--start-at`), else the earliest time a query was
//! due, which is when the trace's first query was due. Two replays of one trace then share
//! their bins, whenever in a second each began, and their curves can be laid over each other.
//! Results come in the order they completed, so the first [`PENDING`] are held back to find the
//! earliest due time; a query due earlier still (more than [`PENDING`] results completed before
//! the trace's first one) is counted in the first second, and said ([`Seconds::before_start`]).
//!
//! One entry per second of the run, however many queries it holds: memory grows with the run's
//! length, not with its queries.

use ldplayer_dns::Rcode;
use ldplayer_results::{ErrorKind, Outcome, QueryResult};
use std::collections::BTreeMap;

const NS_PER_S: i64 = 1_000_000_000;

/// How a query ended, as the rcodes-over-time figure counts it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(crate) enum Ending {
    /// Answered with this response code.
    Rcode(Rcode),
    /// No answer within the timeout.
    Timeout,
    /// Failed.
    Error(ErrorKind),
}

impl Ending {
    /// Its name in a legend: the rcode's mnemonic, `timeout`, or the error kind's name.
    pub(crate) fn name(self) -> String {
        match self {
            Ending::Rcode(rc) => rc.to_string(),
            Ending::Timeout => "timeout".to_string(),
            Ending::Error(kind) => format!("error {}", kind.name()),
        }
    }
}

/// The counts of one second.
#[derive(Debug, Clone, Default)]
pub(crate) struct Second {
    /// Queries whose intended send time falls in it (the trace's rate mapped onto the run).
    pub(crate) intended: u64,
    /// Queries sent in it.
    pub(crate) sent: u64,
    /// Queries sent in it that opened a connection.
    pub(crate) opened: u64,
    /// Queries sent in it over a connection opened earlier.
    pub(crate) reused: u64,
    /// Answers received in it.
    pub(crate) answered: u64,
    /// Queries that ended in it (answers when received, the others when sent, or when they
    /// should have been), by how they ended; a short list, looked up linearly.
    pub(crate) endings: Vec<(Ending, u64)>,
}

/// Results held back, before the run's start is known, to find the earliest due time.
pub(crate) const PENDING: usize = 1 << 16;

/// Per-second counters over a run.
#[derive(Debug, Clone, Default)]
pub(crate) struct Seconds {
    by_second: BTreeMap<i64, Second>,
    /// The run's start (CLOCK_REALTIME ns), once known: second 0 begins there.
    start_ns: Option<i64>,
    /// Results held until the start is known.
    pending: Vec<QueryResult>,
    /// Results due before the start that was taken.
    before_start: u64,
}

impl Seconds {
    /// Counters whose seconds start at `start_ns` (the run's start, as its results file
    /// records it), or at the earliest due time of the results when `None`.
    pub(crate) fn starting_at(start_ns: Option<i64>) -> Seconds {
        Seconds {
            start_ns,
            ..Seconds::default()
        }
    }

    /// The second since the run's start of a time in ns (0 for a time before the start: a
    /// query sent a little early, at the very beginning).
    fn second_of(&self, ns: i64) -> i64 {
        let start = self.start_ns.unwrap_or(0);
        ns.saturating_sub(start).div_euclid(NS_PER_S).max(0)
    }

    fn at(&mut self, ns: i64) -> &mut Second {
        let second = self.second_of(ns);
        self.by_second.entry(second).or_default()
    }

    /// Counts one result (once the run's start is known; held back until then).
    pub(crate) fn add(&mut self, r: &QueryResult) {
        if self.start_ns.is_some() {
            self.count(r);
            return;
        }
        self.pending.push(*r);
        if self.pending.len() >= PENDING {
            self.settle();
        }
    }

    /// Takes the earliest due time of the results held back as the run's start, unless it is
    /// known, and counts them.
    fn settle(&mut self) {
        if self.start_ns.is_none() {
            self.start_ns = self.pending.iter().map(|r| r.intended_ns).min();
        }
        for r in std::mem::take(&mut self.pending) {
            self.count(&r);
        }
    }

    /// Counts what was held back: call once every result is in.
    pub(crate) fn finish(&mut self) {
        self.settle();
    }

    /// Results due before the run's start that was taken, counted in its first second.
    pub(crate) fn before_start(&self) -> u64 {
        self.before_start
    }

    fn count(&mut self, r: &QueryResult) {
        if self.start_ns.is_some_and(|start| r.intended_ns < start) {
            self.before_start += 1;
        }
        self.at(r.intended_ns).intended += 1;
        if r.sent_ns != 0 {
            let s = self.at(r.sent_ns);
            s.sent += 1;
            if r.new_connection {
                s.opened += 1;
            } else if r.proto.is_connection() {
                s.reused += 1;
            }
        }
        let (ending, at) = match r.outcome {
            Outcome::Answered => (Ending::Rcode(r.rcode), r.received_ns),
            Outcome::Timeout => (Ending::Timeout, r.sent_ns),
            Outcome::Error(kind) => (Ending::Error(kind), r.sent_ns),
        };
        let at = if at == 0 { r.intended_ns } else { at };
        let s = self.at(at);
        if r.outcome == Outcome::Answered {
            s.answered += 1;
        }
        match s.endings.iter_mut().find(|(e, _)| *e == ending) {
            Some((_, n)) => *n += 1,
            None => s.endings.push((ending, 1)),
        }
    }

    /// The first and last seconds with any count (from the run's start), if any.
    pub(crate) fn span(&self) -> Option<(i64, i64)> {
        let first = *self.by_second.keys().next()?;
        let last = *self.by_second.keys().next_back()?;
        Some((first, last))
    }

    /// Every second with a count, in order.
    pub(crate) fn iter(&self) -> impl Iterator<Item = (i64, &Second)> {
        self.by_second.iter().map(|(&s, c)| (s, c))
    }

    /// Every way queries ended, in order (rcodes by code, then timeouts, then errors).
    pub(crate) fn endings(&self) -> Vec<Ending> {
        let mut all: Vec<Ending> = self
            .by_second
            .values()
            .flat_map(|s| s.endings.iter().map(|e| e.0))
            .collect();
        all.sort_unstable();
        all.dedup();
        all
    }
}

/// Most points a time series keeps; longer runs are drawn as means over bins of several seconds.
pub(crate) const MAX_TIME_POINTS: usize = 600;

/// A per-second count over a run, summarised and downsampled for a figure.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct TimeSeries {
    /// (seconds since the run's start, mean count per second over the bin starting there), one
    /// point per bin, bins of [`bin`](Self::bin) seconds.
    pub(crate) points: Vec<(f64, f64)>,
    /// The bin's width in seconds (1 unless the run is longer than [`MAX_TIME_POINTS`] s).
    pub(crate) bin: u64,
    /// Sum over the run.
    pub(crate) total: u64,
    /// Smallest count of one second of the run (seconds without any count included).
    pub(crate) min: u64,
    /// Largest count of one second.
    pub(crate) max: u64,
    /// Seconds of the run.
    pub(crate) seconds: u64,
}

impl TimeSeries {
    /// Mean count per second.
    pub(crate) fn mean(&self) -> f64 {
        if self.seconds == 0 {
            0.0
        } else {
            self.total as f64 / self.seconds as f64
        }
    }
}

impl Seconds {
    /// The per-second values `value` gives, over the whole run (every second from the first
    /// to the last with any count, missing ones as 0).
    pub(crate) fn series(&self, value: impl Fn(&Second) -> u64) -> TimeSeries {
        let Some((first, last)) = self.span() else {
            return TimeSeries {
                points: Vec::new(),
                bin: 1,
                total: 0,
                min: 0,
                max: 0,
                seconds: 0,
            };
        };
        let seconds = (last - first) as u64 + 1;
        let bin = seconds.div_ceil(MAX_TIME_POINTS as u64).max(1);
        let bins = seconds.div_ceil(bin) as usize;
        let mut sums = vec![0u64; bins];
        let (mut total, mut max, mut min) = (0u64, 0u64, u64::MAX);
        let mut present = 0u64;
        for (s, counts) in self.iter() {
            let v = value(counts);
            sums[((s - first) as u64 / bin) as usize] += v;
            total += v;
            max = max.max(v);
            min = min.min(v);
            present += 1;
        }
        if present < seconds {
            min = 0;
        }
        let points = sums
            .iter()
            .enumerate()
            .map(|(i, &sum)| {
                let start = i as u64 * bin;
                let width = bin.min(seconds - start);
                ((first + start as i64) as f64, sum as f64 / width as f64)
            })
            .collect();
        TimeSeries {
            points,
            bin,
            total,
            min,
            max,
            seconds,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ldplayer_trace::Proto;

    fn result(intended_s: f64, sent: bool) -> QueryResult {
        let intended_ns = (intended_s * 1e9) as i64;
        QueryResult {
            index: 0,
            trace_ns: intended_ns,
            intended_ns,
            sent_ns: if sent { intended_ns + 1000 } else { 0 },
            received_ns: if sent { intended_ns + 500_000 } else { 0 },
            proto: Proto::Udp,
            new_connection: false,
            handshake_ns: 0,
            rcode: Rcode::NOERROR,
            response_len: 50,
            truncated: false,
            outcome: if sent {
                Outcome::Answered
            } else {
                Outcome::Error(ErrorKind::Send)
            },
            target: 0,
        }
    }

    #[test]
    fn a_long_run_is_binned_and_its_totals_kept() {
        let mut s = Seconds::default();
        for i in 0..1500 {
            s.add(&result(1000.0 + i as f64 + 0.5, i % 3 != 0));
        }
        s.finish();
        let intended = s.series(|c| c.intended);
        assert_eq!(intended.seconds, 1500);
        assert_eq!(intended.bin, 3);
        assert_eq!(intended.points.len(), 500);
        assert_eq!(intended.total, 1500);
        assert_eq!((intended.min, intended.max), (1, 1));
        assert!(intended.points.iter().all(|p| p.1 == 1.0));
        let sent = s.series(|c| c.sent);
        assert_eq!(sent.total, 1000);
        assert_eq!(sent.min, 0);
        let endings = s.endings();
        assert_eq!(
            endings,
            vec![
                Ending::Rcode(Rcode::NOERROR),
                Ending::Error(ErrorKind::Send)
            ]
        );
    }

    #[test]
    fn seconds_start_at_the_run_s_start_whatever_its_wall_clock_phase() {
        // The same 30 queries (10, then 20, in two seconds of the trace), the run begun at
        // 0.1 s and at 0.7 s past a whole second.
        let counts = |phase: f64| {
            let mut s = Seconds::default();
            for i in 0..30 {
                let at = if i < 10 {
                    i as f64 * 0.1
                } else {
                    1.0 + (i - 10) as f64 * 0.05
                };
                s.add(&result(1000.0 + phase + at, true));
            }
            s.finish();
            s.series(|c| c.intended).points
        };
        assert_eq!(counts(0.1), [(0.0, 10.0), (1.0, 20.0)]);
        assert_eq!(counts(0.7), counts(0.1));
    }

    #[test]
    fn a_recorded_start_is_kept_and_queries_due_before_it_are_said() {
        let mut s = Seconds::starting_at(Some(1_000_500_000_000));
        s.add(&result(1000.2, true));
        s.add(&result(1000.6, true));
        s.add(&result(1001.7, true));
        s.finish();
        assert_eq!(s.before_start(), 1);
        assert_eq!(s.series(|c| c.intended).points, [(0.0, 2.0), (1.0, 1.0)]);
    }
}
