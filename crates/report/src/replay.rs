//! The figures of one replay's results file, read in one pass in bounded memory.
//!
//! [`ReplayData::read`] reads a results file (written by `ldplayer replay --results`) once and
//! keeps what the figures need, in memory that does not grow with the number of queries:
//! HdrHistograms of latency per transport, of send timing error and of inter-arrival gaps, one
//! set of counters per second of the run, and a bounded window that puts results (which arrive
//! in completion order) back in trace order for the inter-arrival gaps. What could not be read
//! (damaged blocks, a last block cut short) is kept as sentences for the report
//! ([`ReplayData::notes`]).
//!
//! [`section`] draws one or several replays in one [`Section`](crate::Section): every figure overlays the
//! inputs, and every figure carries the table of the numbers it draws.

mod distribution;
mod figures;
mod interarrival;
mod ramp;
mod seconds;

use crate::error::ReportError;
use distribution::{Distribution, SignedDistribution};
use interarrival::{Interarrival, REORDER_WINDOW};
use ldplayer_results::{
    Capacity, CapacityReport, Damage, QueryResult, ResultsError, ResultsReader, Summary,
    SummaryReport,
};
use ldplayer_trace::Proto;
use seconds::Seconds;
use std::path::Path;

pub use figures::section;
pub(crate) use ramp::{answered as ramp_answered, latency as ramp_latency};

/// Longest latency told apart (1 hour, in ns), as in the replay's summary.
const LATENCY_MAX_NS: u64 = 3_600 * 1_000_000_000;
/// Largest timing error told apart (±100 s, in ns), as in the replay's summary.
const TIMING_MAX_NS: u64 = 100 * 1_000_000_000;

/// What the figures of a replay need from its results, gathered in one pass.
#[derive(Debug, Clone)]
pub struct ReplayData {
    summary: Summary,
    /// Latency in ns by transport code.
    latency: [Distribution; Proto::ALL.len()],
    /// Send timing error (sent − intended) in ns.
    timing: SignedDistribution,
    seconds: Seconds,
    interarrival: Interarrival,
    /// A ramp's seconds (`replay --ramp-to`), when the file's run info records a ramp.
    capacity: Option<Capacity>,
    damage: Damage,
    /// The warning that the run which wrote the file did not finish, if it did not.
    incomplete: Option<String>,
    notes: Vec<String>,
}

impl ReplayData {
    fn new() -> ReplayData {
        ReplayData {
            summary: Summary::new(),
            latency: std::array::from_fn(|_| Distribution::new(LATENCY_MAX_NS)),
            timing: SignedDistribution::new(TIMING_MAX_NS),
            seconds: Seconds::default(),
            interarrival: Interarrival::new(REORDER_WINDOW),
            capacity: None,
            damage: Damage::default(),
            incomplete: None,
            notes: Vec::new(),
        }
    }

    /// Reads the results file at `path` in one pass.
    ///
    /// Fails when the file cannot be read, is empty, is not a results file or is of a format
    /// version this build does not read. A file that is damaged or cut short is read as far as
    /// it can be: [`notes`](Self::notes) then says what was lost.
    pub fn read(path: &Path) -> Result<ReplayData, ReportError> {
        let io_error = |source| ReportError::Io {
            path: path.to_owned(),
            source,
        };
        let results_error = |source| match source {
            ResultsError::Io(source) => io_error(source),
            source => ReportError::Results {
                path: path.to_owned(),
                source,
            },
        };
        let meta = std::fs::metadata(path).map_err(io_error)?;
        if meta.is_dir() {
            return Err(ReportError::UnknownInput {
                path: path.to_owned(),
                why: "a directory was given where a results file was expected".to_string(),
            });
        }
        if meta.len() == 0 {
            return Err(ReportError::UnknownInput {
                path: path.to_owned(),
                why: "the file is empty, not even a results file header".to_string(),
            });
        }
        let mut reader = ResultsReader::open(path).map_err(results_error)?;
        let mut data = ReplayData::new();
        let start_ns = reader.run_info().and_then(|info| info.start_ns);
        data.seconds = Seconds::starting_at(start_ns);
        data.capacity = Capacity::for_run(reader.run_info());
        while let Some(r) = reader.next_result().map_err(results_error)? {
            data.add(&r);
        }
        data.incomplete = reader.incomplete_warning(path.display());
        data.finish(reader.damage());
        Ok(data)
    }

