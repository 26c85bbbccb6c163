//! The kernel heap: one contiguous identity-mapped RAM range managed by
//! `talc` behind a spinlock (taken with interrupts off), what is in use of
//! it, and the reserve that memory admission keeps back.
//!
//! Two users take memory from it: the global allocator
//! ([`super::allocator`]) for large allocations, and the per-CPU slab
//! ([`super::slab`]) for its chunks and magazines. It sits below both and
//! names neither.
//!
//! Touches: the talc instance and the heap's counters.

use core::alloc::Layout;
use core::ptr::null_mut;
use core::sync::atomic::{AtomicUsize, Ordering};

use spin::Mutex;
use talc::base::Talc;
use talc::source::Manual;
use talc::DefaultBinning;

struct Heap(Talc<Manual, DefaultBinning>);

static TALC: Mutex<Heap> = Mutex::new(Heap(Talc::new(Manual)));
static HEAP_START: AtomicUsize = AtomicUsize::new(0);
static HEAP_SIZE: AtomicUsize = AtomicUsize::new(0);
static HEAP_IN_USE: AtomicUsize = AtomicUsize::new(0);

/// Give [base, base + size) to talc. Called once by `mm::init`.
pub fn init(base: usize, size: usize) {
    let mut h = TALC.lock();
    // SAFETY: (1) [base, base + size) is identity-mapped usable RAM that
    // `mm::init` took out of the frame allocator, so nothing else uses it;
    // (2) `Manual` allows manual claims.
    let end = unsafe { h.0.claim(base as *mut u8, size) };
    assert!(end.is_some(), "talc rejected the heap");
    HEAP_START.store(base, Ordering::Relaxed);
    HEAP_SIZE.store(size, Ordering::Relaxed);
}

/// (heap start, heap size, bytes in use by large allocations and slab chunks).
pub fn stats() -> (usize, usize, usize) {
    (
        HEAP_START.load(Ordering::Relaxed),
        HEAP_SIZE.load(Ordering::Relaxed),
        HEAP_IN_USE.load(Ordering::Relaxed),
    )
}

/// The smallest reserve, for small heaps.
pub const MIN_RESERVE: usize = 1 << 20;

/// Free heap that memory admission keeps back: `max(1 MiB, heap / 16)`.
/// The fs crate's allocations (dentries, inodes, file data) stop here with
/// `ENOMEM`; what is left serves the allocations that cannot fail (console
/// formatting, `Vec`s on other paths, RCU callback queues, the network
/// stack), like the `min` watermark Linux keeps for atomic allocations.
pub fn reserve() -> usize {
    (HEAP_SIZE.load(Ordering::Relaxed) / 16).max(MIN_RESERVE)
}

/// Bytes talc has not handed out (slab chunks count as handed out, free
/// objects inside them included).
pub fn free() -> usize {
    HEAP_SIZE
        .load(Ordering::Relaxed)
        .saturating_sub(HEAP_IN_USE.load(Ordering::Relaxed))
}

/// Allocate from talc directly (used by the slab for chunks and magazines).
/// Returns null when the heap is exhausted. `layout.size()` must be nonzero.
pub fn talc_alloc(layout: Layout) -> *mut u8 {
    debug_assert!(layout.size() != 0);
    let p = crate::arch::interrupts::without(|| {
        // SAFETY: layout has a nonzero size (all callers allocate real
        // objects; GlobalAlloc forbids zero-sized layouts).
        unsafe { TALC.lock().0.allocate(layout) }
    });
    match p {
        Some(p) => {
            HEAP_IN_USE.fetch_add(layout.size(), Ordering::Relaxed);
            p.as_ptr()
        }
        None => null_mut(),
    }
}

/// Free memory from [`talc_alloc`].
///
/// # Safety
/// `ptr` came from `talc_alloc(layout)` with this `layout` and is not used
/// afterwards.
pub unsafe fn talc_free(ptr: *mut u8, layout: Layout) {
    HEAP_IN_USE.fetch_sub(layout.size(), Ordering::Relaxed);
    crate::arch::interrupts::without(|| {
        // SAFETY: guaranteed by the caller.
        unsafe { TALC.lock().0.deallocate(ptr, layout) }
    });
}
