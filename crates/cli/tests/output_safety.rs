//! An output is never one of the command's inputs, and a failed run never leaves a wrong or
//! half-written file: every command that writes refuses an output that is the same file as an
//! input (by name, hard link or symbolic link) before touching it, and writes under a
//! temporary name renamed into place when done.

mod binary;

use binary::{ldplayer, ldplayer_fails, ldplayer_unanswered, s};
use ldplayer_testbed::prerequisite::shared_file;
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::Command;

/// Runs a refused command and checks the refusal: non-zero exit, an error naming both files,
/// the file unchanged and nothing left beside it.
fn assert_refused(args: &[&str], file: &Path, input_name: &str) {
    let before = std::fs::read(file).expect("the file exists");
    let listing = entries(file.parent().expect("directory"));
    let out = ldplayer_fails(args);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("refusing to write") && err.contains(input_name),
        "{args:?}: {err}"
    );
    assert_eq!(
        std::fs::read(file).expect("still there"),
        before,
        "{args:?} changed {}",
        file.display()
    );
    assert_eq!(
        entries(file.parent().expect("directory")),
        listing,
        "{args:?}"
    );
}

fn entries(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .expect("list")
        .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
        .collect();
    v.sort();
    v
}

fn synth(path: &Path, n: &str) {
    ldplayer(&[
        "synth",
        "--workload",
        "fixed",
        "-n",
        n,
        "--seed",
        "3",
        "-o",
        &s(path),
        "-q",
    ]);
}

#[test]
fn convert_refuses_its_input_as_output_in_every_format_and_by_hard_or_symbolic_link() {
    let dir = tempfile::tempdir().expect("scratch");
    let text = dir.path().join("b.txt");
    synth(&text, "3000");
    let hard = dir.path().join("hard.txt");
    std::fs::hard_link(&text, &hard).expect("hard link");
    let soft = dir.path().join("soft.txt");
    std::os::unix::fs::symlink(&text, &soft).expect("symlink");
    for to in ["text", "pcap", "binary"] {
        for output in [&text, &hard, &soft] {
            assert_refused(
                &["convert", &s(&text), "--to", to, "-o", &s(output)],
                &text,
                "b.txt",
            );
            assert_refused(
                &["convert", &s(output), "--to", to, "-o", &s(&text)],
                &text,
                &s(output),
            );
        }
    }
    // Another spelling of the same path.
    let dotted = dir.path().join(".").join("b.txt");
    assert_refused(&["convert", &s(&text), "-o", &s(&dotted)], &text, "b.txt");
    // The data is all there still: 3000 records.
    let out = ldplayer(&["inspect", &s(&hard), "--json"]);
    let summary: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
    assert_eq!(summary["messages"], 3000);
}

#[test]
fn mutate_refuses_its_input_as_output() {
    let dir = tempfile::tempdir().expect("scratch");
    let bin = dir.path().join("t.bin");
    synth(&bin, "500");
    let hard = dir.path().join("again.bin");
    std::fs::hard_link(&bin, &hard).expect("hard link");
    assert_refused(
        &["mutate", &s(&bin), "-o", &s(&hard), "--proto", "tcp"],
        &bin,
        "t.bin",
    );
    assert_refused(
        &["mutate", &s(&bin), "-o", &s(&bin), "--set-do"],
        &bin,
        "t.bin",
    );
}

#[test]
fn zones_commands_refuse_to_write_over_their_inputs() {
    let Some(root) = shared_file("zones/root-2018-03-12.zone") else {
        return;
    };
    let Some(scenario) = shared_file("hierarchy/deckard_iter_minim_a.rpl") else {
        return;
    };
    let dir = tempfile::tempdir().expect("scratch");
    // A --zone file inside the output directory, under the name the build would give it.
    let hier = dir.path().join("hier");
    std::fs::create_dir(&hier).expect("mkdir");
    let zone = hier.join("root.zone");
    std::fs::copy(&root, &zone).expect("copy");
    assert_refused(
        &["zones", "build", "--zone", &s(&zone), "-o", &s(&hier)],
        &zone,
        "root.zone",
    );
    // A scenario as the output of its own queries.
    let copy = dir.path().join("s.rpl");
    std::fs::copy(&scenario, &copy).expect("copy");
    assert_refused(
        &["zones", "deckard-queries", &s(&copy), "-o", &s(&copy)],
        &copy,
        "s.rpl",
    );
}

