//! One replay as shard processes, from start to merged results: the shared start, the folder
//! of the shards' files, starting each shard through the caller's command, waiting with the
//! stop passed on, and merging the shards' results into one file.

use super::children::{Children, ShardExit};
use super::error::ShardsError;
use ldplayer_results::shard_checks::late_warning;
use ldplayer_results::{
    mark_complete, merge, InputReport, MergeReport, ResultsReader, ResultsWriter, RunInfo, ShardId,
    MERGE_WINDOW,
};
use std::error::Error;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;
use tempfile::TempDir;

/// How far ahead of now the shared start is set when the caller gives none: time enough for
/// every process to start and read its first queries.
pub const START_AHEAD: Duration = Duration::from_secs(2);

/// How long the processes are given to finish their results after a stop before they are
/// killed: a replay told to stop waits for the answers in flight (timeouts of seconds) and
/// writes its last block.
pub const STOP_GRACE: Duration = Duration::from_secs(30);

/// Where the shards' files go.
#[derive(Debug, Clone)]
pub enum Scratch {
    /// A new temporary folder (`ldplayer-shards-*`) inside this one, removed with everything
    /// in it when the [`ShardsDone`] is dropped: for a replay whose only output is the merge.
    Temporary(PathBuf),
    /// This folder, kept: each shard's logs and whatever the caller's command writes beside
    /// them stay for inspection; only the shards' results files go once they are merged.
    Kept(PathBuf),
}

/// The folder of a run, removed at the end or kept.
enum Folder {
    Temporary(TempDir),
    Kept(PathBuf),
}

impl Folder {
    fn path(&self) -> &Path {
        match self {
            Folder::Temporary(t) => t.path(),
            Folder::Kept(p) => p,
        }
    }
}

/// What the caller's command builder is told about the shard it starts.
#[derive(Debug, Clone, Copy)]
pub struct ShardContext<'a> {
    /// The shard: its index and the count.
    pub shard: ShardId,
    /// The shared start of the schedule (`CLOCK_REALTIME` ns).
    pub start_ns: i64,
    /// The folder of the shards' files.
    pub folder: &'a Path,
    /// The results file the shard must write: the merge reads it from here.
    pub results: &'a Path,
}

impl ShardContext<'_> {
    /// A file of this shard in the folder, `shard-I.EXT`, for what the caller writes beside
    /// (a side configuration, the shard's own counters).
    pub fn file(&self, ext: &str) -> PathBuf {
        shard_file(self.folder, self.shard.index, ext)
    }
}

/// The file `shard-I.EXT` in `folder`.
fn shard_file(folder: &Path, index: u32, ext: &str) -> PathBuf {
    folder.join(format!("shard-{index}.{ext}"))
}

/// A replay to run as shard processes on this host: how many, from which start, where their
/// files go and how long they may take to stop.
#[derive(Debug, Clone)]
pub struct ShardProcesses {
    count: u32,
    start_ns: Option<i64>,
    scratch: Scratch,
    grace: Duration,
}

impl ShardProcesses {
    /// `count` shard processes, their files in `scratch`, starting [`START_AHEAD`] from when
    /// they are started, given [`STOP_GRACE`] to stop.
    pub fn new(count: u32, scratch: Scratch) -> ShardProcesses {
        ShardProcesses {
            count,
            start_ns: None,
            scratch,
            grace: STOP_GRACE,
        }
    }

    /// The shared start (`CLOCK_REALTIME` ns) when the caller has one; `None` chooses
    /// [`START_AHEAD`] from now.
    pub fn start_ns(mut self, start_ns: Option<i64>) -> ShardProcesses {
        self.start_ns = start_ns;
        self
    }

    /// How long the processes have to finish after a stop before they are killed.
    pub fn grace(mut self, grace: Duration) -> ShardProcesses {
        self.grace = grace;
        self
    }

