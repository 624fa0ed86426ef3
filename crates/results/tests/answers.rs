//! Results files that keep answers (version 2): every answer back byte for byte with its
//! result, blocks bounded in bytes, damage costing only its block, older files still read.

use ldplayer_dns::Rcode;
use ldplayer_results::file::{
    BLOCK_HEADER_LEN, DEFAULT_BLOCK_ANSWER_BYTES, FILE_HEADER_LEN, RESULT_LEN,
};
use ldplayer_results::{
    merge, Outcome, QueryResult, ResultSink, ResultsReader, ResultsWriter, RunInfo, Tail, Targeted,
    Tee,
};
use ldplayer_trace::Proto;
use proptest::prelude::*;
use std::time::Duration;

fn result(i: u64, answered: bool) -> QueryResult {
    QueryResult {
        index: i,
        trace_ns: 1_000 + i as i64,
        intended_ns: 2_000 + i as i64,
        sent_ns: 2_010 + i as i64,
        received_ns: if answered { 3_000 + i as i64 } else { 0 },
        proto: Proto::ALL[i as usize % Proto::ALL.len()],
        new_connection: false,
        handshake_ns: 0,
        rcode: Rcode::NOERROR,
        response_len: 0,
        truncated: false,
        outcome: if answered {
            Outcome::Answered
        } else {
            Outcome::Timeout
        },
        target: (i % 3) as u16,
    }
}

/// A response-like message of `len` bytes (at least a header) for query `i`.
fn answer(i: u64, len: usize) -> Vec<u8> {
    let mut a: Vec<u8> = (0..len.max(12))
        .map(|k| (k as u64 * 31 + i) as u8)
        .collect();
    a[2] |= 0x80;
    a
}

fn keeping() -> RunInfo {
    RunInfo {
        answers: Some(true),
        targets: Some(vec!["a".into(), "b".into(), "c".into()]),
        ..RunInfo::default()
    }
}

/// Writes `items` (a result, and its answer when answered) with blocks of `block` results.
fn write(items: &[(QueryResult, Option<Vec<u8>>)], info: &RunInfo, block: usize) -> Vec<u8> {
    let mut w =
        ResultsWriter::with_run_info_and_limits(Vec::new(), info, block, Duration::from_secs(3600))
            .unwrap();
    for (r, a) in items {
        match a {
            Some(a) => w.result_with_answer(r, a).unwrap(),
            None => w.result(r).unwrap(),
        }
    }
    w.into_inner().unwrap()
}

fn items(n: u64) -> Items {
    (0..n)
        .map(|i| {
            let answered = i % 4 != 3;
            let a = answered.then(|| answer(i, 12 + (i as usize * 37) % 700));
            let mut r = result(i, answered);
            r.response_len = a.as_ref().map_or(0, |a| a.len() as u16);
            (r, a)
        })
        .collect()
}

/// Results with their answers, owned.
type Items = Vec<(QueryResult, Option<Vec<u8>>)>;

fn read(bytes: &[u8]) -> (Items, ResultsReader<&[u8]>) {
    let mut reader = ResultsReader::new(bytes).unwrap();
    let mut back = Vec::new();
    while let Some((r, a)) = reader.next_with_answer().unwrap() {
        back.push((r, a.map(<[u8]>::to_vec)));
    }
    (back, reader)
}

#[test]
fn answers_come_back_byte_for_byte_with_their_results_and_targets() {
    let items = items(1000);
    let bytes = write(&items, &keeping(), 64);
    assert_eq!(u16::from_le_bytes([bytes[8], bytes[9]]), 2, "version 2");
    let (back, reader) = read(&bytes);
    assert!(reader.keeps_answers());
    assert_eq!(back, items);
    assert_eq!(reader.tail(), Tail::Clean);
    assert!(reader.damage().is_clean());
    let info = reader.run_info().unwrap();
    assert_eq!(info.answers, Some(true));
    assert_eq!(info.target_name(1), "b");
    assert_eq!(info.target_name(7), "#7");
    // Every byte is a header, a result or an answer.
    let answer_bytes: usize = items
        .iter()
        .filter_map(|(_, a)| a.as_ref())
        .map(Vec::len)
        .sum();
    assert_eq!(reader.answer_bytes_read(), answer_bytes as u64);
    let header_len = bytes.len()
        - reader.blocks_read() as usize * BLOCK_HEADER_LEN
        - items.len() * RESULT_LEN
        - answer_bytes;
    assert!(header_len > FILE_HEADER_LEN, "with run info: {header_len}");
}

