//! Lockref: a spinlock and a reference count in one 64-bit word.
//!
//! Linux `lib/lockref.c` puts the dentry's `d_lock` and its count side by
//! side so that the common `dget`/`dput` need one `cmpxchg` instead of
//! lock-increment-unlock. We do the same:
//!
//! ```text
//!   63                               32  31                               0
//!  +-----------------------------------+----------------------------------+
//!  |  spinlock value (any LockKind)    |          count (i32)             |
//!  +-----------------------------------+----------------------------------+
//! ```
//!
//! The upper half is a spinlock of the lockref's [`LockKind`] (Linux's
//! queued spinlock by default, see [`super::rawlock`]). Fast paths (`get`,
//! `get_not_dead`, `put_return`) loop on `cmpxchg` while that half reads
//! unlocked with nobody waiting; otherwise they fall back to taking the
//! lock. Waiters of the queued and ticket locks write the upper half while
//! the lock is held, so the holder changes the count with a cmpxchg on the
//! lower half only (Linux, with the count in its own 32-bit field, uses a
//! plain store; see [`super::lockword`] on mixed-size atomics).
//! The lock also protects a `T` (the dentry's lock-protected fields), so the
//! guard hands out `&mut T` and lets its holder change the count.
//!
//! A count below zero means *dead*: the object is being torn down and no new
//! reference may be taken ([`LockRef::get_not_dead`] fails).
//!
//! Every successful atomic RMW is one `shared_stores` event in
//! [`crate::stats`], each lock acquisition one `locks` event. The last
//! writer's tag (for `transfers`) sits in a [`LastWriter`] beside the word,
//! on the same line: the queued and ticket locks use the whole upper half,
//! so the word has no room for it.

use core::cell::UnsafeCell;
use core::ops::{Deref, DerefMut};

use super::atomic::{AtomicU64, Ordering};
use super::lockword::HighHalf;
use super::rawlock::{default_kind, LockKind};
use crate::stats::{self, Event, LastWriter};

const COUNT_MASK: u64 = 0xffff_ffff;
/// The count of a dead lockref (Linux uses -128 too).
pub const DEAD: i32 = -128;

#[inline]
fn count_of(w: u64) -> i32 {
    (w & COUNT_MASK) as u32 as i32
}

#[inline]
fn with_count(w: u64, c: i32) -> u64 {
    (w & !COUNT_MASK) | (c as u32 as u64)
}

/// A spinlock + count word guarding a `T`.
pub struct LockRef<T> {
    word: AtomicU64,
    kind: LockKind,
    /// Who changed the word last (for `transfers`).
    writer: LastWriter,
    data: UnsafeCell<T>,
}

// SAFETY: `data` is only reached through a guard that holds the lock, so
// it is accessed by one thread at a time.
unsafe impl<T: Send> Sync for LockRef<T> {}
// SAFETY: moving the lockref moves the `T`.
unsafe impl<T: Send> Send for LockRef<T> {}

impl<T> LockRef<T> {
    /// Unlocked, with the given count, of the default lock kind.
    pub fn new(count: i32, data: T) -> Self {
        Self::with_kind(default_kind(), count, data)
    }

    /// Unlocked, with the given count and lock kind.
    pub fn with_kind(kind: LockKind, count: i32, data: T) -> Self {
        LockRef {
            word: AtomicU64::new(with_count(0, count)),
            kind,
            writer: LastWriter::new(),
            data: UnsafeCell::new(data),
        }
    }

    /// The lock's algorithm.
    pub fn kind(&self) -> LockKind {
        self.kind
    }

    /// Current count (a racy snapshot).
    #[inline]
    pub fn count(&self) -> i32 {
        count_of(self.word.load(Ordering::Relaxed))
    }

    /// Is it dead? (racy snapshot)
    #[inline]
    pub fn is_dead(&self) -> bool {
        self.count() < 0
    }

    /// The cmpxchg loop: apply `f` to the count while unlocked. `f` returns
    /// `None` to give up (e.g. the object is dead). Returns `Err(())` when
    /// the lock is held, so the caller takes the slow path.
    #[inline]
    fn cmpxchg_loop(&self, f: impl Fn(i32) -> Option<i32>) -> Result<Option<i32>, ()> {
        let mut old = self.word.load(Ordering::Relaxed);
        loop {
            if !self.kind.value_unlocked((old >> 32) as u32) {
                return Err(());
            }
            let Some(c) = f(count_of(old)) else {
                return Ok(None);
            };
            match self.word.compare_exchange_weak(
                old,
                with_count(old, c),
                Ordering::AcqRel,
                Ordering::Relaxed,
            ) {
                Ok(_) => {
                    stats::inc(Event::SharedStore);
                    self.writer.note(self.line());
                    stats::census_fast_path(self.line());
                    return Ok(Some(c));
                }
                Err(w) => old = w,
            }
        }
    }

    /// Take a reference unconditionally (`lockref_get`).
    pub fn get(&self) {
        if self.cmpxchg_loop(|c| Some(c + 1)).is_ok() {
            return;
        }
        let mut g = self.lock();
        g.inc();
    }

    /// Take a reference unless dead (`lockref_get_not_dead`).
    pub fn get_not_dead(&self) -> bool {
        match self.cmpxchg_loop(|c| if c < 0 { None } else { Some(c + 1) }) {
            Ok(r) => r.is_some(),
            Err(()) => {
                let mut g = self.lock();
                if g.count() < 0 {
                    false
                } else {
                    g.inc();
                    true
                }
            }
        }
    }

