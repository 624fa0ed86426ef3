//! A client side split over processes (`[client] processes = N`, as `replay --processes`): each
//! process replays one shard of the clients (every query of a client in one shard) from the
//! shared start, with open files of its own, so that tens of thousands of clients each keep a
//! socket and a connection where one process's limit on open files (20,000 here, which root
//! without `CAP_SYS_RESOURCE` cannot raise) would not hold them. The shards' results are merged
//! into the run's one results file, in trace order, and summed up as one replay.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use ldplayer_results::{
    merge, Capacity, ResultsReader, ResultsWriter, RunInfo, ShardId, Summary, MERGE_WINDOW,
};
use serde::{Deserialize, Serialize};

use crate::client::{kernel_tcp_counters, kernel_udp_counters, ReplayReport};
use crate::error::ExperimentError;
use crate::side::{ClientSideConfig, SideConfig};
use crate::topology::SIDE_ENV;

/// What one process of a split client side replays.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ClientShard {
    /// The client side's configuration, with this shard's own results and stats files.
    pub client: ClientSideConfig,
    /// The shard of the clients.
    pub shard: ShardId,
    /// The shared start of the schedule (`CLOCK_REALTIME` ns).
    pub start_ns: i64,
}

/// Runs one shard process to the end.
pub fn run_shard(c: &ClientShard, stop: &Arc<AtomicBool>) -> Result<(), ExperimentError> {
    crate::client::replay_shard(&c.client, Some(c.shard), c.start_ns, stop)
}

/// The files of shard `i` beside the run's `results`.
fn shard_file(results: &Path, i: u32, what: &str) -> PathBuf {
    results.with_file_name(format!("shard-{i}.{what}"))
}

/// Replays `c` in `n` shard processes from `start_ns`, merges their results into `c.results`
/// and writes the report of the whole to `c.stats`.
pub fn replay(
    c: &ClientSideConfig,
    n: u32,
    start_ns: i64,
    stop: &Arc<AtomicBool>,
) -> Result<(), ExperimentError> {
    let exe = std::env::current_exe().map_err(|e| ExperimentError::io(Path::new("ldplayer"), e))?;
    let mut children = Vec::new();
    for i in 0..n {
        let shard = ClientShard {
            client: ClientSideConfig {
                results: shard_file(&c.results, i, "res"),
                stats: shard_file(&c.results, i, "json"),
                processes: None,
                capture: None,
                ..c.clone()
            },
            shard: ShardId { index: i, count: n },
            start_ns,
        };
        let config = shard_file(&c.results, i, "side.json");
        SideConfig::ClientShard(shard.clone()).write(&config)?;
        let log = shard_file(&c.results, i, "log");
        let out = std::fs::File::create(&log).map_err(|e| ExperimentError::io(&log, e))?;
        let err = out.try_clone().map_err(|e| ExperimentError::io(&log, e))?;
        let child = Command::new(&exe)
            .env(SIDE_ENV, &config)
            .stdin(Stdio::null())
            .stdout(out)
            .stderr(err)
            .spawn()
            .map_err(|e| ExperimentError::io(&exe, e))?;
        children.push((shard, log, child));
    }
    let failed = wait_for(&mut children, stop);
    // The shards' results, merged in trace order into the run's file, marked complete when
    // every shard finished.
    let readers = children
        .iter()
        .filter(|(s, ..)| s.client.results.exists())
        .map(|(s, ..)| {
            ResultsReader::open(&s.client.results)
                .map_err(|e| ExperimentError::Input(format!("{}: {e}", s.client.results.display())))
        })
        .collect::<Result<Vec<_>, _>>()?;
    let info = RunInfo {
        complete: Some(false),
        closed_loop: Some(c.fast.is_some()),
        ramp: c.ramp,
        start_ns: c.ramp.map(|_| start_ns),
        ..Default::default()
    };
    let mut out = ResultsWriter::create_with_run_info(&c.results, &info)
        .map_err(|e| ExperimentError::io(&c.results, e))?;
    merge(readers, &mut out, MERGE_WINDOW)
        .map_err(|e| ExperimentError::Input(format!("merging the shards' results: {e}")))?;
    out.into_inner()
        .and_then(|mut f| std::io::Write::flush(&mut f))
        .map_err(|e| ExperimentError::io(&c.results, e))?;
    let interrupted = stop.load(Ordering::Relaxed);
    if failed.is_empty() && !interrupted {
        ldplayer_results::mark_complete(&c.results)
            .map_err(|e| ExperimentError::io(&c.results, e))?;
    }
    // The engines' counters, added up; the summary of the merged results.
    let engines: Vec<serde_json::Value> = children
        .iter()
        .filter_map(|(s, ..)| std::fs::read(&s.client.stats).ok())
        .filter_map(|b| serde_json::from_slice::<ReplayReport>(&b).ok())
        .map(|r| r.engine)
        .collect();
    let summary = summarize(&c.results)?;
    let report = ReplayReport {
        start_ns,
        interrupted,
        engine: add_up(&engines),
        summary,
        kernel_udp: kernel_udp_counters(),
        kernel_tcp: kernel_tcp_counters(),
    };
    let text = serde_json::to_vec_pretty(&report)
        .map_err(|e| ExperimentError::Input(format!("replay report: {e}")))?;
    ldplayer_output::write(&c.stats, text).map_err(|e| ExperimentError::io(&c.stats, e.into()))?;
    // The merged file holds every result: the shards' copies go.
    for (s, ..) in &children {
        let _ = std::fs::remove_file(&s.client.results);
    }
    match failed.first() {
        None => Ok(()),
        Some(log) => Err(ExperimentError::Replay(format!(
            "{} of {n} client processes failed; the first said: {}",
            failed.len(),
            tail(log)
        ))),
    }
}

