//! Reading frames from a byte stream.

use super::{Control, ControlError, CONTROL_FRAME_MAX};
use bytes::{Buf, Bytes, BytesMut};
use std::io::{self, Read};

/// The largest data frame a [`FrameReader`] takes by default: 1 MiB, fstrm's own default, far
/// above a dnstap message (two DNS messages of at most 64 KiB and a few hundred bytes more).
pub const DEFAULT_MAX_FRAME: usize = 1 << 20;

/// How much a reader asks of its input at a time.
const READ_CHUNK: usize = 64 << 10;

/// One frame of a Frame Streams byte stream.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Frame {
    /// A data frame: one message of the stream's content type. It shares the reader's buffer
    /// until dropped (drop it before the next call, or the reader allocates a new buffer).
    Data(Bytes),
    /// A control frame.
    Control(Control),
}

/// Why the next frame could not be read.
#[derive(Debug, thiserror::Error)]
pub enum FrameError {
    /// Reading the input failed. Nothing was consumed: after a timeout (`WouldBlock`,
    /// `TimedOut`) or an interruption, the next call goes on where this one stopped.
    #[error(transparent)]
    Io(#[from] io::Error),
    /// The stream ends inside a frame: the frame is lost and the stream is over.
    #[error("the stream ends inside the frame at byte {offset}: {have} of its {want} bytes")]
    Truncated {
        /// Where the frame starts in the stream.
        offset: u64,
        /// The bytes of it that were there.
        have: usize,
        /// The bytes it needed (the length prefix, then the whole frame).
        want: usize,
    },
    /// A frame's length is beyond what the reader takes: the stream is out of step (damaged,
    /// or not Frame Streams) and no later frame can be found.
    #[error("the frame at byte {offset} says it is {len} bytes long, more than the {max} taken")]
    TooLong {
        /// Where the frame starts in the stream.
        offset: u64,
        /// Its length.
        len: u64,
        /// The largest length taken ([`FrameReader::max_frame`], or [`CONTROL_FRAME_MAX`] for a
        /// control frame).
        max: usize,
    },
    /// A control frame of a sound length whose payload does not decode: it was skipped and the
    /// stream goes on.
    #[error("the control frame at byte {offset} does not decode: {error}")]
    BadControl {
        /// Where the frame starts in the stream.
        offset: u64,
        /// What is wrong with it.
        error: ControlError,
    },
}

impl FrameError {
    /// True when the stream is over after this error (it ended, or lost its framing); false
    /// when the next call reads on (a bad control frame was skipped, a read can be retried).
    pub fn is_final(&self) -> bool {
        match self {
            FrameError::Io(e) => !matches!(
                e.kind(),
                io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut | io::ErrorKind::Interrupted
            ),
            FrameError::Truncated { .. } | FrameError::TooLong { .. } => true,
            FrameError::BadControl { .. } => false,
        }
    }
}

/// Reads the frames of a Frame Streams byte stream (a file, a socket), one at a time.
///
/// Memory is bounded by the largest frame taken: a length beyond [`FrameReader::max_frame`]
/// ends the stream with [`FrameError::TooLong`] instead of an allocation.
pub struct FrameReader<R> {
    input: R,
    buf: BytesMut,
    /// Stream offset of `buf[0]`.
    offset: u64,
    max_frame: usize,
    /// The stream ended, or lost its framing.
    over: bool,
}

impl<R: Read> FrameReader<R> {
    /// A reader of `input`, taking data frames of up to [`DEFAULT_MAX_FRAME`] bytes.
    pub fn new(input: R) -> Self {
        FrameReader {
            input,
            buf: BytesMut::with_capacity(READ_CHUNK),
            offset: 0,
            max_frame: DEFAULT_MAX_FRAME,
            over: false,
        }
    }

    /// Takes data frames of up to `max` bytes.
    pub fn with_max_frame(mut self, max: usize) -> Self {
        self.max_frame = max.max(1);
        self
    }

    /// The largest data frame taken.
    pub fn max_frame(&self) -> usize {
        self.max_frame
    }

    /// The stream offset just past the last frame read.
    pub fn offset(&self) -> u64 {
        self.offset
    }

    /// Bytes read from the input and not yet made into a frame (a frame in progress).
    pub fn pending(&self) -> usize {
        self.buf.len()
    }

    /// The input.
    pub fn get_ref(&self) -> &R {
        &self.input
    }

    /// Reads until `want` bytes are buffered; false when the input ends first.
    fn fill(&mut self, want: usize) -> io::Result<bool> {
        while self.buf.len() < want {
            let have = self.buf.len();
            let chunk = (want - have).max(READ_CHUNK);
            self.buf.resize(have + chunk, 0);
            let read = loop {
                match self.input.read(&mut self.buf[have..]) {
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                    other => break other,
                }
            };
            match read {
                Ok(n) => {
                    self.buf.truncate(have + n);
                    if n == 0 {
                        return Ok(false);
                    }
                }
                Err(e) => {
                    self.buf.truncate(have);
                    return Err(e);
                }
            }
        }
        Ok(true)
    }

    /// Ends the stream inside a frame of `want` bytes.
    fn cut(&mut self, want: usize) -> FrameError {
        let error = FrameError::Truncated {
            offset: self.offset,
            have: self.buf.len(),
            want,
        };
        self.offset += self.buf.len() as u64;
        self.buf.clear();
        self.over = true;
        error
    }

