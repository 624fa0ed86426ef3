//! One run's settings, fully resolved: what the runner needs and `run.json` records.

use super::kinds::{ProtoChoice, ServerKind, WorkloadKind};
use super::network::NetworkSettings;
use ldplayer_mutate::{MutateConfig, Mutation};
use ldplayer_synth::SynthConfig;
use serde::{Deserialize, Serialize};
use std::path::PathBuf;
use std::time::Duration;

/// Everything one run is made of.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunSettings {
    /// The queries: where they come from and how they are changed.
    pub trace: TraceSettings,
    /// The server answering them.
    pub server: ServerSettings,
    /// The emulated link between clients and server.
    pub network: NetworkSettings,
    /// The replaying clients.
    pub client: ClientSettings,
    /// Seconds from the replay's start left out of the statistics (the server's warm-up).
    pub warmup_s: f64,
    /// Seconds to keep sampling after the last query before the server is stopped.
    pub cooldown_s: f64,
    /// Seed of every random choice of the run (mutations, per-client RTTs).
    pub seed: u64,
}

impl RunSettings {
    /// How long the replay of a trace with `facts` lasts, in seconds: a ramp's length, else the
    /// trace's (a closed loop's depends on the server: the trace's is an estimate).
    pub fn replay_s(&self, facts: &crate::prepare::TraceFacts) -> f64 {
        facts.replay_s(self.client.ramp.as_ref())
    }

    /// Whether the run's queries go over connections (TCP or TLS), so that the connection model
    /// applies.
    pub fn is_connection_oriented(&self) -> bool {
        self.trace.mutate.proto.is_connection()
    }

    /// Whether some of the run's clients hold connections that an idle timeout closes: a
    /// forced connection transport, or a population with a group over anything but UDP.
    pub fn holds_connections(&self) -> bool {
        self.is_connection_oriented()
            || self
                .client
                .read_population()
                .ok()
                .flatten()
                .is_some_and(|p| {
                    p.transports()
                        .into_iter()
                        .any(|proto| proto != ldplayer_trace::Proto::Udp)
                })
    }

    /// The idle timeout that closes the run's connections first: the server's or the
    /// client's.
    pub fn closing_idle_timeout_s(&self) -> f64 {
        self.server.idle_timeout_s.min(self.client.idle_timeout_s)
    }

    /// Why the run's measured window starts before a steady state, if it does: a run with
    /// connections whose warm-up is shorter than the idle timeout that closes them.
    pub fn warmup_note(&self) -> Option<String> {
        // A ramp measures a capacity, not a steady state.
        if self.client.ramp.is_some() {
            return None;
        }
        crate::summary::steady::unsteady_notes(
            self.holds_connections(),
            self.warmup_s,
            self.closing_idle_timeout_s(),
            &[],
        )
        .into_iter()
        .next()
    }

    /// The warm-up as a duration.
    pub fn warmup(&self) -> Duration {
        seconds(self.warmup_s)
    }

    /// The cool-down as a duration.
    pub fn cooldown(&self) -> Duration {
        seconds(self.cooldown_s)
    }
}

/// Where a run's trace comes from and what is changed in it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TraceSettings {
    /// The original queries.
    pub source: TraceSource,
    /// The changes made to them (`ldplayer mutate`'s choices).
    pub mutate: MutateSpec,
    /// Rate factor: 2 replays the trace at twice its rate (its times compressed by 2).
    pub rate_scale: f64,
    /// Clients with fewer queries than this in the replayed trace count as non-busy (paper
    /// §5.3: 250).
    pub nonbusy_max_queries: u64,
}

impl TraceSettings {
    /// The time factor applied to the trace: above 1 stretches (`mutate --time-scale`), the
    /// mutation's own factor divided by [`rate_scale`](Self::rate_scale).
    pub fn time_factor(&self) -> f64 {
        self.mutate.time_scale / self.rate_scale
    }

    /// The synthesizer's configuration, for a synthetic trace.
    pub fn synth_config(&self) -> Option<SynthConfig> {
        match &self.source {
            TraceSource::File(_) => None,
            TraceSource::Synth(s) => Some(s.config()),
        }
    }

