//! Zone bundles: many zones in one file, one after another, so that a hierarchy of hundreds of
//! thousands of zones needs a few files rather than one per zone (`zones build` writes one
//! bundle per level of the hierarchy).
//!
//! A bundle is zone-file text in which every line that starts with `$ORIGIN` (at its first
//! byte, in any case) begins a zone: the name it gives, absolute, is the zone's apex, and the
//! zone runs up to the next such line or the end of the file. Each zone is thus a zone file of
//! its own, read as [`Zone::from_file`] reads one (its SOA at the apex, no data outside it),
//! and placed in errors at the bundle's own lines. Before the first `$ORIGIN` only blank lines
//! and `;` comments may come. A zone's own text may not set another `$ORIGIN` (that line would
//! begin another zone), and the same apex may not begin two zones.
//!
//! ```text
//! $ORIGIN com.
//! com. 86400 IN SOA a.gtld-servers.net. nstld.verisign-grs.com. 1 1800 900 604800 86400
//! com. 172800 IN NS a.gtld-servers.net.
//! $ORIGIN net.
//! net. 86400 IN SOA a.gtld-servers.net. nstld.verisign-grs.com. 1 1800 900 604800 86400
//! net. 172800 IN NS a.gtld-servers.net.
//! ```
//!
//! A [manifest](crate::Manifest) names a zone of a bundle as `FILE@APEX`.

use std::ops::Range;
use std::path::{Path, PathBuf};

use rustc_hash::FxHashMap;

use crate::name;
use crate::zone::{Zone, ZoneError};

/// A bundle file read into memory, its zones found (not yet loaded).
#[derive(Debug)]
pub struct Bundle {
    /// The file, as errors name it.
    file: String,
    /// Its directory (`$INCLUDE` paths are relative to it).
    dir: PathBuf,
    text: Vec<u8>,
    /// Each zone's text and the line of its `$ORIGIN`, by lowercase wire-format apex.
    zones: FxHashMap<Box<[u8]>, Section>,
    /// The apexes in file order, as written.
    order: Vec<String>,
}

#[derive(Debug, Clone)]
struct Section {
    range: Range<usize>,
    line: usize,
}

impl Bundle {
    /// Reads a bundle file and finds its zones; errors name the file and line.
    pub fn from_file(path: impl AsRef<Path>) -> Result<Bundle, ZoneError> {
        let (text, file, dir) = crate::reader::read_input(path.as_ref())?;
        Bundle::from_bytes(text, &file, &dir)
    }

    /// A bundle of `text`; `file` names it in errors, `$INCLUDE` paths are relative to `dir`.
    pub fn from_bytes(text: Vec<u8>, file: &str, dir: &Path) -> Result<Bundle, ZoneError> {
        let mut zones: FxHashMap<Box<[u8]>, Section> = FxHashMap::default();
        let mut order = Vec::new();
        // The zone being read: its key and where its text starts.
        let mut open: Option<(Box<[u8]>, usize, usize)> = None;
        let mut start = 0;
        for (n, line) in text.split_inclusive(|&b| b == b'\n').enumerate() {
            let at = start;
            start += line.len();
            let is_origin = line.len() > 7
                && line[..7].eq_ignore_ascii_case(b"$ORIGIN")
                && line[7].is_ascii_whitespace();
            if !is_origin {
                if open.is_none() && !blank_or_comment(line) {
                    return Err(ZoneError::at(
                        file,
                        n + 1,
                        Some(1),
                        "a zone bundle holds only comments before its first $ORIGIN line, \
                         which begins the first zone",
                    ));
                }
                continue;
            }
            let given = String::from_utf8_lossy(&line[8..]);
            let given = given.split(';').next().unwrap_or("").trim();
            if given.is_empty() || given.split_whitespace().count() != 1 || !given.ends_with('.') {
                return Err(ZoneError::at(
                    file,
                    n + 1,
                    Some(1),
                    format!(
                        "$ORIGIN {given:?}: a zone bundle's $ORIGIN gives its zone's apex, one \
                         absolute name (with its final dot)"
                    ),
                ));
            }
            let apex = ldplayer_dns::name_from_presentation(given).map_err(|e| {
                ZoneError::at(file, n + 1, Some(9), format!("$ORIGIN {given}: {e}"))
            })?;
            if let Some((key, from, line)) = open.take() {
                zones.insert(
                    key,
                    Section {
                        range: from..at,
                        line,
                    },
                );
            }
            let key = name::lowercase(&apex);
            if let Some(first) = zones.get(&key) {
                return Err(ZoneError::at(
                    file,
                    n + 1,
                    Some(1),
                    format!(
                        "zone {given} already begins at line {}: one section per zone",
                        first.line
                    ),
                ));
            }
            order.push(given.to_string());
            open = Some((key, at, n + 1));
        }
        match open {
            Some((key, from, line)) => {
                zones.insert(
                    key,
                    Section {
                        range: from..text.len(),
                        line,
                    },
                );
            }
            None => {
                return Err(ZoneError::at(
                    file,
                    0,
                    None,
                    "no $ORIGIN line: not a zone bundle (each zone begins with one)",
                ))
            }
        }
        Ok(Bundle {
            file: file.to_string(),
            dir: dir.to_path_buf(),
            text,
            zones,
            order,
        })
    }

