//! An answer in the form it is compared in: header values, the question and each section's
//! records as sorted sets of canonical bytes, EDNS values and options. Names are expanded
//! (compression removed) and lowercased unless the criteria make case count; TTLs are left out
//! unless they count; RRSIGs keep what the criteria compare of them.
//!
//! A [`Canon`] is filled in place ([`Canon::fill`]) so that its buffers are reused from one
//! answer to the next: comparing a million answers allocates about as much as comparing one.

use crate::criteria::{Criteria, RrsigMode};
use crate::field::Field;
use ldplayer_dns::{option_code as code, Message, Rtype, Section, HEADER_LEN};

/// The extended DNS error option (RFC 8914).
const EDE: u16 = 15;

/// What a target gave for a query.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Kind {
    /// No answer: a timeout or an error (or no result at all).
    #[default]
    Missing,
    /// An answer that is not a well-formed DNS message.
    Malformed,
    /// A well-formed answer.
    Message,
}

/// A set of records (or options): canonical bytes, compared without regard to order.
#[derive(Debug, Default, Clone)]
struct Set {
    buf: Vec<u8>,
    spans: Vec<(u32, u32)>,
}

impl Set {
    fn clear(&mut self) {
        self.buf.clear();
        self.spans.clear();
    }

    /// Starts an element; its bytes are what is appended to `buf` until [`end`](Self::end).
    fn start(&self) -> usize {
        self.buf.len()
    }

    fn end(&mut self, start: usize) {
        self.spans.push((start as u32, self.buf.len() as u32));
    }

    fn item(&self, span: (u32, u32)) -> &[u8] {
        &self.buf[span.0 as usize..span.1 as usize]
    }

    /// Sorts the elements, so that sets compare element by element.
    fn sort(&mut self) {
        let buf = &self.buf;
        self.spans.sort_unstable_by(|a, b| {
            buf[a.0 as usize..a.1 as usize].cmp(&buf[b.0 as usize..b.1 as usize])
        });
    }

    fn same(&self, other: &Set) -> bool {
        self.spans.len() == other.spans.len()
            && self
                .spans
                .iter()
                .zip(&other.spans)
                .all(|(&a, &b)| self.item(a) == other.item(b))
    }
}

/// The EDNS part of an answer.
#[derive(Debug, Default, Clone)]
struct Edns {
    present: bool,
    version: u8,
    bufsize: u16,
    dnssec_ok: bool,
    /// Options (code, then data) by code: NSID, ECS, padding (length only), EDE.
    nsid: Set,
    ecs: Set,
    padding: Set,
    ede: Set,
}

impl Edns {
    /// The sets of options, each to be cleared or sorted alike.
    fn options_mut(&mut self) -> [&mut Set; 4] {
        [
            &mut self.nsid,
            &mut self.ecs,
            &mut self.padding,
            &mut self.ede,
        ]
    }
}

/// An answer as compared; see the module's documentation.
#[derive(Debug, Default, Clone)]
pub struct Canon {
    kind: Kind,
    /// The bytes of a malformed answer.
    malformed: Vec<u8>,
    flags: u16,
    rcode: u16,
    question: Vec<u8>,
    /// Answer (RRSIGs aside), answer RRSIGs, authority, additional.
    sections: [Set; 4],
    edns: Edns,
    /// The expanded message, reused.
    expanded: Vec<u8>,
}

impl Canon {
    /// What the answer is: none, malformed, a message.
    pub fn kind(&self) -> Kind {
        self.kind
    }

    /// Fills this with `answer` (`None`: no answer) under `criteria`.
    pub fn fill(&mut self, answer: Option<&[u8]>, criteria: &Criteria) {
        self.malformed.clear();
        self.question.clear();
        for s in &mut self.sections {
            s.clear();
        }
        self.edns.present = false;
        for s in self.edns.options_mut() {
            s.clear();
        }
        let Some(wire) = answer else {
            self.kind = Kind::Missing;
            return;
        };
        let expanded = match ldplayer_dns::decompress(wire) {
            Ok(e) => e,
            Err(_) => return self.malformed(wire),
        };
        self.expanded = expanded;
        let expanded = std::mem::take(&mut self.expanded);
        if self.fill_message(&expanded, criteria).is_none() {
            self.malformed(wire);
        }
        self.expanded = expanded;
    }

    fn malformed(&mut self, wire: &[u8]) {
        self.kind = Kind::Malformed;
        self.malformed.extend_from_slice(wire);
    }

