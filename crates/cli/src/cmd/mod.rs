//! One module per subcommand.

pub mod convert;
pub mod demo;
pub mod inspect;
pub mod lab;
pub mod mutate;
pub mod replay;
pub mod results;
pub mod serve;
pub mod synth;
pub mod zones;

use ldplayer_trace::SkipCounts;

/// `reason=count, ...` or `none`.
pub fn skipped_list(skipped: &SkipCounts) -> String {
    if skipped.total() == 0 {
        return "none".into();
    }
    skipped
        .iter()
        .map(|(r, c)| format!("{r}={c}"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// A rate in human units (`2.31 M/s`).
pub fn per_second(n: u64, secs: f64) -> String {
    let r = if secs > 0.0 { n as f64 / secs } else { 0.0 };
    if r >= 1e6 {
        format!("{:.2} M/s", r / 1e6)
    } else if r >= 1e3 {
        format!("{:.1} k/s", r / 1e3)
    } else {
        format!("{r:.0}/s")
    }
}
