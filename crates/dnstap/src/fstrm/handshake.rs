//! The bi-directional Frame Streams handshake, both sides.
//!
//! The reader (a collector) [`accept`]s: it waits for `READY`, answers `ACCEPT` with the
//! content type it takes when the writer offers it, then waits for `START`. A writer that sends
//! `START` straight away is taken as uni-directional (as `fstrm_capture` takes it), and gets no
//! `FINISH`. Once `STOP` arrives, the reader answers [`finish`]. The writer side ([`connect`],
//! [`stop`]) is here for emitters written in Rust and for tests.

use super::{Control, ControlType, Frame, FrameError, FrameReader};
use std::fmt;
use std::io::{self, Read, Write};

/// Why a handshake failed.
#[derive(Debug, thiserror::Error)]
pub enum HandshakeError {
    /// Reading a frame failed, or the peer closed the connection.
    #[error(transparent)]
    Frame(#[from] FrameError),
    /// Writing our control frame failed.
    #[error("sending {kind}: {source}")]
    Send {
        /// The frame we were sending.
        kind: ControlType,
        /// What the system said.
        #[source]
        source: io::Error,
    },
    /// The peer closed the connection before the handshake ended.
    #[error("the peer closed the connection during the handshake")]
    Closed,
    /// The peer sent something else than the frame the handshake expects.
    #[error("expected {expected}, got {got}")]
    Unexpected {
        /// What the handshake waits for.
        expected: &'static str,
        /// What came.
        got: Got,
    },
    /// The peer offers or starts other content types than the one wanted.
    #[error("the peer {verb} content type {}, not {}", ContentTypes(.offered), String::from_utf8_lossy(.wanted))]
    ContentType {
        /// `offers` (in `READY`) or `starts` (in `START`).
        verb: &'static str,
        /// What the peer named.
        offered: Vec<Vec<u8>>,
        /// What we take.
        wanted: Vec<u8>,
    },
}

/// What came when a handshake frame was expected.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Got {
    /// A control frame of this kind.
    Control(ControlType),
    /// A data frame of this length.
    Data(usize),
}

impl fmt::Display for Got {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Got::Control(kind) => write!(f, "{kind}"),
            Got::Data(len) => write!(f, "a data frame of {len} bytes"),
        }
    }
}

/// Content types for messages: `a, b` or `none`.
struct ContentTypes<'a>(&'a [Vec<u8>]);

impl fmt::Display for ContentTypes<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.0.is_empty() {
            return f.write_str("none");
        }
        for (i, c) in self.0.iter().enumerate() {
            if i > 0 {
                f.write_str(", ")?;
            }
            write!(f, "{:?}", String::from_utf8_lossy(c))?;
        }
        Ok(())
    }
}

/// How the writer opened its stream.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// With `READY` and `ACCEPT`: it waits for `FINISH` after its `STOP`.
    Bidirectional,
    /// With `START` alone.
    Unidirectional,
}

/// The next control frame, skipping a bad one; data frames and the end are errors.
fn control<R: Read>(
    reader: &mut FrameReader<R>,
    expected: &'static str,
) -> Result<Control, HandshakeError> {
    loop {
        match reader.next_frame() {
            Ok(Some(Frame::Control(c))) => return Ok(c),
            Ok(Some(Frame::Data(d))) => {
                return Err(HandshakeError::Unexpected {
                    expected,
                    got: Got::Data(d.len()),
                })
            }
            Ok(None) => return Err(HandshakeError::Closed),
            Err(e) if e.is_final() => return Err(e.into()),
            // A skipped control frame; a timeout is the caller's to bound (it set it).
            Err(FrameError::BadControl { .. }) => {}
            Err(e) => return Err(e.into()),
        }
    }
}

fn send<W: Write>(out: &mut W, c: &Control) -> Result<(), HandshakeError> {
    out.write_all(&c.encode())
        .and_then(|()| out.flush())
        .map_err(|source| HandshakeError::Send {
            kind: c.kind,
            source,
        })
}

