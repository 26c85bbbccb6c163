//! The lock word: the 32-bit value each spinlock algorithm
//! ([`super::rawlock::LockKind`]) keeps its state in, wherever it lives.
//!
//! Each algorithm keeps its state in one 32-bit value, reached through
//! [`LockWord`]: a whole `AtomicU32` (a [`super::spinlock::SpinLock`]) or
//! the upper half of the lockref's 64-bit word ([`HighHalf`]), where the
//! reference count sits in the lower half as in Linux's `lib/lockref.c`.
//! Linux reaches the halves and bytes of these words with smaller stores
//! (`smp_store_release(&lock->locked, 0)`); Rust's memory model has no
//! mixed-size atomics, so our releases are read-modify-writes of the whole
//! value (on x86 a `lock` instruction instead of a `mov`).
//!
//! ```text
//!   (pv)qspinlock 31        18 17 16 15     9  8  7        0
//!              +--------------+-----+--------+---+----------+
//!              | tail cpu + 1 | idx | (zero) | P |  locked  |
//!              +--------------+-----+--------+---+----------+
//!   ticket      31                16 15                     0
//!              +--------------------+------------------------+
//!              |        next        |         owner          |
//!              +--------------------+------------------------+
//!   ttas       bit 0: locked
//! ```
//!
//! Below every lock kind: it imports none of them.
//!
//! Touches: only the atomics it is handed.

use super::atomic::{AtomicU32, AtomicU64, Ordering};

/// A 32-bit lock value inside some atomic. Every operation acts on those 32
/// bits only: arithmetic wraps inside them and never carries out.
pub trait LockWord {
    /// The value.
    fn load(&self, order: Ordering) -> u32;
    /// Replace `old` with `new` if the value is `old` (strong: fails only
    /// when the value differs). `order` applies on success; a failure is
    /// relaxed. Returns the value seen.
    fn cas(&self, old: u32, new: u32, order: Ordering) -> Result<u32, u32>;
    /// Wrapping add; returns the previous value.
    fn fetch_add(&self, v: u32, order: Ordering) -> u32;
    /// Bitwise or; returns the previous value.
    fn fetch_or(&self, v: u32, order: Ordering) -> u32;
    /// Bitwise and; returns the previous value.
    fn fetch_and(&self, v: u32, order: Ordering) -> u32;
    /// Set the value to 0 with release ordering, where nobody else writes it
    /// meanwhile.
    fn release_zero(&self);
    /// The atomic's address: the lock's identity in the paravirt lock's
    /// hash table.
    fn addr(&self) -> usize;
}

impl LockWord for AtomicU32 {
    #[inline]
    fn load(&self, order: Ordering) -> u32 {
        AtomicU32::load(self, order)
    }
    #[inline]
    fn cas(&self, old: u32, new: u32, order: Ordering) -> Result<u32, u32> {
        self.compare_exchange(old, new, order, Ordering::Relaxed)
    }
    #[inline]
    fn fetch_add(&self, v: u32, order: Ordering) -> u32 {
        AtomicU32::fetch_add(self, v, order)
    }
    #[inline]
    fn fetch_or(&self, v: u32, order: Ordering) -> u32 {
        AtomicU32::fetch_or(self, v, order)
    }
    #[inline]
    fn fetch_and(&self, v: u32, order: Ordering) -> u32 {
        AtomicU32::fetch_and(self, v, order)
    }
    #[inline]
    fn release_zero(&self) {
        self.store(0, Ordering::Release);
    }
    #[inline]
    fn addr(&self) -> usize {
        self as *const AtomicU32 as usize
    }
}

/// The upper 32 bits of a 64-bit word whose lower half belongs to someone
/// else (the lockref's count, changed by its cmpxchg fast path).
pub struct HighHalf<'a>(pub &'a AtomicU64);

/// The lower half of the 64-bit word: not ours.
pub(crate) const LOW: u64 = 0xffff_ffff;

#[inline]
fn high(w: u64) -> u32 {
    (w >> 32) as u32
}

impl LockWord for HighHalf<'_> {
    #[inline]
    fn load(&self, order: Ordering) -> u32 {
        high(self.0.load(order))
    }
    #[inline]
    fn cas(&self, old: u32, new: u32, order: Ordering) -> Result<u32, u32> {
        let mut w = self.0.load(Ordering::Relaxed);
        loop {
            if high(w) != old {
                return Err(high(w));
            }
            let n = (w & LOW) | (u64::from(new) << 32);
            match self.0.compare_exchange(w, n, order, Ordering::Relaxed) {
                Ok(_) => return Ok(old),
                // Only the count moved: try again with it.
                Err(now) => w = now,
            }
        }
    }
    #[inline]
    fn fetch_add(&self, v: u32, order: Ordering) -> u32 {
        // A carry out of bit 63 is lost, as one out of bit 31 would be.
        high(self.0.fetch_add(u64::from(v) << 32, order))
    }
    #[inline]
    fn fetch_or(&self, v: u32, order: Ordering) -> u32 {
        high(self.0.fetch_or(u64::from(v) << 32, order))
    }
    #[inline]
    fn fetch_and(&self, v: u32, order: Ordering) -> u32 {
        high(self.0.fetch_and((u64::from(v) << 32) | LOW, order))
    }
    #[inline]
    fn release_zero(&self) {
        // The count half may change under us (fast paths refuse while the
        // lock is held, but a failed cmpxchg is no write): clear our half.
        self.0.fetch_and(LOW, Ordering::Release);
    }
    #[inline]
    fn addr(&self) -> usize {
        self.0 as *const AtomicU64 as usize
    }
}
