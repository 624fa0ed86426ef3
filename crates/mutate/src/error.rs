//! Why a configuration cannot be used.

use ldplayer_dns::NameError;
use thiserror::Error;

/// A configuration the mutator rejects, found by [`crate::Mutator::new`] before any record.
#[derive(Debug, Clone, PartialEq, Error)]
pub enum MutateError {
    /// A share (fraction) outside `[0, 1]`.
    #[error("{name} must be between 0 and 1, not {value}")]
    BadShare {
        /// Which share.
        name: &'static str,
        /// The value given.
        value: f64,
    },
    /// A time window with a negative or non-finite bound, or one that ends before it starts.
    #[error("bad time window: {0}")]
    BadWindow(&'static str),
    /// A time scale factor that is not positive and finite.
    #[error("the time scale factor must be positive and finite, not {0}")]
    BadScale(f64),
    /// A filter given an empty list, which would drop everything.
    #[error("the {0} filter has an empty list")]
    EmptyList(&'static str),
    /// A qname suffix that is not a domain name.
    #[error("bad name `{name}`: {source}")]
    BadName {
        /// The name given.
        name: String,
        /// What is wrong with it.
        #[source]
        source: NameError,
    },
    /// A qname prefix that is too long or has characters other than letters, digits and hyphens.
    #[error("bad qname prefix `{0}`: use at most 47 letters, digits or hyphens")]
    BadLabelPrefix(String),
    /// An edit given twice.
    #[error("{0} given more than once")]
    Duplicate(&'static str),
    /// Two edits that contradict each other.
    #[error("{0} and {1} cannot be combined")]
    Conflict(&'static str, &'static str),
    /// A time edit that moves a record's time out of the range a time can hold; found at that
    /// record, and returned by the mutator's `record` as a sink error that ends the run.
    #[error(
        "{mutation} {value} moves record {record} (at {} s) out of the times a trace can hold: {}",
        seconds(*time_ns),
        ldplayer_trace::TIME_RANGE
    )]
    TimeOutOfRange {
        /// Which edit: `time-scale` or `time-shift`.
        mutation: &'static str,
        /// Its value as given (a factor, or seconds).
        value: String,
        /// The record, from 1.
        record: u64,
        /// The record's time before the edit.
        time_ns: i64,
    },
}

/// A time as seconds with nine decimals.
fn seconds(time_ns: i64) -> String {
    let mut s = String::new();
    ldplayer_trace::format_time(time_ns, &mut s);
    s
}
