use crate::capture::Deferred;
use crate::input::CorruptStream;
use crate::record::{Record, RecordBuf};
use crate::skip::{SkipCounts, SkipReason};
use ldplayer_dns::DnsError;
use std::io;
use thiserror::Error;

/// Why a sink could not take a record.
#[derive(Debug, Error)]
pub enum SinkError {
    /// Writing the output failed.
    #[error(transparent)]
    Io(#[from] io::Error),
    /// The sink wants no more records (a limit was reached, the user pressed Ctrl-C). Sources stop
    /// quietly on it.
    #[error("stopped")]
    Stopped,
    /// The record cannot be taken for another reason.
    #[error("{0}")]
    Other(String),
}

/// Why reading a trace failed as a whole.
#[derive(Debug, Error)]
pub enum TraceError {
    /// Reading the input failed.
    #[error(transparent)]
    Io(#[from] io::Error),
    /// The input is not a trace of the expected format, or is damaged beyond skipping.
    #[error("{0}")]
    Format(String),
    /// The sink failed.
    #[error(transparent)]
    Sink(SinkError),
    /// The compressed stream is corrupt: what came before the damaged frame was read; the
    /// records of that frame were dropped, or said to be suspect (see [`crate::open`]).
    #[error("{0}")]
    Corrupt(Box<CorruptStream>),
}

impl From<SinkError> for TraceError {
    fn from(e: SinkError) -> Self {
        TraceError::Sink(e)
    }
}

/// A consumer of records: a writer, the inspector, the replay engine.
///
/// Sources call [`Sink::record`] once per message in trace order, [`Sink::skipped`] for each item
/// they could not use, and [`Sink::finish`] once at the end, also after a sink error, so that
/// what was written is flushed.
pub trait Sink {
    /// Takes one record.
    fn record(&mut self, record: &Record<'_>) -> Result<(), SinkError>;

    /// Notes that the source skipped an item (a packet, message, line or record) for `reason`;
    /// `location` is the item's position in the input (packet, line or record number, from 1).
    fn skipped(&mut self, reason: SkipReason, location: u64) {
        let _ = (reason, location);
    }

    /// Notes that the record just passed to [`Sink::record`] holds a malformed DNS message (its
    /// header reads, the rest may not), kept for its bytes: real traffic holds such messages and
    /// servers spend work on them. `error` is the first fault found; `location` is as for
    /// [`Sink::skipped`].
    fn malformed(&mut self, error: DnsError, location: u64) {
        let _ = (error, location);
    }

    /// Takes a part of a capture that a reader in split mode left undecoded (see
    /// [`Deferred`]), in order among the records. Only the sinks of [`crate::many`] ask for
    /// split mode; any other sink refuses.
    fn deferred(&mut self, part: Deferred<'_>) -> Result<(), SinkError> {
        let _ = part;
        Err(SinkError::Other(
            "a capture read in split mode went to a sink that cannot join it".into(),
        ))
    }

    /// Flushes whatever is buffered; called once when the source is done.
    fn finish(&mut self) -> Result<(), SinkError> {
        Ok(())
    }
}

/// Implements [`Sink`] for a pointer type to a sink by handing every call to the sink it points
/// to (a blanket impl over `DerefMut` would collide with the sinks' own impls).
macro_rules! forward_sink {
    ($pointer:ty) => {
        impl<S: Sink + ?Sized> Sink for $pointer {
            fn record(&mut self, record: &Record<'_>) -> Result<(), SinkError> {
                (**self).record(record)
            }
            fn skipped(&mut self, reason: SkipReason, location: u64) {
                (**self).skipped(reason, location)
            }
            fn malformed(&mut self, error: DnsError, location: u64) {
                (**self).malformed(error, location)
            }
            fn deferred(&mut self, part: Deferred<'_>) -> Result<(), SinkError> {
                (**self).deferred(part)
            }
            fn finish(&mut self) -> Result<(), SinkError> {
                (**self).finish()
            }
        }
    };
}

forward_sink!(&mut S);
forward_sink!(Box<S>);

/// A producer of records: a capture reader, a trace-format reader, the synthesizer.
pub trait Source {
    /// Pushes every record into `sink`, then calls [`Sink::finish`]. A [`SinkError::Stopped`]
    /// from the sink ends the run without error.
    fn run(&mut self, sink: &mut dyn Sink) -> Result<(), TraceError>;
}

/// Drives `sink` to the end: runs `body`, then always calls `finish`, and maps `Stopped` to success.
pub fn drive(
    sink: &mut dyn Sink,
    body: impl FnOnce(&mut dyn Sink) -> Result<(), TraceError>,
) -> Result<(), TraceError> {
    let result = body(sink);
    let finished = sink.finish();
    match result {
        Err(TraceError::Sink(SinkError::Stopped)) | Ok(()) => finished.map_err(TraceError::Sink),
        Err(e) => Err(e),
    }
}

/// A sink that keeps every record and counts skips; handy for tests and small traces.
#[derive(Debug, Default)]
pub struct Collect {
    /// The records, in order.
    pub records: Vec<RecordBuf>,
    /// What the source skipped.
    pub skipped: SkipCounts,
    /// The records noted as malformed, by reason (`SkipReason::Dns`).
    pub malformed: SkipCounts,
}

impl Sink for Collect {
    fn record(&mut self, record: &Record<'_>) -> Result<(), SinkError> {
        self.records.push(record.to_owned_record());
        Ok(())
    }
    fn skipped(&mut self, reason: SkipReason, _location: u64) {
        self.skipped.add(reason);
    }
    fn malformed(&mut self, error: DnsError, _location: u64) {
        self.malformed.add(SkipReason::Dns(error));
    }
}
