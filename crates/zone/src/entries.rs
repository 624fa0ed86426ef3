//! The entries of a zone file as its tokens show them: where each record and directive starts,
//! the TTL a record gives (when it gives one) and the value of each `$TTL`, and the problems
//! that `domain`'s parser would misreport, found before it reads the file.
//!
//! The parser keeps `$TTL` to itself and does not say whether a record gave its TTL, so the
//! reader follows the TTL defaults itself (across `$INCLUDE`s, which the parser cannot). And
//! the parser calls a TTL past 32 bits "expected rtype", and an unclosed parenthesis or quote
//! "trailing tokens" or "short buffer" (or panics on it): those are found here, placed on the
//! token at fault and named for what they are, as nsd and knotd name them. And it takes `@`
//! as the origin only in the owner's place, where BIND, nsd and knotd take it in any name of
//! a record's data (`www CNAME @`): those are found here too.

use crate::tokens::{Token, Tokens, Unclosed};
use crate::units::{is_class, time_value};
use crate::zone::ZoneError;

/// What an entry is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    /// A record, with its TTL token when it gives one.
    Record {
        /// The TTL as written (`3600`, `1h`).
        ttl: Option<Token>,
    },
    /// `$TTL`, with its value's token.
    Ttl(Option<Token>),
    /// `$INCLUDE`.
    Include,
    /// `$ORIGIN`, or a directive the parser refuses.
    Other,
}

/// One entry of a zone file: a record or a directive.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Entry {
    /// Its first token: the owner, the first token of a record that leaves it out, or the
    /// directive.
    pub first: Token,
    /// What it is.
    pub kind: Kind,
}

impl Entry {
    /// Whether the parser hands it back (a record or an `$INCLUDE`) rather than keeping it.
    pub fn returned(&self) -> bool {
        matches!(self.kind, Kind::Record { .. } | Kind::Include)
    }

    /// Its TTL token: a record's, or the value of `$TTL`.
    pub fn ttl(&self) -> Option<Token> {
        match self.kind {
            Kind::Record { ttl } | Kind::Ttl(ttl) => ttl,
            Kind::Include | Kind::Other => None,
        }
    }
}

/// The entries of a zone file's text, in order.
pub(crate) struct Entries<'a> {
    text: &'a [u8],
    tokens: Tokens<'a>,
    /// The first token of the next entry, read past the end of the last one.
    next: Option<Token>,
}

impl<'a> Entries<'a> {
    /// The entries of `text`.
    pub fn new(text: &'a [u8]) -> Self {
        let mut tokens = Tokens::new(text);
        let next = tokens.next();
        Entries { text, tokens, next }
    }

    /// What the text left open, once every entry is read.
    pub fn unclosed(&self) -> Option<Unclosed> {
        self.tokens.unclosed()
    }
}

impl Iterator for Entries<'_> {
    type Item = Entry;

    fn next(&mut self) -> Option<Entry> {
        let first = self.next.take()?;
        // The tokens after the first, up to the next entry; only the first three matter.
        let mut rest: [Option<Token>; 3] = [None; 3];
        let mut n = 0;
        for t in self.tokens.by_ref() {
            if t.starts_entry {
                self.next = Some(t);
                break;
            }
            if n < rest.len() {
                rest[n] = Some(t);
                n += 1;
            }
        }
        let text = self.text;
        let word = |t: &Token| &text[t.start..t.end];
        let kind = if first.is_directive(text) {
            let name = word(&first);
            if name.eq_ignore_ascii_case(b"$TTL") {
                Kind::Ttl(rest[0])
            } else if name.eq_ignore_ascii_case(b"$INCLUDE") {
                Kind::Include
            } else {
                Kind::Other
            }
        } else {
            // [<TTL>] [<class>] <type> or [<class>] [<TTL>] <type>, after the owner.
            let head: [Option<Token>; 2] = if first.indented {
                [Some(first), rest[0]]
            } else {
                [rest[0], rest[1]]
            };
            let is_ttl = |t: &Option<Token>| t.is_some_and(|t| time_value(word(&t)).is_some());
            let ttl = if is_ttl(&head[0]) {
                head[0]
            } else if head[0].is_some_and(|t| is_class(word(&t))) && is_ttl(&head[1]) {
                head[1]
            } else {
                None
            };
            Kind::Record { ttl }
        };
        Some(Entry { first, kind })
    }
}

