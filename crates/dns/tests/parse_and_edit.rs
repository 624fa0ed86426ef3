//! Parsing rejects malformed messages with the right reason; editing keeps messages well-formed
//! and changes only what it is asked to.

use ldplayer_dns::{
    apply, build, decompress, Class, DnsError, EditError, EdnsFields, Fields, Message, Question,
    Rcode, Rtype,
};
use proptest::prelude::*;

fn header(qd: u16, an: u16, ns: u16, ar: u16) -> Vec<u8> {
    let mut m = vec![0xab, 0xcd, 0x81, 0x80];
    for c in [qd, an, ns, ar] {
        m.extend_from_slice(&c.to_be_bytes());
    }
    m
}

/// example.com A response; the additional section holds an OPT record *followed by* an A record
/// whose owner points at the NS record's RDATA name, which comes after the question.
fn response_with_opt_in_the_middle() -> Vec<u8> {
    let mut m = header(1, 1, 1, 2);
    m.extend_from_slice(b"\x07example\x03com\x00\x00\x01\x00\x01"); // 12..29
    m.extend_from_slice(&[0xc0, 12, 0, 1, 0, 1, 0, 0, 0, 60, 0, 4, 192, 0, 2, 1]); // 29..45
    let ns_rdata = 45 + 12;
    m.extend_from_slice(&[
        0xc0, 12, 0, 2, 0, 1, 0, 0, 0, 60, 0, 6, 3, b'n', b's', b'1', 0xc0, 12,
    ]); // 45..63
    m.extend_from_slice(&[0, 0, 41, 4, 0xd0, 0, 0, 0x80, 0, 0, 4, 0, 10, 0, 0]);
    m.extend_from_slice(&[
        0xc0,
        ns_rdata as u8,
        0,
        1,
        0,
        1,
        0,
        0,
        0,
        60,
        0,
        4,
        192,
        0,
        2,
        53,
    ]);
    m
}

#[test]
fn rejects_malformed_messages_by_reason() {
    assert_eq!(Message::parse(&[0; 11]).unwrap_err(), DnsError::ShortHeader);
    // Counts that cannot fit.
    let mut m = header(1, 60000, 0, 0);
    m.extend_from_slice(b"\x00\x00\x01\x00\x01");
    assert_eq!(Message::parse(&m).unwrap_err(), DnsError::AbsurdCounts);
    // A pointer to itself, a forward pointer, a pointer into the header.
    for target in [12u8, 40, 2] {
        let mut m = header(1, 0, 0, 0);
        m.extend_from_slice(&[0xc0, target, 0, 1, 0, 1]);
        m.resize(m.len().max(48), 0);
        assert_eq!(
            Message::parse(&m).unwrap_err(),
            DnsError::BadPointer,
            "target {target}"
        );
    }
    // A two-pointer loop: name at 12 is "a" + pointer to 17, whose name points back to 12.
    let mut m = header(2, 0, 0, 0);
    m.extend_from_slice(&[1, b'a', 0xc0, 17, 0, 1, 0, 1, 0xc0, 12, 0, 1, 0, 1]);
    assert!(Message::parse(&m).is_err());
    // Label types 0x40 and 0x80.
    for b in [0x41u8, 0x81] {
        let mut m = header(1, 0, 0, 0);
        m.extend_from_slice(&[b, b'x', 0, 0, 1, 0, 1]);
        assert_eq!(Message::parse(&m).unwrap_err(), DnsError::BadLabel);
    }
    // A name longer than 255 bytes.
    let mut m = header(1, 0, 0, 0);
    for _ in 0..5 {
        m.push(63);
        m.extend_from_slice(&[b'x'; 63]);
    }
    m.extend_from_slice(&[0, 0, 1, 0, 1]);
    assert_eq!(Message::parse(&m).unwrap_err(), DnsError::NameTooLong);
    // RDATA running past the end.
    let mut m = response_with_opt_in_the_middle();
    m.truncate(m.len() - 2);
    assert_eq!(Message::parse(&m).unwrap_err(), DnsError::Truncated);
    // Two OPT records.
    let mut m = header(0, 0, 0, 2);
    m.extend_from_slice(&[
        0, 0, 41, 4, 0, 0, 0, 0, 0, 0, 0, 0, 0, 41, 4, 0, 0, 0, 0, 0, 0, 0,
    ]);
    assert_eq!(Message::parse(&m).unwrap_err(), DnsError::BadOpt);
}

#[test]
fn reads_the_fields() {
    let m = response_with_opt_in_the_middle();
    let msg = Message::parse(&m).unwrap();
    let f = Fields::of(&msg);
    assert!(f.qr);
    assert_eq!(f.question.as_ref().unwrap().name, b"\x07example\x03com\x00");
    let e = f.edns.unwrap();
    assert_eq!(
        (e.udp_size, e.dnssec_ok, e.options.as_slice()),
        (1232, true, &[0, 10, 0, 0][..])
    );
    assert_eq!(msg.end(), m.len());
}

