//! Answer differences between DNS servers, as CZ-NIC's respdiff finds them, from the answers
//! ldplayer's replays keep (`replay --keep-answers`).
//!
//! Several results files (or one file of a replay to several servers) hold each query's answer
//! from several targets, matched by trace index ([`inputs`]). One target is tested, the others
//! are references. Each query's answers are compared field by field ([`Field`]) under chosen
//! [`Criteria`] (which fields, and whether TTLs, the case of names and RRSIG signatures count):
//! a query where the references disagree among themselves is *unstable* and kept out of the
//! other counts; otherwise the tested answer differs from the references' in some fields or in
//! none ([`Differ`]). The report ([`DiffReport`]) gives, by field, the number and share of
//! compared queries that differ and the most frequent differing (qname, qtype) pairs with both
//! answers in presentation format; bounds ([`Bound`]) turn it into a pass or a fail for CI.
//! Differences can be re-asked ([`Differ::reassess`]): one that does not repeat, or whose
//! answers vary within one target, is not reproducible, and counted apart.
//!
//! Everything streams: memory holds the queries in flight between the files and a bounded
//! number of examples per field, not the queries of the trace.

#![forbid(unsafe_code)]

mod canon;
pub mod criteria;
mod differ;
mod field;
pub mod inputs;
pub mod present;
pub mod report;
pub mod tally;

pub use canon::{Canon, Kind};
pub use criteria::{Criteria, CriteriaError, RrsigMode};
pub use differ::{Counts, DiffRow, Differ, Differing};
pub use field::Field;
pub use inputs::{Group, InputReport, Inputs, Target};
pub use report::{Bound, BoundCheck, DiffReport, FieldRow, ReaskReport, CSV_COLUMNS};

use std::path::PathBuf;

