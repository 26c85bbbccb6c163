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
//! Race points ([`RacePoint`], [`arm_race`]): the same module's other
//! half, for races instead of allocations. A test arms one on its thread
//! and the VFS operation under test runs the test's operation at that
//! exact place (between its lookups and its locks): the races of
//! `fs/tests/vfs_races.rs` without a loop.
//!
//! Touches: three global atomics; for race points one more and a
//! thread-local.

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

// Race points: a deterministic place for a test's own operation.
//
// The walk's step sink (`vfsh race`, `crate::walk_event`) runs a command at
// a step of an RCU-walk. The races of the operations that change the
// namespace sit later: between an operation's lookups (done, references
// held, no lock) and the locks that make its checks true (a rename's
// `i_rwsem`s, a mount's hold on its mountpoint). A race point is such a
// place: a test arms it on its own thread with what to run there (another
// operation, on the same thread, which therefore runs entirely inside the
// window), and the operation under test calls [`race_point`] there. One
// shot: disarmed before it runs, so the operation it runs passes its own
// race points untouched.
//
// Cost when nothing is armed anywhere: one relaxed load of a line nobody
// writes. Without `std` (the kernel) race points compile to nothing.

/// Where an operation can let a test's operation in (see above).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RacePoint {
    /// `rename`: both parents looked up and held; `rename_lock` and their
    /// `i_rwsem`s not taken yet.
    RenameLookup,
    /// `rename`: `rename_lock` held and both parents' inodes in hand; their
    /// `i_rwsem`s not taken yet (what runs here must not rename: it would
    /// wait for `rename_lock` forever).
    RenameLock,
    /// `mount`: the mountpoint looked up and held, its inode in hand; its
    /// `i_rwsem` and `mount_lock` not taken yet.
    Mount,
    /// `rmdir`: the parent looked up and held; its `i_rwsem` not taken yet.
    Rmdir,
    /// `umount`: the mount looked up and counted; `mount_lock` not taken
    /// yet (what runs here adds to its count only while it runs).
    Umount,
    /// A walk's `lookup_slow`: the directory held and its inode in hand;
    /// its `i_rwsem` not taken yet (what runs here may take it: rmdir of
    /// that directory, a rename over it).
    LookupSlow,
}

#[cfg(feature = "std")]
mod race {
    use super::RacePoint;
    use core::sync::atomic::{AtomicUsize, Ordering};
    use std::boxed::Box;
    use std::cell::RefCell;

    /// Threads with a race point armed (so that everyone else skips the
    /// thread-local).
    static ARMED: AtomicUsize = AtomicUsize::new(0);

    type Armed = (RacePoint, Box<dyn FnOnce()>);

    std::thread_local! {
        static HOOK: RefCell<Option<Armed>> = const { RefCell::new(None) };
    }

    pub fn arm(point: RacePoint, f: Box<dyn FnOnce()>) {
        HOOK.with(|h| {
            if h.borrow_mut().replace((point, f)).is_none() {
                ARMED.fetch_add(1, Ordering::Relaxed);
            }
        });
    }

    pub fn disarm() -> bool {
        HOOK.with(|h| {
            let was = h.borrow_mut().take().is_some();
            if was {
                ARMED.fetch_sub(1, Ordering::Relaxed);
            }
            was
        })
    }

    #[inline]
    pub fn at(point: RacePoint) {
        if ARMED.load(Ordering::Relaxed) != 0 {
            at_slow(point);
        }
    }

    #[cold]
    fn at_slow(point: RacePoint) {
        let f = HOOK.with(|h| {
            let mut h = h.borrow_mut();
            if h.as_ref().is_some_and(|(p, _)| *p == point) {
                ARMED.fetch_sub(1, Ordering::Relaxed);
                h.take().map(|(_, f)| f)
            } else {
                None
            }
        });
        if let Some(f) = f {
            f();
        }
    }
}

/// Run `f` on this thread the next time one of its operations reaches
/// `point` (replacing what was armed before). Tests only.
#[cfg(feature = "std")]
pub fn arm_race(point: RacePoint, f: impl FnOnce() + 'static) {
    race::arm(point, std::boxed::Box::new(f));
}

/// Disarm this thread's race point; true if it had not fired.
#[cfg(feature = "std")]
pub fn disarm_race() -> bool {
    race::disarm()
}

/// An operation reached `point`: run what this thread armed there, if
/// anything.
#[inline(always)]
pub(crate) fn race_point(point: RacePoint) {
    #[cfg(feature = "std")]
    race::at(point);
    #[cfg(not(feature = "std"))]
    let _ = point;
}
