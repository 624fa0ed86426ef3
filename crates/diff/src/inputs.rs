//! The results files of a diff, read together: each query's results of every target gathered
//! by trace index, in bounded memory.
//!
//! Every file holds its results in completion order (trace order give or take the queries in
//! flight), and a file may hold several targets (`replay --server A --server B`), each going at
//! its own pace (with `--fast`, one target may be far ahead of another in the file). So each
//! target is read on its own, by a reader of its file that skips the other targets' results,
//! and the targets are read in step, always the one least far into the trace; each query's
//! results are held until every target's has come ([`Group`]), then the query is handed over.
//! A query still waiting for a target that has gone [`HORIZON`] records further into the trace
//! (or has ended) is handed over without the result it waits for (its result was lost, or
//! comes too late to be waited for); a result that comes after its query was handed over is
//! counted as late and left out. So memory holds only the queries in flight at each target,
//! whatever the length of the files.

use crate::DiffError;
use ldplayer_results::{Damage, Outcome, QueryResult, ResultsReader, RunInfo};
use std::collections::BTreeMap;
use std::fs::File;
use std::path::{Path, PathBuf};

/// How far (in trace records) a file may be past a query still waiting for its result before
/// the query is handed over without it.
pub const HORIZON: u64 = 1 << 20;

/// Results read between looks for queries to hand over.
const LOOK_EVERY: u64 = 4096;

/// One target's result for a query.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    /// The result.
    pub result: QueryResult,
    /// Its answer, byte for byte (answered queries of files that keep answers).
    pub answer: Option<Box<[u8]>>,
}

/// Every target's result for one query (`None` for a target whose result never came).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Group {
    /// The query's position in the trace.
    pub index: u64,
    /// Results by target (see [`Inputs::targets`]).
    pub entries: Vec<Option<Entry>>,
}

/// A target of the diff: a file's target.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Target {
    /// Its number in the diff, from 0: the files' targets in order.
    pub target: usize,
    /// The file it is in.
    pub file: PathBuf,
    /// Its target in that file.
    pub file_target: u16,
    /// The server, as the replay named it (`--server`), when the file says.
    pub server: Option<String>,
}

impl Target {
    /// `N (SERVER, FILE)` or `N (FILE)`, for people.
    pub fn label(&self) -> String {
        match &self.server {
            Some(s) => format!("{} ({s}, {})", self.target, self.file.display()),
            None => format!("{} ({})", self.target, self.file.display()),
        }
    }
}

/// What was read of one file.
#[derive(Debug, Clone, serde::Serialize)]
pub struct InputReport {
    /// The file.
    pub file: PathBuf,
    /// Results read.
    pub results: u64,
    /// Whether the run that wrote it finished (`None`: the file does not say).
    pub complete: Option<bool>,
    /// What its reader skipped (damaged blocks, a last block cut short).
    pub damage: Damage,
}

/// One target's results: a reader of its file that skips the other targets'.
struct Input {
    path: PathBuf,
    reader: ResultsReader<File>,
    /// The file's number among the inputs.
    file: usize,
    /// The target read, in the diff's numbering, and in its file's.
    target: usize,
    file_target: u16,
    /// Targets the file holds.
    file_targets: usize,
    /// The furthest trace index read.
    frontier: u64,
    done: bool,
}

/// A query waiting for the results of some targets.
struct Waiting {
    trace_ns: i64,
    /// The file the first result came from (for messages).
    first_file: usize,
    entries: Vec<Option<Entry>>,
    have: usize,
}

/// The results files of a diff, read together; see the [module docs](self).
pub struct Inputs {
    inputs: Vec<Input>,
    targets: Vec<Target>,
    waiting: BTreeMap<u64, Waiting>,
    /// Every query before this index was handed over.
    handed_below: u64,
    read: u64,
    late: u64,
    duplicates: u64,
    peak_waiting: usize,
    ready: Vec<Group>,
}

impl Inputs {
    /// Opens the results files; each must keep answers (`replay --keep-answers`).
    pub fn open(paths: &[PathBuf]) -> Result<Inputs, DiffError> {
        if paths.is_empty() {
            return Err(DiffError::Input("give at least one results file".into()));
        }
        let mut inputs = Vec::new();
        let mut targets = Vec::new();
        let open = |path: &PathBuf| {
            ResultsReader::open(path).map_err(|e| DiffError::Results {
                file: path.clone(),
                error: e,
            })
        };
        for (file, path) in paths.iter().enumerate() {
            let reader = open(path)?;
            if !reader.keeps_answers() {
                return Err(DiffError::NoAnswers(path.clone()));
            }
            let info = reader.run_info().cloned().unwrap_or_default();
            let names = info.targets.clone().unwrap_or_default();
            let n = names.len().clamp(1, usize::from(u16::MAX) + 1);
            let mut reader = Some(reader);
            for t in 0..n {
                targets.push(Target {
                    target: targets.len(),
                    file: path.clone(),
                    file_target: t as u16,
                    server: names.get(t).cloned(),
                });
                let reader = match reader.take() {
                    Some(r) => r,
                    None => open(path)?,
                };
                inputs.push(Input {
                    path: path.clone(),
                    reader,
                    file,
                    target: targets.len() - 1,
                    file_target: t as u16,
                    file_targets: n,
                    frontier: 0,
                    done: false,
                });
            }
        }
        Ok(Inputs {
            inputs,
            targets,
            waiting: BTreeMap::new(),
            handed_below: 0,
            read: 0,
            late: 0,
            duplicates: 0,
            peak_waiting: 0,
            ready: Vec::new(),
        })
    }

    /// The targets, in the diff's numbering.
    pub fn targets(&self) -> &[Target] {
        &self.targets
    }

