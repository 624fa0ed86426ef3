//! Seeded, reproducible synthetic DNS query traces.
//!
//! A [`Synth`] turns a [`SynthConfig`] into a [`Source`](ldplayer_trace::Source) of queries in
//! time order, for any sink (a trace writer, the inspector, the replay engine). Workloads:
//!
//! - [`Workload::Fixed`]: one query per fixed interval with unique names, the LDplayer paper's
//!   syn-0 to syn-4 traces ([`SynthConfig::syn`]);
//! - [`Workload::Poisson`]: exponential inter-arrival times, unique names;
//! - [`Workload::RootLike`]: a root-server-like load with heavy-tailed clients (about 1% of them
//!   send three quarters of the queries) asking for existing TLDs and junk.
//!
//! Every random choice comes from a ChaCha8 generator seeded with [`SynthConfig::seed`] and is
//! computed with integer arithmetic and portable floating-point functions only, so a seed gives
//! the same trace on every platform. Generation is allocation-free per query (one reused wire
//! buffer, a hand-written encoder) and keeps O(clients) state.

mod clients;
mod config;
mod encode;
mod error;
mod fmath;
mod names;
mod rng;
mod synth;

pub use config::{
    default_qtypes, RootLike, SynthConfig, Workload, DEFAULT_START_NS, DEFAULT_UDP_SIZE,
    SYN_INTERVALS_NS,
};
pub use error::SynthError;
pub use names::{root_like_tlds, synthetic_root_zone};
pub use synth::Synth;
