//! The deployment recipes of deploy/ run here as their orchestrators would run them: the
//! Kubernetes Job's container command and the Slurm batch script, each shard a process with the
//! variables its pod or array task gets, against a real knotd on loopback; their results merge
//! into the whole replay.

mod binary;

use binary::{ldplayer, s};
use ldplayer_testbed::knot;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The PATH with the ldplayer under test first, as an image or a cluster's module would have it.
fn path_with_ldplayer() -> String {
    let bin = Path::new(env!("CARGO_BIN_EXE_ldplayer"))
        .parent()
        .expect("a folder");
    format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    )
}

/// The folded scalar (`- >-`) under the first `args:` of a manifest, as YAML folds it: its lines
/// joined by spaces.
fn container_command(manifest: &str) -> String {
    let mut lines = manifest.lines().skip_while(|l| l.trim() != "args:");
    lines.next().expect("an args: list");
    let start = lines.next().expect("an args item");
    assert_eq!(
        start.trim(),
        "- >-",
        "the command is one folded scalar: {start}"
    );
    let body: Vec<&str> = lines
        .take_while(|l| l.starts_with("              ") && !l.trim().is_empty())
        .map(str::trim)
        .collect();
    assert!(!body.is_empty(), "an empty command");
    body.join(" ")
}

fn trace(dir: &Path) -> PathBuf {
    let trace = dir.join("trace.bin");
    ldplayer(&[
        "synth",
        "--workload",
        "poisson",
        "--rate",
        "1000",
        "-n",
        "3000",
        "--clients",
        "120",
        "--tcp-share",
        "0.3",
        "--zone",
        "example.",
        "--seed",
        "3",
        "-o",
        &s(&trace),
        "-q",
    ]);
    trace
}

/// Waits for every shard; fails with the first one's error output.
fn wait_all(children: Vec<Child>) {
    for child in children {
        let out = child.wait_with_output().expect("shard ends");
        assert!(
            out.status.success(),
            "a shard failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

/// Merges every `shard-*.res` of `dir` and checks the whole trace is there, every shard once.
fn merge_and_check(dir: &Path) {
    let mut files: Vec<String> = std::fs::read_dir(dir)
        .expect("results folder")
        .filter_map(|e| Some(e.ok()?.path()))
        .filter(|p| p.extension().is_some_and(|e| e == "res"))
        .map(|p| s(&p))
        .collect();
    files.sort();
    assert_eq!(files.len(), 3, "{files:?}");
    let merged = dir.join("all.merged");
    let mut args = vec!["results", "merge"];
    args.extend(files.iter().map(String::as_str));
    let merged_s = s(&merged);
    args.extend(["-o", &merged_s, "--json"]);
    let report: serde_json::Value = serde_json::from_slice(&ldplayer(&args).stdout).expect("JSON");
    assert_eq!(report["merged"], 3000, "{report}");
    assert_eq!(report["missing_shards"], serde_json::json!([]), "{report}");
    let mut shards: Vec<String> = report["inputs"]
        .as_array()
        .expect("inputs")
        .iter()
        .map(|i| i["shard"].as_str().unwrap_or("none").to_string())
        .collect();
    shards.sort();
    assert_eq!(shards, ["0/3", "1/3", "2/3"]);
    let summary: serde_json::Value =
        serde_json::from_slice(&ldplayer(&["results", "summary", &merged_s, "--json"]).stdout)
            .expect("JSON");
    assert_eq!(summary["answered"], 3000, "{summary}");
}

#[test]
fn the_kubernetes_indexed_job_command_runs_each_shard() {
    let manifest = std::fs::read_to_string(repo().join("deploy/kubernetes/replay-job.yaml"))
        .expect("the manifest");
    assert!(manifest.contains("completionMode: Indexed"));
    let command = container_command(&manifest);
    assert!(command.contains("--shard auto"), "{command}");
    let server = knot();
    let dir = tempfile::tempdir().expect("scratch");
    let trace = trace(dir.path());
    let results = dir.path().join("results");
    let start = binary::start_in(2.0);
    let children = (0..3)
        .map(|index| {
            Command::new("sh")
                .args(["-c", &command])
                .env("PATH", path_with_ldplayer())
                .env("JOB_COMPLETION_INDEX", index.to_string())
                .env("SHARDS", "3")
                .env("TRACE", &trace)
                .env("SERVER", server.addr.to_string())
                .env("START_AT", &start)
                .env("RESULTS", &results)
                .env_remove("LDPLAYER_SHARD")
                .env_remove("SLURM_ARRAY_TASK_ID")
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .expect("sh starts")
        })
        .collect();
    wait_all(children);
    merge_and_check(&results);
}

#[test]
fn the_slurm_array_script_runs_each_task() {
    let script = repo().join("deploy/slurm/replay.sbatch");
    let server = knot();
    let dir = tempfile::tempdir().expect("scratch");
    let trace = trace(dir.path());
    let results = dir.path().join("results");
    let start = binary::start_in(2.0);
    // `sbatch --array=1-3`: task ids from 1.
    let children = (1..=3)
        .map(|task| {
            Command::new("bash")
                .arg(&script)
                .env("PATH", path_with_ldplayer())
                .env("SLURM_ARRAY_TASK_ID", task.to_string())
                .env("SLURM_ARRAY_TASK_MIN", "1")
                .env("SLURM_ARRAY_TASK_COUNT", "3")
                .env("TRACE", &trace)
                .env("SERVER", server.addr.to_string())
                .env("START_AT", &start)
                .env("RESULTS", &results)
                .env_remove("LDPLAYER_SHARD")
                .env_remove("JOB_COMPLETION_INDEX")
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .expect("bash starts")
        })
        .collect();
    wait_all(children);
    merge_and_check(&results);
}
