//! The name of a synthetic workload, as `ldplayer synth --workload` and a plan's
//! `[trace.synth] workload` spell it: one definition for both, so that their spellings stay
//! the same. With the `serde` feature it reads and writes as in TOML (`"root"`); with the `clap`
//! feature it is a command-line value (`--workload root`).

/// Which synthetic workload draws a trace's query times and clients: the shape of
/// [`crate::Workload`] without its numbers ([`Fixed`](crate::Workload::Fixed),
/// [`Poisson`](crate::Workload::Poisson), [`RootLike`](crate::Workload::RootLike)).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "serde", serde(rename_all = "lowercase"))]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
pub enum WorkloadKind {
    /// One query every fixed interval, clients in turn, unique names: the paper's
    /// syn-0..syn-4.
    Fixed,
    /// Poisson arrivals from uniformly drawn clients, unique names.
    Poisson,
    /// Root-server-like: Poisson arrivals, heavy-tailed clients, a mix of real and junk names
    /// and of query types.
    Root,
}
