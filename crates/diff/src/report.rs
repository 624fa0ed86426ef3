//! The report of a diff: counts, the table by field, the most frequent differing names with
//! both answers, as text (for people) and as JSON; the bounds of `--max-differences`.

use crate::criteria::Criteria;
use crate::differ::{Counts, Differ};
use crate::field::Field;
use crate::inputs::{InputReport, Target};
use crate::present::message_text;
use crate::tally::{Example, TopRow};
use crate::DiffError;
use serde::Serialize;
use std::fmt;

/// Pairs listed per field.
pub const TOP_LISTED: usize = 5;

/// Both answers of an example, in presentation format.
#[derive(Debug, Clone, Serialize)]
pub struct ExampleText {
    /// The query's position in the trace.
    pub index: u64,
    /// The tested target's answer, as dig shows it.
    pub tested: String,
    /// The reference's answer.
    pub reference: String,
}

impl From<&Example> for ExampleText {
    fn from(e: &Example) -> ExampleText {
        ExampleText {
            index: e.index,
            tested: message_text(e.tested.answer.as_deref(), e.tested.outcome),
            reference: message_text(e.reference.answer.as_deref(), e.reference.outcome),
        }
    }
}

/// One field's row.
#[derive(Debug, Clone, Serialize)]
pub struct FieldRow {
    /// The field.
    pub field: Field,
    /// Compared queries differing in it (re-asked differences that did not reproduce left
    /// out).
    pub queries: u64,
    /// Their share of the compared queries, in percent.
    pub share_pct: f64,
    /// Differences in it that did not reproduce when re-asked (`--reask`).
    pub not_reproducible: u64,
    /// The most frequent differing (qname, qtype) pairs.
    pub top: Vec<TopRow>,
    /// The most frequent pair's first differing query, both answers in presentation format.
    pub example: Option<ExampleText>,
}

/// What re-asking the differences found.
#[derive(Debug, Clone, Default, Serialize)]
pub struct ReaskReport {
    /// Rounds: times each differing query was sent again to every target.
    pub rounds: u32,
    /// Differing queries re-asked.
    pub asked: u64,
    /// Differing queries not re-asked (past the number remembered).
    pub not_asked: u64,
    /// Re-asked differences that repeated exactly, round after round.
    pub reproducible: u64,
    /// Re-asked differences that did not: another difference, none, references that
    /// disagreed, or a target whose answer varied from round to round.
    pub not_reproducible: u64,
}

/// A bound of `--max-differences FIELD=PCT`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Bound {
    /// The field bounded (`None`: any field, `any=PCT`).
    pub field: Option<Field>,
    /// The largest share of compared queries that may differ in it, in percent.
    pub max_pct: f64,
}

impl Bound {
    /// Reads `FIELD=PCT` (`rcode=0`, `flags.ad=0.5`, `any=1`).
    pub fn parse(text: &str) -> Result<Bound, DiffError> {
        let (name, pct) = text.split_once('=').ok_or_else(|| {
            DiffError::Input(format!(
                "--max-differences {text}: expected FIELD=PCT, e.g. rcode=0 or any=1"
            ))
        })?;
        let field = match name.trim() {
            "any" => None,
            n => Some(Field::from_name(n).ok_or_else(|| {
                DiffError::Input(format!(
                    "--max-differences {text}: unknown field `{n}` (any, or one of: {})",
                    Field::names()
                ))
            })?),
        };
        let max_pct: f64 = pct.trim().parse().map_err(|_| {
            DiffError::Input(format!(
                "--max-differences {text}: `{pct}` is not a percentage (0 to 100)"
            ))
        })?;
        if !(0.0..=100.0).contains(&max_pct) {
            return Err(DiffError::Input(format!(
                "--max-differences {text}: {pct} is not a percentage (0 to 100)"
            )));
        }
        Ok(Bound { field, max_pct })
    }

    /// `rcode=0%` or `any=1%`.
    pub fn name(&self) -> String {
        self.field.map_or("any", Field::name).to_string()
    }
}

/// A bound checked against the diff.
#[derive(Debug, Clone, Serialize)]
pub struct BoundCheck {
    /// The bound.
    pub bound: Bound,
    /// The share that differs, in percent of the compared queries.
    pub share_pct: f64,
    /// Whether the share is past the bound.
    pub exceeded: bool,
}

