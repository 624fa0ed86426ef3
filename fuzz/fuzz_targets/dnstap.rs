//! dnstap reading: any bytes after a dnstap file's START frame are read as a trace without
//! panicking, and the collector's side of the Frame Streams handshake takes any bytes a
//! writer could send.
#![no_main]
use ldplayer_dnstap::fstrm::{handshake, FrameReader, DNSTAP_CONTENT_TYPE};
use ldplayer_trace::dnstap::{DnstapReader, DnstapTypes, DnstapWriter};
use ldplayer_trace::{Collect, Source};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let mut input = Vec::new();
    if let Ok(w) = DnstapWriter::new(&mut input) {
        drop(w); // START only: what follows is the fuzzer's.
    }
    input.extend_from_slice(data);
    let mut reader = DnstapReader::new(&input[..], DnstapTypes::ALL);
    let mut got = Collect::default();
    let _ = reader.run(&mut got);

    let mut frames = FrameReader::new(data);
    let mut answer = Vec::new();
    if handshake::accept(&mut frames, &mut answer, DNSTAP_CONTENT_TYPE).is_ok() {
        while let Ok(Some(_)) = frames.next_frame() {}
    }
});