#[test]
fn results_export_and_replay_refuse_to_write_over_their_inputs() {
    let dir = tempfile::tempdir().expect("scratch");
    let trace = dir.path().join("t.bin");
    synth(&trace, "200");
    // The refusal comes before anything is sent: the server address is never used.
    assert_refused(
        &[
            "replay",
            &s(&trace),
            "--server",
            "127.0.0.1:9",
            "--results",
            &s(&trace),
        ],
        &trace,
        "t.bin",
    );
    // A real results file, from a replay against a socket that never answers.
    let silent = std::net::UdpSocket::bind("127.0.0.1:0").expect("bind");
    let results = dir.path().join("r.res");
    let small = dir.path().join("small.bin");
    synth(&small, "5");
    ldplayer_unanswered(&[
        "replay",
        &s(&small),
        "--server",
        &silent.local_addr().expect("addr").to_string(),
        "--timeout",
        "0.2",
        "--results",
        &s(&results),
        "-q",
    ]);
    let link = dir.path().join("r-link.res");
    std::os::unix::fs::symlink(&results, &link).expect("symlink");
    for output in [&results, &link] {
        assert_refused(
            &["results", "export", &s(&results), "--csv", "-o", &s(output)],
            &results,
            "r.res",
        );
    }
    let csv = dir.path().join("r.csv");
    ldplayer(&["results", "export", &s(&results), "--csv", "-o", &s(&csv)]);
    assert_eq!(
        std::fs::read_to_string(&csv).expect("csv").lines().count(),
        6
    );
}

/// A write error (here: the file size limit, RLIMIT_FSIZE, so writes fail with EFBIG) removes
/// the temporary file and leaves the old output as it was.
#[test]
fn a_write_error_leaves_the_old_output_and_no_temporary_file() {
    let dir = tempfile::tempdir().expect("scratch");
    let input = dir.path().join("in.bin");
    synth(&input, "20000");
    let output = dir.path().join("out.txt");
    std::fs::write(&output, "the previous output\n").expect("write");
    let listing = entries(dir.path());
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_ldplayer"));
    cmd.args(["convert", &s(&input), "-o", &s(&output)]);
    // SAFETY: setrlimit and signal are async-signal-safe; nothing else runs in the child.
    unsafe {
        cmd.pre_exec(|| {
            let limit = libc::rlimit {
                rlim_cur: 64 * 1024,
                rlim_max: 64 * 1024,
            };
            libc::signal(libc::SIGXFSZ, libc::SIG_IGN);
            if libc::setrlimit(libc::RLIMIT_FSIZE, &limit) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    let out = cmd.output().expect("ldplayer runs");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{err}");
    assert!(err.contains("left as it was"), "{err}");
    assert_eq!(
        std::fs::read_to_string(&output).expect("read"),
        "the previous output\n"
    );
    assert_eq!(entries(dir.path()), listing, "{err}");
}

/// A read error half way (a binary trace damaged after 1000 records) keeps what was written
/// before it, in place, and says so.
#[test]
fn a_read_error_keeps_what_was_written_and_says_so() {
    let dir = tempfile::tempdir().expect("scratch");
    let input = dir.path().join("in.bin");
    synth(&input, "2000");
    let mut bytes = std::fs::read(&input).expect("read");
    // Skip the file header (its length is the u16 at byte 10), walk the records (each starts
    // with its length, a little-endian u32) to the 1001st and give it an impossible length.
    let header = u16::from_le_bytes(bytes[10..12].try_into().expect("2 bytes")) as usize;
    let mut at = header;
    for _ in 0..1000 {
        at += u32::from_le_bytes(bytes[at..at + 4].try_into().expect("4 bytes")) as usize;
    }
    bytes[at..at + 4].copy_from_slice(&3u32.to_le_bytes());
    std::fs::write(&input, &bytes).expect("write");
    let output = dir.path().join("out.txt");
    let out = ldplayer_fails(&["convert", &s(&input), "-o", &s(&output)]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("the 1000 records written before it are kept in"),
        "{err}"
    );
    let text = std::fs::read_to_string(&output).expect("the output is in place");
    // The format tag and the column line, then the records.
    assert_eq!(text.lines().count(), 2 + 1000);
    assert_eq!(entries(dir.path()), ["in.bin", "out.txt"]);
}

/// The lab checks its outputs on the host, before any namespace is made.
#[test]
fn lab_refuses_to_write_its_answers_or_results_over_its_inputs() {
    let dir = tempfile::tempdir().expect("scratch");
    let names = dir.path().join("names");
    std::fs::write(&names, "example.com\n").expect("write");
    let manifest = dir.path().join("manifest");
    std::fs::write(&manifest, "#ldplayer-manifest/1\n127.0.0.1 root.zone\n").expect("write");
    let (n, m) = (s(&names), s(&manifest));
    assert_refused(
        &["lab", "--manifest", &m, "--names", &n, "--answers", &n],
        &names,
        "names",
    );
    assert_refused(
        &["lab", "--manifest", &m, "--names", &n, "--answers", &m],
        &manifest,
        "manifest",
    );
    let trace = dir.path().join("t.bin");
    synth(&trace, "10");
    assert_refused(
        &[
            "lab",
            "--manifest",
            &m,
            "--trace",
            &s(&trace),
            "--results",
            &s(&trace),
        ],
        &trace,
        "t.bin",
    );
}
