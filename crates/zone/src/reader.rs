//! Zone files read into records that know where they came from.
//!
//! One reader for every command that takes zone files (`serve`, `zones build --zone`), so that
//! they accept the same files and place an error at the same file, line and column. It follows
//! `$INCLUDE` (paths relative to the including file) and takes time values with units (`1h`).
//! Positions are counted on the file as written, in bytes: lines from 1, columns from 1 in bytes
//! (a tab counts one), CR-LF line ends as one line end.
//!
//! The file is read as nsd and BIND read it where the parser alone would not
//! (the `source` and `entries` modules):
//!
//! * names and character-strings are bytes (RFC 1035 §5.1): a byte that is not printable ASCII
//!   (UTF-8 or Latin-1 text in a TXT string, a tab inside quotes) is kept as it is;
//! * `$TTL` and the last TTL given carry into an `$INCLUDE`d file and back out of it (only the
//!   origin is the including file's own again after it);
//! * a TTL with its most significant bit set (2147483648 and above) is taken as 0 (RFC 2181
//!   §8), with a warning, as BIND does (knotd serves it as written, nsd 4.6 as 3600); one past 32
//!   bits is refused as out of range.
//!
//! A record's position is where it starts: its owner, or its first token when it leaves the
//! owner out (so a record spread over lines in parentheses is placed on its first line, as
//! `named-checkzone` does). A parse error is placed on the token it is about, which can be on a
//! later line of such a record: `domain`'s parser stops past the token it finds wrong (often at
//! the start of the next line), and the tokens of the file, split by the same rules, tell which
//! token that was. A parenthesis or quote that nothing closes is placed on itself.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use domain::base::iana::Class;
use domain::base::rdata::ComposeRecordData;
use domain::base::ToName;
use domain::zonefile::inplace::{Entry as Parsed, Zonefile};

use crate::entries::{first_problem, Entries, Entry, Kind};
use crate::source::{self, Source};
use crate::tokens::{Lines, Token, Tokens};
use crate::units::time_value;
use crate::zone::ZoneError;
use ldplayer_dns::Rtype;

/// How deep `$INCLUDE`s may nest (a file including itself stops there).
const MAX_INCLUDE_DEPTH: usize = 8;

/// The TTL of a record that gives none, before any `$TTL` or TTL: the parser's, and nsd's.
const DEFAULT_TTL: u32 = 3600;

/// The largest TTL taken as written (RFC 2181 §8: the most significant bit is not set).
const MAX_TTL: u32 = 0x7FFF_FFFF;

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

