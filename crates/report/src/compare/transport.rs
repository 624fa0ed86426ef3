//! `--as BASE=NEW`: BASE's metrics of one transport set against NEW's of another, to compare a
//! UDP replay with a TLS replay of the same trace (or an experiment's UDP runs with its TLS
//! runs).
//!
//! For replays, the per-transport metrics (`latency_ms.PROTO.STAT`, `handshake_ms.PROTO.STAT`)
//! of BASE's transport and NEW's are renamed `latency_ms.BASE=NEW.STAT`, so that they pair;
//! they no longer take part in the rows of their own name. The metrics over all queries
//! (shares of outcomes and response codes) pair as always.

use super::metric::{Measure, Measured};
use crate::ReportError;
use std::collections::BTreeSet;

/// The families of metrics that have one value per transport.
const PER_TRANSPORT: [&str; 2] = ["latency_ms", "handshake_ms"];

/// A transport's name as metrics spell it (`udp`, `tcp`, `tls`, `https`, `quic`); `doh` and
/// `doq`, as `replay --proto` and plans spell the last two, are taken for them.
pub fn transport_name(given: &str) -> Option<&'static str> {
    match given.to_ascii_lowercase().as_str() {
        "udp" => Some("udp"),
        "tcp" => Some("tcp"),
        "tls" | "dot" => Some("tls"),
        "https" | "doh" => Some("https"),
        "quic" | "doq" => Some("quic"),
        _ => None,
    }
}

/// A transport as an experiment's `proto` value names it, in the spelling of metrics when it
/// is one (`doh` → `https`), else as it is (`keep`).
pub(super) fn proto_value(value: &str) -> String {
    transport_name(value).map_or_else(|| value.to_string(), str::to_string)
}

/// One `--as BASE=NEW`: BASE's transport set against NEW's.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TransportPair {
    /// The pair as given (`udp=tls`).
    pub text: String,
    /// BASE's transport, as metrics name it.
    pub base: &'static str,
    /// NEW's transport, as metrics name it.
    pub new: &'static str,
}

impl TransportPair {
    /// Parses `BASE=NEW`, two transports among `udp`, `tcp`, `tls`, `https` (`doh`), `quic`
    /// (`doq`), not the same.
    pub fn parse(text: &str) -> Result<TransportPair, ReportError> {
        let bad = |why: String| ReportError::TransportPair {
            given: text.to_string(),
            why,
        };
        let (base, new) = text
            .split_once('=')
            .ok_or_else(|| bad("expected BASE=NEW, two transports, e.g. udp=tls".into()))?;
        let transport = |name: &str, side: &str| {
            transport_name(name.trim()).ok_or_else(|| {
                bad(format!(
                    "{side} `{name}` is no transport (udp, tcp, tls, https or doh, quic or doq)"
                ))
            })
        };
        let (base, new) = (transport(base, "BASE")?, transport(new, "NEW")?);
        if base == new {
            return Err(bad(format!(
                "{base} against {base} is what compare does without --as"
            )));
        }
        Ok(TransportPair {
            text: text.to_string(),
            base,
            new,
        })
    }

    /// The pair as rows name it: `udp=tls`.
    pub fn name(&self) -> String {
        format!("{}={}", self.base, self.new)
    }
}

/// Refuses a pair given twice.
pub(super) fn check_distinct(pairs: &[TransportPair]) -> Result<(), ReportError> {
    let mut seen = BTreeSet::new();
    for pair in pairs {
        if !seen.insert((pair.base, pair.new)) {
            return Err(ReportError::TransportPair {
                given: pair.text.clone(),
                why: "given twice".into(),
            });
        }
    }
    Ok(())
}

/// `latency_ms.udp.p99.9` → (`latency_ms`, `udp`, `p99.9`): a metric of one transport.
pub(super) fn split_transport_metric(metric: &str) -> Option<(&str, &str, &str)> {
    let (family, rest) = metric.split_once('.')?;
    if !PER_TRANSPORT.contains(&family) {
        return None;
    }
    let (proto, stat) = rest.split_once('.')?;
    Some((family, proto, stat))
}

/// The transports a replay used, in words: `udp, tcp` or `no query at all`.
fn used(m: &Measured) -> String {
    if m.queries_by_proto.is_empty() {
        "it has no results".into()
    } else {
        let names: Vec<&str> = m.queries_by_proto.keys().map(String::as_str).collect();
        format!("its queries went over {}", names.join(", "))
    }
}

