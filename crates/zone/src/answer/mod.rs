//! Authoritative answering (RFC 1034 §4.3.2, RFC 4035 §3.1, RFC 5155 §7.2, RFC 6672, RFC 4592).

use ldplayer_dns::{flag, Class, Message, Rcode, Rtype};

use crate::set::ZoneSet;

mod ctx;
mod message;
mod parts;

use ctx::Ctx;
use message::{error_response, push_opt, set_counts};
use parts::NameBuf;

/// Options of the answering server.
#[derive(Debug, Clone, Copy)]
pub struct AnswerOptions {
    /// The server's EDNS UDP payload size, echoed in the OPT record and capping the client's.
    pub edns_size: u16,
    /// The query came over TCP: no size limit below 65535.
    pub tcp: bool,
    /// Minimal responses (knot's behaviour): no apex NS in the authority section of positive
    /// answers. The default, off, is nsd's. (Additional addresses for NS/MX/SRV targets are
    /// added either way.)
    pub minimal: bool,
    /// Longest CNAME/DNAME chain followed inside a zone.
    pub max_chain: u8,
}

impl Default for AnswerOptions {
    fn default() -> Self {
        AnswerOptions {
            edns_size: 1232,
            tcp: false,
            minimal: false,
            max_chain: 8,
        }
    }
}

/// What kind of response was produced.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// Authoritative data in the answer section (possibly after CNAME/DNAME).
    Answer,
    /// The name exists but not the type.
    NoData,
    /// The name does not exist.
    NxDomain,
    /// A delegation to a child zone.
    Referral,
    /// The name is in no served zone.
    Refused,
    /// Malformed query (or QDCOUNT ≠ 1).
    FormErr,
    /// Opcode or type not implemented.
    NotImp,
    /// Unsupported EDNS version.
    BadVers,
    /// A DNAME substitution produced a name that is too long.
    YxDomain,
}

/// Summary of a response written by [`ZoneSet::answer_into`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Outcome {
    /// The full response code.
    pub rcode: Rcode,
    /// The kind.
    pub kind: Kind,
    /// TC was set.
    pub truncated: bool,
    /// How many labels the origin of the zone that answered has (0 the root, 1 a TLD);
    /// `None` when no zone did. A recursive resolver's upstream queries count by level so.
    pub zone_labels: Option<u8>,
}

/// A response with its bytes.
#[derive(Debug, Clone)]
pub struct Response {
    /// The message.
    pub wire: Vec<u8>,
    /// Its summary.
    pub outcome: Outcome,
}

impl ZoneSet {
    /// Answers a query (wire format) into `out`, which is cleared first. Returns `None` when no
    /// response is due (shorter than a header, or QR set).
    pub fn answer_into(
        &self,
        query: &[u8],
        opts: &AnswerOptions,
        out: &mut Vec<u8>,
    ) -> Option<Outcome> {
        out.clear();
        if query.len() < 12 || query[2] & 0x80 != 0 {
            return None;
        }
        let Ok(msg) = Message::parse(query) else {
            return Some(error_response(
                None,
                query,
                Rcode::FORMERR,
                Kind::FormErr,
                opts,
                out,
            ));
        };
        let h = msg.header();
        if h.opcode() != 0 {
            return Some(error_response(
                Some(&msg),
                query,
                Rcode::NOTIMP,
                Kind::NotImp,
                opts,
                out,
            ));
        }
        if h.qdcount != 1 || h.ancount != 0 || h.nscount != 0 {
            return Some(error_response(
                Some(&msg),
                query,
                Rcode::FORMERR,
                Kind::FormErr,
                opts,
                out,
            ));
        }
        let edns = msg.edns().copied();
        if let Some(e) = edns {
            if e.version != 0 {
                return Some(error_response(
                    Some(&msg),
                    query,
                    Rcode::BADVERS,
                    Kind::BadVers,
                    opts,
                    out,
                ));
            }
        }
        let qtype = msg.qtype().unwrap_or_default();
        let qclass = msg.qclass().unwrap_or_default();
        if matches!(
            qtype,
            Rtype::AXFR | Rtype::IXFR | Rtype::MAILA | Rtype::MAILB
        ) || qtype == Rtype::OPT
        {
            let rc = if qtype == Rtype::OPT {
                Rcode::FORMERR
            } else {
                Rcode::NOTIMP
            };
            let k = if qtype == Rtype::OPT {
                Kind::FormErr
            } else {
                Kind::NotImp
            };
            return Some(error_response(Some(&msg), query, rc, k, opts, out));
        }
        let qend = msg.question_end();
        let qname_raw = &query[12..qend - 4];
        let qn = NameBuf::from(qname_raw);
        let zone = if qclass == Class::IN || qclass == Class::ANY {
            self.find(qn.get(), qtype)
        } else {
            None
        };
        let Some(zone) = zone else {
            return Some(error_response(
                Some(&msg),
                query,
                Rcode::REFUSED,
                Kind::Refused,
                opts,
                out,
            ));
        };
        let zone_labels = crate::name::label_count(&zone.origin).min(255) as u8;
        let dnssec = edns.is_some_and(|e| e.dnssec_ok());
        let mut limit = if opts.tcp {
            65535
        } else {
            match edns {
                Some(e) => (e.udp_size.min(opts.edns_size) as usize).max(512),
                None => 512,
            }
        };
        if edns.is_some() {
            limit -= 11;
        }
        // Header and question.
        out.extend_from_slice(&query[0..12]);
        out.extend_from_slice(&query[12..qend]);
        let mut ctx = Ctx::new(out, limit, dnssec, opts.minimal);
        ctx.resolve(self, zone, qn.get(), qtype, opts.max_chain);
        let (ns, mut ar) = ctx.write_authority_and_additional();
        let an = ctx.an;
        let truncated = ctx.truncated;
        let rcode = ctx.rcode;
        let kind = ctx.kind;
        let aa = ctx.aa;
        let fl = h.flags;
        let mut flags = flag::QR | (fl & (flag::RD | flag::CD)) | rcode.header_bits() as u16;
        if aa {
            flags |= flag::AA;
        }
        if truncated {
            flags |= flag::TC;
        }
        out[2..4].copy_from_slice(&flags.to_be_bytes());
        if let Some(e) = edns {
            push_opt(out, opts.edns_size, rcode.extended_bits(), e.dnssec_ok());
            ar += 1;
        }
        set_counts(out, 1, an, ns, ar);
        Some(Outcome {
            rcode,
            kind,
            truncated,
            zone_labels: Some(zone_labels),
        })
    }

    /// Answers a query into a new buffer; `None` when no response is due.
    pub fn answer(&self, query: &[u8], opts: &AnswerOptions) -> Option<Response> {
        let mut wire = Vec::with_capacity(512);
        let outcome = self.answer_into(query, opts, &mut wire)?;
        Some(Response { wire, outcome })
    }
}

/// Answers a query from a set of zones (see [`ZoneSet::answer`]).
pub fn answer(set: &ZoneSet, query: &[u8], opts: &AnswerOptions) -> Option<Response> {
    set.answer(query, opts)
}
