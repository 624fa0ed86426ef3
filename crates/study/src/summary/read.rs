//! Reading `summary.csv` back through the `csv` crate: a quoted field may hold commas, doubled
//! quotes and line breaks, as the writer leaves them.

use super::{SummaryRow, TAIL};
use crate::Distribution;
use std::io::{self, Read};
use std::path::{Path, PathBuf};

/// A whole `summary.csv`.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SummaryTable {
    /// The varied keys, in the plan's `[vary]` order (the columns between `run` and `metric`).
    pub keys: Vec<String>,
    /// Every row, in file order.
    pub rows: Vec<SummaryRow>,
}

/// Why a `summary.csv` could not be read.
#[derive(Debug, thiserror::Error)]
pub enum SummaryReadError {
    /// The file could not be read.
    #[error("cannot read {}", .path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// What the system said.
        #[source]
        source: io::Error,
    },
    /// The file has no header line.
    #[error("empty: no header line")]
    Empty,
    /// A line is not what `summary.csv` holds.
    #[error("line {line}: {why}")]
    Malformed {
        /// The line (from 1) where the record starts.
        line: u64,
        /// What is wrong.
        why: String,
    },
}

/// Reads the `summary.csv` at `path`; a line that is not a row names itself.
pub fn read_summary(path: &Path) -> Result<SummaryTable, SummaryReadError> {
    let text = std::fs::read(path).map_err(|source| SummaryReadError::Io {
        path: path.to_path_buf(),
        source,
    })?;
    parse_summary(&text)
}

/// Reads the text of a `summary.csv`; the error names the line (from 1) and what is wrong.
pub fn parse_summary(text: &[u8]) -> Result<SummaryTable, SummaryReadError> {
    let mut reader = csv_reader(text);
    let mut records = reader.records();
    let header = match records.next() {
        Some(record) => fields(&record.map_err(malformed)?),
        None => return Err(SummaryReadError::Empty),
    };
    let expected = "run,<varied keys>,metric,p5,p25,p50,p75,p95,mean,n";
    if header.len() < 1 + TAIL.len()
        || header[0] != "run"
        || header[header.len() - TAIL.len()..] != TAIL
    {
        return Err(SummaryReadError::Malformed {
            line: 1,
            why: format!("the header is `{}`, not `{expected}`", header.join(",")),
        });
    }
    let keys = header[1..header.len() - TAIL.len()].to_vec();
    let mut rows = Vec::new();
    for record in records {
        let record = record.map_err(malformed)?;
        if record.iter().all(|f| f.trim().is_empty()) && record.len() == 1 {
            continue;
        }
        let line = record.position().map_or(0, csv::Position::line);
        let at = |why: String| SummaryReadError::Malformed { line, why };
        if record.len() != header.len() {
            return Err(at(format!(
                "{} fields, not {} as in the header",
                record.len(),
                header.len()
            )));
        }
        rows.push(row(&record, keys.len()).map_err(at)?);
    }
    Ok(SummaryTable { keys, rows })
}

/// The row of a record with `varied` varied values, already of the header's length.
fn row(record: &csv::StringRecord, varied: usize) -> Result<SummaryRow, String> {
    let cell = |i: usize| record.get(i).unwrap_or_default();
    let first_number = record.len() - 7;
    let number = |k: usize| -> Result<f64, String> {
        let cell = cell(first_number + k);
        if cell.is_empty() {
            return Ok(f64::NAN);
        }
        cell.parse::<f64>()
            .map_err(|_| format!("{}: `{cell}` is no number", TAIL[k + 1]))
    };
    let n = cell(first_number + 6);
    let n = n
        .parse::<u64>()
        .map_err(|_| format!("n: `{n}` is no count"))?;
    Ok(SummaryRow {
        run: cell(0).to_string(),
        varied: (1..=varied).map(|i| cell(i).to_string()).collect(),
        metric: cell(1 + varied).to_string(),
        dist: Distribution {
            p5: number(0)?,
            p25: number(1)?,
            p50: number(2)?,
            p75: number(3)?,
            p95: number(4)?,
            mean: number(5)?,
            n,
        },
    })
}

/// A CSV reader as every file of a study is read: no header taken (the caller checks it),
/// records of any length (the caller says which is wrong).
pub(crate) fn csv_reader<R: Read>(input: R) -> csv::Reader<R> {
    csv::ReaderBuilder::new()
        .has_headers(false)
        .flexible(true)
        .from_reader(input)
}

