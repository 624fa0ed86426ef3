//! `summary.csv`: one tidy row per run and metric, with the run's varied values, so that
//! pandas or R can plot a plan's results directly. The experiment writes it ([`SummaryCsv`]),
//! the report reads it ([`read_summary`]).
//!
//! Its columns are an interface: `run`, the plan's varied keys in `[vary]` order, `metric`,
//! `p5`, `p25`, `p50`, `p75`, `p95`, `mean`, `n`.

pub(crate) mod read;
pub(crate) mod write;

use crate::Distribution;
use serde::{Deserialize, Serialize};

pub use read::{parse_summary, read_summary, SummaryReadError, SummaryTable};
pub use write::{header, header_fields, SummaryCsv};

/// The columns after the varied keys, in order.
pub const TAIL: [&str; 8] = ["metric", "p5", "p25", "p50", "p75", "p95", "mean", "n"];

/// One row: a metric of a run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SummaryRow {
    /// The run's name (its id, the name of its folder under `runs/`).
    pub run: String,
    /// The run's varied values, in the plan's `[vary]` order.
    pub varied: Vec<String>,
    /// The metric (`latency_ms`, `server_rss_mib`, ...).
    pub metric: String,
    /// Its distribution over the run.
    pub dist: Distribution,
}
