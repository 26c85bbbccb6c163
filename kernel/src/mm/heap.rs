//! The kernel heap and the global allocator.
//!
//! The heap is one contiguous identity-mapped RAM range managed by `talc`
//! behind a spinlock (taken with interrupts off). `#[global_allocator]` is
//! [`KernelAllocator`]: allocations of at most [`slab::MAX_SMALL`] bytes (and
//! alignment) go to the per-CPU slab, which has no global lock on its fast
//! path (so the fs crate's `Arc::new` of dentries and inodes scales), the
//! rest to talc. Allocations and frees are counted per CPU. With poisoning
//! on ([`super::poison`]), freed memory of both kinds is filled with the
//! poison byte (the slab also checks the fill on reuse).
//!
//! The allocator itself cannot refuse politely (a null return aborts an
//! infallible `Arc::new`), so the fs crate asks [`may_alloc`] first and
//! turns a no into `ENOMEM`; [`reserve`] is the watermark it answers by.

use core::alloc::{GlobalAlloc, Layout};
use core::ptr::{null_mut, NonNull};
use core::sync::atomic::{AtomicUsize, Ordering};

use spin::Mutex;
use talc::base::Talc;
use talc::source::Manual;
use talc::DefaultBinning;

use super::slab;

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

/// Memory admission for one allocation of `bytes` (the kernel's answer to
/// `fs::platform::Platform::may_alloc`). Fast path: after the worst case
/// this allocation could take from talc (a whole slab refill for a small
/// object), the free heap stays above [`reserve`]. Below that watermark a
/// small object is still admitted when the slab can serve it from free
/// objects this CPU can reach (memory the shrinker gave back), since that
/// takes nothing from talc; anything else is refused.
///
/// The answer is advisory, read without a lock: CPUs admitted at the same
/// moment may together dip into the reserve by one allocation each, which
/// the reserve is large enough to absorb.
pub fn may_alloc(bytes: usize) -> bool {
    let class = Layout::from_size_align(bytes.max(1), 8)
        .ok()
        .and_then(slab::class_of);
    let worst = class.map_or(bytes, slab::refill_bytes);
    if free() >= reserve().saturating_add(worst) {
        return true;
    }
    class.is_some_and(slab::has_free)
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

/// The global allocator: small objects to the per-CPU slab, the rest to talc.
pub struct KernelAllocator;

#[global_allocator]
static ALLOCATOR: KernelAllocator = KernelAllocator;

// SAFETY: both back ends return memory valid for `layout` (size and
// alignment) that no one else owns, and `dealloc` routes a pointer to the
// back end that produced it: the route depends only on the layout, which
// GlobalAlloc guarantees is the same at alloc and dealloc.
unsafe impl GlobalAlloc for KernelAllocator {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        slab::count_alloc();
        match slab::class_of(layout) {
            Some(class) => slab::alloc(class).map_or(null_mut(), NonNull::as_ptr),
            None => talc_alloc(layout),
        }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        slab::count_free();
        match slab::class_of(layout) {
            // SAFETY: `ptr` came from `slab::alloc(class)` for this layout.
            Some(class) => unsafe { slab::free(class, ptr) },
            None => {
                if super::poison::enabled() {
                    // SAFETY: the caller is freeing `[ptr, ptr + size)`:
                    // nobody may use it any more.
                    unsafe { super::poison::fill_large(ptr, layout.size()) };
                }
                // SAFETY: `ptr` came from `talc_alloc(layout)`.
                unsafe { talc_free(ptr, layout) }
            }
        }
    }
}
