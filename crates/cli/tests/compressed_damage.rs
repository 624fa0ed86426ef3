//! Compressed traces that are cut short keep what came before the cut, as a plain capture cut
//! short does; corrupt ones keep the frames before the damaged one, none of what the damaged
//! frame decoded to, and fail saying where: real captures (and the text and binary traces made
//! of one) compressed with the real gzip, xz and zstd tools, in one frame and in 4 KiB frames,
//! cut at several points or with bytes changed. The witness of "what came before" a cut is the
//! tool itself: what `gzip -dc` (or `xz -dc`, `zstd -dc`) gets out of the cut file, read by
//! ldplayer as a plain, truncated file, must give the very same messages.

mod binary;

use binary::{ldplayer, s};
use ldplayer_testbed::prerequisite::shared_file;
use std::path::Path;
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
/// concatenated frames are one valid stream for every tool. Returns the stream and where each
/// frame ends in it.
fn compress_frames(tool: &[&str], plain: &[u8], frame: usize) -> (Vec<u8>, Vec<usize>) {
    let mut out = Vec::new();
    let mut ends = Vec::new();
    for chunk in plain.chunks(frame) {
        out.extend(pipe(tool, chunk));
        ends.push(out.len());
    }
    (out, ends)
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
    /// Where each frame (member) ends in `compressed`.
    frames: Vec<usize>,
    /// The plain bytes in each frame but the last.
    frame_len: usize,
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
        let path = shared_file(&format!("pcap/{capture}"))?;
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
                let (compressed, frames) = compress_frames(compress_cmd, plain, frame);
                cases.push(Case {
                    name: format!("{name} by {tool} in {framing}"),
                    compressed,
                    frames,
                    frame_len: frame,
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

/// What a compressor calls the unit it checks: a gzip member, an xz stream, a zstd frame.
fn unit(tool: &str) -> &'static str {
    match tool {
        "gzip" => "member",
        "xz" => "stream",
        _ => "frame",
    }
}

/// The messages of `plain` (a trace of kind `plain_name`) that end within its first `len`
/// bytes: all that may be kept when the frame after them is damaged.
fn whole_messages_before(plain: &[u8], plain_name: &str, len: usize, scratch: &Path) -> usize {
    if plain_name == "txt" {
        // One message per line, after the tag and the column line.
        let lines = plain[..len].iter().filter(|b| **b == b'\n').count();
        return lines.saturating_sub(2);
    }
    let file = scratch.join(format!("before.{plain_name}"));
    std::fs::write(&file, &plain[..len]).expect("write");
    messages(&file, scratch).map_or(0, |m| m.len())
}

/// Flipping 16 bytes in the middle of a compressed trace (or its very last byte: gzip's size,
/// xz's footer, zstd's checksum) is corruption the tools detect only at the end of the damaged
/// frame, after handing out what it decoded to: ldplayer holds back the records of a frame
/// until its check passes, so what it keeps is exactly the messages of the frames before the
/// damaged one, none invented; it says which frame is corrupt and where, prints its summary
/// and exits non-zero.
#[test]
fn corrupt_compressed_traces_drop_the_damaged_frame_say_where_and_fail() {
    let dir = tempfile::tempdir().expect("scratch");
    let Some(cases) = cases(dir.path()) else {
        return;
    };
    for case in cases
        .iter()
        .filter(|c| !c.name.starts_with("dnscap_") || c.name.starts_with("dnscap_dns.pcap"))
    {
        let plain = pipe(case.decompress, &case.compressed);
        let full = {
            let file = dir.path().join(format!("full.{}", case.plain_name));
            std::fs::write(&file, &plain).expect("write");
            messages(&file, dir.path()).expect("the plain trace reads")
        };
        let tool = case.decompress[0];
        for (at, len) in [
            (case.compressed.len() / 2, 16),
            (case.compressed.len() - 1, 1),
        ] {
            let mut bad = case.compressed.clone();
            for b in &mut bad[at..at + len] {
                *b ^= 0xff;
            }
            // The frame holding the first changed byte, and the plain bytes before it.
            let (frame, before) = match case.frames.iter().position(|end| at < *end) {
                Some(k) => (k + 1, (k * case.frame_len).min(plain.len())),
                None => unreachable!("the change is inside the file"),
            };
            let whole = whole_messages_before(&plain, case.plain_name, before, dir.path());
            let label = format!("{}, bytes {at}..{} changed", case.name, at + len);
            let file = dir
                .path()
                .join(format!("bad.{}.{}", case.plain_name, case.suffix));
            std::fs::write(&file, &bad).expect("write");

            let out_file = dir.path().join("bad-out.txt");
            let _ = std::fs::remove_file(&out_file);
            let out = Command::new(env!("CARGO_BIN_EXE_ldplayer"))
                .args(["convert", &s(&file), "--to", "text", "-o", &s(&out_file)])
                .output()
                .expect("ldplayer runs");
            let err = String::from_utf8_lossy(&out.stderr);
            assert!(!out.status.success(), "{label}: convert exit 0: {err}");
            assert!(
                err.contains(&format!("the {tool} stream is corrupt"))
                    && err.contains(&format!("{} {frame} ", unit(tool)))
                    && err.contains("at byte "),
                "{label}: the error names the corrupt {} {frame} and where: {err}",
                unit(tool)
            );
            let opened = !err.contains("cannot read");
            if opened {
                assert!(
                    err.contains(&format!("ldplayer: {whole} messages from")),
                    "{label}: the summary first ({whole} messages): {err}"
                );
            } else {
                assert_eq!(whole, 0, "{label}: {err}");
            }
            let got: Vec<String> = std::fs::read_to_string(&out_file)
                .map(|t| {
                    t.lines()
                        .filter(|l| !l.starts_with('#') && !l.starts_with("time\t"))
                        .map(String::from)
                        .collect()
                })
                .unwrap_or_default();
            assert_eq!(
                got.len(),
                whole,
                "{label}: the messages of the frames before"
            );
            assert_eq!(got[..], full[..got.len()], "{label}: none invented");

            let out = Command::new(env!("CARGO_BIN_EXE_ldplayer"))
                .args(["inspect", &s(&file), "--json"])
                .output()
                .expect("ldplayer runs");
            let err = String::from_utf8_lossy(&out.stderr);
            assert!(!out.status.success(), "{label}: inspect exit 0: {err}");
            if opened {
                let summary: serde_json::Value = serde_json::from_slice(&out.stdout)
                    .unwrap_or_else(|e| panic!("{label}: inspect prints its summary ({e}): {err}"));
                assert_eq!(summary["messages"], whole, "{label}: {summary}");
                assert_eq!(skipped(&summary, "file-corrupt"), 1, "{label}: {summary}");
            }
        }
    }
}

/// What ldplayer writes compressed is cut into frames of 4 MiB of input, each with its own
/// check: the tools read it whole, and damage in one frame loses that frame's records only,
/// named and counted, where a single unchecked frame used to pass invented records on.
#[test]
fn compressed_outputs_are_written_in_checked_frames() {
    let dir = tempfile::tempdir().expect("scratch");
    let bin = dir.path().join("t.bin");
    // About 13 MB of text: four frames.
    ldplayer(&["synth", "-n", "60000", "--seed", "4", "-o", &s(&bin), "-q"]);
    for (suffix, tool) in [("zst", "zstd"), ("gz", "gzip"), ("xz", "xz")] {
        let out = dir.path().join(format!("t.txt.{suffix}"));
        ldplayer(&["convert", &s(&bin), "-o", &s(&out), "-q"]);
        let status = Command::new(tool)
            .args(["-t", &s(&out)])
            .status()
            .unwrap_or_else(|e| panic!("{tool} runs (Debian package: {tool}): {e}"));
        assert!(status.success(), "{tool} -t {}", out.display());
        let whole = inspect(&out).expect("inspect");
        assert_eq!(whole["messages"], 60000, "{suffix}");
        // Damage four fifths into the file: the records of one frame at most are lost.
        let mut bytes = std::fs::read(&out).expect("read");
        let at = bytes.len() * 4 / 5;
        for b in &mut bytes[at..at + 16] {
            *b ^= 0xff;
        }
        let bad = dir.path().join(format!("bad.txt.{suffix}"));
        std::fs::write(&bad, &bytes).expect("write");
        let run = Command::new(env!("CARGO_BIN_EXE_ldplayer"))
            .args(["inspect", &s(&bad), "--json"])
            .output()
            .expect("ldplayer runs");
        let err = String::from_utf8_lossy(&run.stderr);
        assert!(!run.status.success(), "{suffix}: {err}");
        let summary: serde_json::Value = serde_json::from_slice(&run.stdout).expect("summary");
        let kept = summary["messages"].as_u64().expect("messages");
        assert!(
            (15_000..60_000).contains(&kept),
            "{suffix}: {kept} messages kept of 60000: the frames before the damage: {err}"
        );
    }
}
