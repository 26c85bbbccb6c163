//! Lockref: a spinlock and a reference count in one 64-bit word.
//!
//! Linux `lib/lockref.c` puts the dentry's `d_lock` and its count side by
//! side so that the common `dget`/`dput` need one `cmpxchg` instead of
//! lock-increment-unlock. We do the same:
//!
//! ```text
//!   63     49 48      40 39   33   32  31                        0
//!  +---------+----------+-------+----+----------------------------+
//!  | unused  |  writer  |unused |LOCK|        count (i32)         |
//!  +---------+----------+-------+----+----------------------------+
//! ```
//!
//! `writer` is the last writer's tag (`cpu_id + 1`, see
//! [`crate::stats::writer_tag`]): every cmpxchg that takes the lock or
//! changes the count writes it in the same instruction, and a cmpxchg that
//! replaces another CPU's tag is one `transfers` event.
//!
//! Fast paths (`get`, `get_not_dead`, `put_return`) loop on `cmpxchg` while
//! the lock bit is clear; if it is set they fall back to taking the lock.
//! The lock also protects a `T` (the dentry's lock-protected fields), so the
//! guard hands out `&mut T` and lets its holder change the count.
//!
//! A count below zero means *dead*: the object is being torn down and no new
//! reference may be taken ([`LockRef::get_not_dead`] fails).
//!
//! Every successful atomic RMW is one `shared_stores` event in
//! [`crate::stats`], each lock acquisition one `locks` event.

use core::cell::UnsafeCell;
use core::ops::{Deref, DerefMut};

use super::atomic::{spin_loop, AtomicU64, Ordering};
use crate::stats::{self, writer_bits, Event};

const LOCK_BIT: u64 = 1 << 32;
/// Where the last writer's tag sits in the word.
const WRITER_SHIFT: u32 = 40;
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
    data: UnsafeCell<T>,
}

// SAFETY: `data` is only reached through a guard that holds the lock bit, so
// it is accessed by one thread at a time.
unsafe impl<T: Send> Sync for LockRef<T> {}
// SAFETY: moving the lockref moves the `T`.
unsafe impl<T: Send> Send for LockRef<T> {}

impl<T> LockRef<T> {
    /// Unlocked, with the given count.
    pub fn new(count: i32, data: T) -> Self {
        LockRef {
            word: AtomicU64::new(with_count(0, count)),
            data: UnsafeCell::new(data),
        }
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
        let me = stats::writer_tag();
        let mut old = self.word.load(Ordering::Relaxed);
        loop {
            if old & LOCK_BIT != 0 {
                return Err(());
            }
            let Some(c) = f(count_of(old)) else {
                return Ok(None);
            };
            match self.word.compare_exchange_weak(
                old,
                writer_bits::set(with_count(old, c), WRITER_SHIFT, me),
                Ordering::AcqRel,
                Ordering::Relaxed,
            ) {
                Ok(_) => {
                    stats::inc(Event::SharedStore);
                    self.count_store(old, me);
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

    /// Count a successful store by `me` over the word `old`: a transfer if
    /// another CPU wrote it last; booked in the line census.
    #[inline]
    fn count_store(&self, old: u64, me: u16) {
        stats::count_transfer(writer_bits::get(old, WRITER_SHIFT), me);
        stats::census_line_store(&self.word as *const _ as usize);
    }

    /// Take the spinlock.
    pub fn lock(&self) -> LockRefGuard<'_, T> {
        stats::inc(Event::Lock);
        stats::inc(Event::SharedStore);
        let me = stats::writer_tag();
        loop {
            let old = self.word.load(Ordering::Relaxed);
            if old & LOCK_BIT == 0
                && self
                    .word
                    .compare_exchange_weak(
                        old,
                        writer_bits::set(old | LOCK_BIT, WRITER_SHIFT, me),
                        Ordering::Acquire,
                        Ordering::Relaxed,
                    )
                    .is_ok()
            {
                self.count_store(old, me);
                return LockRefGuard {
                    lr: self,
                    t0: stats::hold_start(),
                };
            }
            spin_loop();
        }
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

    /// Set the count. The lock bit stays set; fast paths keep off.
    pub fn set_count(&mut self, c: i32) {
        let w = self.lr.word.load(Ordering::Relaxed);
        self.lr.word.store(with_count(w, c), Ordering::Relaxed);
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
        // SAFETY: we hold the lock bit, so no other guard exists.
        unsafe { &*self.lr.data.get() }
    }
}

impl<T> DerefMut for LockRefGuard<'_, T> {
    fn deref_mut(&mut self) -> &mut T {
        // SAFETY: we hold the lock bit and `&mut self` is unique.
        unsafe { &mut *self.lr.data.get() }
    }
}

impl<T> Drop for LockRefGuard<'_, T> {
    fn drop(&mut self) {
        stats::inc(Event::SharedStore);
        stats::hold_end(&self.lr.word as *const _ as usize, self.t0);
        // The tag stays ours: the holder wrote the word last.
        self.lr.word.fetch_and(!LOCK_BIT, Ordering::Release);
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
    fn the_writer_tag_rides_in_the_word_and_leaves_the_count_alone() {
        let lr = LockRef::new(1, ());
        let me = stats::writer_tag();
        lr.get();
        let w = lr.word.load(Ordering::Relaxed);
        assert_eq!(writer_bits::get(w, WRITER_SHIFT), me);
        assert_eq!(lr.count(), 2);
        {
            let mut g = lr.lock();
            g.dec();
            let w = lr.word.load(Ordering::Relaxed);
            assert_eq!(writer_bits::get(w, WRITER_SHIFT), me);
            assert_ne!(w & LOCK_BIT, 0);
        }
        assert_eq!(lr.count(), 1);
        assert!(!lr.is_dead());
    }

    #[test]
    fn concurrent_get_put_balance() {
        let lr = std::sync::Arc::new(LockRef::new(1, 0u64));
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