/// Sets BASE's metrics of each pair's BASE transport against NEW's of its NEW transport, by
/// renaming both `FAMILY.BASE=NEW.STAT`; a side that replayed no query over its transport is
/// an error.
pub(super) fn pair_replay_transports(
    base: &mut Measured,
    new: &mut Measured,
    pairs: &[TransportPair],
) -> Result<(), ReportError> {
    check_distinct(pairs)?;
    for pair in pairs {
        for (side, m, proto) in [("BASE", &*base, pair.base), ("NEW", &*new, pair.new)] {
            if !m.queries_by_proto.contains_key(proto) {
                return Err(ReportError::TransportPair {
                    given: pair.text.clone(),
                    why: format!(
                        "{side} ({}) replayed no query over {proto}: {}",
                        m.path.display(),
                        used(m)
                    ),
                });
            }
        }
    }
    rename(base, pairs, |p| p.base);
    rename(new, pairs, |p| p.new);
    Ok(())
}

/// Replaces each metric of a transport that `side` picks in some pair by one copy per such
/// pair, named after the pair, where it was.
fn rename(m: &mut Measured, pairs: &[TransportPair], side: fn(&TransportPair) -> &'static str) {
    let mut out = Vec::with_capacity(m.measures.len());
    for measure in m.measures.drain(..) {
        let Some((family, proto, stat)) = split_transport_metric(&measure.metric) else {
            out.push(measure);
            continue;
        };
        let mine: Vec<&TransportPair> = pairs.iter().filter(|p| side(p) == proto).collect();
        if mine.is_empty() {
            out.push(measure);
            continue;
        }
        let (family, stat) = (family.to_string(), stat.to_string());
        out.extend(mine.into_iter().map(|pair| Measure {
            metric: format!("{family}.{}.{stat}", pair.name()),
            ..measure.clone()
        }));
    }
    m.measures = out;
}

/// The transports each side used and the other did not (those `--as` pairs left aside), and
/// the `--as` that would set them against each other, when both sides have some: `BASE's
/// queries over udp have no counterpart in NEW, nor NEW's over tls in BASE: ...`.
pub(super) fn replay_hint(
    base: &Measured,
    new: &Measured,
    pairs: &[TransportPair],
) -> Option<String> {
    let rest = |m: &Measured, side: fn(&TransportPair) -> &'static str| -> Vec<String> {
        m.queries_by_proto
            .keys()
            .filter(|p| !pairs.iter().any(|pair| side(pair) == p.as_str()))
            .cloned()
            .collect()
    };
    let (b, n) = (rest(base, |p| p.base), rest(new, |p| p.new));
    let (lonely_b, lonely_n) = only_on_each_side(&b, &n)?;
    Some(format!(
        "BASE's queries over {} have no counterpart in NEW, nor NEW's over {} in BASE: their \
         latencies are not compared; {} sets them against each other",
        lonely_b.join(", "),
        lonely_n.join(", "),
        suggestion(&lonely_b, &lonely_n)
    ))
}

/// The values only BASE has and those only NEW has, when each side has some: what `--as`
/// could set against each other.
pub(super) fn only_on_each_side<'a>(
    base: &'a [String],
    new: &'a [String],
) -> Option<(Vec<&'a str>, Vec<&'a str>)> {
    let only = |mine: &'a [String], theirs: &[String]| -> Vec<&'a str> {
        mine.iter()
            .filter(|p| !theirs.contains(p))
            .map(String::as_str)
            .collect()
    };
    let (b, n) = (only(base, new), only(new, base));
    (!b.is_empty() && !n.is_empty()).then_some((b, n))
}

/// `--as A=B` for the values only BASE has and those only NEW has: every pair when one side
/// has a single one, else one pair for the first of each.
pub(super) fn suggestion(base: &[&str], new: &[&str]) -> String {
    let pairs: Vec<String> = if base.len() == 1 || new.len() == 1 {
        base.iter()
            .flat_map(|b| new.iter().map(move |n| format!("--as {b}={n}")))
            .collect()
    } else {
        vec![format!("for example --as {}={}", base[0], new[0])]
    };
    pairs.join(" ")
}

