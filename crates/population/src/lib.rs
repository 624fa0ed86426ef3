//! Client populations (issue "encrypted transports and client populations").
//!
//! A population is a list of groups of clients, each with its share of the clients, its
//! transport, and how its clients keep their sessions (idle timeout, resumption, 0-RTT, DoH
//! method, timeout and retries) and send their queries (the trace's own times, or Poisson
//! arrivals at a per-client rate drawn from a distribution, as Jonglez et al. model stub
//! clients). It is written in TOML ([`Population::from_toml`], [`Population::to_toml`]).
//!
//! - [`Population::group_of`] puts a trace's client in a group by a seeded, stable hash of its
//!   address, so a client is in the same group in every run, process and shard.
//! - [`AssignTransports`] is a [`Sink`](ldplayer_trace::Sink) wrapper that sends each client's
//!   records over its group's transport: a replay of a trace as that population.
//! - The replay engine reads each group's session profile from it
//!   (`ldplayer_replay::Profiles::of_population`): this crate does not depend on the replay.
//! - [`Fitter`] is a sink that measures a real trace (transport mix, per-client rates, gaps)
//!   and [`Fitter::population`] writes a population that resembles it.

#![forbid(unsafe_code)]

mod assign;
mod file;
mod fit;
mod transports;

pub use assign::AssignTransports;
pub use file::{
    Arrivals, ClientMix, DohMethod, Group, Population, PopulationError, RateDist, Stack,
};
pub use fit::{FitStats, Fitter, Quantiles};
