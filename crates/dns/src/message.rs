//! The read-only view of a DNS message.

use crate::error::DnsError;
use crate::records::{Records, Rr, Section};
use crate::tsig::Tsig;
use crate::wire::{read_name, u16_at, walk, RecordPos};
use crate::{Class, Rcode, Rtype};

/// Length of the fixed DNS header.
pub const HEADER_LEN: usize = 12;

/// Bits of the header's flags word (RFC 1035 §4.1.1, RFC 4035 §3.2).
pub mod flag {
    /// Response.
    pub const QR: u16 = 0x8000;
    /// Authoritative answer.
    pub const AA: u16 = 0x0400;
    /// Truncated.
    pub const TC: u16 = 0x0200;
    /// Recursion desired.
    pub const RD: u16 = 0x0100;
    /// Recursion available.
    pub const RA: u16 = 0x0080;
    /// The reserved bit.
    pub const Z: u16 = 0x0040;
    /// Authentic data.
    pub const AD: u16 = 0x0020;
    /// Checking disabled.
    pub const CD: u16 = 0x0010;
    /// The single-bit flags that the text format lists by mnemonic, in presentation order.
    pub const NAMED: [(u16, &str); 7] = [
        (AA, "aa"),
        (TC, "tc"),
        (RD, "rd"),
        (RA, "ra"),
        (Z, "z"),
        (AD, "ad"),
        (CD, "cd"),
    ];
    /// Mask of all the named single-bit flags.
    pub const NAMED_MASK: u16 = AA | TC | RD | RA | Z | AD | CD;
}

/// The fixed header of a message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Header {
    /// Message ID.
    pub id: u16,
    /// The flags word: QR, opcode, the single-bit flags and the low four bits of the RCODE.
    pub flags: u16,
    /// Number of questions.
    pub qdcount: u16,
    /// Number of answer records.
    pub ancount: u16,
    /// Number of authority records.
    pub nscount: u16,
    /// Number of additional records.
    pub arcount: u16,
}

impl Header {
    /// Reads the header at the start of `wire`, or `None` when `wire` is shorter than 12 bytes.
    pub fn read(wire: &[u8]) -> Option<Header> {
        let h = wire.get(..HEADER_LEN)?;
        let word = |i: usize| u16::from_be_bytes([h[i], h[i + 1]]);
        Some(Header {
            id: word(0),
            flags: word(2),
            qdcount: word(4),
            ancount: word(6),
            nscount: word(8),
            arcount: word(10),
        })
    }
    /// True for a response, false for a query.
    pub fn qr(&self) -> bool {
        self.flags & flag::QR != 0
    }
    /// The four-bit opcode.
    pub fn opcode(&self) -> u8 {
        ((self.flags >> 11) & 0xF) as u8
    }
    /// The low four bits of the response code.
    pub fn rcode_low(&self) -> u8 {
        (self.flags & 0xF) as u8
    }
}

/// The EDNS OPT pseudo-record of a message (RFC 6891).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Edns {
    /// Offset of the OPT record (its owner name) in the message.
    pub offset: usize,
    /// Offset of the OPT RDATA (the options).
    pub rdata: usize,
    /// End of the OPT record.
    pub end: usize,
    /// Requestor's UDP payload size (the CLASS field).
    pub udp_size: u16,
    /// Upper eight bits of the extended RCODE.
    pub ext_rcode: u8,
    /// EDNS version.
    pub version: u8,
    /// The EDNS flags word; bit 15 is DO.
    pub flags: u16,
}

impl Edns {
    /// The DNSSEC OK bit.
    pub fn dnssec_ok(&self) -> bool {
        self.flags & 0x8000 != 0
    }
}

/// A parsed, validated view of a DNS message.
///
/// Parsing walks every name and record, so a `Message` is known to be well-formed; it keeps
/// offsets into the bytes rather than copies.
#[derive(Debug, Clone, Copy)]
pub struct Message<'a> {
    wire: &'a [u8],
    header: Header,
    /// Offset of the first question's name, and its type and class.
    question: Option<(usize, Rtype, Class)>,
    /// End of the question section.
    question_end: usize,
    edns: Option<Edns>,
    /// The last record of the additional section, when it is a TSIG record.
    tsig: Option<RecordPos>,
    end: usize,
}

