//! From a finished run's folder to its rows of `summary.csv`: the results and samples it left,
//! the non-busy clients and the connections model read from its trace.

use std::path::Path;

use crate::error::ExperimentError;
use crate::experiment::RunRecord;
use crate::model::{connection_model, IndexSet};
use crate::plan::{Plan, RunSpec};
use crate::summary::{read_samples, rows_for_run, RunMeasurements, SummaryCsv, SummaryRow};

/// The rows of the run in `run_dir`, whose record is `record`.
pub fn summary_rows(
    spec: &RunSpec,
    run_dir: &Path,
    record: &RunRecord,
) -> Result<Vec<SummaryRow>, ExperimentError> {
    let settings = &record.settings;
    let outputs = record
        .outputs
        .as_ref()
        .ok_or_else(|| ExperimentError::Input(format!("run {} has no outputs", spec.id)))?;
    let samples_path = run_dir.join("samples.csv");
    let samples = read_samples(&samples_path)
        .map_err(|e| ExperimentError::Input(format!("{}: {e}", samples_path.display())))?;
    let trace = &record.trace_file;
    let idle = settings.server.idle_timeout();
    let model = connection_model(trace, &[idle])
        .map_err(|e| ExperimentError::Trace(format!("{}: {e}", trace.display())))?;
    let nonbusy: IndexSet = model
        .nonbusy_queries(
            trace,
            &crate::model::read_options(),
            settings.trace.nonbusy_max_queries,
        )
        .map_err(|e| ExperimentError::Trace(format!("{}: {e}", trace.display())))?;
    let series = settings
        .is_connection_oriented()
        .then(|| model.open(idle))
        .flatten();
    let varied: Vec<String> = spec.varied.iter().map(|(_, v)| v.clone()).collect();
    let measurements = RunMeasurements {
        results: &run_dir.join("results.res"),
        samples: &samples,
        start_ns: outputs.replay.start_ns,
        warmup_s: settings.warmup_s,
        duration_s: settings.replay_s(&record.trace),
        nonbusy: Some(&nonbusy),
        model_connections: series,
        upstream: outputs.upstream.as_ref(),
    };
    let mut rows = rows_for_run(&spec.id, &varied, &measurements)
        .map_err(|e| ExperimentError::Input(format!("summarising run {}: {e}", spec.id)))?;
    if let Some(c) = capacity(measurements.results)? {
        rows.push(crate::summary::SummaryRow {
            run: spec.id.clone(),
            varied,
            metric: CAPACITY_METRIC.to_string(),
            dist: crate::summary::Distribution::of(&[c.capacity_qps]),
        });
    }
    Ok(rows)
}

/// The row of a ramp's capacity (`[client] mode = "ramp"`): one value per run, the highest
/// answer rate before the first second over the bounds, as `replay --ramp-to` reports it.
pub const CAPACITY_METRIC: &str = "capacity_qps";

/// The capacity of the ramp whose results are at `path`, if they are a ramp's.
pub fn capacity(path: &Path) -> Result<Option<ldplayer_results::CapacityReport>, ExperimentError> {
    ldplayer_results::Capacity::of_file(path)
        .map_err(|e| ExperimentError::Input(format!("reading {}: {e}", path.display())))
}

/// Writes `summary.csv` with every row so far (rewritten whole, so that it is always
/// complete for the runs it lists).
pub fn write_summary(path: &Path, plan: &Plan, rows: &[SummaryRow]) -> Result<(), ExperimentError> {
    let partial = path.with_extension("csv.partial");
    let mut csv = SummaryCsv::create(&partial, &plan.varied_keys())
        .map_err(|e| ExperimentError::io(&partial, e))?;
    csv.write_rows(rows)
        .and_then(|()| csv.flush())
        .map_err(|e| ExperimentError::io(&partial, e))?;
    drop(csv);
    std::fs::rename(&partial, path).map_err(|e| ExperimentError::io(path, e))
}
