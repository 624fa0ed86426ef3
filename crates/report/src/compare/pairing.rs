//! Which run of NEW stands against which run of BASE.
//!
//! Runs pair by their varied values (the columns of `summary.csv` between `run` and `metric`)
//! and their repeat (the `-rN` of their name), not by their number: `002-proto=tcp-r1` of a
//! plan that varies `proto = ["udp", "tcp"]` pairs with `001-proto=tcp-r1` of one that varies
//! `proto = ["tcp", "tls"]`. When the two experiments vary different keys, runs pair by the keys
//! both vary. A run without varied values (an input read some other way) pairs by its name.
//! With `--as udp=tls`, BASE's runs with `proto=udp` pair with NEW's with `proto=tls`, and with
//! those only.
//!
//! NEW's values are then filed under the name of their partner in BASE, which is what rows and
//! bounds name.

use super::metric::{Measure, Measured};
use super::transport::{only_on_each_side, proto_value, suggestion, TransportPair};
use crate::ReportError;
use serde::Serialize;
use std::collections::{BTreeMap, HashMap};

/// The varied key that holds an experiment run's transport.
const PROTO: &str = "proto";

/// A run of BASE and its partner in NEW; one of them is missing for a run without a partner.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct RunPair {
    /// BASE's run (`null`: a run only NEW has).
    pub base: Option<String>,
    /// NEW's run (`null`: a run only BASE has).
    pub new: Option<String>,
    /// The `--as` pair that set them against each other (`udp=tls`); `null` when they share
    /// their varied values.
    pub transports: Option<String>,
}

/// How the runs of two experiments pair.
#[derive(Debug, Clone, Default)]
pub(super) struct Pairing {
    /// BASE's runs in its order, each with its partner if any, then NEW's runs without one.
    pub pairs: Vec<RunPair>,
    /// What the pairing noticed: different varied keys, runs that match several.
    pub notes: Vec<String>,
    /// Whether `--as` pairs were given.
    pub with_as: bool,
    /// Runs without partner because `--as` took their partner: BASE's runs over a transport
    /// that `--as` gives NEW's runs of to another, NEW's runs over one whose BASE runs `--as`
    /// sets against another (in `compare a a --as udp=tls`, BASE's TLS run and NEW's UDP
    /// run). They are left out of the rows: no finding, only the effect of `--as`. Other runs
    /// without partner (a run that did not finish) stay, as only-in rows.
    pub left_out: Vec<String>,
    /// The same for NEW's runs.
    pub left_out_new: Vec<String>,
}

impl Pairing {
    /// Whether some run of NEW has a partner in BASE.
    pub fn any_paired(&self) -> bool {
        self.pairs
            .iter()
            .any(|p| p.base.is_some() && p.new.is_some())
    }
}

/// What a run pairs by.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
enum Key {
    /// Its varied values (of the keys both vary; a transport `--as` pairs as `udp=tls`) and
    /// its repeat.
    Values(Vec<(String, String)>, u32),
    /// Its name: it has no varied values or no `-rN`.
    Name(String),
}

/// The repeat in a run's name: `001-proto=udp-r2` → 2.
fn repeat_of(run: &str) -> Option<u32> {
    let (_, n) = run.rsplit_once("-r")?;
    n.parse().ok()
}

