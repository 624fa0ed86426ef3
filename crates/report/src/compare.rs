//! Two replays or experiments of one trace, metric by metric, with regression bounds.
//!
//! Each input is read into named values ([`Measured`]): a replay's results file gives
//! `answered_share`, `timeout_share`, `error_share`, `rcode_share.RCODE` and
//! `latency_ms.PROTO.STAT` / `handshake_ms.PROTO.STAT`; an experiment folder gives
//! `METRIC.STAT@RUN` for every row of its `summary.csv` and `rcode_share.RCODE@RUN` from each
//! run's results file. [`compare`] pairs the values by name (an experiment's runs by their
//! varied values and repeat, [`RunPair`]), tells for each whether NEW is better or worse than
//! BASE (each metric knows which way is worse, [`Worse`]) and checks the [`Bound`]s: how much a
//! metric may worsen, in percent of BASE. [`compare_with`] also sets BASE's metrics of one
//! transport against NEW's of another ([`TransportPair`], `--as udp=tls`). The names, the
//! verdicts and the JSON keys are documented in `docs/cli.md`.

mod bound;
mod change;
mod experiment_input;
mod metric;
mod pairing;
mod replay_input;
mod summary_csv;
mod text;
mod transport;
mod warnings;

pub use bound::Bound;
pub use experiment_input::{read_experiment, worse_of};
pub use metric::{full_name, InputKind, Measure, Measured, TraceMark, Worse};
pub use pairing::RunPair;
pub use replay_input::{read_results, ReadResults};
pub use summary_csv::{parse as parse_summary_csv, CsvRow, STATS as SUMMARY_STATS};
pub use text::{change_text, value_text, verdict_text};
pub use transport::{transport_name, TransportPair};

use crate::ReportError;
pub use change::{change_pct, worsening_pct};

use change::{exceeds, verdict};
use pairing::Pairing;
use replay_input::{align_rcode_shares, push_replay_metrics};
use serde::Serialize;
use std::collections::{BTreeSet, HashMap};
use std::io::Read;
use std::path::Path;
use warnings::warnings;

/// How a metric of NEW stands against BASE.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Verdict {
    /// The same value (but for rounding: a relative difference under 1e-9).
    Same,
    /// Changed the good way.
    Better,
    /// Changed the bad way.
    Worse,
    /// Changed, for a metric with no bad direction ([`Worse::Either`]).
    Changed,
    /// Only BASE has it (NEW had no answers over that transport, lacks that run...).
    OnlyBase,
    /// Only NEW has it.
    OnlyNew,
}

/// Whether a metric stayed within its bound.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum BoundVerdict {
    /// Within: it worsened by at most the bound (or improved, or only NEW has it).
    Ok,
    /// Worsened past the bound, or NEW no longer has it.
    Exceeded,
}

/// One metric of both inputs.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Row {
    /// What bounds name: the metric, then `@RUN` for a run of an experiment.
    pub name: String,
    /// The metric without its run.
    pub metric: String,
    /// The experiment run (`null` for replays): BASE's, or NEW's for a run only NEW has.
    pub run: Option<String>,
    /// NEW's run paired with it (`null` for replays and for a run only BASE has): the same
    /// name, or another number with the same varied values, or another transport (`--as`).
    pub new_run: Option<String>,
    /// Which change is a regression.
    pub worse: Worse,
    /// BASE's value (`null` when BASE lacks it).
    pub base: Option<f64>,
    /// NEW's value (`null` when NEW lacks it).
    pub new: Option<f64>,
    /// (NEW − BASE) / |BASE| in percent; `null` when either lacks it or BASE is 0 and NEW not.
    pub change_pct: Option<f64>,
    /// How NEW stands against BASE.
    pub verdict: Verdict,
    /// The tightest bound that applies, in percent (`null`: none).
    pub bound_pct: Option<f64>,
    /// Whether the metric kept to it (`null`: no bound).
    pub bound: Option<BoundVerdict>,
}

