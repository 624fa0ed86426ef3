//! Counting the open connections of the tokio-driven listeners (DoH, DoQ): a guard per
//! connection that keeps the count and its gauge right however the connection's task ends.

use crate::stats::Counters;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

/// Which gauge of [`Counters`] a guard keeps (the DoH or the DoQ one).
pub(crate) type Gauge = fn(&Counters, usize);

/// One open connection, counted in `open` (and its gauge) while it lives.
pub(crate) struct OpenGuard {
    open: Arc<AtomicUsize>,
    counters: Arc<Counters>,
    gauge: Gauge,
}

impl OpenGuard {
    /// Counts one more open connection.
    pub(crate) fn new(open: Arc<AtomicUsize>, counters: Arc<Counters>, gauge: Gauge) -> OpenGuard {
        let now = open.fetch_add(1, Ordering::Relaxed) + 1;
        gauge(&counters, now);
        OpenGuard {
            open,
            counters,
            gauge,
        }
    }
}

impl Drop for OpenGuard {
    fn drop(&mut self) {
        let now = self.open.fetch_sub(1, Ordering::Relaxed) - 1;
        (self.gauge)(&self.counters, now);
    }
}
