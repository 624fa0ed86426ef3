//! Runs the examples of docs/*.md: every ```sh block, in order, in one scratch directory per
//! document, with `ldplayer` on PATH, `$DATA` pointing at the shared test data and `$EXAMPLES` at
//! the shipped experiment plans. A block fails the test when it exits non-zero; blocks check
//! their own results (grep, test, ...).

use ldplayer_testbed::prerequisite;
use std::path::{Path, PathBuf};
use std::process::Command;

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn sh_blocks(markdown: &str) -> Vec<String> {
    let mut blocks = Vec::new();
    let mut current: Option<String> = None;
    for line in markdown.lines() {
        match (&mut current, line.trim_start()) {
            (None, "```sh") => current = Some(String::new()),
            (Some(_), "```") => blocks.extend(current.take()),
            (Some(block), _) => {
                block.push_str(line);
                block.push('\n');
            }
            _ => {}
        }
    }
    blocks
}

fn run_document(name: &str) {
    let doc = workspace().join("docs").join(name);
    let text = std::fs::read_to_string(&doc).unwrap_or_else(|e| panic!("{}: {e}", doc.display()));
    let blocks = sh_blocks(&text);
    assert!(!blocks.is_empty(), "{name} has no ```sh examples");
    let dir = tempfile::tempdir().expect("scratch directory");
    let bin_dir = Path::new(env!("CARGO_BIN_EXE_ldplayer"))
        .parent()
        .expect("binary directory")
        .to_path_buf();
    let path = format!(
        "{}:{}",
        bin_dir.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let Some(data) = prerequisite::shared_data(env!("CARGO_MANIFEST_DIR"), ".") else {
        return;
    };
    for (i, block) in blocks.iter().enumerate() {
        assert_reads_whole_pipes(name, i + 1, block);
        let out = Command::new("bash")
            .arg("-euo")
            .arg("pipefail")
            .arg("-c")
            .arg(block)
            .current_dir(dir.path())
            .env("PATH", &path)
            .env("DATA", &data)
            .env("EXAMPLES", workspace().join("examples/experiments"))
            .output()
            .expect("bash runs");
        assert!(
            out.status.success(),
            "{name}, example {} failed ({}):\n{block}\n--- stdout\n{}\n--- stderr\n{}",
            i + 1,
            out.status,
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

/// Under `pipefail`, a reader that stops early (`grep -q`, `head`) makes the writer before it die
/// of SIGPIPE whenever it writes after the reader left: a race that fails an example now and
/// then. Examples pipe into readers that read everything (`grep PATTERN >/dev/null`,
/// `sed -n 1,3p`).
fn assert_reads_whole_pipes(name: &str, number: usize, block: &str) {
    for line in block.lines() {
        let early = line
            .split('|')
            .skip(1)
            .map(str::trim_start)
            .any(|reader| reader.starts_with("head") || reader.starts_with("grep -q"));
        assert!(
            !early,
            "{name}, example {number}: `{line}` pipes into a reader that may stop early; \
             under pipefail the writer can die of SIGPIPE (use `grep PATTERN >/dev/null`)"
        );
    }
}

#[test]
fn cli_examples_run() {
    run_document("cli.md");
}

#[test]
fn format_examples_run() {
    run_document("formats.md");
}

#[test]
fn experiment_examples_run() {
    // The examples run plans: network namespaces and root.
    if !prerequisite::netns() {
        return;
    }
    run_document("experiments.md");
}
