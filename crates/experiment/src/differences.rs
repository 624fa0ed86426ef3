//! `[diff] base = "RUN"`: once the runs are done, every finished run's answers diffed against
//! its base run's, as `ldplayer diff BASE RUN` does (the run tested, the base its reference):
//! `runs/ID/diff.json` holds each run's whole report, and `differences.csv` at the top of the
//! experiment one row per run and field: `run`, the varied keys, `base`, `field` (`any` for a
//! query differing in some field), `queries`, `share_pct` (of the compared queries),
//! `compared`, `unstable`, `not_compared`.

use crate::error::ExperimentError;
use crate::experiment::{RunRecord, Status};
use crate::plan::{DiffPlan, Plan, RunSpec};
use ldplayer_diff::{Criteria, DiffReport, Options};
use std::fmt::Write as _;
use std::path::Path;

/// One run's differences against its base.
#[derive(Debug, Clone)]
pub struct RunDiff {
    /// The run.
    pub run: String,
    /// Its base.
    pub base: String,
    /// The diff, or why it could not be made.
    pub report: Result<DiffReport, String>,
}

/// Diffs every finished run of `plan` in `dir` against its base (the base itself aside), writes
/// the reports and `differences.csv`; the differences, in plan order.
pub fn diff_runs(
    plan: &Plan,
    d: &DiffPlan,
    dir: &Path,
    records: &[RunRecord],
) -> Result<Vec<RunDiff>, ExperimentError> {
    let criteria = match &d.criteria {
        Some(path) => {
            let text = std::fs::read_to_string(path).map_err(|e| ExperimentError::io(path, e))?;
            Criteria::from_toml(&text)
                .map_err(|e| ExperimentError::Input(format!("{}: {e}", path.display())))?
        }
        None => Criteria::default(),
    };
    let finished = |id: &str| {
        records
            .iter()
            .any(|r| r.id == id && matches!(r.status, Status::Finished | Status::Skipped))
    };
    let runs = plan.runs();
    let mut out = Vec::new();
    for run in &runs {
        let Some(base) = d.base_of(run, &runs) else {
            continue;
        };
        if base.id == run.id || !finished(&run.id) {
            continue;
        }
        let report = if finished(&base.id) {
            diff_one(dir, &base.id, &run.id, &criteria)
        } else {
            Err(format!("its base {} did not finish", base.id))
        };
        if let Ok(r) = &report {
            let json = serde_json::to_vec_pretty(r).unwrap_or_default();
            let path = dir.join("runs").join(&run.id).join("diff.json");
            ldplayer_output::write(&path, &json)
                .map_err(|e| ExperimentError::io(&path, e.into()))?;
        }
        out.push(RunDiff {
            run: run.id.clone(),
            base: base.id.clone(),
            report,
        });
    }
    let csv = table(plan, &runs, &out);
    let path = dir.join("differences.csv");
    ldplayer_output::write(&path, csv.as_bytes())
        .map_err(|e| ExperimentError::io(&path, e.into()))?;
    Ok(out)
}

/// `ldplayer diff BASE RUN` on two runs' results files.
fn diff_one(dir: &Path, base: &str, run: &str, criteria: &Criteria) -> Result<DiffReport, String> {
    let file = |id: &str| dir.join("runs").join(id).join("results.res");
    let options = Options {
        criteria: criteria.clone(),
        tested: Some(1),
        ..Options::default()
    };
    ldplayer_diff::diff(&[file(base), file(run)], &options, None)
        .map(|done| done.report(None, &[]))
        .map_err(|e| e.to_string())
}

/// `differences.csv`.
fn table(plan: &Plan, runs: &[RunSpec], diffs: &[RunDiff]) -> String {
    let keys = plan.varied_keys();
    let mut out = String::from("run");
    for k in &keys {
        out.push(',');
        out.push_str(k);
    }
    out.push_str(",base,field,queries,share_pct,compared,unstable,not_compared\n");
    for d in diffs {
        let Ok(r) = &d.report else {
            continue;
        };
        let varied: Vec<String> = runs
            .iter()
            .find(|s| s.id == d.run)
            .map(|s| s.varied.iter().map(|(_, v)| v.clone()).collect())
            .unwrap_or_default();
        let c = &r.counts;
        let mut row = |field: &str, queries: u64, share: f64| {
            let _ = write!(out, "{}", d.run);
            for v in &varied {
                let _ = write!(out, ",{v}");
            }
            let _ = writeln!(
                out,
                ",{},{field},{queries},{share:.4},{},{},{}",
                d.base, c.compared, c.unstable, c.not_compared
            );
        };
        row("any", c.different, r.different_pct);
        for f in &r.fields {
            row(f.field.name(), f.queries, f.share_pct);
        }
    }
    out
}
