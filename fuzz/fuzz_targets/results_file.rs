//! Results file reading: any bytes after a valid file header (of version 1, or of version 2
//! with answers, as the first byte chooses) are read without panicking, in bounded memory, and
//! every byte is accounted for: read as a valid block (header, results known or not, answers)
//! or counted as skipped. Every answer given back lies within its block.
#![no_main]
use ldplayer_results::file::{BLOCK_HEADER_LEN, RESULT_LEN};
use ldplayer_results::{ResultsReader, ResultsWriter, RunInfo};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Some((&choice, data)) = data.split_first() else {
        return;
    };
    let info = RunInfo {
        answers: (choice & 1 == 1).then_some(true),
        ..RunInfo::default()
    };
    let mut input = ResultsWriter::with_run_info(Vec::new(), &info)
        .and_then(|w| w.into_inner())
        .expect("memory");
    let header_len = input.len();
    input.extend_from_slice(data);
    let Ok(mut reader) = ResultsReader::new(&input[..]) else {
        return;
    };
    assert_eq!(reader.keeps_answers(), choice & 1 == 1);
    let mut n = 0u64;
    let mut answer_bytes = 0u64;
    loop {
        match reader.next_with_answer() {
            Ok(Some((r, answer))) => {
                if let Some(a) = answer {
                    assert_eq!(a.len(), usize::from(r.response_len));
                    answer_bytes += a.len() as u64;
                }
                n += 1;
            }
            Ok(None) => break,
            Err(_) => return,
        }
    }
    let damage = reader.damage();
    assert!(answer_bytes <= reader.answer_bytes_read());
    let read = reader.blocks_read() * BLOCK_HEADER_LEN as u64
        + (n + damage.unknown_results) * RESULT_LEN as u64
        + reader.answer_bytes_read();
    assert_eq!(
        read + damage.skipped_bytes,
        (input.len() - header_len) as u64,
        "{damage:?}"
    );
    assert!(reader.next().is_none());
});
