//! The results files of a diff, read together: each query's results of every target gathered
//! by trace index, in bounded memory.
//!
//! Every file holds its results in completion order (trace order give or take the queries in
//! flight), and a file may hold several targets (`replay --server A --server B`). The files are
//! read in step, always from the one that is least far into the trace, and each query's results
//! are held until every target's has come ([`Group`]); then the query is handed over. A query
//! still waiting for a file that has gone [`HORIZON`] records further into the trace (or has
//! ended) is handed over without the result it waits for (its result was lost, or comes too
//! late to be waited for); a result that comes after its query was handed over is counted as
//! late and left out. So memory holds only the queries in flight between the targets, whatever
//! the length of the files.

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

struct Input {
    path: PathBuf,
    reader: ResultsReader<File>,
    /// The first of this file's targets in the diff's numbering.
    first_target: usize,
    targets: usize,
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
        for path in paths {
            let reader = ResultsReader::open(path).map_err(|e| DiffError::Results {
                file: path.clone(),
                error: e,
            })?;
            if !reader.keeps_answers() {
                return Err(DiffError::NoAnswers(path.clone()));
            }
            let info = reader.run_info().cloned().unwrap_or_default();
            let names = info.targets.clone().unwrap_or_default();
            let n = names.len().max(1);
            let first = targets.len();
            for t in 0..n {
                targets.push(Target {
                    target: first + t,
                    file: path.clone(),
                    file_target: t as u16,
                    server: names.get(t).cloned(),
                });
            }
            inputs.push(Input {
                path: path.clone(),
                reader,
                first_target: first,
                targets: n,
                frontier: 0,
                done: false,
            });
        }
        Ok(Inputs {
            inputs,
            targets,
            waiting: BTreeMap::new(),
            handed_below: 0,
            read: 0,
            late: 0,
            duplicates: 0,
            ready: Vec::new(),
        })
    }

    /// The targets, in the diff's numbering.
    pub fn targets(&self) -> &[Target] {
        &self.targets
    }

    /// What the files' headers say of their runs.
    pub fn run_infos(&self) -> Vec<Option<RunInfo>> {
        self.inputs
            .iter()
            .map(|i| i.reader.run_info().cloned())
            .collect()
    }

    /// Results that came after their query was handed over, left out.
    pub fn late(&self) -> u64 {
        self.late
    }

    /// Results for a query and target that already had one, left out.
    pub fn duplicates(&self) -> u64 {
        self.duplicates
    }

    /// What was read of each file so far (final once [`next_group`](Self::next_group) has
    /// returned `None`).
    pub fn reports(&self) -> Vec<InputReport> {
        self.inputs
            .iter()
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
        self.inputs
            .iter()
            .filter_map(|i| i.reader.incomplete_warning(i.path.display()))
            .collect()
    }

    /// The next query with every target's result (or all that will come), `None` at the end.
    pub fn next_group(&mut self) -> Result<Option<Group>, DiffError> {
        loop {
            if let Some(g) = self.ready.pop() {
                return Ok(Some(g));
            }
            // Read from the file least far into the trace.
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

    fn read_one(&mut self, i: usize) -> Result<(), DiffError> {
        let n_targets = self.targets.len();
        let input = &mut self.inputs[i];
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
        input.frontier = input.frontier.max(result.index);
        if usize::from(result.target) >= input.targets {
            return Err(DiffError::Input(format!(
                "{}: a result for target {}, and the file names {} target{}",
                input.path.display(),
                result.target,
                input.targets,
                if input.targets == 1 { "" } else { "s" }
            )));
        }
        let target = input.first_target + usize::from(result.target);
        if result.index < self.handed_below && !self.waiting.contains_key(&result.index) {
            self.late += 1;
            return Ok(());
        }
        let entry = Entry {
            result,
            answer: answer.map(Box::from),
        };
        let w = self.waiting.entry(result.index).or_insert_with(|| Waiting {
            trace_ns: result.trace_ns,
            first_file: i,
            entries: vec![None; n_targets],
            have: 0,
        });
        if w.trace_ns != result.trace_ns {
            return Err(DiffError::DifferentTraces {
                first: self.inputs[w.first_file].path.clone(),
                second: self.inputs[i].path.clone(),
                index: result.index,
            });
        }
        if w.entries[target].is_some() {
            self.duplicates += 1;
            return Ok(());
        }
        w.entries[target] = Some(entry);
        w.have += 1;
        if w.have == n_targets {
            if let Some(w) = self.waiting.remove(&result.index) {
                self.ready.push(Group {
                    index: result.index,
                    entries: w.entries,
                });
            }
        }
        Ok(())
    }

    /// Hands over the queries waiting only for files that have ended or gone [`HORIZON`]
    /// records past them, oldest first.
    fn hand_over_stale(&mut self) {
        while let Some((&index, w)) = self.waiting.first_key_value() {
            let stale = self.inputs.iter().all(|input| {
                let wanted = (input.first_target..input.first_target + input.targets)
                    .any(|t| w.entries[t].is_none());
                !wanted || input.done || input.frontier > index.saturating_add(HORIZON)
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