#[test]
fn a_file_that_does_not_keep_answers_stays_version_1_and_drops_them() {
    let items = items(50);
    let bytes = write(&items, &RunInfo::default(), 16);
    assert_eq!(u16::from_le_bytes([bytes[8], bytes[9]]), 1, "version 1");
    let (back, reader) = read(&bytes);
    assert!(!reader.keeps_answers());
    assert!(back.iter().all(|(_, a)| a.is_none()));
    let results: Vec<_> = back.into_iter().map(|(r, _)| r).collect();
    let want: Vec<_> = items.into_iter().map(|(r, _)| r).collect();
    assert_eq!(results, want);
    // A version-1 file is results and block headers only.
    assert_eq!(
        bytes.len(),
        FILE_HEADER_LEN + 4 * BLOCK_HEADER_LEN + 50 * RESULT_LEN
    );
}

#[test]
fn a_block_is_written_once_its_answers_fill_a_mebibyte() {
    // 4,000-byte answers: 263 fill a block's answer bytes long before 4,096 results do.
    let items: Vec<_> = (0..600u64)
        .map(|i| {
            let a = answer(i, 4000);
            let mut r = result(i, true);
            r.response_len = 4000;
            (r, Some(a))
        })
        .collect();
    let mut w = ResultsWriter::with_run_info(Vec::new(), &keeping()).unwrap();
    for (r, a) in &items {
        w.result_with_answer(r, a.as_ref().unwrap()).unwrap();
    }
    assert_eq!(
        w.blocks(),
        (600 * 4000 / DEFAULT_BLOCK_ANSWER_BYTES) as u64,
        "a block per mebibyte of answers, whatever the result count"
    );
    let bytes = w.into_inner().unwrap();
    let (back, _) = read(&bytes);
    assert_eq!(back, items);
}

/// The offsets of a file's blocks and their lengths (header included).
fn blocks(bytes: &[u8]) -> Vec<(usize, usize)> {
    let header_len = u16::from_le_bytes([bytes[10], bytes[11]]) as usize;
    let mut at = header_len;
    let mut out = Vec::new();
    while at < bytes.len() {
        let len = u32::from_le_bytes(bytes[at + 8..at + 12].try_into().unwrap()) as usize;
        out.push((at, BLOCK_HEADER_LEN + len));
        at += BLOCK_HEADER_LEN + len;
    }
    out
}

#[test]
fn a_damaged_answer_costs_its_block_only() {
    let items = items(40);
    let bytes = write(&items, &keeping(), 10);
    let b = blocks(&bytes);
    assert_eq!(b.len(), 4);
    let mut bad = bytes.clone();
    // The last byte of the second block: one of its answers.
    let (at, len) = b[1];
    bad[at + len - 1] ^= 0xff;
    let (back, reader) = read(&bad);
    let want: Vec<_> = items[..10].iter().chain(&items[20..]).cloned().collect();
    assert_eq!(back, want);
    assert_eq!(reader.damage().damaged_blocks, 1);
    assert_eq!(reader.damage().results_lost, 10);
}

#[test]
fn a_file_cut_in_an_answer_keeps_the_blocks_before() {
    let items = items(40);
    let bytes = write(&items, &keeping(), 10);
    let b = blocks(&bytes);
    let (at, len) = b[2];
    let (back, reader) = read(&bytes[..at + len - 5]);
    assert_eq!(back, items[..20].to_vec());
    assert_eq!(reader.tail(), Tail::Truncated);
    assert!(reader.damage().cut_short);
    assert_eq!(reader.damage().results_lost, 10);
}

