//! Joining the results of a replay with the trace that was replayed, in bounded memory: each
//! result gets its query's client address, name, type and transport from the trace.
//!
//! The replay engine numbers the records it is fed from 0 and skips the responses among them
//! (QR set), so a result's [`index`](QueryResult::index) is the position of its query among
//! all the trace's records, responses included (records the trace reader itself skipped, such
//! as undecodable packets, are not counted: read the trace with the options the replay used).
//! [`TraceJoin`] replays that numbering: it is a [`Sink`] fed the trace's records in order, and
//! pulls results from the results file as their records go by. Results come in completion
//! order, not trace order, so it keeps the queries read but not yet matched, at most
//! [`DEFAULT_WINDOW`] records back.
//!
//! A replay to several servers has one result per query and target
//! ([`QueryResult::target`]; the file's run info lists the targets): each joins with the query.
//!
//! It refuses (a [`JoinError`]) a result whose record is not in the trace, is a response, was
//! matched already (for its target) or whose time disagrees with the result's `trace_ns`, and at
//! the end queries without a result (for some target) before the last result's record, beyond
//! what damaged blocks of the results file lost. Queries after the last result's record (a replay stopped early, or a longer
//! trace) are counted in the [`JoinReport`].

use crate::file::ResultsError;
use crate::reader::ResultsReader;
use crate::result::QueryResult;
use crate::run_info::ShardId;
use ldplayer_dns::{flag, name_to_presentation, Message, Rtype};
use ldplayer_trace::{Proto, Record, Sink, SinkError};
use std::collections::VecDeque;
use std::io::{self, Read};
use std::net::IpAddr;

/// Records kept back for results that come late: enough for 500,000 queries per second with a
/// 2 s timeout. About 100 bytes each.
pub const DEFAULT_WINDOW: usize = 1 << 20;

/// What the trace says about one query.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TraceFields {
    /// The query's time in the trace, ns since the epoch (a result's `trace_ns`).
    pub time_ns: i64,
    /// The original client: the record's source address.
    pub client: IpAddr,
    /// The first question's name in presentation format, absolute and escaped as in the text
    /// format; `None` without a question or when the message is not DNS.
    pub qname: Option<Box<str>>,
    /// The first question's type; `None` as for `qname`.
    pub qtype: Option<Rtype>,
    /// The transport in the trace (the replay may have forced another).
    pub proto: Proto,
}

impl TraceFields {
    /// The fields of a record.
    pub fn of(record: &Record<'_>) -> TraceFields {
        let (qname, qtype) = match Message::parse(record.wire) {
            Ok(msg) => {
                let mut wire = Vec::new();
                let qname = msg.qname_wire(&mut wire).then(|| {
                    let mut text = String::new();
                    name_to_presentation(&wire, &mut text);
                    text.into_boxed_str()
                });
                (qname, msg.qtype())
            }
            Err(_) => (None, None),
        };
        TraceFields {
            time_ns: record.time_ns,
            client: record.src.ip(),
            qname,
            qtype,
            proto: record.proto,
        }
    }
}

/// Whether the replay engine skips this message as a response (QR set), as
/// `ldplayer-replay` decides: a message shorter than 4 bytes is sent as a query.
pub fn is_response(wire: &[u8]) -> bool {
    wire.len() >= 4 && u16::from_be_bytes([wire[2], wire[3]]) & flag::QR != 0
}

