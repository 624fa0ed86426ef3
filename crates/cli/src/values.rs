//! The numbers options take, each checked where it is parsed, with the bound in the message.
//!
//! `replay --timeout -1` used to be read as an unknown option ("unexpected argument '-1'"), and
//! `--timeout 1e30` was called "not a non-negative number" several steps later, in words of the
//! code that failed. Every numeric option of the kinds below takes negative values as values
//! (`allow_negative_numbers`) and one of these parsers, so clap says which option is wrong,
//! what it was given and what it takes: `invalid value '-1' for '--timeout <SECONDS>':
//! expected a number of seconds above 0, up to 10000000 (about 116 days)`. A value a parser accepts is used as
//! written: none of them overflows a `Duration` or an `Instant` further on.

/// The longest duration an option takes: about 116 days, far past any replay, yet small
/// enough that a deadline this far ahead of now is always representable.
pub const MAX_SECONDS: f64 = 1e7;

/// The largest time an option takes, in seconds (of a trace, or since the Unix epoch): year
/// 2286, past any capture.
pub const MAX_TIME: f64 = 1e10;

/// The slowest rate a replay is paced at: one query every 1000 s.
pub const MIN_RATE: f64 = 1e-3;

/// The fastest rate a replay or a synthetic trace is asked for: a billion queries per second.
pub const MAX_RATE: f64 = 1e9;

/// The smallest and largest factors of time (`--speed`, `--time-scale`).
pub const FACTOR_RANGE: (f64, f64) = (1e-3, 1e6);

/// A number (perhaps not finite: the range says what is wanted), or what is wrong with it.
fn number(s: &str) -> Result<f64, String> {
    s.trim()
        .parse()
        .map_err(|_| format!("{s:?} is not a number"))
}

/// `v` when it is finite and within `[low, high]` (or `(low, high]` when `open_low`), else
/// `what`.
fn within(v: f64, low: f64, high: f64, open_low: bool, what: &str) -> Result<f64, String> {
    let above_low = if open_low { v > low } else { v >= low };
    if v.is_finite() && above_low && v <= high {
        Ok(v)
    } else {
        Err(format!("expected {what}"))
    }
}

/// A number of seconds from 0 to [`MAX_SECONDS`].
pub fn seconds(s: &str) -> Result<f64, String> {
    within(
        number(s)?,
        0.0,
        MAX_SECONDS,
        false,
        "a number of seconds from 0 to 10000000 (about 116 days)",
    )
}

/// A number of seconds above 0, up to [`MAX_SECONDS`].
pub fn positive_seconds(s: &str) -> Result<f64, String> {
    within(
        number(s)?,
        0.0,
        MAX_SECONDS,
        true,
        "a number of seconds above 0, up to 10000000 (about 116 days)",
    )
}

/// A time in seconds from 0 to [`MAX_TIME`] (a trace offset, or seconds since the Unix
/// epoch).
pub fn time(s: &str) -> Result<f64, String> {
    within(
        number(s)?,
        0.0,
        MAX_TIME,
        false,
        "a time in seconds from 0 to 10000000000",
    )
}

/// A shift of time in seconds, either way, up to [`MAX_TIME`].
pub fn shift(s: &str) -> Result<f64, String> {
    within(
        number(s)?,
        -MAX_TIME,
        MAX_TIME,
        false,
        "a number of seconds from -10000000000 to 10000000000",
    )
}

/// Queries per second, from [`MIN_RATE`] to [`MAX_RATE`].
pub fn rate(s: &str) -> Result<f64, String> {
    within(
        number(s)?,
        MIN_RATE,
        MAX_RATE,
        false,
        "queries per second from 0.001 (one every 1000 s) to 1000000000",
    )
}

/// A factor of time within [`FACTOR_RANGE`].
pub fn factor(s: &str) -> Result<f64, String> {
    let (low, high) = FACTOR_RANGE;
    within(
        number(s)?,
        low,
        high,
        false,
        "a factor from 0.001 to 1000000",
    )
}

/// A ramp's length: above 0, up to a day (86400 s), the engine's bound.
pub fn ramp_seconds(s: &str) -> Result<f64, String> {
    within(
        number(s)?,
        0.0,
        86_400.0,
        true,
        "a number of seconds above 0, up to 86400 (a day)",
    )
}

/// A percentage from 0 to 100.
pub fn percent(s: &str) -> Result<f64, String> {
    within(number(s)?, 0.0, 100.0, false, "a percentage from 0 to 100")
}

/// A percentile above 0, up to 100.
pub fn percentile(s: &str) -> Result<f64, String> {
    within(
        number(s)?,
        0.0,
        100.0,
        true,
        "a percentile above 0, up to 100",
    )
}

/// Milliseconds above 0, up to [`MAX_SECONDS`] in ms.
pub fn positive_ms(s: &str) -> Result<f64, String> {
    within(
        number(s)?,
        0.0,
        MAX_SECONDS * 1e3,
        true,
        "a number of milliseconds above 0, up to 10000000000",
    )
}

/// Queries over one connection: 1 to a trillion.
pub fn queries_per_connection(s: &str) -> Result<u64, String> {
    whole(s, 1, 1_000_000_000_000, "a number of queries")
}

