//! The workloads a lab sends to its resolver: a list of names resolved one by one
//! ([`resolve_names`]), or a trace replayed with the query engine to the resolver's addresses
//! ([`replay_config`]).

use crate::client::{self, QueryFlags};
use crate::{LabError, ResolverSide};
use ldplayer_dns::Rtype;
use std::io::Write;
use std::net::SocketAddr;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

/// How long one name may take to resolve.
const NAME_TIMEOUT: Duration = Duration::from_secs(10);

/// What a list of names came to.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct NamesOutcome {
    /// Names answered (any RCODE).
    pub resolved: u64,
    /// Names without an answer (timed out, or the query failed).
    pub failed: u64,
    /// Whether `stop` ended the list before its end.
    pub interrupted: bool,
}

/// Resolves every name of `list` through `resolver`, one after the other, and writes one line
/// per name to `out`: its answer ([`client::Resolved::line`]) or `NAME TYPE ERROR why`. Stops
/// before the next name once `stop` is set.
///
/// Each line of `list` is `NAME [TYPE] [+FLAG...]` (`#` starts a comment; the type is A unless
/// given; RD and AD are set unless a flag says otherwise, see [`QueryFlags::apply`]). `origin`
/// names the list in errors (`names.txt:3: unknown type "AAA"`).
pub fn resolve_names(
    resolver: SocketAddr,
    list: &str,
    origin: &Path,
    out: &mut dyn Write,
    stop: &AtomicBool,
) -> Result<NamesOutcome, LabError> {
    let mut outcome = NamesOutcome::default();
    for (n, line) in list.lines().enumerate() {
        if stop.load(Ordering::Relaxed) {
            outcome.interrupted = true;
            break;
        }
        let Some((name, qtype, flags)) = parse_line(line, origin, n + 1)? else {
            continue;
        };
        match client::resolve_with(resolver, &name, qtype, flags, NAME_TIMEOUT) {
            Ok(r) => {
                outcome.resolved += 1;
                writeln!(out, "{}", r.line()).map_err(LabError::Io)?;
            }
            Err(e) => {
                outcome.failed += 1;
                writeln!(out, "{name} {qtype} ERROR {e}").map_err(LabError::Io)?;
            }
        }
    }
    // A stop set while the last name was resolved still interrupted the list.
    outcome.interrupted |= stop.load(Ordering::Relaxed);
    Ok(outcome)
}

/// One line of a list of names: the name (made absolute), its type and flags; `None` for a
/// blank or comment line.
fn parse_line(
    line: &str,
    origin: &Path,
    number: usize,
) -> Result<Option<(String, Rtype, QueryFlags)>, LabError> {
    let line = line.split('#').next().unwrap_or("").trim();
    let mut fields = line.split_whitespace();
    let Some(name) = fields.next() else {
        return Ok(None);
    };
    let mut qtype = Rtype::A;
    // RD and AD unless the line says otherwise (a validating resolver then says whether it
    // validated the answer); CD and DO when it asks.
    let mut flags = QueryFlags::default();
    for token in fields {
        if token.starts_with('+') {
            if !flags.apply(token) {
                return Err(LabError::Input(format!(
                    "{}:{number}: unknown flag {token:?} (+rd, +ad, +cd, +do, or +no before one)",
                    origin.display()
                )));
            }
            continue;
        }
        qtype = token.parse().map_err(|_| {
            LabError::Input(format!(
                "{}:{number}: unknown type {token:?}",
                origin.display()
            ))
        })?;
    }
    let name = if name.ends_with('.') {
        name.to_string()
    } else {
        format!("{name}.")
    };
    Ok(Some((name, qtype, flags)))
}

/// The replay configuration that sends a trace to the lab's resolver: plain DNS to its address,
/// DNS over TLS and HTTPS to its encrypted ports (trusting the lab's CA) when it serves them.
/// The caller sets the rest (transport, timing, profiles).
pub fn replay_config(side: &ResolverSide) -> ldplayer_replay::ReplayConfig {
    let mut config = ldplayer_replay::ReplayConfig::new(side.resolver_addr());
    if let Some(e) = side.resolver_encrypted() {
        config.tls_server = Some(e.tls);
        config.https_server = Some(e.https);
        config.tls.ca_file = Some(e.ca);
    }
    config
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(line: &str) -> Result<Option<(String, Rtype, QueryFlags)>, LabError> {
        parse_line(line, Path::new("names.txt"), 3)
    }

    #[test]
    fn lines_give_a_name_a_type_and_flags() {
        let (name, qtype, _) = parse("example.com AAAA +do # why").unwrap().unwrap();
        assert_eq!((name.as_str(), qtype), ("example.com.", Rtype::AAAA));
        let (name, qtype, _) = parse("  www.example. ").unwrap().unwrap();
        assert_eq!((name.as_str(), qtype), ("www.example.", Rtype::A));
        assert!(parse("# nothing").unwrap().is_none());
        assert!(parse("").unwrap().is_none());
    }

    #[test]
    fn bad_types_and_flags_are_named_with_their_line() {
        let e = parse("example.com AAA").unwrap_err().to_string();
        assert_eq!(e, "names.txt:3: unknown type \"AAA\"");
        let e = parse("example.com +xx").unwrap_err().to_string();
        assert!(e.starts_with("names.txt:3: unknown flag \"+xx\""), "{e}");
    }

    #[test]
    fn a_stop_before_the_first_name_resolves_nothing() {
        let mut out = Vec::new();
        let stop = AtomicBool::new(true);
        let outcome = resolve_names(
            "127.0.0.1:9".parse().unwrap(),
            "a.example.\nb.example.\n",
            Path::new("names.txt"),
            &mut out,
            &stop,
        )
        .unwrap();
        assert_eq!(
            outcome,
            NamesOutcome {
                resolved: 0,
                failed: 0,
                interrupted: true
            }
        );
        assert!(out.is_empty());
    }
}
