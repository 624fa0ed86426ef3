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
    /// The metric (`latency_ms`, `server_rss_mib`, ...).
    pub metric: String,
    /// The values of [`STATS`], in that order; NaN where the file leaves a value empty.
    pub stats: [f64; STATS.len()],
}

/// Parses the text of a `summary.csv` read from `path` (named in errors).
pub fn parse(text: &str, path: &Path) -> Result<Vec<CsvRow>, ReportError> {
    let malformed = |line: usize, why: String| ReportError::Malformed {
        path: path.to_path_buf(),
        why: format!("line {line}: {why}"),
    };
    let mut lines = text.lines().enumerate().map(|(i, l)| (i + 1, l));
    let Some((_, header)) = lines.next() else {
        return Err(malformed(1, "empty file, no header".into()));
    };
    let header = fields(header).map_err(|why| malformed(1, why))?;
    let column = |name: &str| {
        header
            .iter()
            .position(|h| h == name)
            .ok_or_else(|| malformed(1, format!("no `{name}` column in the header")))
    };
    let run = column("run")?;
    let metric = column("metric")?;
    let stats = STATS.map(column);
    let mut at = [0usize; STATS.len()];
    for (slot, found) in at.iter_mut().zip(stats) {
        *slot = found?;
    }
    let mut rows = Vec::new();
    for (number, line) in lines {
        if line.trim().is_empty() {
            continue;
        }
        let f = fields(line).map_err(|why| malformed(number, why))?;
        if f.len() != header.len() {
            return Err(malformed(
                number,
                format!("{} fields for {} columns", f.len(), header.len()),
            ));
        }
        let mut values = [f64::NAN; STATS.len()];
        for ((value, &i), name) in values.iter_mut().zip(&at).zip(STATS) {
            if !f[i].is_empty() {
                *value = f[i].parse().map_err(|_| {
                    malformed(number, format!("{name} is not a number: {:?}", f[i]))
                })?;
            }
        }
        rows.push(CsvRow {
            run: f[run].clone(),
            metric: f[metric].clone(),
            stats: values,
        });
    }
    Ok(rows)
}

/// The fields of one CSV line (RFC 4180 quoting: `"a,""b"""` is `a,"b"`).
fn fields(line: &str) -> Result<Vec<String>, String> {
    let mut out = Vec::new();
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
                    out.push(field);
                    return Ok(out);
                }
                Some(',') => {}
                Some(c) => return Err(format!("{c:?} after a quoted field")),
            }
        } else {
            loop {
                match chars.next() {
                    None => {
                        out.push(field);
                        return Ok(out);
                    }
                    Some(',') => break,
                    Some(c) => field.push(c),
                }
            }
        }
        out.push(field);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fields_follow_rfc_4180_quoting() {
        assert_eq!(fields("a,,b").unwrap(), ["a", "", "b"]);
        assert_eq!(fields("\"a,\"\"b\"\"\",c").unwrap(), ["a,\"b\"", "c"]);
        assert_eq!(fields("x,\"\"").unwrap(), ["x", ""]);
        assert!(fields("\"open").is_err());
        assert!(fields("\"a\"b").is_err());
    }

    #[test]
    fn rows_are_read_by_column_name_with_empty_values_as_nan() {
        let text = "run,proto,metric,p5,p25,p50,p75,p95,mean,n\n\
                    001-proto=udp-r1,udp,latency_ms,1,2,3,4,5,3.5,10\n\
                    \"002-proto=a,b-r1\",\"a,b\",server_rss_mib,,,,,,,0\n";
        let rows = parse(text, Path::new("summary.csv")).unwrap();
        assert_eq!(rows.len(), 2);
        assert_eq!(rows[0].run, "001-proto=udp-r1");
        assert_eq!(rows[0].metric, "latency_ms");
        assert_eq!(rows[0].stats, [1.0, 2.0, 3.0, 4.0, 5.0, 3.5]);
        assert_eq!(rows[1].run, "002-proto=a,b-r1");
        assert!(rows[1].stats.iter().all(|v| v.is_nan()));
    }

    #[test]
    fn malformed_files_say_where() {
        let path = Path::new("summary.csv");
        let err = parse("", path).unwrap_err().to_string();
        assert!(err.contains("no header"), "{err}");
        let err = parse("run,metric,p5\n", path).unwrap_err().to_string();
        assert!(err.contains("no `p25` column"), "{err}");
        let header = "run,metric,p5,p25,p50,p75,p95,mean,n\n";
        let err = parse(&format!("{header}r,m,1,2\n"), path)
            .unwrap_err()
            .to_string();
        assert!(err.contains("line 2: 4 fields for 9 columns"), "{err}");
        let err = parse(&format!("{header}r,m,1,x,3,4,5,6,7\n"), path)
            .unwrap_err()
            .to_string();
        assert!(err.contains("line 2: p25 is not a number"), "{err}");
    }
}
