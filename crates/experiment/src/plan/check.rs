//! Range checks of single values, shared by the sections and `[vary]`: each returns the value
//! or a sentence saying what it must be.
//!
//! Every number a plan gives is bounded here, so that what `--check` accepts runs as written:
//! each bound is one the value can be carried to the replay, the link and the server with (a
//! duration, a count of milliseconds, a rate in bit/s, a number of threads), and one that keeps
//! memory bounded (a delay holds packets, a queue holds bytes, a plan holds its runs).

use std::ops::RangeInclusive;

/// Longest timeout, in seconds (a day): an answer's, and an idle connection's on either side.
/// Every server kind takes it (Unbound's `tcp-idle-timeout` is an `int` of milliseconds, 24.8
/// days at most; BIND's is 120 s at most, checked with the kind).
pub const MAX_TIMEOUT_S: f64 = 86_400.0;

/// Longest warm-up, cool-down and synthetic trace, in seconds (a week).
pub const MAX_RUN_S: f64 = 604_800.0;

/// Largest delay the link adds, in ms (a minute): `rtt_ms`, `jitter_ms` and per-client round
/// trips. The link holds every packet for its delay.
pub const MAX_DELAY_MS: f64 = 60_000.0;

/// Longest the link's threads poll before a departure, in µs (a second).
pub const MAX_SPIN_US: f64 = 1_000_000.0;

/// Rate limits, in Mbit/s: from 1 kbit/s to 100 Gbit/s.
pub const BANDWIDTH_MBPS: RangeInclusive<f64> = 0.001..=100_000.0;

/// Rate limiter queues, in KiB: from 1 KiB to 1 GiB (the link holds that much per direction).
pub const QUEUE_KB: RangeInclusive<f64> = 1.0..=1_048_576.0;

/// Time and rate factors (`time_scale`, `rate_scale`): from a thousandth to a thousand.
pub const SCALE: RangeInclusive<f64> = 0.001..=1_000.0;

/// Synthetic trace rates, in queries per second: from one every 1000 s to a million per
/// second (the fixed workload's interval is then a whole number of µs at least).
pub const SYNTH_RATE: RangeInclusive<f64> = 0.001..=1_000_000.0;

/// Server threads and replay queriers: the replay's own bound on its queriers.
pub const MAX_THREADS: usize = 1024;

/// Open UDP sockets per querier: the most file descriptors a Linux process may have by
/// default (`fs.nr_open`).
pub const MAX_UDP_SOCKETS: usize = 1_048_576;

/// Runs of one plan (combinations × repeats): each is listed, checked and kept in memory.
pub const MAX_RUNS: usize = 10_000;

/// Second-level zones of a synthetic hierarchy (TLDs × `slds`): each is a file loaded by the
/// server.
pub const MAX_SLDS: usize = 1_000_000;

/// A ramp's final rate, in queries per second: as a synthetic trace's rates.
pub(super) fn ramp_qps(x: f64) -> Result<f64, String> {
    within(x, SYNTH_RATE, " queries/s")
}

/// A ramp's length, in seconds: above 0, up to a day (the replay's bound).
pub(super) fn ramp_s(x: f64) -> Result<f64, String> {
    if x > 0.0 {
        within(x, 0.0..=MAX_TIMEOUT_S, " s (a day)")
    } else {
        Err(format!(
            "{x} s: a ramp lasts more than 0 s, up to 86400 s (a day)"
        ))
    }
}

/// A percentage: a number in [0, 100].
pub(super) fn percent(x: f64) -> Result<f64, String> {
    within(x, 0.0..=100.0, "%")
}

/// A latency bound in ms: above 0, up to a day.
pub(super) fn latency_ms(x: f64) -> Result<f64, String> {
    if x > 0.0 {
        within(x, 0.0..=MAX_TIMEOUT_S * 1e3, " ms (a day)")
    } else {
        Err(format!("{x} ms: a latency bound is above 0 ms"))
    }
}

/// A share: a number in [0, 1].
pub(super) fn share(x: f64) -> Result<f64, String> {
    if (0.0..=1.0).contains(&x) {
        Ok(x)
    } else {
        Err(format!("{x} is not a share: it must lie between 0 and 1"))
    }
}

/// A loss probability: a number in [0, 1).
pub(super) fn loss(x: f64) -> Result<f64, String> {
    if (0.0..1.0).contains(&x) {
        Ok(x)
    } else {
        Err(format!(
            "{x} is no loss probability: it must be at least 0 and below 1"
        ))
    }
}

/// A finite number at least 0 (a shape, with no unit).
pub(super) fn non_negative(x: f64) -> Result<f64, String> {
    if x.is_finite() && x >= 0.0 {
        Ok(x)
    } else {
        Err(format!("{x}: must be a finite number, at least 0"))
    }
}

/// A mean burst length in packets: at least 1.
pub(super) fn burst_len(x: f64) -> Result<f64, String> {
    if x.is_finite() && x >= 1.0 {
        Ok(x)
    } else {
        Err(format!("{x}: a mean burst length is at least 1 packet"))
    }
}

/// A count of at least 1 (repeats, queries).
pub(super) fn at_least_one<T: PartialOrd + From<u8> + std::fmt::Display>(
    x: T,
) -> Result<T, String> {
    if x >= T::from(1) {
        Ok(x)
    } else {
        Err(format!("{x}: must be at least 1"))
    }
}

/// A number in `range`, `unit` after the bounds (`" s (a day)"`).
fn within(x: f64, range: RangeInclusive<f64>, unit: &str) -> Result<f64, String> {
    if x.is_finite() && range.contains(&x) {
        Ok(x)
    } else {
        Err(format!(
            "{x} is out of range: from {} to {}{unit}",
            range.start(),
            range.end()
        ))
    }
}