/// A bound on a transport's metric (`latency_ms.udp.p99=10`) that NEW cannot hold because it
/// replayed no query over that transport while BASE did: the comparison is of two set-ups,
/// not a regression. The error says which transports NEW used and the `--as` to use. (A
/// transport that `pairs` set against another has no rows of its own name: the bound then
/// names no metric, which [`super::compare`] says.)
pub(super) fn check_bound_transport(
    bound: &super::Bound,
    base: &Measured,
    new: &Measured,
    pairs: &[TransportPair],
) -> Result<(), ReportError> {
    let metric = bound
        .metric
        .split_once('@')
        .map_or(&*bound.metric, |(m, _)| m);
    let Some((family, proto, stat)) = split_transport_metric(metric) else {
        return Ok(());
    };
    if !base.queries_by_proto.contains_key(proto)
        || new.queries_by_proto.contains_key(proto)
        || pairs.iter().any(|p| p.base == proto)
    {
        return Ok(());
    }
    let hint = match new.queries_by_proto.keys().next() {
        Some(other) => format!(
            "; to set BASE's {proto} against NEW's {other}, give --as {proto}={other} and bound \
             {family}.{proto}={other}.{stat}"
        ),
        None => String::new(),
    };
    Err(ReportError::Bound {
        bound: bound.text.clone(),
        why: format!(
            "NEW ({}) replayed no query over {proto} ({}), so it has no {proto} figure to hold \
             to the bound{hint}",
            new.path.display(),
            used(new)
        ),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compare::{InputKind, Worse};
    use std::path::PathBuf;

    #[test]
    fn pairs_name_two_different_transports() {
        let p = TransportPair::parse("udp=tls").unwrap();
        assert_eq!((p.base, p.new, p.name()), ("udp", "tls", "udp=tls".into()));
        assert_eq!(TransportPair::parse("UDP=doh").unwrap().name(), "udp=https");
        for (bad, why) in [
            ("udp", "expected BASE=NEW"),
            ("udp=carrier-pigeon", "NEW `carrier-pigeon` is no transport"),
            ("=tls", "BASE `` is no transport"),
            ("tls=tls", "what compare does without --as"),
        ] {
            let err = TransportPair::parse(bad).unwrap_err().to_string();
            assert!(
                err.contains(why) && err.starts_with("--as "),
                "{bad}: {err}"
            );
        }
        let twice = [
            TransportPair::parse("udp=tls").unwrap(),
            TransportPair::parse("udp=dot").unwrap(),
        ];
        let err = check_distinct(&twice).unwrap_err().to_string();
        assert!(err.contains("udp=dot: given twice"), "{err}");
    }

    #[test]
    fn metrics_of_one_transport_are_recognized() {
        assert_eq!(
            split_transport_metric("latency_ms.udp.p99.9"),
            Some(("latency_ms", "udp", "p99.9"))
        );
        assert_eq!(
            split_transport_metric("handshake_ms.tls.mean"),
            Some(("handshake_ms", "tls", "mean"))
        );
        assert_eq!(split_transport_metric("rcode_share.NOERROR"), None);
        assert_eq!(split_transport_metric("latency_ms"), None);
    }

    #[test]
    fn a_transport_in_two_pairs_is_in_both() {
        let mut m = Measured::new(InputKind::Replay, PathBuf::from("x.res"));
        m.push("answered_share".into(), None, Worse::Lower, 1.0);
        m.push("latency_ms.udp.p50".into(), None, Worse::Higher, 2.0);
        let pairs = [
            TransportPair::parse("udp=tcp").unwrap(),
            TransportPair::parse("udp=tls").unwrap(),
        ];
        rename(&mut m, &pairs, |p| p.base);
        let names: Vec<&str> = m.measures.iter().map(|x| x.metric.as_str()).collect();
        assert_eq!(
            names,
            [
                "answered_share",
                "latency_ms.udp=tcp.p50",
                "latency_ms.udp=tls.p50"
            ]
        );
        assert_eq!(
            suggestion(&["udp"], &["tcp", "tls"]),
            "--as udp=tcp --as udp=tls"
        );
        assert_eq!(
            suggestion(&["udp", "tcp"], &["tls", "https"]),
            "for example --as udp=tls"
        );
    }
}
