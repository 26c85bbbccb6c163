//! Allocation fault injection: make the fs crate's allocations fail on
//! purpose, deterministically (Linux's `failslab`, reduced to its
//! `interval` knob).
//!
//! With [`fail_every`]`(n)` set, every `n`-th allocation the fs asks
//! [`crate::mem::admit`] about is refused, as if the allocator had run dry;
//! the caller then sees `ENOMEM`. `n = 1` refuses all of them. Tests use it
//! on the host (`fs/tests/enomem.rs`) and the guest sets it from the
//! `failslab=N` kernel command-line word.
//!
//! Cost when off: one relaxed load of a line nobody writes, on the paths
//! that allocate anyway (never on the noalloc lookup path, which asks
//! nothing). When on, the count is one shared atomic: injection is for
//! tests, not for measuring.
//!
//! Touches: three global atomics.

use core::sync::atomic::{AtomicU64, Ordering};

/// 0: off; else the interval.
static EVERY: AtomicU64 = AtomicU64::new(0);
/// Admissions asked since the interval was set.
static CALLS: AtomicU64 = AtomicU64::new(0);
/// Admissions refused by injection, ever.
static INJECTED: AtomicU64 = AtomicU64::new(0);

/// Refuse every `n`-th fs allocation from now on (counting restarts at
/// this call, so the `n`-th next one fails first); `0` turns injection off.
pub fn fail_every(n: u64) {
    CALLS.store(0, Ordering::Relaxed);
    EVERY.store(n, Ordering::Release);
}

/// Turn injection off.
pub fn off() {
    fail_every(0);
}

/// The interval in force (0: off).
pub fn interval() -> u64 {
    EVERY.load(Ordering::Relaxed)
}

/// How many allocations injection has refused so far.
pub fn injected() -> u64 {
    INJECTED.load(Ordering::Relaxed)
}

/// Should this allocation fail on purpose?
#[inline]
pub(crate) fn should_fail() -> bool {
    let n = EVERY.load(Ordering::Relaxed);
    n != 0 && should_fail_slow(n)
}

#[cold]
fn should_fail_slow(n: u64) -> bool {
    let call = CALLS.fetch_add(1, Ordering::Relaxed) + 1;
    if call.is_multiple_of(n) {
        INJECTED.fetch_add(1, Ordering::Relaxed);
        true
    } else {
        false
    }
}
