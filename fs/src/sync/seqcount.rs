//! Sequence counters: let readers detect that a writer ran while they read.
//!
//! A writer (serialised by its own lock) makes the count odd, changes the
//! protected fields, and makes it even again. A reader samples an even count,
//! reads the fields without locking, and re-checks the count: if it changed,
//! what it read may be a mix of old and new and must be thrown away. Readers
//! never store, so any number of CPUs can validate at once.
//!
//! The protected fields must themselves be atomics (racing plain reads would
//! be undefined behaviour in Rust even if the result is discarded); the
//! orderings follow the classic fence-based pattern: writer `count+1;
//! fence(Release); stores…; count+1 (Release)`, reader `count (Acquire);
//! loads…; fence(Acquire); count`.
//!
//! Used for `d_seq` (a dentry's name/parent/inode) and a directory's child
//! sequence (the noalloc design), whose writers are serialised by locks they
//! hold anyway. [`SeqLock`] (Linux `seqlock_t`) pairs a count with its own
//! writers' lock: `rename_lock` and `mount_lock`. A count whose writers
//! hold no common lock can serve as that lock itself
//! ([`SeqCount::write_lock`]): a directory's `i_dir_seq`, bumped by
//! lookups that share the directory lock.

use super::atomic::{fence, AtomicU32, Ordering};
use super::spinlock::{SpinGuard, SpinLock};
use super::spinwait::SpinWait;

/// A sequence counter. Writers must be serialised by the caller.
pub struct SeqCount {
    seq: AtomicU32,
}

impl Default for SeqCount {
    fn default() -> Self {
        Self::new()
    }
}

impl SeqCount {
    const_unless_loom! {
        /// A counter at 0 (no writer).
        pub fn new() -> Self {
            SeqCount {
                seq: AtomicU32::new(0),
            }
        }
    }

    /// Wait until no writer is active and return the (even) count.
    #[inline]
    pub fn read_begin(&self) -> u32 {
        let mut wait = SpinWait::new();
        loop {
            let s = self.seq.load(Ordering::Acquire);
            if s & 1 == 0 {
                return s;
            }
            wait.turn();
        }
    }

    /// Sample without waiting (Linux `raw_seqcount_begin`): an active writer
    /// makes the later [`SeqCount::read_retry`] fail instead of making us wait.
    #[inline]
    pub fn raw_begin(&self) -> u32 {
        self.seq.load(Ordering::Acquire) & !1
    }

    /// Did a writer run (or is one running) since `start` was sampled?
    #[inline]
    pub fn read_retry(&self, start: u32) -> bool {
        fence(Ordering::Acquire);
        self.seq.load(Ordering::Relaxed) != start
    }

    /// The raw value (tracing).
    #[inline]
    pub fn peek(&self) -> u32 {
        self.seq.load(Ordering::Relaxed)
    }

    /// Open a write section (count becomes odd). Caller holds the writers'
    /// lock.
    #[inline]
    pub fn write_begin(&self) {
        let s = self.seq.load(Ordering::Relaxed);
        self.seq.store(s.wrapping_add(1), Ordering::Relaxed);
        fence(Ordering::Release);
    }

    /// Close a write section (count becomes even again).
    #[inline]
    pub fn write_end(&self) {
        let s = self.seq.load(Ordering::Relaxed);
        self.seq.store(s.wrapping_add(1), Ordering::Release);
    }

    /// Run `f` as one write section.
    pub fn write<R>(&self, f: impl FnOnce() -> R) -> R {
        self.write_begin();
        let r = f();
        self.write_end();
        r
    }

    /// Open a write section when nothing else serialises the writers
    /// (Linux `start_dir_add`): wait for an even count and make it odd with
    /// one compare-and-swap, so an odd count is the writers' lock. Returns
    /// the even count to hand to [`SeqCount::write_unlock`]. Readers are
    /// the same as for any section.
    #[inline]
    pub fn write_lock(&self) -> u32 {
        let mut wait = SpinWait::new();
        loop {
            let s = self.seq.load(Ordering::Relaxed);
            if s & 1 == 0
                && self
                    .seq
                    .compare_exchange_weak(
                        s,
                        s.wrapping_add(1),
                        Ordering::Acquire,
                        Ordering::Relaxed,
                    )
                    .is_ok()
            {
                // As in `write_begin`: the odd count is visible before any
                // store of the section.
                fence(Ordering::Release);
                return s;
            }
            wait.turn();
        }
    }

    /// Close a section opened by [`SeqCount::write_lock`], which returned
    /// `start` (Linux `end_dir_add`): even again, and the next writer may
    /// enter.
    #[inline]
    pub fn write_unlock(&self, start: u32) {
        self.seq.store(start.wrapping_add(2), Ordering::Release);
    }
}

