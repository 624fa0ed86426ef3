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

/// The seconds of a time value as written in a TTL position: plain seconds (`3600`) or BIND's
/// number–unit pairs (`1w2d3h4m5s`, case-insensitive, the last pair may lack its unit),
/// saturating at `u64::MAX`; `None` for a token of another form. Whether it fits 32 bits is
/// the caller's question.
pub(crate) fn time_value(token: &[u8]) -> Option<u64> {
    if token.is_empty() {
        return None;
    }
    let mut total: u64 = 0;
    let mut number: Option<u64> = None;
    for &b in token {
        match b {
            b'0'..=b'9' => {
                let n = number.unwrap_or(0);
                number = Some(n.saturating_mul(10).saturating_add(u64::from(b - b'0')));
            }
            _ => {
                let scale: u64 = match b.to_ascii_lowercase() {
                    b's' => 1,
                    b'm' => 60,
                    b'h' => 3_600,
                    b'd' => 86_400,
                    b'w' => 604_800,
                    _ => return None,
                };
                total = total.saturating_add(number.take()?.saturating_mul(scale));
            }
        }
    }
    Some(total.saturating_add(number.unwrap_or(0)))
}

/// Seconds of a BIND time value with units (`1w2d3h4m5s`, case-insensitive, the last pair may
/// lack its unit); `None` for a plain number (nothing to rewrite), a value past 32 bits or
/// anything else.
pub(crate) fn seconds_with_units(token: &[u8]) -> Option<u32> {
    if token.iter().all(u8::is_ascii_digit) {
        return None;
    }
    time_value(token).and_then(|s| u32::try_from(s).ok())
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
    let rewrites = rewrites(text);
    if rewrites.is_empty() {
        return Cow::Borrowed(text);
    }
    let mut out = Vec::with_capacity(text.len());
    let mut copied = 0;
    for (range, secs) in rewrites {
        out.extend_from_slice(&text[copied..range.start]);
        out.extend_from_slice(secs.to_string().as_bytes());
        copied = range.end;
    }
    out.extend_from_slice(&text[copied..]);
    Cow::Owned(out)
}

/// The time values with units of a zone file's text that a parser taking only seconds must
/// see in seconds: each token's range and its seconds, in order.
pub(crate) fn rewrites(text: &[u8]) -> Vec<(Range<usize>, u32)> {
    let mut found = Vec::new();
    // Quick exit: no digit is followed by a unit letter anywhere.
    let has_candidate = text.windows(2).any(|w| {
        w[0].is_ascii_digit()
            && matches!(w[1].to_ascii_lowercase(), b's' | b'm' | b'h' | b'd' | b'w')
    });
    if !has_candidate {
        return found;
    }
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
                found.push((t.start..t.end, secs));
            }
        }
    }
    found
}

/// Whether a token names a class (`IN`, `CH`, `CS`, `HS`, `CLASS`n).
pub(crate) fn is_class(token: &[u8]) -> bool {
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
    fn time_values_in_ttl_positions() {
        assert_eq!(time_value(b"3600"), Some(3_600));
        assert_eq!(time_value(b"1h30"), Some(3_630));
        assert_eq!(time_value(b"99999999999"), Some(99_999_999_999));
        assert_eq!(time_value(b"99999999999999999999999w"), Some(u64::MAX));
        assert_eq!(time_value(b"A"), None);
        assert_eq!(time_value(b"h1"), None);
        assert_eq!(time_value(b""), None);
    }

    #[test]
    fn rewrites_say_where_each_value_was() {
        let r = rewrites(b"$TTL 1h\n@ 1d SOA ns h 1 2 3 4 5\n");
        assert_eq!(r, [(5..7, 3_600), (10..12, 86_400)]);
    }

    #[test]
    fn text_without_units_is_not_copied() {
        let text = b"@ 3600 SOA ns host 1 7200 3600 1209600 300\nwww A 192.0.2.1\n";
        assert!(matches!(expand(text), Cow::Borrowed(_)));
    }
}
