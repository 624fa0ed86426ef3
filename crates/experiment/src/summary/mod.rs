//! `summary.csv`: one tidy row per run and metric, with the run's varied values, so that
//! pandas or R can plot a plan's results directly.
//!
//! - [`Distribution`]: the percentiles and mean of a metric's values.
//! - [`SummaryCsv`]: the file, its header fixed by the plan's varied keys.
//! - [`Sample`]: one line of a run's `samples.csv`, the server's and link's state each second.
//! - [`rows_for_run`]: a run's rows from its results file and samples.

mod csv;
mod distribution;
mod metrics;
mod sample;
pub mod steady;

pub use self::csv::{header, SummaryCsv, SummaryRow};
pub use distribution::{percentile, Distribution};
pub use metrics::{
    client_latency_ns, measured_at_s, rows_for_run, rows_for_spec, RunMeasurements, SummaryError,
    METRICS,
};
pub use sample::{read_samples, Sample, SampleError, SamplesWriter, SAMPLE_COLUMNS};
