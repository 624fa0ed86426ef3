//! Opening trace files: transparent decompression and format detection by content.
//!
//! A compressed trace that is cut short (a copy interrupted, a capture still being written) or
//! corrupt keeps what came before the damage: the decompressed stream then ends with a
//! [`StreamCut`] error, which every reader takes as the end of its input, counting
//! [`SkipReason::TruncatedFile`] or [`SkipReason::CorruptFile`] (see [`cut_reason`]), and which
//! [`Input::damage`] reports to the caller.

mod position;

pub use position::Position;

use crate::skip::SkipReason;
use std::fmt;
use std::fs::File;
use std::io::{self, BufRead, BufReader, Read};
use std::path::Path;
use std::sync::{Arc, Mutex};

/// The trace formats ldplayer reads, told apart by their first bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// A pcap or pcapng capture.
    Capture,
    /// The text format ([`crate::text`]).
    Text,
    /// The binary format ([`crate::binary`]).
    Binary,
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

/// Where and how a compressed stream ended before its end: the error a [`StreamCut`] reader
/// gives once its decompressor fails, and what [`Input::damage`] reports.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "the {compression} stream {} after {offset} bytes of content ({detail})",
    if *.truncated { "ends early" } else { "is corrupt" }
)]
pub struct StreamCut {
    /// The compression of the stream.
    pub compression: Compression,
    /// True when the stream was cut short, false when it is corrupt.
    pub truncated: bool,
    /// Decompressed bytes delivered before the damage.
    pub offset: u64,
    /// What the decompressor said.
    pub detail: String,
}

impl StreamCut {
    /// The reason a reader counts for it.
    pub fn skip_reason(&self) -> SkipReason {
        if self.truncated {
            SkipReason::TruncatedFile
        } else {
            SkipReason::CorruptFile
        }
    }
}

/// The skip reason to count when a read error means that the input ends here because its
/// compressed stream was cut short or is corrupt (a [`StreamCut`]); `None` for other errors,
/// which stay errors. Readers call it on every read error and end their input without error
/// when it says so.
pub fn cut_reason(e: &io::Error) -> Option<SkipReason> {
    e.get_ref()
        .and_then(|inner| inner.downcast_ref::<StreamCut>())
        .map(StreamCut::skip_reason)
}

/// A shared view of the damage a decompressed stream met, if any; see [`Input::damage`].
#[derive(Debug, Clone, Default)]
pub struct Damage(Arc<Mutex<Option<StreamCut>>>);

impl Damage {
    /// The damage met so far, if any.
    pub fn get(&self) -> Option<StreamCut> {
        self.0.lock().ok().and_then(|d| d.clone())
    }

    fn set(&self, cut: &StreamCut) {
        if let Ok(mut d) = self.0.lock() {
            d.get_or_insert_with(|| cut.clone());
        }
    }
}

/// Most bytes asked of a decompressor in one step. A decompressor that meets damage drops what
/// it decoded in that step, so a corrupt stream loses at most this much before the damage.
const GUARD_STEP: usize = 1024;

/// A decompressor that turns its first failure into a [`StreamCut`] error, and gives that same
/// error on every later read, so that a reader can never take the rest of a damaged stream for
/// data nor loop on it. It asks the decompressor for [`GUARD_STEP`] bytes at a time and hands
/// over what came before a failure before it reports the failure.
struct Guarded<R> {
    inner: R,
    compression: Compression,
    offset: u64,
    cut: Option<StreamCut>,
    damage: Damage,
}

impl<R: Read> Read for Guarded<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if let Some(cut) = &self.cut {
            return Err(cut_error(cut));
        }
        let mut filled = 0;
        while filled < buf.len() {
            let end = buf.len().min(filled + GUARD_STEP);
            match self.inner.read(&mut buf[filled..end]) {
                Ok(0) => break,
                Ok(n) => {
                    filled += n;
                    self.offset += n as u64;
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => {
                    let cut = StreamCut {
                        compression: self.compression,
                        truncated: e.kind() == io::ErrorKind::UnexpectedEof,
                        offset: self.offset,
                        detail: e.to_string(),
                    };
                    self.damage.set(&cut);
                    let err = cut_error(&cut);
                    self.cut = Some(cut);
                    if filled > 0 {
                        // The bytes before the damage first; the error on the next read.
                        break;
                    }
                    return Err(err);
                }
            }
        }
        Ok(filled)
    }
}

fn cut_error(cut: &StreamCut) -> io::Error {
    let kind = if cut.truncated {
        io::ErrorKind::UnexpectedEof
    } else {
        io::ErrorKind::InvalidData
    };
    io::Error::new(kind, cut.clone())
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
    /// Whether the compressed stream was found cut short or corrupt (known once read).
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
    let damage = Damage::default();
    let guard = |inner: Box<dyn Read + Send>| -> Box<dyn BufRead + Send> {
        Box::new(BufReader::with_capacity(
            BUF,
            Guarded {
                inner,
                compression,
                offset: 0,
                cut: None,
                damage: damage.clone(),
            },
        ))
    };
    let mut reader: Box<dyn BufRead + Send> = match compression {
        Compression::None => Box::new(raw),
        Compression::Gzip => guard(Box::new(flate2::bufread::MultiGzDecoder::new(raw))),
        Compression::Xz => guard(Box::new(xz2::bufread::XzDecoder::new_multi_decoder(raw))),
        Compression::Zstd => guard(Box::new(zstd::stream::read::Decoder::with_buffer(raw)?)),
    };
    let head = reader.fill_buf()?;
    let format = sniff_format(head).ok_or_else(|| {
        io::Error::new(
            io::ErrorKind::InvalidData,
            "not a trace: expected pcap, pcapng, ldplayer text or ldplayer binary (possibly gzip/xz/zstd-compressed)",
        )
    })?;
    Ok(Input {
        format,
        compression,
        reader,
        damage,
    })
}
