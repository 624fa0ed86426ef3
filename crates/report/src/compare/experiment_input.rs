//! An experiment's folder as metrics: every row of its `summary.csv`, and the response code
//! shares of each run's results file.

use super::metric::{Measured, Worse};
use super::replay_input::{push_rcode_shares, read_results};
use super::summary_csv::{self, STATS};
use crate::ReportError;
use std::path::Path;

/// Which way a `summary.csv` metric is worse.
///
/// Latencies, set-up times, the server's memory, CPU and socket memory: higher. The answered
/// share: lower. Connections by state, bytes and packets on the link and the model's
/// connections depend on the trace and the settings as much as on the server: either way.
pub fn worse_of(metric: &str) -> Worse {
    match metric {
        "latency_ms" | "latency_ms_nonbusy" | "handshake_ms" | "fresh_query_ms"
        | "server_rss_mib" | "server_cpu_pct" | "socket_mem_kib" => Worse::Higher,
        "answered_share" => Worse::Lower,
        _ => Worse::Either,
    }
}

/// Reads the experiment folder `dir`: `summary.csv` (`METRIC.STAT@RUN` for each of its rows
/// and [`STATS`]) and `runs/RUN/results.res` (`rcode_share.RCODE@RUN`).
pub fn read_experiment(dir: &Path) -> Result<Measured, ReportError> {
    let path = dir.join("summary.csv");
    let text = std::fs::read(&path).map_err(|source| ReportError::Io {
        path: path.clone(),
        source,
    })?;
    let (keys, rows) = summary_csv::parse_with_keys(&text, &path)?;
    let mut measured = Measured::new(super::InputKind::Experiment, dir.to_path_buf());
    if rows.is_empty() {
        measured
            .notes
            .push(format!("{}: no run finished (no rows)", path.display()));
    }
    for row in &rows {
        if !measured.runs.contains(&row.run) {
            measured.runs.push(row.run.clone());
            let values = row.varied.iter().map(|(_, v)| v.clone()).collect();
            measured.varied.insert(row.run.clone(), values);
        }
    }
    measured.varied_keys = keys;
    for run in measured.runs.clone() {
        for row in rows.iter().filter(|r| r.run == run) {
            for (stat, &value) in STATS.iter().zip(&row.stats) {
                let metric = format!("{}.{stat}", row.metric);
                measured.push(metric, Some(&run), worse_of(&row.metric), value);
            }
        }
        let results = dir.join("runs").join(&run).join("results.res");
        if !results.exists() {
            measured.notes.push(format!(
                "{}: missing, no response codes for run {run}",
                results.display()
            ));
            continue;
        }
        // A damaged run costs only its response codes.
        let read = match read_results(&results) {
            Ok(read) => read,
            Err(e) => {
                measured
                    .notes
                    .push(format!("{e}: no response codes for run {run}"));
                continue;
            }
        };
        push_rcode_shares(&read.report, Some(&run), &mut measured);
        measured.traces.insert(run, read.trace);
        measured.notes.extend(read.incomplete);
        measured.notes.extend(read.damage);
    }
    Ok(measured)
}
