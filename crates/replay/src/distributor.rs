//! The reader side: which querier gets which client, when each query is due, and the batches
//! that carry queries to the queriers.

use crate::config::Timing;
use ldplayer_trace::Proto;
use rustc_hash::FxHashMap;
use std::net::IpAddr;

/// One query on its way to a querier; its message is `bytes[off..off + len]` of its batch.
#[derive(Debug, Clone, Copy)]
pub(crate) struct QueryMeta {
    pub index: u64,
    pub trace_ns: i64,
    /// Realtime ns when it is due; 0 for the closed loop (`Timing::Fast`).
    pub intended_ns: i64,
    /// Global client number (order of first appearance of the source address).
    pub client: u32,
    /// The original source address (the trace's client), for replays that keep it.
    pub src: IpAddr,
    pub proto: Proto,
    pub off: u32,
    pub len: u32,
}

/// Queries for one querier, their messages packed in one buffer (one allocation per batch, not
/// per query).
#[derive(Debug, Default)]
pub(crate) struct Batch {
    pub queries: Vec<QueryMeta>,
    pub bytes: Vec<u8>,
}

impl Batch {
    pub fn wire(&self, q: &QueryMeta) -> &[u8] {
        self.bytes
            .get(q.off as usize..(q.off as usize + q.len as usize))
            .unwrap_or(&[])
    }
}

/// Assigns each original source address a client number (in order of first appearance) and a
/// querier (a stable hash of the address, so a client's queries always go to the same querier and
/// keep their order). A future controller can use the same component to spread clients over
/// agents on several hosts.
#[derive(Debug)]
pub struct Distributor {
    queriers: usize,
    clients: FxHashMap<IpAddr, (u32, usize)>,
}

impl Distributor {
    /// A distributor over `queriers` queriers (at least one).
    pub fn new(queriers: usize) -> Distributor {
        Distributor {
            queriers: queriers.max(1),
            clients: FxHashMap::default(),
        }
    }

    /// The client number and querier of source address `src`.
    pub fn assign(&mut self, src: IpAddr) -> (u32, usize) {
        let next = self.clients.len() as u32;
        let queriers = self.queriers;
        *self
            .clients
            .entry(src)
            .or_insert_with(|| (next, (stable_hash(src) % queriers as u64) as usize))
    }

    /// Number of distinct clients seen.
    pub fn clients(&self) -> usize {
        self.clients.len()
    }
}

pub use ldplayer_trace::stable_hash;

/// When each query is due, on the shared realtime clock.
///
/// The due time depends only on the timing, the start, the trace origin and the query (its
/// trace time, or its position for rate and ramp timing), so schedules built with the same four
/// in several processes agree query by query.
#[derive(Debug, Clone)]
pub struct Schedule {
    timing: Timing,
    t0_ns: i64,
    trace_t0: Option<i64>,
    n: u64,
}

impl Schedule {
    /// A schedule starting at realtime `t0_ns`, whose trace origin is the first query's time.
    pub fn new(timing: Timing, t0_ns: i64) -> Schedule {
        Schedule {
            timing,
            t0_ns,
            trace_t0: None,
            n: 0,
        }
    }

    /// The same schedule with trace time `origin_ns` mapped to the start instead of the first
    /// query's time (original timing only).
    pub fn with_trace_origin(mut self, origin_ns: i64) -> Schedule {
        self.trace_t0 = Some(origin_ns);
        self
    }

    /// The replay's start (realtime ns).
    pub fn t0_ns(&self) -> i64 {
        self.t0_ns
    }

    /// The trace time mapped to the start, once known (original timing: given, or the first
    /// query's).
    pub fn trace_origin_ns(&self) -> Option<i64> {
        self.trace_t0
    }

