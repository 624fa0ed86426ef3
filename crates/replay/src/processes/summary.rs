//! The summary of merged results, as a single replay would print it: what both front ends of a
//! split replay report once the shards are merged.

use super::error::ShardsError;
use ldplayer_results::{Capacity, CapacityReport, ResultsReader, Summary, SummaryReport};
use std::path::Path;

/// The summary of the results at `path`, with the capacity of a ramp when its run information
/// holds one (a ramp and its start).
pub fn summarize(path: &Path) -> Result<(SummaryReport, Option<CapacityReport>), ShardsError> {
    let read_error = |source| ShardsError::Results {
        path: path.to_path_buf(),
        source,
    };
    let mut reader = ResultsReader::open(path).map_err(read_error)?;
    let mut capacity = Capacity::for_run(reader.run_info());
    let mut summary = Summary::new();
    for r in &mut reader {
        let r = r.map_err(read_error)?;
        summary.add(&r);
        if let Some(c) = &mut capacity {
            c.add(&r);
        }
    }
    Ok((summary.report(), capacity.map(|c| c.report())))
}