/// One `--max-regression` bound and what it found.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct BoundCheck {
    /// As given: `METRIC=PCT`.
    pub bound: String,
    /// The metric part.
    pub metric: String,
    /// The worsening allowed, in percent of BASE.
    pub pct: f64,
    /// The names of the rows it applies to.
    pub checked: Vec<String>,
    /// Those that worsened past it (or that NEW lacks).
    pub exceeded: Vec<String>,
}

/// One input, as the comparison names it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Side {
    /// The path given.
    pub path: String,
    /// Queries in its results (over all runs of an experiment that have a results file).
    pub queries: u64,
    /// The earliest trace time of a query, ns since the epoch (replays; `null` for an empty
    /// results file and for experiments).
    pub first_trace_ns: Option<i64>,
    /// An experiment's runs, in its order (empty for a replay).
    pub runs: Vec<String>,
}

impl Side {
    fn of(m: &Measured) -> Side {
        Side {
            path: m.path.display().to_string(),
            queries: m.traces.values().map(|t| t.queries).sum(),
            first_trace_ns: match m.kind {
                InputKind::Replay => m.traces.get("").and_then(|t| t.first_trace_ns),
                InputKind::Experiment => None,
            },
            runs: m.runs.clone(),
        }
    }
}

/// Two inputs metric by metric: what `ldplayer compare --json` prints.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Comparison {
    /// What both inputs are.
    pub kind: InputKind,
    /// The first input, the reference.
    pub base: Side,
    /// The second input, checked against it.
    pub new: Side,
    /// What may make the comparison unfair or incomplete: different traces, runs only one
    /// input has, damaged results files.
    pub warnings: Vec<String>,
    /// Every metric of either input, BASE's order first.
    pub metrics: Vec<Row>,
    /// Every bound, in the order given.
    pub bounds: Vec<BoundCheck>,
    /// Whether some bound was exceeded.
    pub regressed: bool,
    /// The `--as` transport pairs, as rows name them (`udp=tls`).
    #[serde(rename = "as")]
    pub transport_pairs: Vec<String>,
    /// How the runs of two experiments paired: BASE's runs in order, each with its partner
    /// (`new` `null` when it has none), then NEW's runs without partner (empty for replays).
    pub run_pairs: Vec<RunPair>,
    /// How many metrics both inputs have: 0 when nothing was compared.
    pub shared: usize,
}

impl Comparison {
    /// The rows that exceeded their bound.
    pub fn exceeded(&self) -> impl Iterator<Item = &Row> {
        self.metrics
            .iter()
            .filter(|r| r.bound == Some(BoundVerdict::Exceeded))
    }
}

/// Reads `base` and `new` (two results files or two experiment folders) and compares them,
/// checking `bounds`. A bound that applies to no metric of either input is an error naming the
/// metrics there are.
pub fn compare(base: &Path, new: &Path, bounds: &[Bound]) -> Result<Comparison, ReportError> {
    compare_with(base, new, bounds, &[])
}

/// [`compare`], with BASE's metrics of each pair's BASE transport set against NEW's of its NEW
/// transport: for replays, `latency_ms.udp=tls.p50` is BASE's UDP median against NEW's TLS
/// median; for experiments, BASE's runs with `proto=udp` pair with NEW's with `proto=tls`. A
/// transport a side did not use is an error.
pub fn compare_with(
    base: &Path,
    new: &Path,
    bounds: &[Bound],
    transports: &[TransportPair],
) -> Result<Comparison, ReportError> {
    let b = read_input(base)?;
    let n = read_input(new)?;
    if b.kind != n.kind {
        return Err(ReportError::KindMismatch {
            base: base.to_path_buf(),
            base_kind: b.kind.described(),
            new: new.to_path_buf(),
            new_kind: n.kind.described(),
        });
    }
    compare_read(b, n, bounds, transports)
}

