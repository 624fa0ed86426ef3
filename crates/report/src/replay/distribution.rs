//! Distributions kept as HdrHistograms, and what the figures read from them: downsampled CDF
//! and CCDF points and nearest-rank percentiles.
//!
//! Values are recorded in ns with 3 significant digits (buckets of at most 1/1024 of the value;
//! exact below 2.048 µs), as [`ldplayer_results::Summary`] records them, and read back as the
//! middle of their bucket kept within the exact extremes (a bucket's middle can lie beyond the
//! values in it), so that percentiles agree with the replay's own summary and never fall below
//! its minimum or above its maximum.

use hdrhistogram::Histogram;

/// Significant digits kept by every histogram.
const SIGFIG: u8 = 3;

/// Cumulative shares spaced evenly in `[0, 1]` at which a CDF keeps a point.
const LINEAR_POINTS: usize = 200;
/// Cumulative shares spaced evenly in `log10(1 − share)` (the tail) at which a CDF keeps a point.
const TAIL_POINTS: usize = 200;

/// Most points a downsampled CDF holds (one per target share, plus the first bucket).
pub(crate) const MAX_CDF_POINTS: usize = LINEAR_POINTS + TAIL_POINTS + 1;

/// The percentiles every CDF table gives, in tenths of a percent (1000: the largest value).
pub(crate) const TABLE_TENTHS: [u64; 9] = [50, 250, 500, 750, 900, 950, 990, 999, 1000];

/// The headers of [`TABLE_TENTHS`].
pub(crate) const TABLE_HEADERS: [&str; 9] = [
    "p5", "p25", "p50", "p75", "p90", "p95", "p99", "p99.9", "max",
];

/// A distribution of non-negative values in ns, its histogram made on the first value.
#[derive(Debug, Clone)]
pub(crate) struct Distribution {
    max: u64,
    hist: Option<Histogram<u64>>,
    /// The exact smallest and largest values counted.
    extremes: Option<(u64, u64)>,
}

impl Distribution {
    /// An empty distribution of values up to `max` ns (larger ones count as `max`).
    pub(crate) fn new(max: u64) -> Distribution {
        Distribution {
            max,
            hist: None,
            extremes: None,
        }
    }

    /// Counts one value.
    pub(crate) fn record(&mut self, ns: u64) {
        let max = self.max;
        self.hist
            .get_or_insert_with(|| {
                // Constant bounds that HdrHistogram accepts (1 ≤ max / 2, 3 digits).
                Histogram::new_with_bounds(1, max, SIGFIG).expect("valid histogram bounds")
            })
            .saturating_record(ns);
        let ns = ns.min(max);
        self.extremes = Some(match self.extremes {
            Some((lo, hi)) => (lo.min(ns), hi.max(ns)),
            None => (ns, ns),
        });
    }

    /// Values counted.
    pub(crate) fn len(&self) -> u64 {
        self.hist.as_ref().map_or(0, |h| h.len())
    }

    /// Every non-empty bucket, in increasing value, as (bucket middle × `unit`, count), the
    /// middle kept within the exact extremes.
    pub(crate) fn buckets(&self, unit: f64) -> Vec<(f64, u64)> {
        let (Some(h), Some((lo, hi))) = (&self.hist, self.extremes) else {
            return Vec::new();
        };
        h.iter_recorded()
            .map(|v| {
                let middle = h.median_equivalent(v.value_iterated_to()).clamp(lo, hi);
                (middle as f64 * unit, v.count_at_value())
            })
            .collect()
    }
}

/// A distribution of signed values in ns (send timing errors): one histogram for values ≥ 0,
/// one for the magnitude of values < 0.
#[derive(Debug, Clone)]
pub(crate) struct SignedDistribution {
    at_or_above_zero: Distribution,
    below_zero: Distribution,
}

impl SignedDistribution {
    /// An empty distribution of values up to ±`max` ns.
    pub(crate) fn new(max: u64) -> SignedDistribution {
        SignedDistribution {
            at_or_above_zero: Distribution::new(max),
            below_zero: Distribution::new(max),
        }
    }

    /// Counts one value.
    pub(crate) fn record(&mut self, ns: i64) {
        if ns >= 0 {
            self.at_or_above_zero.record(ns as u64);
        } else {
            self.below_zero.record(ns.unsigned_abs());
        }
    }

    /// Values counted.
    pub(crate) fn len(&self) -> u64 {
        self.at_or_above_zero.len() + self.below_zero.len()
    }

    /// Every non-empty bucket, in increasing value, as (bucket middle × `unit`, count).
    pub(crate) fn buckets(&self, unit: f64) -> Vec<(f64, u64)> {
        let mut all: Vec<(f64, u64)> = self
            .below_zero
            .buckets(unit)
            .into_iter()
            .rev()
            .map(|(x, n)| (-x, n))
            .collect();
        all.extend(self.at_or_above_zero.buckets(unit));
        all
    }
}

/// The nearest-rank position of percentile `tenths` / 10 among `n` values (1-based), in
/// integer arithmetic, as the replay's summary computes it.
fn rank(tenths: u64, n: u64) -> u64 {
    (tenths * n).div_ceil(1000).clamp(1, n.max(1))
}

