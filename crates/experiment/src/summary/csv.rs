//! The `summary.csv` file: its header and rows.

use super::Distribution;
use serde::{Deserialize, Serialize};
use std::fs::File;
use std::io::{self, BufRead, BufReader, BufWriter, Write};
use std::path::Path;

/// One row: a metric of a run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SummaryRow {
    /// The run's name ([`RunSpec::id`](crate::plan::RunSpec::id)).
    pub run: String,
    /// The run's varied values, in the plan's `[vary]` order.
    pub varied: Vec<String>,
    /// The metric (`latency_ms`, `server_rss_mib`, ...).
    pub metric: String,
    /// Its distribution over the run.
    pub dist: Distribution,
}

/// The header line (without its newline): `run`, the varied keys, `metric`, `p5`, `p25`,
/// `p50`, `p75`, `p95`, `mean`, and last `n`, the number of values (queries or seconds).
pub fn header(varied_keys: &[String]) -> String {
    let mut fields = vec!["run".to_string()];
    fields.extend(varied_keys.iter().map(|k| field(k)));
    fields.extend(["metric", "p5", "p25", "p50", "p75", "p95", "mean", "n"].map(str::to_string));
    fields.join(",")
}

/// Writes `summary.csv`.
pub struct SummaryCsv {
    out: BufWriter<File>,
    columns: usize,
}

impl SummaryCsv {
    /// Creates (or truncates) the file at `path` and writes the header.
    pub fn create(path: &Path, varied_keys: &[String]) -> io::Result<SummaryCsv> {
        let mut out = BufWriter::new(ldplayer_output::create_direct(path)?);
        writeln!(out, "{}", header(varied_keys))?;
        Ok(SummaryCsv {
            out,
            columns: varied_keys.len(),
        })
    }

    /// Opens the file at `path` to add rows after those of finished runs (`--resume`): writes
    /// the header if the file is missing or empty, and refuses a file whose header is not
    /// this plan's.
    pub fn append(path: &Path, varied_keys: &[String]) -> io::Result<SummaryCsv> {
        let want = header(varied_keys);
        let first = match File::open(path) {
            Ok(f) => BufReader::new(f).lines().next().transpose()?,
            Err(e) if e.kind() == io::ErrorKind::NotFound => None,
            Err(e) => return Err(e),
        };
        match first {
            None => SummaryCsv::create(path, varied_keys),
            Some(line) if line == want => Ok(SummaryCsv {
                out: BufWriter::new(ldplayer_output::open_append(path)?),
                columns: varied_keys.len(),
            }),
            Some(line) => Err(io::Error::new(
                io::ErrorKind::InvalidData,
                format!(
                    "{} has the header `{line}`, not this plan's `{want}`",
                    path.display()
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
        let d = &row.dist;
        let mut fields = vec![field(&row.run)];
        fields.extend(row.varied.iter().map(|v| field(v)));
        fields.push(field(&row.metric));
        fields.extend([d.p5, d.p25, d.p50, d.p75, d.p95, d.mean].map(number));
        fields.push(d.n.to_string());
        writeln!(self.out, "{}", fields.join(","))
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

/// A CSV field, quoted when it holds a comma, a quote or a line break.
fn field(text: &str) -> String {
    if text.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", text.replace('"', "\"\""))
    } else {
        text.to_string()
    }
}

/// A number as the shortest text that reads back the same; empty for NaN.
fn number(x: f64) -> String {
    if x.is_nan() {
        String::new()
    } else {
        x.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
    }

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
}
