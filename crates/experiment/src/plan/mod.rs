//! The experiment plan: a TOML file naming the trace, the server, the network, the keys to
//! vary and how often to repeat, read and checked into the list of runs to make.
//!
//! Everything wrong with a plan (an unknown key, a value of the wrong type or out of range,
//! keys that contradict each other in some run, a number a run could not carry as written) is
//! a [`PlanError`] naming the key and its line and column in the file. Every number has its
//! bounds (the constants below, [`MAX_TIMEOUT_S`] and the rest), and each server kind its idle
//! timeout's unit, so that a plan that passes runs as written. The format is documented in `docs/experiments.md`; in short
//! (defaults in parentheses, paths relative to the plan's folder):
//!
//! - `[trace]`: `file = "trace.bin"` or `synth = { workload = "root" | "poisson" | "fixed",
//!   rate, duration_s and/or count, seed (run.seed), clients, do_share, tcp_share,
//!   qtypes = { A = 45, ... }, zone, rd }`; `mutate = { proto = "keep" | "udp" | "tcp" | "tls",
//!   proto_share (1), set_do, clear_do, do_share (the exact share of queries with DO),
//!   strip_edns, add_edns, udp_size, rd, time_scale, keep_clients, qtypes = [...],
//!   qname_suffixes = [...], unique_names }`; `nonbusy_max_queries` (250).
//! - `[server]`: `kind` (nsd, knot, bind, unbound, kresd, pdns-recursor, bind-resolver, ldplayer), `zones = [...]`
//!   or `manifest` (recursive kinds need a manifest), `threads`, `idle_timeout_s` (20), `tls`
//!   (on when some run uses TLS), `extra = [...]` raw configuration lines; for recursive kinds
//!   `trust_anchor` ("auto" or a file), `validation_time`, `insecure = [...]`,
//!   `aggressive_nsec`, `qname_minimisation`; `hierarchy = { tlds (30), slds (10),
//!   providers (16), sign ("none" | "nsec" | "nsec3") }` a synthetic hierarchy instead of
//!   `manifest`, made once per experiment.
//! - `[network]`: `rtt_ms` (0, half each way), `loss` (0, each way), `loss_model`
//!   ("bernoulli" | "gilbert-elliott"), `burst_len` (1), `jitter_ms` (0), `reorder` (false),
//!   `bandwidth_mbps`, `queue_kb` (100 ms at the rate), `client_rtt = { dist = "fixed" |
//!   "uniform" | "lognormal", min_ms, max_ms, median_ms, sigma }`.
//! - `[client]`: `timeout_s` (2), `idle_timeout_s` (the server's + 1), `udp_retries` (0),
//!   `tls_resume` (true), `tc_retry` (true), `max_udp_sockets`, `queriers`.
//! - `[vary]`: a list of values for any of [`VaryKey::ALL`]; the runs are every combination,
//!   the first key the outermost loop.
//! - `[run]`: `repeat` (1, the innermost loop), `warmup_s` (5), `cooldown_s` (1), `seed` (0).

#[cfg(test)]
mod bounds_tests;
mod check;
mod error;
mod expand;
mod kind_limits;
mod kinds;
#[cfg(test)]
mod mode_tests;
mod network;
mod raw;
mod resolve;
#[cfg(test)]
mod resolver_tests;
mod runs;
mod settings;
#[cfg(test)]
mod tests;
mod vary;

pub use check::{
    BANDWIDTH_MBPS, MAX_DELAY_MS, MAX_RUNS, MAX_RUN_S, MAX_SLDS, MAX_SPIN_US, MAX_THREADS,
    MAX_TIMEOUT_S, MAX_UDP_SOCKETS, QUEUE_KB, SCALE, SYNTH_RATE,
};
pub use error::{Place, PlanError};
pub use expand::RunSpec;
pub use kinds::{ClientMode, DohMethod, ProtoChoice, ServerKind, Stack, WorkloadKind};
pub use network::{
    ClientRtt, DirectionSettings, LossModelChoice, LossSettings, NetworkSettings, RttDistribution,
    MIN_DEFAULT_QUEUE_BYTES, UNLIMITED_QUEUE_BYTES,
};
pub use resolve::{
    DEFAULT_COOLDOWN_S, DEFAULT_IDLE_TIMEOUT_S, DEFAULT_NONBUSY_MAX_QUERIES, DEFAULT_TIMEOUT_S,
    DEFAULT_WARMUP_S,
};
pub use settings::{
    read_population, ClientSettings, MutateSpec, RunSettings, ServerSettings, SignChoice,
    SynthHierarchy, SynthSpec, TraceSettings, TraceSource,
};
pub use vary::{Setting, VaryKey};

use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

