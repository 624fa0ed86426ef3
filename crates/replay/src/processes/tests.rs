//! The orchestrator against real child processes: this test binary itself writing shard
//! results (the ignored `shard_child`, run only as a child), and `sh` children for the stop
//! path.

use super::*;
use ldplayer_dns::Rcode;
use ldplayer_results::{read_all, Outcome, QueryResult, ResultsWriter, RunInfo, ShardId};
use ldplayer_trace::Proto;
use std::os::unix::process::ExitStatusExt;
use std::path::Path;
use std::process::Command;
use std::sync::atomic::AtomicBool;
use std::time::Duration;

/// Queries of the whole test "trace": shard I of N replays the indexes I, I + N, ...
const QUERIES: u64 = 30;
/// The child's shard (`I/N`).
const SHARD_ENV: &str = "LDPLAYER_TEST_SHARD";
/// The results file the child writes.
const RESULTS_ENV: &str = "LDPLAYER_TEST_SHARD_RESULTS";
/// Set for a child that fails half way (results written, not marked complete, exit 3).
const FAIL_ENV: &str = "LDPLAYER_TEST_SHARD_FAIL";

/// The child side: writes its shard's results as a replay would. Run only by the tests below,
/// as a child process (ignored otherwise).
#[test]
#[ignore = "run as a child by the orchestrator tests"]
fn shard_child() {
    let shard: ShardId = {
        let s = std::env::var(SHARD_ENV).expect("the shard");
        let (i, n) = s.split_once('/').expect("I/N");
        ShardId {
            index: i.parse().expect("I"),
            count: n.parse().expect("N"),
        }
    };
    let path = std::env::var(RESULTS_ENV).expect("the results file");
    let info = RunInfo {
        shard: Some(shard),
        complete: Some(false),
        ..Default::default()
    };
    let mut w = ResultsWriter::create_with_run_info(&path, &info).expect("results file");
    for index in (u64::from(shard.index)..QUERIES).step_by(shard.count as usize) {
        w.write(&QueryResult {
            index,
            trace_ns: index as i64 * 1_000,
            intended_ns: 1,
            sent_ns: 2,
            received_ns: 3,
            proto: Proto::Udp,
            new_connection: false,
            handshake_ns: 0,
            rcode: Rcode(0),
            response_len: 40,
            truncated: false,
            outcome: Outcome::Answered,
            target: 0,
        })
        .expect("a result");
    }
    w.into_inner().expect("written");
    if std::env::var_os(FAIL_ENV).is_some() {
        eprintln!("shard {shard} broke");
        std::process::exit(3);
    }
    ldplayer_results::mark_complete(Path::new(&path)).expect("marked");
    println!("{{\"shard\": \"{shard}\"}}");
}

/// This test binary, run as the child of `shard`.
fn child(context: &ShardContext<'_>, fail: bool) -> Command {
    let mut cmd = Command::new(std::env::current_exe().expect("the test binary"));
    cmd.args([
        "--exact",
        "processes::tests::shard_child",
        "--ignored",
        "--nocapture",
        "--test-threads=1",
    ])
    .env(SHARD_ENV, context.shard.to_string())
    .env(RESULTS_ENV, context.results);
    if fail {
        cmd.env(FAIL_ENV, "1");
    }
    cmd
}

fn indexes(path: &Path) -> Vec<u64> {
    let bytes = std::fs::read(path).expect("merged results");
    read_all(&bytes[..])
        .expect("readable")
        .into_iter()
        .map(|r| r.index)
        .collect()
}

#[test]
fn three_shards_merge_into_one_complete_run_in_trace_order() {
    let dir = tempfile::tempdir().expect("scratch");
    let stop = AtomicBool::new(false);
    let before = ldplayer_system::clock::realtime_ns();
    let done = ShardProcesses::new(3, Scratch::Temporary(dir.path().to_path_buf()))
        .run(&stop, |c| Ok(child(c, false)))
        .expect("the shards run");
    assert!(done.start_ns() > before, "the start is chosen ahead of now");
    assert_eq!(done.failed().count(), 0, "{:?}", done.exits());
    let out = std::fs::read_to_string(&done.exits()[1].stdout).expect("stdout");
    assert!(out.contains("\"shard\": \"1/3\""), "{out}");
    let into = dir.path().join("all.res");
    let merged = done
        .merge(Some(&into), &RunInfo::default())
        .expect("merged");
    assert!(merged.complete);
    assert!(merged.late.is_empty(), "{:?}", merged.late);
    assert_eq!(merged.report.merged, QUERIES);
    assert_eq!(indexes(&into), (0..QUERIES).collect::<Vec<_>>());
    let (summary, capacity) = summarize(&into).expect("summary");
    assert_eq!(summary.answered, QUERIES);
    assert!(capacity.is_none(), "no ramp");
    let reader = ldplayer_results::ResultsReader::open(&into).expect("merged file");
    assert_eq!(reader.run_info().and_then(|r| r.complete), Some(true));
    let folder = done.folder().to_path_buf();
    assert!(folder.exists());
    drop(done);
    assert!(!folder.exists(), "the temporary folder goes with the run");
}

