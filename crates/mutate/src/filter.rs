//! The filters: which records to keep.

use crate::choice::{ClientHash, Share};
use crate::prefix::IpPrefix;
use ldplayer_dns::Rtype;
use std::net::IpAddr;

/// One compiled filter.
#[derive(Debug, Clone)]
pub(crate) enum Filter {
    /// Keep responses (true) or queries (false).
    Direction(bool),
    /// Keep offsets from the trace start in `[from, to)`, in nanoseconds.
    TimeWindow { from: Option<i64>, to: Option<i64> },
    /// Keep clients in one of the prefixes.
    ClientPrefixes(Vec<IpPrefix>),
    /// Keep the clients whose hash falls under the share.
    ClientShare(ClientHash, Share),
    /// Keep first-question types in the list.
    Qtypes(Vec<Rtype>),
    /// Keep first-question names at or below one of these (lower-case wire) names.
    QnameSuffixes(Vec<Vec<u8>>),
}

/// What the filters look at in a record.
pub(crate) struct View<'a> {
    /// The record is a response.
    pub response: bool,
    /// The client address.
    pub client: IpAddr,
    /// Time since the trace start in nanoseconds.
    pub offset_ns: i128,
    /// Type of the first question, if the message parses and has one.
    pub qtype: Option<Rtype>,
    /// Uncompressed first question name, if the message parses and has one.
    pub qname: Option<&'a [u8]>,
}

impl Filter {
    /// Position in the running order.
    pub fn rank(&self) -> u8 {
        match self {
            Filter::Direction(_) => 0,
            Filter::TimeWindow { .. } => 1,
            Filter::ClientPrefixes(_) => 2,
            Filter::ClientShare(..) => 3,
            Filter::Qtypes(_) => 4,
            Filter::QnameSuffixes(_) => 5,
        }
    }

    /// The stable name records failing the filter are counted under.
    pub fn name(&self) -> &'static str {
        match self {
            Filter::Direction(_) => "direction",
            Filter::TimeWindow { .. } => "time-window",
            Filter::ClientPrefixes(_) => "client-prefix",
            Filter::ClientShare(..) => "client-share",
            Filter::Qtypes(_) => "qtype",
            Filter::QnameSuffixes(_) => "qname-suffix",
        }
    }

    /// Whether the filter needs the first question (so the message must be parsed).
    pub fn needs_question(&self) -> bool {
        matches!(self, Filter::Qtypes(_) | Filter::QnameSuffixes(_))
    }

    /// Whether the record passes.
    pub fn keeps(&self, v: &View<'_>) -> bool {
        match self {
            Filter::Direction(response) => v.response == *response,
            Filter::TimeWindow { from, to } => {
                from.is_none_or(|f| f as i128 <= v.offset_ns)
                    && to.is_none_or(|t| v.offset_ns < t as i128)
            }
            Filter::ClientPrefixes(p) => p.iter().any(|p| p.contains(v.client)),
            Filter::ClientShare(hash, share) => share.hit(hash.of(v.client)),
            Filter::Qtypes(t) => v.qtype.is_some_and(|q| t.contains(&q)),
            Filter::QnameSuffixes(s) => v
                .qname
                .is_some_and(|name| s.iter().any(|s| is_at_or_below(name, s))),
        }
    }
}

/// Whether the uncompressed wire name `name` equals `suffix` (lower-case wire) or lies below it,
/// comparing whole labels and ignoring ASCII case. Length bytes are at most 63, below `A`, so
/// case folding never touches them.
pub fn is_at_or_below(name: &[u8], suffix: &[u8]) -> bool {
    let mut p = 0;
    while let Some(rest) = name.get(p..) {
        if rest.len() <= suffix.len() {
            return rest.eq_ignore_ascii_case(suffix);
        }
        match rest.first() {
            Some(&len) if len != 0 => p += 1 + len as usize,
            _ => return false,
        }
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;
    use ldplayer_dns::name_from_presentation;

    fn below(name: &str, suffix: &str) -> bool {
        let n = name_from_presentation(name).unwrap();
        let s = name_from_presentation(suffix).unwrap().to_ascii_lowercase();
        is_at_or_below(&n, &s)
    }

    #[test]
    fn label_aware_and_case_insensitive() {
        assert!(below("www.Example.COM.", "example.com"));
        assert!(below("example.com.", "EXAMPLE.com."));
        assert!(!below("badexample.com.", "example.com"));
        assert!(!below("example.com.", "www.example.com"));
        assert!(!below("com.", "example.com"));
        assert!(below("a.b.c.", "."));
        assert!(below(".", "."));
        assert!(!below("example.org.", "example.com"));
        assert!(!below("x\\007example.com.", "example.com"));
        assert!(below("a.x\\007example.com.", "x\\007example.com"));
    }

    #[test]
    fn damaged_names_do_not_match() {
        assert!(!is_at_or_below(&[5, b'a'], b"\x01a\x00"));
        assert!(!is_at_or_below(&[], b"\x00"));
    }
}
