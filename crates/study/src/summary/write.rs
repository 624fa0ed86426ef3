//! Writing `summary.csv`: its header and rows, through the `csv` crate (a field holding a comma,
//! a quote or a line break is quoted, its quotes doubled).

use super::{read::first_record, SummaryRow, TAIL};
use std::fs::File;
use std::io::{self, Write};
use std::path::Path;

/// The header's fields: `run`, the varied keys, `metric`, `p5`, `p25`, `p50`, `p75`, `p95`,
/// `mean`, and last `n`, the number of values (queries or seconds).
pub fn header_fields(varied_keys: &[String]) -> Vec<String> {
    let mut fields = vec!["run".to_string()];
    fields.extend(varied_keys.iter().cloned());
    fields.extend(TAIL.map(str::to_string));
    fields
}

/// The header line as written (without its newline).
pub fn header(varied_keys: &[String]) -> String {
    let mut out = csv_writer(Vec::new());
    let line = out
        .write_record(header_fields(varied_keys))
        .and_then(|()| out.into_inner().map_err(|e| e.into_error().into()));
    match line {
        Ok(bytes) => String::from_utf8_lossy(&bytes)
            .trim_end_matches('\n')
            .to_string(),
        // Writing to memory does not fail.
        Err(_) => String::new(),
    }
}

/// A CSV writer as every file of a study is written: `,` between fields, `\n` after each
/// record, quotes only where a field needs them.
pub(crate) fn csv_writer<W: Write>(out: W) -> csv::Writer<W> {
    csv::WriterBuilder::new()
        .has_headers(false)
        .terminator(csv::Terminator::Any(b'\n'))
        .from_writer(out)
}

/// The `csv` crate's error as an I/O error (what the writers return).
pub(crate) fn io_error(e: csv::Error) -> io::Error {
    match e.into_kind() {
        csv::ErrorKind::Io(e) => e,
        other => io::Error::other(format!("{other:?}")),
    }
}

/// Writes `summary.csv`.
pub struct SummaryCsv {
    out: csv::Writer<File>,
    columns: usize,
}

impl SummaryCsv {
    /// Creates (or truncates) the file at `path` and writes the header.
    pub fn create(path: &Path, varied_keys: &[String]) -> io::Result<SummaryCsv> {
        let mut out = csv_writer(ldplayer_output::create_direct(path)?);
        out.write_record(header_fields(varied_keys))
            .map_err(io_error)?;
        Ok(SummaryCsv {
            out,
            columns: varied_keys.len(),
        })
    }

    /// Opens the file at `path` to add rows after those of finished runs (`--resume`): writes
    /// the header if the file is missing or empty, and refuses a file whose header is not
    /// this plan's.
    pub fn append(path: &Path, varied_keys: &[String]) -> io::Result<SummaryCsv> {
        let want = header_fields(varied_keys);
        let first = match File::open(path) {
            Ok(f) => first_record(f)?,
            Err(e) if e.kind() == io::ErrorKind::NotFound => None,
            Err(e) => return Err(e),
        };
        match first {
            None => SummaryCsv::create(path, varied_keys),
            Some(fields) if fields == want => Ok(SummaryCsv {
                out: csv_writer(ldplayer_output::open_append(path)?),
                columns: varied_keys.len(),
            }),
            Some(fields) => Err(io::Error::new(
                io::ErrorKind::InvalidData,
                format!(
                    "{} has the header `{}`, not this plan's `{}`",
                    path.display(),
                    fields.join(","),
                    header(varied_keys)
                ),
            )),
        }
    }

    /// Writes one row; its varied values must be as many as the header's varied keys.
    pub fn write_row(&mut self, row: &SummaryRow) -> io::Result<()> {
        if row.varied.len() != self.columns {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!(
                    "run {} has {} varied values for {} varied keys",
                    row.run,
                    row.varied.len(),
                    self.columns
                ),
            ));
        }
        self.out.write_record(row_fields(row)).map_err(io_error)
    }

    /// Writes every row of `rows`.
    pub fn write_rows(&mut self, rows: &[SummaryRow]) -> io::Result<()> {
        rows.iter().try_for_each(|r| self.write_row(r))
    }

    /// Writes what is buffered to the file.
    pub fn flush(&mut self) -> io::Result<()> {
        self.out.flush()
    }
}