/// Compares what two inputs of the same kind measured (see [`compare`]).
pub fn compare_measured(
    base: &Measured,
    new: &Measured,
    bounds: &[Bound],
) -> Result<Comparison, ReportError> {
    compare_read(base.clone(), new.clone(), bounds, &[])
}

/// Pairs the inputs' runs or transports, then their metrics, and checks the bounds.
fn compare_read(
    mut base: Measured,
    mut new: Measured,
    bounds: &[Bound],
    transports: &[TransportPair],
) -> Result<Comparison, ReportError> {
    let sides = (Side::of(&base), Side::of(&new));
    let pairing = match base.kind {
        InputKind::Replay => {
            transport::pair_replay_transports(&mut base, &mut new, transports)?;
            for bound in bounds {
                transport::check_bound_transport(bound, &base, &new, transports)?;
            }
            Pairing::default()
        }
        InputKind::Experiment => {
            let pairing = pairing::pair_runs(&base, &new, transports)?;
            pairing::apply(&pairing, &mut base, &mut new);
            pairing
        }
    };
    align_rcode_shares(&mut base, &mut new);
    let mut metrics = rows(&base, &new, &pairing);
    let checks = check_bounds(&mut metrics, bounds)?;
    let shared = metrics
        .iter()
        .filter(|r| r.base.is_some() && r.new.is_some())
        .count();
    let mut warnings = warnings(&base, &new, &pairing);
    if shared == 0 && !metrics.is_empty() {
        warnings.push(match base.kind {
            InputKind::Experiment if !pairing.any_paired() => {
                "BASE and NEW share no metric: no run of NEW has the varied values and repeat of \
                 a run of BASE, nothing is compared"
                    .to_string()
            }
            _ => "BASE and NEW share no metric: nothing is compared".to_string(),
        });
    }
    warnings.extend(match base.kind {
        InputKind::Replay => transport::replay_hint(&base, &new, transports),
        InputKind::Experiment => pairing::hint(&base, &new, &pairing),
    });
    let regressed = checks.iter().any(|c| !c.exceeded.is_empty());
    Ok(Comparison {
        kind: base.kind,
        base: sides.0,
        new: sides.1,
        warnings,
        metrics,
        bounds: checks,
        regressed,
        transport_pairs: transports.iter().map(TransportPair::name).collect(),
        run_pairs: pairing.pairs,
        shared,
    })
}

/// Checks each bound against the rows it applies to, marking them; a bound that applies to
/// none is an error naming the metrics there are.
fn check_bounds(metrics: &mut [Row], bounds: &[Bound]) -> Result<Vec<BoundCheck>, ReportError> {
    let mut checks = Vec::with_capacity(bounds.len());
    for bound in bounds {
        let mut check = BoundCheck {
            bound: bound.text.clone(),
            metric: bound.metric.clone(),
            pct: bound.pct,
            checked: Vec::new(),
            exceeded: Vec::new(),
        };
        for row in metrics
            .iter_mut()
            .filter(|r| bound.applies_to_pair(&r.metric, r.run.as_deref(), r.new_run.as_deref()))
        {
            check.checked.push(row.name.clone());
            let exceeded = exceeds(row, bound.pct);
            if exceeded {
                check.exceeded.push(row.name.clone());
            }
            if row.bound_pct.is_none_or(|p| bound.pct < p) {
                row.bound_pct = Some(bound.pct);
            }
            row.bound = Some(if exceeded || row.bound == Some(BoundVerdict::Exceeded) {
                BoundVerdict::Exceeded
            } else {
                BoundVerdict::Ok
            });
        }
        if check.checked.is_empty() {
            return Err(ReportError::Bound {
                bound: bound.text.clone(),
                why: format!(
                    "neither input has the metric {}; they have: {}",
                    bound.metric,
                    known_metrics(metrics)
                ),
            });
        }
        checks.push(check);
    }
    Ok(checks)
}