impl<'a> Message<'a> {
    /// Parses and validates a message.
    pub fn parse(wire: &'a [u8]) -> Result<Self, DnsError> {
        let header = Header::read(wire).ok_or(DnsError::ShortHeader)?;
        let mut question = None;
        let mut question_end = HEADER_LEN;
        let mut edns = None;
        let mut tsig = None;
        let end = walk(wire, |section, rr| {
            if section == 3 {
                tsig = (rr.rr_type == Rtype::TSIG).then_some(rr);
            }
            match section {
                0 => {
                    if question.is_none() {
                        question = Some((rr.owner, rr.rr_type, Class(u16_at(wire, rr.fixed + 2)?)));
                    }
                    question_end = rr.end;
                }
                3 if rr.rr_type == Rtype::OPT => {
                    if edns.is_some() || wire[rr.owner] != 0 {
                        return Err(DnsError::BadOpt);
                    }
                    let ttl = &wire[rr.fixed + 4..rr.fixed + 8];
                    edns = Some(Edns {
                        offset: rr.owner,
                        rdata: rr.rdata,
                        end: rr.end,
                        udp_size: u16_at(wire, rr.fixed + 2)?,
                        ext_rcode: ttl[0],
                        version: ttl[1],
                        flags: u16::from_be_bytes([ttl[2], ttl[3]]),
                    });
                }
                _ => {}
            }
            Ok(())
        })?;
        Ok(Message {
            wire,
            header,
            question,
            question_end,
            edns,
            tsig,
            end,
        })
    }

    /// The bytes the message was parsed from.
    pub fn wire(&self) -> &'a [u8] {
        self.wire
    }
    /// The header.
    pub fn header(&self) -> &Header {
        &self.header
    }
    /// The EDNS OPT record, if any.
    pub fn edns(&self) -> Option<&Edns> {
        self.edns.as_ref()
    }
    /// The full response code: the header's four bits extended by the OPT record's eight.
    pub fn rcode(&self) -> Rcode {
        Rcode::from_parts(
            self.header.rcode_low(),
            self.edns.map_or(0, |e| e.ext_rcode),
        )
    }
    /// Type of the first question, if any.
    pub fn qtype(&self) -> Option<Rtype> {
        self.question.map(|q| q.1)
    }
    /// Class of the first question, if any.
    pub fn qclass(&self) -> Option<Class> {
        self.question.map(|q| q.2)
    }
    /// Offset of the first question's name, if any.
    pub fn qname_offset(&self) -> Option<usize> {
        self.question.map(|q| q.0)
    }
    /// Appends the first question's name, expanded to uncompressed wire form, to `out`; returns
    /// false when there is no question.
    pub fn qname_wire(&self, out: &mut Vec<u8>) -> bool {
        match self.question {
            // The walk validated the name, so reading it cannot fail.
            Some((pos, ..)) => read_name(self.wire, pos, out).is_ok(),
            None => false,
        }
    }
    /// End of the question section.
    pub fn question_end(&self) -> usize {
        self.question_end
    }
    /// End of the last record; bytes after it are trailing data that is not part of the message.
    pub fn end(&self) -> usize {
        self.end
    }
    /// Bytes after the last record (junk some captures carry).
    pub fn trailing(&self) -> &'a [u8] {
        &self.wire[self.end..]
    }
    /// The resource records after the question section (answer, authority and additional; in
    /// an UPDATE, prerequisite, update and additional), in message order.
    pub fn records(&self) -> Records<'a> {
        Records::new(self.wire, &self.header, self.question_end)
    }
    /// The TSIG record (RFC 8945), when the last record of the additional section is one (found
    /// while parsing: no walk here).
    pub fn tsig(&self) -> Option<Result<Tsig<'a>, DnsError>> {
        let pos = self.tsig?;
        Rr::at(self.wire, Section::Additional, pos).and_then(|rr| rr.tsig())
    }
    /// The EDNS options (the OPT RDATA), empty when there is no OPT record.
    pub fn edns_options(&self) -> &'a [u8] {
        match self.edns {
            Some(e) => &self.wire[e.rdata..e.end],
            None => &[],
        }
    }
}
