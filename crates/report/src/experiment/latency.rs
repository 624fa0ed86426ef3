//! A run's latency distribution, streamed from its results file into an HdrHistogram (memory
//! flat in the number of queries), and its CCDF thinned for plotting.

use std::path::Path;

use hdrhistogram::Histogram;
use ldplayer_results::{Damage, ResultsError, ResultsReader};
use ldplayer_study::{client_latency_ns, measured_at_s};

/// Longest latency recorded exactly: an hour, in ns; longer ones count as an hour.
const MAX_NS: u64 = 3_600_000_000_000;
/// Significant digits kept: 0.1% of each value.
const SIGFIG: u8 = 3;

/// The window of a run's queries that `summary.csv` counts: due after warm-up and up to the
/// trace's end, placed against the replay's start.
#[derive(Debug, Clone, Copy)]
pub(super) struct Window {
    /// The replay's start, CLOCK_REALTIME ns.
    pub start_ns: i64,
    /// Seconds left out at the start.
    pub warmup_s: f64,
    /// The trace's length in seconds.
    pub duration_s: f64,
}

/// The latencies (ns, as a client saw them, connection set-up included for the query that
/// opened it) of the answered queries in `window`, and what the reader skipped.
pub(super) fn read_latency(
    path: &Path,
    window: Window,
) -> Result<(Histogram<u64>, Damage), ResultsError> {
    let mut hist = Histogram::new_with_bounds(1, MAX_NS, SIGFIG).expect("valid bounds");
    let mut reader = ResultsReader::open(path)?;
    for r in reader.by_ref() {
        let r = r?;
        if measured_at_s(&r, window.start_ns, window.warmup_s, window.duration_s).is_none() {
            continue;
        }
        if let Some(ns) = client_latency_ns(&r) {
            hist.saturating_record((ns.max(1) as u64).min(MAX_NS));
        }
    }
    Ok((hist, reader.damage()))
}

/// The empirical CCDF of `hist`: points (latency in ms, share of answers slower than it), from
/// (fastest, 1) on, thinned to at most about `max_points` for a log–log plot. The share 0 of
/// the slowest value is left out: a log axis cannot show it.
pub(super) fn ccdf_ms(hist: &Histogram<u64>, max_points: usize) -> Vec<(f64, f64)> {
    let total = hist.len();
    if total == 0 {
        return Vec::new();
    }
    let mut full = Vec::new();
    let mut seen = 0u64;
    for v in hist.iter_recorded() {
        let ms = hist.median_equivalent(v.value_iterated_to()) as f64 / 1e6;
        if full.is_empty() {
            full.push((ms, 1.0));
        }
        seen += v.count_at_value();
        let above = total - seen;
        if above > 0 {
            full.push((ms, above as f64 / total as f64));
        }
    }
    thin_log_log(&full, max_points)
}

/// One point per distinct value of `hist`: (latency in ms, share of answers at least as slow),
/// for a distribution of few values drawn as points.
pub(super) fn at_least_ms(hist: &Histogram<u64>) -> Vec<(f64, f64)> {
    let total = hist.len();
    let mut seen = 0u64;
    let mut points = Vec::new();
    for v in hist.iter_recorded() {
        let ms = hist.median_equivalent(v.value_iterated_to()) as f64 / 1e6;
        points.push((ms, (total - seen) as f64 / total as f64));
        seen += v.count_at_value();
    }
    points
}

/// At most about `max_points` of a monotone curve on log–log axes: a grid of half as many cells
/// each way, and a point kept when the curve enters a new cell (a monotone curve crosses at most
/// as many cells as the grid's width plus its height), the first and last points always.
fn thin_log_log(points: &[(f64, f64)], max_points: usize) -> Vec<(f64, f64)> {
    if points.len() <= max_points {
        return points.to_vec();
    }
    let cells = (max_points.saturating_sub(2) / 2).max(1) as f64;
    let log = |v: f64| v.max(f64::MIN_POSITIVE).log10();
    let span = |a: f64, b: f64| (b - a).abs().max(1e-12);
    let (first, last) = (points[0], points[points.len() - 1]);
    let (x0, xs) = (log(first.0), span(log(first.0), log(last.0)));
    let (y0, ys) = (log(first.1), span(log(first.1), log(last.1)));
    let cell = |(x, y): (f64, f64)| {
        (
            ((log(x) - x0) / xs * cells).floor() as i64,
            ((y0 - log(y)) / ys * cells).floor() as i64,
        )
    };
    let mut kept = vec![first];
    let mut at = cell(first);
    for &p in &points[1..points.len() - 1] {
        let c = cell(p);
        if c != at {
            kept.push(p);
            at = c;
        }
    }
    kept.push(last);
    kept
}

/// The `q` quantile of `hist` in ms (NaN when empty).
pub(super) fn quantile_ms(hist: &Histogram<u64>, q: f64) -> f64 {
    if hist.is_empty() {
        f64::NAN
    } else {
        hist.median_equivalent(hist.value_at_quantile(q)) as f64 / 1e6
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hist(values_ms: impl IntoIterator<Item = f64>) -> Histogram<u64> {
        let mut h = Histogram::new_with_bounds(1, MAX_NS, SIGFIG).unwrap();
        for ms in values_ms {
            h.record((ms * 1e6) as u64).unwrap();
        }
        h
    }

    #[test]
    fn the_ccdf_starts_at_one_and_falls_with_the_values() {
        let points = ccdf_ms(&hist([10.0, 20.0, 20.0, 40.0]), 500);
        assert_eq!(points.len(), 3, "{points:?}");
        let close = |a: f64, b: f64| (a - b).abs() / b < 1e-3;
        assert!(close(points[0].0, 10.0) && points[0].1 == 1.0);
        assert!(close(points[1].0, 10.0) && points[1].1 == 0.75);
        assert!(close(points[2].0, 20.0) && points[2].1 == 0.25);
        assert!(ccdf_ms(&hist([]), 500).is_empty());
    }

    #[test]
    fn few_values_are_one_point_each_at_the_share_at_least_as_slow() {
        let points = at_least_ms(&hist([10.0, 20.0, 20.0, 40.0]));
        let shares: Vec<f64> = points.iter().map(|p| p.1).collect();
        assert_eq!(shares, [1.0, 0.75, 0.25]);
        assert!(at_least_ms(&hist([])).is_empty());
    }

    #[test]
    fn a_long_ccdf_is_thinned_to_the_bound_and_keeps_its_ends() {
        // 200,000 distinct latencies from 0.01 ms to 2 s: far more buckets than points allowed.
        let h = hist((1..=200_000).map(|i| f64::from(i) * 0.01));
        let full = ccdf_ms(&h, usize::MAX);
        assert!(full.len() > 5_000, "{}", full.len());
        let thin = ccdf_ms(&h, 500);
        assert!(thin.len() <= 500 && thin.len() > 100, "{}", thin.len());
        assert_eq!(thin.first(), full.first());
        assert_eq!(thin.last(), full.last());
        assert!(thin
            .windows(2)
            .all(|w| w[0].0 <= w[1].0 && w[0].1 >= w[1].1));
    }

    #[test]
    fn quantiles_are_those_of_the_values() {
        let h = hist((1..=1000).map(f64::from));
        assert!((quantile_ms(&h, 0.5) - 500.0).abs() < 1.0);
        assert!(quantile_ms(&hist([]), 0.5).is_nan());
    }
}
