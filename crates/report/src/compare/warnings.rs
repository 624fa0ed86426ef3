//! What may make a comparison unfair or incomplete, in words.

use super::pairing::Pairing;
use super::Measured;

/// What may make the comparison unfair: different traces, runs only one input has, what was
/// noticed while reading and while pairing runs. `new` has its runs filed under their
/// partners' names already.
pub(super) fn warnings(base: &Measured, new: &Measured, pairing: &Pairing) -> Vec<String> {
    let mut out: Vec<String> = base.notes.iter().chain(&new.notes).cloned().collect();
    out.extend(pairing.notes.iter().cloned());
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
    let only = |alone: fn(&super::RunPair) -> Option<&String>| -> Vec<String> {
        pairing.pairs.iter().filter_map(alone).cloned().collect()
    };
    let only_base = only(|p| p.base.as_ref().filter(|_| p.new.is_none()));
    let only_new = only(|p| p.new.as_ref().filter(|_| p.base.is_none()));
    for (runs, left_out, which) in [
        (only_base, &pairing.left_out, "BASE"),
        (only_new, &pairing.left_out_new, "NEW"),
    ] {
        let (out_runs, kept): (Vec<String>, Vec<String>) =
            runs.into_iter().partition(|r| left_out.contains(r));
        if !kept.is_empty() {
            out.push(format!("runs only {which} has: {}", kept.join(", ")));
        }
        if !out_runs.is_empty() {
            out.push(format!(
                "{which}'s runs left out, their partners taken by --as: {}",
                out_runs.join(", ")
            ));
        }
    }
    out
}
