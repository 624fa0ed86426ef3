//! What the fronts driven by tokio (DoH, DoQ) share: their thread's runtime, the wait for the
//! server's stop flag, and a guard per connection that keeps the count of open connections and
//! its gauge right however the connection's task ends.

use crate::stats::Counters;
use crate::POLL_INTERVAL;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;

/// The single-threaded runtime of one front's thread; `None` (said on standard error, naming
/// `what`) when it cannot be made.
pub(crate) fn runtime(what: &str) -> Option<tokio::runtime::Runtime> {
    match tokio::runtime::Builder::new_current_thread()
        .enable_io()
        .enable_time()
        .build()
    {
        Ok(r) => Some(r),
        Err(e) => {
            eprintln!("ldplayer-server: cannot start the {what} runtime: {e}");
            None
        }
    }
}

/// Returns once `stop` is set (checked every [`POLL_INTERVAL`], as the other threads do).
pub(crate) async fn until_stopped(stop: &AtomicBool) {
    let mut tick = tokio::time::interval(POLL_INTERVAL);
    while !stop.load(Ordering::Relaxed) {
        tick.tick().await;
    }
}

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
