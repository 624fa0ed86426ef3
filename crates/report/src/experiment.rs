//! The figures of an experiment directory (`ldplayer experiment PLAN.toml -o DIR`).
//!
//! [`ExperimentData::read`] gathers what a directory holds: the plan, the machine, every
//! finished run's record and samples, `summary.csv`, and each run's latency distribution
//! streamed from its results file into an HdrHistogram. [`sections`] turns one or several of
//! them into the report's sections, after the paper's figures:
//! * boxplots of p5/p25/p50/p75/p95 per varied value, one per metric (Figures 10, 11, 13, 14,
//!   15), from `summary.csv`;
//! * the server's memory and established connections over time, one line per run;
//! * the measured established connections beside the connection model;
//! * the latency CCDF per protocol (as Jonglez et al. under loss);
//! * for ramp runs, their capacity, TCP's and DoT's as a share of UDP's, and answers and
//!   latency against the offered rate with the knee.
//!
//! Runs that did not finish or failed are left out of every figure and named in the notes;
//! a figure whose metric no run has is left out with a sentence saying why.

mod boxes;
mod capacity;
mod ccdf;
mod connections;
mod findings;
mod header;
mod latency;
mod layout;
mod read;
mod timeseries;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use hdrhistogram::Histogram;
use ldplayer_study::{Distribution, Environment, RunRecord, Sample};

use crate::error::ReportError;
use crate::html::Section;

/// What an experiment directory holds, as far as it could be read.
#[derive(Debug, Clone)]
pub struct ExperimentData {
    dir: PathBuf,
    plan: Option<toml::Table>,
    environment: Option<Environment>,
    varied_keys: Vec<String>,
    runs: Vec<RunData>,
    left_out: Vec<String>,
    notes: Vec<String>,
}

/// One finished run of an experiment: its record, samples, summary and latencies.
#[derive(Debug, Clone)]
pub struct RunData {
    /// Its `run.json`.
    pub record: RunRecord,
    /// Which repeat of its combination of varied values it is, from 1 (the `-rN` of its id).
    pub repeat: u32,
    /// Its `samples.csv`, in time order (empty when the file could not be read: see the notes).
    pub samples: Vec<Sample>,
    /// Its rows of `summary.csv`, by metric.
    pub metrics: BTreeMap<String, Distribution>,
    /// Latencies in ns of the answered queries `summary.csv` counts (due after warm-up and up
    /// to the trace's end; a new connection's set-up included for the query that opened it);
    /// `None` when its results file could not be read (see the notes).
    pub latency: Option<Histogram<u64>>,
    /// A ramp run's capacity and seconds (`[client] mode = "ramp"`), from its results file.
    pub capacity: Option<ldplayer_results::CapacityReport>,
}

impl ExperimentData {
    /// Reads the experiment directory `dir`. Fails when `dir` cannot be read, is no experiment
    /// directory (none of `plan.toml`, `summary.csv`, `runs/`), or its `summary.csv` is
    /// malformed; what is missing or damaged beyond that (a run that did not finish, a results
    /// file cut short) is left out and said in [`notes`](Self::notes).
    pub fn read(dir: &Path) -> Result<ExperimentData, ReportError> {
        read::read(dir)
    }

    /// The directory it was read from.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// What could not be read or was left out, one sentence each.
    pub fn notes(&self) -> &[String] {
        &self.notes
    }

    /// The finished runs, in plan order.
    pub fn runs(&self) -> &[RunData] {
        &self.runs
    }

    /// The folders of `runs/` left out of every figure: runs that failed, did not finish or
    /// whose `run.json` could not be read (the notes say which and why).
    pub fn left_out(&self) -> &[String] {
        &self.left_out
    }

    /// The varied keys, in the plan's `[vary]` order.
    pub fn varied_keys(&self) -> &[String] {
        &self.varied_keys
    }

    /// The machine and versions it ran on, when `environment.json` could be read.
    pub fn environment(&self) -> Option<&Environment> {
        self.environment.as_ref()
    }

    /// Facts for the report's header: the plan (file, varied keys and values, repeats,
    /// warm-up), the trace, ldplayer's version, the kernel, CPU, cores, memory, the server's
    /// kind and versions, and how many runs finished.
    pub fn header(&self) -> Vec<(String, String)> {
        header::header(self)
    }
}

impl RunData {
    /// The run's id (its folder's name).
    pub fn id(&self) -> &str {
        &self.record.id
    }

    /// The value of the varied key `key` in this run.
    pub fn varied(&self, key: &str) -> Option<&str> {
        self.record
            .varied
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.as_str())
    }

    /// Its varied values as `proto=tcp idle_timeout_s=5` (and ` r2` for a repeat after the
    /// first), or its id when nothing is varied.
    pub fn label(&self) -> String {
        if self.record.varied.is_empty() {
            return self.record.id.clone();
        }
        let mut label = self
            .record
            .varied
            .iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect::<Vec<_>>()
            .join(" ");
        if self.repeat > 1 {
            label.push_str(&format!(" r{}", self.repeat));
        }
        label
    }

    /// The transport its clients used: the varied `proto`, or the plan's
    /// (`keep`: each query's own).
    pub fn proto(&self) -> &str {
        self.varied("proto")
            .unwrap_or(self.record.settings.trace.mutate.proto.as_str())
    }

    /// Its distribution of `metric` in `summary.csv`, when it has values.
    pub fn metric(&self, metric: &str) -> Option<&Distribution> {
        self.metrics.get(metric).filter(|d| d.n > 0)
    }

    /// Seconds after the start left out of the statistics.
    pub fn warmup_s(&self) -> f64 {
        self.record.settings.warmup_s
    }

    /// How long the replay lasted in seconds (the trace's length, a ramp's): samples later
    /// are the cool-down.
    pub fn duration_s(&self) -> f64 {
        self.record.settings.replay_s(&self.record.trace)
    }
}

/// The experiment sections of a report for `inputs` (label, data), shown side by side: the
/// findings and notes, the boxplots per metric, the time series, connections against the
/// model and the latency CCDFs. With several inputs, every box and curve is named after its
/// input's label too.
pub fn sections(inputs: &[(&str, &ExperimentData)]) -> Vec<Section> {
    let inputs = layout::Inputs::new(inputs);
    let mut sections = vec![findings::section(&inputs)];
    sections.extend(capacity::section(&inputs));
    sections.extend([
        boxes::section(&inputs),
        timeseries::section(&inputs),
        connections::section(&inputs),
        ccdf::section(&inputs),
    ]);
    sections
}
