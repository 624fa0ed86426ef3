//! Whether a run's measured window is a steady state: a figure quoted as "server memory with
//! TCP" means little if connections, and the memory they hold, are still climbing when the
//! window ends (the demo's connections grew from 300 to 1,550 through its whole run, and its
//! headline memory was the median of that ramp).

/// How much a quantity may drift over the measured window, as a share of its mean, before the
/// window is called not steady: sampling noise on a flat series stays well inside it.
pub const STEADY_TREND_PCT: f64 = 10.0;

/// The change of `points` (time in seconds, value) over their span, by a least-squares line,
/// as a percentage of their mean. `None` with fewer than three points, no time span, or a
/// mean of (nearly) zero: nothing to call a trend.
pub fn trend_pct(points: &[(f64, f64)]) -> Option<f64> {
    if points.len() < 3 {
        return None;
    }
    let n = points.len() as f64;
    let mean_t = points.iter().map(|p| p.0).sum::<f64>() / n;
    let mean_v = points.iter().map(|p| p.1).sum::<f64>() / n;
    let (mut stt, mut stv) = (0.0, 0.0);
    for &(t, v) in points {
        stt += (t - mean_t) * (t - mean_t);
        stv += (t - mean_t) * (v - mean_v);
    }
    let span = points.last()?.0 - points.first()?.0;
    if stt <= 0.0 || span <= 0.0 || mean_v.abs() < 1.0 {
        return None;
    }
    Some(stv / stt * span / mean_v * 100.0)
}

/// What makes a run's window not steady, in words for the report and the findings: the
/// warm-up shorter than the idle timeout of a run with connections (`idle_s`), and each
/// `(what, trend)` past [`STEADY_TREND_PCT`].
pub fn unsteady_notes(
    connections: bool,
    warmup_s: f64,
    idle_s: f64,
    trends: &[(&str, Option<f64>)],
) -> Vec<String> {
    let mut notes = Vec::new();
    if connections && warmup_s < idle_s {
        notes.push(format!(
            "warm-up {warmup_s} s shorter than the {idle_s} s idle timeout"
        ));
    }
    for (what, trend) in trends {
        if let Some(t) = trend.filter(|t| t.abs() > STEADY_TREND_PCT) {
            notes.push(format!("{what} {t:+.0}% through the measured window"));
        }
    }
    notes
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_ramp_trends_a_flat_series_does_not() {
        let ramp: Vec<(f64, f64)> = (0..10)
            .map(|t| (t as f64, 100.0 + 20.0 * t as f64))
            .collect();
        // From 100 to 280 around a mean of 190: +95%.
        let t = trend_pct(&ramp).unwrap();
        assert!((t - 180.0 / 190.0 * 100.0).abs() < 1e-9, "{t}");
        let flat: Vec<(f64, f64)> = (0..10)
            .map(|t| (t as f64, if t % 2 == 0 { 1000.0 } else { 1010.0 }))
            .collect();
        assert!(trend_pct(&flat).unwrap().abs() < 2.0);
        assert_eq!(trend_pct(&ramp[..2]), None);
        assert_eq!(trend_pct(&[(0.0, 0.0), (1.0, 0.0), (2.0, 0.0)]), None);
        let notes = unsteady_notes(
            true,
            2.0,
            10.0,
            &[("connections", Some(95.0)), ("memory", Some(3.0))],
        );
        assert_eq!(notes.len(), 2, "{notes:?}");
        assert_eq!(notes[0], "warm-up 2 s shorter than the 10 s idle timeout");
        assert_eq!(notes[1], "connections +95% through the measured window");
        assert!(unsteady_notes(false, 2.0, 10.0, &[]).is_empty());
    }
}
