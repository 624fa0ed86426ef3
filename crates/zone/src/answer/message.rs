//! The parts of a response written outside its sections: the OPT record, the section counts, and
//! the responses that carry no records (errors and refusals).

use ldplayer_dns::{flag, Message, Rcode, Rtype};

use super::{AnswerOptions, Kind, Outcome};

/// Appends the OPT record.
pub(super) fn push_opt(buf: &mut Vec<u8>, size: u16, ext_rcode: u8, dnssec: bool) {
    buf.push(0);
    buf.extend_from_slice(&Rtype::OPT.0.to_be_bytes());
    buf.extend_from_slice(&size.max(512).to_be_bytes());
    buf.push(ext_rcode);
    buf.push(0);
    buf.extend_from_slice(&(if dnssec { 0x8000u16 } else { 0 }).to_be_bytes());
    buf.extend_from_slice(&[0, 0]);
}

pub(super) fn set_counts(buf: &mut [u8], qd: u16, an: u16, ns: u16, ar: u16) {
    buf[4..6].copy_from_slice(&qd.to_be_bytes());
    buf[6..8].copy_from_slice(&an.to_be_bytes());
    buf[8..10].copy_from_slice(&ns.to_be_bytes());
    buf[10..12].copy_from_slice(&ar.to_be_bytes());
}

/// A response carrying only the header, the question (when there is exactly one) and OPT.
pub(super) fn error_response(
    msg: Option<&Message<'_>>,
    query: &[u8],
    rcode: Rcode,
    kind: Kind,
    opts: &AnswerOptions,
    out: &mut Vec<u8>,
) -> Outcome {
    out.clear();
    let fl = u16::from_be_bytes([query[2], query[3]]);
    let flags =
        flag::QR | (fl & (0xF << 11)) | (fl & (flag::RD | flag::CD)) | rcode.header_bits() as u16;
    out.extend_from_slice(&query[0..2]);
    out.extend_from_slice(&flags.to_be_bytes());
    out.extend_from_slice(&[0; 8]);
    let mut qd = 0;
    let mut ar = 0;
    if let Some(m) = msg {
        if m.header().qdcount == 1 {
            out.extend_from_slice(&query[12..m.question_end()]);
            qd = 1;
        }
        if let Some(e) = m.edns() {
            push_opt(out, opts.edns_size, rcode.extended_bits(), e.dnssec_ok());
            ar = 1;
        }
    }
    set_counts(out, qd, 0, 0, ar);
    Outcome {
        rcode,
        kind,
        truncated: false,
        zone_labels: None,
    }
}
