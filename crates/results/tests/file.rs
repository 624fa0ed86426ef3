//! The binary results file: round trips, truncation, corruption, garbage.

use ldplayer_results::file::{BLOCK_HEADER_LEN, FILE_HEADER_LEN, RESULT_LEN};
use ldplayer_results::{
    read_all, ErrorKind, Outcome, QueryResult, ResultSink, ResultsError, ResultsReader,
    ResultsWriter, Tail,
};
use ldplayer_trace::Proto;
use proptest::prelude::*;
use std::io::Write;
use std::sync::{Arc, Mutex};
use std::time::Duration;

fn result(i: u64) -> QueryResult {
    let outcome = match i % 5 {
        0 | 1 => Outcome::Answered,
        2 => Outcome::Timeout,
        3 => Outcome::Error(ErrorKind::ALL[(i as usize / 5) % ErrorKind::ALL.len()]),
        _ => Outcome::Answered,
    };
    QueryResult {
        index: i,
        trace_ns: 1_500_000_000_000_000_000 + i as i64 * 1_000,
        intended_ns: 1_700_000_000_000_000_000 + i as i64 * 1_000,
        sent_ns: 1_700_000_000_000_000_000 + i as i64 * 1_000 + 7,
        received_ns: if outcome == Outcome::Answered {
            1_700_000_000_000_500_000 + i as i64
        } else {
            0
        },
        proto: Proto::ALL[i as usize % Proto::ALL.len()],
        new_connection: i.is_multiple_of(7),
        rcode: (i % 24) as u16,
        response_len: (i * 13 % 65536) as u16,
        truncated: i.is_multiple_of(11),
        outcome,
    }
}

fn write_file(results: &[QueryResult], block: usize) -> Vec<u8> {
    let mut w =
        ResultsWriter::with_block_limits(Vec::new(), block, Duration::from_secs(3600)).unwrap();
    for r in results {
        w.result(r).unwrap();
    }
    w.finish().unwrap();
    w.into_inner().unwrap()
}

fn arb_result() -> impl Strategy<Value = QueryResult> {
    let outcome = prop_oneof![
        Just(Outcome::Answered),
        Just(Outcome::Timeout),
        prop::sample::select(ErrorKind::ALL.to_vec()).prop_map(Outcome::Error),
    ];
    (
        (
            any::<u64>(),
            any::<i64>(),
            any::<i64>(),
            any::<i64>(),
            any::<i64>(),
        ),
        prop::sample::select(Proto::ALL.to_vec()),
        (any::<bool>(), any::<u16>(), any::<u16>(), any::<bool>()),
        outcome,
    )
        .prop_map(
            |(
                (index, trace_ns, intended_ns, sent_ns, received_ns),
                proto,
                (nc, rc, len, tc),
                outcome,
            )| {
                QueryResult {
                    index,
                    trace_ns,
                    intended_ns,
                    sent_ns,
                    received_ns,
                    proto,
                    new_connection: nc,
                    rcode: rc,
                    response_len: len,
                    truncated: tc,
                    outcome,
                }
            },
        )
}

#[test]
fn round_trip_in_blocks() {
    let results: Vec<_> = (0..10_000).map(result).collect();
    let bytes = write_file(&results, 4096);
    // 3 blocks: 4096 + 4096 + 1808.
    assert_eq!(
        bytes.len(),
        FILE_HEADER_LEN + 3 * BLOCK_HEADER_LEN + results.len() * RESULT_LEN
    );
    let mut reader = ResultsReader::new(&bytes[..]).unwrap();
    let back: Vec<_> = (&mut reader).collect::<Result<_, _>>().unwrap();
    assert_eq!(back, results);
    assert_eq!(reader.tail(), Tail::Clean);
    assert_eq!(reader.ignored_bytes(), 0);
    assert_eq!(reader.blocks_read(), 3);
    assert_eq!(reader.results_read(), 10_000);
}

#[test]
fn empty_results_file() {
    let bytes = write_file(&[], 10);
    assert_eq!(bytes.len(), FILE_HEADER_LEN);
    let mut reader = ResultsReader::new(&bytes[..]).unwrap();
    assert!(reader.next().is_none());
    assert_eq!(reader.tail(), Tail::Clean);
}

