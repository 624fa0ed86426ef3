//! `ldplayer_trace::open` opens every kind of input the same way: a real capture as pcap, as
//! pcapng (converted by Wireshark's editcap) and gzip-compressed, and the same messages
//! written as a text and a binary trace by this crate's writers all read back to the same
//! records, with their format and compression told; what the reader notices besides its
//! records reaches the notes.

use flate2::write::GzEncoder;
use ldplayer_trace::binary::BinaryWriter;
use ldplayer_trace::input::{Compression, Format};
use ldplayer_trace::open::{open, Notes, OpenError, ReadNote, ReadOptions};
use ldplayer_trace::text::TextWriter;
use ldplayer_trace::{Collect, RecordBuf, Sink, SkipReason};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::{Arc, Mutex};

/// A shared sample capture, or a failure naming it when it is missing.
fn sample(name: &str) -> PathBuf {
    let path = Path::new(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../../shared/data/pcap"
    ))
    .join(name);
    assert!(
        path.is_file(),
        "missing test capture {} (see shared/data/README.md)",
        path.display()
    );
    path
}

/// Options whose notes are collected instead of printed.
fn collecting(dns_ports: &[u16]) -> (ReadOptions, Arc<Mutex<Vec<ReadNote>>>) {
    let notes = Arc::new(Mutex::new(Vec::new()));
    let seen = notes.clone();
    let options = ReadOptions {
        dns_ports: dns_ports.to_vec(),
        notes: Notes::to(move |note| seen.lock().expect("notes").push(note.clone())),
        ..ReadOptions::default()
    };
    (options, notes)
}

/// Opens `path`, checks its format and compression, and reads it to the end.
fn read(path: &Path, format: Format, compression: Compression) -> Collect {
    let (options, notes) = collecting(&[53]);
    let mut input = open(path, &options).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    assert_eq!(input.format, format, "{}", path.display());
    assert_eq!(input.compression, compression, "{}", path.display());
    let len = std::fs::metadata(path).expect("metadata").len();
    assert_eq!(input.len, Some(len), "{}", path.display());
    let mut sink = Collect::default();
    input
        .source
        .run(&mut sink)
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let notes = notes.lock().expect("notes");
    assert!(notes.is_empty(), "{}: {notes:?}", path.display());
    sink
}

/// Writes `records` into `sink`, then finishes it.
fn write_all(sink: &mut dyn Sink, records: &[RecordBuf]) {
    for r in records {
        sink.record(&r.as_record()).expect("record");
    }
    sink.finish().expect("finish");
}

#[test]
fn every_kind_of_input_reads_to_the_same_records() {
    let dir = tempfile::tempdir().expect("tempdir");
    let pcap = sample("dnscap_dns.pcap");
    let reference = read(&pcap, Format::Capture, Compression::None);
    // 41 queries and 41 responses, as tshark counts them (shared/data/README.md).
    let responses = reference.records.iter().filter(|r| r.wire[2] & 0x80 != 0);
    assert_eq!((reference.records.len(), responses.count()), (82, 41));

    let pcapng = dir.path().join("dns.pcapng");
    let editcap = Command::new("editcap")
        .args(["-F", "pcapng"])
        .arg(&pcap)
        .arg(&pcapng)
        .status()
        .unwrap_or_else(|e| panic!("editcap (Wireshark) is needed for this test: {e}"));
    assert!(editcap.success(), "editcap failed: {editcap}");
    let head = std::fs::read(&pcapng).expect("pcapng");
    assert_eq!(
        head[..4],
        [0x0a, 0x0d, 0x0d, 0x0a],
        "editcap wrote no pcapng"
    );

    let gz = dir.path().join("dns.pcap.gz");
    let mut encoder = GzEncoder::new(Vec::new(), flate2::Compression::default());
    encoder
        .write_all(&std::fs::read(&pcap).expect("pcap"))
        .expect("gzip");
    std::fs::write(&gz, encoder.finish().expect("gzip")).expect("write gz");

    let text = dir.path().join("dns.txt");
    let mut writer = TextWriter::new(std::fs::File::create(&text).expect("create")).expect("text");
    write_all(&mut writer, &reference.records);
    writer.into_inner().expect("flush text");

    let binary = dir.path().join("dns.bin");
    let mut writer =
        BinaryWriter::new(std::fs::File::create(&binary).expect("create")).expect("binary");
    write_all(&mut writer, &reference.records);
    writer.into_inner().expect("flush binary");

    for (path, format, compression) in [
        (&pcapng, Format::Capture, Compression::None),
        (&gz, Format::Capture, Compression::Gzip),
        (&text, Format::Text, Compression::None),
        (&binary, Format::Binary, Compression::None),
    ] {
        let got = read(path, format, compression);
        assert_eq!(got.records, reference.records, "{}", path.display());
        assert_eq!(got.skipped, reference.skipped, "{}", path.display());
    }
}

