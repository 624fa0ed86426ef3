//! The queries a querier has been given and not yet sent, in their batches, in order.

use crate::distributor::{Batch, QueryMeta};
use crossbeam_channel::Sender;
use std::collections::VecDeque;

/// The batches waiting to be sent, the first query not taken yet, and how far ahead of it the
/// queries have been looked at ([`super::ahead`]).
pub(super) struct Pending {
    batches: VecDeque<Batch>,
    /// Queries queued and not taken yet, in all batches.
    queued: usize,
    /// The first query of the front batch not taken yet.
    cursor: usize,
    /// Queued queries past `cursor` that were looked at ahead of their time.
    scanned_ahead: usize,
    /// Where emptied batches go back to the distributor.
    recycle: Sender<Batch>,
}

/// Where the look ahead is: batch `bi`, query `qi`.
pub(super) struct Ahead {
    bi: usize,
    qi: usize,
}

impl Pending {
    /// No batches yet; emptied ones go back through `recycle`.
    pub(super) fn new(recycle: Sender<Batch>) -> Pending {
        Pending {
            batches: VecDeque::new(),
            queued: 0,
            cursor: 0,
            scanned_ahead: 0,
            recycle,
        }
    }

    /// Queues a batch behind the others.
    pub(super) fn push(&mut self, b: Batch) {
        self.queued += b.queries.len();
        self.batches.push_back(b);
    }

    /// How many queries are queued and not taken yet.
    pub(super) fn queued(&self) -> usize {
        self.queued
    }

    /// Whether every query was taken.
    pub(super) fn is_empty(&self) -> bool {
        self.batches.is_empty()
    }

    /// The next query to take, if any (emptied batches go back to the distributor).
    pub(super) fn next(&mut self) -> Option<QueryMeta> {
        loop {
            let b = self.batches.front()?;
            if let Some(m) = b.queries.get(self.cursor) {
                return Some(*m);
            }
            if let Some(mut b) = self.batches.pop_front() {
                b.queries.clear();
                b.bytes.clear();
                let _ = self.recycle.try_send(b);
            }
            self.cursor = 0;
        }
    }

    /// Takes the query that [`Pending::next`] returned.
    pub(super) fn advance(&mut self) {
        self.cursor += 1;
        self.queued = self.queued.saturating_sub(1);
        self.scanned_ahead = self.scanned_ahead.saturating_sub(1);
    }

    /// The message of `m`, the query just returned by [`Pending::next`].
    pub(super) fn wire(&self, m: &QueryMeta) -> &[u8] {
        self.batches.front().map(|b| b.wire(m)).unwrap_or(&[])
    }

    /// Where the first query not looked at ahead yet is.
    pub(super) fn ahead(&self) -> Ahead {
        let (mut bi, mut qi) = (0, self.cursor + self.scanned_ahead);
        while let Some(b) = self.batches.get(bi) {
            if qi < b.queries.len() {
                break;
            }
            qi -= b.queries.len();
            bi += 1;
        }
        Ahead { bi, qi }
    }

    /// The query at `at`, counted as looked at, with `at` moved past it; `None` at the end.
    pub(super) fn look_ahead(&mut self, at: &mut Ahead) -> Option<QueryMeta> {
        loop {
            let b = self.batches.get(at.bi)?;
            let Some(&m) = b.queries.get(at.qi) else {
                (at.bi, at.qi) = (at.bi + 1, 0);
                continue;
            };
            at.qi += 1;
            self.scanned_ahead += 1;
            return Some(m);
        }
    }
}