/// The first problem of `text` that the parser would misreport: a TTL past 32 bits, or a
/// quote or parenthesis the text leaves open. Returns the offset where the entry holding it
/// starts (the parser is to read only what comes before, so that an error there comes first)
/// and the error, placed on the token or the character at fault.
pub(crate) fn first_problem(text: &[u8], file: &str) -> Option<(usize, ZoneError)> {
    let at = |t: &Token, msg: String| ZoneError::at(file, t.line, Some(t.column), msg);
    let mut entries = Entries::new(text);
    let mut last_start = 0;
    for e in entries.by_ref() {
        last_start = e.first.start;
        if let Some(t) = e.ttl() {
            let word = &text[t.start..t.end];
            if time_value(word).is_some_and(|v| v > u64::from(u32::MAX)) {
                let word = String::from_utf8_lossy(word);
                return Some((
                    last_start,
                    at(
                        &t,
                        format!("TTL {word} out of range: a TTL has 32 bits (at most 4294967295)"),
                    ),
                ));
            }
        }
    }
    let (offset, msg) = match entries.unclosed()? {
        Unclosed::Quote(q) => (
            q,
            "unclosed quote: nothing closes this `\"`, so its string runs to the end of the file",
        ),
        Unclosed::Paren(p) => (
            p,
            "unclosed parenthesis: nothing closes this `(`, so its record runs to the end of the file",
        ),
    };
    let (line, column) = crate::tokens::Lines::new(text).position(offset);
    Some((last_start, ZoneError::at(file, line, Some(column), msg)))
}

/// The fields of a record's data (from 0) that are domain names, by type: where `@` stands for
/// the origin. Types whose data holds no name, or names only in a form `@` cannot take, are
/// left out (their `@` is what the parser makes of it).
const NAME_FIELDS: &[(&str, &[usize])] = &[
    ("NS", &[0]),
    ("CNAME", &[0]),
    ("DNAME", &[0]),
    ("PTR", &[0]),
    ("MB", &[0]),
    ("MD", &[0]),
    ("MF", &[0]),
    ("MG", &[0]),
    ("MR", &[0]),
    ("NSEC", &[0]),
    ("SOA", &[0, 1]),
    ("MINFO", &[0, 1]),
    ("RP", &[0, 1]),
    ("MX", &[1]),
    ("KX", &[1]),
    ("RT", &[1]),
    ("AFSDB", &[1]),
    ("SVCB", &[1]),
    ("HTTPS", &[1]),
    ("PX", &[1, 2]),
    ("SRV", &[3]),
    ("NAPTR", &[5]),
    ("RRSIG", &[7]),
];

