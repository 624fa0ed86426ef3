//! Percentiles and mean of a set of values.

use serde::{Deserialize, Serialize};

/// The 5th, 25th, 50th, 75th and 95th percentiles, the mean and the count of a set of values.
///
/// Percentiles interpolate linearly between the two nearest ranks (numpy's and pandas'
/// default, R's type 7): with the `n` values sorted as `x[0] <= ... <= x[n-1]`, the `p`-th
/// percentile is `x[k] + f (x[k+1] - x[k])` where `k + f = p / 100 * (n - 1)`. Without values
/// every field but `n` is NaN (an empty cell in the CSV).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Distribution {
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
    /// Arithmetic mean.
    pub mean: f64,
    /// Number of values.
    pub n: u64,
}

impl Distribution {
    /// The distribution of `values` (NaNs left out).
    pub fn of(values: &[f64]) -> Distribution {
        let mut sorted: Vec<f64> = values.iter().copied().filter(|v| !v.is_nan()).collect();
        sorted.sort_unstable_by(f64::total_cmp);
        Distribution::of_sorted(&sorted)
    }

    /// The distribution of values already sorted in ascending order, without NaNs.
    pub fn of_sorted(sorted: &[f64]) -> Distribution {
        let n = sorted.len();
        let mean = if n == 0 {
            f64::NAN
        } else {
            sorted.iter().sum::<f64>() / n as f64
        };
        Distribution {
            p5: percentile(sorted, 5.0),
            p25: percentile(sorted, 25.0),
            p50: percentile(sorted, 50.0),
            p75: percentile(sorted, 75.0),
            p95: percentile(sorted, 95.0),
            mean,
            n: n as u64,
        }
    }
}

/// The `p`-th percentile of `sorted` by linear interpolation, NaN when empty.
pub fn percentile(sorted: &[f64], p: f64) -> f64 {
    match sorted.len() {
        0 => f64::NAN,
        1 => sorted[0],
        n => {
            let rank = p / 100.0 * (n - 1) as f64;
            let k = (rank.floor() as usize).min(n - 1);
            let f = rank - k as f64;
            match sorted.get(k + 1) {
                Some(next) => sorted[k] + f * (next - sorted[k]),
                None => sorted[k],
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn one_to_101_has_its_percentiles_on_the_values() {
        let v: Vec<f64> = (1..=101).rev().map(f64::from).collect();
        let d = Distribution::of(&v);
        assert_eq!(
            (d.p5, d.p25, d.p50, d.p75, d.p95),
            (6.0, 26.0, 51.0, 76.0, 96.0)
        );
        assert_eq!(d.mean, 51.0);
        assert_eq!(d.n, 101);
    }

    #[test]
    fn between_ranks_it_interpolates_as_numpy_does() {
        // numpy.percentile([1, 2, 3, 4], [5, 25, 50, 75, 95]) = 1.15, 1.75, 2.5, 3.25, 3.85
        let d = Distribution::of(&[4.0, 1.0, 3.0, 2.0]);
        for (got, want) in [d.p5, d.p25, d.p50, d.p75, d.p95]
            .into_iter()
            .zip([1.15, 1.75, 2.5, 3.25, 3.85])
        {
            assert!((got - want).abs() < 1e-12, "{got} != {want}");
        }
        assert_eq!(d.mean, 2.5);
    }

    #[test]
    fn no_values_give_nan_and_one_value_gives_itself() {
        let d = Distribution::of(&[]);
        assert!(d.p50.is_nan() && d.mean.is_nan());
        assert_eq!(d.n, 0);
        let d = Distribution::of(&[7.5, f64::NAN]);
        assert_eq!((d.p5, d.p95, d.mean, d.n), (7.5, 7.5, 7.5, 1));
    }

    proptest! {
        #[test]
        fn percentiles_are_ordered_and_within_the_values(
            v in proptest::collection::vec(-1e6f64..1e6, 1..200)
        ) {
            let d = Distribution::of(&v);
            let lo = v.iter().copied().fold(f64::INFINITY, f64::min);
            let hi = v.iter().copied().fold(f64::NEG_INFINITY, f64::max);
            prop_assert!(lo <= d.p5 && d.p5 <= d.p25 && d.p25 <= d.p50);
            prop_assert!(d.p50 <= d.p75 && d.p75 <= d.p95 && d.p95 <= hi);
            prop_assert!(lo - 1e-6 <= d.mean && d.mean <= hi + 1e-6);
        }
    }
}
