//! Whether a replay kept its trace's timing well enough for its figures to be about the
//! server: a replay on a busy machine can send late (timing error p99 of 31.8 ms) and bunch its
//! queries (a quarter of its seconds within ±0.1% of the trace's rate), and its latency figures
//! then measure the machine. The verdict goes into the summary; `replay --strict` turns it
//! into the exit status.

use crate::summary::SummaryReport;
use serde::Serialize;

/// The latest a query may be sent, at the 99th percentile, for the timing to count as kept:
/// 1 ms, a small share of any round trip worth measuring (the replay does tens of µs when the
/// machine is free).
pub const MAX_P99_LATE_US: f64 = 1000.0;

/// The share of seconds whose rate must be within ±1% of the trace's.
pub const MIN_SECONDS_WITHIN_1PCT: f64 = 0.9;

/// Fewest seconds compared for the rate to be judged.
pub const MIN_SECONDS_JUDGED: u64 = 3;

/// The verdict on a replay's timing.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Fidelity {
    /// Whether the timing was kept (nothing below is wrong).
    pub ok: bool,
    /// What was not kept, in words (empty when `ok`).
    pub problems: Vec<String>,
}

impl Fidelity {
    /// Judges `report` against [`MAX_P99_LATE_US`] and [`MIN_SECONDS_WITHIN_1PCT`]. A replay
    /// that sends as fast as answers come (`closed_loop`) has no schedule to keep: nothing is
    /// judged.
    pub fn of(report: &SummaryReport, closed_loop: bool) -> Fidelity {
        let mut problems = Vec::new();
        if let Some(t) = &report.timing_error_us {
            if !closed_loop && t.p99 > MAX_P99_LATE_US {
                problems.push(format!(
                    "queries were sent late: timing error p99 {:.1} ms (at most {:.1} ms)",
                    t.p99 / 1e3,
                    MAX_P99_LATE_US / 1e3
                ));
            }
        }
        let rate = &report.rate_error;
        if let (false, true, Some(within)) = (
            closed_loop,
            rate.seconds >= MIN_SECONDS_JUDGED,
            rate.within_1pct,
        ) {
            if within < MIN_SECONDS_WITHIN_1PCT {
                problems.push(format!(
                    "the trace's rate was not kept: {:.0}% of seconds within ±1% of it (at \
                     least {:.0}%)",
                    within * 100.0,
                    MIN_SECONDS_WITHIN_1PCT * 100.0
                ));
            }
        }
        Fidelity {
            ok: problems.is_empty(),
            problems,
        }
    }
}

/// One line after a replay's summary: whether the timing was kept, and if not, what was
/// missed.
impl std::fmt::Display for Fidelity {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.ok {
            write!(f, "timing: the trace's timing was kept")
        } else {
            write!(
                f,
                "timing: NOT KEPT, figures may measure this machine: {}",
                self.problems.join("; ")
            )
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::summary::{RateErrorReport, TimingErrorReport};

    fn report(p99_us: f64, within_1pct: f64) -> SummaryReport {
        let mut r = crate::Summary::new().report();
        r.timing_error_us = Some(TimingErrorReport {
            count: 100,
            mean: 0.0,
            min: 0.0,
            p25: 0.0,
            p50: 0.0,
            p75: 0.0,
            p99: p99_us,
            max: p99_us,
        });
        r.rate_error = RateErrorReport {
            seconds: 10,
            within_1pct: Some(within_1pct),
            ..RateErrorReport::default()
        };
        r
    }

    #[test]
    fn late_sends_and_a_lost_rate_are_named() {
        assert!(Fidelity::of(&report(40.0, 1.0), false).ok);
        let poor = Fidelity::of(&report(31_800.0, 0.25), false);
        assert!(!poor.ok);
        assert_eq!(poor.problems.len(), 2, "{poor:?}");
        assert!(poor.problems[0].contains("p99 31.8 ms"), "{poor:?}");
        assert!(poor.problems[1].contains("25% of seconds"), "{poor:?}");
        // As fast as answers come: no schedule, no rate to keep.
        assert!(Fidelity::of(&report(31_800.0, 0.25), true).ok);
    }
}
