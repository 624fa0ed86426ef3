//! Gaps between consecutive queries in trace order, in the trace and as replayed (the LDplayer
//! paper's Figure 7), from results that arrive in completion order.
//!
//! Results pass through a bounded window kept sorted by trace index (results arrive nearly in
//! order, so most are appended and the others inserted close to the end): once it holds
//! [`REORDER_WINDOW`] results, the one with the smallest index leaves it and is compared with
//! the one that left before. A result whose index is below one that already left arrived too
//! late to be put in order (a query that waited for a long timeout, typically): it is counted
//! and left out. Memory is the window, whatever the number of queries.

use super::distribution::Distribution;
use std::collections::VecDeque;

/// Results held to put them back in trace order.
pub(crate) const REORDER_WINDOW: usize = 1 << 16;

/// How far from the end of the window an insertion looks before a binary search.
const NEAR: usize = 16;

/// Longest gap told apart (1 hour, in ns); longer ones count as 1 hour.
const MAX_GAP_NS: u64 = 3_600 * 1_000_000_000;

/// One sent query: its trace index, trace time and send time.
type Sent = (u64, i64, i64);

/// Inter-arrival gaps of the trace and of the replay, in trace order.
#[derive(Debug, Clone)]
pub(crate) struct Interarrival {
    window: usize,
    /// Sorted by index.
    held: VecDeque<Sent>,
    last: Option<Sent>,
    /// Gaps between consecutive trace times, ns.
    pub(crate) original: Distribution,
    /// Gaps between consecutive send times, ns (negative ones as 0).
    pub(crate) replayed: Distribution,
    /// Results that arrived after a result of a later index had left the window.
    pub(crate) too_late: u64,
    /// Trace gaps that were negative (a trace not in time order), counted as 0.
    pub(crate) negative_original: u64,
    /// Replayed gaps that were negative (queries sent out of trace order), counted as 0.
    pub(crate) negative_replayed: u64,
}

impl Interarrival {
    /// Puts results back in order within a window of `window` results.
    pub(crate) fn new(window: usize) -> Interarrival {
        Interarrival {
            window: window.max(1),
            held: VecDeque::new(),
            last: None,
            original: Distribution::new(MAX_GAP_NS),
            replayed: Distribution::new(MAX_GAP_NS),
            too_late: 0,
            negative_original: 0,
            negative_replayed: 0,
        }
    }

    /// Takes a sent query (its index, trace time and send time).
    pub(crate) fn add(&mut self, index: u64, trace_ns: i64, sent_ns: i64) {
        if self.last.is_some_and(|l| index < l.0) {
            self.too_late += 1;
            return;
        }
        let sent = (index, trace_ns, sent_ns);
        if self.held.back().is_none_or(|last| last.0 <= index) {
            self.held.push_back(sent);
        } else {
            // Most results are only a few places late: look there before searching it all.
            let len = self.held.len();
            let at = (1..=len.min(NEAR))
                .find(|&k| self.held[len - k].0 <= index)
                .map(|k| len - k + 1)
                .unwrap_or_else(|| self.held.partition_point(|held| held.0 <= index));
            self.held.insert(at, sent);
        }
        if self.held.len() > self.window {
            if let Some(next) = self.held.pop_front() {
                self.emit(next);
            }
        }
    }

    /// Takes the queries still held, in order.
    pub(crate) fn finish(&mut self) {
        while let Some(next) = self.held.pop_front() {
            self.emit(next);
        }
    }

    fn emit(&mut self, next: Sent) {
        if let Some((_, trace, sent)) = self.last {
            let original = next.1 - trace;
            let replayed = next.2 - sent;
            self.negative_original += (original < 0) as u64;
            self.negative_replayed += (replayed < 0) as u64;
            self.original.record(original.max(0) as u64);
            self.replayed.record(replayed.max(0) as u64);
        }
        self.last = Some(next);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        /// Results displaced by less than the window give the gaps of the sorted results.
        #[test]
        fn a_window_wider_than_the_disorder_restores_trace_order(
            queries in prop::collection::vec((0i64..5_000_000, 0i64..5_000_000, 0u64..8), 2..300)
        ) {
            let mut trace_ns = 0;
            let mut sorted = Vec::new();
            let mut arrivals = Vec::new();
            for (i, &(gap, sent, delay)) in queries.iter().enumerate() {
                trace_ns += gap;
                sorted.push((i as u64 * 3, trace_ns, sent));
                arrivals.push((i as u64 + delay, i as u64 * 3, trace_ns, sent));
            }
            arrivals.sort();
            let mut ia = Interarrival::new(8);
            for &(_, index, trace, sent) in &arrivals {
                ia.add(index, trace, sent);
            }
            ia.finish();
            let mut original = Distribution::new(MAX_GAP_NS);
            let mut replayed = Distribution::new(MAX_GAP_NS);
            for w in sorted.windows(2) {
                original.record((w[1].1 - w[0].1) as u64);
                replayed.record((w[1].2 - w[0].2).max(0) as u64);
            }
            prop_assert_eq!(ia.too_late, 0);
            prop_assert_eq!(ia.original.buckets(1.0), original.buckets(1.0));
            prop_assert_eq!(ia.replayed.buckets(1.0), replayed.buckets(1.0));
        }
    }

    #[test]
    fn gaps_follow_trace_order_within_the_window_and_late_ones_are_counted() {
        let mut ia = Interarrival::new(4);
        // Trace every 1000 ns, sent 10 ns late; arriving out of order within the window.
        let q = |i: u64| (i, i as i64 * 1000, i as i64 * 1000 + 10);
        for i in [1, 0, 3, 2, 5, 4, 6, 7, 8, 9] {
            let (a, b, c) = q(i);
            ia.add(a, b, c);
        }
        // 0 and 1 have left the window: index 1 comes again too late.
        ia.add(1, 1000, 1010);
        ia.finish();
        assert_eq!(ia.too_late, 1);
        assert_eq!(ia.original.len(), 9);
        assert_eq!(ia.original.buckets(1.0), vec![(1000.0, 9)]);
        assert_eq!(ia.replayed.buckets(1.0), vec![(1000.0, 9)]);
        assert_eq!(ia.negative_replayed, 0);
    }
}
