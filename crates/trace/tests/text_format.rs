//! The text format: round trips, edits through columns, hand-written lines and bad lines.

use ldplayer_dns::{
    build, name_from_presentation, Class, EdnsFields, Fields, Message, Question, Rcode, Rtype,
};
use ldplayer_trace::text::{Layout, TextReader, TextWriter};
use ldplayer_trace::{Collect, Proto, RecordBuf, SkipReason, Source};
use proptest::prelude::*;
use std::net::SocketAddr;

/// A response for www.example.com A with compressed names: an answer whose owner points at the
/// question, and an NS record in the authority section whose RDATA points into the question.
fn compressed_response() -> Vec<u8> {
    let mut m = vec![0x12, 0x34, 0x81, 0x80, 0, 1, 0, 1, 0, 1, 0, 1];
    m.extend_from_slice(b"\x03www\x07example\x03com\x00\x00\x01\x00\x01");
    m.extend_from_slice(&[0xc0, 12, 0, 1, 0, 1, 0, 0, 0x0e, 0x10, 0, 4, 192, 0, 2, 1]);
    m.extend_from_slice(&[
        0xc0, 16, 0, 2, 0, 1, 0, 0, 0x0e, 0x10, 0, 6, 3, b'n', b's', b'1', 0xc0, 16,
    ]);
    m.extend_from_slice(&[0, 0, 41, 0x10, 0, 0, 0, 0x80, 0, 0, 0]);
    m
}

fn record(wire: Vec<u8>) -> RecordBuf {
    RecordBuf {
        time_ns: 1_520_000_000_123_456_789,
        src: "192.0.2.53:53".parse().unwrap(),
        dst: "[2001:db8::1]:40000".parse().unwrap(),
        proto: Proto::Udp,
        conn: 0,
        wire,
    }
}

fn to_text(records: &[RecordBuf]) -> String {
    let mut w = TextWriter::new(Vec::new()).unwrap();
    for r in records {
        w.write(&r.as_record()).unwrap();
    }
    String::from_utf8(w.into_inner().unwrap()).unwrap()
}

fn from_text(text: &str) -> Collect {
    let mut got = Collect::default();
    TextReader::new(text.as_bytes())
        .unwrap()
        .run(&mut got)
        .unwrap();
    got
}

/// The column names of a trace written by [`TextWriter`] (its second line).
fn column_names(text: &str) -> Vec<&str> {
    text.lines().nth(1).unwrap().split('\t').collect()
}

/// The first data line of a trace written by [`TextWriter`] (its third line).
fn first_data_line(text: &str) -> &str {
    text.lines().nth(2).unwrap()
}

/// Replaces column `name` of every data line.
fn set_column(text: &str, name: &str, value: &str) -> String {
    let mut lines = text.lines();
    let tag = lines.next().unwrap();
    let header = lines.next().unwrap();
    let idx = header.split('\t').position(|c| c == name).unwrap();
    let mut out = format!("{tag}\n{header}\n");
    for line in lines {
        let mut f: Vec<&str> = line.split('\t').collect();
        f[idx] = value;
        out.push_str(&f.join("\t"));
        out.push('\n');
    }
    out
}

#[test]
fn renders_the_documented_columns() {
    let text = to_text(&[record(compressed_response())]);
    assert_eq!(text.lines().next(), Some("#ldplayer-text/2"));
    assert_eq!(column_names(&text), ldplayer_trace::text::COLUMNS);
    let line = first_data_line(&text);
    let cols: Vec<&str> = line.split('\t').collect();
    assert_eq!(
        &cols[..19],
        &[
            "1520000000.123456789",
            "192.0.2.53",
            "53",
            "2001:db8::1",
            "40000",
            "udp",
            "-",
            "4660",
            "1",
            "QUERY",
            "NOERROR",
            "rd,ra",
            "www.example.com.",
            "IN",
            "A",
            "0",
            "4096",
            "1",
            "-"
        ]
    );
}

#[test]
fn unedited_lines_give_identical_bytes() {
    let records = vec![
        record(compressed_response()),
        record(b"not dns at all".to_vec()),
    ];
    assert_eq!(from_text(&to_text(&records)).records, records);
}

