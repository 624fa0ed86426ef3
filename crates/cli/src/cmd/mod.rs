//! One module per subcommand.

pub mod compare;
pub mod convert;
pub mod demo;
pub mod diff;
pub mod diff_reask;
pub mod dnstap;
pub mod experiment;
pub mod inspect;
pub mod lab;
pub mod mutate;
pub mod population;
pub mod replay;
pub mod replay_config;
pub mod replay_processes;
pub mod replay_targets;
pub mod report;
pub mod results;
pub mod serve;
pub mod synth;
pub mod zones;

use ldplayer_trace::SkipCounts;

/// True when a source's run ended at an error of its input (damage, a read error), as opposed
/// to success, a stop asked for, or a sink that failed: the commands then print the summary of
/// what was read before the error.
pub fn is_read_error(result: &Result<(), ldplayer_trace::TraceError>) -> bool {
    matches!(result, Err(e) if !matches!(e, ldplayer_trace::TraceError::Sink(_)))
}

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

/// Skip counts as JSON: a list of `name`/`count` objects, as `inspect --json` has them.
pub fn skipped_json(skipped: &SkipCounts) -> serde_json::Value {
    skipped
        .iter()
        .map(|(r, c)| serde_json::json!({"name": r.name(), "count": c}))
        .collect()
}

/// An input format's name in JSON summaries.
pub fn format_name(format: ldplayer_trace::input::Format) -> &'static str {
    use ldplayer_trace::input::Format;
    match format {
        Format::Capture => "capture",
        Format::Text => "text",
        Format::Binary => "binary",
        Format::Dnstap => "dnstap",
    }
}

/// An output format's name in JSON summaries (as `--to` spells it).
pub fn out_format_name(format: crate::args::OutFormat) -> &'static str {
    use crate::args::OutFormat;
    match format {
        OutFormat::Text => "text",
        OutFormat::Binary => "binary",
        OutFormat::Pcap => "pcap",
        OutFormat::Dnstap => "dnstap",
    }
}
