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
    /// wrong type. The key is found in the text at the error: the table it lies in (from the
    /// last `[header]` before it), the inline tables around it on its line, and the key itself
    /// when the error is at a key or at its value.
    pub(crate) fn toml(&self, e: &toml::de::Error) -> PlanError {
        let span = e.span().unwrap_or(0..0);
        let mut key = self.table_at(span.start);
        for part in self.keys_at(span.clone()) {
            key.push('.');
            key.push_str(part);
        }
        self.error(e.span(), key, e.message().trim_end())
    }

    /// The keys leading to `span` on its line: the inline tables it lies in, then the key at
    /// `span` or whose value (or array) `span` is in. Best effort: a brace inside a string
    /// on the same line may confuse it.
    fn keys_at(&self, span: Range<usize>) -> Vec<&'a str> {
        let text = self.text;
        let (Some(before), Some(at), Some(after)) = (
            text.get(..span.start),
            text.get(span.clone()),
            text.get(span.end..),
        ) else {
            return Vec::new();
        };
        let line = &before[before.rfind('\n').map_or(0, |i| i + 1)..];
        let mut own =
            if !at.is_empty() && at.chars().all(is_key_char) && after.trim_start().starts_with('=')
            {
                Some(at)
            } else {
                key_before_equals(line)
            };
        let mut tables = Vec::new();
        let mut depth = 0usize;
        for (i, c) in line.char_indices().rev() {
            match c {
                '}' | ']' => depth += 1,
                '{' | '[' if depth > 0 => depth -= 1,
                '{' => tables.extend(key_before_equals(&line[..i])),
                '[' if own.is_none() => own = key_before_equals(&line[..i]),
                _ => {}
            }
        }
        tables.reverse();
        tables.extend(own);
        tables
    }

    /// The `[table]` whose header or body holds byte `offset`: the last header line up to
    /// its line, or `plan` for the top level.
    fn table_at(&self, offset: usize) -> String {
        let mut offset = offset.min(self.text.len());
        while !self.text.is_char_boundary(offset) {
            offset -= 1;
        }
        let line_end = self.text[offset..]
            .find('\n')
            .map_or(self.text.len(), |i| offset + i);
        self.text[..line_end]
            .lines()
            .rev()
            .map(str::trim)
            .find(|l| l.starts_with('[') && !l.starts_with("[["))
            .and_then(|l| l.strip_prefix('[')?.split(']').next())
            .map_or_else(|| "plan".to_string(), |t| t.trim().to_string())
    }
}

/// Whether `c` may be part of a bare TOML key.
fn is_key_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_' || c == '-'
}

/// The bare key of `text` ending in `key =` (spaces allowed around `=`).
fn key_before_equals(text: &str) -> Option<&str> {
    let text = text.trim_end().strip_suffix('=')?.trim_end();
    let start = text
        .char_indices()
        .rev()
        .find(|&(_, c)| !is_key_char(c))
        .map_or(0, |(i, c)| i + c.len_utf8());
    Some(&text[start..]).filter(|k| !k.is_empty())
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

    #[test]
    fn the_keys_at_an_error_are_read_from_its_line() {
        let text =
            "[t]\nsynth = { a = 1, sped = 2, q = { x = \"y\" } }\nzones = [\"a\", 1]\nk = 3\n";
        let l = Locator::new(text);
        let at = |needle: &str| {
            let i = text.find(needle).unwrap();
            l.keys_at(i..i + needle.len())
        };
        assert_eq!(at("sped"), ["synth", "sped"]);
        assert_eq!(at("2,"), ["synth", "sped"]);
        assert_eq!(at("\"y\""), ["synth", "q", "x"]);
        assert_eq!(at("1]"), ["zones"]);
        assert_eq!(at("3"), ["k"]);
    }
}