#[test]
fn edits_take_effect_in_the_message() {
    let text = to_text(&[record(compressed_response())]);
    type Check = Box<dyn Fn(&RecordBuf)>;
    let cases: Vec<(&str, &str, Check)> = vec![
        (
            "do",
            "0",
            Box::new(|r| assert!(!Message::parse(&r.wire).unwrap().edns().unwrap().dnssec_ok())),
        ),
        (
            "proto",
            "tcp",
            Box::new(|r| assert_eq!(r.proto, Proto::Tcp)),
        ),
        (
            "edns",
            "-",
            Box::new(|r| assert!(Message::parse(&r.wire).unwrap().edns().is_none())),
        ),
        (
            "bufsize",
            "1232",
            Box::new(|r| {
                assert_eq!(
                    Message::parse(&r.wire).unwrap().edns().unwrap().udp_size,
                    1232
                )
            }),
        ),
        (
            "rcode",
            "BADVERS",
            Box::new(|r| assert_eq!(Message::parse(&r.wire).unwrap().rcode(), Rcode::BADVERS)),
        ),
        (
            "flags",
            "aa,cd",
            Box::new(|r| {
                assert_eq!(
                    Message::parse(&r.wire).unwrap().header().flags & 0x07f0,
                    0x0410
                )
            }),
        ),
        (
            "qtype",
            "AAAA",
            Box::new(|r| assert_eq!(Message::parse(&r.wire).unwrap().qtype(), Some(Rtype::AAAA))),
        ),
        (
            "ednsopts",
            "ecs=198.51.100.0/24/0,keepalive",
            Box::new(|r| {
                let m = Message::parse(&r.wire).unwrap();
                assert_eq!(
                    m.edns_options(),
                    &[0, 8, 0, 7, 0, 1, 24, 0, 198, 51, 100, 0, 11, 0, 0][..]
                );
            }),
        ),
        (
            "qname",
            "x1.www.example.com.",
            Box::new(|r| {
                // The question grew in front of compressed names: they must still read the same.
                let m = Message::parse(&r.wire).unwrap();
                let f = Fields::of(&m);
                assert_eq!(
                    f.question.unwrap().name,
                    name_from_presentation("x1.www.example.com").unwrap()
                );
                let text = to_text(std::slice::from_ref(r));
                assert!(text.contains("x1.www.example.com."));
                // Answer and authority unchanged: compare with the original after the same expansion.
                let orig = ldplayer_dns::decompress(&compressed_response()).unwrap();
                let q_end = 12 + 17 + 4;
                assert_eq!(&r.wire[q_end + 3..], &orig[q_end..]);
            }),
        ),
    ];
    for (column, value, check) in cases {
        let edited = from_text(&set_column(&text, column, value));
        assert_eq!(edited.records.len(), 1, "{column}");
        check(&edited.records[0]);
        // Everything else unchanged: the edited record renders with only that column changed.
        let again = to_text(&edited.records);
        let a: Vec<&str> = first_data_line(&text).split('\t').collect();
        let b: Vec<&str> = first_data_line(&again).split('\t').collect();
        let header = column_names(&text);
        for (i, name) in header.iter().enumerate() {
            if *name != column
                && *name != "wire"
                && !(column == "edns" && ["bufsize", "do"].contains(name))
                && !(column == "rcode" && *name == "edns")
            {
                assert_eq!(a[i], b[i], "editing {column} changed {name}");
            }
        }
    }
}

#[test]
fn lines_written_by_hand_build_messages() {
    let text = "#ldplayer-text/1\ttime\tsrc\tdst\tdport\tqname\tqtype\tdo\n\
                10.5\t10.0.0.1\t192.0.2.1\t53\texample.org\tMX\t1\n";
    let got = from_text(text);
    assert_eq!(got.skipped.total(), 0);
    let r = &got.records[0];
    assert_eq!(r.time_ns, 10_500_000_000);
    let m = Message::parse(&r.wire).unwrap();
    assert_eq!(m.qtype(), Some(Rtype::MX));
    assert!(m.edns().unwrap().dnssec_ok());
    assert!(!m.header().qr());
}

