//! Answers in presentation format, for people: a whole message as dig shows it, and the value
//! of one field in one line (the report's examples and the CSV's columns).
//!
//! Records are printed by `domain` (every type it knows, RFC 3597 form for others); the header
//! and EDNS by ldplayer's own DNS crate.

use crate::field::Field;
use bytes::Bytes;
use domain::base::zonefile_fmt::{DisplayKind, ZonefileFmt};
use domain::base::{Message as DomainMessage, ParsedName};
use domain::rdata::AllRecordData;
use ldplayer_dns::{flag, opcode_to_string, option_code, render_options, Message, Rtype};

/// The extended DNS error option (RFC 8914).
const EDE: u16 = 15;

/// The records of one section in presentation format (OPT and TSIG left out), as the message
/// orders them; `None` when `domain` cannot read the section.
fn section_lines(wire: &[u8], section: usize) -> Option<Vec<String>> {
    let msg = DomainMessage::from_octets(Bytes::copy_from_slice(wire)).ok()?;
    let records = match section {
        0 => msg.answer().ok()?,
        1 => msg.authority().ok()?,
        _ => msg.additional().ok()?,
    };
    let mut out = Vec::new();
    for rec in records.into_records::<AllRecordData<Bytes, ParsedName<Bytes>>>() {
        let rec = rec.ok()?;
        let rtype = rec.rtype().to_int();
        if rtype == Rtype::OPT.0 || rtype == Rtype::TSIG.0 {
            continue;
        }
        out.push(rec.display_zonefile(DisplayKind::Simple).to_string());
    }
    Some(out)
}

/// The first question as `name class type`, e.g. `www.example. IN A`.
fn question_lines(msg: &Message<'_>) -> Vec<String> {
    let mut name = Vec::new();
    if !msg.qname_wire(&mut name) {
        return Vec::new();
    }
    let mut text = String::new();
    ldplayer_dns::name_to_presentation(&name, &mut text);
    let class = msg.qclass().map(|c| c.to_string()).unwrap_or_default();
    let qtype = msg.qtype().map(|t| t.to_string()).unwrap_or_default();
    vec![format!("{text} {class} {qtype}")]
}

/// The header flags set, as dig lists them (`qr aa rd`).
fn flags_text(flags: u16) -> String {
    let mut out = Vec::new();
    if flags & flag::QR != 0 {
        out.push("qr");
    }
    for (bit, name) in flag::NAMED {
        if flags & bit != 0 {
            out.push(name);
        }
    }
    out.join(" ")
}

/// The EDNS options of `msg` with code `code`, as they are written in traces (`nsid=6162`,
/// `ecs=192.0.2.0/24/0`, `padding=300`), or for EDE as `info-code "text"`.
fn options_text(msg: &Message<'_>, code: u16) -> String {
    let mut opts = msg.edns_options();
    let mut out = Vec::new();
    while opts.len() >= 4 {
        let c = u16::from_be_bytes([opts[0], opts[1]]);
        let len = usize::from(u16::from_be_bytes([opts[2], opts[3]]));
        let Some(data) = opts.get(4..4 + len) else {
            break;
        };
        if c == code {
            if code == EDE && data.len() >= 2 {
                let info = u16::from_be_bytes([data[0], data[1]]);
                out.push(format!("{info} {:?}", String::from_utf8_lossy(&data[2..])));
            } else {
                let mut text = String::new();
                render_options(&opts[..4 + len], &mut text);
                out.push(text);
            }
        }
        opts = &opts[4 + len..];
    }
    out.join(", ")
}

/// The EDNS line of `msg`: `version 0, udp 1232, do; nsid=...`, or `none`.
fn edns_text(msg: &Message<'_>) -> String {
    match msg.edns() {
        None => "none".to_string(),
        Some(e) => {
            let mut text = format!(
                "version {}, udp {}{}",
                e.version,
                e.udp_size,
                if e.dnssec_ok() { ", do" } else { "" }
            );
            let mut options = String::new();
            render_options(msg.edns_options(), &mut options);
            if !options.is_empty() {
                text.push_str("; ");
                text.push_str(&options);
            }
            text
        }
    }
}

/// A whole answer in presentation format, as dig prints it (header line, EDNS, then each
/// section); `what` when there is no answer (`timeout`, `refused`...).
pub fn message_text(answer: Option<&[u8]>, what: &str) -> String {
    let Some(wire) = answer else {
        return format!(";; no answer: {what}\n");
    };
    let Ok(msg) = Message::parse(wire) else {
        return format!(
            ";; malformed answer, {} bytes: {}\n",
            wire.len(),
            hex(&wire[..wire.len().min(64)])
        );
    };
    let h = msg.header();
    let mut out = format!(
        ";; opcode {}, rcode {}, flags: {}\n;; EDNS: {}\n;; QUESTION\n",
        opcode_to_string(h.opcode()),
        msg.rcode(),
        flags_text(h.flags),
        edns_text(&msg)
    );
    for line in question_lines(&msg) {
        out.push_str(&line);
        out.push('\n');
    }
    for (i, title) in ["ANSWER", "AUTHORITY", "ADDITIONAL"].iter().enumerate() {
        let lines = section_lines(wire, i).unwrap_or_else(|| vec!["(unreadable)".to_string()]);
        if lines.is_empty() {
            continue;
        }
        out.push_str(&format!(";; {title}\n"));
        for line in lines {
            out.push_str(&line);
            out.push('\n');
        }
    }
    out
}