/// Linux `seqlock_t`: a sequence count and the spinlock that serialises its
/// writers, in one. Readers use the count alone (no store, no lock);
/// writers take [`SeqLock::lock`] and open write sections through the
/// guard, so a write section without the lock does not compile.
///
/// The guard may be held longer than one section (a rename holds
/// `rename_lock` from its lookups to `d_move`, as Linux holds
/// `s_vfs_rename_mutex` there and `rename_lock` inside `d_move`: one lock
/// here does both).
pub struct SeqLock {
    count: SeqCount,
    lock: SpinLock<()>,
}

impl Default for SeqLock {
    fn default() -> Self {
        Self::new()
    }
}

impl SeqLock {
    /// Unlocked, count at 0.
    pub fn new() -> Self {
        SeqLock {
            count: SeqCount::new(),
            lock: SpinLock::new(()),
        }
    }

    /// Linux `read_seqbegin`: wait out a writer, return the (even) count.
    #[inline]
    pub fn read_begin(&self) -> u32 {
        self.count.read_begin()
    }

    /// Linux `raw_seqcount_begin` on the lock's count: sample without
    /// waiting (see [`SeqCount::raw_begin`]).
    #[inline]
    pub fn raw_begin(&self) -> u32 {
        self.count.raw_begin()
    }

    /// Linux `read_seqretry`: did a writer run since `start`?
    #[inline]
    pub fn read_retry(&self, start: u32) -> bool {
        self.count.read_retry(start)
    }

    /// The raw count (tracing).
    #[inline]
    pub fn peek(&self) -> u32 {
        self.count.peek()
    }

    /// Take the writers' lock (Linux `spin_lock(&sl->lock)`); write
    /// sections are opened through the guard.
    #[inline]
    pub fn lock(&self) -> SeqLockGuard<'_> {
        SeqLockGuard {
            count: &self.count,
            _lock: self.lock.lock(),
        }
    }
}

/// A [`SeqLock`]'s writers' lock, held: the only way to open its write
/// sections.
pub struct SeqLockGuard<'a> {
    count: &'a SeqCount,
    _lock: SpinGuard<'a, ()>,
}

impl SeqLockGuard<'_> {
    /// Open a write section (the count becomes odd): Linux `write_seqlock`
    /// past its lock.
    #[inline]
    pub fn write_begin(&self) {
        self.count.write_begin()
    }

    /// Close it (even again).
    #[inline]
    pub fn write_end(&self) {
        self.count.write_end()
    }

    /// Run `f` as one write section.
    pub fn write<R>(&self, f: impl FnOnce() -> R) -> R {
        self.count.write(f)
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::SeqLock;

    #[test]
    fn seqlock_write_section_fails_readers_and_holding_the_lock_alone_does_not() {
        let l = SeqLock::new();
        let s = l.read_begin();
        let g = l.lock();
        // Holding the writers' lock without a section changes nothing a
        // reader checks (a rename's lookups before `d_move`).
        assert!(!l.read_retry(s));
        g.write_begin();
        assert_eq!(l.raw_begin(), s, "raw_begin masks the odd count");
        assert!(l.read_retry(s));
        g.write_end();
        drop(g);
        assert!(l.read_retry(s));
        let s2 = l.read_begin();
        assert_eq!(s2, s + 2);
        assert_eq!(l.lock().write(|| 7), 7);
        assert!(l.read_retry(s2));
    }

    #[test]
    fn write_lock_sections_fail_readers_and_exclude_each_other() {
        use super::SeqCount;
        use std::sync::atomic::{AtomicU32, Ordering};
        let c = SeqCount::new();
        let s = c.read_begin();
        let w = c.write_lock();
        assert_eq!(w, s);
        assert!(c.read_retry(s), "an open section fails a reader");
        c.write_unlock(w);
        assert!(c.read_retry(s));
        assert_eq!(c.read_begin(), s + 2);
        // Writers on several threads, no other lock: each section sees no
        // other writer inside (a plain counter bumped in two steps stays
        // consistent) and the count ends at 2 per section.
        let inside = AtomicU32::new(0);
        std::thread::scope(|t| {
            for _ in 0..4 {
                t.spawn(|| {
                    for _ in 0..2000 {
                        let w = c.write_lock();
                        assert_eq!(inside.fetch_add(1, Ordering::Relaxed), 0);
                        inside.fetch_sub(1, Ordering::Relaxed);
                        c.write_unlock(w);
                    }
                });
            }
        });
        assert_eq!(c.read_begin(), s + 2 + 4 * 2000 * 2);
    }
}