/// Why a diff cannot be made.
#[derive(Debug, thiserror::Error)]
pub enum DiffError {
    /// A results file that cannot be read.
    #[error("{file}: {error}", file = file.display())]
    Results {
        /// The file.
        file: PathBuf,
        /// What went wrong.
        error: ldplayer_results::ResultsError,
    },
    /// A results file without answers.
    #[error("{file} holds no answers: replay with --keep-answers (and --results) to keep them", file = .0.display())]
    NoAnswers(PathBuf),
    /// Two files of different traces.
    #[error("{first} and {second} are results of different traces (query {index} is another query in each: another time, or another question): diff compares replays of one trace", first = first.display(), second = second.display())]
    DifferentTraces {
        /// The first file.
        first: PathBuf,
        /// The other.
        second: PathBuf,
        /// A query where they differ.
        index: u64,
    },
    /// A criteria file that cannot be used.
    #[error("criteria: {0}")]
    Criteria(#[from] CriteriaError),
    /// Anything else about the inputs or options.
    #[error("{0}")]
    Input(String),
}

/// How to diff.
#[derive(Debug, Clone, Default)]
pub struct Options {
    /// What to compare and how.
    pub criteria: Criteria,
    /// The tested target (`None`: the last).
    pub tested: Option<usize>,
    /// The references (empty: every other target).
    pub references: Vec<usize>,
    /// Differing queries remembered for re-asking (0: none).
    pub keep_differing: usize,
}

/// A diff run over its inputs, before its report.
pub struct DiffRun {
    /// The comparison, with its counts.
    pub differ: Differ,
    /// The targets.
    pub targets: Vec<Target>,
    /// What was read of each file.
    pub inputs: Vec<InputReport>,
    /// Results too late, and repeated, left out.
    pub left_out: (u64, u64),
    /// The most queries that waited for a target's result at once.
    pub peak_waiting: usize,
    /// Incomplete files and the like.
    pub warnings: Vec<String>,
}

/// Diffs the answers of the results files `paths`: reads them in step, compares every query,
/// hands each differing query and field to `rows` when given (for `--csv`).
pub fn diff(
    paths: &[PathBuf],
    options: &Options,
    mut rows: Option<&mut dyn FnMut(DiffRow)>,
) -> Result<DiffRun, DiffError> {
    let mut inputs = Inputs::open(paths)?;
    let targets = inputs.targets().to_vec();
    if targets.len() < 2 {
        return Err(DiffError::Input(format!(
            "{} holds the answers of one target: give the results of at least two (several \
             files, or a replay with --server given for each)",
            paths[0].display()
        )));
    }
    let tested = options.tested.unwrap_or(targets.len() - 1);
    if tested >= targets.len() {
        return Err(DiffError::Input(format!(
            "--target {tested}: there are {} targets, from 0: {}",
            targets.len(),
            targets
                .iter()
                .map(Target::label)
                .collect::<Vec<_>>()
                .join("; ")
        )));
    }
    let list = || {
        targets
            .iter()
            .map(Target::label)
            .collect::<Vec<_>>()
            .join("; ")
    };
    let references: Vec<usize> = if options.references.is_empty() {
        (0..targets.len()).filter(|&t| t != tested).collect()
    } else {
        let mut r = options.references.clone();
        r.sort_unstable();
        r.dedup();
        r
    };
    if let Some(&bad) = references
        .iter()
        .find(|&&r| r >= targets.len() || r == tested)
    {
        return Err(DiffError::Input(if bad == tested {
            format!("--reference {bad} is the tested target: a target is not its own reference")
        } else {
            format!(
                "--reference {bad}: there are {} targets, from 0: {}",
                targets.len(),
                list()
            )
        }));
    }
    let mut differ = Differ::new(
        options.criteria.clone(),
        targets.len(),
        tested,
        references,
        options.keep_differing,
    );
    let mut check = TraceCheck::default();
    while let Some(group) = inputs.next_group()? {
        check.group(&group, &targets)?;
        differ.group(&group, rows.as_deref_mut());
    }
    check.verdict(&targets)?;
    let mut warnings = inputs.incomplete_warnings();
    for i in inputs.reports() {
        if !i.damage.is_clean() {
            warnings.push(format!("{}: {}", i.file.display(), i.damage));
        }
    }
    if inputs.late() > 0 {
        warnings.push(format!(
            "{} results came after their query had been compared without them (more than {} \
             records out of trace order), left out",
            inputs.late(),
            inputs::HORIZON
        ));
    }
    if inputs.duplicates() > 0 {
        warnings.push(format!(
            "{} results repeat a query's result for its target, left out",
            inputs.duplicates()
        ));
    }
    Ok(DiffRun {
        targets,
        inputs: inputs.reports(),
        left_out: (inputs.late(), inputs.duplicates()),
        peak_waiting: inputs.peak_waiting(),
        warnings,
        differ,
    })
}

/// Groups looked at to tell files of different traces apart by their questions.
const TRACE_CHECK_GROUPS: u64 = 1000;

/// Tells files of different traces apart: the same trace asks the same question at each index,
/// so answers from two files to one query ask the same question (a server that answers
/// another question is a difference in `question`, not the rule). Over the first
/// [`TRACE_CHECK_GROUPS`] queries answered in two files, half asking other questions is another
/// trace. (Results of different traces at the same trace times, which the join of results
/// refuses first, get here.)
#[derive(Default)]
struct TraceCheck {
    looked: u64,
    other_question: u64,
    first_pair: Option<(usize, usize, u64)>,
}

impl TraceCheck {
    fn group(&mut self, g: &Group, targets: &[Target]) -> Result<(), DiffError> {
        if self.looked >= TRACE_CHECK_GROUPS {
            return Ok(());
        }
        let mut first: Option<(usize, (Vec<u8>, u16))> = None;
        for (t, e) in g.entries.iter().enumerate() {
            let Some(q) = e
                .as_ref()
                .and_then(|e| e.answer.as_deref())
                .and_then(question_key)
            else {
                continue;
            };
            match &first {
                None => first = Some((t, q)),
                Some((f, fq)) if targets[*f].file != targets[t].file => {
                    self.looked += 1;
                    if *fq != q {
                        self.other_question += 1;
                        self.first_pair.get_or_insert((*f, t, g.index));
                    }
                    break;
                }
                Some(_) => {}
            }
        }
        if self.looked >= 20 {
            self.verdict(targets)?;
        }
        Ok(())
    }

    /// An error when most queries answered in two files ask other questions in each.
    fn verdict(&self, targets: &[Target]) -> Result<(), DiffError> {
        match self.first_pair {
            Some((a, b, index)) if self.other_question * 2 > self.looked => {
                Err(DiffError::DifferentTraces {
                    first: targets[a].file.clone(),
                    second: targets[b].file.clone(),
                    index,
                })
            }
            _ => Ok(()),
        }
    }
}

/// A message's first question: its name lowercased, and its type.
fn question_key(answer: &[u8]) -> Option<(Vec<u8>, u16)> {
    let msg = ldplayer_dns::Message::parse(answer).ok()?;
    let mut name = Vec::new();
    if !msg.qname_wire(&mut name) {
        return None;
    }
    name.make_ascii_lowercase();
    Some((name, msg.qtype()?.0))
}

impl DiffRun {
    /// The report, with what re-asking found and the bounds checked.
    pub fn report(&self, reask: Option<(ReaskReport, Vec<u64>)>, bounds: &[Bound]) -> DiffReport {
        let mut report = DiffReport::new(
            &self.differ,
            self.targets.clone(),
            self.inputs.clone(),
            self.left_out,
            reask,
            bounds,
            self.warnings.clone(),
        );
        report.peak_waiting = self.peak_waiting;
        report
    }
}
