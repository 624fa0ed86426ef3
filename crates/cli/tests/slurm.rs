//! The Slurm recipes of deploy/slurm under a real Slurm: a one-node cluster (munged, slurmctld
//! and slurmd from Debian, in a scratch directory with its own configuration, ports and munge
//! key; see `ldplayer_testbed::slurm`) runs `sbatch --array=0-2 deploy/slurm/replay.sbatch`
//! against knotd on loopback, then the merge as a job with `--dependency=afterany:`, and the
//! merged results must hold every query of the trace. A task that Slurm starts after the shared
//! start keeps its place in the schedule (no burst of its backlog) and the merge names it; the
//! one-job recipe (`replay-tasks.sbatch`, N tasks started together by srun) merges by itself.

mod binary;

use binary::{ldplayer, s};
use ldplayer_testbed::{knot, slurm::Cluster};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// CPUs the test node offers: three tasks of the recipe's 2 CPUs each fit at once (they wait on
/// the network, not the CPU, at these rates).
const NODE_CPUS: u32 = 6;

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The PATH with the ldplayer under test first, as a cluster's module would have it.
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

/// A trace of `n` queries from 120 clients (a third over TCP) at `rate` per second.
fn trace(dir: &Path, n: u32, rate: u32) -> PathBuf {
    let trace = dir.join("trace.bin");
    ldplayer(&[
        "synth",
        "--workload",
        "poisson",
        "--rate",
        &rate.to_string(),
        "-n",
        &n.to_string(),
        "--clients",
        "120",
        "--tcp-share",
        "0.3",
        "--zone",
        "example.",
        "--seed",
        "7",
        "-o",
        &s(&trace),
        "-q",
    ]);
    trace
}

fn unix_now() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .expect("after 1970")
        .as_secs_f64()
}

/// `cluster`'s `program` with the replay's variables: the ldplayer under test on PATH, the
/// trace, the server, the results folder and, if given, the shared start.
fn job_command(
    cluster: &Cluster,
    program: &str,
    trace: &Path,
    server: &str,
    results: &Path,
    start_at: Option<&str>,
) -> Command {
    let mut c = cluster.slurm(program);
    c.env("PATH", path_with_ldplayer())
        .env("TRACE", trace)
        .env("SERVER", server)
        .env("RESULTS", results)
        .env_remove("START_AT")
        .env_remove("LDPLAYER_SHARD")
        .env_remove("JOB_COMPLETION_INDEX");
    if let Some(t) = start_at {
        c.env("START_AT", t);
    }
    c
}

/// The job id `sbatch --parsable` printed.
fn job_id(cluster: &Cluster, out: &std::process::Output) -> String {
    assert!(
        out.status.success(),
        "sbatch failed: {}\n{}",
        String::from_utf8_lossy(&out.stderr),
        cluster.logs()
    );
    let text = String::from_utf8_lossy(&out.stdout);
    let id = text.trim().split(';').next().unwrap_or("").to_string();
    assert!(
        !id.is_empty() && id.bytes().all(|b| b.is_ascii_digit()),
        "sbatch printed {text:?}"
    );
    id
}

/// Runs the merge as a job once the array `array` has ended (`--dependency=afterany:`), waits
/// for it, and returns its JSON report and its standard error.
fn merge_job(cluster: &Cluster, array: &str, results: &Path) -> (Value, String) {
    let report = results.join("merge.json");
    let errors = results.join("merge.err");
    let wrap = format!(
        "ldplayer results merge {dir}/shard-*.res -o {dir}/all.res --json",
        dir = results.display()
    );
    let mut sbatch = cluster.slurm("sbatch");
    sbatch
        .env("PATH", path_with_ldplayer())
        .args(["--parsable", "--wait", "--time=5"])
        .arg(format!("--dependency=afterany:{array}"))
        .arg(format!("--output={}", report.display()))
        .arg(format!("--error={}", errors.display()))
        .args(["--wrap", &wrap]);
    let out = cluster.run(&mut sbatch, Duration::from_secs(180));
    let errors = std::fs::read_to_string(&errors).unwrap_or_default();
    assert!(
        out.status.success(),
        "the merge job failed: {}\n{errors}\n{}",
        String::from_utf8_lossy(&out.stderr),
        cluster.logs()
    );
    let text = std::fs::read_to_string(&report).expect("the merge job's report");
    let json = serde_json::from_str(text.trim())
        .unwrap_or_else(|e| panic!("the merge's JSON: {e}: {text}\n{errors}"));
    (json, errors)
}

