//! Opening a trace of any kind in one call: a pcap or pcapng capture, a dnstap log, a text or
//! binary trace, plain or gzip/xz/zstd-compressed, from a file or standard input.
//!
//! [`open`] (or [`open_reader`], for a byte stream the caller already holds, say one that
//! counts bytes for a progress bar) detects the compression and the format from the content
//! and returns a ready [`Source`]: captures are decoded on the DNS ports asked for, text and
//! binary traces are checked message by message, and malformed messages are kept or dropped as
//! [`ReadOptions::drop_malformed`] says. What the reader has to tell beyond its records (a
//! capture without DNS on the asked ports, unreadable text lines, a compressed stream cut
//! short) goes to [`ReadOptions::notes`] once the source has run.
//!
//! The records of a compressed file are held back until the frame they were read from passes
//! its check (up to [`ReadOptions::hold_bytes`] of them): a corrupt frame can
//! decode to wrong bytes before its check fails, and those would otherwise become records
//! nobody sent. A corrupt stream ends the run with [`TraceError::Corrupt`], which says which
//! frame it is, where, and what became of its records; what came before it is all passed on.

mod notes;
mod port_hint;
mod report;
mod verify;

pub use notes::{Notes, ReadNote};
pub use port_hint::PortHint;

use crate::binary::BinaryReader;
use crate::capture::{CaptureOptions, CaptureReader};
use crate::dnstap::{DnstapReader, DnstapTypes};
use crate::input::{self, Compression, Format};
use crate::text::TextReader;
use crate::{Checked, Source, TraceError};
use report::{ReportDnstap, ReportLines, ReportPorts};
use std::fs::File;
use std::io::{self, Read};
use std::path::{Path, PathBuf};
use verify::Verified;

/// How to read a trace, whatever its format.
#[derive(Debug, Clone)]
pub struct ReadOptions {
    /// The UDP and TCP ports that carry DNS in captures (traces say themselves what is DNS).
    pub dns_ports: Vec<u16>,
    /// Skip malformed messages (counted by their `dns-*` reason) instead of keeping them.
    pub drop_malformed: bool,
    /// Who is told what the reader noticed besides its records.
    pub notes: Notes,
    /// How many bytes of records (messages and their fixed fields) read from a compressed
    /// frame are held back until the frame's check passes; [`HOLD_BYTES`] by default. The
    /// oldest records of a larger frame are passed on before their check (a corrupt frame's
    /// error then says which they were).
    pub hold_bytes: usize,
    /// The dnstap message types made into records ([`DnstapTypes::CLIENT`] by default); the
    /// others are only counted ([`ReadNote::Dnstap`]).
    pub dnstap_types: DnstapTypes,
}

/// The default [`ReadOptions::hold_bytes`]: 16 MiB, some 100,000 records of typical queries
/// and responses, far more than a frame of a few megabytes holds, and still a small part of
/// the memory a replay uses.
pub const HOLD_BYTES: usize = 16 << 20;

impl Default for ReadOptions {
    /// DNS on the standard port, malformed messages kept, notes on standard error.
    fn default() -> Self {
        ReadOptions {
            dns_ports: CaptureOptions::default().dns_ports,
            drop_malformed: false,
            notes: Notes::default(),
            hold_bytes: HOLD_BYTES,
            dnstap_types: DnstapTypes::default(),
        }
    }
}

/// An opened trace, ready to run.
pub struct Input {
    /// The reader of the trace's records; it tells [`ReadOptions::notes`] what it noticed
    /// once it has run.
    pub source: Box<dyn Source + Send>,
    /// What the content turned out to be.
    pub format: Format,
    /// The compression that was removed.
    pub compression: Compression,
    /// The size of the file in bytes (compressed), when [`open`] opened a file; `None` for
    /// standard input and for [`open_reader`].
    pub len: Option<u64>,
}