/// The offsets of the `@` tokens of `text` that stand for the origin in a name of a record's
/// data (`www CNAME @`, `@ SOA @ hostmaster ...`).
pub(crate) fn origin_signs(text: &[u8]) -> Vec<usize> {
    let mut found = Vec::new();
    if !text.contains(&b'@') {
        return found;
    }
    let word = |t: &Token| &text[t.start..t.end];
    let mut tokens = Tokens::new(text).peekable();
    let mut entry: Vec<Token> = Vec::new();
    while let Some(first) = tokens.next() {
        entry.clear();
        entry.push(first);
        while let Some(t) = tokens.next_if(|t| !t.starts_entry) {
            entry.push(t);
        }
        if first.is_directive(text) || !entry.iter().any(|t| word(t) == b"@") {
            continue;
        }
        // [<TTL>] [<class>] <type> or [<class>] [<TTL>] <type>, after the owner.
        let mut i = usize::from(!first.indented);
        for _ in 0..2 {
            match entry.get(i) {
                Some(t) if time_value(word(t)).is_some() || is_class(word(t)) => i += 1,
                _ => break,
            }
        }
        let Some(rtype) = entry.get(i) else { continue };
        let Some((_, fields)) = NAME_FIELDS
            .iter()
            .find(|(name, _)| word(rtype).eq_ignore_ascii_case(name.as_bytes()))
        else {
            continue;
        };
        for &f in fields.iter() {
            if let Some(t) = entry.get(i + 1 + f).filter(|t| word(t) == b"@") {
                found.push(t.start);
            }
        }
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kinds(text: &str) -> Vec<(usize, Kind)> {
        Entries::new(text.as_bytes())
            .map(|e| (e.first.line, e.kind))
            .collect()
    }

    fn ttl_word(text: &str, e: &Entry) -> Option<String> {
        e.ttl().map(|t| text[t.start..t.end].to_string())
    }

    #[test]
    fn records_and_directives_with_their_ttls() {
        let text = "$ORIGIN x.\n$TTL 1h\n@ SOA ns h ( 1\n 2 3 4 5 )\n  60 A 192.0.2.1\n\
                    a IN 2h A 192.0.2.2\nb 7 IN A 192.0.2.3\nc IN A 192.0.2.4\n$INCLUDE f\n";
        let entries: Vec<Entry> = Entries::new(text.as_bytes()).collect();
        let lines: Vec<usize> = entries.iter().map(|e| e.first.line).collect();
        assert_eq!(lines, [1, 2, 3, 5, 6, 7, 8, 9]);
        let ttls: Vec<Option<String>> = entries.iter().map(|e| ttl_word(text, e)).collect();
        assert_eq!(
            ttls,
            [
                None,
                Some("1h".into()),
                None,
                Some("60".into()),
                Some("2h".into()),
                Some("7".into()),
                None,
                None
            ]
        );
        let returned: Vec<bool> = entries.iter().map(Entry::returned).collect();
        assert_eq!(returned, [false, false, true, true, true, true, true, true]);
        assert_eq!(kinds("$INCLUDE f\n")[0].1, Kind::Include);
        assert_eq!(kinds("$FOO\n")[0].1, Kind::Other);
    }

    #[test]
    fn at_signs_in_names_of_record_data() {
        let text = "@ SOA @ h 1 2 3 4 5\n  NS @\nw 60 IN CNAME @\nm MX 10 @\nt TXT @\n\
                    s IN SRV 0 0 53 @\nx A 192.0.2.1 ; CNAME @\n$ORIGIN @\n";
        let at: Vec<usize> = origin_signs(text.as_bytes());
        let lines: Vec<usize> = at
            .iter()
            .map(|&o| text[..o].matches('\n').count() + 1)
            .collect();
        assert_eq!(lines, [1, 2, 3, 4, 6]);
        assert!(at.iter().all(|&o| &text[o..=o] == "@"));
        assert_eq!(&text[at[0] - 4..at[0]], "SOA ");
    }

    fn problem(text: &str) -> Option<(usize, String)> {
        first_problem(text.as_bytes(), "t").map(|(start, e)| (start, e.to_string()))
    }

    #[test]
    fn problems_are_placed_on_what_is_at_fault() {
        let head = "$TTL 60\n@ SOA ns h 1 2 3 4 5\n";
        assert_eq!(problem(head), None);
        let text = format!("{head}a 99999999999 A 192.0.2.1\n");
        assert_eq!(
            problem(&text),
            Some((
                head.len(),
                "t:3:3: TTL 99999999999 out of range: a TTL has 32 bits (at most 4294967295)"
                    .into()
            ))
        );
        let e = problem("$TTL 9999999w\n").unwrap();
        assert!(e.1.starts_with("t:1:6: TTL 9999999w out of range"), "{e:?}");
        assert_eq!(problem("a IN 4294967295 A 192.0.2.1\n"), None);
        let text = format!("{head}a TXT ( \"x\"\nb A 192.0.2.1\n");
        assert_eq!(
            problem(&text),
            Some((
                head.len(),
                "t:3:7: unclosed parenthesis: nothing closes this `(`, so its record runs to the end of the file".into()
            ))
        );
        let text = format!("{head}a TXT \"x ( \nb A 192.0.2.1\n");
        let (start, e) = problem(&text).unwrap();
        assert_eq!(start, head.len());
        assert!(e.starts_with("t:3:7: unclosed quote"), "{e}");
        // Closed on a later line: no problem.
        assert_eq!(problem(&format!("{head}a TXT ( \"x\"\n \"y\" )\n")), None);
    }
}