/// Every task of job `id` ended COMPLETED with exit code 0.
fn assert_completed(cluster: &Cluster, id: &str, tasks: usize) {
    let jobs = cluster.jobs(id);
    assert_eq!(jobs.len(), tasks, "{jobs:#?}");
    for job in &jobs {
        assert!(
            job.contains("JobState=COMPLETED") && job.contains("ExitCode=0:0"),
            "a task did not complete: {job}\n{}",
            cluster.logs()
        );
    }
}

/// The merged results hold every query of the trace once, in trace order: indexes 0..n.
fn assert_every_query(results: &Path, n: u64) {
    let merged = results.join("all.res");
    let out = ldplayer(&["results", "export", &s(&merged), "--csv"]);
    let text = String::from_utf8_lossy(&out.stdout);
    let mut lines = text.lines();
    let header: Vec<&str> = lines.next().expect("a header").split(',').collect();
    let column = header.iter().position(|c| *c == "index").expect("index");
    let mut indexes: Vec<u64> = lines
        .map(|l| {
            l.split(',')
                .nth(column)
                .expect("a field")
                .parse()
                .expect("an index")
        })
        .collect();
    indexes.sort_unstable();
    assert_eq!(indexes, (0..n).collect::<Vec<_>>(), "not every query once");
}

/// The input of the merge report that is shard `shard` (`1/3`).
fn input<'a>(report: &'a Value, shard: &str) -> &'a Value {
    report["inputs"]
        .as_array()
        .expect("inputs")
        .iter()
        .find(|i| i["shard"] == shard)
        .unwrap_or_else(|| panic!("no shard {shard} in {report}"))
}

#[test]
fn an_array_of_shards_runs_together_and_merges_as_a_job() {
    let Some(cluster) = Cluster::start(NODE_CPUS) else {
        return;
    };
    println!("{}", cluster.versions);
    let server = knot();
    let dir = tempfile::tempdir().expect("scratch");
    let trace = trace(dir.path(), 3000, 600);
    let results = dir.path().join("results");
    // The scheduler starts the tasks within a few seconds of their submission.
    let start = format!("{:.3}", unix_now() + 12.0);
    let mut sbatch = job_command(
        &cluster,
        "sbatch",
        &trace,
        &server.addr.to_string(),
        &results,
        Some(&start),
    );
    sbatch
        .args(["--parsable", "--array=0-2"])
        .arg(repo().join("deploy/slurm/replay.sbatch"));
    let array = job_id(&cluster, &cluster.run(&mut sbatch, Duration::from_secs(30)));
    let (report, errors) = merge_job(&cluster, &array, &results);
    assert_completed(&cluster, &array, 3);
    assert_eq!(report["merged"], 3000, "{report}\n{errors}");
    assert_eq!(report["missing_shards"], serde_json::json!([]), "{report}");
    for shard in ["0/3", "1/3", "2/3"] {
        let i = input(&report, shard);
        // Every task began before the shared start: they ran together.
        assert_eq!(i["late_start"], 0, "{shard} began late: {report}\n{errors}");
        assert_eq!(i["complete"], true, "{report}");
    }
    println!("merge: {report}\n{errors}");
    assert_every_query(&results, 3000);
    let summary: Value = serde_json::from_slice(
        &ldplayer(&["results", "summary", &s(&results.join("all.res")), "--json"]).stdout,
    )
    .expect("JSON");
    assert_eq!(summary["answered"], 3000, "{summary}");
}

