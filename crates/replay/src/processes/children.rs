//! The shard processes while they run: started with their output in files, waited for, told to
//! stop when the caller's stop flag is set, and killed when they outlast the grace period after
//! it. Children never outlive the orchestrator by accident: dropping [`Children`] before
//! [`Children::wait`] (an error while starting the others) kills and reaps them.

use super::error::ShardsError;
use ldplayer_results::ShardId;
use ldplayer_system::process::{signal, Signal};
use std::path::PathBuf;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// How often the children are looked at while they run: a stop is passed on this soon.
const POLL: Duration = Duration::from_millis(50);

/// How one shard process ended.
#[derive(Debug)]
pub struct ShardExit {
    /// The shard the process replayed.
    pub shard: ShardId,
    /// Its exit status, or why it could not be waited for.
    pub status: Result<ExitStatus, String>,
    /// True when it was killed for outlasting the grace period after a stop.
    pub killed: bool,
    /// Its standard output, in full.
    pub stdout: PathBuf,
    /// Its standard error, in full.
    pub log: PathBuf,
}

impl ShardExit {
    /// True when the process exited with success.
    pub fn success(&self) -> bool {
        self.status.as_ref().is_ok_and(ExitStatus::success)
    }

    /// The last `lines` lines of its standard error, joined with ` / ` (`(nothing)` when it
    /// said nothing), for an error message.
    pub fn log_tail(&self, lines: usize) -> String {
        let text = std::fs::read_to_string(&self.log).unwrap_or_default();
        let last: Vec<&str> = text.lines().rev().take(lines).collect();
        if last.is_empty() {
            return "(nothing)".to_string();
        }
        last.into_iter().rev().collect::<Vec<_>>().join(" / ")
    }
}

/// One running shard process and where its output goes.
struct Running {
    shard: ShardId,
    child: Child,
    stdout: PathBuf,
    log: PathBuf,
    exit: Option<Result<ExitStatus, String>>,
    killed: bool,
}

/// The shard processes started so far.
#[derive(Default)]
pub(crate) struct Children {
    running: Vec<Running>,
}

impl Children {
    /// Starts `command` as `shard`, its standard output to `stdout` and its standard error to
    /// `log` (files created anew, through the guard that refuses to overwrite an input), its standard input empty.
    pub(crate) fn spawn(
        &mut self,
        shard: ShardId,
        mut command: Command,
        stdout: PathBuf,
        log: PathBuf,
    ) -> Result<(), ShardsError> {
        let out = ldplayer_output::create_direct(&stdout)
            .map_err(|e| ShardsError::io(&stdout, e.into()))?;
        let err =
            ldplayer_output::create_direct(&log).map_err(|e| ShardsError::io(&log, e.into()))?;
        let child = command
            .stdin(Stdio::null())
            .stdout(out)
            .stderr(err)
            .spawn()
            .map_err(|source| ShardsError::Spawn {
                shard: shard.to_string(),
                source,
            })?;
        self.running.push(Running {
            shard,
            child,
            stdout,
            log,
            exit: None,
            killed: false,
        });
        Ok(())
    }

    /// Waits for every child. Once `stop` is set, each child still running gets SIGTERM (a
    /// replay then stops scheduling and finishes its results); one still running `grace` after
    /// that is killed. The exits come in the order the children were started.
    pub(crate) fn wait(mut self, stop: &AtomicBool, grace: Duration) -> Vec<ShardExit> {
        let mut stopped_at: Option<Instant> = None;
        loop {
            for r in self.running.iter_mut().filter(|r| r.exit.is_none()) {
                r.exit = match r.child.try_wait() {
                    Ok(Some(status)) => Some(Ok(status)),
                    Ok(None) => None,
                    Err(e) => Some(Err(e.to_string())),
                };
            }
            if self.running.iter().all(|r| r.exit.is_some()) {
                break;
            }
            if stopped_at.is_none() && stop.load(Ordering::SeqCst) {
                stopped_at = Some(Instant::now());
                for r in self.running.iter().filter(|r| r.exit.is_none()) {
                    // A child of ours not reaped yet: its pid is still its own.
                    let _ = signal(r.child.id(), Signal::TERM);
                }
            }
            if stopped_at.is_some_and(|t| t.elapsed() >= grace) {
                for r in self.running.iter_mut().filter(|r| r.exit.is_none()) {
                    r.killed = r.child.kill().is_ok();
                    r.exit = Some(r.child.wait().map_err(|e| e.to_string()));
                }
                break;
            }
            std::thread::sleep(POLL);
        }
        std::mem::take(&mut self.running)
            .into_iter()
            .map(|r| ShardExit {
                shard: r.shard,
                status: r.exit.unwrap_or_else(|| Err("not waited for".to_string())),
                killed: r.killed,
                stdout: r.stdout,
                log: r.log,
            })
            .collect()
    }
}

impl Drop for Children {
    fn drop(&mut self) {
        for r in self.running.iter_mut().filter(|r| r.exit.is_none()) {
            let _ = r.child.kill();
            let _ = r.child.wait();
        }
    }
}
