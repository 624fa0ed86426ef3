//! Reading an experiment's `summary.csv` back: its varied keys and one row per run and metric,
//! for the experiment's figures and for `compare`.

use std::path::Path;

use ldplayer_experiment::summary::{Distribution, SummaryRow};

use crate::error::ReportError;

/// The columns after the varied keys, as `summary.csv` writes them.
const TAIL: [&str; 8] = ["metric", "p5", "p25", "p50", "p75", "p95", "mean", "n"];

/// A whole `summary.csv`.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SummaryTable {
    /// The varied keys, in the plan's `[vary]` order (the columns between `run` and `metric`).
    pub keys: Vec<String>,
    /// Every row, in file order.
    pub rows: Vec<SummaryRow>,
}

/// Reads the `summary.csv` at `path`; a line that is not a row names itself.
pub fn read_summary(path: &Path) -> Result<SummaryTable, ReportError> {
    ldplayer_output::protect_input(path);
    let text = std::fs::read_to_string(path).map_err(|source| ReportError::Io {
        path: path.to_path_buf(),
        source,
    })?;
    parse_summary(&text).map_err(|why| ReportError::Malformed {
        path: path.to_path_buf(),
        why,
    })
}

/// Reads the text of a `summary.csv`; the error names the line (from 1) and what is wrong.
pub fn parse_summary(text: &str) -> Result<SummaryTable, String> {
    let mut lines = text.lines().enumerate();
    let header = match lines.next() {
        Some((_, h)) => split_fields(h).map_err(|e| format!("line 1: {e}"))?,
        None => return Err("empty: no header line".into()),
    };
    let expected = "run,<varied keys>,metric,p5,p25,p50,p75,p95,mean,n";
    if header.len() < 1 + TAIL.len()
        || header[0] != "run"
        || header[header.len() - TAIL.len()..] != TAIL
    {
        return Err(format!(
            "line 1: the header is `{}`, not `{expected}`",
            header.join(",")
        ));
    }
    let keys = header[1..header.len() - TAIL.len()].to_vec();
    let mut rows = Vec::new();
    for (i, line) in lines {
        if line.trim().is_empty() {
            continue;
        }
        let at = |why: String| format!("line {}: {why}", i + 1);
        let fields = split_fields(line).map_err(at)?;
        if fields.len() != header.len() {
            return Err(at(format!(
                "{} fields, not {} as in the header",
                fields.len(),
                header.len()
            )));
        }
        let numbers = &fields[fields.len() - 7..];
        let number = |k: usize| -> Result<f64, String> {
            let cell = &numbers[k];
            if cell.is_empty() {
                return Ok(f64::NAN);
            }
            cell.parse::<f64>()
                .map_err(|_| format!("{}: `{cell}` is no number", TAIL[k + 1]))
        };
        let n = numbers[6]
            .parse::<u64>()
            .map_err(|_| at(format!("n: `{}` is no count", numbers[6])))?;
        let dist = Distribution {
            p5: number(0).map_err(at)?,
            p25: number(1).map_err(at)?,
            p50: number(2).map_err(at)?,
            p75: number(3).map_err(at)?,
            p95: number(4).map_err(at)?,
            mean: number(5).map_err(at)?,
            n,
        };
        rows.push(SummaryRow {
            run: fields[0].clone(),
            varied: fields[1..1 + keys.len()].to_vec(),
            metric: fields[1 + keys.len()].clone(),
            dist,
        });
    }
    Ok(SummaryTable { keys, rows })
}

/// The fields of one CSV line: comma-separated, a field in double quotes may hold commas and
/// doubled quotes (as `summary.csv` writes them).
fn split_fields(line: &str) -> Result<Vec<String>, String> {
    let line = line.trim_end_matches('\r');
    let mut fields = Vec::new();
    let mut chars = line.chars().peekable();
    loop {
        let mut field = String::new();
        if chars.peek() == Some(&'"') {
            chars.next();
            loop {
                match chars.next() {
                    Some('"') if chars.peek() == Some(&'"') => {
                        chars.next();
                        field.push('"');
                    }
                    Some('"') => break,
                    Some(c) => field.push(c),
                    None => return Err("a quoted field is not closed".into()),
                }
            }
            match chars.next() {
                None => {
                    fields.push(field);
                    return Ok(fields);
                }
                Some(',') => {}
                Some(c) => return Err(format!("`{c}` after a quoted field")),
            }
        } else {
            loop {
                match chars.next() {
                    None => {
                        fields.push(field);
                        return Ok(fields);
                    }
                    Some(',') => break,
                    Some(c) => field.push(c),
                }
            }
        }
        fields.push(field);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ldplayer_experiment::summary::SummaryCsv;

    #[test]
    fn what_summary_csv_writes_reads_back() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("summary.csv");
        let keys = vec!["proto".to_string(), "rtt_ms".to_string()];
        let rows = vec![
            SummaryRow {
                run: "001-proto=udp+rtt_ms=20-r1".into(),
                varied: vec!["udp".into(), "20".into()],
                metric: "latency_ms".into(),
                dist: Distribution::of(&[20.1, 20.5, 21.0, 25.0]),
            },
            SummaryRow {
                run: "002-odd".into(),
                varied: vec!["a,\"b\"".into(), "0.5".into()],
                metric: "latency_ms_nonbusy".into(),
                dist: Distribution::of(&[]),
            },
        ];
        let mut csv = SummaryCsv::create(&path, &keys).unwrap();
        csv.write_rows(&rows).unwrap();
        csv.flush().unwrap();
        drop(csv);
        let table = read_summary(&path).unwrap();
        assert_eq!(table.keys, keys);
        assert_eq!(table.rows.len(), 2);
        assert_eq!(table.rows[0], rows[0]);
        assert_eq!(table.rows[1].varied, rows[1].varied);
        assert!(table.rows[1].dist.p50.is_nan());
        assert_eq!(table.rows[1].dist.n, 0);
    }

    #[test]
    fn a_bad_line_is_named() {
        let head = "run,proto,metric,p5,p25,p50,p75,p95,mean,n\n";
        let good = "001-r1,udp,latency_ms,1,2,3,4,5,3,10\n";
        let e = parse_summary(&format!(
            "{head}{good}001-r1,udp,latency_ms,1,2,x,4,5,3,10\n"
        ))
        .unwrap_err();
        assert!(
            e.contains("line 3") && e.contains("p50") && e.contains("`x`"),
            "{e}"
        );
        let e = parse_summary(&format!("{head}{good}{good}001-r1,udp,1,2\n")).unwrap_err();
        assert!(e.contains("line 4") && e.contains("4 fields"), "{e}");
        let e = parse_summary("run,proto,metric,p5\n").unwrap_err();
        assert!(e.contains("line 1") && e.contains("header"), "{e}");
        let e = parse_summary("").unwrap_err();
        assert!(e.contains("empty"), "{e}");
        let e = parse_summary(&format!("{head}\"001,udp,latency_ms,1,2,3,4,5,3,10\n")).unwrap_err();
        assert!(e.contains("line 2") && e.contains("quoted"), "{e}");
    }
}