#[test]
fn answers_that_do_not_add_up_fail_the_block_even_with_a_good_crc() {
    let items = items(20);
    let bytes = write(&items, &keeping(), 10);
    let b = blocks(&bytes);
    let mut bad = bytes.clone();
    // The first result's answer claims one byte more than it has; the CRC is made right.
    let (at, len) = b[0];
    let r0 = at + BLOCK_HEADER_LEN;
    let claimed = u16::from_le_bytes([bad[r0 + 42], bad[r0 + 43]]) + 1;
    bad[r0 + 42..r0 + 44].copy_from_slice(&claimed.to_le_bytes());
    let mut h = crc32fast::Hasher::new();
    h.update(&bad[at..at + 12]);
    h.update(&bad[at + BLOCK_HEADER_LEN..at + len]);
    bad[at + 12..at + 16].copy_from_slice(&h.finalize().to_le_bytes());
    let (back, reader) = read(&bad);
    assert_eq!(back, items[10..].to_vec());
    assert_eq!(reader.damage().damaged_blocks, 1);
}

#[test]
fn merging_keeps_answers_and_orders_by_index_then_target() {
    let all = items(300);
    // Two shards, each in completion order (pairs swapped).
    let shard = |k: u64| -> Vec<_> {
        let mut v: Vec<_> = all
            .iter()
            .filter(|(r, _)| r.index % 2 == k)
            .cloned()
            .collect();
        for pair in v.chunks_mut(2) {
            pair.reverse();
        }
        v
    };
    let files = [
        write(&shard(0), &keeping(), 32),
        write(&shard(1), &keeping(), 32),
    ];
    let readers = files
        .iter()
        .map(|f| ResultsReader::new(&f[..]).unwrap())
        .collect();
    let mut out = ResultsWriter::with_run_info(Vec::new(), &keeping()).unwrap();
    let report = merge(readers, &mut out, 64).unwrap();
    assert_eq!((report.merged, report.duplicates, report.late), (300, 0, 0));
    let (back, _) = read(&out.into_inner().unwrap());
    assert_eq!(back, all);
}

#[test]
fn a_targeted_sink_marks_its_results_and_tees_pass_answers_on() {
    let (r, a) = items(1).remove(0);
    let inner = Tee::new(
        None::<ResultsWriter<Vec<u8>>>,
        Some(ResultsWriter::with_run_info(Vec::new(), &keeping()).unwrap()),
    );
    let mut sink = Targeted::new(2, inner);
    sink.result_with_answer(&r, a.as_ref().unwrap()).unwrap();
    sink.finish().unwrap();
    let (_, w) = sink.into_inner().into_parts();
    let (back, _) = read(&w.unwrap().into_inner().unwrap());
    assert_eq!(back, vec![(QueryResult { target: 2, ..r }, a)]);
}

proptest! {
    #[test]
    fn prop_every_cut_keeps_the_whole_blocks_before_it(
        lens in prop::collection::vec(prop::option::of(12usize..600), 1..120),
        block in 1usize..20,
        cut in any::<prop::sample::Index>(),
    ) {
        let items: Vec<_> = lens.iter().enumerate().map(|(i, len)| {
            let a = len.map(|l| answer(i as u64, l));
            let mut r = result(i as u64, a.is_some());
            r.response_len = a.as_ref().map_or(0, |a| a.len() as u16);
            (r, a)
        }).collect();
        let bytes = write(&items, &keeping(), block);
        let header_len = u16::from_le_bytes([bytes[10], bytes[11]]) as usize;
        let cut = header_len + cut.index(bytes.len() - header_len + 1);
        let (back, _) = read(&bytes[..cut]);
        let whole = blocks(&bytes).iter().filter(|(at, len)| at + len <= cut).count();
        let kept = (whole * block).min(items.len());
        prop_assert_eq!(back, items[..kept].to_vec());
    }
}