    /// Fills from an expanded (uncompressed) message; `None` when it does not parse.
    fn fill_message(&mut self, wire: &[u8], criteria: &Criteria) -> Option<()> {
        let msg = Message::parse(wire).ok()?;
        self.kind = Kind::Message;
        self.flags = msg.header().flags;
        self.rcode = msg.rcode().0;
        // The question section, names uncompressed: its bytes, names lowercased.
        self.question
            .extend_from_slice(wire.get(HEADER_LEN..msg.question_end())?);
        if !criteria.case {
            let mut p = 0;
            for _ in 0..msg.header().qdcount {
                p = lower_name(&mut self.question, p)? + 4;
            }
        }
        let mut owner = Vec::new();
        for rr in msg.records() {
            let at = match rr.section {
                Section::Answer if rr.rtype == Rtype::RRSIG => 1,
                Section::Answer => 0,
                Section::Authority => 2,
                Section::Additional if rr.rtype == Rtype::OPT || rr.rtype == Rtype::TSIG => {
                    continue
                }
                Section::Additional => 3,
            };
            let set = &mut self.sections[at];
            let start = set.start();
            owner.clear();
            rr.owner(&mut owner);
            let o = set.buf.len();
            set.buf.extend_from_slice(&owner);
            if !criteria.case {
                lower_name(&mut set.buf[o..], 0)?;
            }
            set.buf.extend_from_slice(&rr.rtype.0.to_be_bytes());
            set.buf.extend_from_slice(&rr.class.0.to_be_bytes());
            if criteria.ttl {
                set.buf.extend_from_slice(&rr.ttl.to_be_bytes());
            }
            let rdata = rr.rdata();
            let r = set.buf.len();
            if rr.rtype == Rtype::RRSIG && criteria.rrsig == RrsigMode::Covered {
                // Type covered, algorithm, labels; key tag; signer.
                set.buf.extend_from_slice(rdata.get(..4)?);
                set.buf.extend_from_slice(rdata.get(16..18)?);
                let signer_end = name_end(rdata, 18)?;
                set.buf.extend_from_slice(&rdata[18..signer_end]);
                if !criteria.case {
                    lower_name(&mut set.buf[r..], 6)?;
                }
            } else {
                set.buf.extend_from_slice(rdata);
                if !criteria.case {
                    for at in rdata_names(rr.rtype, rdata) {
                        lower_name(&mut set.buf[r..], at)?;
                    }
                }
            }
            set.end(start);
        }
        for s in &mut self.sections {
            s.sort();
        }
        if let Some(e) = msg.edns() {
            self.edns.present = true;
            self.edns.version = e.version;
            self.edns.bufsize = e.udp_size;
            self.edns.dnssec_ok = e.dnssec_ok();
            let mut opts = msg.edns_options();
            while opts.len() >= 4 {
                let code = u16::from_be_bytes([opts[0], opts[1]]);
                let len = usize::from(u16::from_be_bytes([opts[2], opts[3]]));
                let data = opts.get(4..4 + len)?;
                let set = match code {
                    code::NSID => &mut self.edns.nsid,
                    code::ECS => &mut self.edns.ecs,
                    code::PADDING => &mut self.edns.padding,
                    EDE => &mut self.edns.ede,
                    _ => {
                        opts = &opts[4 + len..];
                        continue;
                    }
                };
                let start = set.start();
                if code == code::PADDING {
                    set.buf.extend_from_slice(&(len as u16).to_be_bytes());
                } else {
                    set.buf.extend_from_slice(data);
                }
                set.end(start);
                opts = &opts[4 + len..];
            }
            for s in self.edns.options_mut() {
                s.sort();
            }
        }
        Some(())
    }

    /// Whether `self` and `other` differ in `field`. Between an answer and none only
    /// [`Field::Missing`] differs; between a malformed answer and another answer only
    /// [`Field::Malformed`]; every other field compares two well-formed messages.
    pub fn differs(&self, other: &Canon, field: Field) -> bool {
        match (self.kind, other.kind) {
            (Kind::Missing, Kind::Missing) => false,
            (Kind::Missing, _) | (_, Kind::Missing) => field == Field::Missing,
            (Kind::Malformed, Kind::Malformed) => {
                field == Field::Malformed && self.malformed != other.malformed
            }
            (Kind::Malformed, _) | (_, Kind::Malformed) => field == Field::Malformed,
            (Kind::Message, Kind::Message) => self.message_differs(other, field),
        }
    }

