//! Checking the DNS message of every record a source passes on.
//!
//! The capture reader decides about malformed messages itself (it parses every message anyway,
//! and over TCP a message that does not parse may also mean lost framing). Text and binary traces
//! carry whatever bytes they were given, so their records go through [`CheckMessages`]: each
//! malformed message is either noted ([`Sink::malformed`]) and passed on, or skipped with its
//! `dns-*` reason.

use crate::record::Record;
use crate::sink::{Sink, SinkError, Source, TraceError};
use crate::skip::SkipReason;
use ldplayer_dns::{DnsError, Message};

/// A sink wrapper that parses the message of every record passing through it.
pub struct CheckMessages<S> {
    inner: S,
    drop_malformed: bool,
    records: u64,
}

impl<S: Sink> CheckMessages<S> {
    /// Wraps `inner`; with `drop_malformed`, malformed messages are skipped (with their `dns-*`
    /// reason) instead of being kept and noted.
    pub fn new(inner: S, drop_malformed: bool) -> Self {
        CheckMessages {
            inner,
            drop_malformed,
            records: 0,
        }
    }
}

impl<S: Sink> Sink for CheckMessages<S> {
    fn record(&mut self, record: &Record<'_>) -> Result<(), SinkError> {
        self.records += 1;
        match Message::parse(record.wire) {
            Ok(_) => self.inner.record(record),
            Err(e) if self.drop_malformed => {
                self.inner.skipped(SkipReason::Dns(e), self.records);
                Ok(())
            }
            Err(e) => {
                self.inner.record(record)?;
                self.inner.malformed(e, self.records);
                Ok(())
            }
        }
    }
    fn skipped(&mut self, reason: SkipReason, location: u64) {
        self.inner.skipped(reason, location)
    }
    fn malformed(&mut self, error: DnsError, location: u64) {
        self.inner.malformed(error, location)
    }
    fn finish(&mut self) -> Result<(), SinkError> {
        self.inner.finish()
    }
}

/// A source whose records go through [`CheckMessages`] on their way to the sink; the location
/// of its notes is the record's number (from 1).
pub struct Checked<S> {
    source: S,
    drop_malformed: bool,
}

impl<S: Source> Checked<S> {
    /// Wraps `source`; `drop_malformed` as for [`CheckMessages::new`].
    pub fn new(source: S, drop_malformed: bool) -> Self {
        Checked {
            source,
            drop_malformed,
        }
    }

    /// The wrapped source.
    pub fn inner(&self) -> &S {
        &self.source
    }
}

impl<S: Source> Source for Checked<S> {
    fn run(&mut self, sink: &mut dyn Sink) -> Result<(), TraceError> {
        let mut check = CheckMessages::new(sink, self.drop_malformed);
        self.source.run(&mut check)
    }
}
