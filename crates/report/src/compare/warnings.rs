//! What may make a comparison unfair or incomplete, in words.

use super::Measured;

/// What may make the comparison unfair: different traces, runs only one input has, what was
/// noticed while reading.
pub(super) fn warnings(base: &Measured, new: &Measured) -> Vec<String> {
    let mut out: Vec<String> = base.notes.iter().chain(&new.notes).cloned().collect();
    for (key, b) in &base.traces {
        let Some(n) = new.traces.get(key) else {
            continue;
        };
        let which = if key.is_empty() {
            String::new()
        } else {
            format!("run {key}: ")
        };
        if b.queries != n.queries {
            out.push(format!(
                "{which}BASE has {} queries and NEW {}: replays of different traces?",
                b.queries, n.queries
            ));
        }
        if b.first_trace_ns != n.first_trace_ns {
            out.push(format!(
                "{which}the first query's trace time differs ({} against {} ns): replays of \
                 different traces?",
                b.first_trace_ns.map_or("none".into(), |t| t.to_string()),
                n.first_trace_ns.map_or("none".into(), |t| t.to_string())
            ));
        }
    }
    let only = |a: &Measured, b: &Measured| -> Vec<String> {
        a.runs
            .iter()
            .filter(|r| !b.runs.contains(r))
            .cloned()
            .collect()
    };
    for (runs, which) in [(only(base, new), "BASE"), (only(new, base), "NEW")] {
        if !runs.is_empty() {
            out.push(format!("runs only {which} has: {}", runs.join(", ")));
        }
    }
    out
}