/// Why a trace could not be opened. Each variant names the input (as given, `-` for standard
/// input) and keeps the underlying error as its source.
#[derive(Debug, thiserror::Error)]
pub enum OpenError {
    /// The file could not be opened.
    #[error("cannot open {}", .input.display())]
    Open {
        /// The input.
        input: PathBuf,
        /// What the system said.
        #[source]
        source: io::Error,
    },
    /// The first bytes could not be read, decompressed, or are no trace format.
    #[error("cannot read {}", .input.display())]
    Read {
        /// The input.
        input: PathBuf,
        /// What went wrong (an [`io::ErrorKind::InvalidData`] error for content that is no
        /// trace).
        #[source]
        source: io::Error,
    },
    /// The start of the trace (a capture's file header, a text trace's tag and header line, a
    /// binary trace's header) is not one this crate reads.
    #[error("{}", .input.display())]
    Header {
        /// The input.
        input: PathBuf,
        /// What the format's reader said.
        #[source]
        source: TraceError,
    },
}

/// Opens the trace at `path` (`-` for standard input) as `options` say.
pub fn open(path: &Path, options: &ReadOptions) -> Result<Input, OpenError> {
    let (raw, len): (Box<dyn Read + Send>, _) = if path == Path::new("-") {
        (Box::new(io::stdin()), None)
    } else {
        ldplayer_output::protect_input(path);
        let file = File::open(path).map_err(|source| OpenError::Open {
            input: path.to_path_buf(),
            source,
        })?;
        let len = file.metadata().ok().map(|m| m.len());
        (Box::new(file), len)
    };
    let mut input = open_reader(raw, path, options)?;
    input.len = len;
    Ok(input)
}

/// Opens the trace in the byte stream `raw` as `options` say; `name` is how errors and notes
/// call it (its path, or `-`).
pub fn open_reader(
    raw: Box<dyn Read + Send>,
    name: &Path,
    options: &ReadOptions,
) -> Result<Input, OpenError> {
    open_reader_as(raw, name, options, false)
}

/// [`open_reader`], with a capture read in split mode when `split` (see
/// [`CaptureReader::split`]): what [`crate::many`] decodes on several cores.
pub(crate) fn open_reader_as(
    raw: Box<dyn Read + Send>,
    name: &Path,
    options: &ReadOptions,
    split: bool,
) -> Result<Input, OpenError> {
    let opened = input::open_reader(raw).map_err(|source| OpenError::Read {
        input: name.to_path_buf(),
        source,
    })?;
    let header = |source| OpenError::Header {
        input: name.to_path_buf(),
        source,
    };
    let notes = &options.notes;
    let (source, position): (Box<dyn Source + Send>, _) = match opened.format {
        Format::Capture => {
            let capture = CaptureOptions {
                dns_ports: options.dns_ports.clone(),
                keep_malformed: !options.drop_malformed,
                ..CaptureOptions::default()
            };
            let reader = CaptureReader::new(opened.reader, capture).map_err(header)?;
            let reader = if split { reader.split() } else { reader };
            let position = reader.position();
            (
                Box::new(ReportPorts::new(reader, &options.dns_ports, notes)),
                position,
            )
        }
        // Captures decide about malformed messages as they frame them; traces are checked.
        Format::Text => {
            let reader = TextReader::new(opened.reader).map_err(header)?;
            let position = reader.position();
            (
                Box::new(Checked::new(
                    ReportLines::new(reader, notes),
                    options.drop_malformed,
                )),
                position,
            )
        }
        Format::Dnstap => {
            let reader = DnstapReader::new(opened.reader, options.dnstap_types);
            let position = reader.position();
            (
                Box::new(Checked::new(
                    ReportDnstap::new(reader, notes),
                    options.drop_malformed,
                )),
                position,
            )
        }
        Format::Binary => {
            let reader = BinaryReader::new(opened.reader).map_err(header)?;
            let position = reader.position();
            (
                Box::new(Checked::new(reader, options.drop_malformed)),
                position,
            )
        }
    };
    let source = Verified::new(
        source,
        opened.damage,
        position,
        options.hold_bytes,
        name,
        notes,
    );
    Ok(Input {
        source: Box::new(source),
        format: opened.format,
        compression: opened.compression,
        len: None,
    })
}
