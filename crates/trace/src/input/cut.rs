//! How a compressed stream can end before its end, and what became of the records read from
//! the frame where it did.

use super::Compression;
use crate::skip::SkipReason;
use std::fmt;
use std::io;

/// Where and how a compressed stream ended before its end: the error a decompressing reader
/// gives once its decompressor fails (see [`cut_reason`]), and what [`super::Damage`] reports.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "the {compression} stream {}: {} {frame} (from byte {frame_start} of the file) {} at byte \
     {found_at}, after {offset} bytes of content ({detail})",
    if *.truncated { "ends early" } else { "is corrupt" },
    .compression.frame_name(),
    if *.truncated { "is cut" } else { "fails" }
)]
pub struct StreamCut {
    /// The compression of the stream.
    pub compression: Compression,
    /// True when the stream was cut short, false when it is corrupt (a check failed, or the
    /// data did not decode).
    pub truncated: bool,
    /// Decompressed bytes delivered before the damage.
    pub offset: u64,
    /// What the decompressor said.
    pub detail: String,
    /// The frame (gzip member, xz stream, zstd frame) where the damage is, from 1.
    pub frame: u64,
    /// Where that frame starts in the file (compressed bytes).
    pub frame_start: u64,
    /// How far into the file the decompressor had read when it found the damage.
    pub found_at: u64,
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

    /// The error a reader of the decompressed stream gets.
    pub(super) fn to_io_error(&self) -> io::Error {
        let kind = if self.truncated {
            io::ErrorKind::UnexpectedEof
        } else {
            io::ErrorKind::InvalidData
        };
        io::Error::new(kind, self.clone())
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

/// A compressed stream found corrupt, and what became of the records read from its damaged
/// frame: the error a trace opened by [`crate::open`] ends with.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CorruptStream {
    /// Where the damage is and what the decompressor said.
    pub cut: StreamCut,
    /// The records of the damaged frame that were held back and dropped (each counted as
    /// [`SkipReason::CorruptFrame`]).
    pub dropped: u64,
    /// The records of the damaged frame that had to be passed on before the damage showed,
    /// because the frame is larger than what is held back: they may be wrong.
    pub passed: Option<Passed>,
    /// How many bytes of records are held back until their frame's check passes.
    pub hold_bytes: usize,
}

/// A run of records passed on before their frame's check: the `first` to the
/// `first + count - 1`-th record read (from 1, in the order the reader read them).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Passed {
    /// The number of the first, from 1.
    pub first: u64,
    /// How many.
    pub count: u64,
}

impl fmt::Display for CorruptStream {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let unit = self.cut.compression.frame_name();
        write!(f, "{}; ", self.cut)?;
        match (self.dropped, self.passed) {
            (0, None) => write!(f, "no record had been read from that {unit}"),
            (n, None) => write!(
                f,
                "the {n} records read from that {unit} were held back until its check and \
                 dropped (counted as {})",
                SkipReason::CorruptFrame
            ),
            (n, Some(p)) => write!(
                f,
                "the {n} records of that {unit} held back were dropped (counted as {}), but \
                 records {} to {} (in the order read) came from it too and had been passed on: \
                 the {unit} is larger than the {} bytes of records held back until its check, \
                 and they may be wrong",
                SkipReason::CorruptFrame,
                p.first,
                p.first + p.count - 1,
                self.hold_bytes
            ),
        }
    }
}

impl std::error::Error for CorruptStream {}
