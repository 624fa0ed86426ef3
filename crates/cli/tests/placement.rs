//! `replay --pin` gives the sending thread its core to itself, and `--realtime` asks for
//! SCHED_FIFO: checked from the outside, in /proc, while a replay runs (the kernel's view of
//! each thread's allowed cores and scheduling policy).

mod binary;

use binary::{ldplayer, s, Serve};
use ldplayer_testbed::prerequisite;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// The querier thread's name.
const QUERIER: &str = "ldplayer-q0";
/// The result writer's name, as the kernel keeps it (15 bytes).
const WRITER: &str = "ldplayer-result";

/// A thread of a process as /proc shows it.
#[derive(Debug, Clone)]
struct Thread {
    name: String,
    cores: String,
    /// Scheduling policy (field 41 of `stat`): 0 normal, 1 FIFO.
    policy: u32,
}

fn threads(pid: u32) -> BTreeMap<u32, Thread> {
    let mut all = BTreeMap::new();
    let Ok(dir) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
        return all;
    };
    for entry in dir.flatten() {
        let path = entry.path();
        let Ok(tid) = entry.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        let (Ok(status), Ok(stat)) = (
            std::fs::read_to_string(path.join("status")),
            std::fs::read_to_string(path.join("stat")),
        ) else {
            continue;
        };
        let field = |key: &str| {
            status
                .lines()
                .find_map(|l| l.strip_prefix(key))
                .map(|v| v.trim().to_string())
                .unwrap_or_default()
        };
        // Fields after the command name, which is in parentheses and may hold spaces.
        let after: Vec<&str> = stat
            .rsplit_once(')')
            .map(|(_, rest)| rest.split_whitespace().collect())
            .unwrap_or_default();
        all.insert(
            tid,
            Thread {
                name: field("Name:"),
                cores: field("Cpus_allowed_list:"),
                policy: after.get(38).and_then(|p| p.parse().ok()).unwrap_or(0),
            },
        );
    }
    all
}

