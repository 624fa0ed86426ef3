//! A counting allocator for tests: the system's, counting the bytes live in the whole process
//! and per thread, so that a test can bound what a connection or a session keeps.
//!
//! It is public so that every test binary that measures memory uses this one (the replay's
//! as well as this crate's), but no library installs it: a test binary does, with
//! `#[global_allocator] static A: Counting = Counting;`. Until then [`live`] and
//! [`thread_live`] stay at 0.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::sync::atomic::{AtomicIsize, Ordering};

/// Bytes allocated and not yet freed, by every thread of the binary.
static LIVE: AtomicIsize = AtomicIsize::new(0);

thread_local! {
    /// Bytes this thread allocated less those it freed.
    static THREAD_LIVE: Cell<isize> = const { Cell::new(0) };
}

/// The system's allocator, counting what is live for [`live`] and [`thread_live`] once it is
/// installed as the binary's global allocator.
#[derive(Debug, Default, Clone, Copy)]
pub struct Counting;

fn count(delta: isize) {
    LIVE.fetch_add(delta, Ordering::Relaxed);
    // A thread being torn down has no thread-local left: only the process total counts then.
    let _ = THREAD_LIVE.try_with(|t| t.set(t.get() + delta));
}

// SAFETY: forwards to the system allocator; only counts.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        count(layout.size() as isize);
        // SAFETY: the caller's contract is passed on.
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        count(-(layout.size() as isize));
        // SAFETY: the caller's contract is passed on.
        unsafe { System.dealloc(ptr, layout) }
    }
}

/// Bytes live in the whole process (all threads), as [`Counting`] saw them.
pub fn live() -> isize {
    LIVE.load(Ordering::Relaxed)
}

/// Bytes this thread has allocated and not freed (frees of other threads' memory included).
pub fn thread_live() -> isize {
    THREAD_LIVE.with(Cell::get)
}