/// `proto=udp, rtt_ms=20`, for messages.
fn values_text(values: &[(String, String)]) -> String {
    values
        .iter()
        .map(|(k, v)| format!("{k}={v}"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// One side's runs and what each pairs by.
struct Side<'a> {
    m: &'a Measured,
    /// The keys both sides vary, with their column in this side's values.
    common: Vec<(String, usize)>,
}

impl Side<'_> {
    /// The run's values of the common keys (transports as metrics spell them).
    fn values(&self, run: &str) -> Option<Vec<(String, String)>> {
        let all = self.m.varied.get(run)?;
        self.common
            .iter()
            .map(|(k, i)| {
                let v = all.get(*i)?;
                Some((
                    k.clone(),
                    if k == PROTO {
                        proto_value(v)
                    } else {
                        v.clone()
                    },
                ))
            })
            .collect()
    }

    /// The keys `run` pairs by: one, but a NEW run whose transport is in several `--as`
    /// pairs pairs by each.
    fn keys(&self, run: &str, pairs: &[TransportPair], is_base: bool) -> Vec<Key> {
        let (Some(values), Some(repeat)) = (self.values(run), repeat_of(run)) else {
            return vec![Key::Name(run.to_string())];
        };
        let Some(at) = values.iter().position(|(k, _)| k == PROTO) else {
            return vec![Key::Values(values, repeat)];
        };
        let proto = values[at].1.clone();
        let named: Vec<String> = pairs
            .iter()
            .filter(|p| (if is_base { p.base } else { p.new }) == proto)
            .map(TransportPair::name)
            .collect();
        if named.is_empty() {
            return vec![Key::Values(values, repeat)];
        }
        named
            .into_iter()
            .map(|name| {
                let mut v = values.clone();
                v[at].1 = name;
                Key::Values(v, repeat)
            })
            .collect()
    }

    /// The runs' transports, as metrics spell them.
    fn protos(&self, runs: &[&String]) -> Vec<String> {
        let Some(i) = self.m.varied_keys.iter().position(|k| k == PROTO) else {
            return Vec::new();
        };
        let mut out: Vec<String> = Vec::new();
        for run in runs {
            if let Some(v) = self.m.varied.get(*run).and_then(|v| v.get(i)) {
                let v = proto_value(v);
                if !out.contains(&v) {
                    out.push(v);
                }
            }
        }
        out
    }
}

/// Pairs the runs of two experiments (see the module's documentation); `pairs` are the
/// `--as` transport pairs.
pub(super) fn pair_runs(
    base: &Measured,
    new: &Measured,
    pairs: &[TransportPair],
) -> Result<Pairing, ReportError> {
    let common: Vec<String> = base
        .varied_keys
        .iter()
        .filter(|k| new.varied_keys.contains(k))
        .cloned()
        .collect();
    let columns = |m: &Measured| -> Vec<(String, usize)> {
        common
            .iter()
            .filter_map(|k| Some((k.clone(), m.varied_keys.iter().position(|x| x == k)?)))
            .collect()
    };
    let b = Side {
        m: base,
        common: columns(base),
    };
    let n = Side {
        m: new,
        common: columns(new),
    };
    check_pairs(&b, &n, pairs)?;
    let mut notes = Vec::new();
    if base.varied_keys != new.varied_keys && !base.runs.is_empty() && !new.runs.is_empty() {
        let keys = |m: &Measured| match m.varied_keys.as_slice() {
            [] => "nothing".to_string(),
            keys => keys.join(", "),
        };
        notes.push(format!(
            "BASE varies {} and NEW varies {}: runs pair by {}",
            keys(base),
            keys(new),
            match common.as_slice() {
                [] => "their repeat alone".to_string(),
                keys => format!("{} (the keys both vary) and their repeat", keys.join(", ")),
            }
        ));
    }
    let mut by_key: HashMap<Key, Vec<&String>> = HashMap::new();
    for run in &new.runs {
        for key in n.keys(run, pairs, false) {
            by_key.entry(key).or_default().push(run);
        }
    }
    let base_keys: Vec<Key> = base
        .runs
        .iter()
        .map(|r| only_key(b.keys(r, pairs, true)))
        .collect();
    let mut base_count: HashMap<&Key, usize> = HashMap::new();
    for key in &base_keys {
        *base_count.entry(key).or_default() += 1;
    }
    let mut out = Vec::new();
    let mut partnered: Vec<&String> = Vec::new();
    for (run, key) in base.runs.iter().zip(&base_keys) {
        let candidates = by_key.get(key).map_or(&[][..], Vec::as_slice);
        let partner = match (candidates, base_count[key]) {
            ([one], 1) => Some(*one),
            ([], _) => None,
            (several, count) => {
                let what = match key {
                    Key::Values(v, r) => format!("{} and repeat {r}", values_text(v)),
                    Key::Name(name) => format!("the name {name}"),
                };
                let others: Vec<&str> = several.iter().map(|s| s.as_str()).collect();
                let also = match count {
                    1 => String::new(),
                    2 => ", as does another run of BASE".to_string(),
                    n => format!(", as do {} other runs of BASE", n - 1),
                };
                notes.push(format!(
                    "BASE's run {run} is not paired: by {what} it matches NEW's {}{also}",
                    others.join(", "),
                ));
                None
            }
        };
        let transports = match key {
            Key::Values(v, _) => v
                .iter()
                .find(|(k, v)| k == PROTO && v.contains('='))
                .map(|(_, v)| v.clone()),
            Key::Name(_) => None,
        }
        .filter(|_| partner.is_some());
        partnered.extend(partner);
        out.push(RunPair {
            base: Some(run.clone()),
            new: partner.cloned(),
            transports,
        });
    }
    for run in new.runs.iter().filter(|r| !partnered.contains(r)) {
        out.push(RunPair {
            base: None,
            new: Some(run.clone()),
            transports: None,
        });
    }
    let taken = |m: &Measured,
                 run: &String,
                 by: fn(&TransportPair) -> &str,
                 own: fn(&TransportPair) -> &str| {
        let proto = m
            .varied_keys
            .iter()
            .position(|k| k == PROTO)
            .and_then(|i| m.varied.get(run)?.get(i))
            .map(|v| proto_value(v));
        proto
            .is_some_and(|p| pairs.iter().any(|x| by(x) == p) && !pairs.iter().any(|x| own(x) == p))
    };
    let left_out = out
        .iter()
        .filter(|p| p.new.is_none())
        .filter_map(|p| p.base.clone())
        .filter(|r| taken(base, r, |x| x.new, |x| x.base))
        .collect();
    // A run of NEW without partner whose name is a run of BASE (a BASE run paired through
    // `--as`) would be taken for that run's partner: it is left out too.
    let left_out_new = out
        .iter()
        .filter(|p| p.base.is_none())
        .filter_map(|p| p.new.clone())
        .filter(|r| taken(new, r, |x| x.base, |x| x.new) || base.runs.contains(r))
        .collect();
    Ok(Pairing {
        pairs: out,
        notes,
        with_as: !pairs.is_empty(),
        left_out,
        left_out_new,
    })
}

/// A BASE run pairs by one key (a transport in two pairs on BASE's side is refused before).
fn only_key(mut keys: Vec<Key>) -> Key {
    keys.swap_remove(0)
}

/// Refuses `--as` pairs that cannot pair experiments: a side that does not vary `proto` or
/// has no run of the named transport, or a BASE transport in two pairs (a run of BASE pairs
/// with one run).
fn check_pairs(b: &Side, n: &Side, pairs: &[TransportPair]) -> Result<(), ReportError> {
    super::transport::check_distinct(pairs)?;
    for (i, pair) in pairs.iter().enumerate() {
        let bad = |why: String| ReportError::TransportPair {
            given: pair.text.clone(),
            why,
        };
        if let Some(other) = pairs[..i].iter().find(|p| p.base == pair.base) {
            return Err(bad(format!(
                "BASE's {} is also in --as {}: a run of BASE pairs with one run of NEW; \
                 compare once for each",
                pair.base, other.text
            )));
        }
        for (name, side, proto) in [("BASE", b, pair.base), ("NEW", n, pair.new)] {
            let path = side.m.path.display();
            if !side.m.varied_keys.iter().any(|k| k == PROTO) {
                return Err(bad(format!(
                    "{name} ({path}) does not vary proto, so its runs have no transport to \
                     pair by (experiments that each use one transport pair by their other \
                     varied values, without --as)"
                )));
            }
            let runs: Vec<&String> = side.m.runs.iter().collect();
            let protos = side.protos(&runs);
            if !protos.iter().any(|p| p == proto) {
                return Err(bad(format!(
                    "{name} ({path}) has no run with proto={proto} (its runs have proto={})",
                    protos.join(", proto=")
                )));
            }
        }
    }
    Ok(())
}

/// The `--as` that would pair the runs left without partner, when both sides have some whose
/// transports the other side's lack, and none was given.
pub(super) fn hint(base: &Measured, new: &Measured, pairing: &Pairing) -> Option<String> {
    if pairing.with_as {
        return None;
    }
    let alone = |pick: fn(&RunPair) -> (&Option<String>, &Option<String>)| -> Vec<&String> {
        pairing
            .pairs
            .iter()
            .map(pick)
            .filter_map(|(mine, theirs)| mine.as_ref().filter(|_| theirs.is_none()))
            .collect()
    };
    let protos = |m, runs: &[&String]| Side { m, common: vec![] }.protos(runs);
    let b = protos(base, &alone(|p| (&p.base, &p.new)));
    let n = protos(new, &alone(|p| (&p.new, &p.base)));
    let (lonely_b, lonely_n) = only_on_each_side(&b, &n)?;
    Some(format!(
        "BASE's runs with proto={} have no partner in NEW, nor NEW's with proto={} in BASE; {} \
         pairs them",
        lonely_b.join(", proto="),
        lonely_n.join(", proto="),
        suggestion(&lonely_b, &lonely_n)
    ))
}

/// Files NEW's values and results under the name of their partner in BASE (a run of NEW that
/// partners several of BASE's, through `--as`, once under each), and leaves out the runs
/// the pairing leaves out.
pub(super) fn apply(pairing: &Pairing, base: &mut Measured, new: &mut Measured) {
    let mut measures: Vec<Measure> = Vec::with_capacity(new.measures.len());
    let mut traces = BTreeMap::new();
    for pair in &pairing.pairs {
        let (to, from) = match (&pair.base, &pair.new) {
            (Some(b), Some(n)) => (b, n),
            (None, Some(n)) if !pairing.left_out_new.contains(n) => (n, n),
            _ => continue,
        };
        measures.extend(
            new.measures
                .iter()
                .filter(|m| m.run.as_ref() == Some(from))
                .map(|m| Measure {
                    run: Some(to.clone()),
                    ..m.clone()
                }),
        );
        if let Some(t) = new.traces.get(from) {
            traces.entry(to.clone()).or_insert(*t);
        }
    }
    // Values of no run (none today) stay as they are.
    measures.extend(new.measures.iter().filter(|m| m.run.is_none()).cloned());
    new.measures = measures;
    new.traces = traces;
    let out = &pairing.left_out;
    base.measures
        .retain(|m| m.run.as_ref().is_none_or(|r| !out.contains(r)));
    base.traces.retain(|run, _| !out.contains(run));
}

/// NEW's run paired with BASE's `run`: itself when nothing paired them otherwise.
pub(super) fn new_run_of(pairing: &Pairing, run: &str) -> Option<String> {
    pairing
        .pairs
        .iter()
        .find(|p| p.base.as_deref() == Some(run))
        .map_or(Some(run.to_string()), |p| p.new.clone())
}
