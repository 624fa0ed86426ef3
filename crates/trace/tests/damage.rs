//! Damaged inputs: compressed traces whose frame fails its check (made by the real zstd tool,
//! then bytes changed), binary traces whose header is cut, and the errors all of it gives,
//! which say what happened once, without repeating their causes.

use ldplayer_dns::{build, name_from_presentation, Class, Fields, Question, Rcode, Rtype};
use ldplayer_trace::binary::BinaryWriter;
use ldplayer_trace::input::{CorruptStream, StreamCut};
use ldplayer_trace::open::{open, Notes, ReadOptions};
use ldplayer_trace::{Collect, Proto, RecordBuf, SkipReason, TraceError};
use std::error::Error;
use std::io::Write;
use std::path::Path;
use std::process::{Command, Stdio};

/// `n` distinct queries (names, IDs and times all differ).
fn queries(n: u32) -> Vec<RecordBuf> {
    (0..n)
        .map(|i| {
            let fields = Fields {
                id: i as u16,
                qr: false,
                opcode: 0,
                flags: 0x0100,
                rcode: Rcode::NOERROR,
                question: Some(Question {
                    name: name_from_presentation(&format!("q{i}.n{}.example.", i * 7919))
                        .expect("name"),
                    qtype: Rtype::AAAA,
                    qclass: Class::IN,
                }),
                edns: None,
            };
            RecordBuf {
                time_ns: 1_700_000_000_000_000_000 + i as i64 * 1_000_000,
                src: format!("10.0.{}.{}:{}", i % 200, i % 250, 1024 + i)
                    .parse()
                    .expect("address"),
                dst: "192.0.2.53:53".parse().expect("address"),
                proto: Proto::Udp,
                conn: 0,
                wire: build(&fields).expect("message"),
            }
        })
        .collect()
}

/// The binary trace of `records`, and where each record ends in it.
fn binary(records: &[RecordBuf]) -> (Vec<u8>, Vec<usize>) {
    let mut writer = BinaryWriter::new(Vec::new()).expect("writer");
    let mut ends = Vec::new();
    let mut end = 16;
    for r in records {
        writer.write(&r.as_record()).expect("write");
        end += (64 + r.wire.len()).next_multiple_of(8);
        ends.push(end);
    }
    let bytes = writer.into_inner().expect("flush");
    assert_eq!(ends.last(), Some(&bytes.len()));
    (bytes, ends)
}

/// `plain` compressed by the zstd tool (which writes a checksum into every frame), in frames
/// of `frame` plain bytes; and where each frame ends.
fn zstd(plain: &[u8], frame: usize) -> (Vec<u8>, Vec<usize>) {
    let mut out = Vec::new();
    let mut ends = Vec::new();
    for chunk in plain.chunks(frame) {
        let mut child = Command::new("zstd")
            .args(["-q", "-c"])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .unwrap_or_else(|e| panic!("zstd is needed (apt-get install zstd): {e}"));
        let mut stdin = child.stdin.take().expect("stdin");
        let data = chunk.to_vec();
        let feeder = std::thread::spawn(move || stdin.write_all(&data));
        let done = child.wait_with_output().expect("zstd runs");
        feeder.join().expect("feeder").expect("zstd reads");
        assert!(done.status.success(), "zstd: {}", done.status);
        out.extend(done.stdout);
        ends.push(out.len());
    }
    (out, ends)
}

/// Reads `path` with `hold_bytes`; its records and skips, and the error it ended with.
fn read(path: &Path, hold_bytes: usize) -> (Collect, Result<(), TraceError>) {
    let options = ReadOptions {
        hold_bytes,
        notes: Notes::ignore(),
        ..ReadOptions::default()
    };
    let mut sink = Collect::default();
    let result = open(path, &options).expect("open").source.run(&mut sink);
    (sink, result)
}

fn corrupt(result: Result<(), TraceError>) -> CorruptStream {
    match result {
        Err(TraceError::Corrupt(c)) => *c,
        other => panic!("expected a corrupt stream, got {other:?}"),
    }
}

