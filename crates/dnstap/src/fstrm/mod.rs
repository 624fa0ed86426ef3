//! Frame Streams (fstrm): the framing that carries dnstap, in files and over sockets.
//!
//! A Frame Streams byte stream is a sequence of frames, each prefixed by a 32-bit big-endian
//! length. A non-zero length announces a *data frame* of that many bytes (one dnstap message).
//! A zero length is an *escape*: a *control frame* follows, itself prefixed by its 32-bit length
//! (at most [`CONTROL_FRAME_MAX`] bytes), made of a 32-bit control type and zero or more fields
//! (32-bit field type, 32-bit length, bytes); the one field defined is the content type.
//!
//! A file (and a uni-directional socket) holds `START` (with the content type), the data
//! frames, and `STOP`. A bi-directional socket adds a handshake: the writer sends `READY`
//! listing the content types it can send, the reader answers `ACCEPT` with those it takes, then
//! the writer sends `START`, its data frames and `STOP`, and the reader answers `FINISH`.
//!
//! - [`FrameReader`] reads frames from any byte stream, never trusting a length beyond
//!   [`FrameReader::max_frame`], and says where a stream cut mid-frame ends;
//! - [`FrameWriter`] writes a uni-directional stream (a file);
//! - [`handshake`] speaks both sides of the bi-directional handshake.

pub mod handshake;
mod reader;
mod writer;

pub use reader::{Frame, FrameError, FrameReader, DEFAULT_MAX_FRAME};
pub use writer::FrameWriter;

use std::fmt;

/// The content type of dnstap data frames, as `START`, `READY` and `ACCEPT` name it.
pub const DNSTAP_CONTENT_TYPE: &[u8] = b"protobuf:dnstap.Dnstap";

/// The largest control frame payload (type and fields) fstrm accepts.
pub const CONTROL_FRAME_MAX: usize = 512;

/// The largest content type field fstrm accepts.
pub const CONTENT_TYPE_MAX: usize = 256;

/// The field type of a content type field.
const FIELD_CONTENT_TYPE: u32 = 1;

/// The kinds of control frames.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ControlType {
    /// The reader takes these content types (bi-directional, reader to writer).
    Accept,
    /// A stream of data frames begins, of the content type it names.
    Start,
    /// The stream of data frames ends.
    Stop,
    /// The writer offers these content types (bi-directional, writer to reader).
    Ready,
    /// The reader has everything up to `STOP` (bi-directional, reader to writer).
    Finish,
    /// A control type this crate does not know: ignored inside a stream, as fstrm says, for
    /// forward compatibility.
    Other(u32),
}

impl ControlType {
    /// The type's code on the wire.
    pub fn code(self) -> u32 {
        match self {
            ControlType::Accept => 1,
            ControlType::Start => 2,
            ControlType::Stop => 3,
            ControlType::Ready => 4,
            ControlType::Finish => 5,
            ControlType::Other(c) => c,
        }
    }

    /// The type with this code.
    pub fn from_code(code: u32) -> ControlType {
        match code {
            1 => ControlType::Accept,
            2 => ControlType::Start,
            3 => ControlType::Stop,
            4 => ControlType::Ready,
            5 => ControlType::Finish,
            c => ControlType::Other(c),
        }
    }
}

impl fmt::Display for ControlType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ControlType::Accept => f.write_str("ACCEPT"),
            ControlType::Start => f.write_str("START"),
            ControlType::Stop => f.write_str("STOP"),
            ControlType::Ready => f.write_str("READY"),
            ControlType::Finish => f.write_str("FINISH"),
            ControlType::Other(c) => write!(f, "control type {c}"),
        }
    }
}

/// A control frame: its type and the content types it names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Control {
    /// What the frame says.
    pub kind: ControlType,
    /// Its content type fields, in order (none, one for `START`, any number for `READY` and
    /// `ACCEPT`).
    pub content_types: Vec<Vec<u8>>,
}

/// Why a control frame's payload does not decode.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ControlError {
    /// The payload is shorter than its control type.
    #[error("control frame of {0} bytes has no room for its type")]
    Short(usize),
    /// A field runs past the end of the frame.
    #[error("a control frame field runs past the end of the frame")]
    FieldCut,
    /// A content type field is longer than fstrm allows.
    #[error("content type of {0} bytes (at most {CONTENT_TYPE_MAX})")]
    LongContentType(usize),
}

