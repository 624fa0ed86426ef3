//! The on-disk form of a study (an experiment's output folder): what the experiment writes and
//! the report reads, in a crate of its own so that drawing a report does not build the replay
//! engine, the link emulator or the servers.
//!
//! - [`record`]: `run.json` and `failed.json` ([`RunRecord`], [`Status`], [`TraceFacts`]);
//! - [`environment`]: `environment.json` ([`Environment`]);
//! - [`samples`]: each run's `samples.csv` ([`Sample`], [`SamplesWriter`], [`read_samples`]);
//! - [`summary`]: the plan's `summary.csv` ([`SummaryRow`], [`SummaryCsv`], [`read_summary`]),
//!   whose figures are [`Distribution`]s;
//! - [`window`]: which queries the figures count, and the latency counted for each.
//!
//! The CSV files are written and read through the `csv` crate: any field, a varied value with a
//! comma, a quote or a line break included, reads back as written.

#![forbid(unsafe_code)]

pub mod distribution;
pub mod environment;
pub mod record;
pub mod samples;
pub mod summary;
pub mod window;

pub use distribution::{percentile, Distribution};
pub use environment::Environment;
pub use record::{
    server_version_alone, RecordedClient, RecordedMutate, RecordedOutputs, RecordedReplay,
    RecordedServer, RecordedSettings, RecordedTrace, RunRecord, Status, TraceFacts,
};
pub use samples::{read_samples, Sample, SampleError, SamplesWriter, SAMPLE_COLUMNS};
pub use summary::{
    header, parse_summary, read_summary, SummaryCsv, SummaryReadError, SummaryRow, SummaryTable,
};
pub use window::{client_latency_ns, measured_at_s};