    fn message_differs(&self, o: &Canon, field: Field) -> bool {
        let (a, b) = (&self.edns, &o.edns);
        // An EDNS value differs only where both have EDNS: its absence is `edns`.
        let both = a.present && b.present;
        match field {
            Field::Missing | Field::Malformed => false,
            Field::Opcode => (self.flags >> 11) & 0xF != (o.flags >> 11) & 0xF,
            Field::Rcode => self.rcode != o.rcode,
            Field::Question => self.question != o.question,
            Field::Answer => !self.sections[0].same(&o.sections[0]),
            Field::AnswerRrsig => !self.sections[1].same(&o.sections[1]),
            Field::Authority => !self.sections[2].same(&o.sections[2]),
            Field::Additional => !self.sections[3].same(&o.sections[3]),
            Field::Edns => a.present != b.present,
            Field::EdnsVersion => both && a.version != b.version,
            Field::EdnsBufsize => both && a.bufsize != b.bufsize,
            Field::EdnsDo => both && a.dnssec_ok != b.dnssec_ok,
            Field::EdnsNsid => both && !a.nsid.same(&b.nsid),
            Field::EdnsEcs => both && !a.ecs.same(&b.ecs),
            Field::EdnsPadding => both && !a.padding.same(&b.padding),
            Field::EdnsEde => both && !a.ede.same(&b.ede),
            flag => flag
                .flag_bit()
                .is_some_and(|bit| self.flags & bit != o.flags & bit),
        }
    }

    /// Whether `self` and `other` differ in any of `fields`.
    pub fn differs_in_any(&self, other: &Canon, fields: &[Field]) -> bool {
        fields.iter().any(|&f| self.differs(other, f))
    }
}

/// The end of the uncompressed name at `at` in `b`.
fn name_end(b: &[u8], mut at: usize) -> Option<usize> {
    loop {
        let len = usize::from(*b.get(at)?);
        if len == 0 {
            return Some(at + 1);
        }
        if len & 0xC0 != 0 {
            return None;
        }
        at += 1 + len;
    }
}

/// Lowercases the uncompressed name at `at` in `b`; returns its end. Its length octets (below
/// 64) are not letters, so the whole name is lowercased at once.
fn lower_name(b: &mut [u8], at: usize) -> Option<usize> {
    let end = name_end(b, at)?;
    b[at..end].make_ascii_lowercase();
    Some(end)
}