    /// The mutation stages, in order: each stage is one `ldplayer_mutate::Mutator` wrapping
    /// the next (the first sees the original records). Empty when nothing is changed. Two
    /// stages are needed only for an exact DO share strictly between 0 and 1: the first clears
    /// every DO bit, the second sets it on that share of the queries.
    pub fn mutate_stages(&self, seed: u64) -> Vec<MutateConfig> {
        let mut first = self.mutate.mutations();
        let factor = self.time_factor();
        if factor != 1.0 {
            first.push(Mutation::TimeScale(factor));
        }
        let mut stages = Vec::new();
        match self.mutate.do_share {
            Some(share) if share > 0.0 && share < 1.0 => {
                first.push(Mutation::ClearDo);
                stages.push(MutateConfig {
                    seed,
                    mutations: first,
                });
                stages.push(MutateConfig {
                    seed,
                    mutations: vec![Mutation::SetDo { share }],
                });
            }
            Some(share) => {
                first.push(if share >= 1.0 {
                    Mutation::SetDo { share: 1.0 }
                } else {
                    Mutation::ClearDo
                });
                stages.push(MutateConfig {
                    seed,
                    mutations: first,
                });
            }
            None if first.is_empty() => {}
            None => stages.push(MutateConfig {
                seed,
                mutations: first,
            }),
        }
        stages
    }

    /// The replayed trace's expected duration in seconds when known without reading it (a
    /// synthetic trace with a duration or a count).
    pub fn expected_duration_s(&self) -> Option<f64> {
        match &self.source {
            TraceSource::File(_) => None,
            TraceSource::Synth(s) => s.expected_duration_s().map(|d| d * self.time_factor()),
        }
    }
}

/// The original queries of a run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum TraceSource {
    /// A trace file (any format `ldplayer` reads), its path resolved against the plan's folder.
    File(PathBuf),
    /// A synthetic trace, made for the run.
    Synth(SynthSpec),
}

/// A synthetic trace as a plan asks for it (`ldplayer synth`'s choices).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SynthSpec {
    /// How times and clients are drawn.
    pub workload: WorkloadKind,
    /// Mean rate in queries per second.
    pub rate: f64,
    /// Length in seconds.
    pub duration_s: Option<f64>,
    /// Number of queries (with `duration_s`, whichever ends first).
    pub count: Option<u64>,
    /// Seed (the run's seed unless given).
    pub seed: u64,
    /// Number of client addresses (the workload's default otherwise).
    pub clients: Option<u32>,
    /// Share of queries with DO as synthesized (before mutations).
    pub do_share: Option<f64>,
    /// Share of clients over TCP as synthesized.
    pub tcp_share: Option<f64>,
    /// Query types and weights, e.g. `[["A", 45], ["AAAA", 20]]` as `("A", 45)`.
    pub qtypes: Option<Vec<(String, u32)>>,
    /// Zone of the unique names of the fixed and Poisson workloads.
    pub zone: Option<String>,
    /// Whether queries set RD.
    pub rd: bool,
}

impl SynthSpec {
    /// The synthesizer's configuration, as `ldplayer synth` maps its flags.
    pub fn config(&self) -> SynthConfig {
        let mut c = match self.workload {
            WorkloadKind::Root => SynthConfig::root_like(self.rate),
            WorkloadKind::Poisson => SynthConfig::poisson(self.rate),
            WorkloadKind::Fixed => SynthConfig::fixed(((1e9 / self.rate).round() as u64).max(1)),
        };
        c.seed = self.seed;
        c.count = self.count;
        c.duration_ns = self.duration_s.map(|d| (d * 1e9).round() as u64);
        if let Some(n) = self.clients {
            c.clients = n;
        }
        if let Some(s) = self.do_share {
            c.do_share = s;
            c.edns_share = c.edns_share.max(s);
        }
        if let Some(s) = self.tcp_share {
            c.tcp_share = s;
        }
        if let Some(mix) = &self.qtypes {
            // Each type was checked when the plan was read.
            c.qtypes = mix
                .iter()
                .filter_map(|(t, w)| Some((t.parse().ok()?, *w)))
                .collect();
        }
        if let Some(z) = &self.zone {
            c.zone = z.clone();
        }
        c.rd = self.rd;
        c
    }

    /// Seconds the trace lasts: its duration, or its count at its rate, whichever is shorter.
    pub fn expected_duration_s(&self) -> Option<f64> {
        let by_count = self.count.map(|n| n as f64 / self.rate);
        match (self.duration_s, by_count) {
            (Some(d), Some(c)) => Some(d.min(c)),
            (d, c) => d.or(c),
        }
    }
}

