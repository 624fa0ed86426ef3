//! How far a reader has read its input.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

/// How far into its (decompressed) input a reader is: the offset of the end of the last item
/// (record, line, packet block) it took, published as it reads so that a watcher of the input
/// knows which bytes each record came from (see [`crate::open`], which holds back the records
/// of a compressed frame until the frame's check passes). A reader keeps one and hands out
/// clones; a clone nobody reads costs one relaxed store per item.
#[derive(Debug, Clone, Default)]
pub struct Position(Arc<AtomicU64>);

impl Position {
    /// The offset of the end of the last item taken.
    pub fn get(&self) -> u64 {
        self.0.load(Ordering::Relaxed)
    }

    /// Says that the reader took everything before `offset`.
    pub(crate) fn set(&self, offset: u64) {
        self.0.store(offset, Ordering::Relaxed)
    }
}
