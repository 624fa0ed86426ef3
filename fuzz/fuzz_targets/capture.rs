//! Capture parsing: any bytes are read as pcap/pcapng without panicking; every record that comes
//! out carries a message that parses, or one with a readable header that the reader noted as
//! malformed; with `keep_malformed` off, every record parses.
#![no_main]
use ldplayer_trace::capture::{read_capture_bytes, CaptureOptions};
use ldplayer_trace::Collect;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let mut got = Collect::default();
    let _ = read_capture_bytes(data, &CaptureOptions::default(), &mut got);
    let mut malformed = 0;
    for r in &got.records {
        if ldplayer_dns::Message::parse(&r.wire).is_err() {
            assert!(r.wire.len() >= ldplayer_dns::HEADER_LEN);
            malformed += 1;
        }
    }
    assert_eq!(malformed, got.malformed.total());
    let strict = CaptureOptions { keep_malformed: false, ..CaptureOptions::default() };
    let mut got = Collect::default();
    let _ = read_capture_bytes(data, &strict, &mut got);
    for r in &got.records {
        assert!(ldplayer_dns::Message::parse(&r.wire).is_ok());
    }
});
