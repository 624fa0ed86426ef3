//! The memory allocator ldplayer's programs run on: the system's (glibc's), with mimalloc for the
//! commands that ask for it.
//!
//! The two suit different work. `zones build` decodes a million responses into tens of millions
//! of small names and records, copies some into zones and frees the rest: glibc's allocator was
//! a fifth of its samples (`_int_malloc`, `unlink_chunk`, `malloc_consolidate`), and under
//! mimalloc the worst case of `bench/zones.sh` took 0.85 of the wall time (farm-bench, five
//! pairs, 0.66–0.87 pair by pair). The replay holds thousands of idle connections, each a few small
//! long-lived buffers: under mimalloc a TCP connection took 1.8–2.8 KB of the generator's memory
//! instead of 1.1 KB and a TLS session 6.9–9.3 KB instead of 5.2 (`bench/connections.sh`),
//! where its goal is 4 KiB for an idle one. So the program starts on glibc's allocator and a
//! command may switch to mimalloc ([`use_mimalloc`]) before its work; every block is freed by
//! the allocator it came from, told apart by its address.

use std::alloc::{GlobalAlloc, Layout, System};
use std::ffi::c_void;
use std::sync::atomic::{AtomicBool, Ordering};

use mimalloc::MiMalloc;

/// mimalloc 3's `mi_option_purge_delay` (its `mimalloc.h`; the `libmimalloc-sys` crate names
/// only version 2's numbering, so the workspace pins both crates to the versions checked).
const MI_OPTION_PURGE_DELAY: libmimalloc_sys::mi_option_t = 15;

/// Set once a command switched to mimalloc; never cleared. Until then no block can be
/// mimalloc's, so frees skip the address lookup.
static MIMALLOC: AtomicBool = AtomicBool::new(false);

/// The global allocator's type; the CLI declares `#[global_allocator]` with it.
#[derive(Debug, Default, Clone, Copy)]
pub struct Allocator;

/// From now on, new blocks come from mimalloc, told to keep the memory it frees: returning
/// freed pages to the kernel after its default delay (1 s) and faulting them in again doubled
/// the system time of `zones build`, and a command's peak memory, what it reports and what its
/// users provision for, is the same either way. Blocks allocated before stay glibc's (also when
/// they grow) and go back to it.
pub fn use_mimalloc() {
    // SAFETY: mi_option_set only stores an option's value; any value is valid for this option
    // (-1: never purge).
    #[allow(unsafe_code)]
    unsafe {
        libmimalloc_sys::mi_option_set(MI_OPTION_PURGE_DELAY, -1);
    }
    MIMALLOC.store(true, Ordering::Release);
}

/// Whether new blocks come from mimalloc.
fn mimalloc_on() -> bool {
    MIMALLOC.load(Ordering::Acquire)
}

/// Whether `ptr`, a block of this allocator, is mimalloc's.
fn is_mimallocs(ptr: *mut u8) -> bool {
    // SAFETY: the lookup reads mimalloc's map of its own memory; any address may be asked.
    // A thread that frees a mimalloc block got it after it was allocated, hence after the flag
    // was set (acquire/release), so the lookup is never skipped for one.
    #[allow(unsafe_code)]
    let owned =
        mimalloc_on() && unsafe { libmimalloc_sys::mi_is_in_heap_region(ptr as *const c_void) };
    owned
}

// SAFETY: every method forwards to System or MiMalloc, both global allocators, and a block is
// only ever freed or grown by the one that allocated it (`is_mimallocs`).
#[allow(unsafe_code)]
unsafe impl GlobalAlloc for Allocator {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: the caller's contract, passed on.
        unsafe {
            if mimalloc_on() {
                MiMalloc.alloc(layout)
            } else {
                System.alloc(layout)
            }
        }
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        // SAFETY: the caller's contract, passed on.
        unsafe {
            if mimalloc_on() {
                MiMalloc.alloc_zeroed(layout)
            } else {
                System.alloc_zeroed(layout)
            }
        }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: the caller's contract, passed on to the block's own allocator.
        unsafe {
            if is_mimallocs(ptr) {
                MiMalloc.dealloc(ptr, layout)
            } else {
                System.dealloc(ptr, layout)
            }
        }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: the caller's contract, passed on to the block's own allocator.
        unsafe {
            if is_mimallocs(ptr) {
                MiMalloc.realloc(ptr, layout, new_size)
            } else {
                System.realloc(ptr, layout, new_size)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[allow(unsafe_code)]
    fn purge_delay() -> std::ffi::c_long {
        // SAFETY: reading an option has no precondition.
        unsafe { libmimalloc_sys::mi_option_get(MI_OPTION_PURGE_DELAY) }
    }

    /// Fills `len` bytes at `ptr` with a pattern that says where each byte was.
    #[allow(unsafe_code)]
    fn fill(ptr: *mut u8, len: usize) {
        for i in 0..len {
            // SAFETY: the block holds `len` bytes.
            unsafe { ptr.add(i).write((i % 251) as u8) };
        }
    }

    #[allow(unsafe_code)]
    fn holds_pattern(ptr: *mut u8, len: usize) -> bool {
        // SAFETY: the block holds at least `len` bytes.
        (0..len).all(|i| unsafe { ptr.add(i).read() } == (i % 251) as u8)
    }

    /// One test, because the switch is for the whole process and cannot be undone.
    #[test]
    #[allow(unsafe_code)]
    fn blocks_go_back_to_the_allocator_they_came_from_across_the_switch() {
        let a = Allocator;
        // mimalloc 3 purges after 1 s by default (its options.c); another number would name
        // another option.
        assert_eq!(
            purge_delay(),
            1000,
            "option {MI_OPTION_PURGE_DELAY} is not the purge delay"
        );
        let small = Layout::from_size_align(48, 8).unwrap();
        let huge = Layout::from_size_align(64 << 20, 64).unwrap();
        // SAFETY: layouts of non-zero size; every block is freed once, with its layout.
        unsafe {
            let before = [a.alloc(small), a.alloc(huge), a.alloc_zeroed(small)];
            assert!(before.iter().all(|p| !p.is_null() && !is_mimallocs(*p)));
            fill(before[0], small.size());

            use_mimalloc();
            assert_eq!(purge_delay(), -1);
            let after = [a.alloc(small), a.alloc(huge), a.alloc_zeroed(small)];
            assert!(after.iter().all(|p| !p.is_null() && is_mimallocs(*p)));
            assert!((0..small.size()).all(|i| after[2].add(i).read() == 0));

            // A glibc block grown after the switch stays glibc's, its contents kept.
            let grown = a.realloc(before[0], small, 4096);
            assert!(!is_mimallocs(grown) && holds_pattern(grown, small.size()));
            fill(after[0], small.size());
            let grown_mi = a.realloc(after[0], small, 1 << 20);
            assert!(is_mimallocs(grown_mi) && holds_pattern(grown_mi, small.size()));

            a.dealloc(grown, Layout::from_size_align(4096, 8).unwrap());
            a.dealloc(grown_mi, Layout::from_size_align(1 << 20, 8).unwrap());
            for (p, l) in [before[1], before[2], after[1], after[2]]
                .into_iter()
                .zip([huge, small, huge, small])
            {
                a.dealloc(p, l);
            }
        }
    }
}
