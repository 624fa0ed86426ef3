//! The test binary's allocator: the system's, counting the bytes live, in the whole process
//! and per thread, so that tests can bound what a connection keeps (a copy of the replay's).

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::sync::atomic::{AtomicIsize, Ordering};

/// Bytes allocated and not yet freed, by every thread of this test binary.
static LIVE: AtomicIsize = AtomicIsize::new(0);

thread_local! {
    /// Bytes this thread allocated less those it freed.
    static THREAD_LIVE: Cell<isize> = const { Cell::new(0) };
}

struct Counting;

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

#[global_allocator]
static ALLOCATOR: Counting = Counting;

/// Bytes this thread has allocated and not freed (frees of other threads' memory included).
pub fn thread_live() -> isize {
    THREAD_LIVE.with(Cell::get)
}