#[test]
fn file_on_disk() {
    let dir = std::env::temp_dir().join(format!("ldplayer-results-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("run.ldpr");
    let results: Vec<_> = (0..100).map(result).collect();
    let mut w = ResultsWriter::create(&path).unwrap();
    for r in &results {
        w.write(r).unwrap();
    }
    w.finish().unwrap();
    drop(w);
    let back: Vec<_> = ResultsReader::open(&path)
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    assert_eq!(back, results);
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A writer whose bytes stay visible after the results writer is gone (or "killed").
#[derive(Clone, Default)]
struct Shared(Arc<Mutex<Vec<u8>>>);

impl Write for Shared {
    fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(b);
        Ok(b.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

#[test]
fn killed_writer_leaves_complete_blocks() {
    let shared = Shared::default();
    let mut w =
        ResultsWriter::with_block_limits(shared.clone(), 4, Duration::from_secs(3600)).unwrap();
    let results: Vec<_> = (0..10).map(result).collect();
    for r in &results {
        w.write(r).unwrap();
    }
    // No finish: the process dies with two results buffered.
    std::mem::forget(w);
    let bytes = shared.0.lock().unwrap().clone();
    assert_eq!(read_all(&bytes[..]).unwrap(), results[..8]);
}

#[test]
fn old_block_is_written_when_the_next_result_arrives() {
    let shared = Shared::default();
    let mut w = ResultsWriter::with_block_limits(shared.clone(), 4096, Duration::ZERO).unwrap();
    w.write(&result(0)).unwrap();
    w.write(&result(1)).unwrap();
    assert_eq!(w.blocks(), 2);
    let bytes = shared.0.lock().unwrap().clone();
    assert_eq!(read_all(&bytes[..]).unwrap(), vec![result(0), result(1)]);
}

/// Every cut of a small file reads back exactly its complete blocks.
#[test]
fn every_cut_reads_complete_blocks() {
    let results: Vec<_> = (0..11).map(result).collect();
    let block = 3;
    let bytes = write_file(&results, block);
    let block_bytes = BLOCK_HEADER_LEN + block * RESULT_LEN;
    for cut in 0..=bytes.len() {
        let part = &bytes[..cut];
        if cut < FILE_HEADER_LEN {
            assert!(matches!(
                ResultsReader::new(part),
                Err(ResultsError::NotResults(_))
            ));
            continue;
        }
        let mut reader = ResultsReader::new(part).unwrap();
        let back: Vec<_> = (&mut reader).collect::<Result<_, _>>().unwrap();
        let body = cut - FILE_HEADER_LEN;
        let full_blocks = body / block_bytes;
        let mut expect = (full_blocks * block).min(results.len());
        // The last block holds 2 results.
        if cut == bytes.len() {
            expect = results.len();
        }
        assert_eq!(back, results[..expect], "cut at {cut}");
        let used = if cut == bytes.len() {
            body
        } else {
            full_blocks * block_bytes
        };
        assert_eq!(reader.ignored_bytes(), (body - used) as u64, "cut at {cut}");
        let clean = body == used;
        assert_eq!(
            reader.tail(),
            if clean { Tail::Clean } else { Tail::Truncated },
            "cut at {cut}"
        );
    }
}

#[test]
fn corrupt_block_ends_the_stream() {
    let results: Vec<_> = (0..12).map(result).collect();
    let bytes = write_file(&results, 4);
    let block_bytes = BLOCK_HEADER_LEN + 4 * RESULT_LEN;
    for at in [0, 5, 13, BLOCK_HEADER_LEN + 20] {
        let mut bad = bytes.clone();
        bad[FILE_HEADER_LEN + block_bytes + at] ^= 0x40;
        let mut reader = ResultsReader::new(&bad[..]).unwrap();
        let back: Vec<_> = (&mut reader).collect::<Result<_, _>>().unwrap();
        assert_eq!(back, results[..4], "flip at {at}");
        assert_eq!(reader.tail(), Tail::Corrupt);
        assert_eq!(reader.ignored_bytes(), 2 * block_bytes as u64);
    }
}

#[test]
fn not_a_results_file() {
    let err = ResultsReader::new(&b"LDPTRACE\x01\x00\x10\x00\x00\x00\x00\x00"[..])
        .err()
        .unwrap();
    assert!(matches!(err, ResultsError::NotResults(_)));
    assert!(
        err.to_string().contains("not an ldplayer results file"),
        "{err}"
    );
    let err = ResultsReader::new(&b"hello"[..]).err().unwrap();
    assert!(matches!(err, ResultsError::NotResults(_)));
    let mut v2 = write_file(&[result(1)], 1);
    v2[8] = 2;
    let err = ResultsReader::new(&v2[..]).err().unwrap();
    assert!(matches!(err, ResultsError::Version(2)), "{err}");
    assert!(err.to_string().contains("version 2"));
}

#[test]
fn unknown_code_in_a_valid_block_is_an_error() {
    let mut bytes = write_file(&[result(0), result(1)], 2);
    let at = FILE_HEADER_LEN + BLOCK_HEADER_LEN + RESULT_LEN + 46;
    bytes[at] = 99;
    // Fix the checksum so the block passes.
    let start = FILE_HEADER_LEN;
    let mut h = crc32fast::Hasher::new();
    h.update(&bytes[start..start + 12]);
    h.update(&bytes[start + BLOCK_HEADER_LEN..]);
    let crc = h.finalize();
    bytes[start + 12..start + 16].copy_from_slice(&crc.to_le_bytes());
    let mut reader = ResultsReader::new(&bytes[..]).unwrap();
    assert_eq!(reader.next().unwrap().unwrap(), result(0));
    let err = reader.next().unwrap().unwrap_err();
    assert!(err.to_string().contains("unknown outcome code 99"), "{err}");
    assert!(reader.next().is_none());
}

#[test]
fn longer_header_and_results_of_a_later_version_are_skipped() {
    // A later writer with a 24-byte header and 56-byte results, same version number.
    let r = result(3);
    let mut bytes = Vec::new();
    bytes.extend_from_slice(b"LDPRSLTS");
    bytes.extend_from_slice(&1u16.to_le_bytes());
    bytes.extend_from_slice(&24u16.to_le_bytes());
    bytes.extend_from_slice(&56u16.to_le_bytes());
    bytes.extend_from_slice(&[0u8; 10]);
    let mut payload = ldplayer_results::file::encode_result(&r).to_vec();
    payload.extend_from_slice(&[0xee; 8]);
    let mut head = Vec::new();
    head.extend_from_slice(b"RBLK");
    head.extend_from_slice(&1u32.to_le_bytes());
    head.extend_from_slice(&56u32.to_le_bytes());
    let mut h = crc32fast::Hasher::new();
    h.update(&head);
    h.update(&payload);
    head.extend_from_slice(&h.finalize().to_le_bytes());
    bytes.extend_from_slice(&head);
    bytes.extend_from_slice(&payload);
    assert_eq!(read_all(&bytes[..]).unwrap(), vec![r]);
}

proptest! {
    #[test]
    fn prop_round_trip(results in prop::collection::vec(arb_result(), 0..300), block in 1usize..100) {
        let bytes = write_file(&results, block);
        let back = read_all(&bytes[..]).unwrap();
        prop_assert_eq!(back, results);
    }

    #[test]
    fn prop_cut_reads_every_complete_block(
        results in prop::collection::vec(arb_result(), 1..200),
        block in 1usize..50,
        cut_frac in 0.0f64..=1.0,
    ) {
        let bytes = write_file(&results, block);
        let cut = ((bytes.len() as f64) * cut_frac) as usize;
        let part = &bytes[..cut.min(bytes.len())];
        match ResultsReader::new(part) {
            Err(_) => prop_assert!(part.len() < FILE_HEADER_LEN),
            Ok(mut reader) => {
                let back: Vec<_> = (&mut reader).collect::<Result<_, _>>().unwrap();
                // Blocks are written whole: count the complete ones.
                let mut pos = FILE_HEADER_LEN;
                let mut expect = 0;
                for chunk in results.chunks(block) {
                    let end = pos + BLOCK_HEADER_LEN + chunk.len() * RESULT_LEN;
                    if end > part.len() {
                        break;
                    }
                    pos = end;
                    expect += chunk.len();
                }
                prop_assert_eq!(&back[..], &results[..expect]);
                prop_assert_eq!(reader.ignored_bytes(), (part.len() - pos) as u64);
            }
        }
    }

    #[test]
    fn prop_garbage_is_an_error(bytes in prop::collection::vec(any::<u8>(), 0..2000)) {
        // Random bytes do not start with the magic.
        prop_assume!(!bytes.starts_with(b"LDPRSLTS"));
        prop_assert!(ResultsReader::new(&bytes[..]).is_err());
    }

    #[test]
    fn prop_garbage_after_a_header_never_panics(
        good in prop::collection::vec(arb_result(), 0..20),
        junk in prop::collection::vec(any::<u8>(), 0..3000),
        flip in any::<prop::sample::Index>(),
    ) {
        let mut bytes = write_file(&good, 7);
        let n_good = bytes.len();
        bytes.extend_from_slice(&junk);
        // Also damage one byte of the good part after the header.
        if n_good > FILE_HEADER_LEN {
            let i = FILE_HEADER_LEN + flip.index(n_good - FILE_HEADER_LEN);
            bytes[i] = bytes[i].wrapping_add(1);
        }
        let mut reader = ResultsReader::new(&bytes[..]).unwrap();
        let mut n = 0;
        for r in &mut reader {
            if r.is_err() {
                break;
            }
            n += 1;
        }
        prop_assert!(n <= good.len() + junk.len() / RESULT_LEN);
        prop_assert!(reader.next().is_none());
    }
}
