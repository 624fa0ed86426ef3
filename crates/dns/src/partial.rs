//! What can still be read of a malformed message.
//!
//! Real traffic holds malformed messages (absurd counts, bad labels, truncated bodies, bad
//! compression pointers), and servers spend work on them, so traces keep them for their bytes.
//! [`Partial`] is the part of such a message that reads: the header whenever the message has
//! 12 bytes, and the first question when its name and fixed fields read. It trusts nothing
//! else: counts, later sections and EDNS are not looked at.

use crate::edit::Question;
use crate::message::{Header, HEADER_LEN};
use crate::wire::{read_name, skip_name, u16_at};
use crate::{Class, Rtype};

/// The readable part of a message that [`Message::parse`](crate::Message::parse) rejects (or of
/// any byte string of at least 12 bytes).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Partial {
    /// The header, as it is.
    pub header: Header,
    /// The first question, when the header announces one and its name, type and class read
    /// (a name right after the header cannot hold a valid compression pointer, so it is read
    /// only from plain labels).
    pub question: Option<Question>,
}

impl Partial {
    /// Reads the header and the first question of `wire`; `None` when `wire` is shorter than a
    /// header.
    pub fn read(wire: &[u8]) -> Option<Partial> {
        let header = Header::read(wire)?;
        let question = (header.qdcount > 0).then(|| first_question(wire)).flatten();
        Some(Partial { header, question })
    }
}

fn first_question(wire: &[u8]) -> Option<Question> {
    let fixed = skip_name(wire, HEADER_LEN).ok()?;
    let qtype = Rtype(u16_at(wire, fixed).ok()?);
    let qclass = Class(u16_at(wire, fixed + 2).ok()?);
    let mut name = Vec::new();
    read_name(wire, HEADER_LEN, &mut name).ok()?;
    Some(Question {
        name,
        qtype,
        qclass,
    })
}
