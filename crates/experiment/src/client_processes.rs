//! A client side split over processes (`[client] processes = N`, as `replay --processes`): each
//! process replays one shard of the clients (every query of a client in one shard) from the
//! shared start, with open files of its own, so that tens of thousands of clients each keep a
//! socket and a connection where one process's limit on open files (20,000 here, which root
//! without `CAP_SYS_RESOURCE` cannot raise) would not hold them. The shards' results are merged
//! into the run's one results file, in trace order, and summed up as one replay.
//!
//! Starting, waiting (a stop passed on) and merging are [`ldplayer_replay::processes`]', as for
//! `replay --processes`; what is the experiment's own is each shard's side configuration (a
//! [`ClientShard`] named by the environment) and the report of the whole, the shards' engine
//! counters added up.

use std::path::Path;
use std::process::Command;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;

use ldplayer_replay::processes::{summarize, Scratch, ShardProcesses};
use ldplayer_results::{RunInfo, ShardId};
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

/// Replays `c` in `n` shard processes from `start_ns`, merges their results into `c.results`
/// and writes the report of the whole to `c.stats`. Each shard's files (`shard-I.side.json`,
/// its configuration; `shard-I.json`, its report; `shard-I.log`) stay beside the results.
pub fn replay(
    c: &ClientSideConfig,
    n: u32,
    start_ns: i64,
    stop: &Arc<AtomicBool>,
) -> Result<(), ExperimentError> {
    let exe = std::env::current_exe().map_err(|e| ExperimentError::io(Path::new("ldplayer"), e))?;
    let folder = c.results.parent().unwrap_or(Path::new("")).to_path_buf();
    let done = ShardProcesses::new(n, Scratch::Kept(folder))
        .start_ns(Some(start_ns))
        .run(stop, |s| {
            let shard = ClientShard {
                client: ClientSideConfig {
                    results: s.results.to_path_buf(),
                    stats: s.file("json"),
                    processes: None,
                    capture: None,
                    ..c.clone()
                },
                shard: s.shard,
                start_ns: s.start_ns,
            };
            let config = s.file("side.json");
            SideConfig::ClientShard(shard).write(&config)?;
            let mut cmd = Command::new(&exe);
            cmd.env(SIDE_ENV, &config);
            Ok(cmd)
        })?;
    // The shards' results, merged in trace order into the run's file, marked complete when
    // every shard finished.
    let info = RunInfo {
        closed_loop: Some(c.fast.is_some()),
        ramp: c.ramp,
        start_ns: c.ramp.map(|_| start_ns),
        ..Default::default()
    };
    let merged = done.merge(Some(&c.results), &info)?;
    for warning in &merged.late {
        eprintln!("client side: {warning}");
    }
    // The engines' counters, added up; the summary of the merged results.
    let engines: Vec<serde_json::Value> = done
        .exits()
        .iter()
        .filter_map(|e| std::fs::read(done.shard_file(e.shard, "json")).ok())
        .filter_map(|b| serde_json::from_slice::<ReplayReport>(&b).ok())
        .map(|r| r.engine)
        .collect();
    let (summary, capacity) = summarize(&c.results)?;
    let mut summary = serde_json::to_value(summary).unwrap_or_default();
    if let (Some(obj), Some(c)) = (summary.as_object_mut(), capacity) {
        obj.insert("ramp".into(), serde_json::to_value(c).unwrap_or_default());
    }
    let report = ReplayReport {
        start_ns,
        interrupted: done.stopped(),
        engine: add_up(&engines),
        summary,
        kernel_udp: kernel_udp_counters(),
        kernel_tcp: kernel_tcp_counters(),
    };
    let text = serde_json::to_vec_pretty(&report)
        .map_err(|e| ExperimentError::Input(format!("replay report: {e}")))?;
    ldplayer_output::write(&c.stats, text).map_err(|e| ExperimentError::io(&c.stats, e.into()))?;
    let failed: Vec<_> = done.failed().collect();
    match failed.first() {
        None => Ok(()),
        Some(first) => Err(ExperimentError::Replay(format!(
            "{} of {n} client processes failed; the first said: {}",
            failed.len(),
            first.log_tail(5)
        ))),
    }
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
