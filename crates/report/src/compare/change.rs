//! How NEW's value stands against BASE's: the change, the worsening, the verdict.

use super::{Row, Verdict, Worse};

/// Whether two values are the same but for rounding (a relative difference under 1e-9), as
/// percentiles computed from the same numbers in another order can be.
fn same(base: f64, new: f64) -> bool {
    (new - base).abs() <= 1e-9 * base.abs().max(new.abs())
}

/// (new − base) / |base| in percent: 0 when the same, undefined from 0.
pub fn change_pct(base: f64, new: f64) -> Option<f64> {
    if same(base, new) {
        Some(0.0)
    } else if base == 0.0 {
        None
    } else {
        Some((new - base) / base.abs() * 100.0)
    }
}

/// Better, worse, changed or the same, by which way the metric is worse.
pub(super) fn verdict(worse: Worse, base: f64, new: f64) -> Verdict {
    if same(base, new) {
        return Verdict::Same;
    }
    match (worse, new > base) {
        (Worse::Either, _) => Verdict::Changed,
        (Worse::Higher, true) | (Worse::Lower, false) => Verdict::Worse,
        _ => Verdict::Better,
    }
}

/// How much `new` is worse than `base`, in percent of |base|: 0 when not worse, infinite when
/// worse than a base of 0.
pub fn worsening_pct(worse: Worse, base: f64, new: f64) -> f64 {
    let delta = match worse {
        Worse::Higher => new - base,
        Worse::Lower => base - new,
        Worse::Either => (new - base).abs(),
    };
    if delta <= 0.0 || same(base, new) {
        0.0
    } else if base == 0.0 {
        f64::INFINITY
    } else {
        delta / base.abs() * 100.0
    }
}

/// Whether a row breaks a bound of `pct`: worse by more than that, or missing from NEW.
pub(super) fn exceeds(row: &Row, pct: f64) -> bool {
    match (row.base, row.new) {
        // A relative slack of 1e-9 for rounding: 10 → 11 is within a bound of 10%.
        (Some(b), Some(n)) => worsening_pct(row.worse, b, n) > pct * (1.0 + 1e-9),
        (Some(_), None) => true,
        _ => false,
    }
}