#[test]
fn a_task_slurm_starts_late_keeps_its_place_and_the_merge_names_it() {
    let Some(cluster) = Cluster::start(NODE_CPUS) else {
        return;
    };
    println!("{}", cluster.versions);
    let server = knot();
    let dir = tempfile::tempdir().expect("scratch");
    // 10 s of trace: a task that begins a few seconds late still has most of it to send.
    let trace = trace(dir.path(), 3000, 300);
    let results = dir.path().join("results");
    let start_unix = unix_now() + 10.0;
    let start = format!("{start_unix:.3}");
    // Held at submission; tasks 0 and 1 released at once, task 2 only after the shared start,
    // as a task the scheduler could not place in time.
    let mut sbatch = job_command(
        &cluster,
        "sbatch",
        &trace,
        &server.addr.to_string(),
        &results,
        Some(&start),
    );
    sbatch
        .args(["--parsable", "--hold", "--array=0-2"])
        .arg(repo().join("deploy/slurm/replay.sbatch"));
    let array = job_id(&cluster, &cluster.run(&mut sbatch, Duration::from_secs(30)));
    let release = |tasks: &str| {
        let out = cluster.run(
            cluster
                .slurm("scontrol")
                .args(["release", &format!("{array}_{tasks}")]),
            Duration::from_secs(30),
        );
        assert!(out.status.success(), "{out:?}");
    };
    release("[0-1]");
    std::thread::sleep(Duration::from_secs_f64(
        (start_unix + 1.0 - unix_now()).max(0.0),
    ));
    release("2");
    let (report, errors) = merge_job(&cluster, &array, &results);
    assert_completed(&cluster, &array, 3);
    println!("merge: {report}\n{errors}");
    // Every query of the trace is in the merged results, those never sent included.
    assert_eq!(report["merged"], 3000, "{report}\n{errors}");
    assert_every_query(&results, 3000);
    let late = input(&report, "2/3");
    let skipped = late["late_start"].as_u64().expect("late_start");
    let held = late["results"].as_u64().expect("results");
    assert!(
        skipped > 0 && skipped < held,
        "task 2 should skip what was due before it began and send the rest: {report}\n{}",
        cluster.logs()
    );
    let began_late = late["began_late_s"].as_f64().expect("began_late_s");
    assert!(began_late > 0.5, "{report}");
    for shard in ["0/3", "1/3"] {
        assert_eq!(input(&report, shard)["late_start"], 0, "{report}");
    }
    // The merge names the late shard, with its timing error.
    assert!(
        report["late_shards"]
            .as_array()
            .is_some_and(|l| l.contains(&Value::from("2/3"))),
        "{report}"
    );
    assert!(
        errors.contains("shard 2/3") && errors.contains("late-start"),
        "{errors}"
    );
    assert!(errors.contains("timing error p50"), "{errors}");
    // No burst: what task 2 sent went out on the shared schedule, not its backlog at once.
    let out = ldplayer(&[
        "results",
        "export",
        &s(&results.join("shard-2.res")),
        "--jsonl",
    ]);
    let mut worst_ms = 0.0f64;
    for line in String::from_utf8_lossy(&out.stdout).lines() {
        let row: Value = serde_json::from_str(line).expect("a JSON line");
        if let Some(error_ns) = row["timing_error_ns"].as_i64() {
            worst_ms = worst_ms.max(error_ns as f64 / 1e6);
        }
    }
    assert!(
        worst_ms < 500.0,
        "task 2 sent a query {worst_ms:.0} ms late: its backlog went out at once"
    );
}

#[test]
fn the_one_job_recipe_starts_every_task_together_and_merges() {
    let Some(cluster) = Cluster::start(NODE_CPUS) else {
        return;
    };
    println!("{}", cluster.versions);
    let server = knot();
    let dir = tempfile::tempdir().expect("scratch");
    let trace = trace(dir.path(), 3000, 1000);
    let results = dir.path().join("results");
    let output = dir.path().join("job.out");
    let mut sbatch = job_command(
        &cluster,
        "sbatch",
        &trace,
        &server.addr.to_string(),
        &results,
        None,
    );
    sbatch
        .args(["--parsable", "--wait", "--ntasks=3"])
        .arg(format!("--output={}", output.display()))
        .arg(repo().join("deploy/slurm/replay-tasks.sbatch"));
    let out = cluster.run(&mut sbatch, Duration::from_secs(180));
    let text = std::fs::read_to_string(&output).unwrap_or_default();
    assert!(
        out.status.success(),
        "the job failed: {}\n{text}\n{}",
        String::from_utf8_lossy(&out.stderr),
        cluster.logs()
    );
    // The job's output: each shard's JSON summary, then the merge's report.
    let report: Value = text
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .find(|v| v.get("merged").is_some())
        .unwrap_or_else(|| panic!("no merge report in the job's output:\n{text}"));
    assert_eq!(report["merged"], 3000, "{report}");
    let mut shards: Vec<String> = report["inputs"]
        .as_array()
        .expect("inputs")
        .iter()
        .map(|i| {
            assert_eq!(i["late_start"], 0, "a task began late: {report}");
            i["shard"].as_str().unwrap_or("none").to_string()
        })
        .collect();
    shards.sort();
    assert_eq!(shards, ["0/3", "1/3", "2/3"], "{report}");
    assert_every_query(&results, 3000);
}
