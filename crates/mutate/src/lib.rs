//! Composable, seeded what-if changes to DNS traces.
//!
//! A [`Mutator`] wraps any [`Sink`](ldplayer_trace::Sink): it receives records from a source,
//! filters and edits them as a [`MutateConfig`] says, and passes the rest on. Mutations cover
//! the questions an experiment asks of a trace: what if these clients used TCP or TLS, set DO,
//! sent bigger EDNS buffers, came twice as fast; what does this subset of clients, types, names
//! or time look like; and how to share a trace without its client addresses.
//!
//! Everything is reproducible: per-client choices hash the client address with the seed
//! (SipHash-1-3), so a client's records all get the same choice; per-query choices come from a
//! ChaCha8 stream seeded with it. Message edits go through `ldplayer_dns::Fields` and `apply`,
//! so an edited message differs from the original only in what was asked.
//!
//! Mutations run in a fixed order, documented on [`Mutation`].

#![forbid(unsafe_code)]

mod anon;
mod choice;
mod config;
mod error;
mod filter;
mod message;
mod mutator;
mod plan;
mod prefix;
mod stats;
mod transport;

pub use anon::Anonymizer;
pub use choice::{client_of, is_response};
pub use config::{Direction, MutateConfig, Mutation};
pub use error::MutateError;
pub use filter::is_at_or_below;
pub use mutator::Mutator;
pub use prefix::{IpPrefix, PrefixError};
pub use stats::MutateStats;

/// The EDNS UDP payload size given to queries that [`Mutation::SetDo`] gives an OPT record to.
pub const DEFAULT_UDP_SIZE: u16 = 1232;
