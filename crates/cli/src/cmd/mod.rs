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

/// ` (N malformed: reason=count, ...)` after a message count, or nothing when none was.
pub fn malformed_note(malformed: &SkipCounts) -> String {
    if malformed.total() == 0 {
        return String::new();
    }
    format!(
        " ({} malformed: {})",
        malformed.total(),
        skipped_list(malformed)
    )
}

/// Counts by reason as a JSON object (`{"dns-truncated": 3, ...}`).
pub fn counts_json(counts: &SkipCounts) -> serde_json::Value {
    counts
        .iter()
        .map(|(r, c)| (r.name().to_string(), serde_json::Value::from(c)))
        .collect::<serde_json::Map<_, _>>()
        .into()
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
