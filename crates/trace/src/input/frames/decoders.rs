//! The decoders of each compression, one step at a time, telling where frames end.

use std::io::{self, BufRead, Read};

/// Counts the bytes taken from a buffered reader: where in the compressed file the
/// decompressor is.
pub(super) struct Counted<R> {
    inner: R,
    taken: u64,
}

impl<R> Counted<R> {
    /// Counts what is taken from `inner`.
    pub(super) fn new(inner: R) -> Self {
        Counted { inner, taken: 0 }
    }
}

impl<R: BufRead> Read for Counted<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.taken += n as u64;
        Ok(n)
    }
}

impl<R: BufRead> BufRead for Counted<R> {
    fn fill_buf(&mut self) -> io::Result<&[u8]> {
        self.inner.fill_buf()
    }
    fn consume(&mut self, amt: usize) {
        self.taken += amt as u64;
        self.inner.consume(amt)
    }
}

pub(super) type Raw = Counted<Box<dyn BufRead + Send>>;

/// What one decoding step gave.
pub(super) struct Step {
    /// Bytes written.
    pub(super) len: usize,
    /// The frame ended, its check passed.
    pub(super) frame_end: bool,
    /// The input ended between frames.
    pub(super) end: bool,
}

/// Why a step failed: the stream was cut, or is corrupt.
pub(super) struct Failure {
    /// The input ended inside a frame.
    pub(super) truncated: bool,
    /// What the decoder said.
    pub(super) detail: String,
}

impl Failure {
    fn corrupt(detail: impl ToString) -> Self {
        Failure {
            truncated: false,
            detail: detail.to_string(),
        }
    }
    fn truncated(detail: impl ToString) -> Self {
        Failure {
            truncated: true,
            detail: detail.to_string(),
        }
    }
}

/// A decoding step's outcome: a read error of the file itself stays an I/O error.
pub(super) enum StepError {
    Damage(Failure),
    Io(io::Error),
}

impl From<io::Error> for StepError {
    fn from(e: io::Error) -> Self {
        StepError::Io(e)
    }
}

/// gzip: one [`flate2::bufread::GzDecoder`] per member; a member's `Ok(0)` comes once its
/// CRC-32 and size matched.
pub(super) enum Gzip {
    Member(Box<flate2::bufread::GzDecoder<Raw>>),
    Between(Raw),
    /// Only while switching states.
    Gone,
}

impl Gzip {
    /// A decoder of the members in `raw`.
    pub(super) fn new(raw: Raw) -> Self {
        Gzip::Between(raw)
    }

    /// Where the decoder is in the file.
    pub(super) fn taken(&self) -> u64 {
        match self {
            Gzip::Member(d) => d.get_ref().taken,
            Gzip::Between(r) => r.taken,
            Gzip::Gone => 0,
        }
    }

    /// Decodes into `out`, taking input as needed.
    pub(super) fn step(&mut self, out: &mut [u8]) -> Result<Step, StepError> {
        loop {
            match std::mem::replace(self, Gzip::Gone) {
                Gzip::Between(mut raw) => {
                    if raw.fill_buf()?.is_empty() {
                        *self = Gzip::Between(raw);
                        return Ok(Step {
                            len: 0,
                            frame_end: false,
                            end: true,
                        });
                    }
                    *self = Gzip::Member(Box::new(flate2::bufread::GzDecoder::new(raw)));
                }
                Gzip::Member(mut member) => match member.read(out) {
                    Ok(0) => {
                        *self = Gzip::Between(member.into_inner());
                        return Ok(Step {
                            len: 0,
                            frame_end: true,
                            end: false,
                        });
                    }
                    Ok(len) => {
                        *self = Gzip::Member(member);
                        return Ok(Step {
                            len,
                            frame_end: false,
                            end: false,
                        });
                    }
                    Err(e) => {
                        let failure = if e.kind() == io::ErrorKind::UnexpectedEof {
                            Failure::truncated(e)
                        } else {
                            Failure::corrupt(e)
                        };
                        *self = Gzip::Member(member);
                        return Err(StepError::Damage(failure));
                    }
                },
                Gzip::Gone => return Err(StepError::Io(io::Error::other("gzip decoder lost"))),
            }
        }
    }
}

/// xz: one stream decoder per stream (which checks every block's integrity check, the index
/// and the footer); the zero padding allowed between streams is skipped.
pub(super) struct Xz {
    input: Raw,
    stream: Option<liblzma::stream::Stream>,
}

impl Xz {
    /// A decoder of the streams in `raw`.
    pub(super) fn new(raw: Raw) -> Self {
        Xz {
            input: raw,
            stream: None,
        }
    }

