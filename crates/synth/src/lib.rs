//! Seeded, reproducible synthetic DNS query traces.
//!
//! A [`Synth`] turns a [`SynthConfig`] into a [`Source`](ldplayer_trace::Source) of queries in
//! time order, for any sink (a trace writer, the inspector, the replay engine). Workloads:
//!
//! - [`Workload::Fixed`]: one query per fixed interval with unique names, the LDplayer paper's
//!   syn-0 to syn-4 traces ([`SynthConfig::syn`]);
//! - [`Workload::Poisson`]: exponential inter-arrival times, unique names;
//! - [`Workload::Clients`]: a client population, each client with its own Poisson rate and
//!   transport;
//! - [`Workload::RootLike`]: a root-server-like load with heavy-tailed clients (the busiest 1% of
//!   the population draw three quarters of the queries; see [`RootLike`] for what a trace of a
//!   given length shows) asking for existing TLDs and junk.
//!
//! Every random choice comes from a ChaCha8 generator seeded with [`SynthConfig::seed`] and is
//! computed with integer arithmetic and portable floating-point functions only, so a seed gives
//! the same trace on every platform. Generation is allocation-free per query (one reused wire
//! buffer, a hand-written encoder) and keeps O(clients) state.

#![forbid(unsafe_code)]

mod clients;
mod config;
mod encode;
mod error;
mod kind;
mod names;
mod renewal;
mod rng;
mod synth;

pub use config::{
    default_qtypes, ClientMix, RootLike, SynthConfig, Workload, DEFAULT_START_NS, DEFAULT_UDP_SIZE,
    SYN_INTERVALS_NS,
};
pub use error::SynthError;
pub use kind::WorkloadKind;
pub use names::{root_like_tlds, synthetic_root_zone};
pub use synth::Synth;

/// The address of each client of `config` (client `i` at index `i`), as the trace will have
/// them: for choosing per-client settings by address, such as a population's groups.
pub fn client_addresses(config: &SynthConfig) -> Result<Vec<std::net::IpAddr>, SynthError> {
    let clients = clients::Clients::new(
        config.client_net,
        config.client_prefix_len,
        config.clients,
        0.0,
        config.seed,
    )?;
    Ok((0..clients.count()).map(|i| clients.addr(i)).collect())
}
