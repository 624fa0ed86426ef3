//! The binary results file: round trips, truncation, corruption, garbage.

use ldplayer_dns::Rcode;
use ldplayer_results::file::{BLOCK_HEADER_LEN, FILE_HEADER_LEN, RESULT_LEN};
use ldplayer_results::{
    read_all, Damage, ErrorKind, Outcome, QueryResult, ResultSink, ResultsError, ResultsReader,
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
        handshake_ns: if i.is_multiple_of(7) {
            20_000 + i as i64
        } else {
            0
        },
        rcode: Rcode((i % 24) as u16),
        response_len: (i * 13 % 65536) as u16,
        truncated: i.is_multiple_of(11),
        outcome,
        target: 0,
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
        any::<i64>(),
    )
        .prop_map(
            |(
                (index, trace_ns, intended_ns, sent_ns, received_ns),
                proto,
                (nc, rc, len, tc),
                outcome,
                handshake_ns,
            )| {
                QueryResult {
                    index,
                    trace_ns,
                    intended_ns,
                    sent_ns,
                    received_ns,
                    proto,
                    new_connection: nc,
                    handshake_ns,
                    rcode: Rcode(rc),
                    response_len: len,
                    truncated: tc,
                    outcome,
                    target: 0,
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

/// Where each block of a file written by [`write_file`] starts, and how many results it holds.
fn blocks_of(n_results: usize, block: usize) -> Vec<(usize, usize)> {
    let mut at = FILE_HEADER_LEN;
    let mut blocks = Vec::new();
    let mut left = n_results;
    while left > 0 {
        let n = left.min(block);
        blocks.push((at, n));
        at += BLOCK_HEADER_LEN + n * RESULT_LEN;
        left -= n;
    }
    blocks
}

fn read_with_damage(bytes: &[u8]) -> (Vec<QueryResult>, Damage, Tail) {
    let mut reader = ResultsReader::new(bytes).unwrap();
    let back: Vec<_> = (&mut reader).collect::<Result<_, _>>().unwrap();
    (back, reader.damage(), reader.tail())
}

/// One flipped byte in the first, a middle or the last block costs that block only, wherever
/// in the block it is (magic, count, length, CRC, payload).
#[test]
fn a_damaged_block_costs_only_itself() {
    let results: Vec<_> = (0..12).map(result).collect();
    let bytes = write_file(&results, 4);
    let block_bytes = BLOCK_HEADER_LEN + 4 * RESULT_LEN;
    for (block, name) in [(0, "first"), (1, "middle"), (2, "last")] {
        for at in [0, 3, 5, 9, 13, BLOCK_HEADER_LEN + 20, block_bytes - 1] {
            let mut bad = bytes.clone();
            bad[FILE_HEADER_LEN + block * block_bytes + at] ^= 0x40;
            let (back, damage, tail) = read_with_damage(&bad);
            let mut expect = results.clone();
            expect.drain(block * 4..block * 4 + 4);
            assert_eq!(back, expect, "{name} block, flip at {at}");
            assert_eq!(
                damage,
                Damage {
                    damaged_blocks: 1,
                    results_lost: 4,
                    skipped_bytes: block_bytes as u64,
                    ..Damage::default()
                },
                "{name} block, flip at {at}"
            );
            let end = if block == 2 {
                Tail::Corrupt
            } else {
                Tail::Clean
            };
            assert_eq!(tail, end, "{name} block, flip at {at}");
        }
    }
}

#[test]
fn two_damaged_blocks_in_a_row_are_both_counted() {
    let results: Vec<_> = (0..20).map(result).collect();
    let bytes = write_file(&results, 4);
    let blocks = blocks_of(20, 4);
    let mut bad = bytes.clone();
    // A destroyed header, then a bad CRC.
    bad[blocks[1].0 + 1] ^= 1;
    bad[blocks[2].0 + BLOCK_HEADER_LEN + 7] ^= 1;
    let (back, damage, tail) = read_with_damage(&bad);
    let expect: Vec<_> = results[..4].iter().chain(&results[12..]).copied().collect();
    assert_eq!(back, expect);
    assert_eq!(damage.damaged_blocks, 2);
    assert_eq!(damage.results_lost, 8);
    assert_eq!(tail, Tail::Clean);
}

/// A file cut in the middle of a block (a killed replay) reads every block before the cut and
/// counts the cut block's results as lost.
#[test]
fn a_file_cut_mid_block_keeps_the_blocks_before() {
    let results: Vec<_> = (0..10).map(result).collect();
    let bytes = write_file(&results, 4);
    let blocks = blocks_of(10, 4);
    let cut = blocks[1].0 + BLOCK_HEADER_LEN + 30;
    let (back, damage, tail) = read_with_damage(&bytes[..cut]);
    assert_eq!(back, results[..4]);
    assert_eq!(tail, Tail::Truncated);
    assert_eq!(
        damage,
        Damage {
            cut_short: true,
            results_lost: 4,
            skipped_bytes: (cut - blocks[1].0) as u64,
            ..Damage::default()
        }
    );
    assert!(
        damage.to_string().contains("the last block cut short"),
        "{damage}"
    );
}

/// Bytes that are not a block between two blocks are skipped and counted; both blocks read.
#[test]
fn garbage_between_blocks_is_skipped() {
    let results: Vec<_> = (0..8).map(result).collect();
    let bytes = write_file(&results, 4);
    let second = blocks_of(8, 4)[1].0;
    for garbage in [
        &b"x"[..],
        b"not a block, nor anything",
        b"RBLK\x04\x00\x00\x00\xc0\x00\x00\x00fake",
        &[0u8; 40][..],
    ] {
        let mut bad = bytes[..second].to_vec();
        bad.extend_from_slice(garbage);
        bad.extend_from_slice(&bytes[second..]);
        let (back, damage, tail) = read_with_damage(&bad);
        assert_eq!(back, results, "{garbage:?}");
        assert_eq!(
            damage,
            Damage {
                skipped_bytes: garbage.len() as u64,
                ..Damage::default()
            },
            "{garbage:?}"
        );
        assert_eq!(tail, Tail::Clean);
    }
    // Garbage long enough to have been a block whose header was destroyed counts as one, with
    // as many results as it could hold.
    let mut bad = bytes[..second].to_vec();
    bad.extend_from_slice(&[0x55; BLOCK_HEADER_LEN + 3 * RESULT_LEN + 5]);
    bad.extend_from_slice(&bytes[second..]);
    let (back, damage, _) = read_with_damage(&bad);
    assert_eq!(back, results);
    assert_eq!((damage.damaged_blocks, damage.results_lost), (1, 3));
}

/// Bytes appended after the last block of a whole file (random bytes, text) are trailing
/// garbage, said as such with where they start, not results lost; a last block whose header
/// was destroyed still counts the results it held, and the start of a header cut short is
/// still a block cut short.
#[test]
fn garbage_after_the_last_block_is_trailing_garbage_not_results_lost() {
    let results: Vec<_> = (0..10).map(result).collect();
    let bytes = write_file(&results, 4);
    let mut x = 0x2545_F491_4F6C_DD1Du64;
    let random: Vec<u8> = (0..5000)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            (x >> 24) as u8
        })
        .collect();
    let text = b"ldplayer results, appended by mistake\n".repeat(40);
    for garbage in [&random[..], &text[..], b"junk!"] {
        let mut bad = bytes.clone();
        bad.extend_from_slice(garbage);
        let (back, damage, tail) = read_with_damage(&bad);
        assert_eq!(back, results);
        assert_eq!(
            damage,
            Damage {
                skipped_bytes: garbage.len() as u64,
                trailing_garbage: garbage.len() as u64,
                trailing_garbage_at: Some(bytes.len() as u64),
                ..Damage::default()
            },
            "{} bytes",
            garbage.len()
        );
        assert_eq!(tail, Tail::Corrupt);
        let said = damage.to_string();
        assert!(
            said.contains(&format!(
                "{} bytes of trailing garbage at offset {}",
                garbage.len(),
                bytes.len()
            )) && !said.contains("lost"),
            "{said}"
        );
    }
    // The last block with its magic destroyed: its results are lost, not garbage.
    let last = blocks_of(10, 4)[2].0;
    let mut bad = bytes.clone();
    bad[last] ^= 0xff;
    let (_, damage, _) = read_with_damage(&bad);
    assert_eq!((damage.results_lost, damage.trailing_garbage), (2, 0));
    // Three bytes of a block header: the replay was killed writing it.
    let mut cut = bytes.clone();
    cut.extend_from_slice(b"RBL");
    let (_, damage, tail) = read_with_damage(&cut);
    assert!(
        damage.cut_short && damage.trailing_garbage == 0,
        "{damage:?}"
    );
    assert_eq!(tail, Tail::Truncated);
}

/// A damaged header that claims a longer block does not swallow the valid blocks after it.
#[test]
fn a_lying_header_does_not_hide_the_blocks_after_it() {
    let results: Vec<_> = (0..12).map(result).collect();
    let bytes = write_file(&results, 4);
    let first = blocks_of(12, 4)[0].0;
    let mut bad = bytes.clone();
    // Count 12, length 12 × 48: consistent, covering all three blocks; the CRC fails.
    bad[first + 4..first + 8].copy_from_slice(&12u32.to_le_bytes());
    bad[first + 8..first + 12].copy_from_slice(&((12 * RESULT_LEN) as u32).to_le_bytes());
    let (back, damage, tail) = read_with_damage(&bad);
    assert_eq!(back, results[4..]);
    assert_eq!((damage.damaged_blocks, damage.results_lost), (1, 4));
    assert_eq!(tail, Tail::Clean);
}

/// A damaged stretch longer than the read chunk is skipped in bounded memory.
#[test]
fn a_long_damaged_stretch_is_skipped() {
    let results: Vec<_> = (0..8).map(result).collect();
    let bytes = write_file(&results, 4);
    let second = blocks_of(8, 4)[1].0;
    let mut bad = bytes[..second].to_vec();
    let garbage: Vec<u8> = (0..3_000_000u32).map(|i| (i * 7 % 251) as u8).collect();
    bad.extend_from_slice(&garbage);
    bad.extend_from_slice(&bytes[second..]);
    let (back, damage, _) = read_with_damage(&bad);
    assert_eq!(back, results);
    assert_eq!(damage.skipped_bytes, garbage.len() as u64);
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
    let mut v3 = write_file(&[result(1)], 1);
    v3[8] = 3;
    let err = ResultsReader::new(&v3[..]).err().unwrap();
    assert!(matches!(err, ResultsError::Version(3)), "{err}");
    assert!(err.to_string().contains("version 3"), "{err}");
    assert!(err.to_string().contains("versions 1 and 2"), "{err}");
}

/// A result with an outcome code this build does not know, in a block whose CRC checks out, is
/// skipped and counted; the results around it are read.
#[test]
fn unknown_code_in_a_valid_block_is_skipped_and_counted() {
    let mut bytes = write_file(&[result(0), result(1), result(2)], 3);
    let at = FILE_HEADER_LEN + BLOCK_HEADER_LEN + RESULT_LEN + 46;
    bytes[at] = 99;
    // Fix the checksum so the block passes.
    let start = FILE_HEADER_LEN;
    let mut h = crc32fast::Hasher::new();
    h.update(&bytes[start..start + 12]);
    h.update(&bytes[start + BLOCK_HEADER_LEN..]);
    let crc = h.finalize();
    bytes[start + 12..start + 16].copy_from_slice(&crc.to_le_bytes());
    let (back, damage, tail) = read_with_damage(&bytes);
    assert_eq!(back, vec![result(0), result(2)]);
    assert_eq!(
        damage,
        Damage {
            unknown_results: 1,
            ..Damage::default()
        }
    );
    assert_eq!(tail, Tail::Clean);
    let err = ldplayer_results::file::decode_result(&bytes[at - 46..at + 2]).unwrap_err();
    assert!(err.to_string().contains("unknown outcome code 99"), "{err}");
}

/// A results file as a given writer version laid it out: `header_len`-byte header,
/// `result_len`-byte results (each from `encode`), one block.
fn file_with(header_len: u16, result_len: u16, payload: &[u8]) -> Vec<u8> {
    let mut bytes = Vec::new();
    bytes.extend_from_slice(b"LDPRSLTS");
    bytes.extend_from_slice(&1u16.to_le_bytes());
    bytes.extend_from_slice(&header_len.to_le_bytes());
    bytes.extend_from_slice(&result_len.to_le_bytes());
    bytes.extend_from_slice(&vec![0u8; header_len as usize - 14]);
    let count = payload.len() / result_len as usize;
    let mut head = Vec::new();
    head.extend_from_slice(b"RBLK");
    head.extend_from_slice(&(count as u32).to_le_bytes());
    head.extend_from_slice(&(payload.len() as u32).to_le_bytes());
    let mut h = crc32fast::Hasher::new();
    h.update(&head);
    h.update(payload);
    head.extend_from_slice(&h.finalize().to_le_bytes());
    bytes.extend_from_slice(&head);
    bytes.extend_from_slice(payload);
    bytes
}

#[test]
fn longer_header_and_results_of_a_later_version_are_skipped() {
    // A later writer with a 24-byte header and 72-byte results, same version number.
    let r = QueryResult {
        target: 3,
        ..result(7)
    };
    assert_ne!(r.handshake_ns, 0);
    let mut payload = ldplayer_results::file::encode_result(&r).to_vec();
    payload.extend_from_slice(&[0xee; 8]);
    assert_eq!(read_all(&file_with(24, 72, &payload)[..]).unwrap(), vec![r]);
}

#[test]
fn results_of_files_written_before_handshake_times_read_with_none() {
    // The first files had 48-byte results: everything but handshake_ns.
    let r = result(7);
    let payload = ldplayer_results::file::encode_result(&r)[..48].to_vec();
    let back = read_all(&file_with(16, 48, &payload)[..]).unwrap();
    assert_eq!(
        back,
        vec![QueryResult {
            handshake_ns: 0,
            ..r
        }]
    );
    // Shorter than that is not a results file this build reads.
    assert!(ResultsReader::new(&file_with(16, 40, &payload[..40])[..]).is_err());
}

#[test]
fn results_of_files_written_before_targets_read_as_the_first() {
    // Then 56-byte results: everything but target.
    let r = QueryResult {
        target: 5,
        ..result(7)
    };
    let payload = ldplayer_results::file::encode_result(&r)[..56].to_vec();
    let back = read_all(&file_with(16, 56, &payload)[..]).unwrap();
    assert_eq!(back, vec![QueryResult { target: 0, ..r }]);
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

    /// Random damage (flipped bytes, blocks overwritten, garbage inserted between blocks, the
    /// end cut off) never makes the reader panic, and every block left intact is read, in order;
    /// nothing else is.
    #[test]
    fn prop_damage_never_loses_an_intact_block(
        results in prop::collection::vec(arb_result(), 1..120),
        block in 1usize..20,
        damage in prop::collection::vec((0u8..4, any::<prop::sample::Index>(), any::<u8>(), 1usize..300), 0..12),
        garbage in prop::collection::vec(any::<u8>(), 0..400),
        cut in prop::option::of(any::<prop::sample::Index>()),
    ) {
        let bytes = write_file(&results, block);
        let blocks = blocks_of(results.len(), block);
        // Damage block by block, then lay the blocks out with garbage between some of them.
        let mut parts: Vec<(Vec<u8>, bool)> = blocks
            .iter()
            .map(|&(at, n)| (bytes[at..at + BLOCK_HEADER_LEN + n * RESULT_LEN].to_vec(), true))
            .collect();
        let mut between: Vec<Vec<u8>> = vec![Vec::new(); parts.len() + 1];
        for &(kind, which, value, len) in &damage {
            let b = which.index(parts.len());
            match kind {
                // Flip a byte.
                0 | 1 => {
                    let part = &mut parts[b];
                    if part.0.is_empty() {
                        continue; // an earlier step replaced the block with nothing
                    }
                    let i = which.index(part.0.len() * 7 + 3) % part.0.len();
                    part.0[i] ^= value | 1;
                    part.1 = false;
                }
                // Overwrite the block with garbage of another length.
                2 => {
                    parts[b] = (garbage.iter().cycle().take(len).copied().collect(), false);
                }
                // Garbage after a block.
                _ => between[b + 1].extend(garbage.iter().take(len)),
            }
        }
        let mut file = bytes[..FILE_HEADER_LEN].to_vec();
        let mut intact_at = Vec::new();
        file.extend_from_slice(&between[0]);
        for (i, (part, intact)) in parts.iter().enumerate() {
            if *intact {
                intact_at.push((file.len(), file.len() + part.len(), i));
            }
            file.extend_from_slice(part);
            file.extend_from_slice(&between[i + 1]);
        }
        if let Some(cut) = cut {
            let at = FILE_HEADER_LEN + cut.index(file.len() - FILE_HEADER_LEN + 1);
            file.truncate(at);
        }
        let expect: Vec<QueryResult> = intact_at
            .iter()
            .filter(|&&(_, end, _)| end <= file.len())
            .flat_map(|&(_, _, i)| {
                let first = i * block;
                results[first..(first + block).min(results.len())].to_vec()
            })
            .collect();
        let mut reader = ResultsReader::new(&file[..]).unwrap();
        let back: Vec<_> = (&mut reader).collect::<Result<_, _>>().unwrap();
        prop_assert_eq!(&back, &expect);
        let damage = reader.damage();
        prop_assert!(damage.skipped_bytes <= (file.len() - FILE_HEADER_LEN) as u64);
        prop_assert_eq!(
            damage.skipped_bytes + (back.len() * RESULT_LEN) as u64 + reader.blocks_read() * BLOCK_HEADER_LEN as u64,
            (file.len() - FILE_HEADER_LEN) as u64
        );
        prop_assert!(reader.next().is_none());
    }

    /// Flipped bytes only: the results lost are exactly those of the damaged blocks.
    #[test]
    fn prop_flips_count_the_results_lost_exactly(
        results in prop::collection::vec(arb_result(), 1..120),
        block in 1usize..20,
        flips in prop::collection::vec((any::<prop::sample::Index>(), 1u8..=255), 1..6),
    ) {
        let mut bytes = write_file(&results, block);
        let blocks = blocks_of(results.len(), block);
        let mut damaged = std::collections::BTreeSet::new();
        for (at, x) in &flips {
            let i = FILE_HEADER_LEN + at.index(bytes.len() - FILE_HEADER_LEN);
            bytes[i] ^= x;
            damaged.insert(blocks.iter().rposition(|&(start, _)| start <= i).unwrap());
        }
        let (back, damage, _) = read_with_damage(&bytes);
        let lost: usize = damaged.iter().map(|&b| blocks[b].1).sum();
        prop_assert_eq!(back.len(), results.len() - lost);
        prop_assert_eq!(damage.results_lost, lost as u64);
        prop_assert!(damage.damaged_blocks >= 1 && damage.damaged_blocks <= damaged.len() as u64);
    }
}
