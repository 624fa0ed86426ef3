//! BIND-style time values with units (`1h`, `1w2d`, `90M`) in zone files, rewritten to plain
//! seconds before `domain`'s parser sees the text: it takes only decimal seconds, while BIND,
//! knotd and nsd accept units in `$TTL`, in record TTLs and in the SOA's refresh, retry, expire
//! and minimum fields (CZ-NIC's sample `example.com.zone` is written that way).
//!
//! Only those positions are rewritten, and only tokens made of number–unit pairs: owner names,
//! other rdata, comments and quoted strings are left alone, and line breaks stay where they are,
//! so error messages keep their line numbers. Text with no such token is not copied.

use std::borrow::Cow;

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

/// The zone file text with every time value that has units (`$TTL 1h`, record TTLs, the SOA's
/// timers) rewritten to seconds, for parsers that take only seconds; borrowed when there is none.
pub fn expand(text: &[u8]) -> Cow<'_, [u8]> {
    // Quick exit: no digit is followed by a unit letter anywhere.
    let has_candidate = text.windows(2).any(|w| {
        w[0].is_ascii_digit()
            && matches!(w[1].to_ascii_lowercase(), b's' | b'm' | b'h' | b'd' | b'w')
    });
    if !has_candidate {
        return Cow::Borrowed(text);
    }
    let mut out: Option<Vec<u8>> = None;
    let mut copied = 0; // text[..copied] is in `out` (when it exists)
    let mut state = State::Rest;
    let mut parens = 0u32;
    // A record or directive starts at the next token (a line break outside parentheses), and
    // whether that token stands at the start of its line (an owner or a directive) or after a
    // blank (the owner left out).
    let mut new_entry = true;
    let mut at_line_start = true;
    let mut i = 0;
    while i < text.len() {
        let b = text[i];
        match b {
            b'\n' => {
                if parens == 0 {
                    new_entry = true;
                }
                at_line_start = true;
                i += 1;
                continue;
            }
            b' ' | b'\t' | b'\r' => {
                at_line_start = false;
                i += 1;
                continue;
            }
            b';' => {
                while i < text.len() && text[i] != b'\n' {
                    i += 1;
                }
                continue;
            }
            b'(' => {
                parens += 1;
                at_line_start = false;
                i += 1;
                continue;
            }
            b')' => {
                parens = parens.saturating_sub(1);
                i += 1;
                continue;
            }
            _ => {}
        }
        let owner_or_directive = new_entry && at_line_start;
        if new_entry && !at_line_start {
            state = State::Head;
        }
        new_entry = false;
        at_line_start = false;
        // A token: a quoted string or a run up to a blank, a comment or a parenthesis.
        let start = i;
        if b == b'"' {
            i += 1;
            while i < text.len() && text[i] != b'"' {
                i += if text[i] == b'\\' { 2 } else { 1 };
            }
            i = (i + 1).min(text.len());
        } else {
            while i < text.len()
                && !matches!(text[i], b' ' | b'\t' | b'\r' | b'\n' | b';' | b'(' | b')')
            {
                i += if text[i] == b'\\' { 2 } else { 1 };
            }
            i = i.min(text.len());
        }
        let token = &text[start..i];
        let rewrite = if owner_or_directive {
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
                let out = out.get_or_insert_with(|| Vec::with_capacity(text.len()));
                out.extend_from_slice(&text[copied..start]);
                out.extend_from_slice(secs.to_string().as_bytes());
                copied = i;
            }
        }
    }
    match out {
        Some(mut out) => {
            out.extend_from_slice(&text[copied..]);
            Cow::Owned(out)
        }
        None => Cow::Borrowed(text),
    }
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
    fn text_without_units_is_not_copied() {
        let text = b"@ 3600 SOA ns host 1 7200 3600 1209600 300\nwww A 192.0.2.1\n";
        assert!(matches!(expand(text), Cow::Borrowed(_)));
    }
}