/// Reads a results file or an experiment folder.
pub fn read_input(path: &Path) -> Result<Measured, ReportError> {
    let io = |source| ReportError::Io {
        path: path.to_path_buf(),
        source,
    };
    let meta = std::fs::metadata(path).map_err(io)?;
    if meta.is_dir() {
        if !path.join("summary.csv").exists() {
            return Err(ReportError::UnknownInput {
                path: path.to_path_buf(),
                why: "a directory without summary.csv".into(),
            });
        }
        return read_experiment(path);
    }
    let mut head = Vec::with_capacity(8);
    std::fs::File::open(path)
        .and_then(|f| f.take(8).read_to_end(&mut head))
        .map_err(io)?;
    if !ldplayer_results::sniff(&head) {
        return Err(ReportError::UnknownInput {
            path: path.to_path_buf(),
            why: "a file that does not start like a results file".into(),
        });
    }
    let read = read_results(path)?;
    let mut measured = Measured::new(InputKind::Replay, path.to_path_buf());
    push_replay_metrics(&read.report, None, &mut measured);
    measured.traces.insert(String::new(), read.trace);
    measured.queries_by_proto = read.queries_by_proto;
    measured.notes.extend(read.incomplete);
    measured.notes.extend(read.damage);
    if read.trace.queries == 0 {
        measured
            .notes
            .push(format!("{}: no results", path.display()));
    }
    Ok(measured)
}

/// Every metric of either input: BASE's in its order, then those only NEW has (NEW's runs are
/// filed under their partners' names already).
fn rows(base: &Measured, new: &Measured, pairing: &Pairing) -> Vec<Row> {
    fn key(m: &Measure) -> (&str, Option<&str>) {
        (m.metric.as_str(), m.run.as_deref())
    }
    fn index(m: &Measured) -> HashMap<(&str, Option<&str>), f64> {
        m.measures.iter().map(|x| (key(x), x.value)).collect()
    }
    let (in_base, in_new) = (index(base), index(new));
    let new_run = |m: &Measure| {
        m.run
            .as_deref()
            .and_then(|run| pairing::new_run_of(pairing, run))
    };
    let from_base = base.measures.iter().map(|b| {
        let new = in_new.get(&key(b)).copied();
        row(b, Some(b.value), new, new.and_then(|_| new_run(b)))
    });
    let only_new = new
        .measures
        .iter()
        .filter(|n| !in_base.contains_key(&key(n)))
        .map(|n| row(n, None, Some(n.value), new_run(n)));
    from_base.chain(only_new).collect()
}

fn row(m: &Measure, base: Option<f64>, new: Option<f64>, new_run: Option<String>) -> Row {
    let (change_pct, verdict) = match (base, new) {
        (Some(b), Some(n)) => (change_pct(b, n), verdict(m.worse, b, n)),
        (Some(_), None) => (None, Verdict::OnlyBase),
        _ => (None, Verdict::OnlyNew),
    };
    Row {
        name: m.name(),
        metric: m.metric.clone(),
        run: m.run.clone(),
        new_run,
        worse: m.worse,
        base,
        new,
        change_pct,
        verdict,
        bound_pct: None,
        bound: None,
    }
}

/// The metrics of the rows, for an error message: each name once, and the runs when the
/// inputs are experiments.
fn known_metrics(rows: &[Row]) -> String {
    let mut seen = BTreeSet::new();
    let metrics: Vec<&str> = rows
        .iter()
        .filter(|r| seen.insert(r.metric.as_str()))
        .map(|r| r.metric.as_str())
        .collect();
    let mut seen = BTreeSet::new();
    let runs: Vec<&str> = rows
        .iter()
        .filter_map(|r| r.run.as_deref())
        .filter(|r| seen.insert(*r))
        .collect();
    let mut text = if metrics.is_empty() {
        "no metrics at all".to_string()
    } else {
        metrics.join(", ")
    };
    if !runs.is_empty() {
        text.push_str(&format!(
            " (of every run, or of one as METRIC@RUN, RUN a name or number among {})",
            runs.join(", ")
        ));
    }
    text
}

#[cfg(test)]
mod tests;