    /// Starts every shard with the command `command` makes for it (the orchestrator sets its
    /// standard input, output and error) and waits for them all; once `stop` is set they are
    /// told to stop (SIGTERM) and killed after the grace period. An error while starting them
    /// kills those already started.
    pub fn run<F>(&self, stop: &AtomicBool, mut command: F) -> Result<ShardsDone, ShardsError>
    where
        F: FnMut(&ShardContext<'_>) -> Result<Command, Box<dyn Error + Send + Sync>>,
    {
        if self.count == 0 {
            return Err(ShardsError::NoShards);
        }
        let folder = match &self.scratch {
            Scratch::Temporary(inside) => Folder::Temporary(
                tempfile::Builder::new()
                    .prefix("ldplayer-shards-")
                    .tempdir_in(inside)
                    .map_err(|e| ShardsError::io(inside, e))?,
            ),
            Scratch::Kept(dir) => {
                std::fs::create_dir_all(dir).map_err(|e| ShardsError::io(dir, e))?;
                Folder::Kept(dir.clone())
            }
        };
        let start_ns = self.start_ns.unwrap_or_else(|| {
            let ahead = i64::try_from(START_AHEAD.as_nanos()).unwrap_or(i64::MAX);
            ldplayer_system::clock::realtime_ns().saturating_add(ahead)
        });
        let results: Vec<PathBuf> = (0..self.count)
            .map(|i| shard_file(folder.path(), i, "res"))
            .collect();
        let mut children = Children::default();
        for (index, file) in (0..self.count).zip(&results) {
            let shard = ShardId {
                index,
                count: self.count,
            };
            let context = ShardContext {
                shard,
                start_ns,
                folder: folder.path(),
                results: file,
            };
            let cmd = command(&context).map_err(|source| ShardsError::Command {
                shard: shard.to_string(),
                source,
            })?;
            children.spawn(shard, cmd, context.file("out"), context.file("log"))?;
        }
        let exits = children.wait(stop, self.grace);
        Ok(ShardsDone {
            stopped: stop.load(Ordering::SeqCst),
            folder,
            start_ns,
            exits,
            results,
        })
    }
}

/// The shard processes, ended: how each ended, and their results to merge.
pub struct ShardsDone {
    folder: Folder,
    start_ns: i64,
    stopped: bool,
    exits: Vec<ShardExit>,
    results: Vec<PathBuf>,
}

/// The shards' results merged into one file.
#[derive(Debug)]
pub struct Merged {
    /// The merged results file.
    pub path: PathBuf,
    /// What the merge read from each shard that left a results file, and what it wrote.
    pub report: MergeReport,
    /// True when the file was marked complete: every shard ended with success, none was
    /// stopped, and every shard's results are there and finished.
    pub complete: bool,
    /// A warning for each shard that began after the shared start (its queries due before
    /// then recorded as `late-start`, never sent).
    pub late: Vec<String>,
}

impl ShardsDone {
    /// The shared start the shards were given (`CLOCK_REALTIME` ns).
    pub fn start_ns(&self) -> i64 {
        self.start_ns
    }

    /// The folder of the shards' files.
    pub fn folder(&self) -> &Path {
        self.folder.path()
    }

    /// How each shard process ended, in shard order.
    pub fn exits(&self) -> &[ShardExit] {
        &self.exits
    }

    /// The file `shard-I.EXT` of `shard` in the folder, as [`ShardContext::file`] named it.
    pub fn shard_file(&self, shard: ShardId, ext: &str) -> PathBuf {
        shard_file(self.folder(), shard.index, ext)
    }

    /// The shard processes that did not end with success.
    pub fn failed(&self) -> impl Iterator<Item = &ShardExit> {
        self.exits.iter().filter(|e| !e.success())
    }

    /// True when the stop flag was set by the end.
    pub fn stopped(&self) -> bool {
        self.stopped
    }

    /// Merges the results of every shard that left some, in trace order, into `into` (a file
    /// in the folder, `merged.res`, when `None`), written with `info` as unfinished and marked
    /// complete at the end when the whole replay finished ([`Merged::complete`]). With a kept
    /// folder the shards' own results files are removed once merged.
    pub fn merge(&self, into: Option<&Path>, info: &RunInfo) -> Result<Merged, ShardsError> {
        let path = into.map_or_else(|| self.folder().join("merged.res"), Path::to_path_buf);
        let present: Vec<&PathBuf> = self.results.iter().filter(|f| f.exists()).collect();
        let readers = present
            .iter()
            .map(|f| {
                ResultsReader::open(f).map_err(|source| ShardsError::Results {
                    path: f.to_path_buf(),
                    source,
                })
            })
            .collect::<Result<Vec<_>, _>>()?;
        let info = RunInfo {
            complete: Some(false),
            ..info.clone()
        };
        let mut out = ResultsWriter::create_with_run_info(&path, &info)
            .map_err(|e| ShardsError::io(&path, e))?;
        let report =
            merge(readers, &mut out, MERGE_WINDOW).map_err(|source| ShardsError::Results {
                path: path.clone(),
                source,
            })?;
        out.into_inner().map_err(|e| ShardsError::io(&path, e))?;
        let late = present
            .iter()
            .zip(&report.inputs)
            .filter(|(_, input)| input.late_start > 0)
            .map(|(file, input)| late_warning(file, input))
            .collect();
        let complete = !self.stopped
            && self.exits.iter().all(ShardExit::success)
            && present.len() == self.results.len()
            && !report.inputs.iter().any(InputReport::unfinished);
        if complete {
            mark_complete(&path).map_err(|e| ShardsError::io(&path, e))?;
        }
        if let Folder::Kept(_) = self.folder {
            for f in &present {
                let _ = std::fs::remove_file(f);
            }
        }
        Ok(Merged {
            path,
            report,
            complete,
            late,
        })
    }
}