#[test]
fn bad_lines_are_skipped_and_explained() {
    let text = "#ldplayer-text/1\ttime\tsrc\tdst\tqtype\n\
                1\t10.0.0.1\t192.0.2.1\tA\n\
                x\t10.0.0.1\t192.0.2.1\tA\n\
                2\tnot-an-ip\t192.0.2.1\tA\n\
                3\t10.0.0.1\t192.0.2.1\tNOSUCHTYPE\n\
                # a comment\n\
                \n\
                4\t10.0.0.1\t192.0.2.1\tAAAA\n";
    let mut reader = TextReader::new(text.as_bytes()).unwrap();
    let mut got = Collect::default();
    reader.run(&mut got).unwrap();
    assert_eq!(got.records.len(), 2);
    assert_eq!(got.skipped.get(SkipReason::TextLine), 3);
    let lines: Vec<u64> = reader.errors().iter().map(|(l, _)| *l).collect();
    assert_eq!(lines, vec![3, 4, 5]);
    assert_eq!(reader.errors()[2].1.column, Some("qtype"));
}

/// `line` cut to its first `n` tab-separated columns.
fn first_columns(line: &str, n: usize) -> String {
    line.split('\t').take(n).collect::<Vec<_>>().join("\t")
}

#[test]
fn lines_with_fewer_columns_than_the_header_are_skipped_with_their_line_number() {
    let text = to_text(&[
        record(compressed_response()),
        record(malformed_query()),
        record(compressed_response()),
    ]);
    let lines: Vec<&str> = text.lines().collect();
    // A line cut after `id` (8 columns) and one cut after `qname` (13): each would otherwise
    // read as a message nobody sent (a header-only query, a response without its answer).
    let damaged = format!(
        "{}\n{}\n{}\n{}\n{}\n",
        lines[0],
        lines[1],
        first_columns(lines[2], 8),
        first_columns(lines[3], 13),
        lines[4]
    );
    let mut reader = TextReader::new(damaged.as_bytes()).unwrap();
    let mut got = Collect::default();
    reader.run(&mut got).unwrap();
    assert_eq!(got.records.len(), 1);
    assert_eq!(got.records[0].wire, compressed_response());
    assert_eq!(got.skipped.get(SkipReason::TextLine), 2);
    let errors: Vec<(u64, String)> = reader
        .errors()
        .iter()
        .map(|(l, e)| (*l, e.to_string()))
        .collect();
    assert_eq!(
        errors,
        [
            (3, "has 8 columns, the header names 20".to_string()),
            (4, "has 13 columns, the header names 20".to_string())
        ]
    );
    // The header of version 1 names its columns after the tag.
    let v1 = "#ldplayer-text/1\ttime\tsrc\tdst\tqtype\n1\t10.0.0.1\t192.0.2.1\n";
    let mut reader = TextReader::new(v1.as_bytes()).unwrap();
    reader.run(&mut Collect::default()).unwrap();
    assert_eq!(
        reader.errors()[0].1.to_string(),
        "has 3 columns, the header names 4"
    );
}

#[test]
fn lines_that_are_not_utf8_are_skipped_with_their_line_number() {
    let text = to_text(&[record(compressed_response()), record(compressed_response())]);
    let mut bytes = text.into_bytes();
    // A byte of the first data line's name (line 3) that is no UTF-8.
    let third_line = bytes
        .iter()
        .enumerate()
        .filter(|(_, b)| **b == b'\n')
        .nth(1)
        .map(|(i, _)| i + 1)
        .unwrap();
    let at = third_line + 40;
    bytes[at] = 0xff;
    let mut reader = TextReader::new(&bytes[..]).unwrap();
    let mut got = Collect::default();
    reader.run(&mut got).unwrap();
    assert_eq!(got.records.len(), 1);
    assert_eq!(got.skipped.get(SkipReason::TextLine), 1);
    let [(3, error)] = reader.errors() else {
        panic!("line 3 is named: {:?}", reader.errors());
    };
    assert!(error.to_string().contains("not UTF-8"), "{error}");
    // In the header it is an error, naming its line.
    let e = TextReader::new(&b"#ldplayer-text/2\ntime\tsrc\xff\tdst\n"[..])
        .err()
        .expect("refused")
        .to_string();
    assert!(e.contains("line 2") && e.contains("UTF-8"), "{e}");
}

