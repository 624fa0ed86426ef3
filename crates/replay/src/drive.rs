//! The one loop that feeds, drives and drains replays: start every engine with its result sink,
//! feed the records of a source to all of them on one schedule, watch for a stop and report
//! progress from a second thread, then finish every engine and hand back its results.
//!
//! `ldplayer replay`, the lab's trace workload and an experiment's client side all run a replay
//! through [`drive`]; a program of one's own does the same with its own [`Hooks`].

use crate::engine::{Finished, Replay, Running};
use crate::error::ReplayError;
use crate::live::LiveCounts;
use ldplayer_results::ResultSink;
use ldplayer_trace::{Record, Sink, SinkError, SkipReason, TraceError};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// How often the watching thread looks at [`Hooks::stop_requested`].
const POLL: Duration = Duration::from_millis(20);
/// How often [`Hooks::progress`] is called.
const PROGRESS_EVERY: Duration = Duration::from_millis(250);

/// What the caller of [`drive`] hears while the replay runs, and how it stops it. Every method
/// has a default that does nothing, so `&()` is a valid set of hooks.
///
/// The hooks are called from the thread that watches the replay (and, for
/// [`Hooks::warning`], from the caller's), hence `Sync`.
pub trait Hooks: Sync {
    /// Whether the replay should stop now (a Ctrl-C handler's flag): polled every 20 ms. Once
    /// it says yes, every engine stops scheduling; queries in flight get their answer or time
    /// out, and the results are finished as usual.
    fn stop_requested(&self) -> bool {
        false
    }

    /// The live counts of every engine added up, about four times a second, for a progress
    /// display.
    fn progress(&self, live: LiveCounts) {
        let _ = live;
    }

    /// Something that did not go as configured when engine `target` started (see
    /// [`Running::warnings`]); the replay runs anyway.
    fn warning(&self, target: usize, warning: &str) {
        let _ = (target, warning);
    }
}

/// No hooks: the replay runs to the end of its source.
impl Hooks for () {}

/// A stop flag as hooks: the replay stops once it is set.
impl Hooks for AtomicBool {
    fn stop_requested(&self) -> bool {
        self.load(Ordering::Relaxed)
    }
}

/// What [`drive`] hands back once every engine is finished.
#[derive(Debug)]
pub struct Driven<S> {
    /// Each engine's result sink and counters, in the order of the replays.
    pub targets: Vec<Finished<S>>,
    /// The error that stopped reading the source, if any: what was read before it was
    /// replayed and is in `targets` (a stop asked for is not an error).
    pub read_error: Option<TraceError>,
    /// Whether the replay was stopped before the end of its source (by [`Hooks::stop_requested`]
    /// or a [`Replay::stop_flag`] set by someone else).
    pub interrupted: bool,
}

/// Replays what `feed` pushes into the sink it is given, to every replay of `replays` (one
/// engine per target, on each one's own schedule: give them one [`crate::ReplayConfig::start_ns`]
/// to keep one schedule), each writing its results into its own sink of `sinks` (as many as
/// `replays`). `feed` is usually `|sink| source.run(sink)`; it may wrap the sink first (to set
/// each client's transport, say).
///
/// While `feed` runs, a second thread polls `hooks` for a stop and reports progress. Then every
/// engine is finished and its sink handed back with its counters ([`Driven`]); a read error of
/// the source comes back in [`Driven::read_error`], after what was read was replayed. An engine
/// that fails to start or finish is an error (the first one, after every engine finished).
pub fn drive<S, F>(
    replays: &[Replay],
    sinks: Vec<S>,
    hooks: &dyn Hooks,
    feed: F,
) -> Result<Driven<S>, ReplayError>
where
    S: ResultSink + 'static,
    F: FnOnce(&mut dyn Sink) -> Result<(), TraceError>,
{
    if sinks.len() != replays.len() {
        return Err(ReplayError::Config(format!(
            "{} result sinks for {} replays: give one each",
            sinks.len(),
            replays.len()
        )));
    }
    let mut fanout = Fanout {
        engines: Vec::with_capacity(replays.len()),
    };
    for (i, (replay, sink)) in replays.iter().zip(sinks).enumerate() {
        let running = replay.start(sink)?;
        for w in running.warnings() {
            hooks.warning(i, w);
        }
        fanout.engines.push(running);
    }
    let stops: Vec<_> = replays.iter().map(Replay::stop_flag).collect();
    let done = AtomicBool::new(false);
    let (read, finished) = std::thread::scope(|scope| {
        scope.spawn(|| {
            let mut last_progress: Option<Instant> = None;
            while !done.load(Ordering::Relaxed) {
                if hooks.stop_requested() {
                    for stop in &stops {
                        stop.store(true, Ordering::SeqCst);
                    }
                }
                if last_progress.is_none_or(|t| t.elapsed() >= PROGRESS_EVERY) {
                    hooks.progress(live_total(replays));
                    last_progress = Some(Instant::now());
                }
                std::thread::sleep(POLL);
            }
        });
        let read = feed(&mut fanout);
        let finished: Vec<_> = fanout.engines.drain(..).map(Running::finish).collect();
        done.store(true, Ordering::Relaxed);
        (read, finished)
    });
    let targets = finished.into_iter().collect::<Result<Vec<_>, _>>()?;
    let read_error = match read {
        Ok(()) | Err(TraceError::Sink(SinkError::Stopped)) => None,
        Err(e) => Some(e),
    };
    Ok(Driven {
        targets,
        read_error,
        interrupted: stops.iter().any(|s| s.load(Ordering::Relaxed)),
    })
}

/// The live counts of every engine of `replays`, added up.
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

/// The engines of a replay to several targets, as one trace [`Sink`]: every record goes to each
/// engine in turn (each schedules it on its own schedule), and what the source skipped is
/// counted by each.
struct Fanout<S: ResultSink> {
    /// The running engines, in target order.
    engines: Vec<Running<S>>,
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