/// Whether seconds `x` are a whole number of `unit` seconds (up to the rounding of decimals).
pub(super) fn whole(x: f64, unit: f64) -> bool {
    let n = x / unit;
    (n - n.round()).abs() < 1e-6
}

/// A number of seconds carried in milliseconds (to the replay and the server's side): whole
/// milliseconds.
fn whole_ms(x: f64) -> Result<f64, String> {
    if whole(x, 1e-3) {
        Ok(x)
    } else {
        Err(format!(
            "{x} s is not a whole number of milliseconds: timeouts go to the replay and the \
             servers in milliseconds"
        ))
    }
}

/// An idle timeout in seconds, on either side: 0 to a day, whole milliseconds.
pub(super) fn idle_timeout_s(x: f64) -> Result<f64, String> {
    within(x, 0.0..=MAX_TIMEOUT_S, " s (a day)").and_then(whole_ms)
}

/// The time to wait for an answer, in seconds: a millisecond to a day, whole milliseconds.
pub(super) fn timeout_s(x: f64) -> Result<f64, String> {
    within(x, 0.001..=MAX_TIMEOUT_S, " s (a day)").and_then(whole_ms)
}

/// A warm-up or a cool-down, in seconds: 0 to a week.
pub(super) fn run_s(x: f64) -> Result<f64, String> {
    within(x, 0.0..=MAX_RUN_S, " s (a week)")
}

/// A synthetic trace's length, in seconds: above 0, a week at most.
pub(super) fn trace_s(x: f64) -> Result<f64, String> {
    if x > 0.0 {
        within(x, 0.0..=MAX_RUN_S, " s (a week)")
    } else {
        Err(format!("{x}: a trace lasts more than 0 s"))
    }
}

/// A delay the link adds, in ms: 0 to a minute.
pub(super) fn delay_ms(x: f64) -> Result<f64, String> {
    within(x, 0.0..=MAX_DELAY_MS, " ms (a minute)")
}

/// How long the link polls before a departure, in µs: 0 to a second.
pub(super) fn spin_us(x: f64) -> Result<f64, String> {
    within(x, 0.0..=MAX_SPIN_US, " µs (a second)")
}

/// A rate limit in Mbit/s.
pub(super) fn bandwidth_mbps(x: f64) -> Result<f64, String> {
    within(x, BANDWIDTH_MBPS, " Mbit/s")
}

/// A rate limiter's queue in KiB.
pub(super) fn queue_kb(x: f64) -> Result<f64, String> {
    within(x, QUEUE_KB, " KiB (1 GiB)")
}

/// A time or rate factor.
pub(super) fn scale(x: f64) -> Result<f64, String> {
    within(x, SCALE, "")
}

/// A synthetic trace's rate in queries per second.
pub(super) fn synth_rate(x: f64) -> Result<f64, String> {
    within(x, SYNTH_RATE, " queries/s")
}

/// A number of threads (the server's, the replay's queriers): 1 to [`MAX_THREADS`].
pub(super) fn threads<T: Copy + TryInto<u64> + std::fmt::Display>(x: T) -> Result<T, String> {
    if x.try_into()
        .is_ok_and(|n| (1..=MAX_THREADS as u64).contains(&n))
    {
        Ok(x)
    } else {
        Err(format!("{x} is out of range: from 1 to {MAX_THREADS}"))
    }
}

/// Open UDP sockets per querier: 1 to [`MAX_UDP_SOCKETS`].
pub(super) fn udp_sockets(x: usize) -> Result<usize, String> {
    if (1..=MAX_UDP_SOCKETS).contains(&x) {
        Ok(x)
    } else {
        Err(format!(
            "{x} is out of range: from 1 to {MAX_UDP_SOCKETS} (the file descriptors a process \
             may have)"
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bounds_are_in_the_messages_and_values_at_them_pass() {
        assert_eq!(idle_timeout_s(86_400.0), Ok(86_400.0));
        assert_eq!(idle_timeout_s(0.0), Ok(0.0));
        assert_eq!(
            idle_timeout_s(1e10).unwrap_err(),
            "10000000000 is out of range: from 0 to 86400 s (a day)"
        );
        assert!(idle_timeout_s(1e30).is_err() && idle_timeout_s(f64::INFINITY).is_err());
        assert!(idle_timeout_s(0.0005)
            .unwrap_err()
            .contains("whole number of milliseconds"));
        assert_eq!(idle_timeout_s(1.001), Ok(1.001));
        assert_eq!(timeout_s(0.001), Ok(0.001));
        assert!(timeout_s(1e300)
            .unwrap_err()
            .contains("from 0.001 to 86400 s"));
        assert!(timeout_s(0.0).is_err());
        assert!(trace_s(0.0).is_err() && trace_s(MAX_RUN_S).is_ok());
        assert!(delay_ms(60_000.0).is_ok() && delay_ms(60_000.5).is_err());
        assert!(queue_kb(1.0).is_ok() && queue_kb(0.5).is_err());
        assert_eq!(threads(1024u32), Ok(1024));
        assert_eq!(
            threads(1025u32).unwrap_err(),
            "1025 is out of range: from 1 to 1024"
        );
        assert!(threads(0usize).is_err());
        assert!(udp_sockets(MAX_UDP_SOCKETS).is_ok() && udp_sockets(0).is_err());
        assert!(whole(40.0, 1.0) && !whole(40.5, 1.0) && whole(0.3, 0.1));
    }
}