    /// The due time of the next query, captured at `trace_ns`; 0 means "as soon as possible".
    /// Original timing never schedules a query before the start, even if the trace goes back in
    /// time or the query precedes the trace origin.
    pub fn next(&mut self, trace_ns: i64) -> i64 {
        let n = self.n;
        self.n += 1;
        match self.timing {
            Timing::Original { speed } => {
                let t0 = *self.trace_t0.get_or_insert(trace_ns);
                let offset = (trace_ns.saturating_sub(t0)).max(0) as f64 / speed;
                self.t0_ns.saturating_add(offset as i64)
            }
            Timing::Rate { qps } => self.t0_ns.saturating_add((n as f64 * 1e9 / qps) as i64),
            Timing::Fast { .. } => 0,
            Timing::Ramp { to_qps, ramp_s } => self
                .t0_ns
                .saturating_add((ramp_offset_s(n + 1, to_qps, ramp_s) * 1e9) as i64),
        }
    }

    /// How many queries a ramp sends: ⌊to_qps · ramp_s / 2⌋, the integral of its rate over its
    /// length (the k-th query is due when the integral reaches k). `None` for other timings.
    pub fn ramp_queries(&self) -> Option<u64> {
        match self.timing {
            Timing::Ramp { to_qps, ramp_s } => Some(ramp_queries(to_qps, ramp_s)),
            _ => None,
        }
    }

    /// How many queries were given a due time so far.
    pub fn scheduled(&self) -> u64 {
        self.n
    }

    /// Whether the query last given a due time by [`next`](Self::next) lies past the end of a
    /// ramp: it and every later one are not to be sent. Always false for other timings.
    pub fn past_ramp(&self) -> bool {
        self.ramp_queries().is_some_and(|last| self.n > last)
    }
}

/// The number of queries of a ramp to `to_qps` over `ramp_s` seconds.
pub fn ramp_queries(to_qps: f64, ramp_s: f64) -> u64 {
    (to_qps * ramp_s / 2.0).floor().max(0.0) as u64
}

