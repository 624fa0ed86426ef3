//! A minimal encoder for the queries the synthesizer writes.
//!
//! `ldplayer_dns::build` allocates per message; this writes straight into a reused buffer, which
//! keeps the hot loop allocation-free. Its output is checked against `Message::parse` in tests.

use ldplayer_dns::{flag, Class, Rtype};

/// Starts a query in `out` (cleared first): the header with one question and, when `edns` is set,
/// one additional record. The question name's leading labels follow (see [`hex_label`]), then
/// [`finish`].
pub fn header(out: &mut Vec<u8>, id: u16, rd: bool, edns: bool) {
    out.clear();
    out.extend_from_slice(&id.to_be_bytes());
    let flags = if rd { flag::RD } else { 0 };
    out.extend_from_slice(&flags.to_be_bytes());
    out.extend_from_slice(&[0, 1, 0, 0, 0, 0, 0, edns as u8]);
}

/// Appends a label of lower-case hexadecimal digits for `n`, without leading zeros.
pub fn hex_label(out: &mut Vec<u8>, n: u64) {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let digits = (16 - (n.leading_zeros() / 4) as usize).max(1);
    out.push(digits as u8);
    for i in (0..digits).rev() {
        out.push(DIGITS[((n >> (4 * i)) & 0xf) as usize]);
    }
}

/// Appends the rest of the question after its name's labels: `suffix` (wire labels ending with
/// the root label), the type and class IN; then the OPT record when `edns` is
/// `Some((udp_size, dnssec_ok))`.
pub fn finish(out: &mut Vec<u8>, suffix: &[u8], qtype: Rtype, edns: Option<(u16, bool)>) {
    out.extend_from_slice(suffix);
    out.extend_from_slice(&qtype.0.to_be_bytes());
    out.extend_from_slice(&Class::IN.0.to_be_bytes());
    if let Some((size, dnssec_ok)) = edns {
        out.push(0);
        out.extend_from_slice(&Rtype::OPT.0.to_be_bytes());
        out.extend_from_slice(&size.to_be_bytes());
        out.extend_from_slice(&[0, 0, if dnssec_ok { 0x80 } else { 0 }, 0, 0, 0]);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ldplayer_dns::{
        build, name_from_presentation, EdnsFields, Fields, Message, Question, Rcode,
    };

    #[test]
    fn matches_build() {
        for (rd, edns) in [
            (false, None),
            (true, Some((1232, true))),
            (false, Some((512, false))),
        ] {
            let mut out = Vec::new();
            header(&mut out, 0xbeef, rd, edns.is_some());
            hex_label(&mut out, 0x1a2b);
            finish(&mut out, b"\x07example\x00", Rtype::AAAA, edns);
            let want = build(&Fields {
                id: 0xbeef,
                qr: false,
                opcode: 0,
                flags: if rd { flag::RD } else { 0 },
                rcode: Rcode::NOERROR,
                question: Some(Question {
                    name: name_from_presentation("1a2b.example.").unwrap(),
                    qtype: Rtype::AAAA,
                    qclass: Class::IN,
                }),
                edns: edns.map(|(udp_size, dnssec_ok)| EdnsFields {
                    version: 0,
                    udp_size,
                    dnssec_ok,
                    options: Vec::new(),
                }),
            })
            .unwrap();
            assert_eq!(out, want);
            Message::parse(&out).unwrap();
        }
    }

    #[test]
    fn hex_labels() {
        for (n, s) in [
            (0u64, "0"),
            (9, "9"),
            (0x10, "10"),
            (0xabc, "abc"),
            (u64::MAX, "ffffffffffffffff"),
        ] {
            let mut out = Vec::new();
            hex_label(&mut out, n);
            assert_eq!(out[0] as usize, s.len());
            assert_eq!(&out[1..], s.as_bytes());
        }
    }
}
