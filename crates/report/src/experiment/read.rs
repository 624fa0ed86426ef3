//! Reading an experiment directory: what must be there, and what may be missing with a note.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use ldplayer_study::{read_samples, Environment, RunRecord, Status};

use super::latency::{read_latency, Window};
use super::{ExperimentData, RunData};
use crate::error::ReportError;
use crate::summary_csv::{read_summary, SummaryTable};

pub(super) fn read(dir: &Path) -> Result<ExperimentData, ReportError> {
    let io = |path: &Path| {
        let path = path.to_path_buf();
        move |source| ReportError::Io { path, source }
    };
    if dir.is_file() {
        return Err(ReportError::UnknownInput {
            path: dir.to_path_buf(),
            why: "a file, not an experiment directory".into(),
        });
    }
    let entries = std::fs::read_dir(dir)
        .map_err(io(dir))?
        .filter_map(Result::ok)
        .count();
    let plan_path = dir.join("plan.toml");
    let summary_path = dir.join("summary.csv");
    let runs_dir = dir.join("runs");
    if !plan_path.is_file() && !summary_path.is_file() && !runs_dir.is_dir() {
        let why = if entries == 0 {
            "an empty directory".to_string()
        } else {
            "no plan.toml, summary.csv or runs/ folder".to_string()
        };
        return Err(ReportError::UnknownInput {
            path: dir.to_path_buf(),
            why,
        });
    }
    let mut notes = Vec::new();
    let plan = read_plan(&plan_path, &mut notes);
    let environment = read_environment(&dir.join("environment.json"), &mut notes);
    let summary = if summary_path.is_file() {
        Some(read_summary(&summary_path)?)
    } else {
        notes.push(
            "summary.csv is missing (the plan did not finish its first run?): the boxplots, \
             the model and the findings need it"
                .to_string(),
        );
        None
    };
    let mut left_out = Vec::new();
    let runs = read_runs(&runs_dir, summary.as_ref(), &mut notes, &mut left_out)?;
    if runs.is_empty() {
        notes.push("no run finished: there is nothing to plot".to_string());
    }
    let varied_keys = match (&summary, &plan, runs.first()) {
        (Some(s), _, _) => s.keys.clone(),
        (None, Some(plan), _) => plan_varied(plan).into_iter().map(|(k, _)| k).collect(),
        (None, None, Some(run)) => run.record.varied.iter().map(|(k, _)| k.clone()).collect(),
        (None, None, None) => Vec::new(),
    };
    Ok(ExperimentData {
        dir: dir.to_path_buf(),
        plan,
        environment,
        varied_keys,
        runs,
        left_out,
        notes,
    })
}

/// `plan.toml` as a TOML table. It is not checked again as a plan: its relative paths were the
/// original plan folder's, not this directory's.
fn read_plan(path: &Path, notes: &mut Vec<String>) -> Option<toml::Table> {
    ldplayer_output::protect_input(path);
    let text = match std::fs::read_to_string(path) {
        Ok(text) => text,
        Err(e) => {
            notes.push(format!("{}: {e}", path.display()));
            return None;
        }
    };
    match text.parse::<toml::Table>() {
        Ok(table) => Some(table),
        Err(e) => {
            notes.push(format!("{}: not TOML: {}", path.display(), e.message()));
            None
        }
    }
}

/// The `[vary]` keys of a plan with their values as `summary.csv` shows them.
pub(super) fn plan_varied(plan: &toml::Table) -> Vec<(String, Vec<String>)> {
    let Some(vary) = plan.get("vary").and_then(toml::Value::as_table) else {
        return Vec::new();
    };
    vary.iter()
        .map(|(key, values)| {
            let values = match values {
                toml::Value::Array(list) => list.iter().map(value_label).collect(),
                other => vec![value_label(other)],
            };
            (key.clone(), values)
        })
        .collect()
}