/// The values at the nearest-rank percentiles `tenths` (each in tenths of a percent, in
/// increasing order) of the distribution given by its `buckets`; empty when it is.
pub(crate) fn percentiles(buckets: &[(f64, u64)], tenths: &[u64]) -> Vec<f64> {
    let n: u64 = buckets.iter().map(|b| b.1).sum();
    if n == 0 {
        return Vec::new();
    }
    let mut out = Vec::with_capacity(tenths.len());
    let mut seen = 0;
    let mut bucket = buckets.iter();
    let mut current = (0.0, 0);
    for &t in tenths {
        let want = rank(t, n);
        while seen < want {
            match bucket.next() {
                Some(&b) => {
                    current = b;
                    seen += b.1;
                }
                None => break,
            }
        }
        out.push(current.0);
    }
    out
}

/// One point of a downsampled distribution.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct CdfPoint {
    /// The value (a bucket's middle).
    pub(crate) x: f64,
    /// The share of values at or below it.
    pub(crate) at_most: f64,
    /// The share of values at or above it (the CCDF, never 0 at a value that occurred).
    pub(crate) at_least: f64,
}

/// The cumulative shares at which a CDF of `n` values keeps a point: evenly spaced for the body,
/// evenly spaced in log(1 − share) for the tail, down to one value in `n`.
fn target_shares(n: u64) -> Vec<f64> {
    let decades = (n.max(10) as f64).log10();
    let mut shares: Vec<f64> = (1..=LINEAR_POINTS)
        .map(|i| i as f64 / LINEAR_POINTS as f64)
        .chain(
            (1..=TAIL_POINTS).map(|i| 1.0 - 10f64.powf(-decades * i as f64 / TAIL_POINTS as f64)),
        )
        .collect();
    shares.sort_by(f64::total_cmp);
    shares.dedup();
    shares
}

/// The distribution given by its `buckets` (in increasing value) as at most [`MAX_CDF_POINTS`]
/// points: the first bucket, then the first bucket at which the cumulative share reaches each
/// target share. Shares and values never decrease along the points; the last point is the
/// largest value, at share 1.
pub(crate) fn cdf_points(buckets: &[(f64, u64)]) -> Vec<CdfPoint> {
    let n: u64 = buckets.iter().map(|b| b.1).sum();
    if n == 0 {
        return Vec::new();
    }
    let targets = target_shares(n);
    let mut next = 0;
    let mut points = Vec::new();
    let mut cumulative = 0u64;
    for (i, &(x, count)) in buckets.iter().enumerate() {
        let at_least = (n - cumulative) as f64 / n as f64;
        cumulative += count;
        let at_most = cumulative as f64 / n as f64;
        let last = i + 1 == buckets.len();
        if points.is_empty() || last || targets.get(next).is_some_and(|&t| at_most >= t) {
            points.push(CdfPoint {
                x,
                at_most,
                at_least,
            });
            while targets.get(next).is_some_and(|&t| t <= at_most) {
                next += 1;
            }
        }
    }
    points
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles_are_nearest_rank_bucket_middles() {
        let mut d = Distribution::new(3_600_000_000_000);
        for v in 1..=1000u64 {
            d.record(v);
        }
        let b = d.buckets(1.0);
        assert_eq!(
            percentiles(&b, &[0, 10, 500, 999, 1000]),
            vec![1.0, 10.0, 500.0, 999.0, 1000.0]
        );
    }

    #[test]
    fn a_bucket_s_middle_is_kept_within_the_values_counted() {
        // 23.517 µs lies in the bucket [23.504, 23.520) µs, whose middle is 23.512 µs.
        let mut d = SignedDistribution::new(100_000_000_000);
        for _ in 0..4 {
            d.record(23_517);
            d.record(-23_517);
        }
        let b = d.buckets(1e-3);
        assert_eq!(b, [(-23.517, 4), (23.517, 4)]);
        assert_eq!(
            percentiles(&b, &[0, 250, 500, 750, 1000]),
            [-23.517, -23.517, -23.517, 23.517, 23.517]
        );
    }

    #[test]
    fn signed_buckets_run_from_the_earliest_to_the_latest() {
        let mut d = SignedDistribution::new(100_000_000_000);
        for v in [-5, 3, -1, 0, 7] {
            d.record(v);
        }
        let xs: Vec<f64> = d.buckets(1.0).iter().map(|b| b.0).collect();
        assert_eq!(xs, vec![-5.0, -1.0, 0.0, 3.0, 7.0]);
        assert_eq!(d.len(), 5);
    }

    #[test]
    fn a_dense_distribution_is_cut_to_its_targets_and_keeps_its_extremes() {
        let mut d = Distribution::new(3_600_000_000_000);
        for v in 0..1_000_000u64 {
            d.record(v * 37 % 10_000_000);
        }
        let b = d.buckets(1.0);
        assert!(b.len() > MAX_CDF_POINTS, "{} buckets", b.len());
        let p = cdf_points(&b);
        assert!(p.len() <= MAX_CDF_POINTS, "{} points", p.len());
        assert_eq!(p[0].x, b[0].0);
        assert_eq!(
            p.last().map(|p| (p.x, p.at_most)),
            Some((b[b.len() - 1].0, 1.0))
        );
        assert!(p[0].at_least == 1.0);
    }
}