/// Why a trace and a results file do not join.
#[derive(Debug, thiserror::Error)]
pub enum JoinError {
    /// A result's record lies beyond the end of the trace.
    #[error("a result is for record {index}, but the trace has only {records} records: not the trace this run replayed")]
    BeyondTrace {
        /// The result's record.
        index: u64,
        /// Records in the trace.
        records: u64,
    },
    /// A result's record is a response in the trace.
    #[error("a result is for record {index}, which is a response in the trace (responses are not replayed): not the trace this run replayed")]
    NotAQuery {
        /// The result's record.
        index: u64,
    },
    /// Two results for one record (and target).
    #[error("two results are for record {index}: the results file is not one replay's")]
    Duplicate {
        /// The result's record.
        index: u64,
    },
    /// A result for a target the file does not list.
    #[error("the result for record {index} is for target {target}, and the file lists {targets} targets: not one replay's results")]
    UnknownTarget {
        /// The result's record.
        index: u64,
        /// Its target.
        target: u16,
        /// Targets the file lists.
        targets: usize,
    },
    /// A result's trace time differs from its record's.
    #[error("the result for record {index} has trace time {result_ns} ns, the trace's record {index} {trace_ns} ns: not the trace this run replayed (or it was changed since)")]
    TimeMismatch {
        /// The result's record.
        index: u64,
        /// The result's `trace_ns`.
        result_ns: i64,
        /// The record's time.
        trace_ns: i64,
    },
    /// A result came so long after later records' results that its record was no longer kept.
    #[error("the result for record {index} comes after results for records more than {window} further on: too far out of trace order to join in bounded memory, or a duplicate")]
    OutOfWindow {
        /// The result's record.
        index: u64,
        /// Records kept back.
        window: usize,
    },
    /// Queries of the trace have no result, more than damaged blocks lost.
    #[error("{missing} queries of the trace before record {last} have no result ({lost} results were lost in damaged blocks of the results file): not the trace this run replayed")]
    Missing {
        /// Queries without a result before the last result's record.
        missing: u64,
        /// The last result's record.
        last: u64,
        /// Results the results file lost.
        lost: u64,
    },
    /// Reading the results file failed.
    #[error(transparent)]
    Results(#[from] ResultsError),
    /// Writing a row failed.
    #[error("writing: {0}")]
    Write(io::Error),
}

/// What a finished join saw.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct JoinReport {
    /// Rows written (results joined).
    pub rows: u64,
    /// Records of the trace read.
    pub records: u64,
    /// Queries among them (of this shard's clients, when the results are a shard's).
    pub queries: u64,
    /// Queries of clients of other shards (the results file is one shard of a split replay).
    pub other_shards: u64,
    /// Queries before the last result's record without a result (all explained by results
    /// that damaged blocks lost).
    pub missing: u64,
    /// Whether the trace has queries after the last result's record (a replay stopped early,
    /// or a longer trace); reading stopped at the first.
    pub queries_after_last_result: bool,
}

/// The most targets a join tells apart (a replay takes at most as many servers).
pub const MAX_TARGETS: usize = 64;

/// One record of the window.
enum Slot {
    /// A response, or a query of another shard's client: no result expected.
    Response,
    /// A query waiting for its results: those of the targets in the mask came already.
    Query(TraceFields, u64),
    /// A query joined for every target.
    Joined,
}

/// A [`Sink`] fed the trace's records in order that writes each result of a results file with
/// its query's [`TraceFields`], in the results file's order, through `write`.
pub struct TraceJoin<'r, R: Read, W> {
    results: &'r mut ResultsReader<R>,
    write: W,
    /// A result read whose record has not been read yet.
    pending: Option<QueryResult>,
    results_done: bool,
    /// Records `base..base + window.len()`.
    window: VecDeque<Slot>,
    base: u64,
    max_window: usize,
    /// Queries dropped from the window without a result.
    evicted: u64,
    last_result: Option<u64>,
    report: JoinReport,
    error: Option<JoinError>,
    /// The shard the results are, from their file's run info.
    shard: Option<ShardId>,
    /// Targets the results are of, from their file's run info (1 without a list).
    targets: usize,
}

