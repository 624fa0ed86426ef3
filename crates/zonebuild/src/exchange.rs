//! One response of an authoritative nameserver, parsed into the records the constructor may use.

use std::net::IpAddr;

use bytes::Bytes;
use domain::base::iana::{Rcode, Rtype};
use domain::base::name::FlattenInto;
use domain::base::{Message, Name, ParsedName, Record, ToName};
use domain::rdata::AllRecordData;

/// Record data with names decompressed, as kept in rebuilt zones.
pub type Rdata = AllRecordData<Bytes, Name<Bytes>>;
/// One resource record.
pub type Rr = Record<Name<Bytes>, Rdata>;

/// A response from a nameserver: who sent it, what it answered, and its sections.
#[derive(Debug, Clone)]
pub struct Exchange {
    /// The nameserver address the response came from (the address the query was sent to).
    pub server: IpAddr,
    /// The AA flag: the answer section is authoritative data of the server's zone.
    pub authoritative: bool,
    /// The question's name.
    pub qname: Name<Bytes>,
    /// The question's type.
    pub qtype: Rtype,
    /// NOERROR or NXDOMAIN (other responses are not data).
    pub rcode: Rcode,
    /// Answer section.
    pub answer: Vec<Rr>,
    /// Authority section.
    pub authority: Vec<Rr>,
    /// Additional section, without OPT and TSIG.
    pub additional: Vec<Rr>,
}

/// Why a response was not used.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Unused {
    /// Not a DNS response, or its records could not be parsed.
    Malformed,
    /// TC set: the records are incomplete (the TCP retry, if captured, is used instead).
    Truncated,
    /// RA set without AA: a recursive resolver's answer, not a nameserver's.
    Recursive,
    /// A response code other than NOERROR and NXDOMAIN (REFUSED, SERVFAIL, ...).
    Rcode,
    /// No question.
    NoQuestion,
}

impl Unused {
    /// A short name for reports.
    pub fn name(self) -> &'static str {
        match self {
            Unused::Malformed => "malformed",
            Unused::Truncated => "truncated",
            Unused::Recursive => "recursive",
            Unused::Rcode => "rcode",
            Unused::NoQuestion => "no-question",
        }
    }
}

impl Exchange {
    /// Parses the response `wire` that `server` sent.
    pub fn parse(server: IpAddr, wire: &[u8]) -> Result<Exchange, Unused> {
        Exchange::parse_bytes(server, Bytes::copy_from_slice(wire))
    }

    /// What the header alone says against using the response `wire` (not a response, TC, RA
    /// without AA, an RCODE other than NOERROR and NXDOMAIN): the checks of
    /// [`parse`](Self::parse) that need no parsing.
    pub fn unused_by_header(wire: &[u8]) -> Option<Unused> {
        let (Some(&flags), Some(&flags2)) = (wire.get(2), wire.get(3)) else {
            return Some(Unused::Malformed);
        };
        if wire.len() < 12 || flags & 0x80 == 0 {
            return Some(Unused::Malformed);
        }
        if flags & 0x02 != 0 {
            return Some(Unused::Truncated);
        }
        let (aa, ra) = (flags & 0x04 != 0, flags2 & 0x80 != 0);
        if ra && !aa {
            return Some(Unused::Recursive);
        }
        let rcode = flags2 & 0x0f;
        if rcode != Rcode::NOERROR.to_int() && rcode != Rcode::NXDOMAIN.to_int() {
            return Some(Unused::Rcode);
        }
        None
    }

    /// [`parse`](Self::parse) of a message already in its own buffer (no copy).
    pub fn parse_bytes(server: IpAddr, wire: Bytes) -> Result<Exchange, Unused> {
        if let Some(why) = Exchange::unused_by_header(&wire) {
            return Err(why);
        }
        let msg = Message::from_octets(wire).map_err(|_| Unused::Malformed)?;
        let h = msg.header();
        let q = msg.first_question().ok_or(Unused::NoQuestion)?;
        let qname: Name<Bytes> = q.qname().to_name();
        // Sized from the header's counts: grown one by one, the three vectors of a million
        // responses took a quarter of the parse and held twice the memory.
        let counts = msg.header_counts();
        let mut sections: [Vec<Rr>; 3] = [counts.ancount(), counts.nscount(), counts.arcount()]
            .map(|n| Vec::with_capacity(usize::from(n)));
        let mut section = msg.answer().map_err(|_| Unused::Malformed)?;
        for out in &mut sections {
            for rec in section.into_records::<AllRecordData<Bytes, ParsedName<Bytes>>>() {
                let rec = rec.map_err(|_| Unused::Malformed)?;
                if matches!(rec.rtype(), Rtype::OPT | Rtype::TSIG | Rtype::SIG) {
                    continue;
                }
                let flat: Rr = rec.try_flatten_into().map_err(|_| Unused::Malformed)?;
                out.push(flat);
            }
            match section.next_section() {
                Ok(Some(next)) => section = next,
                Ok(None) => break,
                Err(_) => return Err(Unused::Malformed),
            }
        }
        let [answer, authority, additional] = sections;
        Ok(Exchange {
            server,
            authoritative: h.aa(),
            qname,
            qtype: q.qtype(),
            rcode: h.rcode(),
            answer,
            authority,
            additional,
        })
    }

    /// True for a referral: no answer, not authoritative, NS records in the authority section.
    pub fn is_referral(&self) -> bool {
        !self.authoritative
            && self.answer.is_empty()
            && self.authority.iter().any(|r| r.rtype() == Rtype::NS)
    }
}