#[test]
fn rcodes_read_as_mnemonics_generic_forms_or_numbers() {
    let text = "#ldplayer-text/1\ttime\tsrc\tdst\tqr\trcode\n\
                1\t10.0.0.1\t192.0.2.1\t1\tnxdomain\n\
                2\t10.0.0.1\t192.0.2.1\t1\tRCODE5\n\
                3\t10.0.0.1\t192.0.2.1\t1\t2\n\
                4\t10.0.0.1\t192.0.2.1\t1\t4096\n\
                5\t10.0.0.1\t192.0.2.1\t1\tRCODE4096\n\
                6\t10.0.0.1\t192.0.2.1\t1\tNOSUCHCODE\n";
    let mut reader = TextReader::new(text.as_bytes()).unwrap();
    let mut got = Collect::default();
    reader.run(&mut got).unwrap();
    let rcodes: Vec<Rcode> = got
        .records
        .iter()
        .map(|r| Message::parse(&r.wire).unwrap().rcode())
        .collect();
    assert_eq!(rcodes, [Rcode::NXDOMAIN, Rcode::REFUSED, Rcode::SERVFAIL]);
    let errors: Vec<(u64, Option<&str>)> = reader
        .errors()
        .iter()
        .map(|(l, e)| (*l, e.column))
        .collect();
    assert_eq!(
        errors,
        [(5, Some("rcode")), (6, Some("rcode")), (7, Some("rcode"))]
    );
}

#[test]
fn other_files_are_refused() {
    assert!(TextReader::new(&b"time\tsrc\n"[..]).is_err());
    let unknown = TextReader::new(&b"#ldplayer-text/9\ntime\tsrc\tdst\n"[..]);
    let message = unknown.err().expect("version 9 is refused").to_string();
    assert!(message.contains("version `#ldplayer-text/9`"), "{message}");
    assert!(TextReader::new(&b"#ldplayer-text/1\tsrc\tdst\n"[..]).is_err());
    // The tag alone, without a column line.
    assert!(TextReader::new(&b"#ldplayer-text/2\n# nothing else\n"[..]).is_err());
    assert!(TextReader::new(&b"#ldplayer-text/2\nsrc\tdst\n"[..]).is_err());
}

#[test]
fn both_header_layouts_read() {
    let data = "1.5\t10.0.0.1\t192.0.2.1\texample.org.\tAAAA\n";
    let columns = "time\tsrc\tdst\tqname\tqtype";
    let layouts = [
        // Version 1: the tag and the columns on one line.
        format!("#ldplayer-text/1\t{columns}\n{data}"),
        // Version 2: the tag alone, then the columns (comments and blank lines may come between).
        format!("#ldplayer-text/2\n{columns}\n{data}"),
        format!("#ldplayer-text/2\n# written by hand\n\n{columns}\n{data}"),
        // Lenient: either tag in either layout.
        format!("#ldplayer-text/1\n{columns}\n{data}"),
        format!("#ldplayer-text/2\t{columns}\n{data}"),
    ];
    let mut seen = Vec::new();
    for text in &layouts {
        let got = from_text(text);
        assert_eq!(got.skipped.total(), 0, "{text}");
        assert_eq!(got.records.len(), 1, "{text}");
        seen.push(got.records[0].clone());
    }
    assert!(seen.windows(2).all(|w| w[0] == w[1]));
    assert_eq!(
        Message::parse(&seen[0].wire).unwrap().qtype(),
        Some(Rtype::AAAA)
    );
    // Line numbers of bad lines count the header lines.
    let text = format!("#ldplayer-text/2\n{columns}\nbad\t10.0.0.1\t192.0.2.1\tx.\tA\n");
    let mut reader = TextReader::new(text.as_bytes()).unwrap();
    reader.run(&mut Collect::default()).unwrap();
    assert_eq!(reader.errors()[0].0, 3);
}

