//! Canaries: how an RCU reader notices that it stands on freed memory.
//!
//! Mental model: a dentry or inode that an RCU-walk reached without a
//! reference must stay allocated until the walk's guard is dropped (the
//! grace period). If that promise is ever broken, the reader is looking at
//! memory that was freed and maybe refilled. To see it, each such object
//! carries a [`Canary`]: one word set to a per-type *live* value when it is
//! built and overwritten with [`FREED`] when it is dropped. The guest
//! allocator (`kernel/src/mm/poison.rs`, when poisoning is on) then fills
//! the whole freed object with [`FREE_BYTE`] (Linux's `POISON_FREE`), so
//! the word reads [`FREE_WORD`]. A reader compares the canary with the live
//! value before it reads anything else of the object: one relaxed load and
//! a compare, no store (the lock-free walk must not store to shared lines).
//! A mismatch is counted ([`seen`], `stats::Counters::poison_seen`) and the
//! walk stops trusting the object; nothing panics.
//!
//! Best effort, by nature: memory that was freed and already reused for a
//! new object of the same type carries a live canary again, and a reader
//! that checks just before the free and reads just after is not caught.
//! A run that sees any poison has found an RCU bug; one that sees none has
//! not proved there is none, but every check on the way had a chance.
//!
//! Touches: the per-CPU counters of [`crate::stats`]; safe code only.

use core::sync::atomic::{AtomicU64, Ordering};

use crate::stats::{self, Event};

/// The byte the guest allocator fills freed memory with (Linux
/// `POISON_FREE`, `include/linux/poison.h`). The kernel's allocator uses this
/// constant, so the two sides cannot disagree.
pub const FREE_BYTE: u8 = 0x6b;

/// A word of freed, poisoned memory.
pub const FREE_WORD: u64 = u64::from_ne_bytes([FREE_BYTE; 8]);

/// What a canary holds once its object has been dropped (before the
/// allocator, if poisoning, overwrites it with [`FREE_WORD`]).
pub const FREED: u64 = 0xdead_f7ee_dead_f7ee;

/// The live value of a dentry's canary.
pub const DENTRY_LIVE: u64 = 0xd3e7_0001_c0de_0a11;

/// The live value of an inode's canary.
pub const INODE_LIVE: u64 = 0x1a0d_0002_c0de_0a11;

/// One word that says "this object is alive" while it holds `LIVE`.
pub struct Canary<const LIVE: u64> {
    word: AtomicU64,
}

impl<const LIVE: u64> Default for Canary<LIVE> {
    fn default() -> Self {
        Self::new()
    }
}

impl<const LIVE: u64> Canary<LIVE> {
    /// A live canary (for a new object).
    pub const fn new() -> Self {
        Canary {
            word: AtomicU64::new(LIVE),
        }
    }

    /// Is the object still alive? One relaxed load: the reader needs no
    /// ordering, only the value (a freed object's canary was overwritten
    /// before the memory could be handed to anyone else).
    #[inline(always)]
    pub fn is_live(&self) -> bool {
        self.word.load(Ordering::Relaxed) == LIVE
    }

    /// The raw word (reports and tests).
    pub fn word(&self) -> u64 {
        self.word.load(Ordering::Relaxed)
    }

    /// The canary's address, for tests that look at the word after the
    /// object is gone (`kernel/src/selftest.rs`).
    pub fn addr(&self) -> usize {
        self.word.as_ptr() as usize
    }
}

impl<const LIVE: u64> Canary<LIVE> {
    /// Mark the object dead (its destructor). An atomic store on purpose:
    /// the compiler may delete a plain store to memory that is freed right
    /// after, it keeps an atomic one.
    fn mark_freed(&self) {
        self.word.store(FREED, Ordering::Relaxed);
    }
}

impl<const LIVE: u64> Drop for Canary<LIVE> {
    fn drop(&mut self) {
        self.mark_freed();
    }
}

/// What a canary word says, for reports.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Reading {
    /// The live value.
    Live,
    /// Dropped, not (yet) poisoned by the allocator.
    Freed,
    /// Filled by the allocator: freed memory.
    Poison,
    /// Anything else (reused for something else, or never a canary).
    Garbage,
}

/// Classify a canary word against `live`.
pub fn read_word(word: u64, live: u64) -> Reading {
    match word {
        w if w == live => Reading::Live,
        FREED => Reading::Freed,
        FREE_WORD => Reading::Poison,
        _ => Reading::Garbage,
    }
}

/// Count one read of freed memory on this CPU. Cold: a correct kernel never
/// calls it.
#[cold]
#[inline(never)]
pub fn seen() {
    stats::inc(Event::PoisonSeen);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn free_word_is_the_byte_repeated() {
        assert_eq!(FREE_WORD, 0x6b6b_6b6b_6b6b_6b6b);
    }

    #[test]
    fn live_until_marked_freed() {
        let c: Canary<DENTRY_LIVE> = Canary::new();
        assert!(c.is_live());
        assert_eq!(read_word(c.word(), DENTRY_LIVE), Reading::Live);
        // A canary of another type is not live for this one.
        assert_eq!(read_word(c.word(), INODE_LIVE), Reading::Garbage);
        // What the destructor does, observed on a canary that still exists.
        c.mark_freed();
        assert!(!c.is_live());
        assert_eq!(read_word(c.word(), DENTRY_LIVE), Reading::Freed);
    }

    #[test]
    fn poison_reads_as_poison() {
        assert_eq!(read_word(FREE_WORD, INODE_LIVE), Reading::Poison);
        assert_eq!(read_word(FREE_WORD, DENTRY_LIVE), Reading::Poison);
        assert_eq!(read_word(0, DENTRY_LIVE), Reading::Garbage);
    }
}