/// A wildcard zone under `example.` and a trace of `n` queries for it, one per millisecond,
/// from `clients` clients.
fn zone_and_trace(dir: &Path, n: u32, clients: u32) -> (PathBuf, PathBuf) {
    let zone = dir.join("w.zone");
    std::fs::write(
        &zone,
        "$ORIGIN example.\n$TTL 3600\n@ SOA ns admin 1 3600 600 86400 300\n@ NS ns\nns A 127.0.0.1\n* A 192.0.2.2\n",
    )
    .unwrap();
    let trace = dir.join("t.bin");
    let out = ldplayer(&[
        "synth",
        "--workload",
        "fixed",
        "--interval",
        "0.001",
        "-n",
        &n.to_string(),
        "--clients",
        &clients.to_string(),
        "--zone",
        "w.example.",
        "-o",
        &s(&trace),
        "-q",
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    (zone, trace)
}

/// Replays a 3 s trace against `ldplayer serve` with `extra` flags, sampling the replay's
/// threads every 20 ms; returns every thread seen (last sample of each) and the replay's
/// standard error.
fn replay_and_watch(dir: &Path, extra: &[&str]) -> (BTreeMap<u32, Thread>, String) {
    let (zone, trace) = zone_and_trace(dir, 3000, 100);
    let port = ldplayer_testbed::free_port();
    let addr = format!("127.0.0.1:{port}");
    let server = Serve::start(&["--listen", &addr, &s(&zone)]);
    let child = Command::new(env!("CARGO_BIN_EXE_ldplayer"))
        .args([
            "replay",
            &s(&trace),
            "--server",
            &addr,
            "--queriers",
            "1",
            "--json",
        ])
        .args(extra)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("replay starts");
    let pid = child.id();
    let mut child = child;
    let mut seen = BTreeMap::new();
    let deadline = Instant::now() + Duration::from_secs(60);
    while child.try_wait().expect("replay runs").is_none() && Instant::now() < deadline {
        // Samples while the querier runs: before it starts and after it ends, the other threads
        // may use every core.
        let now = threads(pid);
        if now.values().any(|t| t.name == QUERIER) {
            seen.extend(now);
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let out = child.wait_with_output().expect("replay ends");
    drop(server);
    let stderr = String::from_utf8_lossy(&out.stderr).to_string();
    assert!(out.status.success(), "{stderr}");
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON summary");
    assert_eq!(json["answered"], 3000, "{json}");
    (seen, stderr)
}

fn two_cores() -> bool {
    prerequisite::require(
        std::thread::available_parallelism().is_ok_and(|n| n.get() >= 2),
        "a second core (one for the pinned querier, one for the rest)",
        "run the tests on a machine (or in a container) with at least two cores",
    )
}

#[test]
fn a_pinned_querier_has_its_core_to_itself() {
    if !two_cores() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let core = std::thread::available_parallelism().unwrap().get() - 1;
    let (seen, stderr) = replay_and_watch(dir.path(), &["--pin", &core.to_string()]);
    assert!(!stderr.contains("cannot"), "{stderr}");
    let querier: Vec<&Thread> = seen.values().filter(|t| t.name == QUERIER).collect();
    assert_eq!(querier.len(), 1, "{seen:#?}");
    assert_eq!(querier[0].cores, core.to_string(), "{seen:#?}");
    let others: Vec<&Thread> = seen.values().filter(|t| t.name != QUERIER).collect();
    assert!(
        others.iter().any(|t| t.name == WRITER),
        "the result writer was seen: {seen:#?}"
    );
    for t in others {
        let cores = expand(&t.cores);
        assert!(
            !cores.contains(&core) && !cores.is_empty(),
            "thread {t:?} may run on the querier's core {core}: {seen:#?}"
        );
    }
}

#[test]
fn realtime_querier_runs_fifo_or_says_why_not() {
    if !two_cores() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let (seen, stderr) = replay_and_watch(dir.path(), &["--pin", "1", "--realtime"]);
    let querier = seen
        .values()
        .find(|t| t.name == QUERIER)
        .expect("the querier was seen");
    if stderr.contains("SCHED_FIFO) refused") {
        assert_eq!(querier.policy, 0, "{stderr}");
    } else {
        assert_eq!(
            querier.policy, 1,
            "SCHED_FIFO, as nothing was said: {querier:?}"
        );
    }
    // Nobody else is real-time.
    for t in seen.values().filter(|t| t.name != QUERIER) {
        assert_eq!(t.policy, 0, "{t:?}");
    }
}

#[test]
fn realtime_refused_is_said_and_the_replay_goes_on() {
    if !two_cores() {
        return;
    }
    // Without CAP_SYS_NICE and with no real-time priority allowed by RLIMIT_RTPRIO, even root is
    // refused SCHED_FIFO.
    let Some(setpriv) = prerequisite::tool("setpriv", "util-linux") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let (zone, trace) = zone_and_trace(dir.path(), 200, 10);
    let addr = format!("127.0.0.1:{}", ldplayer_testbed::free_port());
    let server = Serve::start(&["--listen", &addr, &s(&zone)]);
    let out = Command::new("prlimit")
        .args(["--rtprio=0", "--"])
        .arg(setpriv)
        .args(["--bounding-set=-sys_nice", "--inh-caps=-sys_nice", "--"])
        .arg(env!("CARGO_BIN_EXE_ldplayer"))
        .args([
            "replay",
            &s(&trace),
            "--server",
            &addr,
            "--realtime",
            "--json",
        ])
        .output()
        .expect("prlimit runs");
    drop(server);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(
        stderr.contains("real-time scheduling (SCHED_FIFO) refused")
            && stderr.contains("CAP_SYS_NICE"),
        "{stderr}"
    );
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON summary");
    assert_eq!(json["answered"], 200, "{json}");
}

/// `0-1,3` → [0, 1, 3].
fn expand(list: &str) -> Vec<usize> {
    list.split(',')
        .filter(|p| !p.is_empty())
        .flat_map(|part| match part.split_once('-') {
            Some((a, b)) => {
                (a.parse::<usize>().unwrap_or(0)..=b.parse::<usize>().unwrap_or(0)).collect()
            }
            None => vec![part.parse().unwrap_or(usize::MAX)],
        })
        .collect()
}
