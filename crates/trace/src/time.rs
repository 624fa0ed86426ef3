//! Capture times as seconds with nine decimals, the text format's `time` column.

/// Formats nanoseconds since the epoch as seconds with nine decimals (`1520000000.000123456`).
pub fn format_time(time_ns: i64, out: &mut String) {
    use std::fmt::Write;
    let sign = if time_ns < 0 { "-" } else { "" };
    let abs = time_ns.unsigned_abs();
    let _ = write!(
        out,
        "{sign}{}.{:09}",
        abs / 1_000_000_000,
        abs % 1_000_000_000
    );
}

/// Parses seconds with up to nine decimals into nanoseconds; `None` when malformed or out of range.
pub fn parse_time(s: &str) -> Option<i64> {
    let (neg, s) = match s.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, s),
    };
    let (int, frac) = s.split_once('.').unwrap_or((s, ""));
    if int.is_empty()
        || frac.len() > 9
        || !int.bytes().all(|b| b.is_ascii_digit())
        || !frac.bytes().all(|b| b.is_ascii_digit())
    {
        return None;
    }
    let secs: i64 = int.parse().ok()?;
    let mut nanos: i64 = 0;
    for i in 0..9 {
        nanos = nanos * 10 + frac.as_bytes().get(i).map_or(0, |b| (b - b'0') as i64);
    }
    let v = secs.checked_mul(1_000_000_000)?.checked_add(nanos)?;
    Some(if neg { -v } else { v })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times_round_trip() {
        for t in [
            0i64,
            1,
            999_999_999,
            1_520_000_000_123_456_789,
            -1,
            -1_500_000_000,
        ] {
            let mut s = String::new();
            format_time(t, &mut s);
            assert_eq!(parse_time(&s), Some(t), "{s}");
        }
        assert_eq!(parse_time("1.5"), Some(1_500_000_000));
        assert_eq!(parse_time("12"), Some(12_000_000_000));
        assert_eq!(parse_time("1.0000000001"), None);
        assert_eq!(parse_time("x"), None);
    }
}
