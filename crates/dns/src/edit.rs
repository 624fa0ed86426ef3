//! Rewriting a message so that it carries a given set of fields.

use crate::error::DnsError;
use crate::message::{flag, Message, HEADER_LEN};
use crate::partial::Partial;
use crate::wire::{decompress, has_pointer_at_or_after};
use crate::{Class, Rcode, Rtype};
use thiserror::Error;

/// Why a message cannot be given the requested fields.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum EditError {
    /// The message to edit is not well-formed.
    #[error("malformed message: {0}")]
    Malformed(#[from] DnsError),
    /// An RCODE above 15 needs an OPT record to hold its upper bits.
    #[error("extended RCODE {0} needs EDNS")]
    RcodeNeedsEdns(Rcode),
    /// A message carries 12 bits of RCODE; this one has more.
    #[error("RCODE {0} does not fit in 12 bits")]
    RcodeTooLarge(Rcode),
    /// The edited message would be larger than 65535 bytes.
    #[error("message too large")]
    TooLarge,
}

/// The first question.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Question {
    /// Uncompressed wire form of the name.
    pub name: Vec<u8>,
    /// Query type.
    pub qtype: Rtype,
    /// Query class.
    pub qclass: Class,
}

/// The EDNS fields the text format expresses.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EdnsFields {
    /// EDNS version.
    pub version: u8,
    /// UDP payload size.
    pub udp_size: u16,
    /// The DO bit.
    pub dnssec_ok: bool,
    /// OPT RDATA (the options) in wire form.
    pub options: Vec<u8>,
}

/// Everything the columns of the text format say about a message.
///
/// What a message holds beyond these (further questions, the records, other OPT flag bits, bytes
/// after the message) is kept by editing the message in place with [`apply`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fields {
    /// Message ID.
    pub id: u16,
    /// Response (true) or query.
    pub qr: bool,
    /// Opcode (0–15).
    pub opcode: u8,
    /// The single-bit flags AA, TC, RD, RA, Z, AD and CD, at their header positions.
    pub flags: u16,
    /// The full (extended) response code.
    pub rcode: Rcode,
    /// The first question.
    pub question: Option<Question>,
    /// The OPT record.
    pub edns: Option<EdnsFields>,
}

impl Fields {
    /// Reads the fields off a parsed message.
    pub fn of(msg: &Message<'_>) -> Fields {
        let h = msg.header();
        let question = msg.qname_offset().map(|_| {
            let mut name = Vec::new();
            msg.qname_wire(&mut name);
            Question {
                name,
                qtype: msg.qtype().unwrap_or_default(),
                qclass: msg.qclass().unwrap_or_default(),
            }
        });
        let edns = msg.edns().map(|e| EdnsFields {
            version: e.version,
            udp_size: e.udp_size,
            dnssec_ok: e.dnssec_ok(),
            options: msg.edns_options().to_vec(),
        });
        Fields {
            id: h.id,
            qr: h.qr(),
            opcode: h.opcode(),
            flags: h.flags & flag::NAMED_MASK,
            rcode: msg.rcode(),
            question,
            edns,
        }
    }
}

impl Fields {
    /// The fields that can be read off a malformed message: its header (the RCODE is the
    /// header's four bits, as no OPT record is read) and its first question when that reads.
    pub fn of_partial(p: &Partial) -> Fields {
        let h = &p.header;
        Fields {
            id: h.id,
            qr: h.qr(),
            opcode: h.opcode(),
            flags: h.flags & flag::NAMED_MASK,
            rcode: Rcode::from_parts(h.rcode_low(), 0),
            question: p.question.clone(),
            edns: None,
        }
    }
}

/// Builds a new message that holds exactly `fields`: the header, at most one question and at
/// most one OPT record.
pub fn build(fields: &Fields) -> Result<Vec<u8>, EditError> {
    let mut wire = vec![0u8; HEADER_LEN];
    apply(&mut wire, fields)?;
    Ok(wire)
}

/// Rewrites `wire` so that it carries `fields`, changing only what differs: a message whose fields
/// already match stays byte-identical. Structural changes (a question name of another length, an
/// OPT record added, removed or resized) keep compression pointers valid, expanding the message's
/// names first when a pointer would otherwise move.
pub fn apply(wire: &mut Vec<u8>, fields: &Fields) -> Result<(), EditError> {
    if fields.rcode > Rcode::MAX_IN_MESSAGE {
        return Err(EditError::RcodeTooLarge(fields.rcode));
    }
    if fields.rcode.needs_edns() && fields.edns.is_none() {
        return Err(EditError::RcodeNeedsEdns(fields.rcode));
    }
    apply_header(wire, fields)?;
    set_question(wire, fields.question.as_ref())?;
    set_edns(wire, fields.edns.as_ref(), fields.rcode.extended_bits())?;
    if wire.len() > u16::MAX as usize {
        return Err(EditError::TooLarge);
    }
    Ok(())
}

/// Writes the header fields of `fields` (ID, QR, opcode, the named flags and the low four bits of
/// the RCODE) into the first 12 bytes of `wire`, leaving everything else alone. This is the only
/// edit that a malformed message can take, as it needs nothing beyond the header to be readable.
pub fn apply_header(wire: &mut [u8], fields: &Fields) -> Result<(), EditError> {
    if wire.len() < HEADER_LEN {
        return Err(EditError::Malformed(DnsError::ShortHeader));
    }
    wire[0..2].copy_from_slice(&fields.id.to_be_bytes());
    let old = u16::from_be_bytes([wire[2], wire[3]]);
    let mut new = old & !(flag::QR | 0x7800 | flag::NAMED_MASK | 0x000F);
    if fields.qr {
        new |= flag::QR;
    }
    new |= ((fields.opcode as u16) & 0xF) << 11;
    new |= fields.flags & flag::NAMED_MASK;
    new |= fields.rcode.header_bits() as u16;
    wire[2..4].copy_from_slice(&new.to_be_bytes());
    Ok(())
}

