//! What the experiment tests share: the shipped examples run at a tiny scale from a copy of
//! `examples/`, and the summaries, run folders and engine counters they leave.

#![allow(dead_code)] // each test binary uses its own share of these

use crate::binary::{ldplayer, s};
use ldplayer_testbed::prerequisite;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

/// Runs share two cores: one experiment at a time.
pub static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

pub fn example(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../examples/experiments")
        .join(name)
}

/// The rows of a summary.csv, keyed by (run, metric), each a map of column to value.
pub fn summary(dir: &Path) -> BTreeMap<(String, String), BTreeMap<String, String>> {
    let text = std::fs::read_to_string(dir.join("summary.csv")).expect("summary.csv");
    let mut lines = text.lines();
    let header: Vec<&str> = lines.next().expect("header").split(',').collect();
    lines
        .map(|l| {
            let row: BTreeMap<String, String> = header
                .iter()
                .zip(l.split(','))
                .map(|(h, v)| (h.to_string(), v.to_string()))
                .collect();
            ((row["run"].clone(), row["metric"].clone()), row)
        })
        .collect()
}

pub fn value(
    rows: &BTreeMap<(String, String), BTreeMap<String, String>>,
    run_prefix: &str,
    metric: &str,
    column: &str,
) -> f64 {
    let (_, row) = rows
        .iter()
        .find(|((run, m), _)| run.starts_with(run_prefix) && m == metric)
        .unwrap_or_else(|| panic!("no {metric} row for run {run_prefix}: {rows:#?}"));
    row[column]
        .parse()
        .unwrap_or_else(|_| panic!("{metric} {column} = {:?}", row[column]))
}

/// Runs the shipped example `name` into `dir/out` with `--set` changes (a tiny scale), quietly;
/// returns the output folder.
pub fn run_example(name: &str, dir: &Path, sets: &[&str]) -> PathBuf {
    run_example_with(name, dir, sets, &[])
}

/// [`run_example`] with more flags (`--capture`). The plan runs from a copy in a tree of its
/// own with nothing beside it, as in a fresh clone without `../shared`: a shipped plan must
/// not need anything outside the repository.
pub fn run_example_with(name: &str, dir: &Path, sets: &[&str], flags: &[&str]) -> PathBuf {
    let clone = dir.join("clone/examples");
    let examples = example(name);
    let examples = examples.parent().and_then(Path::parent).expect("examples/");
    copy_tree(examples, &clone);
    let plan = clone.join("experiments").join(name);
    let out_dir = dir.join("out");
    let mut args = vec![
        "experiment".to_string(),
        s(&plan),
        "-o".into(),
        s(&out_dir),
        "-q".into(),
    ];
    args.extend(flags.iter().map(|f| f.to_string()));
    for set in sets {
        args.push("--set".into());
        args.push(set.to_string());
    }
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    ldplayer(&args);
    out_dir
}

/// Copies the folder `from` into `to`, recursively.
pub fn copy_tree(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).expect("mkdir");
    for entry in std::fs::read_dir(from).expect("list") {
        let path = entry.expect("entry").path();
        let dest = to.join(path.file_name().expect("name"));
        if path.is_dir() {
            copy_tree(&path, &dest);
        } else {
            std::fs::copy(&path, &dest).expect("copy");
        }
    }
}

/// Whether runs can be made here (root and network namespaces); false only when skipping is
/// allowed.
pub fn can_run(tools: &[(&str, &str)]) -> bool {
    prerequisite::netns() && prerequisite::tools(tools)
}

/// Every shipped plan names only files of `examples/` (no absolute path, nothing above it):
/// a fresh clone runs each of them (the tests below run each at a tiny scale, from a copy of
/// The run folder of the run whose name contains `part`.
pub fn run_dir_with(out_dir: &Path, part: &str) -> PathBuf {
    std::fs::read_dir(out_dir.join("runs"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|r| r.to_string_lossy().contains(part))
        .unwrap_or_else(|| panic!("no run with {part} in {}", out_dir.display()))
}

/// The engine's counters of a run (`replay.json`).
pub fn engine(run: &Path) -> serde_json::Value {
    let text = std::fs::read_to_string(run.join("replay.json")).expect("replay.json");
    let report: serde_json::Value = serde_json::from_str(&text).expect("replay.json is JSON");
    report["engine"].clone()
}
pub fn processes() -> Vec<u32> {
    std::fs::read_dir("/proc")
        .unwrap()
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse().ok())
        .collect()
}

/// The run folders of an experiment, by run id.
pub fn run_dirs(out_dir: &Path) -> BTreeMap<String, PathBuf> {
    std::fs::read_dir(out_dir.join("runs"))
        .unwrap()
        .map(|e| {
            let p = e.unwrap().path();
            (p.file_name().unwrap().to_string_lossy().to_string(), p)
        })
        .collect()
}