/// The first record of `input` (a CSV file's header), `None` when it has none.
pub(crate) fn first_record<R: Read>(input: R) -> io::Result<Option<Vec<String>>> {
    match csv_reader(input).records().next() {
        None => Ok(None),
        Some(Ok(record)) => Ok(Some(fields(&record))),
        Some(Err(e)) => Err(crate::summary::write::io_error(e)),
    }
}

/// A record's fields as strings.
pub(crate) fn fields(record: &csv::StringRecord) -> Vec<String> {
    record.iter().map(str::to_string).collect()
}

/// The `csv` crate's error on reading text in memory, with its line.
fn malformed(e: csv::Error) -> SummaryReadError {
    let line = e.position().map_or(0, csv::Position::line);
    match e.into_kind() {
        csv::ErrorKind::Io(source) => SummaryReadError::Malformed {
            line,
            why: source.to_string(),
        },
        csv::ErrorKind::Utf8 { err, .. } => SummaryReadError::Malformed {
            line,
            why: format!("field {} is not UTF-8", err.field() + 1),
        },
        other => SummaryReadError::Malformed {
            line,
            why: format!("{other:?}"),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::SummaryCsv;
    use proptest::prelude::*;

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
                varied: vec!["a,\"b\"\nc".into(), "0.5".into()],
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
        let parse = |text: &str| parse_summary(text.as_bytes()).map_err(|e| e.to_string());
        let e = parse(&format!(
            "{head}{good}001-r1,udp,latency_ms,1,2,x,4,5,3,10\n"
        ))
        .unwrap_err();
        assert!(
            e.contains("line 3") && e.contains("p50") && e.contains("`x`"),
            "{e}"
        );
        let e = parse(&format!("{head}{good}{good}001-r1,udp,1,2\n")).unwrap_err();
        assert!(e.contains("line 4") && e.contains("4 fields"), "{e}");
        let e = parse("run,proto,metric,p5\n").unwrap_err();
        assert!(e.contains("line 1") && e.contains("header"), "{e}");
        let e = parse("").unwrap_err();
        assert!(e.contains("empty"), "{e}");
        // A quote never closed takes the rest of the file into its field.
        let e = parse(&format!(
            "{head}\"001,udp,latency_ms,1,2,3,4,5,3,10\n{good}"
        ))
        .unwrap_err();
        assert!(e.contains("line 2") && e.contains("1 fields"), "{e}");
        let e = parse_summary(b"run,metric,p5,p25,p50,p75,p95,mean,n\nr\xff,m,1,2,3,4,5,6,7\n")
            .unwrap_err()
            .to_string();
        assert!(e.contains("line 2") && e.contains("UTF-8"), "{e}");
    }

    #[test]
    fn blank_lines_and_crlf_line_ends_are_read() {
        let text = "run,metric,p5,p25,p50,p75,p95,mean,n\r\n\r\n\
                    001-r1,latency_ms,1,2,3,4,5,3,10\r\n  \n";
        let table = parse_summary(text.as_bytes()).unwrap();
        assert!(table.keys.is_empty());
        assert_eq!(table.rows.len(), 1);
        assert_eq!(table.rows[0].run, "001-r1");
        assert_eq!(table.rows[0].dist.n, 10);
    }

    proptest! {
        /// Any text in any field (commas, quotes, line breaks, spaces, empty) is read back as
        /// written, the header's varied keys too.
        #[test]
        fn any_strings_written_read_back_the_same(
            keys in proptest::collection::vec(any::<String>(), 0..3),
            runs in proptest::collection::vec(
                (any::<String>(), any::<String>(), proptest::collection::vec(any::<String>(), 3)),
                1..4,
            ),
        ) {
            let dir = tempfile::tempdir().unwrap();
            let path = dir.path().join("summary.csv");
            let rows: Vec<SummaryRow> = runs
                .into_iter()
                .map(|(run, metric, varied)| SummaryRow {
                    run,
                    varied: varied[..keys.len()].to_vec(),
                    metric,
                    dist: Distribution::of(&[1.5, 2.0]),
                })
                .collect();
            let mut csv = SummaryCsv::create(&path, &keys).unwrap();
            csv.write_rows(&rows).unwrap();
            csv.flush().unwrap();
            drop(csv);
            let table = read_summary(&path).unwrap();
            prop_assert_eq!(table.keys, keys);
            prop_assert_eq!(table.rows, rows);
        }
    }
}