impl<'r, R: Read, W> TraceJoin<'r, R, W>
where
    W: FnMut(&QueryResult, &TraceFields) -> io::Result<()>,
{
    /// A join of `results` with the trace that will be fed, writing rows through `write`.
    pub fn new(results: &'r mut ResultsReader<R>, write: W) -> Self {
        Self::with_window(results, write, DEFAULT_WINDOW)
    }

    /// Like [`new`](Self::new), keeping at most `window` records back (at least 1).
    pub fn with_window(results: &'r mut ResultsReader<R>, write: W, window: usize) -> Self {
        let shard = results.run_info().and_then(|r| r.shard);
        let targets = results
            .run_info()
            .and_then(|r| r.targets.as_ref())
            .map_or(1, |t| t.len().clamp(1, MAX_TARGETS));
        TraceJoin {
            shard,
            targets,
            results,
            write,
            pending: None,
            results_done: false,
            window: VecDeque::new(),
            base: 0,
            max_window: window.max(1),
            evicted: 0,
            last_result: None,
            report: JoinReport::default(),
            error: None,
        }
    }

    /// Index of the next record.
    fn next_index(&self) -> u64 {
        self.base + self.window.len() as u64
    }

    /// Writes every result whose record has been read; stops at the first result further on.
    fn drain(&mut self) -> Result<(), JoinError> {
        loop {
            let r = match self.pending.take() {
                Some(r) => r,
                None => match self.results.next() {
                    None => {
                        self.results_done = true;
                        return Ok(());
                    }
                    Some(r) => r?,
                },
            };
            if r.index >= self.next_index() {
                self.pending = Some(r);
                return Ok(());
            }
            self.last_result = self.last_result.max(Some(r.index));
            let Some(slot) = r
                .index
                .checked_sub(self.base)
                .and_then(|at| self.window.get_mut(at as usize))
            else {
                return Err(JoinError::OutOfWindow {
                    index: r.index,
                    window: self.max_window,
                });
            };
            if usize::from(r.target) >= self.targets {
                return Err(JoinError::UnknownTarget {
                    index: r.index,
                    target: r.target,
                    targets: self.targets,
                });
            }
            let all = all_targets(self.targets);
            match slot {
                Slot::Query(t, joined) => {
                    let bit = 1u64 << r.target;
                    if *joined & bit != 0 {
                        return Err(JoinError::Duplicate { index: r.index });
                    }
                    if t.time_ns != r.trace_ns {
                        return Err(JoinError::TimeMismatch {
                            index: r.index,
                            result_ns: r.trace_ns,
                            trace_ns: t.time_ns,
                        });
                    }
                    (self.write)(&r, t).map_err(JoinError::Write)?;
                    self.report.rows += 1;
                    *joined |= bit;
                    if *joined == all {
                        *slot = Slot::Joined;
                    }
                }
                Slot::Response => return Err(JoinError::NotAQuery { index: r.index }),
                Slot::Joined => return Err(JoinError::Duplicate { index: r.index }),
            }
        }
    }

    /// Drops joined records and responses from the front, and the oldest records beyond the
    /// window.
    fn trim(&mut self) {
        while matches!(self.window.front(), Some(Slot::Joined | Slot::Response))
            || self.window.len() > self.max_window
        {
            if let Some(Slot::Query(_, joined)) = self.window.pop_front() {
                self.evicted += u64::from((all_targets(self.targets) & !joined).count_ones());
            }
            self.base += 1;
        }
    }

    /// Takes the next record of the trace; false when reading the trace can stop.
    fn take(&mut self, record: &Record<'_>) -> Result<bool, JoinError> {
        let response = is_response(record.wire);
        if self.results_done && !response {
            // A query after the last result: nothing more to join.
            self.report.queries_after_last_result = true;
            return Ok(false);
        }
        self.report.records += 1;
        if response {
            self.window.push_back(Slot::Response);
        } else if self.shard.is_some_and(|s| !s.holds(record.src.ip())) {
            self.report.other_shards += 1;
            self.window.push_back(Slot::Response);
        } else {
            self.report.queries += 1;
            self.window
                .push_back(Slot::Query(TraceFields::of(record), 0));
        }
        self.drain()?;
        self.trim();
        Ok(true)
    }

    /// Ends the join once the trace has been fed: the checks that need the whole trace.
    pub fn finish(mut self) -> Result<JoinReport, JoinError> {
        if let Some(e) = self.error.take() {
            return Err(e);
        }
        if !self.results_done {
            self.drain()?;
        }
        if let Some(r) = self.pending {
            return Err(JoinError::BeyondTrace {
                index: r.index,
                records: self.next_index(),
            });
        }
        let last = self.last_result;
        let all = all_targets(self.targets);
        let unmatched = |before: bool| {
            let base = self.base;
            self.window
                .iter()
                .enumerate()
                .map(move |(i, s)| {
                    let index = base + i as u64;
                    let when = match last {
                        Some(last) => (index < last) == before,
                        None => !before,
                    };
                    match s {
                        Slot::Query(_, joined) if when => u64::from((all & !joined).count_ones()),
                        _ => 0,
                    }
                })
                .sum::<u64>()
        };
        let unmatched_before_last = unmatched(true);
        let missing = self.evicted + unmatched_before_last;
        let damage = self.results.damage();
        let lost = damage.results_lost + damage.unknown_results;
        if missing > lost {
            return Err(JoinError::Missing {
                missing,
                last: last.unwrap_or(0),
                lost,
            });
        }
        self.report.missing = missing;
        self.report.queries_after_last_result |= unmatched(false) > 0;
        Ok(self.report)
    }
}

/// The mask of `n` targets (1 to [`MAX_TARGETS`]).
fn all_targets(n: usize) -> u64 {
    if n >= 64 {
        u64::MAX
    } else {
        (1u64 << n) - 1
    }
}

impl<R: Read, W> Sink for TraceJoin<'_, R, W>
where
    W: FnMut(&QueryResult, &TraceFields) -> io::Result<()>,
{
    fn record(&mut self, record: &Record<'_>) -> Result<(), SinkError> {
        if self.error.is_some() {
            return Err(SinkError::Stopped);
        }
        match self.take(record) {
            Ok(true) => Ok(()),
            Ok(false) => Err(SinkError::Stopped),
            Err(e) => {
                self.error = Some(e);
                Err(SinkError::Stopped)
            }
        }
    }
}