/// The changes made to a run's trace (`ldplayer mutate`'s choices).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MutateSpec {
    /// Transport to move clients to.
    pub proto: ProtoChoice,
    /// Share of clients moved to `proto`, chosen per client.
    pub proto_share: f64,
    /// Exact share of queries carrying DO after the change: 1 sets it on all, 0 clears it on
    /// all; `None` leaves DO as it is.
    pub do_share: Option<f64>,
    /// Remove EDNS from queries.
    pub strip_edns: bool,
    /// Give queries without EDNS an OPT record.
    pub add_edns: bool,
    /// EDNS UDP payload size of queries.
    pub udp_size: Option<u16>,
    /// Set (true) or clear (false) RD.
    pub rd: Option<bool>,
    /// Time factor: above 1 stretches the trace (`mutate --time-scale`).
    pub time_scale: f64,
    /// Share of clients kept, chosen per client.
    pub keep_clients: Option<f64>,
    /// Keep only queries of these types.
    pub qtypes: Vec<String>,
    /// Keep only queries for names at or below these.
    pub qname_suffixes: Vec<String>,
    /// Prefix of the unique label put in front of every name.
    pub unique_names: Option<String>,
}

impl Default for MutateSpec {
    /// Nothing changed.
    fn default() -> Self {
        MutateSpec {
            proto: ProtoChoice::Keep,
            proto_share: 1.0,
            do_share: None,
            strip_edns: false,
            add_edns: false,
            udp_size: None,
            rd: None,
            time_scale: 1.0,
            keep_clients: None,
            qtypes: Vec::new(),
            qname_suffixes: Vec::new(),
            unique_names: None,
        }
    }
}

impl MutateSpec {
    /// The mutations other than time and DO, as `ldplayer mutate` maps its flags.
    fn mutations(&self) -> Vec<Mutation> {
        let mut m = Vec::new();
        if let Some(share) = self.keep_clients {
            m.push(Mutation::ClientShare(share));
        }
        if !self.qtypes.is_empty() {
            // Each type was checked when the plan was read.
            m.push(Mutation::Qtypes(
                self.qtypes.iter().filter_map(|t| t.parse().ok()).collect(),
            ));
        }
        if !self.qname_suffixes.is_empty() {
            m.push(Mutation::QnameSuffixes(self.qname_suffixes.clone()));
        }
        if let Some(proto) = self.proto.forced() {
            m.push(Mutation::Transport {
                proto,
                client_share: self.proto_share,
            });
        }
        if self.strip_edns {
            m.push(Mutation::StripEdns);
        }
        if self.add_edns {
            m.push(Mutation::AddEdns {
                udp_size: self.udp_size.unwrap_or(ldplayer_mutate::DEFAULT_UDP_SIZE),
            });
        }
        if let Some(size) = self.udp_size {
            m.push(Mutation::UdpSize(size));
        }
        if let Some(rd) = self.rd {
            m.push(Mutation::RecursionDesired(rd));
        }
        if let Some(prefix) = &self.unique_names {
            m.push(Mutation::QnamePrefix(prefix.clone()));
        }
        m
    }
}

/// The server of a run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ServerSettings {
    /// Which server.
    pub kind: ServerKind,
    /// Zone files it serves (absolute or relative to the current folder, resolved against the
    /// plan's folder).
    pub zones: Vec<PathBuf>,
    /// A `zones build` manifest: the hierarchy behind a recursive kind, or the zones of an
    /// authoritative one.
    pub manifest: Option<PathBuf>,
    /// Worker threads, where the server has the setting.
    pub threads: Option<u32>,
    /// Seconds an idle TCP or TLS connection is kept open by the server.
    pub idle_timeout_s: f64,
    /// Whether the server answers over TLS too (with a certificate ldplayer makes).
    pub tls: bool,
    /// Raw lines added to the server's configuration.
    pub extra: Vec<String>,
    /// DNSSEC validation by a recursive kind: the root's trust anchor (a file, or `auto` for
    /// the emulated root's keys), the moment and the insecure domains.
    #[serde(default)]
    pub validation: Option<ldplayer_servers::validation::Validation>,
    /// Resolver behaviours (aggressive NSEC, QNAME minimisation) of a recursive kind.
    #[serde(default)]
    pub resolver: ldplayer_servers::ResolverOptions,
    /// A synthetic hierarchy to make (once per experiment) and use as the `manifest`.
    #[serde(default)]
    pub hierarchy: Option<SynthHierarchy>,
}

