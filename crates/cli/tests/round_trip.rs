//! Round trips on every real capture in shared/data/pcap, through the `ldplayer` command:
//! pcap → text → binary gives DNS messages byte-identical to what the capture reader decoded,
//! which for UDP captures is checked against tshark's own `udp.payload`; binary → text → binary
//! is identical; and pcap → binary → pcap → binary keeps every message.

mod binary;

use binary::ldplayer;

use ldplayer_testbed::prerequisite;
use ldplayer_trace::binary::BinaryReader;
use ldplayer_trace::capture::{CaptureOptions, CaptureReader};
use ldplayer_trace::{Collect, RecordBuf, Source};
use std::path::{Path, PathBuf};
use std::process::Command;

/// Every capture of the shared test data; `None` only when it is missing and skipping is
/// allowed.
fn captures() -> Option<Vec<PathBuf>> {
    let dir = prerequisite::shared_file("pcap")?;
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.expect("directory entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "pcap" || e == "pcapng"))
        .collect();
    files.sort();
    assert!(
        files.len() >= 15,
        "expected the shared captures in {}",
        dir.display()
    );
    Some(files)
}

fn read_capture(path: &Path) -> Vec<RecordBuf> {
    let file = std::io::BufReader::new(std::fs::File::open(path).expect("capture opens"));
    let mut got = Collect::default();
    CaptureReader::new(file, CaptureOptions::default())
        .expect("a capture")
        .run(&mut got)
        .expect("reads");
    got.records
}

fn read_binary(path: &Path) -> Vec<RecordBuf> {
    let file = std::io::BufReader::new(std::fs::File::open(path).expect("trace opens"));
    let mut got = Collect::default();
    BinaryReader::new(file)
        .expect("a binary trace")
        .run(&mut got)
        .expect("reads");
    assert_eq!(got.skipped.total(), 0);
    got.records
}

/// The DNS payloads of UDP packets as tshark sees them, in capture order.
fn tshark_udp_payloads(path: &Path) -> Vec<Vec<u8>> {
    let out = Command::new("tshark")
        .args(["-r"])
        .arg(path)
        .args(["-Y", "dns && udp", "-T", "fields", "-e", "udp.payload"])
        .output()
        .expect("tshark must be installed (scripts/test.sh installs it)");
    assert!(
        out.status.success(),
        "tshark failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter(|l| !l.is_empty())
        .map(|l| {
            (0..l.len())
                .step_by(2)
                .map(|i| u8::from_str_radix(&l[i..i + 2], 16).expect("hex from tshark"))
                .collect()
        })
        .collect()
}

#[test]
fn every_capture_survives_text_and_binary_round_trips() {
    if !prerequisite::tools(&[("tshark", "tshark")]) {
        return;
    }
    let dir = tempfile::tempdir().expect("scratch");
    let Some(captures) = captures() else {
        return;
    };
    for capture in captures {
        let name = capture
            .file_stem()
            .expect("file name")
            .to_string_lossy()
            .to_string();
        let p = |ext: &str| dir.path().join(format!("{name}.{ext}"));
        let s = |p: &PathBuf| p.to_string_lossy().to_string();
        let cap = capture.to_string_lossy().to_string();
        ldplayer(&["convert", &cap, "--to", "text", "-o", &s(&p("txt")), "-q"]);
        ldplayer(&[
            "convert",
            &s(&p("txt")),
            "--to",
            "binary",
            "-o",
            &s(&p("bin")),
            "-q",
        ]);
        let decoded = read_capture(&capture);
        assert!(!decoded.is_empty(), "{name}: no DNS message decoded");
        assert_eq!(
            read_binary(&p("bin")),
            decoded,
            "{name}: pcap → text → binary changed records"
        );

        // Binary → text → binary is identical, byte for byte.
        ldplayer(&[
            "convert",
            &s(&p("bin")),
            "--to",
            "text",
            "-o",
            &s(&p("2.txt")),
            "-q",
        ]);
        ldplayer(&[
            "convert",
            &s(&p("2.txt")),
            "--to",
            "binary",
            "-o",
            &s(&p("2.bin")),
            "-q",
        ]);
        assert_eq!(
            std::fs::read(p("bin")).expect("bin"),
            std::fs::read(p("2.bin")).expect("2.bin"),
            "{name}"
        );
        assert_eq!(
            std::fs::read(p("txt")).expect("txt"),
            std::fs::read(p("2.txt")).expect("2.txt"),
            "{name}"
        );

        // The messages are the captured payloads, as an independent decoder sees them.
        let udp: Vec<&[u8]> = decoded
            .iter()
            .filter(|r| r.proto == ldplayer_trace::Proto::Udp)
            .map(|r| &r.wire[..])
            .collect();
        let witness = tshark_udp_payloads(&capture);
        if !udp.is_empty() || !witness.is_empty() {
            let witness: Vec<&[u8]> = witness.iter().map(|w| &w[..]).collect();
            assert_eq!(
                udp, witness,
                "{name}: UDP messages differ from tshark's udp.payload"
            );
        }

        // Written to pcap and read back, the same messages come out.
        ldplayer(&[
            "convert",
            &s(&p("bin")),
            "--to",
            "pcap",
            "-o",
            &s(&p("out.pcap")),
            "-q",
        ]);
        let again = read_capture(&p("out.pcap"));
        let wires = |v: &[RecordBuf]| {
            v.iter()
                .map(|r| (r.time_ns, r.src, r.dst, r.proto, r.wire.clone()))
                .collect::<Vec<_>>()
        };
        assert_eq!(
            wires(&again),
            wires(&decoded),
            "{name}: pcap → binary → pcap changed messages"
        );
    }
}

#[test]
fn damaged_inputs_are_skipped_or_refused_clearly() {
    let dir = tempfile::tempdir().expect("scratch");
    let Some(captures) = captures() else {
        return;
    };
    let src = captures
        .into_iter()
        .find(|p| p.ends_with("dnscap_dns.pcap"))
        .expect("dnscap_dns.pcap");
    let bytes = std::fs::read(&src).expect("capture");
    // Cut in the middle of a packet: everything before it is kept, the cut is counted.
    let cut = dir.path().join("cut.pcap");
    std::fs::write(&cut, &bytes[..bytes.len() / 2 + 7]).expect("write");
    let out = ldplayer(&["inspect", &cut.to_string_lossy(), "--json"]);
    let summary: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
    let kept =
        summary["queries"].as_u64().unwrap_or(0) + summary["responses"].as_u64().unwrap_or(0);
    assert!(kept > 20 && kept < 82, "kept {kept}");
    assert!(
        summary["skipped"].to_string().contains("file-truncated"),
        "{summary}"
    );

    // Not a trace at all: one line of error and a non-zero exit.
    let junk = dir.path().join("junk.bin");
    std::fs::write(&junk, b"this is not a capture\n").expect("write");
    let out = Command::new(env!("CARGO_BIN_EXE_ldplayer"))
        .args([
            "convert",
            &junk.to_string_lossy(),
            "--to",
            "text",
            "-o",
            "/dev/null",
        ])
        .output()
        .expect("runs");
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains("not a trace"), "{err}");

    // A missing file too.
    let out = Command::new(env!("CARGO_BIN_EXE_ldplayer"))
        .args(["inspect", "/nonexistent/x.pcap"])
        .output()
        .expect("runs");
    assert!(!out.status.success());
    assert_eq!(String::from_utf8_lossy(&out.stderr).lines().count(), 1);
}

#[test]
fn compressed_inputs_read_transparently() {
    let dir = tempfile::tempdir().expect("scratch");
    let Some(captures) = captures() else {
        return;
    };
    let src = captures
        .into_iter()
        .find(|p| p.ends_with("dnscap_dnso1tcp.pcap"))
        .expect("capture");
    let plain = ldplayer(&["inspect", &src.to_string_lossy(), "--json"]).stdout;
    for (ext, tool) in [("gz", "gzip"), ("xz", "xz"), ("zst", "zstd")] {
        let packed = dir.path().join(format!("c.pcap.{ext}"));
        // Compress with ldplayer's own writer path: a text trace written with the suffix.
        let text = dir.path().join(format!("c.txt.{ext}"));
        ldplayer(&[
            "convert",
            &src.to_string_lossy(),
            "--to",
            "text",
            "-o",
            &text.to_string_lossy(),
            "-q",
        ]);
        let got = ldplayer(&["inspect", &text.to_string_lossy(), "--json"]).stdout;
        let a: serde_json::Value = serde_json::from_slice(&plain).expect("json");
        let b: serde_json::Value = serde_json::from_slice(&got).expect("json");
        assert_eq!(a["queries"], b["queries"], "{ext}");
        assert_eq!(a["responses"], b["responses"], "{ext}");
        // And a capture compressed by the real tool (scripts/test.sh installs it).
        {
            let status = Command::new("sh")
                .arg("-c")
                .arg(format!(
                    "{tool} -c '{}' > '{}'",
                    src.display(),
                    packed.display()
                ))
                .status()
                .expect("sh");
            assert!(status.success());
            let got = ldplayer(&["inspect", &packed.to_string_lossy(), "--json"]).stdout;
            let c: serde_json::Value = serde_json::from_slice(&got).expect("json");
            assert_eq!(a["queries"], c["queries"], "{ext} by {tool}");
        }
    }
}
