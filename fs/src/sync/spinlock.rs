//! A spinlock that owns its data, of any [`LockKind`] (Linux's queued
//! spinlock unless the benchmark asked for another), and a spinning
//! reader-writer semaphore.
//!
//! Both count what they cost in [`crate::stats`]: each acquisition is one
//! `locks` event and each atomic read-modify-write or release store one
//! `shared_stores` event, because those are the cache-line transfers that
//! stop a lookup path from scaling (the same counts for every lock kind:
//! one store to take it, one to release it). Each carries a [`LastWriter`]
//! beside its word for the `transfers` counter. Neither sleeps (the kernel
//! has no scheduler to sleep on).

use core::cell::UnsafeCell;
use core::ops::{Deref, DerefMut};

use super::atomic::{AtomicU32, Ordering};
use super::rawlock::{default_kind, LockKind};
use super::spinwait::SpinWait;
use crate::stats::{self, Event, LastWriter};

/// A spinlock protecting a `T`.
pub struct SpinLock<T> {
    /// The lock value; its meaning depends on `kind` (see [`super::rawlock`]).
    word: AtomicU32,
    kind: LockKind,
    /// Who took the lock last (for `transfers`).
    writer: LastWriter,
    data: UnsafeCell<T>,
}

// SAFETY: the lock serialises all access to `data`, so sharing the lock
// between threads is as safe as sending the `T` to each of them in turn.
unsafe impl<T: Send> Sync for SpinLock<T> {}
// SAFETY: moving the lock moves the `T`.
unsafe impl<T: Send> Send for SpinLock<T> {}

impl<T> SpinLock<T> {
    /// An unlocked lock of the default kind ([`default_kind`]) holding `v`.
    pub fn new(v: T) -> Self {
        Self::with_kind(default_kind(), v)
    }

    const_unless_loom! {
        /// An unlocked lock of kind `kind` holding `v`.
        pub fn with_kind(kind: LockKind, v: T) -> Self {
            SpinLock {
                word: AtomicU32::new(0),
                kind,
                writer: LastWriter::new(),
                data: UnsafeCell::new(v),
            }
        }
    }

    /// The algorithm this lock runs.
    pub fn kind(&self) -> LockKind {
        self.kind
    }

    /// Spin until the lock is ours.
    #[inline]
    pub fn lock(&self) -> SpinGuard<'_, T> {
        stats::inc(Event::Lock);
        stats::inc(Event::SharedStore);
        self.kind.lock(&self.word);
        self.acquired()
    }

    /// Bookkeeping of a successful acquisition: the transfer count and the
    /// census hold timer.
    #[inline]
    fn acquired(&self) -> SpinGuard<'_, T> {
        self.writer.note(self.line());
        SpinGuard {
            lock: self,
            t0: stats::hold_start(self.line()),
        }
    }

    /// The lock word's address (its cache line, for the census).
    #[inline]
    fn line(&self) -> usize {
        &self.word as *const _ as usize
    }

    /// Take the lock if it is free.
    pub fn try_lock(&self) -> Option<SpinGuard<'_, T>> {
        if self.kind.try_lock(&self.word) {
            stats::inc(Event::Lock);
            stats::inc(Event::SharedStore);
            Some(self.acquired())
        } else {
            None
        }
    }

    /// Exclusive access without locking (we own the lock itself).
    pub fn get_mut(&mut self) -> &mut T {
        self.data.get_mut()
    }
}

/// Holds a [`SpinLock`]; unlocks on drop.
pub struct SpinGuard<'a, T> {
    lock: &'a SpinLock<T>,
    /// When the hold began, for the line census (0 when it is off).
    t0: u64,
}

impl<T> Deref for SpinGuard<'_, T> {
    type Target = T;
    fn deref(&self) -> &T {
        // SAFETY: the guard exists only while we hold the lock, so no other
        // reference to `data` is live.
        unsafe { &*self.lock.data.get() }
    }
}