    /// What the files' headers say of their runs.
    pub fn run_infos(&self) -> Vec<Option<RunInfo>> {
        self.first_of_each_file()
            .map(|i| i.reader.run_info().cloned())
            .collect()
    }

    /// The reader of each file's first target (every reader of a file reads all of it).
    fn first_of_each_file(&self) -> impl Iterator<Item = &Input> {
        self.inputs.iter().filter(|i| i.file_target == 0)
    }

    /// Results that came after their query was handed over, left out.
    pub fn late(&self) -> u64 {
        self.late
    }

    /// Results for a query and target that already had one, left out.
    pub fn duplicates(&self) -> u64 {
        self.duplicates
    }

    /// The most queries that waited for results at once: what the diff's memory follows.
    pub fn peak_waiting(&self) -> usize {
        self.peak_waiting
    }

    /// What was read of each file so far (final once [`next_group`](Self::next_group) has
    /// returned `None`).
    pub fn reports(&self) -> Vec<InputReport> {
        self.first_of_each_file()
            .map(|i| InputReport {
                file: i.path.clone(),
                results: i.reader.results_read(),
                complete: i.reader.complete(),
                damage: i.reader.damage(),
            })
            .collect()
    }

    /// The warnings of files whose run did not finish.
    pub fn incomplete_warnings(&self) -> Vec<String> {
        self.first_of_each_file()
            .filter_map(|i| i.reader.incomplete_warning(i.path.display()))
            .collect()
    }

    /// The next query with every target's result (or all that will come), `None` at the end.
    pub fn next_group(&mut self) -> Result<Option<Group>, DiffError> {
        loop {
            if let Some(g) = self.ready.pop() {
                return Ok(Some(g));
            }
            // Read from the target least far into the trace.
            let Some(i) = (0..self.inputs.len())
                .filter(|&i| !self.inputs[i].done)
                .min_by_key(|&i| self.inputs[i].frontier)
            else {
                // Every file has ended: hand over what waits, in trace order.
                let Some((index, w)) = self.waiting.pop_first() else {
                    return Ok(None);
                };
                self.handed_below = self.handed_below.max(index + 1);
                return Ok(Some(Group {
                    index,
                    entries: w.entries,
                }));
            };
            self.read_one(i)?;
            self.read += 1;
            if self.read.is_multiple_of(LOOK_EVERY) || self.inputs[i].done {
                self.hand_over_stale();
            }
        }
    }

    /// Reads target `i`'s next result (skipping the other targets' in its file).
    fn read_one(&mut self, i: usize) -> Result<(), DiffError> {
        let n_targets = self.targets.len();
        let input = &mut self.inputs[i];
        let (result, answer) = loop {
            let got = input
                .reader
                .next_with_answer()
                .map_err(|e| DiffError::Results {
                    file: input.path.clone(),
                    error: e,
                })?;
            let Some((result, answer)) = got else {
                input.done = true;
                return Ok(());
            };
            if usize::from(result.target) >= input.file_targets {
                return Err(DiffError::Input(format!(
                    "{}: a result for target {}, and the file names {} target{}",
                    input.path.display(),
                    result.target,
                    input.file_targets,
                    if input.file_targets == 1 { "" } else { "s" }
                )));
            }
            if result.target == input.file_target {
                break (result, answer.map(Box::<[u8]>::from));
            }
        };
        input.frontier = input.frontier.max(result.index);
        let target = input.target;
        if result.index < self.handed_below && !self.waiting.contains_key(&result.index) {
            self.late += 1;
            return Ok(());
        }
        let entry = Entry { result, answer };
        let file = self.inputs[i].file;
        let w = self.waiting.entry(result.index).or_insert_with(|| Waiting {
            trace_ns: result.trace_ns,
            first_file: file,
            entries: vec![None; n_targets],
            have: 0,
        });
        if w.trace_ns != result.trace_ns {
            let path_of = |file: usize| {
                self.inputs
                    .iter()
                    .find(|i| i.file == file)
                    .map(|i| i.path.clone())
                    .unwrap_or_default()
            };
            return Err(DiffError::DifferentTraces {
                first: path_of(w.first_file),
                second: path_of(file),
                index: result.index,
            });
        }
        if w.entries[target].is_some() {
            self.duplicates += 1;
            return Ok(());
        }
        w.entries[target] = Some(entry);
        w.have += 1;
        let complete = w.have == n_targets;
        self.peak_waiting = self.peak_waiting.max(self.waiting.len());
        if complete {
            if let Some(w) = self.waiting.remove(&result.index) {
                self.ready.push(Group {
                    index: result.index,
                    entries: w.entries,
                });
            }
        }
        Ok(())
    }

    /// Hands over the queries waiting only for targets that have ended or gone [`HORIZON`]
    /// records past them, oldest first.
    fn hand_over_stale(&mut self) {
        while let Some((&index, w)) = self.waiting.first_key_value() {
            let stale = self.inputs.iter().all(|input| {
                w.entries[input.target].is_some()
                    || input.done
                    || input.frontier > index.saturating_add(HORIZON)
            });
            if !stale {
                break;
            }
            if let Some((index, w)) = self.waiting.pop_first() {
                self.handed_below = self.handed_below.max(index + 1);
                self.ready.push(Group {
                    index,
                    entries: w.entries,
                });
            }
        }
    }

    /// The file of target `target`.
    pub fn file_of(&self, target: usize) -> &Path {
        &self.targets[target].file
    }

    /// The outcome name of an entry, for reports.
    pub fn outcome_name(entry: Option<&Entry>) -> &'static str {
        entry.map_or("no result", |e| match e.result.outcome {
            Outcome::Answered if e.answer.is_none() => "answered (answer not kept)",
            o => o.name(),
        })
    }
}