#[test]
fn no_field_holds_a_hash_or_a_missing_value_word() {
    let mut q = build(&Fields {
        id: 1,
        qr: false,
        opcode: 0,
        flags: 0,
        rcode: Rcode::NOERROR,
        question: Some(Question {
            name: name_from_presentation("a#b.\\#c.example.").unwrap(),
            qtype: Rtype::NULL,
            qclass: Class::IN,
        }),
        edns: None,
    })
    .unwrap();
    let text = to_text(&[record(q.clone())]);
    let line = first_data_line(&text);
    assert!(!line.contains('#'), "{line}");
    let cols: Vec<&str> = line.split('\t').collect();
    assert_eq!(&cols[12..15], ["a\\035b.\\035c.example.", "IN", "TYPE10"]);
    let back = from_text(&text);
    assert_eq!(back.records[0].wire, q);
    // Writing the name with a plain `#` or the type as NULL by hand means the same.
    let edited = set_column(
        &set_column(&text, "qname", "a#b.\\#c.example."),
        "qtype",
        "NULL",
    );
    assert_eq!(from_text(&edited).records[0].wire, q);
    q[0] = 2;
    let edited = set_column(&text, "id", "513");
    assert_eq!(from_text(&edited).records[0].wire, q);
}

/// A query for www.example. AAAA whose answer count says 40000: the header and question read,
/// the rest does not.
fn malformed_query() -> Vec<u8> {
    let mut m = vec![0xbe, 0xef, 0x01, 0x20, 0, 1, 0x9c, 0x40, 0, 0, 0, 0];
    m.extend_from_slice(b"\x03www\x07example\x00\x00\x1c\x00\x01");
    m
}

#[test]
fn malformed_messages_show_header_and_question_and_keep_their_bytes() {
    let wire = malformed_query();
    assert!(Message::parse(&wire).is_err());
    let text = to_text(&[record(wire.clone())]);
    let cols: Vec<&str> = first_data_line(&text).split('\t').collect();
    assert_eq!(
        &cols[7..],
        [
            "48879",
            "0",
            "QUERY",
            "NOERROR",
            "rd,ad",
            "www.example.",
            "IN",
            "AAAA",
            "-",
            "-",
            "-",
            "-",
            "vu8BIAABnEAAAAAAA3d3dwdleGFtcGxlAAAcAAE="
        ]
    );
    assert_eq!(from_text(&text).records, vec![record(wire.clone())]);
    // A bad label in the question: the header still shows.
    let mut bad = wire[..12].to_vec();
    bad.extend_from_slice(&[0x41, b'x', 0, 0, 1, 0, 1]);
    let text_bad = to_text(&[record(bad)]);
    let cols: Vec<&str> = first_data_line(&text_bad).split('\t').collect();
    assert_eq!(
        &cols[7..19],
        ["48879", "0", "QUERY", "NOERROR", "rd,ad", "-", "-", "-", "-", "-", "-", "-"]
    );
    // The header columns edit the header; the others are a view and are left alone.
    let mut want = wire.clone();
    want[0..2].copy_from_slice(&7u16.to_be_bytes());
    want[3] = 0x25; // ad and RCODE 5
    let edited = set_column(&set_column(&text, "id", "7"), "rcode", "REFUSED");
    let edited = set_column(&set_column(&edited, "qname", "other.example."), "do", "1");
    let got = from_text(&edited);
    assert_eq!(got.records[0].wire, want);
    // An extended RCODE needs an OPT record the message does not have.
    let got = from_text(&set_column(&text, "rcode", "BADVERS"));
    assert_eq!(
        (got.records.len(), got.skipped.get(SkipReason::TextLine)),
        (0, 1)
    );
}

