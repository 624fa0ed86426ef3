//! Zone files read into records that know where they came from.
//!
//! One reader for every command that takes zone files (`serve`, `zones build --zone`), so that
//! they accept the same files and place an error at the same file, line and column. It follows
//! `$INCLUDE` (paths relative to the including file) and takes time values with units (`1h`).
//! Positions are counted on the file as written, in bytes, so text that is not UTF-8 is placed
//! right (the parser takes such bytes only as `\DDD` escapes, and says so): lines from 1,
//! columns from 1 in bytes (a tab counts one), CR-LF line ends as one line end.
//!
//! A record's position is where it starts: its owner, or its first token when it leaves the
//! owner out (so a record spread over lines in parentheses is placed on its first line, as
//! `named-checkzone` does). A parse error is placed on the token it is about, which can be on a
//! later line of such a record: `domain`'s parser stops past the token it finds wrong (often at
//! the start of the next line), and the tokens of the file, split by the same rules, tell which
//! token that was.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use domain::base::iana::Class;
use domain::base::rdata::ComposeRecordData;
use domain::base::ToName;
use domain::zonefile::inplace::{Entry, Zonefile};

use crate::tokens::{Lines, Token, Tokens};
use crate::units::{self, Expanded};
use crate::zone::ZoneError;
use ldplayer_dns::Rtype;

/// How deep `$INCLUDE`s may nest (a file including itself stops there).
const MAX_INCLUDE_DEPTH: usize = 8;

/// One record of a zone file, in wire format, with the place where it starts.
#[derive(Debug, Clone)]
pub struct ZoneRecord {
    /// The file it was read from (the `$INCLUDE`d file for records in one).
    pub file: Arc<str>,
    /// The line where it starts, from 1.
    pub line: usize,
    /// The column where it starts, from 1, in bytes.
    pub column: usize,
    /// The owner, uncompressed wire format, in the case it was written in.
    pub owner: Vec<u8>,
    /// The type.
    pub rtype: Rtype,
    /// The TTL in seconds.
    pub ttl: u32,
    /// The record data, uncompressed wire format.
    pub rdata: Vec<u8>,
}

impl ZoneRecord {
    /// An error about this record, placed where it starts.
    pub fn error(&self, msg: impl Into<String>) -> ZoneError {
        ZoneError::at(&self.file, self.line, Some(self.column), msg)
    }

    /// `file:line` of this record, for messages that point at a second record.
    pub fn place(&self) -> String {
        format!("{}:{}", self.file, self.line)
    }
}

/// The origin given for a zone file (presentation format, the final dot optional) in wire
/// format; `file` names the file in the error.
pub fn parse_origin(origin: &str, file: &str) -> Result<Vec<u8>, ZoneError> {
    let o = if origin.ends_with('.') {
        origin.to_string()
    } else {
        format!("{origin}.")
    };
    ldplayer_dns::name_from_presentation(&o)
        .map_err(|e| ZoneError::at(file, 0, None, format!("bad origin {o:?}: {e}")))
}

/// Reads a zone file's records; relative names are relative to `origin` (wire format) until
/// the file sets its own with `$ORIGIN`.
pub fn read_zone_file(path: &Path, origin: Option<&[u8]>) -> Result<Vec<ZoneRecord>, ZoneError> {
    let file = path.display().to_string();
    ldplayer_output::protect_input(path);
    let text = std::fs::read(path).map_err(|source| ZoneError::Io {
        file: file.clone(),
        source,
    })?;
    let dir = path.parent().map(Path::to_path_buf).unwrap_or_default();
    read_zone_text(&text, &file, &dir, origin)
}

/// Reads a zone file's records from its text; `file` names it in errors and positions, and
/// `$INCLUDE` paths are relative to `dir`.
pub fn read_zone_text(
    text: &[u8],
    file: &str,
    dir: &Path,
    origin: Option<&[u8]>,
) -> Result<Vec<ZoneRecord>, ZoneError> {
    let mut records = Vec::new();
    scan(text, file, dir, origin, 0, &mut records)?;
    Ok(records)
}

/// The first token of an entry that the parser hands back: a record or an `$INCLUDE` (it
/// keeps `$ORIGIN` and `$TTL` to itself).
fn returned_entry(t: &Token, text: &[u8]) -> bool {
    t.starts_entry
        && (!t.is_directive(text) || text[t.start..t.end].eq_ignore_ascii_case(b"$INCLUDE"))
}

