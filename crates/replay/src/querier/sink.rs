//! Where a querier's results and counters go: the batch of results on its way to the result
//! writer, the replay's statistics, and what the causes of failures are told in.
//!
//! The transports ([`super::session`]) and the in-flight table ([`super::inflight`]) record
//! each query's end here through a `&mut Sink`, so none of them needs the querier.

use crate::cause::{Cause, Context};
use crate::stats::ReplayStats;
use crossbeam_channel::Sender;
use ldplayer_results::{ErrorKind, QueryResult};

/// Results handed over at a time.
pub(super) const RESULT_BATCH: usize = 256;
/// Bytes of kept answers after which a querier hands its results over, whatever their number:
/// with the result channel's 4,096 batches, what answers can hold in flight stays bounded.
pub(super) const RESULT_BATCH_ANSWER_BYTES: usize = 256 * 1024;

/// Results on their way from a querier to the result writer, with their answers when the replay
/// keeps them ([`crate::ReplayConfig::keep_answers`]).
#[derive(Debug, Default)]
pub(crate) struct ResultBatch {
    pub results: Vec<QueryResult>,
    /// With answers kept: where each result's answer ends in `answers` (its start is where the
    /// previous one ends); a result without one has an empty span. Empty otherwise.
    pub answer_ends: Vec<u32>,
    /// The answers, one after the other.
    pub answers: Vec<u8>,
}

impl ResultBatch {
    /// An empty batch with room for `n` results.
    pub(super) fn with_capacity(n: usize, keep_answers: bool) -> ResultBatch {
        ResultBatch {
            results: Vec::with_capacity(n),
            answer_ends: Vec::with_capacity(if keep_answers { n } else { 0 }),
            answers: Vec::new(),
        }
    }

    /// Results in the batch.
    pub(super) fn len(&self) -> usize {
        self.results.len()
    }

    /// Whether the batch holds no result.
    pub(super) fn is_empty(&self) -> bool {
        self.results.is_empty()
    }

    /// Each result with its answer, if it has one.
    pub fn iter(&self) -> impl Iterator<Item = (&QueryResult, Option<&[u8]>)> {
        let mut start = 0usize;
        self.results.iter().enumerate().map(move |(i, r)| {
            let answer = self.answer_ends.get(i).and_then(|&end| {
                let span = start..end as usize;
                start = end as usize;
                (!span.is_empty()).then(|| &self.answers[span])
            });
            (r, answer)
        })
    }
}

/// A querier's output: results in batches to the writer, and its counters.
pub(super) struct Sink {
    /// The results not handed over yet.
    batch: ResultBatch,
    tx: Sender<ResultBatch>,
    /// When results were last handed over (realtime ns).
    last_flush: i64,
    keep_answers: bool,
    /// The replay's counters (this querier's share).
    pub stats: ReplayStats,
    /// Queries sent so far (each once).
    pub first_sends: u64,
    /// Whether the replay sets source addresses, for the words of causes.
    source_prefix: bool,
    /// The name the server's TLS certificate is checked against, for the words of causes.
    server_name: String,
}

impl Sink {
    /// A sink handing its results to `tx`.
    pub(super) fn new(
        tx: Sender<ResultBatch>,
        keep_answers: bool,
        source_prefix: bool,
        server_name: String,
    ) -> Sink {
        Sink {
            batch: ResultBatch::with_capacity(RESULT_BATCH, keep_answers),
            tx,
            last_flush: 0,
            keep_answers,
            stats: ReplayStats::default(),
            first_sends: 0,
            source_prefix,
            server_name,
        }
    }

    /// Records a result without an answer.
    pub(super) fn push_result(&mut self, r: QueryResult) {
        self.push_answered(r, &[]);
    }

    /// Records a result with its answer (empty: none), kept when the replay keeps answers.
    pub(super) fn push_answered(&mut self, r: QueryResult, answer: &[u8]) {
        if r.sent_ns != 0 {
            self.stats.sent += 1;
        }
        self.stats.count_outcome(r.outcome);
        self.batch.results.push(r);
        if self.keep_answers {
            self.batch.answers.extend_from_slice(answer);
            let end = u32::try_from(self.batch.answers.len()).unwrap_or(u32::MAX);
            self.batch.answer_ends.push(end);
        }
    }

    /// Counts `n` queries failed with `kind` for `cause`.
    pub(super) fn note_cause(&mut self, kind: ErrorKind, cause: &Cause, n: u64) {
        let ctx = Context {
            source_prefix: self.source_prefix,
            server_name: &self.server_name,
        };
        self.stats.note_cause(kind, cause, &ctx, n);
    }

    /// Whether the results are due to be handed over at `now`: a full batch, or results older
    /// than `max_age_ns`.
    pub(super) fn due(&self, now: i64, max_age_ns: i64) -> bool {
        self.batch.len() >= RESULT_BATCH
            || self.batch.answers.len() >= RESULT_BATCH_ANSWER_BYTES
            || (!self.batch.is_empty() && now - self.last_flush > max_age_ns)
    }

    /// Hands the results over to the writer.
    pub(super) fn flush(&mut self, now: i64) {
        self.last_flush = now;
        if self.batch.is_empty() {
            return;
        }
        let fresh = ResultBatch::with_capacity(RESULT_BATCH, self.keep_answers);
        let batch = std::mem::replace(&mut self.batch, fresh);
        self.stats.results += batch.len() as u64;
        // If the writer is gone, the results are lost but the replay still ends cleanly.
        let _ = self.tx.send(batch);
    }
}