    /// Drop a reference if that does not take the count to zero, without
    /// locking (`lockref_put_return` + the `> 1` rule of `fast_dput`).
    /// Returns `false` when the caller must take the lock and decide what
    /// the last reference means.
    pub fn put_not_last(&self) -> bool {
        matches!(
            self.cmpxchg_loop(|c| if c > 1 { Some(c - 1) } else { None }),
            Ok(Some(_))
        )
    }

    /// Take the spinlock.
    pub fn lock(&self) -> LockRefGuard<'_, T> {
        stats::inc(Event::Lock);
        stats::inc(Event::SharedStore);
        self.kind.lock(&HighHalf(&self.word));
        self.writer.note(self.line());
        LockRefGuard {
            lr: self,
            t0: stats::hold_start(self.line()),
        }
    }

    /// The word's address (its cache line, for the census).
    #[inline]
    fn line(&self) -> usize {
        &self.word as *const _ as usize
    }

    /// Exclusive access without locking.
    pub fn get_mut(&mut self) -> &mut T {
        self.data.get_mut()
    }
}

/// Holds the lock of a [`LockRef`]: access to `T` and to the count.
pub struct LockRefGuard<'a, T> {
    lr: &'a LockRef<T>,
    /// When the hold began, for the line census (0 when it is off).
    t0: u64,
}

impl<T> LockRefGuard<'_, T> {
    /// The count (exact: nobody changes it while we hold the lock).
    pub fn count(&self) -> i32 {
        count_of(self.lr.word.load(Ordering::Relaxed))
    }

    /// Set the count. The lock stays held; fast paths keep off.
    pub fn set_count(&mut self, c: i32) {
        // A store to the line a waiter spins on (booked for the census;
        // the hold's own store, not a counted shared store).
        stats::census_line_store(self.lr.line());
        let word = &self.lr.word;
        let w = word.load(Ordering::Relaxed);
        if self.lr.kind == LockKind::Ttas {
            // Nobody else writes a word whose TTAS lock is held.
            word.store(with_count(w, c), Ordering::Relaxed);
            return;
        }
        // Waiters may be setting pending, the tail or the next ticket in
        // the upper half: replace the lower half only.
        let mut w = w;
        while let Err(now) =
            word.compare_exchange_weak(w, with_count(w, c), Ordering::Relaxed, Ordering::Relaxed)
        {
            w = now;
        }
    }

    /// count += 1
    pub fn inc(&mut self) {
        let c = self.count();
        self.set_count(c + 1);
    }

    /// count -= 1, returning the new count.
    pub fn dec(&mut self) -> i32 {
        let c = self.count() - 1;
        self.set_count(c);
        c
    }

    /// Mark dead (`lockref_mark_dead`): no new references after this.
    pub fn mark_dead(&mut self) {
        self.set_count(DEAD);
    }
}

impl<T> Deref for LockRefGuard<'_, T> {
    type Target = T;
    fn deref(&self) -> &T {
        // SAFETY: we hold the lock, so no other guard exists.
        unsafe { &*self.lr.data.get() }
    }
}

impl<T> DerefMut for LockRefGuard<'_, T> {
    fn deref_mut(&mut self) -> &mut T {
        // SAFETY: we hold the lock and `&mut self` is unique.
        unsafe { &mut *self.lr.data.get() }
    }
}

impl<T> Drop for LockRefGuard<'_, T> {
    fn drop(&mut self) {
        stats::inc(Event::SharedStore);
        stats::census_line_store(self.lr.line());
        stats::hold_end(self.lr.line(), self.t0);
        self.lr.kind.unlock(&HighHalf(&self.lr.word));
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn count_packing_survives_negative_values() {
        let lr = LockRef::new(1, ());
        assert_eq!(lr.count(), 1);
        {
            let mut g = lr.lock();
            g.mark_dead();
            assert_eq!(g.count(), DEAD);
        }
        assert!(lr.is_dead());
        assert!(!lr.get_not_dead());
        assert_eq!(lr.count(), DEAD);
    }

    #[test]
    fn put_not_last_refuses_the_last_reference() {
        let lr = LockRef::new(2, 0u32);
        assert!(lr.put_not_last());
        assert_eq!(lr.count(), 1);
        assert!(!lr.put_not_last());
        assert_eq!(lr.count(), 1);
        let mut g = lr.lock();
        assert_eq!(g.dec(), 0);
        *g += 5;
        drop(g);
        assert_eq!(lr.count(), 0);
        lr.get();
        assert_eq!(lr.count(), 1);
    }

    #[test]
    fn concurrent_get_put_balance() {
        for kind in [LockKind::Ticket, LockKind::Ttas] {
            concurrent_get_put_balance_of(kind);
        }
    }

    #[test]
    fn concurrent_get_put_balance_qspinlock() {
        concurrent_get_put_balance_of(LockKind::Qspinlock);
    }

    fn concurrent_get_put_balance_of(kind: LockKind) {
        let lr = std::sync::Arc::new(LockRef::with_kind(kind, 1, 0u64));
        let hs: Vec<_> = (0..4)
            .map(|i| {
                let lr = lr.clone();
                std::thread::spawn(move || {
                    for _ in 0..20_000 {
                        if i % 2 == 0 {
                            lr.get();
                            // The fast path refuses while the lock is held:
                            // then the slow path (under the lock) decides.
                            if !lr.put_not_last() {
                                let mut g = lr.lock();
                                assert!(g.dec() >= 1, "our reference was not the last");
                            }
                        } else {
                            let mut g = lr.lock();
                            *g += 1;
                            g.inc();
                            g.dec();
                        }
                    }
                })
            })
            .collect();
        for h in hs {
            h.join().unwrap();
        }
        assert_eq!(lr.count(), 1);
        assert_eq!(*lr.lock(), 40_000);
    }
}
