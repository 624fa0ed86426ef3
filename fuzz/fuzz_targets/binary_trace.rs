//! Binary trace parsing: any bytes after a valid file header are read without panicking.
#![no_main]
use ldplayer_trace::binary::{BinaryReader, BinaryWriter};
use ldplayer_trace::{Collect, Source};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let mut input = BinaryWriter::new(Vec::new()).and_then(|w| w.into_inner()).expect("memory");
    input.extend_from_slice(data);
    let Ok(mut reader) = BinaryReader::new(&input[..]) else { return };
    let mut got = Collect::default();
    let _ = reader.run(&mut got);
});
