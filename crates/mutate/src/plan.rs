//! A configuration checked and compiled into the form the mutator runs.

use crate::choice::{ClientHash, Share};
use crate::config::{Direction, MutateConfig, Mutation};
use crate::error::MutateError;
use crate::filter::Filter;
use crate::message::MessageEdits;
use crate::transport::Transport;
use ldplayer_dns::name_from_presentation;

/// Hash purposes, so per-client choices for different mutations are independent.
pub(crate) const PURPOSE_CLIENT_SHARE: u64 = 0x6b65_6570_0000_0000;
pub(crate) const PURPOSE_TRANSPORT: u64 = 0x7072_6f74_6f00_0000;

/// The mutations of a configuration, in running order.
#[derive(Debug, Clone, Default)]
pub(crate) struct Plan {
    pub filters: Vec<Filter>,
    pub transport: Option<Transport>,
    pub message: MessageEdits,
    pub time_scale: Option<f64>,
    pub time_shift: Option<i64>,
    pub anonymize_key: Option<[u8; 16]>,
}

impl Plan {
    /// Checks and compiles `config`.
    pub fn new(config: &MutateConfig) -> Result<Plan, MutateError> {
        let mut plan = Plan::default();
        let mut seen: Vec<&'static str> = Vec::new();
        let mut once = |kind: &'static str| {
            if seen.contains(&kind) {
                Err(MutateError::Duplicate(kind))
            } else {
                seen.push(kind);
                Ok(())
            }
        };
        for (index, m) in config.mutations.iter().enumerate() {
            match m {
                Mutation::Direction(d) => {
                    plan.filters
                        .push(Filter::Direction(*d == Direction::Responses));
                }
                Mutation::TimeWindow { from_s, to_s } => {
                    let from = from_s.map(seconds_to_ns).transpose()?;
                    let to = to_s.map(seconds_to_ns).transpose()?;
                    if let (Some(f), Some(t)) = (from, to) {
                        if t <= f {
                            return Err(MutateError::BadWindow("it ends before it starts"));
                        }
                    }
                    plan.filters.push(Filter::TimeWindow { from, to });
                }
                Mutation::ClientPrefixes(p) => {
                    if p.is_empty() {
                        return Err(MutateError::EmptyList("client prefix"));
                    }
                    plan.filters.push(Filter::ClientPrefixes(p.clone()));
                }
                Mutation::ClientShare(s) => {
                    let share = share("the client share", *s)?;
                    let hash = ClientHash::new(config.seed, PURPOSE_CLIENT_SHARE + index as u64);
                    plan.filters.push(Filter::ClientShare(hash, share));
                }
                Mutation::Qtypes(t) => {
                    if t.is_empty() {
                        return Err(MutateError::EmptyList("qtype"));
                    }
                    plan.filters.push(Filter::Qtypes(t.clone()));
                }
                Mutation::QnameSuffixes(names) => {
                    if names.is_empty() {
                        return Err(MutateError::EmptyList("qname suffix"));
                    }
                    let wire = names
                        .iter()
                        .map(|n| {
                            name_from_presentation(n)
                                .map(|w| w.to_ascii_lowercase())
                                .map_err(|source| MutateError::BadName {
                                    name: n.clone(),
                                    source,
                                })
                        })
                        .collect::<Result<_, _>>()?;
                    plan.filters.push(Filter::QnameSuffixes(wire));
                }
                Mutation::Transport {
                    proto,
                    client_share,
                } => {
                    once("transport")?;
                    let share = share("the transport client share", *client_share)?;
                    let hash = ClientHash::new(config.seed, PURPOSE_TRANSPORT);
                    plan.transport = Some(Transport::new(*proto, hash, share));
                }
                Mutation::StripEdns => {
                    once("strip-edns")?;
                    plan.message.strip_edns = true;
                }
                Mutation::AddEdns { udp_size } => {
                    once("add-edns")?;
                    plan.message.add_edns = Some(*udp_size);
                }
                Mutation::UdpSize(size) => {
                    once("udp-size")?;
                    plan.message.udp_size = Some(*size);
                }
                Mutation::SetDo { share: s } => {
                    once("set-do")?;
                    plan.message.set_do = Some(share("the DO share", *s)?);
                }
                Mutation::ClearDo => {
                    once("clear-do")?;
                    plan.message.clear_do = true;
                }
                Mutation::RecursionDesired(rd) => {
                    once("recursion-desired")?;
                    plan.message.recursion_desired = Some(*rd);
                }
                Mutation::QnamePrefix(prefix) => {
                    once("qname-prefix")?;
                    let ok = prefix.len() <= 47
                        && prefix
                            .bytes()
                            .all(|b| b.is_ascii_alphanumeric() || b == b'-');
                    if !ok {
                        return Err(MutateError::BadLabelPrefix(prefix.clone()));
                    }
                    plan.message.qname_prefix = Some(prefix.as_bytes().to_vec());
                }
                Mutation::TimeScale(k) => {
                    once("time-scale")?;
                    if !(k.is_finite() && *k > 0.0) {
                        return Err(MutateError::BadScale(*k));
                    }
                    plan.time_scale = Some(*k);
                }
                Mutation::TimeShift(ns) => {
                    once("time-shift")?;
                    plan.time_shift = Some(*ns);
                }
                Mutation::Anonymize { key } => {
                    once("anonymize")?;
                    plan.anonymize_key = Some(key.unwrap_or_else(|| derived_key(config.seed)));
                }
            }
        }
        let m = &plan.message;
        if m.strip_edns {
            for (set, name) in [
                (m.add_edns.is_some(), "add-edns"),
                (m.udp_size.is_some(), "udp-size"),
                (m.set_do.is_some(), "set-do"),
            ] {
                if set {
                    return Err(MutateError::Conflict("strip-edns", name));
                }
            }
        }
        if m.set_do.is_some() && m.clear_do {
            return Err(MutateError::Conflict("set-do", "clear-do"));
        }
        // Filters run in the documented order; a stable sort keeps repeated kinds in list order.
        plan.filters.sort_by_key(Filter::rank);
        Ok(plan)
    }
}

fn share(name: &'static str, value: f64) -> Result<Share, MutateError> {
    if (0.0..=1.0).contains(&value) {
        Ok(Share::new(value))
    } else {
        Err(MutateError::BadShare { name, value })
    }
}

fn seconds_to_ns(s: f64) -> Result<i64, MutateError> {
    if !(s.is_finite() && s >= 0.0) {
        return Err(MutateError::BadWindow(
            "bounds must be non-negative numbers",
        ));
    }
    if s > 9.2e9 {
        return Err(MutateError::BadWindow("bounds must be below 9.2e9 seconds"));
    }
    Ok((s * 1e9).round() as i64)
}

/// The anonymization key derived from the seed when none is given.
fn derived_key(seed: u64) -> [u8; 16] {
    use siphasher::sip::SipHasher13;
    use std::hash::Hasher;
    let mut key = [0; 16];
    for (i, half) in key.chunks_mut(8).enumerate() {
        let mut h = SipHasher13::new_with_keys(seed, 0x616e_6f6e_0000_0000 + i as u64);
        h.write_u64(seed);
        half.copy_from_slice(&h.finish().to_le_bytes());
    }
    key
}
