//! DNS parsing and editing: parse any bytes; for messages that parse, the text columns render,
//! re-applying their own fields changes nothing, expansion keeps a parseable message, and the
//! records (with TSIG and TKEY RDATA, as dynamic updates carry them) decode without panicking.
//! For bytes that do not parse, the partial view (header, first question) reads without
//! panicking and a header edit touches the header alone. Seed inputs (dynamic updates with
//! GSS-TSIG, the TKEY exchange, malformed queries of each kind) are in fuzz/seeds/dns_message:
//! `cargo fuzz run dns_message fuzz/corpus/dns_message fuzz/seeds/dns_message`.
#![no_main]
use ldplayer_dns::{apply, apply_header, decompress, Fields, Message, Partial, HEADER_LEN};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(msg) = Message::parse(data) else {
        let Some(partial) = Partial::read(data) else {
            assert!(data.len() < HEADER_LEN);
            return;
        };
        let mut fields = Fields::of_partial(&partial);
        fields.id ^= 0xffff;
        fields.flags ^= ldplayer_dns::flag::RD;
        let mut wire = data.to_vec();
        apply_header(&mut wire, &fields).expect("a header is there");
        assert_eq!(wire[4..], data[4..], "a header edit touches only the ID and flags");
        let again = Partial::read(&wire).expect("still a header");
        assert_eq!(Fields::of_partial(&again), fields);
        return;
    };
    let h = *msg.header();
    let records = msg
        .records()
        .inspect(|rr| {
            let _ = (rr.tsig(), rr.tkey(), rr.rdata());
        })
        .count();
    assert_eq!(records, h.ancount as usize + h.nscount as usize + h.arcount as usize);
    let _ = msg.tsig();
    let fields = Fields::of(&msg);
    assert_eq!(Partial::read(data).map(|p| p.question), Some(fields.question.clone()));
    let mut wire = data.to_vec();
    apply(&mut wire, &fields).expect("applying a message's own fields");
    assert_eq!(wire, data, "re-applying the same fields must not change a byte");
    let expanded = decompress(data).expect("a parsed message expands");
    let again = Message::parse(&expanded).expect("an expanded message parses");
    assert_eq!(Fields::of(&again), fields);
    // Structural edits keep the message well-formed.
    let mut edited = fields.clone();
    if let Some(q) = edited.question.as_mut() {
        let mut name = b"\x03ldp".to_vec();
        name.extend_from_slice(&q.name);
        if name.len() <= 255 {
            q.name = name;
        }
    }
    edited.edns = match edited.edns {
        Some(_) => None,
        None => Some(ldplayer_dns::EdnsFields { version: 0, udp_size: 1232, dnssec_ok: true, options: vec![0, 10, 0, 8, 1, 2, 3, 4, 5, 6, 7, 8] }),
    };
    edited.rcode = ldplayer_dns::Rcode::from_parts(edited.rcode.header_bits(), 0);
    let mut wire = data.to_vec();
    if apply(&mut wire, &edited).is_ok() {
        let m = Message::parse(&wire).expect("an edited message parses");
        assert_eq!(Fields::of(&m), edited);
    }
});
