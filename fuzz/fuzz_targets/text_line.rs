//! Text trace parsing: any bytes after a valid header are read without panicking, and every
//! record that comes out survives a second text round trip unchanged.
#![no_main]
use ldplayer_trace::text::{header_line, TextReader, TextWriter};
use ldplayer_trace::{Collect, Source};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let mut input = header_line().into_bytes();
    input.extend_from_slice(data);
    let Ok(mut reader) = TextReader::new(&input[..]) else { return };
    let mut got = Collect::default();
    let _ = reader.run(&mut got);
    let mut w = TextWriter::new(Vec::new()).expect("writing to memory");
    for r in &got.records {
        w.write(&r.as_record()).expect("writing to memory");
    }
    let text = w.into_inner().expect("writing to memory");
    let mut again = Collect::default();
    TextReader::new(&text[..]).expect("our own header").run(&mut again).expect("reading memory");
    assert_eq!(again.records, got.records);
    assert_eq!(again.skipped.total(), 0);
});
