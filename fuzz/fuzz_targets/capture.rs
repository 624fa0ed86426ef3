//! Capture parsing: any bytes are read as pcap/pcapng without panicking; every record that comes
//! out carries a message that parses.
#![no_main]
use ldplayer_pcap::{read_capture_bytes, CaptureOptions};
use ldplayer_trace::Collect;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let mut got = Collect::default();
    let _ = read_capture_bytes(data, &CaptureOptions::default(), &mut got);
    for r in &got.records {
        assert!(ldplayer_dns::Message::parse(&r.wire).is_ok());
    }
});
