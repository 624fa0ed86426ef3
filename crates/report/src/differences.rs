//! The answer differences of replays that kept their answers (`replay --keep-answers`), as a
//! section of the report: the inputs' targets diffed as `ldplayer diff` does with its defaults
//! (the last target tested against the others, every field compared), in a table by field with
//! the most frequent differing names.

use crate::figure::Table;
use crate::html::Section;
use ldplayer_diff::{Criteria, DiffReport, Options};
use ldplayer_results::ResultsReader;
use std::path::PathBuf;

/// Differing (qname, qtype) pairs listed per field.
const NAMES_SHOWN: usize = 3;

/// The differences section of replays `replays` (label, results file), when at least two
/// targets among those that kept their answers can be compared; `None` otherwise (no input
/// kept answers, or only one target did). A diff that cannot be made says why in the section.
pub fn section(replays: &[(&str, PathBuf)]) -> Option<Section> {
    let with_answers: Vec<(&str, PathBuf)> = replays
        .iter()
        .filter(|(_, p)| ResultsReader::open(p).is_ok_and(|r| r.keeps_answers()))
        .map(|(l, p)| (*l, p.clone()))
        .collect();
    let targets: usize = with_answers
        .iter()
        .filter_map(|(_, p)| ResultsReader::open(p).ok())
        .map(|r| {
            r.run_info()
                .and_then(|i| i.targets.as_ref())
                .map_or(1, |t| t.len().max(1))
        })
        .sum();
    if targets < 2 {
        return None;
    }
    let paths: Vec<PathBuf> = with_answers.iter().map(|(_, p)| p.clone()).collect();
    let options = Options {
        criteria: Criteria::default(),
        ..Options::default()
    };
    let mut section = Section {
        title: "Answer differences".into(),
        ..Section::default()
    };
    let run = match ldplayer_diff::diff(&paths, &options, None) {
        Ok(run) => run,
        Err(e) => {
            section
                .paragraphs
                .push(format!("The answers could not be compared: {e}."));
            return Some(section);
        }
    };
    let report = run.report(None, &[]);
    section.paragraphs = paragraphs(&report);
    let (by_field, names) = tables(&report);
    if !by_field.rows.is_empty() {
        section.tables.push((
            "Compared queries whose tested answer differs from the references', by field \
             (a query may differ in several)"
                .into(),
            by_field,
        ));
        section.tables.push((
            "The most frequent differing names by field, with the first one's values".into(),
            names,
        ));
    }
    Some(section)
}

/// The sentences over the tables: who is tested against whom, and the counts.
fn paragraphs(r: &DiffReport) -> Vec<String> {
    let label = |t: usize| {
        r.targets
            .get(t)
            .map_or_else(|| t.to_string(), |t| t.label())
    };
    let refs: Vec<String> = r.references.iter().map(|&t| label(t)).collect();
    let c = &r.counts;
    let mut out = vec![
        format!(
            "Target {} tested against {} {}, on every field (TTLs and the case of names \
             aside), as `ldplayer diff` does by default.",
            label(r.tested),
            if refs.len() == 1 {
                "the reference"
            } else {
                "the references"
            },
            refs.join(" and ")
        ),
        format!(
            "{} queries: {} compared, of which {} ({:.2}%) differ and {} are the same; {} \
             unstable (the references disagree among themselves), {} not compared (a target \
             without a result).",
            c.queries, c.compared, c.different, r.different_pct, c.same, c.unstable, c.not_compared
        ),
    ];
    out.extend(r.warnings.iter().cloned());
    out
}

/// The table by field, and the table of the most frequent differing names.
fn tables(r: &DiffReport) -> (Table, Table) {
    let mut by_field = Table::new(["field", "queries", "share of compared"]);
    let mut names = Table::new(["field", "most frequent (count)", "tested", "reference"]);
    for f in r.fields.iter().filter(|f| f.queries > 0) {
        by_field.rows.push(vec![
            f.field.name().to_string(),
            f.queries.to_string(),
            format!("{:.2}%", f.share_pct),
        ]);
        let top: Vec<String> = f
            .top
            .iter()
            .take(NAMES_SHOWN)
            .map(|t| {
                format!(
                    "{} {} ({})",
                    t.qname,
                    t.qtype.as_deref().unwrap_or("-"),
                    t.count
                )
            })
            .collect();
        let (tested, reference) = f.example.as_ref().map_or_else(Default::default, |e| {
            (e.tested.clone(), e.reference.clone())
        });
        names.rows.push(vec![
            f.field.name().to_string(),
            top.join(", "),
            tested,
            reference,
        ]);
    }
    (by_field, names)
}