    /// Where the decoder is in the file.
    pub(super) fn taken(&self) -> u64 {
        self.input.taken
    }

    /// Decodes into `out`, taking input as needed.
    pub(super) fn step(&mut self, out: &mut [u8]) -> Result<Step, StepError> {
        loop {
            let stream = match &mut self.stream {
                Some(s) => s,
                None => {
                    // Stream padding: null bytes between (and after) streams.
                    loop {
                        let buf = self.input.fill_buf()?;
                        if buf.is_empty() {
                            return Ok(Step {
                                len: 0,
                                frame_end: false,
                                end: true,
                            });
                        }
                        let zeros = buf.iter().take_while(|b| **b == 0).count();
                        if zeros == 0 {
                            break;
                        }
                        self.input.consume(zeros);
                    }
                    let s = liblzma::stream::Stream::new_stream_decoder(u64::MAX, 0)
                        .map_err(|e| StepError::Io(e.into()))?;
                    self.stream.insert(s)
                }
            };
            let input = self.input.inner.fill_buf()?;
            let eof = input.is_empty();
            let (in_before, out_before) = (stream.total_in(), stream.total_out());
            let action = if eof {
                liblzma::stream::Action::Finish
            } else {
                liblzma::stream::Action::Run
            };
            let status = stream.process(input, out, action);
            let consumed = (stream.total_in() - in_before) as usize;
            let len = (stream.total_out() - out_before) as usize;
            self.input.consume(consumed);
            match status {
                Ok(liblzma::stream::Status::StreamEnd) => {
                    self.stream = None;
                    return Ok(Step {
                        len,
                        frame_end: true,
                        end: false,
                    });
                }
                Ok(_) if len > 0 => {
                    return Ok(Step {
                        len,
                        frame_end: false,
                        end: false,
                    })
                }
                Ok(_) if eof => {
                    return Err(StepError::Damage(Failure::truncated(
                        "the file ends inside the stream",
                    )))
                }
                Ok(_) if consumed == 0 => {
                    return Err(StepError::Damage(Failure::corrupt(
                        "the decoder makes no progress",
                    )))
                }
                Ok(_) => {}
                Err(liblzma::stream::Error::Data) => {
                    return Err(StepError::Damage(Failure::corrupt(
                        "compressed data is corrupt, or fails its integrity check",
                    )))
                }
                Err(e) => return Err(StepError::Damage(Failure::corrupt(e))),
            }
        }
    }
}

/// zstd: the streaming decoder says when a frame is done (its checksum, when it has one,
/// matched).
pub(super) struct Zstd {
    input: Raw,
    dctx: zstd::stream::raw::Decoder<'static>,
    /// Some of the current frame was taken.
    in_frame: bool,
    /// A frame just ended: the decoder is reset before the next.
    finished: bool,
}

impl Zstd {
    /// A decoder of the frames in `raw`.
    pub(super) fn new(raw: Raw) -> io::Result<Self> {
        Ok(Zstd {
            input: raw,
            dctx: zstd::stream::raw::Decoder::new()?,
            in_frame: false,
            finished: false,
        })
    }

    /// Where the decoder is in the file.
    pub(super) fn taken(&self) -> u64 {
        self.input.taken
    }

    /// Decodes into `out`, taking input as needed.
    pub(super) fn step(&mut self, out: &mut [u8]) -> Result<Step, StepError> {
        use zstd::stream::raw::{InBuffer, Operation, OutBuffer};
        loop {
            let input = self.input.inner.fill_buf()?;
            if input.is_empty() {
                if self.in_frame {
                    return Err(StepError::Damage(Failure::truncated("incomplete frame")));
                }
                return Ok(Step {
                    len: 0,
                    frame_end: false,
                    end: true,
                });
            }
            if self.finished {
                self.dctx.reinit().map_err(StepError::Io)?;
                self.finished = false;
            }
            let mut src = InBuffer::around(input);
            let mut dst = OutBuffer::around(out);
            let hint = self.dctx.run(&mut src, &mut dst);
            let (consumed, len) = (src.pos(), dst.pos());
            // Taken also on failure, so that the damage is placed where the decoder was.
            self.input.consume(consumed);
            let hint = hint.map_err(|e| StepError::Damage(Failure::corrupt(e)))?;
            self.in_frame |= consumed > 0 || len > 0;
            if hint == 0 {
                self.in_frame = false;
                self.finished = true;
                return Ok(Step {
                    len,
                    frame_end: true,
                    end: false,
                });
            }
            if len > 0 {
                return Ok(Step {
                    len,
                    frame_end: false,
                    end: false,
                });
            }
            if consumed == 0 {
                return Err(StepError::Damage(Failure::corrupt(
                    "the decoder makes no progress",
                )));
            }
        }
    }
}
