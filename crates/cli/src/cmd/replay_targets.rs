//! A replay to several servers (`replay --server A --server B ...`): one engine per target, each
//! with its own queriers, sockets and connections, all fed the same records of the trace on one
//! schedule, so that every query goes to each target as if that target were replayed alone.
//!
//! The engines share nothing but the start of the schedule and the results file: each engine's
//! results are marked with its target ([`Targeted`]) and go, with their answers when kept, into
//! one file under a lock.

use ldplayer_replay::{LiveCounts, Replay, Running};
use ldplayer_results::{Capacity, ResultSink, ResultsWriter, Summary, Targeted, Tee};
use ldplayer_trace::{Record, Sink, SinkError, SkipReason};
use std::fs::File;
use std::io::BufWriter;
use std::sync::{Arc, Mutex};

/// The results file several engines write into.
pub type SharedWriter = Arc<Mutex<ResultsWriter<BufWriter<File>>>>;

/// What each engine writes its results to: its target's summary, its capacity when the replay
/// follows a ramp, and the shared results file (when one is asked for), the results marked with
/// the target.
pub type TargetSink = Tee<Summary, Tee<Option<Capacity>, Targeted<Option<SharedWriter>>>>;

/// The sink of target `target`'s engine.
pub fn target_sink(
    target: u16,
    capacity: Option<Capacity>,
    writer: Option<SharedWriter>,
) -> TargetSink {
    Tee::new(
        Summary::new(),
        Tee::new(capacity, Targeted::new(target, writer)),
    )
}

/// The engines of a replay to several targets, as one trace [`Sink`]: every record goes to each
/// engine in turn (each schedules it on the shared start), and what the source skipped is
/// counted by each.
pub struct Fanout<S: ResultSink> {
    /// The running engines, in target order.
    pub engines: Vec<Running<S>>,
}

impl<S: ResultSink> Sink for Fanout<S> {
    fn record(&mut self, record: &Record<'_>) -> Result<(), SinkError> {
        for engine in &mut self.engines {
            engine.record(record)?;
        }
        Ok(())
    }

    fn skipped(&mut self, reason: SkipReason, location: u64) {
        for engine in &mut self.engines {
            engine.skipped(reason, location);
        }
    }

    fn malformed(&mut self, error: ldplayer_dns::DnsError, location: u64) {
        for engine in &mut self.engines {
            engine.malformed(error, location);
        }
    }

    fn finish(&mut self) -> Result<(), SinkError> {
        let mut first = Ok(());
        for engine in &mut self.engines {
            let done = Sink::finish(engine);
            if first.is_ok() {
                first = done;
            }
        }
        first
    }
}

/// The live counts of every engine, added up.
pub fn live_total(replays: &[Replay]) -> LiveCounts {
    replays
        .iter()
        .map(|r| r.live().counts())
        .fold(LiveCounts::default(), |mut total, c| {
            total.queued += c.queued;
            total.sent += c.sent;
            total.answered += c.answered;
            total.timeouts += c.timeouts;
            total.errors += c.errors;
            total
        })
}
