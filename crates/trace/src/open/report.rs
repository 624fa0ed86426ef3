//! Sources that, once they have run, tell [`Notes`] what their reader noticed.

use super::{Notes, PortHint, ReadNote};
use crate::capture::CaptureReader;
use crate::dnstap::DnstapReader;
use crate::text::TextReader;
use crate::{Sink, Source, TraceError};
use std::io::{BufRead, Read};

/// A capture reader that tells a [`PortHint`] when the capture held UDP or TCP packets but
/// none on the DNS ports.
pub(super) struct ReportPorts<R: Read> {
    reader: CaptureReader<R>,
    dns_ports: Vec<u16>,
    notes: Notes,
}

impl<R: Read> ReportPorts<R> {
    /// Wraps `reader`, which reads DNS on `dns_ports`.
    pub(super) fn new(reader: CaptureReader<R>, dns_ports: &[u16], notes: &Notes) -> Self {
        ReportPorts {
            reader,
            dns_ports: dns_ports.to_vec(),
            notes: notes.clone(),
        }
    }
}

impl<R: Read> Source for ReportPorts<R> {
    fn run(&mut self, sink: &mut dyn Sink) -> Result<(), TraceError> {
        let result = self.reader.run(sink);
        let census = self.reader.census();
        if !census.tunnels().is_empty() {
            self.notes.tell(&ReadNote::Tunneled(census.tunnels()));
        }
        if let Some(hint) = PortHint::from_census(census, &self.dns_ports) {
            self.notes.tell(&ReadNote::NoDns(hint));
        }
        result
    }
}

/// A text reader that tells the lines it could not read.
pub(super) struct ReportLines<R: BufRead> {
    reader: TextReader<R>,
    notes: Notes,
}

impl<R: BufRead> ReportLines<R> {
    /// Wraps `reader`.
    pub(super) fn new(reader: TextReader<R>, notes: &Notes) -> Self {
        ReportLines {
            reader,
            notes: notes.clone(),
        }
    }
}

impl<R: BufRead> Source for ReportLines<R> {
    fn run(&mut self, sink: &mut dyn Sink) -> Result<(), TraceError> {
        let result = self.reader.run(sink);
        for (line, error) in self.reader.errors() {
            self.notes.tell(&ReadNote::LineSkipped {
                line: *line,
                error: error.clone(),
            });
        }
        result
    }
}

/// A dnstap reader that tells its census (messages by type and identity, and the types kept).
pub(super) struct ReportDnstap<R: Read> {
    reader: DnstapReader<R>,
    notes: Notes,
}

impl<R: Read> ReportDnstap<R> {
    /// Wraps `reader`.
    pub(super) fn new(reader: DnstapReader<R>, notes: &Notes) -> Self {
        ReportDnstap {
            reader,
            notes: notes.clone(),
        }
    }
}

impl<R: Read> Source for ReportDnstap<R> {
    fn run(&mut self, sink: &mut dyn Sink) -> Result<(), TraceError> {
        let result = self.reader.run(sink);
        self.notes.tell(&ReadNote::Dnstap {
            census: self.reader.census().clone(),
            kept: self.reader.types(),
        });
        result
    }
}
