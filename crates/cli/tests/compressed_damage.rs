//! Compressed traces that are cut short or corrupt keep what came before the damage, as a plain
//! capture cut short does: real captures compressed with the real gzip, xz and zstd tools, cut
//! at several points or with a byte changed. The witness of "what came before" is the tool
//! itself: what `gzip -dc` (or `xz -dc`, `zstd -dc`) gets out of the damaged file, read by
//! ldplayer as a plain, truncated file, must give the very same messages.

mod common;

use common::{ldplayer, s, shared_data};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// The compressors: name, command to compress to stdout, command to decompress to stdout, suffix.
const TOOLS: [(&str, &[&str], &[&str], &str); 3] = [
    ("gzip", &["gzip", "-c"], &["gzip", "-dc"], "gz"),
    ("xz", &["xz", "-c"], &["xz", "-dc"], "xz"),
    ("zstd", &["zstd", "-q", "-c"], &["zstd", "-q", "-dc"], "zst"),
];

/// Runs a tool on `input` and returns its standard output (whatever its exit status: on a
/// damaged file the decompressors write what they could and fail).
fn pipe(argv: &[&str], input: &[u8]) -> Vec<u8> {
    let mut child = Command::new(argv[0])
        .args(&argv[1..])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap_or_else(|e| {
            panic!(
                "{} must be installed (scripts/test.sh installs it): {e}",
                argv[0]
            )
        });
    let mut stdin = child.stdin.take().expect("stdin");
    let data = input.to_vec();
    let writer = std::thread::spawn(move || {
        use std::io::Write;
        let _ = stdin.write_all(&data);
    });
    let out = child.wait_with_output().expect("tool runs");
    let _ = writer.join();
    out.stdout
}

/// Compresses `plain` with `tool`, in frames (members) of `frame` bytes each so that the
/// stream can be decoded bit by bit (a zstd block of a small file decodes only when whole):
/// concatenated frames are one valid stream for every tool.
fn compress(tool: &[&str], plain: &[u8], frame: usize) -> Vec<u8> {
    plain.chunks(frame).flat_map(|c| pipe(tool, c)).collect()
}

/// `ldplayer inspect --json` of a file: exit status success and the summary.
fn inspect(path: &Path) -> Option<serde_json::Value> {
    let out = Command::new(env!("CARGO_BIN_EXE_ldplayer"))
        .args(["inspect", &s(path), "--json"])
        .output()
        .expect("ldplayer runs");
    out.status
        .success()
        .then(|| serde_json::from_slice(&out.stdout).expect("one JSON object"))
}

fn skipped(summary: &serde_json::Value, name: &str) -> u64 {
    summary["skipped"]
        .as_array()
        .and_then(|l| l.iter().find(|c| c["name"] == name))
        .and_then(|c| c["count"].as_u64())
        .unwrap_or(0)
}

/// The text lines (messages) of a trace converted by ldplayer, `None` when it cannot be read.
fn messages(path: &Path, scratch: &Path) -> Option<Vec<String>> {
    let out = scratch.join(format!(
        "{}.messages.txt",
        path.file_name()?.to_string_lossy()
    ));
    let status = Command::new(env!("CARGO_BIN_EXE_ldplayer"))
        .args(["convert", &s(path), "--to", "text", "-o", &s(&out), "-q"])
        .stderr(Stdio::null())
        .status()
        .expect("ldplayer runs");
    if !status.success() {
        return None;
    }
    let text = std::fs::read_to_string(&out).expect("read");
    Some(
        text.lines()
            // The format tag and the column line are not messages.
            .filter(|l| !l.starts_with('#') && !l.starts_with("time\t"))
            .map(String::from)
            .collect(),
    )
}

struct Case {
    name: String,
    compressed: Vec<u8>,
    decompress: &'static [&'static str],
    suffix: &'static str,
    plain_name: &'static str,
}