impl Control {
    /// A control frame of `kind` naming `content_types`.
    pub fn new(kind: ControlType, content_types: &[&[u8]]) -> Control {
        Control {
            kind,
            content_types: content_types.iter().map(|c| c.to_vec()).collect(),
        }
    }

    /// True when the frame names `content_type` (a frame naming none names any).
    pub fn names(&self, content_type: &[u8]) -> bool {
        self.content_types.is_empty() || self.content_types.iter().any(|c| c == content_type)
    }

    /// Decodes a control frame's payload (after the escape and the control frame length).
    /// Unknown field types are skipped.
    pub fn decode(payload: &[u8]) -> Result<Control, ControlError> {
        let word = |at: usize| -> Option<u32> {
            payload
                .get(at..at + 4)
                .map(|b| u32::from_be_bytes([b[0], b[1], b[2], b[3]]))
        };
        let kind = ControlType::from_code(word(0).ok_or(ControlError::Short(payload.len()))?);
        let mut content_types = Vec::new();
        let mut at = 4;
        while at < payload.len() {
            let (Some(field), Some(len)) = (word(at), word(at + 4)) else {
                return Err(ControlError::FieldCut);
            };
            let len = len as usize;
            let value = payload
                .get(at + 8..(at + 8).saturating_add(len))
                .ok_or(ControlError::FieldCut)?;
            if field == FIELD_CONTENT_TYPE {
                if len > CONTENT_TYPE_MAX {
                    return Err(ControlError::LongContentType(len));
                }
                content_types.push(value.to_vec());
            }
            at += 8 + len;
        }
        Ok(Control {
            kind,
            content_types,
        })
    }

    /// The frame as it goes on the wire: escape, control frame length, payload.
    pub fn encode(&self) -> Vec<u8> {
        let mut payload = self.kind.code().to_be_bytes().to_vec();
        for c in &self.content_types {
            payload.extend_from_slice(&FIELD_CONTENT_TYPE.to_be_bytes());
            payload.extend_from_slice(&(c.len() as u32).to_be_bytes());
            payload.extend_from_slice(c);
        }
        let mut out = Vec::with_capacity(8 + payload.len());
        out.extend_from_slice(&0u32.to_be_bytes());
        out.extend_from_slice(&(payload.len() as u32).to_be_bytes());
        out.extend_from_slice(&payload);
        out
    }
}

/// True when `head` (the first bytes of a file) starts like a Frame Streams file: an escape
/// and a `START` control frame of a plausible length. The content type is checked by the
/// reader, which counts the frames of any other type it finds.
pub fn sniff(head: &[u8]) -> bool {
    head.len() >= 12
        && head[..4] == [0, 0, 0, 0]
        && (4..=CONTROL_FRAME_MAX as u32)
            .contains(&u32::from_be_bytes([head[4], head[5], head[6], head[7]]))
        && head[8..12] == ControlType::Start.code().to_be_bytes()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn control_frames_round_trip() {
        for kind in [
            ControlType::Accept,
            ControlType::Start,
            ControlType::Stop,
            ControlType::Ready,
            ControlType::Finish,
            ControlType::Other(77),
        ] {
            let c = Control::new(kind, &[DNSTAP_CONTENT_TYPE, b"other"]);
            let wire = c.encode();
            assert_eq!(&wire[..4], &[0, 0, 0, 0]);
            assert_eq!(Control::decode(&wire[8..]), Ok(c));
        }
    }

    #[test]
    fn start_frame_is_what_fstrm_writes() {
        // fstrm_capture's START for dnstap: escape, length 34, START, field 1 of 22 bytes.
        let mut want = vec![0, 0, 0, 0, 0, 0, 0, 34, 0, 0, 0, 2, 0, 0, 0, 1, 0, 0, 0, 22];
        want.extend_from_slice(DNSTAP_CONTENT_TYPE);
        assert_eq!(
            Control::new(ControlType::Start, &[DNSTAP_CONTENT_TYPE]).encode(),
            want
        );
        assert!(sniff(&want));
        assert!(!sniff(&want[..11]));
    }

    #[test]
    fn bad_control_frames_are_errors() {
        assert_eq!(Control::decode(&[0, 0]), Err(ControlError::Short(2)));
        assert_eq!(
            Control::decode(&[0, 0, 0, 2, 0, 0, 0, 1, 0, 0, 0, 9, b'x']),
            Err(ControlError::FieldCut)
        );
        assert_eq!(
            Control::decode(&[0, 0, 0, 2, 0, 0, 0, 1, 0xff, 0xff, 0xff, 0xff]),
            Err(ControlError::FieldCut)
        );
    }
}