/// The text of a plan file's bytes. TOML is UTF-8: a plan that is not is refused at the line
/// and column of its first byte that is not.
pub fn text_of(bytes: Vec<u8>) -> Result<String, PlanError> {
    String::from_utf8(bytes).map_err(|e| {
        let at = e.utf8_error().valid_up_to();
        let bytes = e.as_bytes();
        let valid = std::str::from_utf8(&bytes[..at]).unwrap_or_default();
        error::Locator::new(valid).error(
            Some(at..at),
            "plan",
            format!(
                "not UTF-8 from byte 0x{:02X}: a plan is TOML, which is UTF-8 text",
                bytes[at]
            ),
        )
    })
}

/// A checked plan: the settings every run starts from, the keys varied and how often each
/// combination runs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Plan {
    /// The plan file's folder, against which its paths were resolved.
    pub dir: PathBuf,
    /// The settings of a run before `[vary]` changes them.
    pub base: RunSettings,
    /// Whether the client's idle timeout follows the server's (a second longer) when
    /// `idle_timeout_s` is varied: true unless `[client]` sets it.
    pub client_idle_follows: bool,
    /// `[server] tls` as the plan gave it. Without it, a run's server has TLS when some run of
    /// the plan replays over TLS and the run's kind serves it, so that every run of a
    /// comparison has the same server set-up.
    pub server_tls: Option<bool>,
    /// The varied keys, in the order of the file: the first is the outermost loop of the runs
    /// and the first varied column of `summary.csv`.
    pub vary: Vec<VaryDimension>,
    /// Runs of each combination (`[run] repeat`), the innermost loop.
    pub repeat: u32,
    /// `[diff]`: every run's answers against one run's; `None` without.
    pub diff: Option<DiffPlan>,
}

/// `[diff] base = "RUN"`: the run whose answers every other run's are diffed against (as
/// `ldplayer diff BASE RUN`), with an optional criteria file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DiffPlan {
    /// The base run: a run's name (`002-kind=kresd-r1`), or its varied values without the
    /// number and repeat (`kind=kresd`), which then names the base of each repeat.
    pub base: String,
    /// The criteria file (`ldplayer diff --criteria`), resolved against the plan's folder.
    pub criteria: Option<PathBuf>,
}

impl DiffPlan {
    /// The base run of `run` among `runs`: the run named [`base`](Self::base), or the run of
    /// `run`'s repeat whose varied values are `base`; `None` when none is.
    pub fn base_of<'a>(&self, run: &RunSpec, runs: &'a [RunSpec]) -> Option<&'a RunSpec> {
        runs.iter().find(|r| r.id == self.base).or_else(|| {
            runs.iter().find(|r| {
                r.repeat == run.repeat && {
                    let values: Vec<String> =
                        r.varied.iter().map(|(k, v)| format!("{k}={v}")).collect();
                    values.join("+") == self.base || values.join(",") == self.base
                }
            })
        })
    }
}

/// One key of `[vary]` with its values.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct VaryDimension {
    /// The key.
    pub key: VaryKey,
    /// Its values, in the order of the file.
    pub values: Vec<VaryValue>,
}

/// One value of a varied key.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct VaryValue {
    /// As `summary.csv` and run names show it (`20`, `0.02`, `tcp`).
    pub label: String,
    /// What it sets.
    pub setting: Setting,
}

impl Plan {
    /// Reads and checks the plan at `path`; its relative paths are taken from its folder.
    pub fn from_file(path: &Path) -> Result<Plan, PlanError> {
        ldplayer_output::protect_input(path);
        let bytes = std::fs::read(path).map_err(|source| PlanError::Read {
            path: path.to_path_buf(),
            source,
        })?;
        let dir = match path.parent() {
            Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
            _ => PathBuf::from("."),
        };
        text_of(bytes)
            .and_then(|text| Plan::parse(&text, &dir))
            .map_err(|e| e.in_file(path.to_path_buf()))
    }

    /// Checks the plan `text`, taking its relative paths from `base_dir`.
    pub fn parse(text: &str, base_dir: &Path) -> Result<Plan, PlanError> {
        let loc = error::Locator::new(text);
        let raw: raw::RawPlan = toml::from_str(text).map_err(|e| loc.toml(&e))?;
        resolve::resolve(raw, text, base_dir)
    }

    /// The names of the varied keys, in order: the varied columns of `summary.csv`.
    pub fn varied_keys(&self) -> Vec<String> {
        self.vary.iter().map(|d| d.key.name().to_string()).collect()
    }

    /// Whether some run replays over TLS, so the server needs a certificate.
    pub fn any_tls(&self) -> bool {
        self.runs()
            .iter()
            .any(|r| r.settings.trace.mutate.proto == ProtoChoice::Tls)
    }
}
