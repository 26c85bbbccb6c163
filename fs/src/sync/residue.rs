//! A test allocator that finds secrets left in freed heap memory: before a
//! block goes back to the system allocator (freed, or moved away by a
//! `realloc`), [`ResidueWatch`] looks in it for a byte pattern set with
//! [`watch`] — as given, and as UTF-16LE when the pattern is ASCII (the
//! form an NT hash is taken over) — and counts the blocks that held it
//! ([`found`]). A test binary installs it as its `#[global_allocator]` to
//! show that a password or key is zeroed before its memory is freed.
//!
//! It sees the heap only: copies on the stack are out of its reach.
//! Touches three global atomics and the system allocator; it never
//! allocates.

use core::sync::atomic::{AtomicPtr, AtomicUsize, Ordering};
use std::alloc::{GlobalAlloc, Layout, System};

/// The pattern looked for (a `&'static [u8]`: pointer and length).
static PATTERN: AtomicPtr<u8> = AtomicPtr::new(core::ptr::null_mut());
static PATTERN_LEN: AtomicUsize = AtomicUsize::new(0);
/// Freed blocks that held the pattern since [`watch`].
static FOUND: AtomicUsize = AtomicUsize::new(0);

/// Looks for `pattern` (non-empty) in every block freed from now on, and
/// resets the count.
pub fn watch(pattern: &'static [u8]) {
    PATTERN_LEN.store(0, Ordering::SeqCst);
    PATTERN.store(pattern.as_ptr().cast_mut(), Ordering::SeqCst);
    PATTERN_LEN.store(pattern.len(), Ordering::SeqCst);
    FOUND.store(0, Ordering::SeqCst);
}

/// Freed blocks that held the pattern since [`watch`].
pub fn found() -> usize {
    FOUND.load(Ordering::SeqCst)
}

/// Whether `block` holds `p` as given, or (ASCII `p`) as UTF-16LE.
pub fn holds(block: &[u8], p: &[u8]) -> bool {
    let n = p.len();
    if n == 0 {
        return false;
    }
    let plain = block.windows(n).any(|w| w == p);
    let wide = p.is_ascii()
        && block.len() >= 2 * n
        && (0..=block.len() - 2 * n).any(|i| {
            p.iter()
                .enumerate()
                .all(|(k, &c)| block[i + 2 * k] == c && block[i + 2 * k + 1] == 0)
        });
    plain || wide
}

/// Counts `block` if it holds the watched pattern.
fn inspect(block: &[u8]) {
    let len = PATTERN_LEN.load(Ordering::SeqCst);
    let ptr = PATTERN.load(Ordering::SeqCst);
    if len == 0 || ptr.is_null() {
        return;
    }
    // SAFETY: `watch` stored the pointer and length of a `&'static [u8]`
    // (the length is cleared first and set last, so a non-zero length is
    // never paired with an older, longer pattern's pointer).
    let p = unsafe { core::slice::from_raw_parts(ptr.cast_const(), len) };
    if holds(block, p) {
        FOUND.fetch_add(1, Ordering::SeqCst);
    }
}

/// The system allocator, inspecting every block before it is freed.
pub struct ResidueWatch;

// SAFETY: every method forwards to `System` with the caller's arguments
// unchanged, so `System`'s guarantees are the caller's; the inspection
// only reads a block the caller still owns, and never allocates.
unsafe impl GlobalAlloc for ResidueWatch {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: the caller's contract for `alloc` is `System::alloc`'s.
        unsafe { System.alloc(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: `ptr` came from `System` with `layout` and is still live,
        // as the caller promises: its `layout.size()` bytes may be read.
        inspect(unsafe { core::slice::from_raw_parts(ptr, layout.size()) });
        // SAFETY: as above.
        unsafe { System.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: as `dealloc`: the old block is live until `System.realloc`.
        let before = unsafe { core::slice::from_raw_parts(ptr, layout.size()) };
        let len = PATTERN_LEN.load(Ordering::SeqCst);
        let ptr_p = PATTERN.load(Ordering::SeqCst);
        let held = len != 0 && !ptr_p.is_null() && {
            // SAFETY: as in `inspect`.
            let p = unsafe { core::slice::from_raw_parts(ptr_p.cast_const(), len) };
            holds(before, p)
        };
        // SAFETY: the caller's contract for `realloc` is `System::realloc`'s.
        let q = unsafe { System.realloc(ptr, layout, new_size) };
        // A block moved away was freed with its old bytes in it.
        if held && !q.is_null() && q != ptr {
            FOUND.fetch_add(1, Ordering::SeqCst);
        }
        q
    }
}