impl<T> DerefMut for SpinGuard<'_, T> {
    fn deref_mut(&mut self) -> &mut T {
        // SAFETY: as in `deref`, and `&mut self` makes this the only
        // reference derived from the guard.
        unsafe { &mut *self.lock.data.get() }
    }
}

impl<T> Drop for SpinGuard<'_, T> {
    fn drop(&mut self) {
        stats::inc(Event::SharedStore);
        stats::census_line_store(self.lock.line());
        stats::hold_end(self.lock.line(), self.t0);
        self.lock.kind.unlock(&self.lock.word);
    }
}

/// A spinning reader-writer semaphore guarding no data of its own: the
/// per-directory `i_rwsem`. Readers share it (`lookup_slow`), writers
/// (create, unlink, rename) exclude everyone.
pub struct RwSem {
    /// Bit 31: writer holds it. Bits 0..31: number of readers.
    state: AtomicU32,
    /// Who changed `state` last (for `transfers`).
    writer: LastWriter,
}

const WRITER: u32 = 1 << 31;

impl Default for RwSem {
    fn default() -> Self {
        Self::new()
    }
}

impl RwSem {
    const_unless_loom! {
        /// An unlocked semaphore.
        pub fn new() -> Self {
            RwSem {
                state: AtomicU32::new(0),
                writer: LastWriter::new(),
            }
        }
    }

    /// Shared acquisition.
    pub fn read(&self) -> RwReadGuard<'_> {
        stats::inc(Event::Lock);
        stats::inc(Event::SharedStore);
        let mut wait = SpinWait::new();
        loop {
            let s = self.state.load(Ordering::Relaxed);
            if s & WRITER == 0
                && self
                    .state
                    .compare_exchange_weak(s, s + 1, Ordering::Acquire, Ordering::Relaxed)
                    .is_ok()
            {
                self.writer.note(self.line());
                return RwReadGuard { sem: self };
            }
            wait.turn_on(self.line(), &|| {
                self.state.load(Ordering::SeqCst) & WRITER != 0
            });
        }
    }

    /// Exclusive acquisition.
    pub fn write(&self) -> RwWriteGuard<'_> {
        stats::inc(Event::Lock);
        stats::inc(Event::SharedStore);
        let mut wait = SpinWait::new();
        loop {
            if self
                .state
                .compare_exchange_weak(0, WRITER, Ordering::Acquire, Ordering::Relaxed)
                .is_ok()
            {
                self.writer.note(self.line());
                return RwWriteGuard { sem: self };
            }
            wait.turn_on(self.line(), &|| self.state.load(Ordering::SeqCst) != 0);
        }
    }

    /// The state word's address (its cache line, for the census).
    #[inline]
    fn line(&self) -> usize {
        &self.state as *const _ as usize
    }

    /// Exclusive acquisition if free right now.
    pub fn try_write(&self) -> Option<RwWriteGuard<'_>> {
        self.state
            .compare_exchange(0, WRITER, Ordering::Acquire, Ordering::Relaxed)
            .ok()
            .map(|_| RwWriteGuard { sem: self })
    }
}

/// Shared hold of an [`RwSem`].
pub struct RwReadGuard<'a> {
    sem: &'a RwSem,
}
impl Drop for RwReadGuard<'_> {
    fn drop(&mut self) {
        stats::inc(Event::SharedStore);
        // Another reader may have come and gone since we took it.
        self.sem.writer.note(self.sem.line());
        // SeqCst: a halted waiter sees the release or we see it (spinwait).
        self.sem.state.fetch_sub(1, Ordering::SeqCst);
        super::spinwait::wake(self.sem.line());
    }
}

/// Exclusive hold of an [`RwSem`].
pub struct RwWriteGuard<'a> {
    sem: &'a RwSem,
}
impl Drop for RwWriteGuard<'_> {
    fn drop(&mut self) {
        stats::inc(Event::SharedStore);
        self.sem.state.store(0, Ordering::SeqCst);
        super::spinwait::wake(self.sem.line());
    }
}
