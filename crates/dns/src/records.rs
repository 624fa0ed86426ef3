//! Walking the resource records of a parsed message.

use crate::message::Header;
use crate::wire::{read_name, skip_name, u16_at, RecordPos};
use crate::{Class, Rtype};

/// The section a resource record is in.
///
/// An UPDATE message (RFC 2136 §2) uses the same three sections under other names: the answer
/// section holds the prerequisites and the authority section the updates.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Section {
    /// Answers (in an UPDATE: prerequisites).
    Answer,
    /// Authority records (in an UPDATE: the updates).
    Authority,
    /// Additional records (OPT, TSIG, glue).
    Additional,
}

/// One resource record of a parsed message, borrowing the message's bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Rr<'a> {
    wire: &'a [u8],
    /// The section the record is in.
    pub section: Section,
    /// Offset of the owner name in the message.
    pub offset: usize,
    /// Record type.
    pub rtype: Rtype,
    /// Class (for OPT, the UDP payload size; in an UPDATE, NONE and ANY carry meaning).
    pub class: Class,
    /// Time to live.
    pub ttl: u32,
    /// Offset of the RDATA in the message.
    pub rdata_offset: usize,
    /// Offset just after the RDATA.
    pub end: usize,
}

impl<'a> Rr<'a> {
    /// The RDATA bytes as they are in the message (names in it may be compressed).
    pub fn rdata(&self) -> &'a [u8] {
        self.wire.get(self.rdata_offset..self.end).unwrap_or(&[])
    }

    /// Appends the owner name, expanded to uncompressed wire form, to `out`.
    pub fn owner(&self, out: &mut Vec<u8>) {
        // The message was validated when it was parsed, so the name reads.
        let _ = read_name(self.wire, self.offset, out);
    }

    /// The message the record belongs to.
    pub(crate) fn message(&self) -> &'a [u8] {
        self.wire
    }

    /// The record the walk found at `pos` in `wire`.
    pub(crate) fn at(wire: &'a [u8], section: Section, pos: RecordPos) -> Option<Rr<'a>> {
        let word = |at: usize| u16_at(wire, at).ok();
        Some(Rr {
            wire,
            section,
            offset: pos.owner,
            rtype: pos.rr_type,
            class: Class(word(pos.fixed + 2)?),
            ttl: (u32::from(word(pos.fixed + 4)?) << 16) | u32::from(word(pos.fixed + 6)?),
            rdata_offset: pos.rdata,
            end: pos.end,
        })
    }
}

/// Iterator over the records after the question section of a parsed message; see
/// [`Message::records`](crate::Message::records).
#[derive(Debug, Clone)]
pub struct Records<'a> {
    wire: &'a [u8],
    pos: usize,
    /// Records left in the answer, authority and additional sections.
    left: [u16; 3],
}

impl<'a> Records<'a> {
    pub(crate) fn new(wire: &'a [u8], header: &Header, question_end: usize) -> Self {
        Records {
            wire,
            pos: question_end,
            left: [header.ancount, header.nscount, header.arcount],
        }
    }
}

impl<'a> Iterator for Records<'a> {
    type Item = Rr<'a>;

    fn next(&mut self) -> Option<Rr<'a>> {
        let section = match self.left {
            [a, ..] if a > 0 => 0,
            [_, n, _] if n > 0 => 1,
            [_, _, r] if r > 0 => 2,
            _ => return None,
        };
        self.left[section] -= 1;
        // The walk that validated the message read these very fields, so none of this fails; a
        // failure ends the iteration rather than panicking.
        let fixed = skip_name(self.wire, self.pos).ok()?;
        let rdata = fixed + 10;
        let end = rdata + u16_at(self.wire, fixed + 8).ok()? as usize;
        if end > self.wire.len() {
            self.left = [0; 3];
            return None;
        }
        let pos = RecordPos {
            owner: self.pos,
            fixed,
            rr_type: Rtype(u16_at(self.wire, fixed).ok()?),
            rdata,
            end,
        };
        let section = [Section::Answer, Section::Authority, Section::Additional][section];
        self.pos = end;
        Rr::at(self.wire, section, pos)
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        let n = self.left.iter().map(|&c| c as usize).sum();
        (0, Some(n))
    }
}