#[test]
fn a_failed_shard_is_told_and_the_rest_merges_unfinished() {
    let dir = tempfile::tempdir().expect("scratch");
    let kept = dir.path().join("run");
    let stop = AtomicBool::new(false);
    let done = ShardProcesses::new(3, Scratch::Kept(kept.clone()))
        .start_ns(Some(7))
        .run(&stop, |c| Ok(child(c, c.shard.index == 1)))
        .expect("the shards run");
    assert_eq!(done.start_ns(), 7);
    let failed: Vec<&ShardExit> = done.failed().collect();
    assert_eq!(failed.len(), 1, "{:?}", done.exits());
    assert_eq!(failed[0].shard.index, 1);
    assert_eq!(
        failed[0].status.as_ref().ok().and_then(|s| s.code()),
        Some(3)
    );
    assert!(failed[0].log_tail(5).contains("shard 1/3 broke"));
    let merged = done.merge(None, &RunInfo::default()).expect("merged");
    assert_eq!(merged.path, kept.join("merged.res"));
    assert!(!merged.complete, "a shard failed");
    assert_eq!(indexes(&merged.path), (0..QUERIES).collect::<Vec<_>>());
    assert!(
        !kept.join("shard-0.res").exists(),
        "merged shards' results go"
    );
    assert!(kept.join("shard-1.log").exists(), "the logs stay");
}

#[test]
fn a_stop_is_passed_on_as_sigterm() {
    let dir = tempfile::tempdir().expect("scratch");
    let stop = AtomicBool::new(true);
    let done = ShardProcesses::new(2, Scratch::Temporary(dir.path().to_path_buf()))
        .grace(Duration::from_secs(120))
        .run(&stop, |_| {
            let mut cmd = Command::new("sh");
            cmd.args(["-c", "exec sleep 120"]);
            Ok(cmd)
        })
        .expect("the shards run");
    assert!(done.stopped());
    for exit in done.exits() {
        assert!(!exit.killed, "{exit:?}");
        let status = exit.status.as_ref().expect("waited for");
        assert_eq!(status.signal(), Some(15), "{exit:?}");
    }
    let merged = done.merge(None, &RunInfo::default()).expect("merged");
    assert!(!merged.complete);
    assert_eq!(merged.report.merged, 0);
}

#[test]
fn a_shard_deaf_to_the_stop_is_killed_after_the_grace() {
    let dir = tempfile::tempdir().expect("scratch");
    let stop = AtomicBool::new(true);
    let done = ShardProcesses::new(2, Scratch::Temporary(dir.path().to_path_buf()))
        .grace(Duration::ZERO)
        .run(&stop, |_| {
            // SIGTERM ignored, through the exec too.
            let mut cmd = Command::new("sh");
            cmd.args(["-c", "trap '' TERM; exec sleep 120"]);
            Ok(cmd)
        })
        .expect("the shards run");
    for exit in done.exits() {
        assert!(exit.killed, "{exit:?}");
        assert!(!exit.success());
    }
}

#[test]
fn a_shard_that_cannot_start_is_an_error() {
    let dir = tempfile::tempdir().expect("scratch");
    let stop = AtomicBool::new(false);
    let err = ShardProcesses::new(2, Scratch::Temporary(dir.path().to_path_buf()))
        .run(&stop, |c| {
            let program = match c.shard.index {
                0 => "sleep",
                _ => "/nonexistent/ldplayer-test-program",
            };
            let mut cmd = Command::new(program);
            cmd.arg("120");
            Ok(cmd)
        })
        .err()
        .expect("refused");
    assert!(
        matches!(err, ShardsError::Spawn { ref shard, .. } if shard == "1/2"),
        "{err}"
    );
    let err = ShardProcesses::new(0, Scratch::Temporary(dir.path().to_path_buf()))
        .run(&stop, |_| Ok(Command::new("true")))
        .err()
        .expect("refused");
    assert!(matches!(err, ShardsError::NoShards), "{err}");
}

#[test]
fn shards_started_before_an_error_are_killed() {
    let dir = tempfile::tempdir().expect("scratch");
    let pid_file = dir.path().join("pid");
    let stop = AtomicBool::new(false);
    let err = ShardProcesses::new(2, Scratch::Temporary(dir.path().to_path_buf()))
        .run(&stop, |c| {
            if c.shard.index == 0 {
                let mut cmd = Command::new("sh");
                cmd.args(["-c", "echo $$ > \"$0\"; exec sleep 120"])
                    .arg(&pid_file);
                return Ok(cmd);
            }
            // Shard 0 is running (its pid written) when shard 1 cannot be prepared.
            for _ in 0..10_000 {
                if std::fs::read_to_string(&pid_file).is_ok_and(|s| s.ends_with('\n')) {
                    break;
                }
                std::thread::sleep(Duration::from_millis(5));
            }
            Err("no configuration for this shard".into())
        })
        .err()
        .expect("refused");
    assert!(
        matches!(err, ShardsError::Command { ref shard, .. } if shard == "1/2"),
        "{err}"
    );
    let pid = std::fs::read_to_string(&pid_file).expect("shard 0 started");
    let proc_dir = Path::new("/proc").join(pid.trim());
    assert!(
        !proc_dir.exists(),
        "shard 0 (pid {}) still runs",
        pid.trim()
    );
}