/// Waits for every shard process, passing `stop` on to them (SIGTERM: each stops scheduling
/// and finishes its results); returns the logs of those that failed.
fn wait_for(children: &mut [(ClientShard, PathBuf, Child)], stop: &AtomicBool) -> Vec<PathBuf> {
    let mut failed = Vec::new();
    let mut done = vec![false; children.len()];
    let mut told = false;
    while done.iter().any(|d| !d) {
        if stop.load(Ordering::Relaxed) && !told {
            told = true;
            for (_, _, child) in children.iter() {
                // A child of ours that has not been reaped.
                let _ = ldplayer_system::process::signal(
                    child.id(),
                    ldplayer_system::process::Signal::TERM,
                );
            }
        }
        for (i, (_, log, child)) in children.iter_mut().enumerate() {
            if done[i] {
                continue;
            }
            match child.try_wait() {
                Ok(Some(status)) => {
                    done[i] = true;
                    if !status.success() {
                        failed.push(log.clone());
                    }
                }
                Ok(None) => {}
                Err(_) => {
                    done[i] = true;
                    failed.push(log.clone());
                }
            }
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    failed
}

/// The summary of the results at `path` as `ldplayer replay --json` prints it, with a ramp's
/// capacity as `ramp`.
fn summarize(path: &Path) -> Result<serde_json::Value, ExperimentError> {
    let read_error = |e| ExperimentError::Input(format!("{}: {e}", path.display()));
    let mut reader = ResultsReader::open(path).map_err(read_error)?;
    let mut capacity = Capacity::for_run(reader.run_info());
    let mut summary = Summary::new();
    for r in &mut reader {
        let r = r.map_err(read_error)?;
        summary.add(&r);
        if let Some(c) = &mut capacity {
            c.add(&r);
        }
    }
    let mut json = serde_json::to_value(summary.report()).unwrap_or_default();
    if let (Some(obj), Some(c)) = (json.as_object_mut(), capacity) {
        obj.insert(
            "ramp".into(),
            serde_json::to_value(c.report()).unwrap_or_default(),
        );
    }
    Ok(json)
}

/// The shards' engine counters as one: numbers added (the wall time, `seconds`, the longest),
/// objects key by key, anything else the first shard's.
fn add_up(engines: &[serde_json::Value]) -> serde_json::Value {
    use serde_json::Value;
    fn add(into: &mut Value, from: &Value, key: &str) {
        match (into, from) {
            (Value::Number(a), Value::Number(b)) => {
                let sum = if key == "seconds" {
                    a.as_f64().unwrap_or(0.0).max(b.as_f64().unwrap_or(0.0))
                } else if let (Some(x), Some(y)) = (a.as_u64(), b.as_u64()) {
                    *a = (x + y).into();
                    return;
                } else {
                    a.as_f64().unwrap_or(0.0) + b.as_f64().unwrap_or(0.0)
                };
                if let Some(n) = serde_json::Number::from_f64(sum) {
                    *a = n;
                }
            }
            (Value::Object(a), Value::Object(b)) => {
                for (k, v) in b {
                    match a.get_mut(k) {
                        Some(x) => add(x, v, k),
                        None => {
                            a.insert(k.clone(), v.clone());
                        }
                    }
                }
            }
            (Value::Bool(a), Value::Bool(b)) if key == "ramp_completed" => *a = *a && *b,
            // Failures by kind and cause: the counts of the same cause added.
            (Value::Array(a), Value::Array(b)) if key == "error_causes" => {
                for cause in b {
                    let same = a
                        .iter_mut()
                        .find(|x| x["kind"] == cause["kind"] && x["cause"] == cause["cause"]);
                    match same {
                        Some(x) => add(&mut x["count"], &cause["count"], "count"),
                        None => a.push(cause.clone()),
                    }
                }
            }
            _ => {}
        }
    }
    let mut total = engines.first().cloned().unwrap_or_default();
    for e in engines.iter().skip(1) {
        add(&mut total, e, "");
    }
    total
}

/// The last lines of a shard's log, for an error message.
fn tail(log: &Path) -> String {
    let text = std::fs::read_to_string(log).unwrap_or_default();
    let lines: Vec<&str> = text.lines().rev().take(5).collect();
    let mut lines: Vec<&str> = lines.into_iter().rev().collect();
    if lines.is_empty() {
        lines.push("(nothing)");
    }
    lines.join(" / ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_shards_counters_add_up_and_the_wall_time_is_the_longest() {
        let a = serde_json::json!({
            "sent": 3, "seconds": 2.5, "errors": {"send": 1}, "stacks": ["lean"],
            "ramp_completed": true,
            "error_causes": [{"kind": "send", "cause": "EMFILE", "count": 1, "first": "x"}],
        });
        let b = serde_json::json!({
            "sent": 4, "seconds": 3.0, "errors": {"send": 2, "tls": 1}, "stacks": ["lean"],
            "ramp_completed": false,
            "error_causes": [
                {"kind": "send", "cause": "EMFILE", "count": 2, "first": "y"},
                {"kind": "tls", "cause": "unknown-issuer", "count": 1, "first": "z"},
            ],
        });
        let total = add_up(&[a, b]);
        assert_eq!(total["sent"], 7);
        assert_eq!(total["seconds"], 3.0);
        assert_eq!(total["errors"], serde_json::json!({"send": 3, "tls": 1}));
        assert_eq!(total["stacks"], serde_json::json!(["lean"]));
        assert_eq!(total["ramp_completed"], false);
        let causes = total["error_causes"].as_array().unwrap();
        assert_eq!(causes.len(), 2);
        assert_eq!(causes[0]["count"], 3);
        assert_eq!(causes[0]["first"], "x");
    }
}