/// When the `k`-th query of a ramp (from 1) is due, in seconds after its start: where the
/// integral of the rate `to_qps · t / ramp_s` reaches `k`, `sqrt(2 · k · ramp_s / to_qps)`
/// (resperf's `num_scheduled`, solved for the time).
pub fn ramp_offset_s(k: u64, to_qps: f64, ramp_s: f64) -> f64 {
    (2.0 * k as f64 * ramp_s / to_qps).sqrt()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clients_are_numbered_in_order_and_stay_on_one_querier() {
        let mut d = Distributor::new(4);
        let a: IpAddr = "10.0.0.1".parse().unwrap();
        let b: IpAddr = "10.0.0.2".parse().unwrap();
        let (ca, qa) = d.assign(a);
        let (cb, _) = d.assign(b);
        assert_eq!((ca, cb), (0, 1));
        assert_eq!(d.assign(a), (0, qa));
        assert_eq!(d.clients(), 2);
    }

    #[test]
    fn hash_spreads_clients() {
        let mut counts = [0u32; 4];
        for i in 0..4000u32 {
            let a = IpAddr::V4(std::net::Ipv4Addr::from(0x0a00_0000 + i));
            counts[(stable_hash(a) % 4) as usize] += 1;
        }
        assert!(counts.iter().all(|&c| c > 800), "{counts:?}");
    }

    #[test]
    fn schedules() {
        let mut s = Schedule::new(Timing::Original { speed: 2.0 }, 1_000);
        assert_eq!(s.next(5_000), 1_000);
        assert_eq!(s.next(7_000), 2_000);
        assert_eq!(s.next(4_000), 1_000);
        let mut r = Schedule::new(Timing::Rate { qps: 1e9 }, 10);
        assert_eq!((r.next(99), r.next(0), r.next(0)), (10, 11, 12));
        let mut f = Schedule::new(Timing::Fast { max_in_flight: 1 }, 10);
        assert_eq!(f.next(5), 0);
    }

    #[test]
    fn a_ramp_follows_resperf() {
        // To 1000 q/s over 10 s: 5000 queries, the k-th due at sqrt(2k·10/1000) s.
        let timing = Timing::Ramp {
            to_qps: 1000.0,
            ramp_s: 10.0,
        };
        let mut r = Schedule::new(timing, 0);
        assert_eq!(r.ramp_queries(), Some(5000));
        let due: Vec<i64> = (0..5001).map(|_| r.next(123)).collect();
        // The first query at sqrt(0.02) s, the 50th at 1 s (the integral of 100·t over 1 s
        // is 50), the 5000th at the end, 10 s; the 5001st is past it.
        assert_eq!(due[0], (0.02f64.sqrt() * 1e9) as i64);
        assert_eq!(due[49], 1_000_000_000);
        assert_eq!(due[4999], 10_000_000_000);
        assert!(r.past_ramp());
        // Each second i holds about 1000·(i + 0.5)/10 queries: the rate rises linearly.
        for i in 0..10 {
            let lo = i * 1_000_000_000;
            let n = due
                .iter()
                .filter(|&&d| d > lo && d <= lo + 1_000_000_000)
                .count();
            assert_eq!(n, 100 * i as usize + 50, "second {i}");
        }
        // Other timings are never past a ramp.
        let mut rate = Schedule::new(Timing::Rate { qps: 10.0 }, 0);
        rate.next(0);
        assert!(!rate.past_ramp() && rate.ramp_queries().is_none());
    }

    proptest::proptest! {
        /// Whatever the ramp, the due times rise, and by any time t after the start exactly
        /// ⌊R·t²/(2T)⌋ queries are due (the integral of the rate, to the nanosecond's
        /// rounding), up to the ramp's ⌊R·T/2⌋ queries.
        #[test]
        fn ramp_due_times_follow_the_integral_of_the_rate(
            to_qps in 1.0f64..200_000.0,
            ramp_s in 0.5f64..600.0,
            probes in proptest::collection::vec(0.0f64..1.0, 1..20),
        ) {
            let timing = Timing::Ramp { to_qps, ramp_s };
            let t0 = 1_700_000_000_000_000_000i64;
            let mut s = Schedule::new(timing, t0);
            let total = s.ramp_queries().unwrap();
            proptest::prop_assert_eq!(total, (to_qps * ramp_s / 2.0).floor() as u64);
            // The due time of query k (from 1) and of its neighbours, without walking them all.
            let due = |k: u64| t0 + (ramp_offset_s(k, to_qps, ramp_s) * 1e9) as i64;
            for p in probes {
                let t = p * ramp_s;
                let expected = (to_qps * t * t / (2.0 * ramp_s)).floor() as u64;
                let at = t0 + (t * 1e9) as i64;
                // Query `expected` is due by then, query `expected + 1` after, to within the
                // rounding of f64 and of whole nanoseconds.
                if expected >= 1 {
                    proptest::prop_assert!(due(expected) <= at + 1, "{} > {}", due(expected), at);
                }
                if expected < total {
                    proptest::prop_assert!(due(expected + 1) >= at - 1);
                }
                proptest::prop_assert!(due(expected) <= due(expected + 1));
            }
            // The schedule itself gives those times, in order, and ends after the last.
            let n = total.min(2000);
            let mut last = t0;
            for k in 1..=n {
                let d = s.next(0);
                proptest::prop_assert_eq!(d, due(k));
                proptest::prop_assert!(d >= last);
                last = d;
            }
            proptest::prop_assert!(!s.past_ramp());
            proptest::prop_assert!(due(total) <= t0 + (ramp_s * 1e9) as i64 + 1);
        }
    }

    #[test]
    fn a_shared_start_and_origin_give_every_query_the_same_due_time() {
        let timing = Timing::Original { speed: 2.0 };
        let start = 1_700_000_000_000_000_000;
        let origin = 10_000;
        // Two processes see different parts of the trace: their first queries differ, yet a
        // query present in both is due at the same instant.
        let mut a = Schedule::new(timing, start).with_trace_origin(origin);
        let mut b = Schedule::new(timing, start).with_trace_origin(origin);
        assert_eq!(a.next(12_000), start + 1_000);
        assert_eq!(a.next(20_000), start + 5_000);
        assert_eq!(b.next(20_000), start + 5_000);
        assert_eq!(b.next(30_000), start + 10_000);
        // Without the shared origin, each would start at its own first query.
        let mut c = Schedule::new(timing, start);
        assert_eq!(c.next(20_000), start);
        assert_eq!(c.trace_origin_ns(), Some(20_000));
        // Queries before the origin are due at the start, never before it.
        assert_eq!(a.next(4_000), start);
    }
}
