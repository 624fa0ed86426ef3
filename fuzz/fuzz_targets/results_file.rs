//! Results file reading: any bytes after a valid file header are read without panicking, in
//! bounded memory, and every byte is accounted for: read as a valid block (header and results,
//! known or not) or counted as skipped.
#![no_main]
use ldplayer_results::file::{BLOCK_HEADER_LEN, FILE_HEADER_LEN, RESULT_LEN};
use ldplayer_results::{ResultsReader, ResultsWriter};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let mut input = ResultsWriter::new(Vec::new())
        .and_then(|w| w.into_inner())
        .expect("memory");
    input.extend_from_slice(data);
    let Ok(mut reader) = ResultsReader::new(&input[..]) else {
        return;
    };
    let mut n = 0u64;
    for r in &mut reader {
        if r.is_err() {
            return;
        }
        n += 1;
    }
    let damage = reader.damage();
    let read = reader.blocks_read() * BLOCK_HEADER_LEN as u64
        + (n + damage.unknown_results) * RESULT_LEN as u64;
    assert_eq!(
        read + damage.skipped_bytes,
        (input.len() - FILE_HEADER_LEN) as u64,
        "{damage:?}"
    );
    assert!(reader.next().is_none());
});