#[test]
fn a_capture_without_dns_on_the_asked_ports_says_where_the_traffic_was() {
    let (options, notes) = collecting(&[5353]);
    let pcap = sample("dnscap_dns.pcap");
    let mut input = open(&pcap, &options).expect("open");
    let mut sink = Collect::default();
    input.source.run(&mut sink).expect("run");
    assert!(sink.records.is_empty());
    let notes = notes.lock().expect("notes");
    let [ReadNote::NoDns(hint)] = notes.as_slice() else {
        panic!("expected one port hint, got {notes:?}");
    };
    assert_eq!(hint.busiest[0], (53, 82), "{hint}");
    assert!(hint.to_string().ends_with("; try --dns-port 53"), "{hint}");
}

#[test]
fn damage_and_unreadable_lines_are_told_and_what_came_before_is_kept() {
    let dir = tempfile::tempdir().expect("tempdir");
    let pcap = std::fs::read(sample("dnscap_dns.pcap")).expect("pcap");
    let mut encoder = GzEncoder::new(Vec::new(), flate2::Compression::default());
    encoder.write_all(&pcap).expect("gzip");
    let gz = encoder.finish().expect("gzip");
    let cut = dir.path().join("cut.pcap.gz");
    std::fs::write(&cut, &gz[..gz.len() * 2 / 3]).expect("write");

    let (options, notes) = collecting(&[53]);
    let mut sink = Collect::default();
    open(&cut, &options)
        .expect("open")
        .source
        .run(&mut sink)
        .expect("run");
    assert!(!sink.records.is_empty(), "what came before the cut is kept");
    assert!(sink.skipped.get(SkipReason::TruncatedFile) > 0);
    match notes.lock().expect("notes").as_slice() {
        [ReadNote::Damaged { input, cut: stream }] => {
            assert_eq!(input, &cut);
            assert!(stream.truncated, "{stream}");
        }
        other => panic!("expected one damage note, got {other:?}"),
    }

    let text = dir.path().join("bad.txt");
    let mut writer = TextWriter::new(Vec::new()).expect("text");
    write_all(&mut writer, &[]);
    let mut content = writer.into_inner().expect("text");
    content.extend_from_slice(b"not\ta\trecord\n");
    std::fs::write(&text, content).expect("write");
    let (options, notes) = collecting(&[53]);
    open(&text, &options)
        .expect("open")
        .source
        .run(&mut Collect::default())
        .expect("run");
    let notes = notes.lock().expect("notes");
    let [note @ ReadNote::LineSkipped { .. }] = notes.as_slice() else {
        panic!("expected one skipped line, got {notes:?}");
    };
    assert!(note.to_string().starts_with("line "), "{note}");
}

#[test]
fn errors_name_the_input_and_the_stage() {
    let dir = tempfile::tempdir().expect("tempdir");
    let missing = dir.path().join("missing.pcap");
    let e = open(&missing, &ReadOptions::default())
        .err()
        .expect("no file");
    assert!(
        matches!(&e, OpenError::Open { input, .. } if input == &missing),
        "{e:?}"
    );
    assert_eq!(e.to_string(), format!("cannot open {}", missing.display()));

    let junk = dir.path().join("junk");
    std::fs::write(&junk, "not a trace").expect("write");
    let e = open(&junk, &ReadOptions::default()).err().expect("junk");
    assert!(
        matches!(&e, OpenError::Read { input, .. } if input == &junk),
        "{e:?}"
    );
}
