//! Reading an experiment's `summary.csv`: one row per run and metric, with its percentiles.

use crate::ReportError;
use std::path::Path;

/// The statistics of a `summary.csv` row a comparison shows, by their column names.
pub const STATS: [&str; 6] = ["p5", "p25", "p50", "p75", "p95", "mean"];

/// One row: a metric of a run.
#[derive(Debug, Clone, PartialEq)]
pub struct CsvRow {
    /// The run's name.
    pub run: String,
    /// The run's varied keys and values, in the file's column order.
    pub varied: Vec<(String, String)>,
    /// The metric (`latency_ms`, `server_rss_mib`, ...).
    pub metric: String,
    /// The values of [`STATS`], in that order; NaN where the file leaves a value empty.
    pub stats: [f64; STATS.len()],
}

/// Parses the text of a `summary.csv` read from `path` (named in errors), through the one
/// reader of the file ([`crate::summary_csv`]).
pub fn parse(text: impl AsRef<[u8]>, path: &Path) -> Result<Vec<CsvRow>, ReportError> {
    parse_with_keys(text, path).map(|(_, rows)| rows)
}

/// [`parse`], with the varied keys of the header (the columns between `run` and `metric`),
/// which a file without rows has too.
pub fn parse_with_keys(
    text: impl AsRef<[u8]>,
    path: &Path,
) -> Result<(Vec<String>, Vec<CsvRow>), ReportError> {
    let table = crate::summary_csv::parse_summary(text).map_err(|why| ReportError::Malformed {
        path: path.to_path_buf(),
        why,
    })?;
    let keys = table.keys;
    let rows = table
        .rows
        .into_iter()
        .map(|row| CsvRow {
            run: row.run,
            varied: keys.iter().cloned().zip(row.varied).collect(),
            metric: row.metric,
            stats: [
                row.dist.p5,
                row.dist.p25,
                row.dist.p50,
                row.dist.p75,
                row.dist.p95,
                row.dist.mean,
            ],
        })
        .collect();
    Ok((keys, rows))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_are_read_by_column_name_with_empty_values_as_nan() {
        let text = "run,proto,metric,p5,p25,p50,p75,p95,mean,n\n\
                    001-proto=udp-r1,udp,latency_ms,1,2,3,4,5,3.5,10\n\
                    \"002-proto=a,b-r1\",\"a,b\",server_rss_mib,,,,,,,0\n";
        let rows = parse(text, Path::new("summary.csv")).unwrap();
        assert_eq!(rows.len(), 2);
        assert_eq!(rows[0].run, "001-proto=udp-r1");
        assert_eq!(rows[0].varied, [("proto".to_string(), "udp".to_string())]);
        assert_eq!(rows[0].metric, "latency_ms");
        assert_eq!(rows[0].stats, [1.0, 2.0, 3.0, 4.0, 5.0, 3.5]);
        assert_eq!(rows[1].run, "002-proto=a,b-r1");
        assert!(rows[1].stats.iter().all(|v| v.is_nan()));
    }

    #[test]
    fn a_quoted_line_break_stays_in_its_field() {
        let text = "run,proto,metric,p5,p25,p50,p75,p95,mean,n\n\
                    \"001-r1\",\"two\nlines\",latency_ms,1,2,3,4,5,3.5,10\n";
        let rows = parse(text, Path::new("summary.csv")).unwrap();
        assert_eq!(rows.len(), 1);
        assert_eq!(
            rows[0].varied,
            [("proto".to_string(), "two\nlines".to_string())]
        );
        assert_eq!(rows[0].stats[5], 3.5);
    }

    #[test]
    fn malformed_files_say_where() {
        let path = Path::new("summary.csv");
        let err = parse("", path).unwrap_err().to_string();
        assert!(
            err.contains("summary.csv") && err.contains("empty"),
            "{err}"
        );
        let err = parse("run,metric,p5\n", path).unwrap_err().to_string();
        assert!(err.contains("line 1") && err.contains("header"), "{err}");
        let header = "run,metric,p5,p25,p50,p75,p95,mean,n\n";
        let err = parse(format!("{header}r,m,1,2\n"), path)
            .unwrap_err()
            .to_string();
        assert!(err.contains("line 2: 4 fields"), "{err}");
        let err = parse(format!("{header}r,m,1,x,3,4,5,6,7\n"), path)
            .unwrap_err()
            .to_string();
        assert!(err.contains("line 2: p25"), "{err}");
    }
}
