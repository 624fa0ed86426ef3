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
    let path = dir.join("differences.csv");
    let csv =
        write_records(&table(plan, &runs, &out)).map_err(|e| ExperimentError::io(&path, e))?;
    ldplayer_output::write(&path, &csv).map_err(|e| ExperimentError::io(&path, e.into()))?;
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

/// The records of `differences.csv`, its header first.
fn table(plan: &Plan, runs: &[RunSpec], diffs: &[RunDiff]) -> Vec<Vec<String>> {
    let mut header = vec!["run".to_string()];
    header.extend(plan.varied_keys());
    header.extend(
        [
            "base",
            "field",
            "queries",
            "share_pct",
            "compared",
            "unstable",
            "not_compared",
        ]
        .map(str::to_string),
    );
    let mut out = vec![header];
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
            let mut record = vec![d.run.clone()];
            record.extend(varied.iter().cloned());
            record.extend([
                d.base.clone(),
                field.to_string(),
                queries.to_string(),
                format!("{share:.4}"),
                c.compared.to_string(),
                c.unstable.to_string(),
                c.not_compared.to_string(),
            ]);
            out.push(record);
        };
        row("any", c.different, r.different_pct);
        for f in &r.fields {
            row(f.field.name(), f.queries, f.share_pct);
        }
    }
    out
}

/// `records` as CSV through the `csv` crate: a field holding a comma, a quote or a line break
/// (a varied value) is quoted.
fn write_records(records: &[Vec<String>]) -> Result<Vec<u8>, std::io::Error> {
    let mut out = csv::WriterBuilder::new()
        .has_headers(false)
        .flexible(true)
        .terminator(csv::Terminator::Any(b'\n'))
        .from_writer(Vec::new());
    for record in records {
        out.write_record(record)?;
    }
    out.into_inner().map_err(|e| e.into_error())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(fields: &[&str]) -> Vec<String> {
        fields.iter().map(|f| f.to_string()).collect()
    }

    #[test]
    fn ordinary_rows_are_written_as_before_and_odd_values_quoted() {
        let records = [
            record(&["run", "kind", "base", "field", "queries", "share_pct"]),
            record(&[
                "002-kind=kresd-r1",
                "kresd",
                "001-r1",
                "any",
                "42",
                "10.5000",
            ]),
            record(&["003-x", "a,\"b\"\nc", "001-r1", "flags.aa", "1", "0.2500"]),
        ];
        let text = String::from_utf8(write_records(&records).unwrap()).unwrap();
        assert_eq!(
            text,
            "run,kind,base,field,queries,share_pct\n\
             002-kind=kresd-r1,kresd,001-r1,any,42,10.5000\n\
             003-x,\"a,\"\"b\"\"\nc\",001-r1,flags.aa,1,0.2500\n"
        );
        let back: Vec<Vec<String>> = csv::ReaderBuilder::new()
            .has_headers(false)
            .from_reader(text.as_bytes())
            .records()
            .map(|r| r.unwrap().iter().map(str::to_string).collect())
            .collect();
        assert_eq!(back, records);
    }
}
