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
//! Used for `d_seq` (a dentry's name/parent/inode), a directory's child
//! sequence (the noalloc design), `rename_lock` and `mount_lock`.

use super::atomic::{fence, spin_loop, AtomicU32, Ordering};

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
        loop {
            let s = self.seq.load(Ordering::Acquire);
            if s & 1 == 0 {
                return s;
            }
            spin_loop();
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
}
