//! A comparison as a table for a terminal: metric, base, new, change, verdict (the warnings
//! are the caller's to print).

use super::{BoundVerdict, Comparison, Row, RunPair, Verdict};
use std::fmt;

/// A value with about four significant digits, trailing zeros left out; `-` when missing.
pub fn value_text(value: Option<f64>) -> String {
    let Some(x) = value else {
        return "-".into();
    };
    if x == 0.0 {
        return "0".into();
    }
    let magnitude = x.abs().log10().floor() as i32;
    let decimals = (3 - magnitude).clamp(0, 9) as usize;
    let text = format!("{x:.decimals$}");
    if text.contains('.') {
        text.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        text
    }
}

/// A change in percent with its sign (`+4.2%`), `n/a` from 0, `-` when a side is missing.
pub fn change_text(row: &Row) -> String {
    match (row.change_pct, row.base, row.new) {
        (Some(c), _, _) => format!("{c:+.1}%"),
        (None, Some(_), Some(_)) => "n/a".into(),
        _ => "-".into(),
    }
}

/// The verdict, and the bound when one applies: `worse`, `worse, over bound 5%`.
pub fn verdict_text(row: &Row) -> String {
    let verdict = match row.verdict {
        Verdict::Same => "same",
        Verdict::Better => "better",
        Verdict::Worse => "worse",
        Verdict::Changed => "changed",
        Verdict::OnlyBase => "only in base",
        Verdict::OnlyNew => "only in new",
    };
    match (row.bound, row.bound_pct) {
        (Some(BoundVerdict::Exceeded), Some(p)) => format!("{verdict}, OVER BOUND {p}%"),
        (Some(BoundVerdict::Ok), Some(p)) => format!("{verdict}, within bound {p}%"),
        _ => verdict.to_string(),
    }
}

impl fmt::Display for Comparison {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (label, side) in [("base", &self.base), ("new", &self.new)] {
            write!(f, "{label:<5} {} ({} queries", side.path, side.queries)?;
            if !side.runs.is_empty() {
                let runs = side.runs.len();
                write!(f, ", {runs} run{}", if runs == 1 { "" } else { "s" })?;
            }
            writeln!(f, ")")?;
        }
        write_run_pairs(f, &self.run_pairs)?;
        if self.shared == 0 && !self.metrics.is_empty() {
            let only = |v: Verdict| self.metrics.iter().filter(|r| r.verdict == v).count();
            return writeln!(
                f,
                "nothing compared: BASE and NEW share no metric ({} only in base, {} only in \
                 new; the warnings say why)",
                only(Verdict::OnlyBase),
                only(Verdict::OnlyNew)
            );
        }
        let header = ["metric", "base", "new", "change", "verdict"].map(String::from);
        let cells: Vec<[String; 5]> = self
            .metrics
            .iter()
            .map(|r| {
                [
                    r.name.clone(),
                    value_text(r.base),
                    value_text(r.new),
                    change_text(r),
                    verdict_text(r),
                ]
            })
            .collect();
        let mut width = [0usize; 4];
        for line in std::iter::once(&header).chain(&cells) {
            for (w, cell) in width.iter_mut().zip(line) {
                *w = (*w).max(cell.chars().count());
            }
        }
        for line in std::iter::once(&header).chain(&cells) {
            writeln!(
                f,
                "{:<w0$}  {:>w1$}  {:>w2$}  {:>w3$}  {}",
                line[0],
                line[1],
                line[2],
                line[3],
                line[4],
                w0 = width[0],
                w1 = width[1],
                w2 = width[2],
                w3 = width[3]
            )?;
        }
        Ok(())
    }
}

/// The runs of two experiments and their partners, unless each run paired with the run of
/// its own name, as between two experiments of one plan.
fn write_run_pairs(f: &mut fmt::Formatter<'_>, pairs: &[RunPair]) -> fmt::Result {
    let plain = pairs
        .iter()
        .all(|p| p.base.is_some() && p.base == p.new && p.transports.is_none());
    if plain {
        return Ok(());
    }
    writeln!(
        f,
        "runs paired by their varied values and repeat (- for none):"
    )?;
    let name = |run: &Option<String>| run.clone().unwrap_or_else(|| "-".into());
    let width = pairs
        .iter()
        .map(|p| name(&p.base).chars().count())
        .chain(std::iter::once("base".len()))
        .max()
        .unwrap_or(0);
    writeln!(f, "  {:<width$}  new", "base")?;
    for pair in pairs {
        let line = format!("  {:<width$}  {}", name(&pair.base), name(&pair.new));
        match &pair.transports {
            Some(t) => writeln!(f, "{line}  (--as {t})")?,
            None => writeln!(f, "{line}")?,
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_keep_about_four_significant_digits() {
        assert_eq!(value_text(None), "-");
        assert_eq!(value_text(Some(0.0)), "0");
        assert_eq!(value_text(Some(1.0)), "1");
        assert_eq!(value_text(Some(0.0723456)), "0.07235");
        assert_eq!(value_text(Some(12.3456)), "12.35");
        assert_eq!(value_text(Some(123456.7)), "123457");
        assert_eq!(value_text(Some(-0.5)), "-0.5");
    }
}