/// A zone file's records, and what was taken otherwise than as written (a TTL of 2^31 or
/// more, taken as 0), placed where it was written.
#[derive(Debug, Default)]
pub struct ZoneText {
    /// The records, in file order (an `$INCLUDE`d file's where it is included).
    pub records: Vec<ZoneRecord>,
    /// Warnings, in file order.
    pub warnings: Vec<ZoneError>,
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

/// A zone file argument, `FILE` or `FILE@ORIGIN` (for a file whose names are relative and that
/// sets no `$ORIGIN`), split into the file and the origin. An argument naming a file that exists
/// is that file, `@` or not.
pub fn file_and_origin(arg: &Path) -> (PathBuf, Option<String>) {
    if !arg.exists() {
        if let Some((file, origin)) = arg.to_str().and_then(|a| a.rsplit_once('@')) {
            return (PathBuf::from(file), Some(origin.to_string()));
        }
    }
    (arg.to_path_buf(), None)
}

/// Reads a zone file's records; relative names are relative to `origin` (wire format) until
/// the file sets its own with `$ORIGIN`. Warnings are left out: see [`read_zone`].
pub fn read_zone_file(path: &Path, origin: Option<&[u8]>) -> Result<Vec<ZoneRecord>, ZoneError> {
    read_zone(path, origin).map(|z| z.records)
}

/// Reads a zone file's records and warnings; relative names are relative to `origin` (wire
/// format) until the file sets its own with `$ORIGIN`.
pub fn read_zone(path: &Path, origin: Option<&[u8]>) -> Result<ZoneText, ZoneError> {
    let (text, file, dir) = read_input(path)?;
    read_zone_bytes(&text, &file, &dir, origin)
}

/// Reads a zone or bundle file whole (guarded as an input, never to be overwritten): its bytes,
/// its name for errors, and its folder, which relative `$INCLUDE`s start from.
pub(crate) fn read_input(path: &Path) -> Result<(Vec<u8>, String, PathBuf), ZoneError> {
    let file = path.display().to_string();
    ldplayer_output::protect_input(path);
    let text = std::fs::read(path).map_err(|source| ZoneError::Io {
        file: file.clone(),
        source,
    })?;
    let dir = path.parent().map(Path::to_path_buf).unwrap_or_default();
    Ok((text, file, dir))
}

/// Reads a zone file's records from its text; `file` names it in errors and positions, and
/// `$INCLUDE` paths are relative to `dir`. Warnings are left out: see [`read_zone_bytes`].
pub fn read_zone_text(
    text: &[u8],
    file: &str,
    dir: &Path,
    origin: Option<&[u8]>,
) -> Result<Vec<ZoneRecord>, ZoneError> {
    read_zone_bytes(text, file, dir, origin).map(|z| z.records)
}

/// Reads a zone file's records and warnings from its text; `file` names it in errors and
/// positions, and `$INCLUDE` paths are relative to `dir`.
pub fn read_zone_bytes(
    text: &[u8],
    file: &str,
    dir: &Path,
    origin: Option<&[u8]>,
) -> Result<ZoneText, ZoneError> {
    let mut out = ZoneText::default();
    let mut ttls = Ttls {
        dollar: None,
        last: DEFAULT_TTL,
    };
    scan(text, file, dir, origin, 0, &mut ttls, &mut out)?;
    Ok(out)
}

/// The TTLs a record that gives none takes: `$TTL` once set, else the last TTL given (RFC
/// 1035 §5.1, RFC 2308 §4). They carry across `$INCLUDE`, in and out, as BIND and nsd carry
/// them.
struct Ttls {
    dollar: Option<u32>,
    last: u32,
}

impl Ttls {
    /// The TTL of a record that gives none.
    fn default_ttl(&self) -> u32 {
        self.dollar.unwrap_or(self.last)
    }
}

/// A TTL as served: one with its most significant bit set is 0 (RFC 2181 §8), with a warning
/// placed on the token that gave it.
fn served_ttl(ttl: u32, token: &Token, file: &str, warnings: &mut Vec<ZoneError>) -> u32 {
    if ttl <= MAX_TTL {
        return ttl;
    }
    warnings.push(ZoneError::at(
        file,
        token.line,
        Some(token.column),
        format!(
            "TTL {ttl} has its most significant bit set: taken as 0 (RFC 2181 §8; at most {MAX_TTL})"
        ),
    ));
    0
}

fn scan(
    text: &[u8],
    file: &str,
    dir: &Path,
    origin: Option<&[u8]>,
    depth: usize,
    ttls: &mut Ttls,
    out: &mut ZoneText,
) -> Result<(), ZoneError> {
    let source = source::prepare(text);
    // The parser reads up to the entry of the first problem it would misreport, so that an
    // error before it comes first.
    let problem = first_problem(text, file);
    let parse_to = problem
        .as_ref()
        .map_or(source.text.len(), |(start, _)| source.parser_offset(*start));
    let mut zf = Zonefile::from(&source.text[..parse_to]);
    if let Some(o) = origin {
        let n = domain::base::Name::from_octets(bytes::Bytes::copy_from_slice(o))
            .map_err(|e| ZoneError::at(file, 0, None, format!("bad origin: {e}")))?;
        zf.set_origin(n);
    }
    zf.set_default_class(Class::IN);
    let file_arc: Arc<str> = file.into();
    // The entries as the tokens show them, in step with the parser's.
    let mut entries = Entries::new(text);
    loop {
        let parsed = match zf.next_entry() {
            Ok(Some(e)) => e,
            Ok(None) => return problem.map_or(Ok(()), |(_, e)| Err(e)),
            Err(e) => return Err(parse_error(text, &source, file, &e.to_string())),
        };
        let read_to = source.original_offset(zf.current_offset());
        let entry = next_returned(&mut entries, text, file, ttls, &mut out.warnings);
        let (line, column) = match &entry {
            Some(e) => {
                debug_assert!(
                    e.first.start <= read_to,
                    "{file}: the entry at {}:{} does not hold offset {read_to}",
                    e.first.line,
                    e.first.column
                );
                (e.first.line, e.first.column)
            }
            // Not reached while the tokens follow the parser's rules; the line read up to is
            // the best known then.
            None => (Lines::new(text).position(read_to).0, 1),
        };
        let at = |msg: String| ZoneError::at(file, line, Some(column), msg);
        match parsed {
            Parsed::Record(rec) => {
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
                let ttl = match entry.map(|e| e.kind) {
                    Some(Kind::Record { ttl: Some(t) }) => {
                        let ttl = served_ttl(rec.ttl().as_secs(), &t, file, &mut out.warnings);
                        ttls.last = ttl;
                        ttl
                    }
                    Some(Kind::Record { ttl: None }) => ttls.default_ttl(),
                    _ => rec.ttl().as_secs(),
                };
                out.records.push(ZoneRecord {
                    file: file_arc.clone(),
                    line,
                    column,
                    owner,
                    rtype: Rtype(rec.rtype().to_int()),
                    ttl,
                    rdata,
                });
            }
            Parsed::Include {
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
                    ttls,
                    out,
                )?;
            }
        }
    }
}

