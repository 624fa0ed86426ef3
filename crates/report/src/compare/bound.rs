//! `--max-regression METRIC=PCT`: how much a metric may worsen, in percent of BASE.

use crate::ReportError;

/// A regression bound: the metrics it names and the worsening they may have.
#[derive(Debug, Clone, PartialEq)]
pub struct Bound {
    /// The bound as given (`latency_ms.udp.p99=10`).
    pub text: String,
    /// The metric part: `latency_ms.udp.p99`, `server_rss_mib.p50` (every run),
    /// `server_rss_mib.p50@002` (run 2), `server_rss_mib.p50@002-proto=tcp-r1`.
    pub metric: String,
    /// The worsening allowed, in percent of BASE's value.
    pub pct: f64,
}

impl Bound {
    /// Parses `METRIC=PCT` (the last `=` separates them, since run names hold `=`; a `%` after
    /// PCT is allowed).
    pub fn parse(text: &str) -> Result<Bound, ReportError> {
        let bad = |why: &str| ReportError::Bound {
            bound: text.to_string(),
            why: why.to_string(),
        };
        let (metric, pct) = text
            .rsplit_once('=')
            .ok_or_else(|| bad("expected METRIC=PCT, e.g. latency_ms.udp.p99=10"))?;
        if metric.is_empty() {
            return Err(bad("no metric before `=`"));
        }
        let pct: f64 = pct
            .trim_end_matches('%')
            .parse()
            .map_err(|_| bad("PCT after `=` is not a number"))?;
        if !pct.is_finite() || pct < 0.0 {
            return Err(bad("PCT must be a finite number ≥ 0"));
        }
        Ok(Bound {
            text: text.to_string(),
            metric: metric.to_string(),
            pct,
        })
    }

    /// Whether the bound applies to `metric` of `run`: its name exactly, or the metric of
    /// every run when the bound names no run, or of the run named by its number (`@2`,
    /// `@002`).
    pub fn applies_to(&self, metric: &str, run: Option<&str>) -> bool {
        match (self.metric.split_once('@'), run) {
            (None, _) => self.metric == metric,
            (Some((m, r)), Some(run)) => m == metric && run_matches(r, run),
            (Some(_), None) => false,
        }
    }
}

impl Bound {
    /// [`Bound::applies_to`] the metric of BASE's `run`, or of NEW's run `new_run` paired with
    /// it when the bound names that run by its whole name (a number names BASE's run).
    pub fn applies_to_pair(&self, metric: &str, run: Option<&str>, new_run: Option<&str>) -> bool {
        self.applies_to(metric, run)
            || match (self.metric.split_once('@'), new_run) {
                (Some((m, r)), Some(n)) => m == metric && r == n,
                _ => false,
            }
    }
}

/// Whether `given` names the run `run`: its whole name, or its number.
fn run_matches(given: &str, run: &str) -> bool {
    if given == run {
        return true;
    }
    let digits = |s: &str| -> Option<u64> {
        let end = s.find(|c: char| !c.is_ascii_digit()).unwrap_or(s.len());
        s[..end].parse().ok()
    };
    given.bytes().all(|b| b.is_ascii_digit())
        && digits(given).is_some()
        && digits(given) == digits(run)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_last_equals_sign_separates_the_percentage() {
        let b = Bound::parse("latency_ms.p50@001-proto=udp-r1=12.5%").unwrap();
        assert_eq!(b.metric, "latency_ms.p50@001-proto=udp-r1");
        assert_eq!(b.pct, 12.5);
        assert_eq!(Bound::parse("answered_share=0").unwrap().pct, 0.0);
        for bad in ["answered_share", "=5", "x=", "x=ten", "x=-1", "x=inf"] {
            assert!(Bound::parse(bad).is_err(), "{bad} must be refused");
        }
    }

    #[test]
    fn a_bound_without_a_run_applies_to_every_run() {
        let every = Bound::parse("server_rss_mib.p50=10").unwrap();
        assert!(every.applies_to("server_rss_mib.p50", Some("001-proto=udp-r1")));
        assert!(every.applies_to("server_rss_mib.p50", None));
        assert!(!every.applies_to("server_rss_mib.p5", None));
        let one = Bound::parse("server_rss_mib.p50@2=10").unwrap();
        assert!(one.applies_to("server_rss_mib.p50", Some("002-proto=tcp-r1")));
        assert!(!one.applies_to("server_rss_mib.p50", Some("001-proto=udp-r1")));
        assert!(!one.applies_to("server_rss_mib.p50", Some("020-proto=tcp-r1")));
        assert!(!one.applies_to("server_rss_mib.p50", None));
        let named = Bound::parse("server_rss_mib.p50@002-proto=tcp-r1=10").unwrap();
        assert!(named.applies_to("server_rss_mib.p50", Some("002-proto=tcp-r1")));
        assert!(!named.applies_to("server_rss_mib.p50", Some("002-proto=udp-r1")));
    }
}
