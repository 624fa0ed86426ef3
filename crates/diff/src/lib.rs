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
    #[error("{first} and {second} are results of different traces (query {index} was at another time in each): diff compares replays of one trace", first = first.display(), second = second.display())]
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
    if let Some(&bad) = references.iter().find(|&&r| r >= targets.len() || r == tested) {
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
    while let Some(group) = inputs.next_group()? {
        differ.group(&group, rows.as_deref_mut());
    }
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
        warnings,
        differ,
    })
}

impl DiffRun {
    /// The report, with what re-asking found and the bounds checked.
    pub fn report(&self, reask: Option<(ReaskReport, Vec<u64>)>, bounds: &[Bound]) -> DiffReport {
        DiffReport::new(
            &self.differ,
            self.targets.clone(),
            self.inputs.clone(),
            self.left_out,
            reask,
            bounds,
            self.warnings.clone(),
        )
    }
}
