//! The test binary's allocator: the system's, counting the bytes live in the whole process, so
//! that tests can bound what a client's TLS configuration and session keep.

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicIsize, Ordering};

/// Bytes allocated and not yet freed, by every thread of this test binary.
static LIVE: AtomicIsize = AtomicIsize::new(0);

struct Counting;

fn count(delta: isize) {
    LIVE.fetch_add(delta, Ordering::Relaxed);
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

/// Bytes live in the whole process.
pub fn live() -> isize {
    LIVE.load(Ordering::Relaxed)
}
