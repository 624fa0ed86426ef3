//! What one input measured: named values, each knowing which way is worse.

use serde::Serialize;
use std::collections::BTreeMap;
use std::path::PathBuf;

/// Which change of a metric is a regression.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Worse {
    /// More is worse: latency, memory, CPU, timeouts, SERVFAIL.
    Higher,
    /// Less is worse: the answered share, the NOERROR share.
    Lower,
    /// Neither way is better, any change is one to watch: bytes on the wire, the connections
    /// the trace alone predicts.
    Either,
}

/// What kind of input a comparison reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum InputKind {
    /// A replay's results file (`ldplayer replay --results`).
    Replay,
    /// An experiment's folder (`ldplayer experiment -o DIR`).
    Experiment,
}

impl InputKind {
    /// `a replay results file` or `an experiment directory`, for messages.
    pub fn described(self) -> &'static str {
        match self {
            InputKind::Replay => "a replay results file",
            InputKind::Experiment => "an experiment directory",
        }
    }
}

/// One measured value.
#[derive(Debug, Clone, PartialEq)]
pub struct Measure {
    /// The metric without its run: `latency_ms.udp.p50`, `server_rss_mib.p50`.
    pub metric: String,
    /// The experiment run it belongs to (`None` for a replay).
    pub run: Option<String>,
    /// Which change is a regression.
    pub worse: Worse,
    /// The value.
    pub value: f64,
}

impl Measure {
    /// The full name a bound can give: the metric, then `@RUN` for a run of an experiment.
    pub fn name(&self) -> String {
        full_name(&self.metric, self.run.as_deref())
    }
}

/// `metric` or `metric@run`.
pub fn full_name(metric: &str, run: Option<&str>) -> String {
    match run {
        Some(run) => format!("{metric}@{run}"),
        None => metric.to_string(),
    }
}

/// How a replayed trace is recognized: the queries it had and its first query's trace time.
/// Two replays of one trace agree on both.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct TraceMark {
    /// Results in the file: one per query of the trace.
    pub queries: u64,
    /// The earliest trace time of a query, ns since the epoch (`None` for an empty file).
    pub first_trace_ns: Option<i64>,
}

/// Everything one input measured, in the order it is shown.
#[derive(Debug, Clone, PartialEq)]
pub struct Measured {
    /// What the input is.
    pub kind: InputKind,
    /// Where it was read.
    pub path: PathBuf,
    /// The values.
    pub measures: Vec<Measure>,
    /// The trace of each results file read, by run (`""` for a replay).
    pub traces: BTreeMap<String, TraceMark>,
    /// The runs of an experiment, in its order (empty for a replay).
    pub runs: Vec<String>,
    /// The keys an experiment varies (the columns of its `summary.csv` between `run` and
    /// `metric`), in its `[vary]` order; empty for a replay.
    pub varied_keys: Vec<String>,
    /// Each run's values of [`Measured::varied_keys`], in that order: what pairs a run with
    /// the other experiment's. A run missing here pairs only by its name.
    pub varied: BTreeMap<String, Vec<String>>,
    /// A replay's results by transport (`udp` → queries replayed over UDP, answered or not):
    /// which transports it used at all.
    pub queries_by_proto: BTreeMap<String, u64>,
    /// What was noticed while reading (damaged blocks skipped, runs without results).
    pub notes: Vec<String>,
}

impl Measured {
    /// Nothing measured yet.
    pub fn new(kind: InputKind, path: PathBuf) -> Measured {
        Measured {
            kind,
            path,
            measures: Vec::new(),
            traces: BTreeMap::new(),
            runs: Vec::new(),
            varied_keys: Vec::new(),
            varied: BTreeMap::new(),
            queries_by_proto: BTreeMap::new(),
            notes: Vec::new(),
        }
    }

    /// Adds a value (NaN, which `summary.csv` leaves empty, is no value).
    pub fn push(&mut self, metric: String, run: Option<&str>, worse: Worse, value: f64) {
        if value.is_finite() {
            self.measures.push(Measure {
                metric,
                run: run.map(str::to_string),
                worse,
                value,
            });
        }
    }
}
