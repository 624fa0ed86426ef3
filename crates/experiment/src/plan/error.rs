//! Why a plan was refused, and where in its file.

use std::fmt;
use std::ops::Range;
use std::path::PathBuf;

/// A place in a plan file: line and column, both from 1 (columns count characters).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Place {
    /// The plan file, when the plan came from one.
    pub file: Option<PathBuf>,
    /// Line, from 1.
    pub line: usize,
    /// Column, from 1.
    pub column: usize,
}

impl Place {
    /// The place of byte offset `offset` of `text` (clamped to the text's length).
    pub fn of_offset(text: &str, offset: usize) -> Place {
        let mut offset = offset.min(text.len());
        while !text.is_char_boundary(offset) {
            offset -= 1;
        }
        let before = &text[..offset];
        let line_start = before.rfind('\n').map_or(0, |i| i + 1);
        Place {
            file: None,
            line: before.matches('\n').count() + 1,
            column: before[line_start..].chars().count() + 1,
        }
    }
}

impl fmt::Display for Place {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.file {
            Some(file) => write!(f, "{}:{}:{}", file.display(), self.line, self.column),
            None => write!(f, "line {}, column {}", self.line, self.column),
        }
    }
}

/// Why a plan could not be read or was refused.
#[derive(Debug, thiserror::Error)]
pub enum PlanError {
    /// The plan file could not be read.
    #[error("cannot read the plan {}", .path.display())]
    Read {
        /// The plan file.
        path: PathBuf,
        /// What the system said.
        #[source]
        source: std::io::Error,
    },
    /// A key is unknown, a value has the wrong type or is out of range, or keys contradict each
    /// other.
    #[error("{place}: {key}: {message}")]
    Invalid {
        /// Where in the file.
        place: Place,
        /// The key at fault as a dotted path (`network.loss`, `vary.kind[2]`), or the table it
        /// lies in when the key itself is unknown.
        key: String,
        /// What is wrong, and what would be right.
        message: String,
    },
}

impl PlanError {
    /// The place in the file, for errors that have one.
    pub fn place(&self) -> Option<&Place> {
        match self {
            PlanError::Read { .. } => None,
            PlanError::Invalid { place, .. } => Some(place),
        }
    }

    /// The key at fault, for errors that have one.
    pub fn key(&self) -> Option<&str> {
        match self {
            PlanError::Read { .. } => None,
            PlanError::Invalid { key, .. } => Some(key),
        }
    }

    /// Names the plan file in the error's place.
    pub(crate) fn in_file(mut self, path: PathBuf) -> PlanError {
        if let PlanError::Invalid { place, .. } = &mut self {
            place.file = Some(path);
        }
        self
    }
}

/// Builds [`PlanError::Invalid`]s against one plan's text.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Locator<'a> {
    text: &'a str,
}

impl<'a> Locator<'a> {
    /// A locator for `text`.
    pub(crate) fn new(text: &'a str) -> Self {
        Locator { text }
    }

    /// An error about `key` at the byte range `span` (its start; the file's start without one).
    pub(crate) fn error(
        &self,
        span: Option<Range<usize>>,
        key: impl Into<String>,
        message: impl Into<String>,
    ) -> PlanError {
        PlanError::Invalid {
            place: Place::of_offset(self.text, span.map_or(0, |s| s.start)),
            key: key.into(),
            message: message.into(),
        }
    }

    /// The error for what the TOML reader refused: bad syntax, an unknown key, a value of the
    /// wrong type. The key is the table the error lies in (from the last `[header]` before it)
    /// unless the message names it.
    pub(crate) fn toml(&self, e: &toml::de::Error) -> PlanError {
        let offset = e.span().map_or(0, |s| s.start);
        let table = self.table_at(offset);
        self.error(e.span(), table, e.message().trim_end())
    }

    /// The `[table]` whose body holds byte `offset`: the last header line before it, or `plan`
    /// for the top level.
    fn table_at(&self, offset: usize) -> String {
        let mut offset = offset.min(self.text.len());
        while !self.text.is_char_boundary(offset) {
            offset -= 1;
        }
        self.text[..offset]
            .lines()
            .rev()
            .map(str::trim)
            .find(|l| l.starts_with('[') && !l.starts_with("[["))
            .and_then(|l| l.strip_prefix('[')?.split(']').next())
            .map_or_else(|| "plan".to_string(), |t| t.trim().to_string())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn offsets_become_lines_and_columns_from_one() {
        let text = "a = 1\n[b]\nc = \"é\" x\n";
        assert_eq!(Place::of_offset(text, 0).line, 1);
        let p = Place::of_offset(text, text.find('x').unwrap());
        assert_eq!((p.line, p.column), (3, 9));
        let end = Place::of_offset(text, 10_000);
        assert_eq!(end.line, 4);
    }

    #[test]
    fn the_table_is_the_last_header_before_the_offset() {
        let text = "x = 1\n[trace]\nfile = 1\n[ network ]\nrtt = 2\n";
        let l = Locator::new(text);
        assert_eq!(l.table_at(2), "plan");
        assert_eq!(l.table_at(text.find("file").unwrap()), "trace");
        assert_eq!(l.table_at(text.find("rtt").unwrap()), "network");
    }
}