fn scan(
    text: &[u8],
    file: &str,
    dir: &Path,
    origin: Option<&[u8]>,
    depth: usize,
    out: &mut Vec<ZoneRecord>,
) -> Result<(), ZoneError> {
    let expanded = units::expand_mapped(text);
    let mut zf = Zonefile::from(&expanded.text[..]);
    if let Some(o) = origin {
        let n = domain::base::Name::from_octets(bytes::Bytes::copy_from_slice(o))
            .map_err(|e| ZoneError::at(file, 0, None, format!("bad origin: {e}")))?;
        zf.set_origin(n);
    }
    zf.set_default_class(Class::IN);
    let file_arc: Arc<str> = file.into();
    // Where each entry the parser returns starts, in the same order.
    let mut starts = Tokens::new(text)
        .filter(|t| returned_entry(t, text))
        .peekable();
    loop {
        let entry = match zf.next_entry() {
            Ok(Some(e)) => e,
            Ok(None) => return Ok(()),
            Err(e) => return Err(parse_error(text, &expanded, file, &e.to_string())),
        };
        let read_to = expanded.original_offset(zf.current_offset());
        let (line, column) = match starts.next() {
            Some(t) => {
                debug_assert!(
                    t.start <= read_to && starts.peek().is_none_or(|n| n.start >= read_to),
                    "{file}: the entry at {}:{} does not hold offset {read_to}",
                    t.line,
                    t.column
                );
                (t.line, t.column)
            }
            // Not reached while the tokens follow the parser's rules; the line read up to is
            // the best known then.
            None => (Lines::new(text).position(read_to).0, 1),
        };
        let at = |msg: String| ZoneError::at(file, line, Some(column), msg);
        match entry {
            Entry::Record(rec) => {
                if rec.class() != Class::IN {
                    return Err(at(format!("class {} not supported", rec.class())));
                }
                let mut owner = Vec::with_capacity(32);
                let _ = rec.owner().compose(&mut owner);
                let mut rdata = Vec::new();
                rec.data()
                    .compose_rdata(&mut rdata)
                    .map_err(|_| at("rdata too long".into()))?;
                if rdata.len() > 65535 {
                    return Err(at("rdata too long".into()));
                }
                out.push(ZoneRecord {
                    file: file_arc.clone(),
                    line,
                    column,
                    owner,
                    rtype: Rtype(rec.rtype().to_int()),
                    ttl: rec.ttl().as_secs(),
                    rdata,
                });
            }
            Entry::Include {
                path,
                origin: inc_origin,
            } => {
                if depth >= MAX_INCLUDE_DEPTH {
                    return Err(at("$INCLUDE nested too deeply".into()));
                }
                let p = PathBuf::from(path.to_string());
                let p = if p.is_absolute() { p } else { dir.join(p) };
                ldplayer_output::protect_input(&p);
                let sub =
                    std::fs::read(&p).map_err(|e| at(format!("$INCLUDE {}: {e}", p.display())))?;
                let o: Option<Vec<u8>> = match inc_origin {
                    Some(o) => Some(o.as_slice().to_vec()),
                    None => zf.origin().ok().map(|o| o.as_slice().to_vec()),
                };
                let subdir = p.parent().map(Path::to_path_buf).unwrap_or_default();
                scan(
                    &sub,
                    &p.display().to_string(),
                    &subdir,
                    o.as_deref(),
                    depth + 1,
                    out,
                )?;
            }
        }
    }
}

/// The parser's error (`line:col: message`, where it stopped reading in the text it was
/// given), placed on the token of the original text it is about.
fn parse_error(text: &[u8], expanded: &Expanded, file: &str, err: &str) -> ZoneError {
    let mut parts = err.splitn(3, ':');
    let line = parts.next().and_then(|v| v.parse::<usize>().ok());
    let col = parts.next().and_then(|v| v.parse::<usize>().ok());
    let (Some(line), Some(col), Some(msg)) = (line, col, parts.next()) else {
        return ZoneError::at(file, 0, None, err);
    };
    let msg = msg.trim();
    let stop = Lines::new(&expanded.text).offset(line, col, expanded.text.len());
    let offset = error_offset(text, expanded.original_offset(stop), msg);
    let (line, column) = Lines::new(text).position(offset);
    let msg = match text.get(offset) {
        Some(&b) if msg.contains("UTF-8") && !b.is_ascii() => format!(
            "{msg}: byte 0x{b:02X} (bytes that are not UTF-8 are written as \\DDD, here \\{b:03})"
        ),
        _ => msg.to_string(),
    };
    ZoneError::at(file, line, Some(column), msg)
}

