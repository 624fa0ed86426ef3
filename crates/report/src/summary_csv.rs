//! Reading an experiment's `summary.csv` back, for the experiment's figures and for `compare`:
//! the file's one reader is `ldplayer-study`'s (through the `csv` crate), its errors named
//! after the file here.

use std::path::Path;

pub use ldplayer_study::SummaryTable;

use crate::error::ReportError;

/// Reads the `summary.csv` at `path`; a line that is not a row names itself.
pub fn read_summary(path: &Path) -> Result<SummaryTable, ReportError> {
    ldplayer_output::protect_input(path);
    let text = std::fs::read(path).map_err(|source| ReportError::Io {
        path: path.to_path_buf(),
        source,
    })?;
    parse_summary(&text).map_err(|why| ReportError::Malformed {
        path: path.to_path_buf(),
        why,
    })
}

/// Reads the text of a `summary.csv`; the error names the line (from 1) and what is wrong.
pub fn parse_summary(text: impl AsRef<[u8]>) -> Result<SummaryTable, String> {
    ldplayer_study::parse_summary(text.as_ref()).map_err(|e| e.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_malformed_file_is_named_with_its_line() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("summary.csv");
        std::fs::write(
            &path,
            "run,proto,metric,p5,p25,p50,p75,p95,mean,n\n001-r1,udp,latency_ms,1,2,x,4,5,3,10\n",
        )
        .unwrap();
        let e = read_summary(&path).unwrap_err();
        let text = e.to_string();
        assert!(
            matches!(e, ReportError::Malformed { .. })
                && text.contains("summary.csv")
                && text.contains("line 2"),
            "{text}"
        );
        let missing = read_summary(&dir.path().join("none.csv")).unwrap_err();
        assert!(matches!(missing, ReportError::Io { .. }), "{missing}");
    }
}
