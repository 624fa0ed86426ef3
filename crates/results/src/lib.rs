//! Per-query results of a replay.
//!
//! The replay engine pushes one [`QueryResult`] per query into a [`ResultSink`]; the results
//! file writer, the live summary and tests are sinks. Times are nanoseconds of `CLOCK_REALTIME`
//! so that they compare directly with capture timestamps of an independent witness (tcpdump).
//!
//! - [`ResultsWriter`] / [`ResultsReader`]: the compact binary results file (layout in
//!   [`file`](mod@file)), readable up to its last complete block after the writer is killed; a
//!   damaged block costs only itself ([`Damage`]).
//! - [`export_csv`] / [`export_jsonl`] (and the [`CsvWriter`] / [`JsonlWriter`] sinks): text
//!   exports with stable columns ([`export`]).
//! - [`TraceJoin`]: the results joined with the replayed trace (client, qname, qtype,
//!   transport), streaming both ([`join`]).
//! - [`Summary`]: counts, latency percentiles, timing error and per-second rate error in
//!   bounded memory, reported as a [`SummaryReport`] (JSON or text).
//! - [`merge()`]: results files of one trace (shards of one replay) merged into one, in trace
//!   order, in bounded memory ([`merge`](mod@merge)); [`shard_checks`] says what such a merge
//!   should warn of (shards missing, given twice, late; clocks across hosts).
//! - [`Capacity`]: a ramp's offered, answered and latency per second, and the server's
//!   capacity as resperf computes its maximum throughput ([`capacity`](mod@capacity)).
//! - [`Tee`]: one replay's results to two sinks (say a [`Summary`] and, when asked for, a
//!   [`ResultsWriter`]: `Tee::new(Summary::new(), writer_opt)`, since `Option<S>` is a sink too);
//!   the engine hands the sink back when it is done, so each part is read by value.
//!   [`Targeted`] marks a sink's results as one target's, for replays to several servers.
//! - Answers: a results file created with [`RunInfo::answers`] keeps every answer byte for
//!   byte (format version 2); sinks take it through [`ResultSink::result_with_answer`] and
//!   [`ResultsReader::next_with_answer`] gives it back.
//!
//! Every result carries its query's [`QueryResult::index`], the record's position in the trace:
//! the key on which results of several runs, or of several processes replaying parts of one
//! trace, are merged and compared query by query.

#![forbid(unsafe_code)]

pub mod capacity;
pub mod export;
pub mod fidelity;
pub mod file;
pub mod join;
pub mod merge;
mod reader;
mod result;
pub mod run_info;
pub mod shard_checks;
pub mod summary;
mod tee;

pub use capacity::{Capacity, CapacityReport, RampSecond, RampSpec};
pub use export::{export_csv, export_jsonl, CsvWriter, JsonlWriter, COLUMNS, TRACE_COLUMNS};
pub use file::{
    incomplete_warning, read_all, sniff, Answered, Damage, ResultsError, ResultsReader,
    ResultsWriter, Tail,
};
pub use join::{JoinError, JoinReport, TraceFields, TraceJoin};
/// The transport of a result ([`QueryResult::proto`]).
pub use ldplayer_trace::Proto;
pub use merge::{merge, merged_run_info, InputReport, MergeReport, MERGE_WINDOW};
pub use result::{ErrorCounts, ErrorKind, Outcome, QueryResult, ResultSink};
pub use run_info::{mark_complete, shard_of, ClockState, RunInfo, ShardId};
pub use summary::{
    ConnectionsReport, LatencyReport, RateErrorReport, Summary, SummaryReport, TimingErrorReport,
};
pub use tee::{Targeted, Tee};
