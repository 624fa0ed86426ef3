//! The query engine: replays a DNS trace against a real server with the trace's own timing over
//! UDP, TCP and TLS.
//!
//! # Pipeline
//!
//! - **Reader / distributor** (the caller's thread, [`Running`] as a [`ldplayer_trace::Sink`]):
//!   skips responses, gives each original source address a client number and a querier
//!   ([`Distributor`]: a stable hash of the address), computes each query's due time
//!   ([`Schedule`], from [`ReplayConfig::start_ns`] and [`ReplayConfig::trace_origin_ns`] when
//!   the caller gives them) and sends batches over bounded channels, never more than
//!   [`ReplayConfig::preload`] ahead of real time; it also counts what the trace reader skipped.
//! - **Queriers** (one thread each, optionally pinned): an epoll (mio) loop per thread. Queries are
//!   sent at `t0 + (trace_t − trace_t0) / speed` on `CLOCK_REALTIME`, waiting on a `timerfd` and
//!   spinning the last 80 µs, so lateness never accumulates; everything due is sent together
//!   (`sendmmsg` for UDP). Each client has its own UDP socket (LRU-bounded) and its own TCP or TLS
//!   connection (reused until idle, pipelined, answers matched by ID in any order). Message IDs
//!   of the trace are kept unless another query in flight on the same socket or connection
//!   already uses it; then the ID is rewritten to a free one. The querier only schedules: each
//!   transport's sessions (UDP sockets, TCP/TLS/DoH connections, the QUIC threads of DoQ and
//!   DoH over HTTP/3) sit behind one seam, the querier's `Transport` trait.
//! - **Result writer** (one thread): takes batches of [`ldplayer_results::QueryResult`] and calls
//!   the caller's [`ldplayer_results::ResultSink`], so the queriers never block on disk; it owns
//!   the sink until [`Running::finish`] hands it back.
//!
//! Every query handed to a querier yields exactly one result, and every result carries the
//! query's record position in the trace ([`ldplayer_results::QueryResult::index`], responses
//! counted), the key for merging and comparing results of several runs or processes.
//!
//! # Using the engine
//!
//! [`Replay::new`] checks a [`ReplayConfig`]; [`Replay::run`] replays a whole
//! [`ldplayer_trace::Source`] into any [`ldplayer_results::ResultSink`] and hands the sink back
//! with the [`ReplayStats`] ([`Finished`]). Compose sinks with [`ldplayer_results::Tee`]:
//!
//! ```no_run
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! use ldplayer_replay::{Replay, ReplayConfig};
//! use ldplayer_results::{ResultsWriter, Summary, Tee};
//!
//! let mut trace = ldplayer_trace::binary::MappedTrace::open("trace.bin".as_ref())?;
//! let replay = Replay::new(ReplayConfig::new("127.0.0.1:53".parse()?))?;
//! let writer = Some(ResultsWriter::create("run.res")?);
//! let done = replay.run(&mut trace, Tee::new(Summary::new(), writer))?;
//! let (summary, _writer) = done.results.into_parts();
//! print!("{}", summary.report());
//! println!("{}", serde_json::to_value(&done.stats)?);
//! # Ok(())
//! # }
//! ```
//!
//! [`drive()`] is the loop every front end uses: several replays (one per target) fed from one
//! source, a stop asked for and progress reported through [`Hooks`], every engine finished and
//! its sink handed back ([`Driven`]).
//!
//! To feed records from elsewhere (a network, another process), [`Replay::start`] gives a
//! [`Running`] replay that takes records as an [`ldplayer_trace::Sink`] until
//! [`Running::finish`]. [`ReplayConfig::start_ns`] and [`ReplayConfig::trace_origin_ns`] pin the
//! schedule to an instant and a trace time chosen by the caller, so that several processes
//! replaying parts of one trace keep the trace's timing between them.

mod cause;
mod clock;
mod config;
mod cpu;
mod destination;
mod distributor;
mod drive;
mod engine;
mod error;
mod handover;
mod live;
mod net;
mod population;
pub mod processes;
mod querier;
mod reference;
mod shard;
mod stats;
mod tls;

/// The test binary counts what it allocates (the stacks' counter): tests bound what a client's
/// TLS configuration and session keep.
#[cfg(test)]
#[global_allocator]
static ALLOCATOR: ldplayer_stacks::alloc_count::Counting = ldplayer_stacks::alloc_count::Counting;

pub use clock::clock_state;

pub use config::{
    ClientProfile, DohConfig, DohMethod, Profiles, ReplayConfig, Stack, Timing, TlsConfig,
    DEFAULT_QUIC_KEY_UPDATE_PACKETS, MAX_GAP_SECS, MIN_RATE, MIN_SPEED,
};
pub use destination::{check_destination, DestinationError};
pub use distributor::{ramp_offset_s, ramp_queries, stable_hash, Distributor, Schedule};
pub use drive::{drive, live_total, Driven, Hooks};
pub use engine::{Finished, Replay, Running};
pub use error::ReplayError;
pub use live::{Live, LiveCounts};
pub use net::client_addr;
pub use shard::{parse_shard, shard_from_env, shard_of, ShardError};
#[allow(deprecated)] // kept for callers of the old list
pub use stats::{ErrorCause, ReplayStats, TimestampSource, ERROR_KINDS};

/// The examples of `docs/library.md`, compiled and run with this crate's doctests.
#[cfg(doctest)]
#[doc = include_str!("../../../docs/library.md")]
pub struct LibraryGuide;
