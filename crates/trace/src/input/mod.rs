//! Opening trace files: transparent decompression and format detection by content.
//!
//! Compressed files are decoded frame by frame (gzip members, xz streams, zstd frames: the
//! units whose checks tell damage), and [`Input::damage`] tells how much of the
//! content passed its frames' checks. A compressed trace that is cut short (a copy
//! interrupted, a capture still being written) or corrupt keeps what came before the damage:
//! the decompressed stream then ends with a [`StreamCut`] error, which every reader takes as
//! the end of its input, counting [`SkipReason::TruncatedFile`] or [`SkipReason::CorruptFile`]
//! (see [`cut_reason`]), and which [`Input::damage`] reports to the caller.
//!
//! [`SkipReason::TruncatedFile`]: crate::SkipReason::TruncatedFile
//! [`SkipReason::CorruptFile`]: crate::SkipReason::CorruptFile

mod cut;
mod frames;
mod position;

pub use cut::{cut_reason, CorruptStream, Passed, StreamCut};
pub use frames::Damage;
pub use position::Position;

use std::fmt;
use std::fs::File;
use std::io::{self, BufRead, BufReader, Read};
use std::path::Path;

/// The trace formats ldplayer reads, told apart by their first bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// A pcap or pcapng capture.
    Capture,
    /// The text format ([`crate::text`]).
    Text,
    /// The binary format ([`crate::binary`]).
    Binary,
    /// A dnstap log: Frame Streams of dnstap protobuf messages ([`crate::dnstap`]).
    Dnstap,
}

/// Compression wrapped around a file, recognised by its magic number.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Compression {
    /// Not compressed.
    None,
    /// gzip (several members are read as one stream).
    Gzip,
    /// xz.
    Xz,
    /// Zstandard.
    Zstd,
}

impl fmt::Display for Compression {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Compression::None => "uncompressed",
            Compression::Gzip => "gzip",
            Compression::Xz => "xz",
            Compression::Zstd => "zstd",
        })
    }
}

impl Compression {
    /// What the compression calls the unit it checks: a gzip `member`, an xz `stream`, a zstd
    /// `frame`.
    pub fn frame_name(&self) -> &'static str {
        match self {
            Compression::Gzip => "member",
            Compression::Xz => "stream",
            Compression::Zstd => "frame",
            Compression::None => "part",
        }
    }
}

/// Tells the compression from the first bytes of a file.
pub fn sniff_compression(head: &[u8]) -> Compression {
    if head.starts_with(&[0x1f, 0x8b]) {
        Compression::Gzip
    } else if head.starts_with(&[0xfd, b'7', b'z', b'X', b'Z', 0]) {
        Compression::Xz
    } else if head.starts_with(&[0x28, 0xb5, 0x2f, 0xfd]) {
        Compression::Zstd
    } else {
        Compression::None
    }
}

/// Tells the trace format from the first (decompressed) bytes, or `None` when it is none of them.
pub fn sniff_format(head: &[u8]) -> Option<Format> {
    const CAPTURE_MAGICS: [[u8; 4]; 5] = [
        [0xd4, 0xc3, 0xb2, 0xa1],
        [0xa1, 0xb2, 0xc3, 0xd4],
        [0x4d, 0x3c, 0xb2, 0xa1],
        [0xa1, 0xb2, 0x3c, 0x4d],
        [0x0a, 0x0d, 0x0d, 0x0a],
    ];
    if crate::binary::sniff(head) {
        Some(Format::Binary)
    } else if crate::text::sniff(head) {
        Some(Format::Text)
    } else if head.len() >= 4 && CAPTURE_MAGICS.iter().any(|m| head[..4] == m[..]) {
        Some(Format::Capture)
    } else if crate::dnstap::sniff(head) {
        Some(Format::Dnstap)
    } else {
        None
    }
}

/// An opened trace: its format and a buffered reader of its decompressed bytes.
pub struct Input {
    /// The detected format.
    pub format: Format,
    /// The compression that was removed.
    pub compression: Compression,
    /// The decompressed content, from its first byte.
    pub reader: Box<dyn BufRead + Send>,
    /// How much of the content passed its frames' checks, and whether the compressed stream
    /// was found cut short or corrupt (known once read).
    pub damage: Damage,
}

/// Opens a trace file (`-` for standard input), removing gzip, xz or zstd compression and
/// detecting the format from the content.
pub fn open(path: &Path) -> io::Result<Input> {
    let raw: Box<dyn Read + Send> = if path == Path::new("-") {
        Box::new(io::stdin())
    } else {
        Box::new(File::open(path)?)
    };
    open_reader(raw)
}

/// Like [`open`], for any byte stream.
pub fn open_reader(raw: Box<dyn Read + Send>) -> io::Result<Input> {
    const BUF: usize = 1 << 20;
    let mut raw = BufReader::with_capacity(BUF, raw);
    let compression = sniff_compression(raw.fill_buf()?);
    let (mut reader, damage): (Box<dyn BufRead + Send>, _) = match compression {
        Compression::None => (Box::new(raw), Damage::default()),
        _ => {
            let (frames, damage) = frames::FrameReader::open(Box::new(raw), compression)?;
            (Box::new(BufReader::with_capacity(BUF, frames)), damage)
        }
    };
    let head = reader.fill_buf()?;
    let format = sniff_format(head).ok_or_else(|| {
        io::Error::new(
            io::ErrorKind::InvalidData,
            "not a trace: expected pcap, pcapng, dnstap, ldplayer text or ldplayer binary (possibly gzip/xz/zstd-compressed)",
        )
    })?;
    Ok(Input {
        format,
        compression,
        reader,
        damage,
    })
}
