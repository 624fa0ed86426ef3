//! A replay to several servers (`replay --server A --server B ...`): one engine per target, each
//! with its own queriers, sockets and connections, all fed the same records of the trace on one
//! schedule, so that every query goes to each target as if that target were replayed alone.
//!
//! [`ldplayer_replay::drive`] feeds the engines. They share nothing but the start of the
//! schedule and the results file: each engine's results are marked with its target
//! ([`Targeted`]) and go, with their answers when kept, into one file under a lock.

use ldplayer_results::{Capacity, ResultsWriter, Summary, Targeted, Tee};
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