#[test]
fn checked_sources_note_or_drop_malformed_messages() {
    use ldplayer_dns::DnsError;
    use ldplayer_trace::Checked;
    let good = compressed_response();
    let records = vec![
        record(good.clone()),
        record(malformed_query()),
        record(b"short".to_vec()),
        record(good),
    ];
    let text = to_text(&records);
    let mut kept = Collect::default();
    Checked::new(TextReader::new(text.as_bytes()).unwrap(), false)
        .run(&mut kept)
        .unwrap();
    assert_eq!(kept.records, records);
    assert_eq!(
        kept.malformed.get(SkipReason::Dns(DnsError::AbsurdCounts)),
        1
    );
    assert_eq!(
        kept.malformed.get(SkipReason::Dns(DnsError::ShortHeader)),
        1
    );
    assert_eq!((kept.malformed.total(), kept.skipped.total()), (2, 0));
    let mut dropped = Collect::default();
    Checked::new(TextReader::new(text.as_bytes()).unwrap(), true)
        .run(&mut dropped)
        .unwrap();
    assert_eq!(
        dropped.records,
        vec![records[0].clone(), records[3].clone()]
    );
    assert_eq!(
        dropped.skipped.get(SkipReason::Dns(DnsError::AbsurdCounts)),
        1
    );
    assert_eq!(
        dropped.skipped.get(SkipReason::Dns(DnsError::ShortHeader)),
        1
    );
    assert_eq!(dropped.malformed.total(), 0);
}

fn fields_strategy() -> impl Strategy<Value = Fields> {
    let name =
        prop::collection::vec(prop::collection::vec(any::<u8>(), 1..12), 0..5).prop_map(|labels| {
            let mut out = Vec::new();
            for l in labels {
                out.push(l.len() as u8);
                out.extend(l);
            }
            out.push(0);
            out
        });
    let question = prop::option::of((name, any::<u16>(), any::<u16>()).prop_map(
        |(name, qtype, qclass)| Question {
            name,
            qtype: Rtype(qtype),
            qclass: Class(qclass),
        },
    ));
    let edns = prop::option::of(
        (
            any::<u8>(),
            any::<u16>(),
            any::<bool>(),
            prop::collection::vec(any::<u8>(), 0..20),
        )
            .prop_map(|(version, udp_size, dnssec_ok, options)| EdnsFields {
                version,
                udp_size,
                dnssec_ok,
                options,
            }),
    );
    (
        any::<u16>(),
        any::<bool>(),
        0u8..16,
        any::<u16>(),
        0u16..4096,
        question,
        edns,
    )
        .prop_map(|(id, qr, opcode, flags, rcode, question, edns)| {
            let rcode = Rcode(if edns.is_some() { rcode } else { rcode & 15 });
            Fields {
                id,
                qr,
                opcode,
                flags: flags & ldplayer_dns::flag::NAMED_MASK,
                rcode,
                question,
                edns,
            }
        })
}

proptest! {
    #[test]
    fn built_messages_round_trip_through_text(fields in prop::collection::vec(fields_strategy(), 1..8), tcp in any::<bool>()) {
        let records: Vec<RecordBuf> = fields.iter().enumerate().map(|(i, f)| RecordBuf {
            time_ns: i as i64 * 1_000_003,
            src: SocketAddr::from(([10, 0, 0, i as u8], 1000 + i as u16)),
            dst: "[::1]:53".parse().unwrap(),
            proto: if tcp { Proto::Tcp } else { Proto::Udp },
            conn: if tcp { 7 } else { 0 },
            wire: build(f).unwrap(),
        }).collect();
        for (r, f) in records.iter().zip(&fields) {
            prop_assert_eq!(&Fields::of(&Message::parse(&r.wire).unwrap()), f);
        }
        let text = to_text(&records);
        prop_assert_eq!(&from_text(&text).records, &records);
        // A line without its wire column rebuilds the same message from the columns alone.
        let rebuilt = from_text(&set_column(&text, "wire", "-")).records;
        prop_assert_eq!(rebuilt, records);
    }

    #[test]
    fn any_bytes_survive_a_text_round_trip(wire in prop::collection::vec(any::<u8>(), 0..300)) {
        let r = record(wire);
        let text = to_text(std::slice::from_ref(&r));
        let line = first_data_line(&text);
        // Tools that take `#` as a comment read every field.
        prop_assert!(!line.contains('#'), "{}", line);
        let got = Layout::standard().parse_line(line);
        prop_assert_eq!(got.unwrap(), r);
    }
}