/// The value of `field` in an answer, in one line: what the CSV's columns and the report's
/// tables show. `what` is the outcome of a query without an answer.
pub fn field_text(answer: Option<&[u8]>, what: &str, field: Field) -> String {
    let Some(wire) = answer else {
        return format!("no answer ({what})");
    };
    let Ok(msg) = Message::parse(wire) else {
        return format!("malformed ({} bytes)", wire.len());
    };
    let h = msg.header();
    let edns = msg.edns();
    let records = |section: usize, rrsigs: Option<bool>| {
        let lines = section_lines(wire, section).unwrap_or_default();
        let mut lines: Vec<String> = lines
            .into_iter()
            .filter(|l| match rrsigs {
                None => true,
                Some(want) => l.split_whitespace().nth(3).is_some_and(|t| t == "RRSIG") == want,
            })
            .collect();
        lines.sort();
        if lines.is_empty() {
            "(empty)".to_string()
        } else {
            lines.join(" | ")
        }
    };
    let or_none = |v: Option<String>| v.unwrap_or_else(|| "no EDNS".to_string());
    match field {
        Field::Missing => "answered".to_string(),
        Field::Malformed => format!("well-formed ({} bytes)", wire.len()),
        Field::Opcode => opcode_to_string(h.opcode()),
        Field::Rcode => msg.rcode().to_string(),
        Field::Question => question_lines(&msg).join(" | "),
        Field::Answer => records(0, Some(false)),
        Field::AnswerRrsig => records(0, Some(true)),
        Field::Authority => records(1, None),
        Field::Additional => records(2, None),
        Field::Edns => edns_text(&msg),
        Field::EdnsVersion => or_none(edns.map(|e| e.version.to_string())),
        Field::EdnsBufsize => or_none(edns.map(|e| e.udp_size.to_string())),
        Field::EdnsDo => or_none(edns.map(|e| u8::from(e.dnssec_ok()).to_string())),
        Field::EdnsNsid => or_none(edns.map(|_| options_text(&msg, option_code::NSID))),
        Field::EdnsEcs => or_none(edns.map(|_| options_text(&msg, option_code::ECS))),
        Field::EdnsPadding => or_none(edns.map(|_| options_text(&msg, option_code::PADDING))),
        Field::EdnsEde => or_none(edns.map(|_| options_text(&msg, EDE))),
        flag => flag
            .flag_bit()
            .map_or_else(String::new, |bit| u8::from(h.flags & bit != 0).to_string()),
    }
}

/// The first question's name (presentation format) and type of an answer, when it has one.
pub fn question_of(answer: &[u8]) -> Option<(String, Rtype)> {
    let msg = Message::parse(answer).ok()?;
    let mut name = Vec::new();
    if !msg.qname_wire(&mut name) {
        return None;
    }
    let mut text = String::new();
    ldplayer_dns::name_to_presentation(&name, &mut text);
    Some((text, msg.qtype()?))
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_answer_as_dig_shows_it() {
        // www.example. A 192.0.2.1, AA, an OPT with DO and an NSID.
        let mut m = vec![0x12, 0x34, 0x84, 0x00, 0, 1, 0, 1, 0, 0, 0, 1];
        m.extend_from_slice(b"\x03www\x07example\x00\x00\x01\x00\x01");
        m.extend_from_slice(&[0xc0, 12, 0, 1, 0, 1, 0, 0, 1, 44, 0, 4, 192, 0, 2, 1]);
        m.extend_from_slice(&[
            0, 0, 41, 0x04, 0xd0, 0, 0, 0x80, 0, 0, 6, 0, 3, 0, 2, b'a', b'b',
        ]);
        let text = message_text(Some(&m), "");
        assert!(text.contains("rcode NOERROR, flags: qr aa"), "{text}");
        assert!(
            text.contains("version 0, udp 1232, do; nsid=6162"),
            "{text}"
        );
        assert!(text.contains("www.example. IN A\n"), "{text}");
        assert!(
            text.contains(";; ANSWER\nwww.example. 300 IN A 192.0.2.1\n"),
            "{text}"
        );
        assert_eq!(
            field_text(Some(&m), "", Field::Answer),
            "www.example. 300 IN A 192.0.2.1"
        );
        assert_eq!(field_text(Some(&m), "", Field::AnswerRrsig), "(empty)");
        assert_eq!(field_text(Some(&m), "", Field::FlagAa), "1");
        assert_eq!(field_text(Some(&m), "", Field::EdnsNsid), "nsid=6162");
        assert_eq!(
            field_text(None, "timeout", Field::Missing),
            "no answer (timeout)"
        );
        assert_eq!(
            question_of(&m),
            Some(("www.example.".to_string(), Rtype::A))
        );
        assert!(message_text(Some(&m[..7]), "").contains("malformed"));
    }
}
