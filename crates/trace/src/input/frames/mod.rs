//! Decompressing frame by frame, so that what a frame decoded to is known to be right only
//! once the frame's check passed.
//!
//! A compressor checks its data per frame: gzip per member (CRC-32 and size in the member's
//! trailer), xz per block (CRC-64 or SHA-256) and per stream (index and footer), zstd per frame
//! (an optional XXH64 checksum, which the `zstd` tool writes by default). The decompressors
//! hand out what they decode as they go, before the check at the frame's end: a damaged frame
//! can decode to wrong bytes for a while (even to the end of the frame, when the damage only
//! shows in the checksum) before it fails. [`FrameReader`] decodes gzip members, xz streams and
//! zstd frames one after the other, telling (through [`Damage`]) how much of the content its
//! frames' checks passed for, so that the records read from the rest can be held back until
//! they do (see [`crate::open`]); and turns its first failure into a [`StreamCut`] naming the
//! frame and where in the file the damage showed.

mod decoders;

use super::{Compression, StreamCut};
use decoders::{Counted, Gzip, Step, StepError, Xz, Zstd};
use std::io::{self, BufRead, Read};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

/// Most bytes asked of a decompressor in one step. A decompressor that meets damage drops what
/// it decoded in that step, so a corrupt stream loses at most this much before the damage.
const GUARD_STEP: usize = 1024;

/// What a compressed stream's frames have shown so far, shared between the reader of its
/// content and whoever watches it: how much of the content passed its frames' checks, and the
/// damage met, if any. Uncompressed input has no checks and no damage: all of it counts as
/// checked.
#[derive(Clone)]
pub struct Damage {
    shared: Arc<Shared>,
    /// The decompressor, to read the rest of a frame whose reader stopped early.
    frames: Option<Arc<Mutex<FrameReader>>>,
}

struct Shared {
    cut: Mutex<Option<StreamCut>>,
    verified: AtomicU64,
}

impl Default for Damage {
    /// For input that is not compressed: everything checked, nothing damaged.
    fn default() -> Self {
        Damage {
            shared: Arc::new(Shared {
                cut: Mutex::new(None),
                verified: AtomicU64::new(u64::MAX),
            }),
            frames: None,
        }
    }
}

impl std::fmt::Debug for Damage {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Damage")
            .field("cut", &self.get())
            .field("verified", &self.verified())
            .finish()
    }
}

impl Damage {
    /// The damage met so far, if any.
    pub fn get(&self) -> Option<StreamCut> {
        self.shared.cut.lock().ok().and_then(|d| d.clone())
    }

    /// How many bytes of content (from the start) came from frames whose checks passed:
    /// everything before is known to be what was compressed. `u64::MAX` for input that is not
    /// compressed.
    pub fn verified(&self) -> u64 {
        self.shared.verified.load(Ordering::Acquire)
    }

    /// Decodes the rest of the frame being read (what it decodes to is dropped), so that
    /// whether it is damaged is known: for a reader that stopped in the middle of a frame at
    /// an error of its own, which may be the frame's damage showing before its check does.
    /// Returns the damage, if any.
    pub fn check_current_frame(&self) -> Option<StreamCut> {
        if let Some(frames) = &self.frames {
            if let Ok(mut frames) = frames.lock() {
                frames.finish_frame();
            }
        }
        self.get()
    }

    fn set(&self, cut: &StreamCut) {
        if let Ok(mut d) = self.shared.cut.lock() {
            d.get_or_insert_with(|| cut.clone());
        }
    }
}

/// A decompressor that knows where its frames end.
enum Decoder {
    Gzip(Gzip),
    Xz(Xz),
    Zstd(Zstd),
}

/// The content of a compressed file, decoded frame by frame; its first failure becomes a
/// [`StreamCut`], given again on every later read, so that a reader can never take the rest of
/// a damaged stream for data nor loop on it.
pub(super) struct FrameReader {
    decoder: Decoder,
    compression: Compression,
    /// The frame being decoded, from 1.
    frame: u64,
    /// Where it starts in the file.
    frame_start: u64,
    /// Content bytes handed out.
    content: u64,
    cut: Option<StreamCut>,
    damage: Damage,
}