#[test]
fn removing_an_opt_record_in_the_middle_keeps_later_pointers_right() {
    let m = response_with_opt_in_the_middle();
    let mut f = Fields::of(&Message::parse(&m).unwrap());
    f.edns = None;
    let mut edited = m.clone();
    apply(&mut edited, &f).unwrap();
    let msg = Message::parse(&edited).unwrap();
    assert_eq!(Fields::of(&msg), f);
    assert_eq!(msg.header().arcount, 1);
    // The last A record's owner still reads ns1.example.com. after expansion.
    let expanded = decompress(&edited).unwrap();
    assert!(expanded
        .windows(17)
        .any(|w| w == b"\x03ns1\x07example\x03com\x00"));
    let tail = &expanded[expanded.len() - 31..];
    assert_eq!(&tail[..17], b"\x03ns1\x07example\x03com\x00");
}

#[test]
fn growing_options_and_names_keeps_the_rest() {
    let m = response_with_opt_in_the_middle();
    let mut f = Fields::of(&Message::parse(&m).unwrap());
    f.edns.as_mut().unwrap().options = vec![0, 12, 0, 20].into_iter().chain([0; 20]).collect();
    f.question.as_mut().unwrap().name = b"\x03www\x07example\x03com\x00".to_vec();
    let mut edited = m.clone();
    apply(&mut edited, &f).unwrap();
    assert_eq!(Fields::of(&Message::parse(&edited).unwrap()), f);
    // Records other than the question and OPT read the same names and data as before.
    let before = decompress(&m).unwrap();
    let after = decompress(&edited).unwrap();
    let answer_before = &before[29..29 + 27];
    assert!(after
        .windows(answer_before.len())
        .any(|w| w == answer_before));
}

#[test]
fn applying_the_same_fields_changes_nothing() {
    let m = response_with_opt_in_the_middle();
    let f = Fields::of(&Message::parse(&m).unwrap());
    let mut again = m.clone();
    apply(&mut again, &f).unwrap();
    assert_eq!(again, m);
}

#[test]
fn extended_rcodes_need_edns() {
    let f = Fields {
        id: 1,
        qr: true,
        opcode: 0,
        flags: 0,
        rcode: Rcode::BADVERS,
        question: None,
        edns: None,
    };
    assert!(build(&f).is_err());
    let f = Fields {
        edns: Some(EdnsFields {
            version: 0,
            udp_size: 512,
            dnssec_ok: false,
            options: vec![],
        }),
        ..f
    };
    let m = build(&f).unwrap();
    assert_eq!(Message::parse(&m).unwrap().rcode(), Rcode::BADVERS);
    // 12 bits is all a message has room for.
    let max = build(&Fields {
        rcode: Rcode::MAX_IN_MESSAGE,
        ..f.clone()
    })
    .unwrap();
    assert_eq!(Message::parse(&max).unwrap().rcode(), Rcode(4095));
    let too_large = Fields {
        rcode: Rcode(4096),
        ..f
    };
    assert_eq!(
        build(&too_large),
        Err(EditError::RcodeTooLarge(Rcode(4096)))
    );
}

fn name() -> impl Strategy<Value = Vec<u8>> {
    prop::collection::vec(prop::collection::vec(b'a'..=b'z', 1..10), 0..4).prop_map(|labels| {
        let mut out = Vec::new();
        for l in labels {
            out.push(l.len() as u8);
            out.extend(l);
        }
        out.push(0);
        out
    })
}

proptest! {
    /// Any edit of any field of a compressed response gives a message that parses with exactly
    /// the requested fields.
    #[test]
    fn edits_give_the_requested_fields(
        qname in prop::option::of(name()),
        qtype in any::<u16>(),
        edns in prop::option::of((any::<u16>(), any::<bool>(), prop::collection::vec(any::<u8>(), 0..16))),
        id in any::<u16>(),
        rd in any::<bool>(),
    ) {
        let m = response_with_opt_in_the_middle();
        let mut f = Fields::of(&Message::parse(&m).unwrap());
        f.id = id;
        f.flags = if rd { f.flags | 0x0100 } else { f.flags & !0x0100 };
        f.question = qname.map(|name| Question { name, qtype: Rtype(qtype), qclass: Class::IN });
        f.edns = edns.map(|(udp_size, dnssec_ok, options)| EdnsFields { version: 0, udp_size, dnssec_ok, options });
        let mut edited = m.clone();
        apply(&mut edited, &f).unwrap();
        prop_assert_eq!(Fields::of(&Message::parse(&edited).unwrap()), f);
    }

    /// Parsing never panics, and whatever parses expands to a message with the same fields.
    #[test]
    fn arbitrary_bytes(bytes in prop::collection::vec(any::<u8>(), 0..200)) {
        if let Ok(msg) = Message::parse(&bytes) {
            let expanded = decompress(&bytes).unwrap();
            prop_assert_eq!(Fields::of(&Message::parse(&expanded).unwrap()), Fields::of(&msg));
        }
    }
}

/// Found by the fuzzer: a pointer into the middle of a label makes a name read past the last
/// record into trailing bytes; such a message is rejected, since appending to it (an OPT record)
/// would change the name.
#[test]
fn names_reaching_past_the_last_record_are_rejected() {
    let mut m = header(0, 1, 0, 0);
    // Answer: owner = label "0bcde" at 12, the NS RDATA points at 13 (inside that label),
    // whose "length" byte `0` (48) reads far past the end.
    m.extend_from_slice(b"\x050bcde\x00\x00\x02\x00\x01\x00\x00\x00\x3c\x00\x02\xc0\x0d");
    m.extend_from_slice(&[0; 120]);
    assert_eq!(Message::parse(&m).unwrap_err(), DnsError::BadPointer);
}