/// Where in `text` an error is, given the offset where the parser stopped and its message.
///
/// Inside a token: that token (the very byte for a character that is not UTF-8). At a token's
/// start: that token when the error is about it (a bad character, a token too many, no owner
/// to repeat), else the token before, which the parser had read when it found it wrong (its
/// conversion errors stop at the next token). Between tokens or at the start of a line: the
/// token before. At a parenthesis: the parenthesis.
fn error_offset(text: &[u8], stop: usize, msg: &str) -> usize {
    if matches!(text.get(stop), Some(b'(' | b')')) {
        return stop;
    }
    let about_next = [
        "bad symbol",
        "trailing tokens",
        "missing last owner",
        "unbalanced parens",
    ]
    .iter()
    .any(|m| msg.starts_with(m));
    let mut before: Option<Token> = None;
    for t in Tokens::new(text) {
        if t.start > stop {
            break;
        }
        if t.start == stop {
            return match before {
                Some(b) if !about_next => b.start,
                _ => stop,
            };
        }
        if stop < t.end {
            return if msg.contains("UTF-8") { stop } else { t.start };
        }
        before = Some(t);
    }
    before.map_or(stop, |t| t.start)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn error(text: &[u8]) -> String {
        read_zone_text(text, "t.zone", Path::new("."), None)
            .unwrap_err()
            .to_string()
    }

    const HEAD: &str = "$ORIGIN example.\n$TTL 60\n@ SOA ns h 1 2 3 4 5\n@ NS ns\n";

    fn after_head(rest: &str) -> String {
        error(format!("{HEAD}{rest}").as_bytes())
    }

    #[test]
    fn errors_are_placed_on_the_token_they_are_about() {
        // The last token of a line: the parser stops at the start of the next line.
        assert_eq!(
            after_head("www A 192.0.2.300\nok A 192.0.2.1\n"),
            "t.zone:5:7: expected IPv4 address"
        );
        assert_eq!(
            after_head("www A 192.0.2.300 ; comment\n"),
            "t.zone:5:7: expected IPv4 address"
        );
        // Not the last: it stops at the next token.
        assert_eq!(
            after_head("www MX ten host\n"),
            "t.zone:5:8: expected decimal number"
        );
        assert_eq!(after_head("www BOGUS x\n"), "t.zone:5:5: expected rtype");
        assert_eq!(
            after_head("www A 192.0.2.1 extra\n"),
            "t.zone:5:17: trailing tokens"
        );
        assert_eq!(
            after_head("www A 192.0.2.1 )\n"),
            "t.zone:5:17: unbalanced parens"
        );
        assert_eq!(
            after_head("$FOO bar\n"),
            "t.zone:5:1: unknown control: $FOO"
        );
        assert_eq!(after_head("www A\n"), "t.zone:5:5: unexpected end of entry");
    }

    #[test]
    fn records_in_parentheses_place_errors_on_their_line() {
        // The record starts on line 5; the bad tokens are on lines 6 and 7.
        assert_eq!(
            after_head("www MX (\n  ten\n  host )\n"),
            "t.zone:6:3: expected decimal number"
        );
        assert_eq!(
            after_head("www MX (\n  10\n  host extra )\n"),
            "t.zone:7:8: trailing tokens"
        );
        let recs = read_zone_text(
            format!("{HEAD}www MX (\n  10\n  host )\nx A 192.0.2.1\n").as_bytes(),
            "t.zone",
            Path::new("."),
            None,
        )
        .unwrap();
        let lines: Vec<(usize, usize)> = recs.iter().map(|r| (r.line, r.column)).collect();
        assert_eq!(lines, [(3, 1), (4, 1), (5, 1), (8, 1)]);
    }

    #[test]
    fn bytes_that_are_not_utf8_keep_their_line() {
        // At the start of a line: this line, not the one before.
        let mut text = format!("{HEAD}ns A 192.0.2.1\n").into_bytes();
        text.extend_from_slice(b"\xe9x A 192.0.2.2\n");
        assert_eq!(
            error(&text),
            "t.zone:6:1: bad symbol: illegal UTF-8 sequence: byte 0xE9 (bytes that are not UTF-8 are written as \\DDD, here \\233)"
        );
        let mut text = HEAD.as_bytes().to_vec();
        text.extend_from_slice(b"www TXT \"caf\xe9\"\n");
        assert!(error(&text).starts_with("t.zone:5:13: bad symbol"));
    }

    #[test]
    fn crlf_files_count_lines_the_same() {
        let lf = format!("{HEAD}ns A 192.0.2.1\nwww A 192.0.2.300\n");
        let crlf = lf.replace('\n', "\r\n");
        assert_eq!(error(lf.as_bytes()), "t.zone:6:7: expected IPv4 address");
        assert_eq!(error(crlf.as_bytes()), error(lf.as_bytes()));
    }

    #[test]
    fn columns_count_the_file_as_written_around_time_units() {
        assert_eq!(
            after_head("www 1h A 192.0.2.300\n"),
            "t.zone:5:10: expected IPv4 address"
        );
    }

    #[test]
    fn included_files_are_named_with_their_own_lines() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("inc"), "ok A 192.0.2.1\nbad A 1.2.3\n").unwrap();
        let text = format!("{HEAD}$INCLUDE inc\n");
        let e = read_zone_text(text.as_bytes(), "t.zone", dir.path(), None).unwrap_err();
        let inc = dir.path().join("inc");
        assert_eq!(
            e.to_string(),
            format!("{}:2:7: expected IPv4 address", inc.display())
        );
        std::fs::write(dir.path().join("inc"), "ok A 192.0.2.1\n").unwrap();
        let recs = read_zone_text(text.as_bytes(), "t.zone", dir.path(), None).unwrap();
        let last = recs.last().unwrap();
        assert_eq!((&*last.file, last.line), (&*inc.display().to_string(), 1));
        let e = read_zone_text(b"$INCLUDE nowhere\n", "t.zone", dir.path(), None).unwrap_err();
        assert!(e.to_string().starts_with("t.zone:1:1: $INCLUDE"), "{e}");
    }
}
