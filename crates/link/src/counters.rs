//! What went through the link, each direction on its own: live atomics written by the
//! direction threads, read as plain snapshots.

use std::sync::atomic::{AtomicU64, Ordering};

/// Counters of both directions.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct LinkCounters {
    /// Packets read from `a` and meant for `b`.
    pub a_to_b: DirectionCounters,
    /// Packets read from `b` and meant for `a`.
    pub b_to_a: DirectionCounters,
}

/// Counters of one direction. Every packet in is, eventually, out or dropped for one reason,
/// or still held (at most the delay's worth) or dropped unsent when the link stops.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(default)]
pub struct DirectionCounters {
    /// Packets read from the input device.
    pub packets_in: u64,
    /// Bytes of those packets (IP headers included).
    pub bytes_in: u64,
    /// Packets written to the output device.
    pub packets_out: u64,
    /// Bytes of those packets.
    pub bytes_out: u64,
    /// Packets lost by the loss model.
    pub dropped_loss: u64,
    /// Packets dropped because the rate limiter's queue (or the bound on held bytes) was full.
    pub dropped_queue: u64,
    /// Packets the output device refused (for instance because it is down or gone).
    pub dropped_write: u64,
    /// Packets written more than [`LATE_THRESHOLD`](crate::emulator::LATE_THRESHOLD) after
    /// their departure time: the emulator's own infidelity (its thread woke late, or the
    /// machine, virtual CPUs included, was busy).
    pub late_departures: u64,
    /// Sum over the packets written (or refused) of how late each was, in nanoseconds; divided
    /// by their number, the mean lateness.
    pub lateness_ns: u64,
}

/// The live form of [`DirectionCounters`].
#[derive(Debug, Default)]
pub(crate) struct DirectionAtomics {
    pub packets_in: AtomicU64,
    pub bytes_in: AtomicU64,
    pub packets_out: AtomicU64,
    pub bytes_out: AtomicU64,
    pub dropped_loss: AtomicU64,
    pub dropped_queue: AtomicU64,
    pub dropped_write: AtomicU64,
    pub late_departures: AtomicU64,
    pub lateness_ns: AtomicU64,
}

impl DirectionAtomics {
    /// The values now.
    pub fn snapshot(&self) -> DirectionCounters {
        let get = |a: &AtomicU64| a.load(Ordering::Relaxed);
        DirectionCounters {
            packets_in: get(&self.packets_in),
            bytes_in: get(&self.bytes_in),
            packets_out: get(&self.packets_out),
            bytes_out: get(&self.bytes_out),
            dropped_loss: get(&self.dropped_loss),
            dropped_queue: get(&self.dropped_queue),
            dropped_write: get(&self.dropped_write),
            late_departures: get(&self.late_departures),
            lateness_ns: get(&self.lateness_ns),
        }
    }
}