/// The real captures, and the same as ldplayer text and binary traces, compressed by each tool
/// in one frame and in 4 KiB frames.
fn cases(dir: &Path) -> Option<Vec<Case>> {
    let mut plains: Vec<(String, Vec<u8>, &'static str)> = Vec::new();
    for capture in [
        "dnscap_dns.pcap",
        "dnscap_dnso1tcp.pcap",
        "dnscap_frags.pcap",
    ] {
        let path = shared_data(&format!("pcap/{capture}"))?;
        plains.push((capture.into(), std::fs::read(&path).expect("read"), "pcap"));
        if capture == "dnscap_dns.pcap" {
            for (to, suffix) in [("text", "txt"), ("binary", "bin")] {
                let out = dir.join(format!("dns.{suffix}"));
                ldplayer(&["convert", &s(&path), "--to", to, "-o", &s(&out), "-q"]);
                plains.push((
                    format!("dns.{suffix}"),
                    std::fs::read(&out).expect("read"),
                    suffix,
                ));
            }
        }
    }
    let mut cases = Vec::new();
    for (name, plain, plain_suffix) in &plains {
        for (tool, compress_cmd, decompress, suffix) in TOOLS {
            for frame in [usize::MAX, 4096] {
                let framing = if frame == usize::MAX {
                    "one frame"
                } else {
                    "4 KiB frames"
                };
                cases.push(Case {
                    name: format!("{name} by {tool} in {framing}"),
                    compressed: compress(compress_cmd, plain, frame),
                    decompress,
                    suffix,
                    plain_name: plain_suffix,
                });
            }
        }
    }
    Some(cases)
}

#[test]
fn cut_compressed_traces_keep_every_whole_message_before_the_cut() {
    let dir = tempfile::tempdir().expect("scratch");
    let Some(cases) = cases(dir.path()) else {
        return;
    };
    let mut checked_with_messages = 0;
    for case in &cases {
        let len = case.compressed.len();
        for fraction in [0.15, 0.4, 0.65, 0.9] {
            let cut = (len as f64 * fraction) as usize;
            let label = format!("{} cut at {cut} of {len} bytes", case.name);
            let file = dir
                .path()
                .join(format!("cut.{}.{}", case.plain_name, case.suffix));
            std::fs::write(&file, &case.compressed[..cut]).expect("write");
            // What the tool itself recovers, as a plain (truncated) file.
            let recovered = pipe(case.decompress, &case.compressed[..cut]);
            let plain = dir.path().join(format!("recovered.{}", case.plain_name));
            std::fs::write(&plain, &recovered).expect("write");
            let expected = messages(&plain, dir.path()).map(|mut m| {
                if case.plain_name == "txt" && !recovered.ends_with(b"\n") {
                    // A line cut short is no message; the plain reader may still take it.
                    let whole = recovered
                        .split(|b| *b == b'\n')
                        .filter(|l| !l.starts_with(b"#") && !l.starts_with(b"time\t"))
                        .count()
                        .saturating_sub(1);
                    m.truncate(whole);
                }
                m
            });
            let got = messages(&file, dir.path());
            let Some(expected) = expected else {
                // The tool recovered too little to be a trace: ldplayer cannot read it either.
                assert_eq!(got, None, "{label}");
                continue;
            };
            let got = got.unwrap_or_else(|| panic!("{label}: convert failed"));
            assert_eq!(got, expected, "{label}");
            let summary = inspect(&file).unwrap_or_else(|| panic!("{label}: inspect failed"));
            assert_eq!(summary["messages"], got.len(), "{label}");
            assert_eq!(skipped(&summary, "file-truncated"), 1, "{label}: {summary}");
            if !got.is_empty() {
                checked_with_messages += 1;
            }
        }
    }
    // Most cuts leave messages to compare (4 KiB frames decode bit by bit).
    assert!(
        checked_with_messages >= cases.len() * 2,
        "only {checked_with_messages} cuts kept messages"
    );
}

/// What the decompressor decodes in one step and drops with it when that step meets the damage
/// (ldplayer asks for at most 1 KiB at a time): a corrupt stream may lose that much before it.
const STEP: usize = 1024;

#[test]
fn corrupt_compressed_traces_keep_what_came_before_and_count_it() {
    let dir = tempfile::tempdir().expect("scratch");
    let Some(capture) = shared_data("pcap/dnscap_dns.pcap") else {
        return;
    };
    let full = messages(&capture, dir.path()).expect("the capture reads");
    for (tool, compress_cmd, decompress, suffix) in TOOLS {
        let compressed = compress(compress_cmd, &std::fs::read(&capture).expect("read"), 4096);
        // A changed byte in the middle (the data) and in the last byte (gzip's size, xz's
        // footer, zstd's checksum: the data itself is intact).
        for at in [compressed.len() / 2, compressed.len() - 1] {
            let mut bad = compressed.clone();
            bad[at] ^= 0x55;
            let file: PathBuf = dir.path().join(format!("bad.pcap.{suffix}"));
            std::fs::write(&file, &bad).expect("write");
            let label = format!("{tool}, byte {at} of {} changed", bad.len());
            let out = Command::new(env!("CARGO_BIN_EXE_ldplayer"))
                .args(["inspect", &s(&file), "--json"])
                .output()
                .expect("ldplayer runs");
            let err = String::from_utf8_lossy(&out.stderr);
            assert!(out.status.success(), "{label}: {err}");
            let summary: serde_json::Value =
                serde_json::from_slice(&out.stdout).expect("one JSON object");
            let counted = skipped(&summary, "file-corrupt") + skipped(&summary, "file-truncated");
            assert_eq!(counted, 1, "{label}: {summary}");
            assert!(
                err.contains(&format!("the {tool} stream")) && err.contains("counted as file-"),
                "{label}: {err}"
            );
            if at != compressed.len() - 1 {
                continue;
            }
            // Only the end is damaged: what ldplayer keeps is the trace's own beginning, and
            // holds every message of what the tool recovers, less at most one step.
            assert_eq!(skipped(&summary, "file-corrupt"), 1, "{label}: {summary}");
            let got = messages(&file, dir.path()).expect("convert keeps what it read");
            assert_eq!(got[..], full[..got.len()], "{label}");
            let recovered = pipe(decompress, &bad);
            let bound = dir.path().join("bound.pcap");
            std::fs::write(&bound, &recovered[..recovered.len().saturating_sub(STEP)])
                .expect("write");
            let at_least = messages(&bound, dir.path()).expect("the tool recovers a capture");
            assert!(
                got.len() >= at_least.len() && !at_least.is_empty(),
                "{label}: {} messages kept, {} in what {tool} recovers less {STEP} bytes",
                got.len(),
                at_least.len()
            );
        }
    }
}