impl FrameReader {
    /// Decodes `raw`, compressed as `compression` (not [`Compression::None`]); returns the
    /// reader of its content and the [`Damage`] that watches it.
    pub(super) fn open(
        raw: Box<dyn BufRead + Send>,
        compression: Compression,
    ) -> io::Result<(SharedFrames, Damage)> {
        let raw = Counted::new(raw);
        let decoder = match compression {
            Compression::Gzip => Decoder::Gzip(Gzip::new(raw)),
            Compression::Xz => Decoder::Xz(Xz::new(raw)),
            Compression::Zstd | Compression::None => Decoder::Zstd(Zstd::new(raw)?),
        };
        let damage = Damage {
            shared: Arc::new(Shared {
                cut: Mutex::new(None),
                verified: AtomicU64::new(0),
            }),
            frames: None,
        };
        let reader = Arc::new(Mutex::new(FrameReader {
            decoder,
            compression,
            frame: 1,
            frame_start: 0,
            content: 0,
            cut: None,
            damage: damage.clone(),
        }));
        let damage = Damage {
            frames: Some(reader.clone()),
            ..damage
        };
        Ok((SharedFrames(reader), damage))
    }

    /// Where the decompressor is in the file.
    fn taken(&self) -> u64 {
        match &self.decoder {
            Decoder::Gzip(g) => g.taken(),
            Decoder::Xz(x) => x.taken(),
            Decoder::Zstd(z) => z.taken(),
        }
    }

    fn step(&mut self, out: &mut [u8]) -> Result<Step, StepError> {
        match &mut self.decoder {
            Decoder::Gzip(g) => g.step(out),
            Decoder::Xz(x) => x.step(out),
            Decoder::Zstd(z) => z.step(out),
        }
    }

    /// Decodes until the frame being read ends (its content is dropped), damage shows, or the
    /// input ends.
    fn finish_frame(&mut self) {
        let frame = self.frame;
        let mut scratch = vec![0u8; 64 * 1024];
        while self.cut.is_none() && self.frame == frame {
            match self.read(&mut scratch) {
                Ok(0) | Err(_) => break,
                Ok(_) => {}
            }
        }
    }
}

impl Read for FrameReader {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if let Some(cut) = &self.cut {
            return Err(cut.to_io_error());
        }
        let mut filled = 0;
        while filled < buf.len() {
            let end = buf.len().min(filled + GUARD_STEP);
            match self.step(&mut buf[filled..end]) {
                Ok(step) => {
                    filled += step.len;
                    self.content += step.len as u64;
                    if step.frame_end {
                        self.damage
                            .shared
                            .verified
                            .store(self.content, Ordering::Release);
                        self.frame += 1;
                        self.frame_start = self.taken();
                    }
                    if step.end {
                        break;
                    }
                }
                Err(StepError::Io(e)) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(StepError::Io(e)) => {
                    if filled > 0 {
                        // The bytes before the error first; the error again on the next read.
                        break;
                    }
                    return Err(e);
                }
                Err(StepError::Damage(failure)) => {
                    let cut = StreamCut {
                        compression: self.compression,
                        truncated: failure.truncated,
                        offset: self.content,
                        detail: failure.detail,
                        frame: self.frame,
                        frame_start: self.frame_start,
                        found_at: self.taken(),
                    };
                    self.damage.set(&cut);
                    let err = cut.to_io_error();
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

/// The reading end of a [`FrameReader`], which [`Damage::check_current_frame`] may also use.
pub(super) struct SharedFrames(Arc<Mutex<FrameReader>>);

impl SharedFrames {
    fn lock(&self) -> io::Result<MutexGuard<'_, FrameReader>> {
        self.0
            .lock()
            .map_err(|_| io::Error::other("the decompressor failed earlier"))
    }
}

impl Read for SharedFrames {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        self.lock()?.read(buf)
    }
}
