//! Counters of a running replay for progress displays: how many queries were handed to the
//! queriers, sent, answered, timed out and failed so far.
//!
//! Each querier publishes its counts every housekeeping round (20 ms) as deltas, so the hot path
//! touches no shared memory; a display polling a few times a second sees them as current.

use std::sync::atomic::{AtomicU64, Ordering};

/// Live counters shared by the queriers and whoever displays progress.
#[derive(Debug, Default)]
pub struct Live {
    queued: AtomicU64,
    sent: AtomicU64,
    answered: AtomicU64,
    timeouts: AtomicU64,
    errors: AtomicU64,
}

/// A reading of [`Live`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct LiveCounts {
    /// Queries read from the trace and handed to the queriers.
    pub queued: u64,
    /// Queries sent (each once, retries aside).
    pub sent: u64,
    /// Queries answered.
    pub answered: u64,
    /// Queries that timed out.
    pub timeouts: u64,
    /// Queries that failed otherwise.
    pub errors: u64,
}

impl Live {
    /// The counts now.
    pub fn counts(&self) -> LiveCounts {
        LiveCounts {
            queued: self.queued.load(Ordering::Relaxed),
            sent: self.sent.load(Ordering::Relaxed),
            answered: self.answered.load(Ordering::Relaxed),
            timeouts: self.timeouts.load(Ordering::Relaxed),
            errors: self.errors.load(Ordering::Relaxed),
        }
    }

    pub(crate) fn add_queued(&self, n: u64) {
        self.queued.fetch_add(n, Ordering::Relaxed);
    }

    /// Adds what changed between a querier's last published counts and `now`.
    pub(crate) fn publish(&self, last: &mut LiveCounts, now: LiveCounts) {
        let add = |a: &AtomicU64, new: u64, old: u64| {
            if new > old {
                a.fetch_add(new - old, Ordering::Relaxed);
            }
        };
        add(&self.sent, now.sent, last.sent);
        add(&self.answered, now.answered, last.answered);
        add(&self.timeouts, now.timeouts, last.timeouts);
        add(&self.errors, now.errors, last.errors);
        *last = now;
    }
}
