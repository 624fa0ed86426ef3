//! `summary.csv`: one tidy row per run and metric, with the run's varied values, so that
//! pandas or R can plot a plan's results directly.
//!
//! The file's form, its writer and reader, the samples and the [`Distribution`]s are in
//! `ldplayer-study` (re-exported here); this module computes a run's rows:
//! - [`rows_for_run`]: a run's rows from its results file and samples.

mod metrics;
pub mod steady;

pub use ldplayer_study::summary::{header, SummaryCsv, SummaryRow};
pub use ldplayer_study::{client_latency_ns, measured_at_s};
pub use ldplayer_study::{percentile, Distribution};
pub use ldplayer_study::{read_samples, Sample, SampleError, SamplesWriter, SAMPLE_COLUMNS};
pub use metrics::{rows_for_run, rows_for_spec, RunMeasurements, SummaryError, METRICS};
