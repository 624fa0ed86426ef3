//! The plan file as written: serde's view of the TOML, every key known and every value
//! that is checked later kept with its place in the file.

use super::kinds::{ProtoChoice, ServerKind, WorkloadKind};
use super::network::{LossModelChoice, RttDistribution};
use serde::de::{Deserializer, MapAccess, Visitor};
use serde::Deserialize;
use std::fmt;
use toml::Spanned;

/// A value with its place in the file.
pub(super) type At<T> = Spanned<T>;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawPlan {
    pub trace: At<RawTrace>,
    pub server: At<RawServer>,
    #[serde(default)]
    pub network: RawNetwork,
    #[serde(default)]
    pub client: RawClient,
    #[serde(default)]
    pub vary: RawVary,
    #[serde(default)]
    pub run: RawRun,
    pub diff: Option<At<RawDiff>>,
}

/// `[diff]`: every run's answers against one run's.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawDiff {
    pub base: At<String>,
    pub criteria: Option<At<String>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawTrace {
    pub file: Option<At<String>>,
    pub synth: Option<At<RawSynth>>,
    pub mutate: Option<At<RawMutate>>,
    pub nonbusy_max_queries: Option<At<u64>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawSynth {
    pub workload: WorkloadKind,
    pub rate: At<f64>,
    pub duration_s: Option<At<f64>>,
    pub count: Option<At<u64>>,
    pub seed: Option<u64>,
    pub clients: Option<At<u32>>,
    pub do_share: Option<At<f64>>,
    pub tcp_share: Option<At<f64>>,
    pub qtypes: Option<At<toml::Table>>,
    pub zone: Option<String>,
    #[serde(default)]
    pub rd: bool,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawMutate {
    pub proto: Option<At<ProtoChoice>>,
    #[serde(alias = "proto_fraction")]
    pub proto_share: Option<At<f64>>,
    pub set_do: Option<At<bool>>,
    pub clear_do: Option<At<bool>>,
    pub do_share: Option<At<f64>>,
    #[serde(default)]
    pub strip_edns: bool,
    #[serde(default)]
    pub add_edns: bool,
    pub udp_size: Option<At<u16>>,
    pub rd: Option<bool>,
    pub time_scale: Option<At<f64>>,
    pub keep_clients: Option<At<f64>>,
    pub qtypes: Option<At<Vec<At<String>>>>,
    pub qname_suffixes: Option<Vec<String>>,
    pub unique_names: Option<At<String>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawServer {
    pub kind: At<ServerKind>,
    pub zones: Option<At<Vec<At<String>>>>,
    pub manifest: Option<At<String>>,
    pub threads: Option<At<u32>>,
    pub idle_timeout_s: Option<At<f64>>,
    pub tls: Option<At<bool>>,
    #[serde(default)]
    pub extra: Vec<String>,
    pub trust_anchor: Option<At<String>>,
    pub validation_time: Option<At<toml::Value>>,
    pub insecure: Option<At<Vec<At<String>>>>,
    pub aggressive_nsec: Option<At<bool>>,
    pub qname_minimisation: Option<At<bool>>,
    pub hierarchy: Option<At<RawHierarchy>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawHierarchy {
    pub tlds: Option<At<usize>>,
    pub slds: Option<At<usize>>,
    pub providers: Option<At<usize>>,
    pub sign: Option<At<super::settings::SignChoice>>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawNetwork {
    pub rtt_ms: Option<At<f64>>,
    pub loss: Option<At<f64>>,
    pub loss_model: Option<At<LossModelChoice>>,
    pub burst_len: Option<At<f64>>,
    pub jitter_ms: Option<At<f64>>,
    #[serde(default)]
    pub reorder: bool,
    pub spin_us: Option<At<f64>>,
    pub bandwidth_mbps: Option<At<f64>>,
    pub queue_kb: Option<At<f64>>,
    pub client_rtt: Option<At<RawClientRtt>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawClientRtt {
    pub dist: RttDistribution,
    pub min_ms: Option<At<f64>>,
    pub max_ms: Option<At<f64>>,
    pub median_ms: Option<At<f64>>,
    pub sigma: Option<At<f64>>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawClient {
    pub timeout_s: Option<At<f64>>,
    pub idle_timeout_s: Option<At<f64>>,
    pub udp_retries: Option<u32>,
    pub tls_resume: Option<bool>,
    pub tc_retry: Option<bool>,
    pub max_udp_sockets: Option<At<usize>>,
    pub queriers: Option<At<usize>>,
    pub population: Option<At<String>>,
    pub doh_method: Option<At<super::kinds::DohMethod>>,
    pub stack: Option<At<super::kinds::Stack>>,
    pub mode: Option<At<super::kinds::ClientMode>>,
    pub ramp_to_qps: Option<At<f64>>,
    pub ramp_s: Option<At<f64>>,
    pub max_loss_pct: Option<At<f64>>,
    pub max_latency_ms: Option<At<f64>>,
    pub max_in_flight: Option<At<usize>>,
    pub queries_per_connection: Option<At<u64>>,
    pub processes: Option<At<u32>>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawRun {
    pub repeat: Option<At<u32>>,
    pub warmup_s: Option<At<f64>>,
    pub cooldown_s: Option<At<f64>>,
    pub seed: Option<u64>,
}

/// `[vary]`: each key with its list of values, in the order of the file (which is the order
/// of the summary's columns and of the runs' nesting).
#[derive(Debug, Default)]
pub(super) struct RawVary(pub Vec<(At<String>, At<VaryList>)>);

/// The values of one `[vary]` key, each with its place.
pub(super) type VaryList = Vec<At<toml::Value>>;

impl<'de> Deserialize<'de> for RawVary {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct InOrder;
        impl<'de> Visitor<'de> for InOrder {
            type Value = RawVary;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a table of keys, each with a list of values")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<RawVary, A::Error> {
                let mut entries = Vec::new();
                while let Some(entry) = map.next_entry()? {
                    entries.push(entry);
                }
                Ok(RawVary(entries))
            }
        }
        deserializer.deserialize_map(InOrder)
    }
}
