//! The global allocator and memory admission.
//!
//! `#[global_allocator]` is [`KernelAllocator`]: allocations of at most
//! [`slab::MAX_SMALL`] bytes (and alignment) go to the per-CPU slab, which
//! has no global lock on its fast path (so the fs crate's `Arc::new` of
//! dentries and inodes scales), the rest to talc ([`heap`]). Allocations
//! and frees are counted per CPU. With poisoning on ([`super::poison`]),
//! freed memory of both kinds is filled with the poison byte (the slab also
//! checks the fill on reuse).
//!
//! The allocator itself cannot refuse politely (a null return aborts an
//! infallible `Arc::new`), so the fs crate asks [`may_alloc`] first and
//! turns a no into `ENOMEM`; [`heap::reserve`] is the watermark it answers
//! by.
//!
//! Touches: nothing of its own; the slab's and the heap's state through
//! their functions.

use core::alloc::{GlobalAlloc, Layout};
use core::ptr::{null_mut, NonNull};

use super::heap::{self, talc_alloc, talc_free};
use super::slab;

/// Memory admission for one allocation of `bytes` (the kernel's answer to
/// `fs::platform::Platform::may_alloc`). Fast path: after the worst case
/// this allocation could take from talc (a whole slab refill for a small
/// object), the free heap stays above [`heap::reserve`]. Below that
/// watermark a small object is still admitted when the slab can serve it from free
/// objects this CPU can reach (memory the shrinker gave back), since that
/// takes nothing from talc; anything else is refused.
///
/// The answer is advisory, read without a lock: CPUs admitted at the same
/// moment may together dip into the reserve by one allocation each, which
/// the reserve is large enough to absorb.
pub fn may_alloc(bytes: usize) -> bool {
    may_alloc_above(bytes, heap::reserve())
}

/// Admission for the reserve's own users (RCU callback segments): like
/// [`may_alloc`], but down to half of [`heap::reserve`]. The lower half
/// is kept for the allocations that cannot ask at all (a CPU's result
/// vector, console formatting). A segment is a 512-byte slab object, the
/// class dentries live in: when segments could refill that class from the
/// reserve until talc was empty, admitted dentries took the refills (the
/// slab-has-free path of [`may_alloc`]) 32 KiB at a time, the whole
/// reserve went to the dcache, and the next kernel allocation panicked.
pub fn may_alloc_from_reserve(bytes: usize) -> bool {
    may_alloc_above(bytes, heap::reserve() / 2)
}

/// Would `bytes` leave the free heap at or above `floor` (in the worst
/// case), or can the slab serve it from free objects?
fn may_alloc_above(bytes: usize, floor: usize) -> bool {
    let class = Layout::from_size_align(bytes.max(1), 8)
        .ok()
        .and_then(slab::class_of);
    let worst = class.map_or(bytes, slab::refill_bytes);
    if heap::free() >= floor.saturating_add(worst) {
        return true;
    }
    class.is_some_and(slab::has_free)
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