    /// The next frame; `Ok(None)` once the input ends between frames (or after a final error).
    pub fn next_frame(&mut self) -> Result<Option<Frame>, FrameError> {
        if self.over {
            return Ok(None);
        }
        if !self.fill(4)? {
            if self.buf.is_empty() {
                self.over = true;
                return Ok(None);
            }
            return Err(self.cut(4));
        }
        let len = u32::from_be_bytes([self.buf[0], self.buf[1], self.buf[2], self.buf[3]]);
        if len != 0 {
            let len = len as usize;
            if len > self.max_frame {
                self.over = true;
                return Err(FrameError::TooLong {
                    offset: self.offset,
                    len: len as u64,
                    max: self.max_frame,
                });
            }
            if !self.fill(4 + len)? {
                return Err(self.cut(4 + len));
            }
            self.buf.advance(4);
            let data = self.buf.split_to(len).freeze();
            self.offset += 4 + len as u64;
            return Ok(Some(Frame::Data(data)));
        }
        if !self.fill(8)? {
            return Err(self.cut(8));
        }
        let len = u32::from_be_bytes([self.buf[4], self.buf[5], self.buf[6], self.buf[7]]);
        if len as usize > CONTROL_FRAME_MAX {
            self.over = true;
            return Err(FrameError::TooLong {
                offset: self.offset,
                len: len as u64,
                max: CONTROL_FRAME_MAX,
            });
        }
        let len = len as usize;
        if !self.fill(8 + len)? {
            return Err(self.cut(8 + len));
        }
        let at = self.offset;
        let decoded = Control::decode(&self.buf[8..8 + len]);
        self.buf.advance(8 + len);
        self.offset += 8 + len as u64;
        match decoded {
            Ok(control) => Ok(Some(Frame::Control(control))),
            Err(error) => Err(FrameError::BadControl { offset: at, error }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::{ControlType, FrameWriter, DNSTAP_CONTENT_TYPE};
    use super::*;

    fn stream(frames: &[&[u8]]) -> Vec<u8> {
        let mut w = FrameWriter::new(Vec::new(), DNSTAP_CONTENT_TYPE).expect("start");
        for f in frames {
            w.write_frame(f).expect("frame");
        }
        w.finish().expect("stop")
    }

    fn read_all(bytes: &[u8]) -> (Vec<Frame>, Option<FrameError>) {
        let mut r = FrameReader::new(bytes);
        let mut frames = Vec::new();
        loop {
            match r.next_frame() {
                Ok(Some(f)) => frames.push(f),
                Ok(None) => return (frames, None),
                Err(e) if e.is_final() => return (frames, Some(e)),
                Err(_) => {}
            }
        }
    }

    #[test]
    fn reads_what_the_writer_wrote() {
        let bytes = stream(&[b"one", b"two two"]);
        let (frames, error) = read_all(&bytes);
        assert!(error.is_none());
        assert_eq!(frames.len(), 4);
        assert!(matches!(&frames[0], Frame::Control(c) if c.kind == ControlType::Start));
        assert_eq!(frames[1], Frame::Data(Bytes::from_static(b"one")));
        assert_eq!(frames[2], Frame::Data(Bytes::from_static(b"two two")));
        assert!(matches!(&frames[3], Frame::Control(c) if c.kind == ControlType::Stop));
    }

    #[test]
    fn a_cut_stream_keeps_every_whole_frame() {
        let bytes = stream(&[b"one", b"two two"]);
        // Cut inside the second data frame: START and the first frame are kept.
        let cut = 42 + 4 + 3 + 4 + 2;
        let (frames, error) = read_all(&bytes[..cut]);
        assert_eq!(frames.len(), 2);
        match error {
            Some(FrameError::Truncated { offset, have, want }) => {
                assert_eq!((offset, have, want), (49, 6, 11));
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn an_impossible_length_ends_the_stream_without_allocating_it() {
        let mut bytes = stream(&[b"one"]);
        bytes.truncate(49);
        bytes.extend_from_slice(&u32::MAX.to_be_bytes());
        let (frames, error) = read_all(&bytes);
        assert_eq!(frames.len(), 2);
        assert!(matches!(
            error,
            Some(FrameError::TooLong {
                offset: 49,
                len: 0xffff_ffff,
                ..
            })
        ));
    }

    #[test]
    fn a_bad_control_frame_is_skipped() {
        let mut bytes = stream(&[]);
        let stop = bytes.split_off(42);
        bytes.extend_from_slice(&[0, 0, 0, 0, 0, 0, 0, 2, 9, 9]);
        bytes.extend_from_slice(b"\0\0\0\x01x");
        bytes.extend_from_slice(&stop);
        let mut r = FrameReader::new(&bytes[..]);
        assert!(matches!(r.next_frame(), Ok(Some(Frame::Control(_)))));
        assert!(matches!(
            r.next_frame(),
            Err(FrameError::BadControl { offset: 42, .. })
        ));
        assert_eq!(
            r.next_frame().ok().flatten(),
            Some(Frame::Data(Bytes::from_static(b"x")))
        );
    }

    /// A reader that times out every other call, as a socket with a read timeout does.
    struct Stuttering<'a>(&'a [u8], bool);

    impl Read for Stuttering<'_> {
        fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
            self.1 = !self.1;
            if self.1 {
                return Err(io::ErrorKind::WouldBlock.into());
            }
            let n = buf.len().min(self.0.len()).min(3);
            buf[..n].copy_from_slice(&self.0[..n]);
            self.0 = &self.0[n..];
            Ok(n)
        }
    }

    #[test]
    fn timeouts_lose_nothing() {
        let bytes = stream(&[b"one", b"two two", &[7; 300]]);
        let mut r = FrameReader::new(Stuttering(&bytes, false));
        let mut data = Vec::new();
        loop {
            match r.next_frame() {
                Ok(Some(Frame::Data(d))) => data.push(d.len()),
                Ok(Some(Frame::Control(_))) => {}
                Ok(None) => break,
                Err(e) => assert!(!e.is_final(), "{e}"),
            }
        }
        assert_eq!(data, [3, 7, 300]);
    }
}
