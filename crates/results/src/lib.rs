//! Per-query results of a replay.
//!
//! The replay engine pushes one [`QueryResult`] per query into a [`ResultSink`]; the results
//! file writer, the live summary and tests are sinks. Times are nanoseconds of `CLOCK_REALTIME`
//! so that they compare directly with capture timestamps of an independent witness (tcpdump).

mod result;

pub use result::{ErrorKind, Outcome, QueryResult, ResultSink};
