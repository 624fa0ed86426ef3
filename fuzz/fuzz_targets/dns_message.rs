//! DNS parsing and editing: parse any bytes; for messages that parse, the text columns render,
//! re-applying their own fields changes nothing, and expansion keeps a parseable message.
#![no_main]
use ldplayer_dns::{apply, decompress, Fields, Message};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(msg) = Message::parse(data) else { return };
    let fields = Fields::of(&msg);
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
    edited.rcode &= 0xF;
    let mut wire = data.to_vec();
    if apply(&mut wire, &edited).is_ok() {
        let m = Message::parse(&wire).expect("an edited message parses");
        assert_eq!(Fields::of(&m), edited);
    }
});