/// The next entry the parser hands back (a record or an `$INCLUDE`), following the `$TTL`s
/// before it.
fn next_returned(
    entries: &mut Entries,
    text: &[u8],
    file: &str,
    ttls: &mut Ttls,
    warnings: &mut Vec<ZoneError>,
) -> Option<Entry> {
    for e in entries.by_ref() {
        if e.returned() {
            return Some(e);
        }
        if let Kind::Ttl(Some(t)) = e.kind {
            // The parser took it: it fits 32 bits.
            if let Some(ttl) = time_value(&text[t.start..t.end]).and_then(|v| u32::try_from(v).ok())
            {
                ttls.dollar = Some(served_ttl(ttl, &t, file, warnings));
            }
        }
    }
    None
}

/// The parser's error (`line:col: message`, where it stopped reading in the text it was
/// given), placed on the token of the original text it is about.
fn parse_error(text: &[u8], source: &Source, file: &str, err: &str) -> ZoneError {
    let mut parts = err.splitn(3, ':');
    let line = parts.next().and_then(|v| v.parse::<usize>().ok());
    let col = parts.next().and_then(|v| v.parse::<usize>().ok());
    let (Some(line), Some(col), Some(msg)) = (line, col, parts.next()) else {
        return ZoneError::at(file, 0, None, err);
    };
    let msg = msg.trim();
    let stop = Lines::new(&source.text).offset(line, col, source.text.len());
    let offset = error_offset(text, source.original_offset(stop), msg);
    let (line, column) = Lines::new(text).position(offset);
    let msg = match msg {
        "missing origin" => "a relative name (or @) and no origin: the file sets no $ORIGIN; \
                             give the zone's origin with the file, as FILE@ORIGIN"
            .to_string(),
        _ => msg.to_string(),
    };
    ZoneError::at(file, line, Some(column), msg)
}