/// A synthetic hierarchy (`ldplayer zones synth`): a root, its TLDs (the root-like workload's
/// first), their second-level zones, optionally signed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct SynthHierarchy {
    /// TLDs under the root (30).
    pub tlds: usize,
    /// Second-level zones under each TLD (10).
    pub slds: usize,
    /// Addresses the second-level zones share (16).
    pub providers: usize,
    /// How the root and the TLDs are signed.
    pub sign: SignChoice,
}

/// How a synthetic hierarchy's root and TLDs are signed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SignChoice {
    /// Not signed.
    None,
    /// Signed, denial of existence with NSEC.
    Nsec,
    /// Signed, denial of existence with NSEC3.
    Nsec3,
}

impl ServerSettings {
    /// The server's idle timeout as a duration.
    pub fn idle_timeout(&self) -> Duration {
        seconds(self.idle_timeout_s)
    }
}

/// The replaying clients' settings (`ldplayer replay`'s flags).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ClientSettings {
    /// Seconds to wait for an answer.
    pub timeout_s: f64,
    /// Seconds a client keeps an idle connection open; by default a second more than the
    /// server's, so the server closes first (and holds the TIME_WAIT), as in the paper.
    pub idle_timeout_s: f64,
    /// Retries of a UDP query that timed out.
    pub udp_retries: u32,
    /// Whether TLS sessions are resumed.
    pub tls_resume: bool,
    /// Whether a UDP answer with TC set is asked again over TCP (as stubs and resolvers do).
    #[serde(default = "yes")]
    pub tc_retry: bool,
    /// Open UDP sockets per querier (the replay's default otherwise); a trace with more
    /// clients than this reuses sockets least recently used first.
    #[serde(default)]
    pub max_udp_sockets: Option<usize>,
    /// Querier threads (the replay's default otherwise).
    pub queriers: Option<usize>,
    /// A population file (`ldplayer replay --population`): each client goes over its group's
    /// transport with its group's session profile.
    #[serde(default)]
    pub population: Option<std::path::PathBuf>,
    /// The HTTP method of DoH queries (POST otherwise).
    #[serde(default)]
    pub doh_method: Option<super::kinds::DohMethod>,
    /// The client stack of DoT, DoH and DoQ (lean otherwise).
    #[serde(default)]
    pub stack: super::kinds::Stack,
    /// Keep every answer in the run's results file (`[diff]` compares them).
    #[serde(default)]
    pub keep_answers: bool,
    /// How the queries are sent: at the trace's times, as fast as answers come, or on a ramp.
    #[serde(default)]
    pub mode: super::kinds::ClientMode,
    /// With `mode = "ramp"`: the ramp and the bounds its capacity is judged by.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ramp: Option<ldplayer_results::RampSpec>,
    /// With `mode = "fast"`: the most queries in flight (the replay's 1000 otherwise).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_in_flight: Option<usize>,
    /// Queries over one TCP, TLS or DoH connection before the client opens a new one
    /// (`replay --queries-per-connection`); `None`: reused until idle.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub queries_per_connection: Option<u64>,
    /// Replay processes on the client side, each a shard of the clients with open files of
    /// its own (`replay --processes`); `None`: one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub processes: Option<u32>,
}

impl ClientSettings {
    /// The population of [`population`](Self::population), read and checked.
    pub fn read_population(&self) -> Result<Option<ldplayer_population::Population>, String> {
        self.population.as_deref().map(read_population).transpose()
    }

    /// The answer timeout as a duration.
    pub fn timeout(&self) -> Duration {
        seconds(self.timeout_s)
    }

    /// The idle timeout as a duration.
    pub fn idle_timeout(&self) -> Duration {
        seconds(self.idle_timeout_s)
    }
}

/// A number of seconds of a checked plan as a duration, to the nearest nanosecond (so that
/// `0.29` s is 290 ms, not 289.999999 ms). Plans bound every duration to a week at most, far
/// within what this holds; anything else (never given) is 0.
pub(crate) fn seconds(s: f64) -> Duration {
    let ns = (s * 1e9).round();
    if ns.is_finite() && (0.0..=u64::MAX as f64).contains(&ns) {
        Duration::from_nanos(ns as u64)
    } else {
        Duration::ZERO
    }
}

/// A population file, read and checked.
pub fn read_population(path: &std::path::Path) -> Result<ldplayer_population::Population, String> {
    ldplayer_output::protect_input(path);
    let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
    ldplayer_population::Population::from_toml(&text)
        .map_err(|e| format!("{}: {e}", path.display()))
}

fn yes() -> bool {
    true
}
