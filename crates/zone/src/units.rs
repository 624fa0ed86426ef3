//! BIND-style time values with units (`1h`, `1w2d`, `90M`) in zone files, rewritten to plain
//! seconds before `domain`'s parser sees the text: it takes only decimal seconds, while BIND,
//! knotd and nsd accept units in `$TTL`, in record TTLs and in the SOA's refresh, retry, expire
//! and minimum fields (CZ-NIC's sample `example.com.zone` is written that way).
//!
//! Only those positions are rewritten, and only tokens made of number–unit pairs: owner names,
//! other rdata, comments and quoted strings are left alone, and line breaks stay where they are,
//! so error messages keep their line numbers. Text with no such token is not copied.

use std::borrow::Cow;
use std::ops::Range;

use crate::tokens::Tokens;

/// Seconds of a BIND time value with units (`1w2d3h4m5s`, case-insensitive, the last pair may
/// lack its unit); `None` for a plain number (nothing to rewrite) or anything else.
pub(crate) fn seconds_with_units(token: &[u8]) -> Option<u32> {
    let mut total: u64 = 0;
    let mut number: Option<u64> = None;
    let mut units = false;
    for &b in token {
        match b {
            b'0'..=b'9' => {
                let n = number.unwrap_or(0) * 10 + u64::from(b - b'0');
                if n > u64::from(u32::MAX) {
                    return None;
                }
                number = Some(n);
            }
            _ => {
                let scale = match b.to_ascii_lowercase() {
                    b's' => 1,
                    b'm' => 60,
                    b'h' => 3_600,
                    b'd' => 86_400,
                    b'w' => 604_800,
                    _ => return None,
                };
                total += number.take()? * scale;
                units = true;
            }
        }
        if total > u64::from(u32::MAX) {
            return None;
        }
    }
    total += number.unwrap_or(0);
    (units && total <= u64::from(u32::MAX)).then_some(total as u32)
}

/// Where a token stands in the record being read.
#[derive(Clone, Copy, PartialEq, Eq)]
enum State {
    /// Before the record type: TTL and class.
    Head,
    /// In the rdata of an SOA record, at this field.
    Soa(u8),
    /// In other rdata, or in a directive other than `$TTL`.
    Rest,
    /// Right after `$TTL`.
    TtlDirective,
}

/// A zone file's text with its time values in seconds, and where its bytes came from.
pub(crate) struct Expanded<'a> {
    /// The text as the parser is to read it.
    pub text: Cow<'a, [u8]>,
    /// Each rewritten token: its range in the original text and in the rewritten one, in order.
    edits: Vec<(Range<usize>, Range<usize>)>,
}

impl Expanded<'_> {
    /// The offset in the original text of an offset in the rewritten one (a rewritten token's
    /// bytes map to its start).
    pub fn original_offset(&self, offset: usize) -> usize {
        let i = self.edits.partition_point(|(_, new)| new.start <= offset);
        match i.checked_sub(1).map(|i| &self.edits[i]) {
            None => offset,
            Some((old, new)) if offset < new.end => old.start,
            Some((old, new)) => offset - new.end + old.end,
        }
    }
}

/// The zone file text with every time value that has units (`$TTL 1h`, record TTLs, the SOA's
/// timers) rewritten to seconds, for parsers that take only seconds; borrowed when there is none.
pub fn expand(text: &[u8]) -> Cow<'_, [u8]> {
    expand_mapped(text).text
}