/// The whole report.
#[derive(Debug, Clone, Serialize)]
pub struct DiffReport {
    /// Every target: the files' targets in order.
    pub targets: Vec<Target>,
    /// The tested target.
    pub tested: usize,
    /// The references.
    pub references: Vec<usize>,
    /// The criteria.
    pub criteria: Criteria,
    /// What was read of each file.
    pub inputs: Vec<InputReport>,
    /// The counts.
    #[serde(flatten)]
    pub counts: Counts,
    /// Results that came too late (out of trace order by more than the diff waits), left out.
    pub late_results: u64,
    /// Results repeated for a query and target, left out.
    pub duplicate_results: u64,
    /// The most queries that waited at once for a target's result (what memory follows).
    pub peak_waiting: usize,
    /// Differing queries in percent of the compared.
    pub different_pct: f64,
    /// Unstable queries by the first field the references disagree in.
    pub unstable_by_field: Vec<(Field, u64)>,
    /// The fields compared, with their differences; those without any too.
    pub fields: Vec<FieldRow>,
    /// What re-asking found (`--reask`).
    pub reask: Option<ReaskReport>,
    /// The bounds checked (`--max-differences`).
    pub bounds: Vec<BoundCheck>,
    /// What the reader should know: incomplete files, results left out.
    pub warnings: Vec<String>,
}

fn pct(n: u64, of: u64) -> f64 {
    if of == 0 {
        0.0
    } else {
        100.0 * n as f64 / of as f64
    }
}

impl DiffReport {
    /// The report of `differ`, with what re-asking found (`not_reproducible[f]`: differences
    /// in field `f` that did not reproduce), checked against `bounds`.
    pub fn new(
        differ: &Differ,
        targets: Vec<Target>,
        inputs: Vec<InputReport>,
        (late_results, duplicate_results): (u64, u64),
        reask: Option<(ReaskReport, Vec<u64>)>,
        bounds: &[Bound],
        warnings: Vec<String>,
    ) -> DiffReport {
        let counts = differ.counts();
        let tally = differ.tally();
        let not_reproducible = reask
            .as_ref()
            .map_or_else(|| vec![0; Field::ALL.len()], |(_, n)| n.clone());
        let fields: Vec<FieldRow> = differ
            .criteria()
            .fields
            .iter()
            .map(|&f| {
                let t = tally.field(f);
                let top = t.top(TOP_LISTED);
                FieldRow {
                    field: f,
                    queries: t.queries,
                    share_pct: pct(t.queries, counts.compared),
                    not_reproducible: not_reproducible[f.index()],
                    example: top.first().map(|t| ExampleText::from(&t.example)),
                    top: top.into_iter().map(TopRow::from).collect(),
                }
            })
            .collect();
        let bounds = bounds
            .iter()
            .map(|b| {
                let n = match b.field {
                    None => counts.different,
                    Some(f) => tally.field(f).queries,
                };
                let share_pct = pct(n, counts.compared);
                BoundCheck {
                    bound: b.clone(),
                    share_pct,
                    exceeded: share_pct > b.max_pct,
                }
            })
            .collect();
        DiffReport {
            targets,
            tested: differ.tested(),
            references: differ.references().to_vec(),
            criteria: differ.criteria().clone(),
            inputs,
            counts,
            late_results,
            duplicate_results,
            peak_waiting: 0,
            different_pct: pct(counts.different, counts.compared),
            unstable_by_field: Field::ALL
                .into_iter()
                .map(|f| (f, differ.unstable_by_field()[f.index()]))
                .filter(|&(_, n)| n > 0)
                .collect(),
            fields,
            reask: reask.map(|(r, _)| r),
            bounds,
            warnings,
        }
    }

    /// Whether some bound was exceeded.
    pub fn exceeded(&self) -> bool {
        self.bounds.iter().any(|b| b.exceeded)
    }

    fn label(&self, t: usize) -> String {
        self.targets
            .get(t)
            .map_or_else(|| t.to_string(), Target::label)
    }
}