/// Packets sent with one set of QUIC keys before the client updates them: 0 (none before the
/// cipher's confidentiality limit) to a trillion.
pub fn key_update_packets(s: &str) -> Result<u64, String> {
    whole(s, 0, 1_000_000_000_000, "a number of packets")
}

/// A share from 0 to 1.
pub fn fraction(s: &str) -> Result<f64, String> {
    within(number(s)?, 0.0, 1.0, false, "a share from 0 to 1")
}

/// A whole number from `low` to `high` (anything else, `1e30` and `-1` included, is refused
/// with the range: never Rust's "invalid digit" or "number too large").
fn whole(s: &str, low: u64, high: u64, what: &str) -> Result<u64, String> {
    match s.trim().parse::<i128>() {
        Ok(v) if (i128::from(low)..=i128::from(high)).contains(&v) => Ok(v as u64),
        _ => Err(format!("expected {what} from {low} to {high}")),
    }
}

/// A count of at least one (queries in flight, threads, connections), up to a billion.
pub fn count(s: &str) -> Result<usize, String> {
    whole(s, 1, 1_000_000_000, "a whole number").map(|v| v as usize)
}

/// A count from zero, up to a billion.
pub fn count_from_zero(s: &str) -> Result<usize, String> {
    whole(s, 0, 1_000_000_000, "a whole number").map(|v| v as usize)
}

/// A number of queries to make, from 1 to a trillion (a day of B-Root is about 3.3 billion).
pub fn queries(s: &str) -> Result<u64, String> {
    whole(s, 1, 1_000_000_000_000, "a number of queries")
}

/// A number of clients, from 1 to 2^32 (every IPv4 address).
pub fn clients(s: &str) -> Result<u64, String> {
    whole(s, 1, 1 << 32, "a number of clients")
}

/// A port from 1 to 65535.
pub fn port(s: &str) -> Result<u16, String> {
    whole(s, 1, 65_535, "a port").map(|v| v as u16)
}

/// A port from 0 (any free port, for tests) to 65535.
pub fn port_or_any(s: &str) -> Result<u16, String> {
    whole(s, 0, 65_535, "a port (0: any free one)").map(|v| v as u16)
}

/// A random seed: any 64-bit number.
pub fn seed(s: &str) -> Result<u64, String> {
    whole(s, 0, u64::MAX, "a seed")
}

/// An EDNS UDP payload size, from 512 (RFC 6891 §6.2.5: smaller values are treated as 512) to
/// 65535.
pub fn bufsize(s: &str) -> Result<u16, String> {
    whole(s, 512, 65_535, "a payload size in bytes").map(|v| v as u16)
}

/// Retries of a UDP query after a timeout: up to 100 (a stub's default is 2 to 4).
pub fn retries(s: &str) -> Result<u32, String> {
    whole(s, 0, 100, "a number of retries").map(|v| v as u32)
}

/// Querier threads: 1 to 1024, the engine's own bound.
pub fn queriers(s: &str) -> Result<usize, String> {
    whole(s, 1, 1024, "a number of querier threads").map(|v| v as usize)
}

/// Replay processes on one host: 1 to 1024 (each holds its own sockets: a process's open-file
/// limit, not this bound, is what more of them get past).
pub fn processes(s: &str) -> Result<u32, String> {
    whole(s, 1, 1024, "a number of processes").map(|v| v as u32)
}

/// Input files decoded at once: 1 to 1024.
pub fn jobs(s: &str) -> Result<usize, String> {
    whole(s, 1, 1024, "a number of files decoded at once").map(|v| v as usize)
}

/// Shards of one replay over processes or hosts: 1 to a million.
pub fn shards(s: &str) -> Result<u32, String> {
    whole(s, 1, 1_000_000, "a number of shards").map(|v| v as u32)
}

/// A target of a diff, by number: 0 to 65535 (a results file numbers its targets in a u16).
pub fn target(s: &str) -> Result<usize, String> {
    whole(s, 0, 65_535, "a target number").map(|v| v as usize)
}

/// Rounds of re-asking: 1 to 100.
pub fn rounds(s: &str) -> Result<u32, String> {
    whole(s, 1, 100, "a number of rounds").map(|v| v as u32)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_parser_takes_its_range_and_says_it_otherwise() {
        assert_eq!(seconds("0"), Ok(0.0));
        assert_eq!(seconds("1e7"), Ok(1e7));
        for bad in ["-1", "1e30", "nan", "inf", "x", ""] {
            let e = seconds(bad).expect_err(bad);
            assert!(e.contains("seconds") || e.contains("number"), "{bad}: {e}");
        }
        assert!(positive_seconds("0").is_err());
        assert_eq!(positive_seconds("0.5"), Ok(0.5));
        assert_eq!(rate("0.001"), Ok(0.001));
        assert!(rate("1e-300").is_err() && rate("-5").is_err() && rate("1e30").is_err());
        assert!(factor("0").is_err() && factor("-1").is_err() && factor("1e300").is_err());
        assert_eq!(fraction("1"), Ok(1.0));
        assert!(fraction("1.5").is_err() && fraction("-0.1").is_err());
        assert_eq!(shift("-3600"), Ok(-3600.0));
        assert!(time("-1").is_err());
        assert_eq!(count("3"), Ok(3));
        assert!(count("0").is_err() && count("-1").is_err() && count("1.5").is_err());
        assert_eq!(count_from_zero("0"), Ok(0));
    }
}
