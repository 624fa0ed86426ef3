//! The query engine: replays a DNS trace against a real server with the trace's own timing over
//! UDP, TCP and TLS.
//!
//! # Pipeline
//!
//! - **Reader / distributor** (the caller's thread, [`Running`] as a [`ldplayer_trace::Sink`]):
//!   skips responses, gives each original source address a client number and a querier
//!   ([`Distributor`]: a stable hash of the address), computes each query's due time
//!   ([`Schedule`]) and sends batches over bounded channels, never more than
//!   [`ReplayConfig::preload`] ahead of real time.
//! - **Queriers** (one thread each, optionally pinned): an epoll (mio) loop per thread. Queries are
//!   sent at `t0 + (trace_t − trace_t0) / speed` on `CLOCK_REALTIME`, waiting on a `timerfd` and
//!   spinning the last 80 µs, so lateness never accumulates; everything due is sent together
//!   (`sendmmsg` for UDP). Each client has its own UDP socket (LRU-bounded) and its own TCP or TLS
//!   connection (reused until idle, pipelined, answers matched by ID in any order). Message IDs
//!   of the trace are kept unless another query in flight on the same socket or connection
//!   already uses it; then the ID is rewritten to a free one.
//! - **Result writer** (one thread): takes batches of [`ldplayer_results::QueryResult`] and calls
//!   the [`ldplayer_results::ResultSink`], so the queriers never block on disk.
//!
//! Every query handed to a querier yields exactly one result.

mod cause;
mod clock;
mod config;
mod distributor;
mod engine;
mod error;
mod live;
mod net;
mod querier;
mod stats;
mod tls;
mod tls_session;
mod traffic_keys;

pub use config::{ReplayConfig, Timing, TlsConfig};
pub use distributor::{stable_hash, Distributor, Schedule};
pub use engine::{Replay, Running};
pub use error::ReplayError;
pub use live::{Live, LiveCounts};
pub use net::client_addr;
#[allow(deprecated)] // kept for callers of the old list
pub use stats::{ErrorCause, ReplayStats, ERROR_KINDS};