    /// Gathers results given in memory (in any order), as [`read`](Self::read) would from a
    /// file holding them.
    pub fn from_results<'a>(results: impl IntoIterator<Item = &'a QueryResult>) -> ReplayData {
        let mut data = ReplayData::new();
        for r in results {
            data.add(r);
        }
        data.finish(Damage::default());
        data
    }

    fn add(&mut self, r: &QueryResult) {
        self.summary.add(r);
        if let Some(ns) = r.latency_ns() {
            self.latency[r.proto as usize].record(ns.max(0) as u64);
        }
        if let Some(ns) = r.timing_error_ns() {
            self.timing.record(ns);
            self.interarrival.add(r.index, r.trace_ns, r.sent_ns);
        }
        self.seconds.add(r);
        if let Some(c) = &mut self.capacity {
            c.add(r);
        }
    }

    fn finish(&mut self, damage: Damage) {
        self.interarrival.finish();
        self.seconds.finish();
        self.damage = damage;
        self.notes = self.incomplete.iter().cloned().collect();
        self.notes
            .extend(notes(self.summary.results(), &damage, &self.interarrival));
        if self.seconds.before_start() > 0 {
            self.notes.push(format!(
                "{} due before the start the per-second figures count from (more than {}                  results completed before the trace's first query's): they count in its first                  second.",
                plural(self.seconds.before_start(), "result was", "results were"),
                seconds::PENDING
            ));
        }
    }

    /// The relative rate error, in %, of every whole second of the run, sorted: (sent − due)
    /// / due over the seconds of [`Summary::whole_seconds`], the definition of the summary's
    /// [`ldplayer_results::RateErrorReport`].
    pub(crate) fn rate_errors(&self) -> Vec<f64> {
        let mut errors: Vec<f64> = self
            .summary
            .whole_seconds()
            .into_iter()
            .map(|(due, sent)| (sent as f64 - due as f64) / due as f64 * 100.0)
            .collect();
        errors.sort_by(f64::total_cmp);
        errors
    }

    /// The replay's summary (counts, latency percentiles, timing and rate error), as
    /// `ldplayer replay` printed it, over the results that could be read.
    pub fn summary(&self) -> SummaryReport {
        self.summary.report()
    }

    /// A ramp's capacity and seconds, when the results are a ramp's (`replay --ramp-to`).
    pub fn capacity(&self) -> Option<CapacityReport> {
        self.capacity.as_ref().map(Capacity::report)
    }

    /// Results read.
    pub fn results(&self) -> u64 {
        self.summary.results()
    }

    /// What the reader skipped: damaged blocks, a last block cut short.
    pub fn damage(&self) -> Damage {
        self.damage
    }

    /// What could not be read or drawn, as sentences for the report (empty when everything
    /// was); the warning of [`incomplete`](Self::incomplete) first.
    pub fn notes(&self) -> &[String] {
        &self.notes
    }

    /// The warning, for the top of the report, that the run which wrote the file did not
    /// finish (killed, out of disk space, still running): its figures show part of a run.
    pub fn incomplete(&self) -> Option<&str> {
        self.incomplete.as_deref()
    }
}

fn plural(n: u64, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

/// The sentences saying what was lost.
fn notes(results: u64, damage: &Damage, interarrival: &Interarrival) -> Vec<String> {
    let mut notes = Vec::new();
    if damage.damaged_blocks > 0 {
        notes.push(format!(
            "{} failed their checks (framing or checksum) and were skipped.",
            plural(damage.damaged_blocks, "damaged block", "damaged blocks")
        ));
    }
    if damage.cut_short {
        notes.push(
            "The file ends in a block cut short (the replay was stopped while writing it, or \
             is still running): its results are missing."
                .to_string(),
        );
    }
    if let (n @ 1.., Some(at)) = (damage.trailing_garbage, damage.trailing_garbage_at) {
        notes.push(format!(
            "The file ends in {} of trailing garbage at offset {at}, after its last block: not \
             results.",
            plural(n, "byte", "bytes")
        ));
    }
    if damage.results_lost > 0 || damage.skipped_bytes > damage.trailing_garbage {
        notes.push(format!(
            "{} lost and {} not read; the figures show the {} that could be read.",
            plural(damage.results_lost, "result", "results"),
            plural(damage.skipped_bytes, "byte", "bytes"),
            plural(results, "result", "results"),
        ));
    }
    if damage.unknown_results > 0 {
        notes.push(format!(
            "{} of a transport or outcome this build does not know (written by a newer \
             ldplayer?) skipped.",
            plural(damage.unknown_results, "result", "results")
        ));
    }
    if results == 0 {
        notes.push("The file holds no results.".to_string());
    }
    if interarrival.too_late > 0 {
        notes.push(format!(
            "{} reached the file more than {REORDER_WINDOW} results after a later query of \
             the trace (long timeouts, typically) and could not be put back in trace order: \
             the inter-arrival figure leaves them out.",
            plural(interarrival.too_late, "result", "results")
        ));
    }
    notes
}
