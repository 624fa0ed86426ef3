//! What can go wrong while reading inputs and writing reports.

use std::path::PathBuf;

/// Why a report, a figure or a comparison could not be made.
#[derive(Debug, thiserror::Error)]
pub enum ReportError {
    /// A file could not be read or written.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// What the system said.
        source: std::io::Error,
    },
    /// A results file could not be read at all (later damage is reported, not fatal).
    #[error("{path}: {source}")]
    Results {
        /// The results file.
        path: PathBuf,
        /// Why.
        source: ldplayer_results::ResultsError,
    },
    /// An input is neither a results file nor an experiment directory.
    #[error("{path}: neither a replay results file nor an experiment directory ({why})")]
    UnknownInput {
        /// The input.
        path: PathBuf,
        /// What was looked for and not found.
        why: String,
    },
    /// A file of an experiment directory is malformed.
    #[error("{path}: {why}")]
    Malformed {
        /// The file.
        path: PathBuf,
        /// What is wrong, with the line when known.
        why: String,
    },
    /// A figure could not be drawn.
    #[error("figure {figure}: {why}")]
    Draw {
        /// The figure's id.
        figure: String,
        /// What the plotting library said.
        why: String,
    },
    /// The two inputs of a comparison are not of the same kind.
    #[error(
        "{} is {base_kind} and {} is {new_kind}: compare two replays' results files or two \
         experiment directories",
        base.display(),
        new.display()
    )]
    KindMismatch {
        /// The first input.
        base: PathBuf,
        /// What it is.
        base_kind: &'static str,
        /// The second input.
        new: PathBuf,
        /// What it is.
        new_kind: &'static str,
    },
    /// An `--as BASE=NEW` transport pair is malformed, or names a transport a side did not
    /// use.
    #[error("--as {given}: {why}")]
    TransportPair {
        /// The pair as given.
        given: String,
        /// What is wrong.
        why: String,
    },
    /// A `--max-regression` bound names no metric the comparison has, or is malformed.
    #[error("regression bound {bound:?}: {why}")]
    Bound {
        /// The bound as given.
        bound: String,
        /// What is wrong.
        why: String,
    },
}
