//! `convert`, `inspect` and `zones build` read many files as one: a capture cut into files by
//! Wireshark's editcap (TCP streams crossing the cuts) converts, on one core or several, to
//! exactly the bytes of the capture joined again by mergecap; files that overlap are merged in
//! time order as mergecap merges them; gaps and overlaps are reported; a damaged file is named.

mod binary;

use binary::{ldplayer, ldplayer_fails, s};
use ldplayer_testbed::prerequisite;
use std::path::{Path, PathBuf};
use std::process::Command;

fn wireshark_tools() -> bool {
    prerequisite::tools(&[
        ("editcap", "wireshark-common"),
        ("mergecap", "wireshark-common"),
    ])
}

fn run(program: &str, args: &[&str]) {
    let out = Command::new(program)
        .args(args)
        .output()
        .unwrap_or_else(|e| panic!("{program}: {e}"));
    assert!(
        out.status.success(),
        "{program} {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// A synthetic capture of `n` root-like queries, a fifth of the clients over TCP.
fn capture(dir: &Path, name: &str, n: u32, seed: u32) -> PathBuf {
    capture_at(dir, name, n, seed, 2_000)
}

/// [`capture`] at `rate` queries per second.
fn capture_at(dir: &Path, name: &str, n: u32, seed: u32, rate: u32) -> PathBuf {
    let path = dir.join(name);
    ldplayer(&[
        "synth",
        "--workload",
        "root",
        "--rate",
        &rate.to_string(),
        "-n",
        &n.to_string(),
        "--tcp-share",
        "0.2",
        "--seed",
        &seed.to_string(),
        "-o",
        &s(&path),
        "-q",
    ]);
    path
}

/// `whole` cut by editcap into files of `each` packets (nanosecond pcap, as `whole`), sorted.
fn cut(whole: &Path, each: usize, dir: &Path) -> Vec<PathBuf> {
    std::fs::create_dir_all(dir).expect("mkdir");
    run(
        "editcap",
        &[
            "-F",
            "nsecpcap",
            "-c",
            &each.to_string(),
            &s(whole),
            &s(&dir.join("part.pcap")),
        ],
    );
    ldplayer_testbed::files_with_extension(dir, "pcap")
}

fn convert_json(args: &[String]) -> serde_json::Value {
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    serde_json::from_slice(&ldplayer(&args).stdout).expect("JSON")
}

#[test]
fn files_cut_by_editcap_convert_to_the_bytes_of_the_capture_joined_by_mergecap() {
    if !wireshark_tools() {
        return;
    }
    let dir = tempfile::tempdir().expect("scratch");
    let whole = capture(dir.path(), "whole.pcap", 30_000, 5);
    let parts = cut(&whole, 1_700, &dir.path().join("parts"));
    assert!(parts.len() >= 15, "{}", parts.len());
    let joined = dir.path().join("joined.pcap");
    let mut args = vec!["-a", "-F", "nsecpcap", "-w"];
    let joined_s = s(&joined);
    args.push(&joined_s);
    let part_names: Vec<String> = parts.iter().map(|p| s(p)).collect();
    args.extend(part_names.iter().map(String::as_str));
    run("mergecap", &args);
    let one = dir.path().join("one.bin");
    ldplayer(&["convert", &joined_s, "-o", &s(&one), "-q"]);
    let expected = std::fs::read(&one).expect("one.bin");
    // Given in reverse: read in time order all the same.
    let mut reversed = part_names.clone();
    reversed.reverse();
    for jobs in ["1", "2", "4"] {
        let out = dir.path().join(format!("jobs{jobs}.bin"));
        let mut args: Vec<String> = vec!["convert".into()];
        args.extend(reversed.iter().cloned());
        args.extend(["--jobs", jobs, "-o", &s(&out), "--json"].map(String::from));
        let report = convert_json(&args);
        assert_eq!(report["messages"], 30_000, "{report}");
        assert_eq!(report["input_format"], "capture", "{report}");
        let files = report["inputs"]["files"].as_array().expect("files");
        assert_eq!(files.len(), parts.len(), "{report}");
        assert_eq!(files[0]["file"], part_names[0], "{report}");
        assert_eq!(report["inputs"]["seams"], serde_json::json!([]), "{report}");
        let got = std::fs::read(&out).expect("output");
        assert!(
            got == expected,
            "--jobs {jobs}: {} bytes against {} of the joined capture",
            got.len(),
            expected.len()
        );
    }
    // inspect reads them as one too.
    let inspect = |args: &[&str]| -> serde_json::Value {
        serde_json::from_slice(&ldplayer(args).stdout).expect("JSON")
    };
    let mut args = vec!["inspect", "--json", "--jobs", "2"];
    args.extend(part_names.iter().map(String::as_str));
    let many = inspect(&args);
    let one = inspect(&["inspect", "--json", &joined_s]);
    for key in [
        "messages",
        "queries",
        "unique_clients",
        "connections",
        "duration_s",
    ] {
        assert_eq!(many[key], one[key], "{key}: {many} against {one}");
    }
    assert_eq!(
        many["inputs"]["files"].as_array().map(Vec::len),
        Some(parts.len())
    );
}

#[test]
fn overlapping_files_merge_as_mergecap_merges_them_and_gaps_are_told() {
    if !wireshark_tools() {
        return;
    }
    let dir = tempfile::tempdir().expect("scratch");
    // Two capture points of the same seconds. Both synthetic captures start at the same
    // instant: b is moved by 123 ns (editcap -t), for mergecap gives packets of the same
    // instant to the later file and ldplayer to the earlier one (rotated files keep their
    // order where one ends and the next begins within an instant).
    let a = capture(dir.path(), "a.pcap", 4_000, 1);
    let b0 = capture(dir.path(), "b0.pcap", 3_000, 2);
    let b = dir.path().join("b.pcap");
    run(
        "editcap",
        &["-F", "nsecpcap", "-t", "0.000000123", &s(&b0), &s(&b)],
    );
    let merged = dir.path().join("merged.pcap");
    run(
        "mergecap",
        &["-F", "nsecpcap", "-w", &s(&merged), &s(&a), &s(&b)],
    );
    let expected = dir.path().join("expected.bin");
    ldplayer(&["convert", &s(&merged), "-o", &s(&expected), "-q"]);
    let out = dir.path().join("out.bin");
    let converted = ldplayer(&["convert", &s(&a), &s(&b), "-o", &s(&out), "--jobs", "2"]);
    let stderr = String::from_utf8_lossy(&converted.stderr);
    assert!(
        stderr.contains("a.pcap")
            && stderr.contains("b.pcap")
            && stderr.contains("overlap by")
            && stderr.contains("merged in time order"),
        "{stderr}"
    );
    assert!(
        std::fs::read(&out).expect("out") == std::fs::read(&expected).expect("expected"),
        "the overlapping files are not merged as mergecap merges them"
    );

    // Pieces of one capture without the second one: a gap, said with its length.
    let whole = capture_at(dir.path(), "whole.pcap", 3_000, 3, 500);
    let parts = cut(&whole, 1_000, &dir.path().join("parts"));
    assert!(parts.len() >= 3, "{parts:?}");
    let report = convert_json(&[
        "convert".into(),
        s(&parts[0]),
        s(&parts[2]),
        "-o".into(),
        s(&dir.path().join("gap.bin")),
        "--json".into(),
    ]);
    let seams = report["inputs"]["seams"].as_array().expect("seams");
    assert_eq!(seams.len(), 1, "{report}");
    assert_eq!(seams[0]["kind"], "gap", "{report}");
    let seconds = seams[0]["seconds"].as_f64().expect("seconds");
    assert!((1.0..3.0).contains(&seconds), "{report}");
    let text = ldplayer(&["inspect", &s(&parts[0]), &s(&parts[2])]);
    let stderr = String::from_utf8_lossy(&text.stderr);
    assert!(
        stderr.contains(&format!("a gap of {seconds:.3} s between")),
        "{stderr}"
    );
}

#[test]
fn a_damaged_file_is_named_and_the_others_are_converted() {
    if !wireshark_tools() {
        return;
    }
    let dir = tempfile::tempdir().expect("scratch");
    let whole = capture(dir.path(), "whole.pcap", 6_000, 4);
    let parts = cut(&whole, 2_000, &dir.path().join("parts"));
    // The middle file ends in garbage a pcap reader cannot skip.
    let mut bytes = std::fs::read(&parts[1]).expect("read");
    bytes.truncate(bytes.len() / 2);
    bytes.extend_from_slice(&[0xff; 64]);
    std::fs::write(&parts[1], &bytes).expect("write");
    let out = dir.path().join("out.bin");
    let mut args = vec!["convert".to_string()];
    args.extend(parts.iter().map(|p| s(p)));
    args.extend(["-o".into(), s(&out)]);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let failed = ldplayer_fails(&args);
    let stderr = String::from_utf8_lossy(&failed.stderr);
    assert!(stderr.contains(&s(&parts[1])), "{stderr}");
    // What was read is kept: the first and last files whole.
    let report: serde_json::Value =
        serde_json::from_slice(&ldplayer(&["inspect", &s(&out), "--json"]).stdout).expect("JSON");
    let messages = report["messages"].as_u64().expect("messages");
    assert!((3_000..6_000).contains(&messages), "{report}");
}

#[test]
fn zones_build_reads_captures_cut_at_every_packet_as_the_whole() {
    if !wireshark_tools() {
        return;
    }
    let Some(capture) = prerequisite::shared_file("pcap/dnscap_edns.pcap") else {
        return;
    };
    let Some(response) = prerequisite::shared_file("pcap/rfcdnscomp_response.pcap") else {
        return;
    };
    let dir = tempfile::tempdir().expect("scratch");
    let parts = dir.path().join("parts");
    std::fs::create_dir(&parts).expect("mkdir");
    run(
        "editcap",
        &[
            "-F",
            "pcap",
            "-c",
            "1",
            &s(&capture),
            &s(&parts.join("p.pcap")),
        ],
    );
    let pieces = ldplayer_testbed::files_with_extension(&parts, "pcap");
    assert!(pieces.len() > 10, "{}", pieces.len());
    let build = |inputs: Vec<String>, out: &Path| -> serde_json::Value {
        let mut args = vec!["zones".to_string(), "build".into()];
        args.extend(inputs);
        args.extend(["-o".into(), s(out), "--json".into()]);
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        serde_json::from_slice(&ldplayer(&args).stdout).expect("JSON")
    };
    let whole = build(vec![s(&response), s(&capture)], &dir.path().join("whole"));
    let mut inputs = vec![s(&response)];
    inputs.extend(pieces.iter().map(|p| s(p)));
    let cut = build(inputs, &dir.path().join("cut"));
    assert_eq!(whole["responses_used"], cut["responses_used"], "{cut}");
    // The zones as written (the root's file and one bundle per level): the same files, byte
    // for byte, cz. and net. among them.
    let zones = |out: &str| -> Vec<(String, Vec<u8>)> {
        let mut files: Vec<_> = std::fs::read_dir(dir.path().join(out))
            .expect("output folder")
            .map(|e| e.expect("entry").path())
            .filter(|p| p.extension().is_some_and(|e| e == "zone" || e == "zones"))
            .map(|p| {
                let name = p.file_name().expect("name").to_string_lossy().into_owned();
                (name, std::fs::read(&p).expect("zone"))
            })
            .collect();
        files.sort();
        files
    };
    let (whole_zones, cut_zones) = (zones("whole"), zones("cut"));
    let names: Vec<&str> = whole_zones.iter().map(|(n, _)| n.as_str()).collect();
    assert!(names.contains(&"root.zone"), "{names:?}");
    let text: String = whole_zones
        .iter()
        .map(|(_, b)| String::from_utf8_lossy(b).into_owned())
        .collect();
    assert!(
        text.contains("$ORIGIN cz.") && text.contains("$ORIGIN net."),
        "{names:?}"
    );
    assert!(whole_zones == cut_zones, "the zones differ: {names:?}");
}