/// The reader's side: takes a writer's `READY` (answering `ACCEPT`) and `START` of
/// `content_type`, read from `reader`, written to `out` (the same connection).
pub fn accept<R: Read, W: Write>(
    reader: &mut FrameReader<R>,
    out: &mut W,
    content_type: &[u8],
) -> Result<Mode, HandshakeError> {
    let first = control(reader, "READY or START")?;
    let mode = match first.kind {
        ControlType::Ready => {
            if !first.names(content_type) {
                // Tell the writer we take nothing it offers; it gives up.
                let _ = send(out, &Control::new(ControlType::Accept, &[]));
                return Err(HandshakeError::ContentType {
                    verb: "offers",
                    offered: first.content_types,
                    wanted: content_type.to_vec(),
                });
            }
            send(out, &Control::new(ControlType::Accept, &[content_type]))?;
            Mode::Bidirectional
        }
        ControlType::Start => Mode::Unidirectional,
        kind => {
            return Err(HandshakeError::Unexpected {
                expected: "READY or START",
                got: Got::Control(kind),
            })
        }
    };
    let start = if mode == Mode::Unidirectional {
        first
    } else {
        control(reader, "START")?
    };
    if start.kind != ControlType::Start {
        return Err(HandshakeError::Unexpected {
            expected: "START",
            got: Got::Control(start.kind),
        });
    }
    if !start.names(content_type) {
        return Err(HandshakeError::ContentType {
            verb: "starts",
            offered: start.content_types,
            wanted: content_type.to_vec(),
        });
    }
    Ok(mode)
}

/// The reader's answer to `STOP` on a bi-directional stream.
pub fn finish<W: Write>(out: &mut W) -> Result<(), HandshakeError> {
    send(out, &Control::new(ControlType::Finish, &[]))
}

/// The writer's side: offers `content_type` in `READY` on `out`, waits for the reader's
/// `ACCEPT` on `reader`, and sends `START`; then write data frames (a 32-bit big-endian length
/// and the bytes, see [`super::FrameWriter::write_frame`]) and end with [`stop`].
pub fn connect<R: Read, W: Write>(
    reader: &mut FrameReader<R>,
    out: &mut W,
    content_type: &[u8],
) -> Result<(), HandshakeError> {
    send(out, &Control::new(ControlType::Ready, &[content_type]))?;
    let accept = control(reader, "ACCEPT")?;
    if accept.kind != ControlType::Accept {
        return Err(HandshakeError::Unexpected {
            expected: "ACCEPT",
            got: Got::Control(accept.kind),
        });
    }
    if accept.content_types.is_empty() || !accept.names(content_type) {
        return Err(HandshakeError::ContentType {
            verb: "accepts",
            offered: accept.content_types,
            wanted: content_type.to_vec(),
        });
    }
    send(out, &Control::new(ControlType::Start, &[content_type]))
}

/// The writer's end of a bi-directional stream: sends `STOP` and waits for `FINISH`.
pub fn stop<R: Read, W: Write>(
    reader: &mut FrameReader<R>,
    out: &mut W,
) -> Result<(), HandshakeError> {
    send(out, &Control::new(ControlType::Stop, &[]))?;
    let finish = control(reader, "FINISH")?;
    if finish.kind != ControlType::Finish {
        return Err(HandshakeError::Unexpected {
            expected: "FINISH",
            got: Got::Control(finish.kind),
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::super::DNSTAP_CONTENT_TYPE;
    use super::*;
    use std::os::unix::net::UnixStream;

    #[test]
    fn both_sides_agree_over_a_socket() {
        let (a, b) = UnixStream::pair().expect("pair");
        let writer = std::thread::spawn(move || {
            let mut reader = FrameReader::new(a.try_clone().expect("clone"));
            let mut out = a;
            connect(&mut reader, &mut out, DNSTAP_CONTENT_TYPE)?;
            out.write_all(&[0, 0, 0, 2, b'h', b'i'])
                .map_err(FrameError::Io)?;
            stop(&mut reader, &mut out)
        });
        let mut reader = FrameReader::new(b.try_clone().expect("clone"));
        let mut out = b;
        assert_eq!(
            accept(&mut reader, &mut out, DNSTAP_CONTENT_TYPE).expect("accept"),
            Mode::Bidirectional
        );
        assert_eq!(
            reader.next_frame().expect("data"),
            Some(Frame::Data(bytes::Bytes::from_static(b"hi")))
        );
        assert!(
            matches!(reader.next_frame(), Ok(Some(Frame::Control(c))) if c.kind == ControlType::Stop)
        );
        finish(&mut out).expect("finish");
        writer.join().expect("writer").expect("writer's side");
    }

    #[test]
    fn another_content_type_is_refused() {
        let (a, b) = UnixStream::pair().expect("pair");
        let writer = std::thread::spawn(move || {
            let mut reader = FrameReader::new(a.try_clone().expect("clone"));
            let mut out = a;
            connect(&mut reader, &mut out, b"protobuf:other")
        });
        let mut reader = FrameReader::new(b.try_clone().expect("clone"));
        let mut out = b;
        let e = accept(&mut reader, &mut out, DNSTAP_CONTENT_TYPE).expect_err("refused");
        assert_eq!(
            e.to_string(),
            "the peer offers content type \"protobuf:other\", not protobuf:dnstap.Dnstap"
        );
        assert!(matches!(
            writer.join().expect("writer"),
            Err(HandshakeError::ContentType { .. })
        ));
    }
}
