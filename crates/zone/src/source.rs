//! The text `domain`'s parser reads, made from a zone file as written, and the way back from
//! its offsets to the file's.
//!
//! Three things are rewritten, each in place of what it stands for, so that the records come
//! out as the file means them and line breaks stay where they are:
//!
//! * time values with units (`1h`) in TTL positions and the SOA's timers, to seconds
//!   ([`crate::units`]): the parser takes only seconds;
//! * every byte of a token that is not printable ASCII (a byte of UTF-8 or Latin-1 text, a tab
//!   or another control character inside quotes), to its `\DDD` escape: RFC 1035 §5.1 makes
//!   names and character-strings bytes, and nsd and BIND keep such bytes as they are, while the
//!   parser reads the text as UTF-8 and takes only printable ASCII in names and strings. A line
//!   feed inside quotes is left alone (BIND and knotd refuse it; so does the parser). The
//!   tokens of `$INCLUDE` are left alone: they name a file;
//! * `@` in a name of a record's data (`www CNAME @`), to `""`, which the parser takes for the
//!   origin: it takes `@` for the origin only as an owner, and elsewhere for a label `\@`,
//!   where BIND, nsd and knotd take the origin ([`entries::origin_signs`]);
//! * a line feed is added at the end of a text that lacks one (the parser's last record
//!   otherwise runs into the end of its buffer).

use std::borrow::Cow;
use std::ops::Range;

use crate::entries;
use crate::tokens::Tokens;
use crate::units;

/// A zone file's text as the parser is to read it, and where its bytes came from.
pub(crate) struct Source<'a> {
    /// The text as the parser is to read it.
    pub text: Cow<'a, [u8]>,
    /// Each rewritten piece: its range in the original text and in the rewritten one, in order.
    edits: Vec<(Range<usize>, Range<usize>)>,
}

impl Source<'_> {
    /// The offset in the original text of an offset in the rewritten one (a rewritten piece's
    /// bytes map to its start).
    pub fn original_offset(&self, offset: usize) -> usize {
        let i = self.edits.partition_point(|(_, new)| new.start <= offset);
        match i.checked_sub(1).map(|i| &self.edits[i]) {
            None => offset,
            Some((old, new)) if offset < new.end => old.start,
            Some((old, new)) => offset - new.end + old.end,
        }
    }

    /// The offset in the rewritten text of an offset in the original one (inside a rewritten
    /// piece: the start of what replaced it).
    pub fn parser_offset(&self, offset: usize) -> usize {
        let i = self.edits.partition_point(|(old, _)| old.start <= offset);
        match i.checked_sub(1).map(|i| &self.edits[i]) {
            None => offset,
            Some((old, new)) if offset < old.end => new.start,
            Some((old, new)) => offset - old.end + new.end,
        }
    }
}

/// The text the parser is to read for a zone file's `text`; borrowed when nothing changes.
pub(crate) fn prepare(text: &[u8]) -> Source<'_> {
    let mut pieces: Vec<(Range<usize>, Vec<u8>)> = units::rewrites(text)
        .into_iter()
        .map(|(range, secs)| (range, secs.to_string().into_bytes()))
        .collect();
    let escapes = escapes(text);
    let signs = entries::origin_signs(text);
    if !escapes.is_empty() || !signs.is_empty() {
        // Time values and `@` are ASCII tokens of their own: the three never overlap.
        pieces.extend(escapes);
        pieces.extend(signs.into_iter().map(|at| (at..at + 1, b"\"\"".to_vec())));
        pieces.sort_by_key(|(range, _)| range.start);
    }
    if !text.is_empty() && !text.ends_with(b"\n") {
        pieces.push((text.len()..text.len(), b"\n".to_vec()));
    }
    let mut source = Source {
        text: Cow::Borrowed(text),
        edits: Vec::with_capacity(pieces.len()),
    };
    if pieces.is_empty() {
        return source;
    }
    let mut out = Vec::with_capacity(text.len() + 3 * pieces.len());
    let mut copied = 0;
    for (range, new) in pieces {
        out.extend_from_slice(&text[copied..range.start]);
        let start = out.len();
        out.extend_from_slice(&new);
        source.edits.push((range.clone(), start..out.len()));
        copied = range.end;
    }
    out.extend_from_slice(&text[copied..]);
    source.text = Cow::Owned(out);
    source
}