    /// The number of zones.
    pub fn len(&self) -> usize {
        self.order.len()
    }

    /// True when it holds no zone (never: a bundle without zones is refused).
    pub fn is_empty(&self) -> bool {
        self.order.is_empty()
    }

    /// The apexes of its zones, in file order, as written.
    pub fn apexes(&self) -> &[String] {
        &self.order
    }

    /// The text of the zone at `apex` (presentation format, the final dot optional; any case)
    /// and the line of the bundle where it begins (its `$ORIGIN`).
    pub fn section(&self, apex: &str) -> Option<(&[u8], usize)> {
        let s = self.zones.get(&*key(apex)?)?;
        Some((&self.text[s.range.clone()], s.line))
    }

    /// Loads the zone at `apex`; errors name the bundle and its line.
    pub fn zone(&self, apex: &str) -> Result<Zone, ZoneError> {
        let Some((text, line)) = self.section(apex) else {
            return Err(ZoneError::at(
                &self.file,
                0,
                None,
                format!("holds no zone {apex}"),
            ));
        };
        let apex = key(apex).unwrap_or_default();
        Zone::from_section(text, &self.file, &self.dir, &apex, line - 1)
    }
}

/// The lowercase wire-format key of an apex in presentation format (the final dot optional).
fn key(apex: &str) -> Option<Box<[u8]>> {
    let a = if apex.ends_with('.') {
        apex.to_string()
    } else {
        format!("{apex}.")
    };
    ldplayer_dns::name_from_presentation(&a)
        .ok()
        .map(|n| name::lowercase(&n))
}

/// A line with nothing but blanks and a `;` comment.
fn blank_or_comment(line: &[u8]) -> bool {
    match line.iter().find(|b| !b.is_ascii_whitespace()) {
        None => true,
        Some(&b) => b == b';',
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const TWO: &str = "; a bundle\n\n$ORIGIN example.\n\
        example. 60 IN SOA ns.example. h. 1 2 3 4 5\nexample. 60 IN NS ns.example.\n\
        ns.example. 60 IN A 192.0.2.1\n\
        $origin Other.TEST. ; the second\n@ 60 SOA ns h 1 2 3 4 5\n@ 60 NS ns\nns 60 A 192.0.2.2\n";

    fn bundle(text: &str) -> Result<Bundle, ZoneError> {
        Bundle::from_bytes(text.as_bytes().to_vec(), "b.zones", Path::new("."))
    }

    #[test]
    fn zones_are_found_and_loaded_with_their_lines() {
        let b = bundle(TWO).unwrap();
        assert_eq!(b.apexes(), ["example.", "Other.TEST."]);
        let (text, line) = b.section("other.test").unwrap();
        assert_eq!(line, 7);
        assert!(text.starts_with(b"$origin Other.TEST."));
        let z = b.zone("example.").unwrap();
        assert_eq!(z.origin_text(), "example.");
        assert_eq!(b.zone("OTHER.test.").unwrap().name_count(), 2);
        assert!(b.section("nowhere.").is_none());
        let e = b.zone("nowhere.").unwrap_err().to_string();
        assert_eq!(e, "b.zones: holds no zone nowhere.");
    }

    #[test]
    fn damage_is_placed_at_the_bundle_line() {
        // A record outside its zone, on line 10 of the bundle (line 4 of its zone).
        let damaged = format!("{TWO}elsewhere.invalid. 60 IN A 192.0.2.3\n");
        let b = bundle(&damaged).unwrap();
        let e = b.zone("other.test.").unwrap_err().to_string();
        assert!(e.starts_with("b.zones:11:"), "{e}");
        assert!(b.zone("example.").is_ok());
        // A syntax error in the first zone.
        let b = bundle(&TWO.replace("192.0.2.1", "192.0.2.x")).unwrap();
        let e = b.zone("example.").unwrap_err().to_string();
        assert!(e.starts_with("b.zones:6:"), "{e}");
        // Records before the first $ORIGIN, a relative $ORIGIN, a zone given twice, none.
        let e = bundle("x 60 A 192.0.2.1\n$ORIGIN a.\n").unwrap_err();
        assert!(e.to_string().starts_with("b.zones:1:1: "), "{e}");
        let e = bundle("$ORIGIN a.\n$ORIGIN b\n").unwrap_err();
        assert!(e.to_string().starts_with("b.zones:2:1: "), "{e}");
        let e = bundle("$ORIGIN a.\n$ORIGIN A.\n").unwrap_err().to_string();
        assert!(e.contains("b.zones:2:1: ") && e.contains("line 1"), "{e}");
        let e = bundle("; nothing\n").unwrap_err().to_string();
        assert!(e.starts_with("b.zones: no $ORIGIN"), "{e}");
    }
}
