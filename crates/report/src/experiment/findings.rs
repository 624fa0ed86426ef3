//! What an experiment found, in plain words, and what could not be read.

use super::layout::{num, Input, Inputs};
use super::RunData;
use crate::html::Section;

/// The first section: per input, a paragraph of findings and one of notes, and the table of
/// runs.
pub(super) fn section(inputs: &Inputs<'_>) -> Section {
    let mut section = Section {
        title: "Experiment".into(),
        ..Section::default()
    };
    for input in &inputs.list {
        section.paragraphs.push(findings(inputs, input));
        let notes = input.data.notes();
        if !notes.is_empty() {
            section.paragraphs.push(format!(
                "{}Left out or not read: {}.",
                lead(inputs, input),
                notes.join("; ")
            ));
        }
    }
    let mut runs = inputs.run_table(&[
        "queries",
        "answered (%)",
        "latency p50 (ms)",
        "memory p50 (MiB)",
        "server",
        "wall time (s)",
        "steady state",
    ]);
    for (input, run) in inputs.runs() {
        let mut cells = inputs.run_cells(input, run);
        let outputs = run.record.outputs.as_ref();
        cells.extend([
            run.record.trace.records.to_string(),
            run.metric("answered_share")
                .map_or_else(String::new, |d| num(d.mean * 100.0)),
            median(run, "latency_ms"),
            median(run, "server_rss_mib"),
            outputs.map_or_else(String::new, |o| o.server_version().to_string()),
            outputs.map_or_else(String::new, |o| format!("{:.0}", o.seconds)),
            if run.record.unsteady.is_empty() {
                "yes".into()
            } else {
                format!("no: {}", run.record.unsteady.join("; "))
            },
        ]);
        runs.push(cells);
    }
    section.tables.push((
        "The runs shown (medians over the time after warm-up, from summary.csv)".into(),
        runs,
    ));
    if let Some(table) = upstream_table(inputs) {
        section.tables.push((
            "A recursive server's upstream queries, as the emulated hierarchy counted them by \
             the level of the zone that answered: over the whole run (from a cold cache) and \
             after the warm-up (from summary.csv)"
                .into(),
            table,
        ));
    }
    section
}

/// The upstream queries of the runs that have them (recursive servers with a hierarchy), by
/// level; `None` when no run has them.
fn upstream_table(inputs: &Inputs<'_>) -> Option<crate::figure::Table> {
    const COLUMNS: [(&str, &str); 8] = [
        ("upstream_root", "root"),
        ("upstream_root_nxdomain", "root NXDOMAIN"),
        ("upstream_tld", "TLD"),
        ("upstream_tld_nxdomain", "TLD NXDOMAIN"),
        ("upstream_below", "below"),
        ("upstream_root_warm", "root, warm"),
        ("upstream_root_nxdomain_warm", "root NXDOMAIN, warm"),
        ("upstream_tld_warm", "TLD, warm"),
    ];
    let mut table = inputs.run_table(&COLUMNS.map(|(_, label)| label));
    let mut any = false;
    for (input, run) in inputs.runs() {
        if run.metric("upstream_root").is_none() {
            continue;
        }
        any = true;
        let mut cells = inputs.run_cells(input, run);
        cells.extend(COLUMNS.iter().map(|(metric, _)| {
            run.metric(metric)
                .map_or_else(String::new, |d| format!("{:.0}", d.mean))
        }));
        table.push(cells);
    }
    any.then_some(table)
}

/// `label: ` when there are several inputs.
fn lead(inputs: &Inputs<'_>, input: &Input<'_>) -> String {
    if inputs.several() {
        format!("{}: ", input.label)
    } else {
        String::new()
    }
}

fn median(run: &RunData, metric: &str) -> String {
    run.metric(metric).map_or_else(String::new, |d| num(d.p50))
}