/// Whether a byte of a token is written as `\DDD` for the parser: anything but printable ASCII,
/// except a line feed.
fn needs_escape(b: u8) -> bool {
    !(0x20..0x7F).contains(&b) && b != b'\n'
}

/// The bytes of the tokens of `text` (but those of `$INCLUDE`) that the parser takes only
/// escaped, each (with the backslash before it, when it was escaped as itself: `\é`) and its
/// `\DDD`.
fn escapes(text: &[u8]) -> Vec<(Range<usize>, Vec<u8>)> {
    let mut found = Vec::new();
    // Quick exit: tabs and carriage returns matter only inside quotes.
    let quotes = text.contains(&b'"');
    let candidate = |b: &u8| needs_escape(*b) && (quotes || (*b != b'\t' && *b != b'\r'));
    if !text.iter().any(candidate) {
        return found;
    }
    let mut include = false;
    for t in Tokens::new(text) {
        if t.starts_entry {
            include =
                t.is_directive(text) && text[t.start..t.end].eq_ignore_ascii_case(b"$INCLUDE");
        }
        if include {
            continue;
        }
        let mut i = t.start;
        while i < t.end {
            let b = text[i];
            if b == b'\\' && i + 1 < t.end {
                let next = text[i + 1];
                if next.is_ascii_digit() {
                    i += 2; // \DDD: its digits are plain
                } else if needs_escape(next) {
                    found.push((i..i + 2, decimal(next)));
                    i += 2;
                } else {
                    i += 2;
                }
            } else {
                if needs_escape(b) {
                    found.push((i..i + 1, decimal(b)));
                }
                i += 1;
            }
        }
    }
    found
}

/// `\DDD` for a byte.
fn decimal(b: u8) -> Vec<u8> {
    format!("\\{b:03}").into_bytes()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn prepared(text: &[u8]) -> Vec<u8> {
        prepare(text).text.into_owned()
    }

    #[test]
    fn bytes_that_are_not_printable_ascii_are_escaped_in_tokens_only() {
        assert_eq!(
            prepared(b"w\xe9 TXT \"caf\xc3\xa9\" \"a\tb\" \\\xe9 ; \xe9\n"),
            b"w\\233 TXT \"caf\\195\\169\" \"a\\009b\" \\233 ; \xe9\n"
        );
        // A file name is not rdata.
        assert_eq!(
            prepared(b"$INCLUDE caf\xc3\xa9.inc\nw TXT \xff\n"),
            b"$INCLUDE caf\xc3\xa9.inc\nw TXT \\255\n"
        );
        // Escapes stay, a line feed in quotes too.
        assert_eq!(
            prepared(b"w TXT \"\\233\\\"\nx\"\n"),
            b"w TXT \"\\233\\\"\nx\"\n"
        );
        assert!(matches!(
            prepare(b"@ SOA ns h 1 2 3 4 5\n\tA\t192.0.2.1\r\n").text,
            Cow::Borrowed(_)
        ));
    }

    #[test]
    fn a_final_line_feed_is_added() {
        assert_eq!(prepared(b"w TXT \"a\""), b"w TXT \"a\"\n");
        assert_eq!(prepared(b""), b"");
    }

    #[test]
    fn offsets_map_both_ways() {
        let s = prepare(b"$TTL 1h\n@ 1d SOA ns h 1 2 3 4 5\nw TXT \xe9x");
        assert_eq!(
            &*s.text,
            b"$TTL 3600\n@ 86400 SOA ns h 1 2 3 4 5\nw TXT \\233x\n"
        );
        assert_eq!(s.original_offset(2), 2, "before any rewrite");
        assert_eq!(s.original_offset(5), 5, "a rewritten token's start");
        assert_eq!(s.original_offset(8), 5, "inside it");
        assert_eq!(s.original_offset(9), 7, "the line feed after it");
        assert_eq!(s.original_offset(18), 13, "SOA, after two rewrites");
        assert_eq!(s.original_offset(44), 38, "inside an escape");
        assert_eq!(s.original_offset(47), 39, "after it");
        assert_eq!(s.original_offset(48), 40, "the added line feed");
        for original in [0, 5, 7, 13, 38, 39, 40] {
            assert_eq!(s.original_offset(s.parser_offset(original)), original);
        }
        assert_eq!(s.parser_offset(6), 5, "inside a rewritten token");
    }
}