#[test]
fn a_frame_that_fails_its_check_gives_none_of_its_records_or_says_which_were_passed_on() {
    let dir = tempfile::tempdir().expect("scratch");
    let originals = queries(4000);
    let (plain, record_ends) = binary(&originals);
    for frame in [64 * 1024, usize::MAX] {
        let (mut compressed, frame_ends) = zstd(&plain, frame);
        let at = compressed.len() * 7 / 10;
        for b in &mut compressed[at..at + 16] {
            *b ^= 0xff;
        }
        let file = dir.path().join("bad.bin.zst");
        std::fs::write(&file, &compressed).expect("write");
        let k = frame_ends.iter().position(|e| at < *e).expect("inside");
        // The records of the frames before the damaged one: they passed their checks.
        let before = record_ends.iter().filter(|e| **e <= k * frame).count();
        let label = format!("frames of {frame} bytes, damage in frame {}", k + 1);

        // Held back up to 16 KiB: the damaged frame is larger, so what was read of it before
        // the damage showed had to be passed on, and is named.
        let (got, result) = read(&file, 16 * 1024);
        let c = corrupt(result);
        assert!(!c.cut.truncated, "{label}: {}", c.cut);
        assert_eq!(c.cut.frame, k as u64 + 1, "{label}: {}", c.cut);
        assert_eq!(
            c.cut.frame_start,
            frame_ends[..k].last().map_or(0, |e| *e as u64)
        );
        let passed = c.passed.expect("passed on before the damage showed");
        assert_eq!(passed.first, before as u64 + 1, "{label}: {c}");
        assert_eq!(
            got.records.len() as u64,
            before as u64 + passed.count,
            "{label}"
        );
        assert_eq!(got.records[..before], originals[..before], "{label}");
        assert!(c.dropped > 0, "{label}: {c}");
        assert_eq!(
            got.skipped.get(SkipReason::CorruptFrame),
            c.dropped,
            "{label}"
        );
        assert_eq!(got.skipped.get(SkipReason::CorruptFile), 1, "{label}");
        let message = c.to_string();
        assert!(
            message.contains(&format!(
                "records {} to {}",
                passed.first,
                before as u64 + passed.count
            )) && message.contains("may be wrong"),
            "{label}: {message}"
        );

        // Held back as a whole (the default): none of the damaged frame's records.
        let (got, result) = read(&file, ReadOptions::default().hold_bytes);
        let c = corrupt(result);
        assert_eq!(c.passed, None, "{label}: {c}");
        assert_eq!(got.records, originals[..before], "{label}");
        assert_eq!(
            got.skipped.get(SkipReason::CorruptFrame),
            c.dropped,
            "{label}"
        );
    }
}

/// The messages of an error and of its sources, outermost first.
fn chain(e: &dyn Error) -> Vec<String> {
    let mut links = vec![e.to_string()];
    let mut source = e.source();
    while let Some(s) = source {
        links.push(s.to_string());
        source = s.source();
    }
    links
}

/// Fails when a message of the chain embeds the message of its source (which `{:#}` and
/// `anyhow` then print twice).
fn assert_says_it_once(e: &dyn Error) {
    let links = chain(e);
    for pair in links.windows(2) {
        assert!(
            !pair[0].contains(&pair[1]),
            "`{}` repeats its source `{}`",
            pair[0],
            pair[1]
        );
    }
}

#[test]
fn a_binary_trace_whose_header_is_cut_says_so_and_errors_say_it_once() {
    let dir = tempfile::tempdir().expect("scratch");
    let (plain, _) = binary(&queries(50));

    let cut = dir.path().join("cut.bin");
    std::fs::write(&cut, &plain[..12]).expect("write");
    let e = open(&cut, &ReadOptions::default()).err().expect("refused");
    let message = chain(&e).join(": ");
    assert!(
        message.contains("header is cut short: 12 of its 16 bytes") && !message.contains("magic"),
        "{message}"
    );
    assert_says_it_once(&e);

    let missing = dir.path().join("missing.bin");
    assert_says_it_once(&open(&missing, &ReadOptions::default()).err().expect("none"));

    // Damage in the first block: nothing can be read.
    let (mut compressed, _) = zstd(&plain, usize::MAX);
    let middle = compressed.len() / 2;
    compressed[middle..middle + 16].fill(0);
    let bad = dir.path().join("bad.bin.zst");
    std::fs::write(&bad, &compressed).expect("write");
    match open(&bad, &ReadOptions::default()) {
        Err(e) => {
            let message = chain(&e).join(": ");
            assert!(message.contains("the zstd stream is corrupt"), "{message}");
            assert_says_it_once(&e);
        }
        Ok(mut input) => {
            let e = input
                .source
                .run(&mut Collect::default())
                .expect_err("corrupt");
            assert!(matches!(e, TraceError::Corrupt(_)), "{e:?}");
            assert_says_it_once(&e);
        }
    }

    // A cut: a note, no error; the cut's own message names the frame once.
    let file = dir.path().join("cut.bin.zst");
    let (compressed, _) = zstd(&plain, 1024);
    std::fs::write(&file, &compressed[..compressed.len() - 5]).expect("write");
    let (got, result) = read(&file, ReadOptions::default().hold_bytes);
    result.expect("a cut is no error");
    assert_eq!(got.skipped.get(SkipReason::TruncatedFile), 1);
    let cut = StreamCut {
        compression: ldplayer_trace::input::Compression::Zstd,
        truncated: true,
        offset: 10,
        detail: "incomplete frame".into(),
        frame: 2,
        frame_start: 100,
        found_at: 120,
    };
    assert_eq!(
        cut.to_string(),
        "the zstd stream ends early: frame 2 (from byte 100 of the file) is cut at byte 120, \
         after 10 bytes of content (incomplete frame)"
    );
}