impl fmt::Display for DiffReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let c = &self.counts;
        writeln!(f, "tested: target {}", self.label(self.tested))?;
        for &r in &self.references {
            writeln!(f, "reference: target {}", self.label(r))?;
        }
        let crit = &self.criteria;
        let fields = if crit.fields.len() == Field::ALL.len() {
            "every field".to_string()
        } else {
            crit.fields
                .iter()
                .map(|f| f.name())
                .collect::<Vec<_>>()
                .join(", ")
        };
        writeln!(
            f,
            "criteria: {fields}; TTL {}, case of names {}, RRSIGs {}",
            if crit.ttl { "compared" } else { "ignored" },
            if crit.case { "compared" } else { "ignored" },
            match crit.rrsig {
                crate::criteria::RrsigMode::Covered => "by what they cover",
                crate::criteria::RrsigMode::Full => "whole",
            }
        )?;
        writeln!(
            f,
            "queries: {}; compared {}, unstable {} (the references disagree), not compared {} (a target without a result)",
            c.queries, c.compared, c.unstable, c.not_compared
        )?;
        if !self.unstable_by_field.is_empty() {
            let list: Vec<String> = self
                .unstable_by_field
                .iter()
                .map(|(field, n)| format!("{field} {n}"))
                .collect();
            writeln!(f, "unstable by field: {}", list.join(", "))?;
        }
        writeln!(
            f,
            "different: {} of {} compared ({:.2}%), the same: {}",
            c.different, c.compared, self.different_pct, c.same
        )?;
        if let Some(r) = &self.reask {
            writeln!(
                f,
                "re-asked {} differing queries {} more time{} to every target: {} reproducible, {} not reproducible (counted apart){}",
                r.asked,
                r.rounds,
                if r.rounds == 1 { "" } else { "s" },
                r.reproducible,
                r.not_reproducible,
                if r.not_asked > 0 {
                    format!("; {} not re-asked", r.not_asked)
                } else {
                    String::new()
                }
            )?;
        }
        let differing: Vec<&FieldRow> = self
            .fields
            .iter()
            .filter(|r| r.queries > 0 || r.not_reproducible > 0)
            .collect();
        if differing.is_empty() {
            writeln!(f, "no field differs")?;
        } else {
            writeln!(f)?;
            let reask = self.reask.is_some();
            writeln!(
                f,
                "{:<14} {:>10} {:>9}{}",
                "field",
                "queries",
                "share",
                if reask { "  not reproducible" } else { "" }
            )?;
            for r in &differing {
                write!(
                    f,
                    "{:<14} {:>10} {:>8.2}%",
                    r.field.name(),
                    r.queries,
                    r.share_pct
                )?;
                if reask {
                    write!(f, "  {:>16}", r.not_reproducible)?;
                }
                writeln!(f)?;
            }
            for r in &differing {
                let Some(first) = r.top.first() else {
                    continue;
                };
                writeln!(f)?;
                let names: Vec<String> = r
                    .top
                    .iter()
                    .map(|t| {
                        format!(
                            "{} {} ({}{})",
                            t.qname,
                            t.qtype.as_deref().unwrap_or("-"),
                            t.count,
                            if t.count_error > 0 { "?" } else { "" }
                        )
                    })
                    .collect();
                writeln!(f, "{}: most frequent: {}", r.field.name(), names.join(", "))?;
                if let Some(e) = &r.example {
                    writeln!(
                        f,
                        "  {} {}, query {}: tested, target {}:",
                        first.qname,
                        first.qtype.as_deref().unwrap_or("-"),
                        e.index,
                        self.tested
                    )?;
                    for line in e.tested.lines() {
                        writeln!(f, "    {line}")?;
                    }
                    writeln!(
                        f,
                        "  reference, target {}:",
                        self.references.first().copied().unwrap_or_default()
                    )?;
                    for line in e.reference.lines() {
                        writeln!(f, "    {line}")?;
                    }
                }
            }
        }
        for b in &self.bounds {
            writeln!(
                f,
                "bound {}={}%: {:.2}% {}",
                b.bound.name(),
                b.bound.max_pct,
                b.share_pct,
                if b.exceeded { "EXCEEDED" } else { "within" }
            )?;
        }
        Ok(())
    }
}

/// The columns of `--csv`.
pub const CSV_COLUMNS: [&str; 6] = ["index", "qname", "qtype", "field", "tested", "reference"];

/// A CSV field, quoted when it needs it (RFC 4180).
fn csv_field(v: &str) -> std::borrow::Cow<'_, str> {
    if v.contains([',', '"', '\n', '\r']) {
        std::borrow::Cow::Owned(format!("\"{}\"", v.replace('"', "\"\"")))
    } else {
        std::borrow::Cow::Borrowed(v)
    }
}

/// Writes one `--csv` row.
pub fn write_csv_row(
    out: &mut impl std::io::Write,
    row: &crate::differ::DiffRow,
) -> std::io::Result<()> {
    writeln!(
        out,
        "{},{},{},{},{},{}",
        row.index,
        csv_field(&row.qname),
        row.qtype.map(|t| t.to_string()).unwrap_or_default(),
        row.field.name(),
        csv_field(&row.tested),
        csv_field(&row.reference)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bounds_read_and_refuse_what_they_must() {
        assert_eq!(
            Bound::parse("rcode=0").unwrap(),
            Bound {
                field: Some(Field::Rcode),
                max_pct: 0.0
            }
        );
        assert_eq!(Bound::parse("any = 1.5").unwrap().field, None);
        for bad in [
            "rcode",
            "rcodes=1",
            "rcode=x",
            "rcode=-1",
            "rcode=1e30",
            "rcode=NaN",
        ] {
            let e = Bound::parse(bad).unwrap_err().to_string();
            assert!(e.contains("--max-differences"), "{bad}: {e}");
        }
    }
}
