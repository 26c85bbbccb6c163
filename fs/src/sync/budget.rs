//! Host mode's memory budget: a counting global allocator and the answer
//! to [`crate::platform::Platform::may_alloc`] on the host.
//!
//! A host program (vfsh) installs [`CountingAlloc`] as its global
//! allocator and sets a budget ([`set_budget`]); from then on every
//! admission ([`crate::mem::admit`]) says no once the bytes live on the
//! heap plus the ones asked for would pass it, so a growing file read, a
//! listing or a dentry flood ends in `ENOMEM` instead of taking the
//! machine's memory (the kernel's admission does the same from its free
//! heap). Allocations that are not admitted (a reply frame, a `Vec` on a
//! path that cannot fail) are counted but never refused: the budget bounds
//! what the fs keeps, and those are bounded by their own limits.
//!
//! Without [`CountingAlloc`] installed nothing is counted and the budget
//! bounds only a single allocation. Touches three global atomics and the
//! system allocator.

use core::sync::atomic::{AtomicUsize, Ordering};
use std::alloc::{GlobalAlloc, Layout, System};

/// Bytes live on the heap through [`CountingAlloc`].
static LIVE: AtomicUsize = AtomicUsize::new(0);
/// The most [`LIVE`] has been.
static PEAK: AtomicUsize = AtomicUsize::new(0);
/// The budget in bytes; 0: none.
static BUDGET: AtomicUsize = AtomicUsize::new(0);

/// The system allocator, counting the bytes it hands out.
pub struct CountingAlloc;

fn grew(by: usize) {
    let now = LIVE.fetch_add(by, Ordering::Relaxed) + by;
    PEAK.fetch_max(now, Ordering::Relaxed);
}

// SAFETY: every method forwards to `System` with the caller's arguments
// unchanged, so `System`'s guarantees are the caller's; the counting around
// it touches only atomics and never allocates.
unsafe impl GlobalAlloc for CountingAlloc {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: the caller's contract for `alloc` is `System::alloc`'s.
        let p = unsafe { System.alloc(layout) };
        if !p.is_null() {
            grew(layout.size());
        }
        p
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        // SAFETY: as `alloc`.
        let p = unsafe { System.alloc_zeroed(layout) };
        if !p.is_null() {
            grew(layout.size());
        }
        p
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: `ptr` came from this allocator, i.e. from `System`, with
        // `layout`, as the caller promises.
        unsafe { System.dealloc(ptr, layout) };
        LIVE.fetch_sub(layout.size(), Ordering::Relaxed);
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: as `dealloc` for `ptr` and `layout`; `new_size` is the
        // caller's, checked by it as `GlobalAlloc::realloc` requires.
        let p = unsafe { System.realloc(ptr, layout, new_size) };
        if !p.is_null() {
            if new_size >= layout.size() {
                grew(new_size - layout.size());
            } else {
                LIVE.fetch_sub(layout.size() - new_size, Ordering::Relaxed);
            }
        }
        p
    }
}

/// Set the budget (`None`: no budget).
pub fn set_budget(bytes: Option<usize>) {
    BUDGET.store(bytes.unwrap_or(0), Ordering::Relaxed);
}

/// The budget, if one is set.
pub fn budget() -> Option<usize> {
    Some(BUDGET.load(Ordering::Relaxed)).filter(|&b| b > 0)
}

/// Bytes live on the heap now (0 without [`CountingAlloc`]).
pub fn live() -> usize {
    LIVE.load(Ordering::Relaxed)
}

/// The most bytes that have been live at once.
pub fn peak() -> usize {
    PEAK.load(Ordering::Relaxed)
}

/// May `bytes` more be allocated within the budget?
pub fn may_alloc(bytes: usize) -> bool {
    match budget() {
        None => true,
        Some(b) => live().saturating_add(bytes) <= b,
    }
}