/// One paragraph: how many runs, then per run its median latency, memory, CPU and
/// connections, then which runs had the lowest and highest median latency and memory.
fn findings(inputs: &Inputs<'_>, input: &Input<'_>) -> String {
    let runs = input.data.runs();
    let mut text = lead(inputs, input);
    let left_out = input.data.left_out().len();
    text.push_str(&format!(
        "{} run{} finished{}.",
        runs.len(),
        if runs.len() == 1 { "" } else { "s" },
        if left_out > 0 {
            format!(", {left_out} left out")
        } else {
            String::new()
        }
    ));
    if runs.is_empty() {
        text.push_str(" There is nothing to plot.");
        return text;
    }
    for run in runs {
        let mut facts = Vec::new();
        if let Some(d) = run.metric("latency_ms") {
            facts.push(format!(
                "median latency {} ms (p95 {} ms)",
                num(d.p50),
                num(d.p95)
            ));
        }
        if let Some(d) = run.metric("answered_share") {
            if d.mean < 0.9995 {
                facts.push(format!("{}% answered", num(d.mean * 100.0)));
            }
        }
        if let Some(d) = run.metric("server_rss_mib") {
            facts.push(format!("server memory {} MiB", num(d.p50)));
        }
        if let Some(d) = run.metric("server_cpu_pct") {
            facts.push(format!("CPU {}%", num(d.p50)));
        }
        match (
            run.metric("tcp_established"),
            run.metric("model_connections"),
        ) {
            (Some(m), Some(model)) => facts.push(format!(
                "{} established connections (the model: {})",
                num(m.mean),
                num(model.mean)
            )),
            (Some(m), None) if m.mean > 0.0 => {
                facts.push(format!("{} established connections", num(m.mean)))
            }
            _ => {}
        }
        if facts.is_empty() {
            continue;
        }
        // A figure from a window that was not steady says so beside it.
        let caveat = if run.record.unsteady.is_empty() {
            String::new()
        } else {
            format!(" (not steady: {})", run.record.unsteady.join("; "))
        };
        text.push_str(&format!(
            " With {}: {}{caveat}.",
            describe(run),
            facts.join(", ")
        ));
    }
    for (metric, what, unit) in [
        ("latency_ms", "median latency", " ms"),
        ("server_rss_mib", "server memory (median)", " MiB"),
    ] {
        if let Some(sentence) = extremes(runs, metric, what, unit) {
            text.push(' ');
            text.push_str(&sentence);
        }
    }
    text
}

/// `proto=tcp, idle_timeout_s=5` (or the run's id when nothing is varied).
fn describe(run: &RunData) -> String {
    if run.record.varied.is_empty() {
        return format!("run {}", run.id());
    }
    let mut words = run
        .record
        .varied
        .iter()
        .map(|(k, v)| format!("{k}={v}"))
        .collect::<Vec<_>>()
        .join(", ");
    if run.repeat > 1 {
        words.push_str(&format!(" (repeat {})", run.repeat));
    }
    words
}

/// "The median latency was lowest with … (x ms) and highest with … (y ms)." when runs differ.
fn extremes(runs: &[RunData], metric: &str, what: &str, unit: &str) -> Option<String> {
    let with: Vec<(&RunData, f64)> = runs
        .iter()
        .filter_map(|r| Some((r, r.metric(metric)?.p50)))
        .filter(|(_, v)| !v.is_nan())
        .collect();
    if with.len() < 2 {
        return None;
    }
    let lo = with.iter().min_by(|a, b| a.1.total_cmp(&b.1))?;
    let hi = with.iter().max_by(|a, b| a.1.total_cmp(&b.1))?;
    if lo.1 == hi.1 {
        return Some(format!(
            "The {what} was the same in every run ({}{unit}).",
            num(lo.1)
        ));
    }
    Some(format!(
        "The {what} was lowest with {} ({}{unit}) and highest with {} ({}{unit}).",
        describe(lo.0),
        num(lo.1),
        describe(hi.0),
        num(hi.1)
    ))
}