fn set_question(wire: &mut Vec<u8>, want: Option<&Question>) -> Result<(), EditError> {
    let msg = Message::parse(wire)?;
    let have = Fields::of(&msg).question;
    if have.as_ref() == want {
        return Ok(());
    }
    match (have, want) {
        (Some(h), Some(w)) if h.name == w.name => {
            let Some(at) = msg.qname_offset() else {
                return Ok(());
            };
            let fixed = crate::wire::skip_name(wire, at)?;
            wire[fixed..fixed + 2].copy_from_slice(&w.qtype.0.to_be_bytes());
            wire[fixed + 2..fixed + 4].copy_from_slice(&w.qclass.0.to_be_bytes());
        }
        (have, Some(w)) => {
            // The first question always starts right after the header.
            make_movable(wire, HEADER_LEN)?;
            let added = have.is_none();
            let end = match have {
                Some(_) => crate::wire::skip_name(wire, HEADER_LEN)? + 4,
                None => HEADER_LEN,
            };
            wire.splice(HEADER_LEN..end, question_bytes(w));
            if added {
                bump_count(wire, 4, 1);
            }
        }
        (Some(_), None) => {
            make_movable(wire, HEADER_LEN)?;
            let end = crate::wire::skip_name(wire, HEADER_LEN)? + 4;
            wire.drain(HEADER_LEN..end);
            bump_count(wire, 4, -1);
        }
        (None, None) => {}
    }
    Ok(())
}

fn question_bytes(q: &Question) -> Vec<u8> {
    let mut out = q.name.clone();
    out.extend_from_slice(&q.qtype.0.to_be_bytes());
    out.extend_from_slice(&q.qclass.0.to_be_bytes());
    out
}

fn set_edns(wire: &mut Vec<u8>, want: Option<&EdnsFields>, ext_rcode: u8) -> Result<(), EditError> {
    let msg = Message::parse(wire)?;
    match (msg.edns().copied(), want) {
        (None, None) => {}
        (Some(e), None) => {
            let e = if make_movable(wire, e.offset)? {
                reparse_edns(wire)?
            } else {
                e
            };
            wire.drain(e.offset..e.end);
            bump_count(wire, 10, -1);
        }
        (None, Some(w)) => {
            let mut rr = vec![0u8];
            rr.extend_from_slice(&Rtype::OPT.0.to_be_bytes());
            rr.extend_from_slice(&w.udp_size.to_be_bytes());
            rr.push(ext_rcode);
            rr.push(w.version);
            rr.extend_from_slice(&(if w.dnssec_ok { 0x8000u16 } else { 0 }).to_be_bytes());
            let len = u16::try_from(w.options.len()).map_err(|_| EditError::TooLarge)?;
            rr.extend_from_slice(&len.to_be_bytes());
            rr.extend_from_slice(&w.options);
            // Nothing can point past the last record, so appending moves no pointer target.
            let end = msg.end();
            wire.splice(end..end, rr);
            bump_count(wire, 10, 1);
        }
        (Some(e), Some(w)) => {
            let fixed = e.offset + 1;
            wire[fixed + 2..fixed + 4].copy_from_slice(&w.udp_size.to_be_bytes());
            wire[fixed + 4] = ext_rcode;
            wire[fixed + 5] = w.version;
            let flags = (e.flags & 0x7FFF) | if w.dnssec_ok { 0x8000 } else { 0 };
            wire[fixed + 6..fixed + 8].copy_from_slice(&flags.to_be_bytes());
            if wire[e.rdata..e.end] != w.options[..] {
                let len = u16::try_from(w.options.len()).map_err(|_| EditError::TooLarge)?;
                let e = if make_movable(wire, e.rdata)? {
                    reparse_edns(wire)?
                } else {
                    e
                };
                wire[e.rdata - 2..e.rdata].copy_from_slice(&len.to_be_bytes());
                wire.splice(e.rdata..e.end, w.options.iter().copied());
            }
        }
    }
    Ok(())
}

fn reparse_edns(wire: &[u8]) -> Result<crate::message::Edns, EditError> {
    Message::parse(wire)?
        .edns()
        .copied()
        .ok_or(EditError::Malformed(DnsError::BadOpt))
}

/// Adds `delta` to the section count at `at` (4 questions, 10 additional).
fn bump_count(wire: &mut [u8], at: usize, delta: i32) {
    let v = u16::from_be_bytes([wire[at], wire[at + 1]]) as i32 + delta;
    wire[at..at + 2].copy_from_slice(&(v.clamp(0, u16::MAX as i32) as u16).to_be_bytes());
}

/// Expands the message's names when a compression pointer points at `pos` or later, so that bytes
/// from `pos` on can move without breaking pointers. Offsets found before a call that returns
/// true are stale: parse again.
fn make_movable(wire: &mut Vec<u8>, pos: usize) -> Result<bool, EditError> {
    if has_pointer_at_or_after(wire, pos)? {
        *wire = decompress(wire)?;
        Ok(true)
    } else {
        Ok(false)
    }
}