/// [`expand`], keeping where each rewritten token was.
pub(crate) fn expand_mapped(text: &[u8]) -> Expanded<'_> {
    // Quick exit: no digit is followed by a unit letter anywhere.
    let has_candidate = text.windows(2).any(|w| {
        w[0].is_ascii_digit()
            && matches!(w[1].to_ascii_lowercase(), b's' | b'm' | b'h' | b'd' | b'w')
    });
    let mut expanded = Expanded {
        text: Cow::Borrowed(text),
        edits: Vec::new(),
    };
    if !has_candidate {
        return expanded;
    }
    let mut out: Vec<u8> = Vec::new();
    let mut copied = 0; // text[..copied] is in `out`
    let mut state = State::Rest;
    for t in Tokens::new(text) {
        let token = &text[t.start..t.end];
        let rewrite = if t.starts_entry && !t.indented {
            // A new record (its owner) or a directive.
            state = if token.eq_ignore_ascii_case(b"$TTL") {
                State::TtlDirective
            } else if token.starts_with(b"$") {
                State::Rest
            } else {
                State::Head
            };
            false
        } else {
            if t.starts_entry {
                // A record that leaves its owner out.
                state = State::Head;
            }
            match state {
                State::TtlDirective => {
                    state = State::Rest;
                    true
                }
                State::Head => {
                    if is_class(token) || token.iter().all(u8::is_ascii_digit) {
                        false
                    } else if seconds_with_units(token).is_some() {
                        true
                    } else {
                        state = if token.eq_ignore_ascii_case(b"SOA") {
                            State::Soa(0)
                        } else {
                            State::Rest
                        };
                        false
                    }
                }
                State::Soa(field) => {
                    state = if field >= 6 {
                        State::Rest
                    } else {
                        State::Soa(field + 1)
                    };
                    (3..=6).contains(&field)
                }
                State::Rest => false,
            }
        };
        if rewrite {
            if let Some(secs) = seconds_with_units(token) {
                out.extend_from_slice(&text[copied..t.start]);
                let new_start = out.len();
                out.extend_from_slice(secs.to_string().as_bytes());
                expanded.edits.push((t.start..t.end, new_start..out.len()));
                copied = t.end;
            }
        }
    }
    if !expanded.edits.is_empty() {
        out.extend_from_slice(&text[copied..]);
        expanded.text = Cow::Owned(out);
    }
    expanded
}

fn is_class(token: &[u8]) -> bool {
    ["IN", "CH", "CS", "HS"]
        .iter()
        .any(|c| token.eq_ignore_ascii_case(c.as_bytes()))
        || (token.len() > 5
            && token[..5].eq_ignore_ascii_case(b"CLASS")
            && token[5..].iter().all(u8::is_ascii_digit))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn expanded(text: &str) -> String {
        String::from_utf8(expand(text.as_bytes()).into_owned()).unwrap()
    }

    #[test]
    fn values_with_units() {
        assert_eq!(seconds_with_units(b"6h"), Some(21_600));
        assert_eq!(seconds_with_units(b"1W2d3H4m5s"), Some(788_645));
        assert_eq!(seconds_with_units(b"1h30"), Some(3_630));
        assert_eq!(seconds_with_units(b"3600"), None, "plain seconds stay");
        assert_eq!(seconds_with_units(b"h"), None);
        assert_eq!(seconds_with_units(b"1x"), None);
        assert_eq!(seconds_with_units(b"99999999w"), None, "past 32 bits");
        assert_eq!(seconds_with_units(b""), None);
    }

    #[test]
    fn soa_ttl_directive_and_record_ttls_are_rewritten() {
        let text = "$ORIGIN 1h.example.\n$TTL 1h\n@ 1d IN SOA ns 1h ( 2010111213 ; 1w\n 6h 1h\n 1w 1d )\n 2h30m A 192.0.2.1\n1h TXT \"1h\" 2h\nmx MX 10 1h\n";
        assert_eq!(
            expanded(text),
            "$ORIGIN 1h.example.\n$TTL 3600\n@ 86400 IN SOA ns 1h ( 2010111213 ; 1w\n 21600 3600\n 604800 86400 )\n 9000 A 192.0.2.1\n1h TXT \"1h\" 2h\nmx MX 10 1h\n"
        );
    }

    #[test]
    fn offsets_map_back_to_the_original_text() {
        let e = expand_mapped(b"$TTL 1h\n@ 1d SOA ns h 1 2 3 4 5\n");
        assert_eq!(&*e.text, b"$TTL 3600\n@ 86400 SOA ns h 1 2 3 4 5\n");
        assert_eq!(e.original_offset(2), 2, "before any rewrite");
        assert_eq!(e.original_offset(5), 5, "a rewritten token's start");
        assert_eq!(e.original_offset(8), 5, "inside it");
        assert_eq!(e.original_offset(9), 7, "the line feed after it");
        assert_eq!(e.original_offset(18), 13, "SOA, after two rewrites");
    }

    #[test]
    fn text_without_units_is_not_copied() {
        let text = b"@ 3600 SOA ns host 1 7200 3600 1209600 300\nwww A 192.0.2.1\n";
        assert!(matches!(expand(text), Cow::Borrowed(_)));
    }
}