/// Where the names lie in the (uncompressed) RDATA of a record of type `rtype`: those whose
/// case does not matter (RFC 4034 §6.2's list, for the types servers and resolvers answer with).
fn rdata_names(rtype: Rtype, rdata: &[u8]) -> impl Iterator<Item = usize> {
    let mut out = [None, None];
    match rtype.0 {
        // NS, MD, MF, CNAME, MB, MG, MR, PTR, DNAME, NSEC
        2 | 3 | 4 | 5 | 7 | 8 | 9 | 12 | 39 | 47 => out[0] = Some(0),
        // SOA, MINFO, RP: two names
        6 | 14 | 17 => {
            out[0] = Some(0);
            out[1] = name_end(rdata, 0);
        }
        // MX, AFSDB, RT, KX
        15 | 18 | 21 | 36 => out[0] = Some(2),
        // SRV
        33 => out[0] = Some(6),
        _ => {}
    }
    let len = rdata.len();
    out.into_iter().flatten().filter(move |&at| at < len)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A record as the tests write it: owner, type, TTL, RDATA (compressed or not).
    type Rec<'a> = (&'a [u8], u16, u32, &'a [u8]);

    /// A response for `name` A with the given answer, authority and additional records.
    pub(crate) fn message(
        flags: u16,
        name: &[u8],
        sections: [&[Rec<'_>]; 3],
        opt: Option<&[u8]>,
    ) -> Vec<u8> {
        let mut m = vec![0x12, 0x34];
        m.extend_from_slice(&flags.to_be_bytes());
        let counts = [
            1u16,
            sections[0].len() as u16,
            sections[1].len() as u16,
            sections[2].len() as u16 + u16::from(opt.is_some()),
        ];
        for c in counts {
            m.extend_from_slice(&c.to_be_bytes());
        }
        m.extend_from_slice(name);
        m.extend_from_slice(&[0, 1, 0, 1]);
        for section in sections {
            for (owner, rtype, ttl, rdata) in section {
                m.extend_from_slice(owner);
                m.extend_from_slice(&rtype.to_be_bytes());
                m.extend_from_slice(&[0, 1]);
                m.extend_from_slice(&ttl.to_be_bytes());
                m.extend_from_slice(&(rdata.len() as u16).to_be_bytes());
                m.extend_from_slice(rdata);
            }
        }
        if let Some(options) = opt {
            m.extend_from_slice(&[0, 0, 41, 0x04, 0xd0, 0, 0, 0x80, 0]);
            m.extend_from_slice(&(options.len() as u16).to_be_bytes());
            m.extend_from_slice(options);
        }
        m
    }

    const WWW: &[u8] = b"\x03www\x07example\x00";
    const WWW_UPPER: &[u8] = b"\x03WWW\x07Example\x00";
    const PTR: &[u8] = &[0xc0, 12];

    /// A response (AA) for www.example. A with `records` as its answer and nothing else.
    fn answers(records: &[Rec<'_>]) -> Vec<u8> {
        message(0x8400, WWW, [records, &[], &[]], None)
    }

    /// A response (AA, RD) for www.example. A: one address, example.'s NS `ns` in authority,
    /// `additional` records and the OPT `options`.
    fn with_ns(ns: &[u8], additional: &[Rec<'_>], options: Option<&[u8]>) -> Vec<u8> {
        message(
            0x8500,
            WWW,
            [
                &[(PTR, 1, 300, &[192, 0, 2, 1])],
                &[(b"\x07example\x00", 2, 300, ns)],
                additional,
            ],
            options,
        )
    }

    fn canon(wire: &[u8], criteria: &Criteria) -> Canon {
        let mut c = Canon::default();
        c.fill(Some(wire), criteria);
        c
    }

    fn differing(a: &[u8], b: &[u8], criteria: &Criteria) -> Vec<Field> {
        let (a, b) = (canon(a, criteria), canon(b, criteria));
        Field::ALL
            .into_iter()
            .filter(|&f| a.differs(&b, f))
            .collect()
    }

    #[test]
    fn order_compression_case_and_ttl_do_not_count_by_default() {
        let c = Criteria::default();
        let a = answers(&[
            (PTR, 1, 300, &[192, 0, 2, 1]),
            (PTR, 1, 300, &[192, 0, 2, 2]),
        ]);
        let b = answers(&[
            (WWW_UPPER, 1, 60, &[192, 0, 2, 2]),
            (WWW, 1, 300, &[192, 0, 2, 1]),
        ]);
        assert_eq!(differing(&a, &b, &c), vec![]);
        let strict = Criteria {
            ttl: true,
            ..Criteria::default()
        };
        assert_eq!(differing(&a, &b, &strict), vec![Field::Answer]);
        let cased = Criteria {
            case: true,
            ..Criteria::default()
        };
        assert_eq!(differing(&a, &b, &cased), vec![Field::Answer]);
    }

    #[test]
    fn each_field_on_its_own() {
        let c = Criteria::default();
        let ns: &[u8] = b"\x02ns\x07example\x00";
        let glue: &[Rec<'_>] = &[(ns, 1, 300, &[192, 0, 2, 53])];
        let base = with_ns(ns, glue, Some(&[0, 3, 0, 2, b'a', b'b']));
        // AD set: flags.ad only.
        let mut ad = base.clone();
        ad[3] |= 0x20;
        assert_eq!(differing(&base, &ad, &c), vec![Field::FlagAd]);
        // NXDOMAIN: rcode only.
        let mut nx = base.clone();
        nx[3] |= 3;
        assert_eq!(differing(&base, &nx, &c), vec![Field::Rcode]);
        // No additional section (minimal responses): additional only.
        let minimal = with_ns(
            b"\x02NS\x07example\x00",
            &[],
            Some(&[0, 3, 0, 2, b'a', b'b']),
        );
        assert_eq!(differing(&base, &minimal, &c), vec![Field::Additional]);
        // Another NSID, and no EDNS at all.
        let other_nsid = with_ns(ns, glue, Some(&[0, 3, 0, 2, b'c', b'd']));
        assert_eq!(differing(&base, &other_nsid, &c), vec![Field::EdnsNsid]);
        let plain = with_ns(ns, glue, None);
        assert_eq!(differing(&base, &plain, &c), vec![Field::Edns]);
        // None, and junk.
        let mut none = Canon::default();
        none.fill(None, &c);
        assert!(none.differs(&canon(&base, &c), Field::Missing));
        assert!(!none.differs(&canon(&base, &c), Field::Rcode));
        assert_eq!(differing(&base, &base[..20], &c), vec![Field::Malformed]);
        assert_eq!(differing(&base[..20], &base[..20], &c), vec![]);
    }

    #[test]
    fn rrsigs_by_what_they_cover_or_whole() {
        let sig = |expire: u8| {
            let mut r = vec![
                0, 1, 8, 2, 0, 0, 1, 44, expire, 0, 0, 0, 1, 0, 0, 0, 0x12, 0x34,
            ];
            r.extend_from_slice(b"\x07Example\x00");
            r.extend_from_slice(&[0xab; 20]);
            r
        };
        let (s1, s2) = (sig(1), sig(2));
        let a = answers(&[(PTR, 1, 300, &[192, 0, 2, 1]), (PTR, 46, 300, &s1)]);
        let b = answers(&[(PTR, 1, 300, &[192, 0, 2, 1]), (PTR, 46, 300, &s2)]);
        assert_eq!(differing(&a, &b, &Criteria::default()), vec![]);
        let full = Criteria {
            rrsig: RrsigMode::Full,
            ..Criteria::default()
        };
        assert_eq!(differing(&a, &b, &full), vec![Field::AnswerRrsig]);
        let unsigned = answers(&[(PTR, 1, 300, &[192, 0, 2, 1])]);
        assert_eq!(
            differing(&a, &unsigned, &Criteria::default()),
            vec![Field::AnswerRrsig]
        );
    }
}