/// The fields of a row, in the header's order.
fn row_fields(row: &SummaryRow) -> Vec<String> {
    let d = &row.dist;
    let mut fields = vec![row.run.clone()];
    fields.extend(row.varied.iter().cloned());
    fields.push(row.metric.clone());
    fields.extend([d.p5, d.p25, d.p50, d.p75, d.p95, d.mean].map(number));
    fields.push(d.n.to_string());
    fields
}

/// A number as the shortest text that reads back the same (`2`, not `2.0`); empty for NaN.
pub(crate) fn number(x: f64) -> String {
    if x.is_nan() {
        String::new()
    } else {
        x.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Distribution;

    fn row(run: &str, varied: &[&str]) -> SummaryRow {
        SummaryRow {
            run: run.into(),
            varied: varied.iter().map(|v| v.to_string()).collect(),
            metric: "latency_ms".into(),
            dist: Distribution::of(&[1.0, 2.0, 3.0]),
        }
    }

    #[test]
    fn the_header_is_the_contract() {
        let keys = ["proto".to_string(), "rtt_ms".to_string()];
        assert_eq!(
            header(&keys),
            "run,proto,rtt_ms,metric,p5,p25,p50,p75,p95,mean,n"
        );
        assert_eq!(header(&[]), "run,metric,p5,p25,p50,p75,p95,mean,n");
        assert_eq!(
            header(&["a,b".to_string()]),
            "run,\"a,b\",metric,p5,p25,p50,p75,p95,mean,n"
        );
    }

    /// The text the hand-written writer this one replaced gave for the same rows: the
    /// `csv` crate's output is the same byte for byte, quoting included.
    #[test]
    fn rows_follow_the_header_and_resume_appends_after_them() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("summary.csv");
        let keys = vec!["proto".to_string()];
        let mut csv = SummaryCsv::create(&path, &keys).unwrap();
        csv.write_row(&row("001-proto=udp-r1", &["udp"])).unwrap();
        let mut empty = row("002-proto=tcp-r1", &["tcp"]);
        empty.dist = Distribution::of(&[]);
        csv.write_row(&empty).unwrap();
        assert!(csv.write_row(&row("x", &[])).is_err());
        drop(csv);
        let mut again = SummaryCsv::append(&path, &keys).unwrap();
        again
            .write_row(&row("003-proto=a,b-r1", &["a,\"b\""]))
            .unwrap();
        again.flush().unwrap();
        assert_eq!(
            std::fs::read_to_string(&path).unwrap(),
            "run,proto,metric,p5,p25,p50,p75,p95,mean,n\n\
             001-proto=udp-r1,udp,latency_ms,1.1,1.5,2,2.5,2.9,2,3\n\
             002-proto=tcp-r1,tcp,latency_ms,,,,,,,0\n\
             \"003-proto=a,b-r1\",\"a,\"\"b\"\"\",latency_ms,1.1,1.5,2,2.5,2.9,2,3\n"
        );
        let other = SummaryCsv::append(&path, &["rtt_ms".to_string()]);
        assert!(other.is_err(), "a file of another plan must be refused");
    }

    #[test]
    fn append_starts_a_missing_or_empty_file_with_the_header() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("summary.csv");
        let keys = vec!["proto".to_string()];
        drop(SummaryCsv::append(&path, &keys).unwrap());
        assert_eq!(
            std::fs::read_to_string(&path).unwrap(),
            "run,proto,metric,p5,p25,p50,p75,p95,mean,n\n"
        );
        std::fs::write(&path, "").unwrap();
        let mut csv = SummaryCsv::append(&path, &keys).unwrap();
        csv.write_row(&row("001-r1", &["udp"])).unwrap();
        csv.flush().unwrap();
        let text = std::fs::read_to_string(&path).unwrap();
        assert!(text.starts_with("run,proto,metric,"), "{text}");
        assert_eq!(text.lines().count(), 2, "{text}");
    }
}