/// A plan value as `summary.csv` and run names show it.
pub(super) fn value_label(value: &toml::Value) -> String {
    match value {
        toml::Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

fn read_environment(path: &Path, notes: &mut Vec<String>) -> Option<Environment> {
    ldplayer_output::protect_input(path);
    let text = match std::fs::read(path) {
        Ok(text) => text,
        Err(e) => {
            notes.push(format!("{}: {e}", path.display()));
            return None;
        }
    };
    match serde_json::from_slice(&text) {
        Ok(environment) => Some(environment),
        Err(e) => {
            notes.push(format!("{}: {e}", path.display()));
            None
        }
    }
}

/// Every finished run under `runs_dir`, in plan order (their ids start with their number).
fn read_runs(
    runs_dir: &Path,
    summary: Option<&SummaryTable>,
    notes: &mut Vec<String>,
    left_out: &mut Vec<String>,
) -> Result<Vec<RunData>, ReportError> {
    if !runs_dir.is_dir() {
        notes.push(format!("{} is missing: no run to show", runs_dir.display()));
        return Ok(Vec::new());
    }
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(runs_dir)
        .map_err(|source| ReportError::Io {
            path: runs_dir.to_path_buf(),
            source,
        })?
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.is_dir())
        .collect();
    dirs.sort();
    let mut runs = Vec::new();
    for run_dir in dirs {
        match read_run(&run_dir, summary, notes) {
            Ok(run) => runs.push(run),
            Err(name) => left_out.push(name),
        }
    }
    Ok(runs)
}

/// The run in `run_dir` if it finished; otherwise its name, and a note says why it is left
/// out.
fn read_run(
    run_dir: &Path,
    summary: Option<&SummaryTable>,
    notes: &mut Vec<String>,
) -> Result<RunData, String> {
    let name = run_dir
        .file_name()
        .map_or_else(String::new, |n| n.to_string_lossy().into_owned());
    let record_path = run_dir.join("run.json");
    ldplayer_output::protect_input(&record_path);
    let text = match std::fs::read(&record_path) {
        Ok(text) => text,
        Err(_) => {
            notes.push(match failure(run_dir) {
                Some(why) => format!("run {name} failed and is left out: {why}"),
                None => format!("run {name} did not finish (no run.json) and is left out"),
            });
            return Err(name);
        }
    };
    let record: RunRecord = match serde_json::from_slice(&text) {
        Ok(record) => record,
        Err(e) => {
            notes.push(format!(
                "run {name} is left out: {}: {e}",
                record_path.display()
            ));
            return Err(name);
        }
    };
    if record.status == Status::Failed {
        let why = record.error.as_deref().unwrap_or("no reason given");
        notes.push(format!("run {name} failed and is left out: {why}"));
        return Err(name);
    }
    let samples_path = run_dir.join("samples.csv");
    let samples = read_samples(&samples_path).unwrap_or_else(|e| {
        notes.push(format!("run {name}: {e}: no time series"));
        Vec::new()
    });
    let metrics: BTreeMap<_, _> = summary
        .map(|s| {
            s.rows
                .iter()
                .filter(|r| r.run == record.id)
                .map(|r| (r.metric.clone(), r.dist))
                .collect()
        })
        .unwrap_or_default();
    if summary.is_some() && metrics.is_empty() {
        notes.push(format!(
            "run {name} has no rows in summary.csv: it is left out of the boxplots"
        ));
    }
    let latency = match &record.outputs {
        Some(outputs) => {
            let window = Window {
                start_ns: outputs.replay.start_ns,
                warmup_s: record.settings.warmup_s,
                duration_s: record.settings.replay_s(&record.trace),
            };
            let results = run_dir.join("results.res");
            match read_latency(&results, window) {
                Ok((hist, damage)) => {
                    if !damage.is_clean() {
                        notes.push(format!("run {name}: {}: {damage}", results.display()));
                    }
                    Some(hist)
                }
                Err(e) => {
                    notes.push(format!(
                        "run {name}: {}: {e}: no latency CCDF",
                        results.display()
                    ));
                    None
                }
            }
        }
        None => {
            notes.push(format!(
                "run {name}: run.json has no outputs: no latency CCDF"
            ));
            None
        }
    };
    let results = run_dir.join("results.res");
    let capacity = match ldplayer_results::Capacity::of_file(&results) {
        Ok(c) => c,
        Err(e) => {
            notes.push(format!(
                "run {name}: reading {}: {e}: no capacity",
                results.display()
            ));
            None
        }
    };
    Ok(RunData {
        repeat: repeat_of(&record.id),
        record,
        samples,
        metrics,
        latency,
        capacity,
    })
}

/// Why a run failed, from the `failed.json` the plan leaves beside its files.
fn failure(run_dir: &Path) -> Option<String> {
    let text = std::fs::read(run_dir.join("failed.json")).ok()?;
    let record: RunRecord = serde_json::from_slice(&text).ok()?;
    Some(record.error.unwrap_or_else(|| "no reason given".into()))
}

/// The repeat of a run from its id's `-rN` suffix (1 when there is none).
fn repeat_of(id: &str) -> u32 {
    id.rsplit_once("-r")
        .and_then(|(_, n)| n.parse().ok())
        .unwrap_or(1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn repeats_come_from_the_id() {
        assert_eq!(repeat_of("001-proto=tcp+rtt_ms=20-r1"), 1);
        assert_eq!(repeat_of("012-proto=tls-r3"), 3);
        assert_eq!(repeat_of("weird"), 1);
    }

    #[test]
    fn the_plan_gives_its_varied_values_as_labels() {
        let plan: toml::Table = "[vary]\nproto = [\"udp\", \"tcp\"]\nloss = [0, 0.02]\n"
            .parse()
            .unwrap();
        assert_eq!(
            plan_varied(&plan),
            vec![
                (
                    "proto".to_string(),
                    vec!["udp".to_string(), "tcp".to_string()]
                ),
                (
                    "loss".to_string(),
                    vec!["0".to_string(), "0.02".to_string()]
                ),
            ]
        );
    }
}