/// Where in `text` an error is, given the offset where the parser stopped and its message.
///
/// Inside a token: that token. At a token's start: that token when the error is about it (a
/// bad character, a token too many, no owner to repeat), else the token before, which the
/// parser had read when it found it wrong (its conversion errors stop at the next token).
/// Between tokens or at the start of a line: the token before. At a parenthesis: the
/// parenthesis.
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
            return t.start;
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
    fn bytes_that_are_not_printable_ascii_are_kept() {
        let mut text = HEAD.as_bytes().to_vec();
        text.extend_from_slice(b"caf\xe9 TXT \"caf\xe9\" \"caf\xc3\xa9\" \"a\tb\"\n");
        let recs = read_zone_text(&text, "t.zone", Path::new("."), None).unwrap();
        let r = recs.last().unwrap();
        assert_eq!(r.owner, b"\x04caf\xe9\x07example\x00");
        assert_eq!(r.rdata, b"\x04caf\xe9\x05caf\xc3\xa9\x03a\tb");
        // Placed as written: a later error's column counts the bytes.
        text.extend_from_slice(b"\xe9\xe9 A 192.0.2.300\n");
        assert_eq!(error(&text), "t.zone:6:6: expected IPv4 address");
    }

    #[test]
    fn what_is_left_open_is_named_where_it_opens() {
        assert_eq!(
            after_head("w TXT ( \"a\"\nx A 192.0.2.1\n"),
            "t.zone:5:7: unclosed parenthesis: nothing closes this `(`, so its record runs to the end of the file"
        );
        // At the end of a file without a final line feed (the parser used to panic there).
        assert!(after_head("w TXT ( \"a\"").starts_with("t.zone:5:7: unclosed parenthesis"));
        assert!(after_head("w TXT \"a").starts_with("t.zone:5:7: unclosed quote"));
        // An error before comes first.
        assert_eq!(
            after_head("w A 192.0.2.300\nx TXT ( \"a\"\n"),
            "t.zone:5:5: expected IPv4 address"
        );
        let recs = read_zone_text(
            format!("{HEAD}w TXT \"a\"").as_bytes(),
            "t",
            Path::new("."),
            None,
        )
        .unwrap();
        assert_eq!(recs.last().unwrap().rdata, b"\x01a");
    }

    #[test]
    fn ttls_past_32_bits_are_out_of_range_and_past_31_taken_as_0() {
        assert_eq!(
            after_head("w 99999999999 A 192.0.2.1\n"),
            "t.zone:5:3: TTL 99999999999 out of range: a TTL has 32 bits (at most 4294967295)"
        );
        assert!(
            after_head("$TTL 4294967296\n").starts_with("t.zone:5:6: TTL 4294967296 out of range")
        );
        let text = format!(
            "{HEAD}a 2147483647 A 192.0.2.1\nb IN 2147483648 A 192.0.2.2\nc A 192.0.2.3\n\
             $TTL 4294967295\nd A 192.0.2.4\n"
        );
        let read = read_zone_bytes(text.as_bytes(), "t.zone", Path::new("."), None).unwrap();
        let ttls: Vec<u32> = read.records.iter().map(|r| r.ttl).collect();
        assert_eq!(ttls, [60, 60, 2147483647, 0, 60, 0]);
        let warnings: Vec<String> = read.warnings.iter().map(|w| w.to_string()).collect();
        assert_eq!(
            warnings,
            [
                "t.zone:6:6: TTL 2147483648 has its most significant bit set: taken as 0 (RFC 2181 §8; at most 2147483647)",
                "t.zone:8:6: TTL 4294967295 has its most significant bit set: taken as 0 (RFC 2181 §8; at most 2147483647)",
            ]
        );
    }

    #[test]
    fn ttl_defaults_carry_into_included_files_and_back() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join("inc"),
            "i1 A 192.0.2.2\n$TTL 120\ni2 A 192.0.2.3\n",
        )
        .unwrap();
        let text = format!("{HEAD}$INCLUDE inc\nafter A 192.0.2.4\n");
        let recs = read_zone_text(text.as_bytes(), "t.zone", dir.path(), None).unwrap();
        let ttls: Vec<u32> = recs.iter().map(|r| r.ttl).collect();
        assert_eq!(ttls, [60, 60, 60, 120, 120], "as nsd and BIND read it");
        // Without $TTL, the last TTL given (as BIND reads it).
        std::fs::write(
            dir.path().join("inc"),
            "i1 A 192.0.2.2\ni2 77 A 192.0.2.3\n",
        )
        .unwrap();
        let text = "$ORIGIN example.\n@ 300 SOA ns h 1 2 3 4 5\n$INCLUDE inc\nafter A 192.0.2.4\n";
        let recs = read_zone_text(text.as_bytes(), "t.zone", dir.path(), None).unwrap();
        let ttls: Vec<u32> = recs.iter().map(|r| r.ttl).collect();
        assert_eq!(ttls, [300, 300, 77, 77]);
    }

    #[test]
    fn an_at_sign_in_record_data_is_the_origin() {
        let recs = read_zone_text(
            format!("{HEAD}www CNAME @\nm MX 10 @\n$ORIGIN sub.example.\nw2 CNAME @\nt TXT @\n")
                .as_bytes(),
            "t.zone",
            Path::new("."),
            None,
        )
        .unwrap();
        let rdata: Vec<&[u8]> = recs[2..].iter().map(|r| r.rdata.as_slice()).collect();
        assert_eq!(
            rdata,
            [
                b"\x07example\x00".as_slice(),
                b"\x00\x0a\x07example\x00",
                b"\x03sub\x07example\x00",
                b"\x01@",
            ]
        );
    }

    #[test]
    fn a_missing_origin_says_how_to_give_one() {
        let e = error(b"$TTL 60\n@ SOA ns h 1 2 3 4 5\n");
        assert!(
            e.starts_with("t.zone:2:1: a relative name (or @) and no origin")
                && e.contains("FILE@ORIGIN"),
            "{e}"
        );
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
