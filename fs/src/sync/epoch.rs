//! The epoch machine of host mode's RCU ([`super::host`]), here so that the
//! loom models run it as host mode does.
//!
//! - A global epoch `E`. A reader entering its outermost section publishes
//!   `(E << 1) | 1` in its own slot and, unless the advancer fences for it
//!   (`membarrier`, see `host`), issues a full fence; leaving, it stores 0.
//! - The epoch may advance from `e` to `e + 1` only when every slot is
//!   either idle or was entered in epoch `e`.
//! - An object retired while the epoch read `r` may be freed once the epoch
//!   reaches `r + 2`: any reader that could have seen it entered in an
//!   epoch `<= r`, and two advances prove it has left.
//!
//! Touches: only the atomics it is given; which slot is whose, the
//! `membarrier` stand-in for the reader's fence and the callback queues
//! stay with `host`.

use super::atomic::{compiler_fence, fence, AtomicBool, AtomicU64, Ordering};

/// One reader's slot (a cache line of its own).
#[repr(align(128))]
pub struct Slot {
    /// Claimed by a thread (host mode's CPU id is the slot index).
    pub in_use: AtomicBool,
    /// 0: outside any read-side section; else `(epoch << 1) | 1`.
    state: AtomicU64,
}

impl Default for Slot {
    fn default() -> Self {
        Self::new()
    }
}

impl Slot {
    const_unless_loom! {
        /// A free, idle slot.
        pub fn new() -> Self {
            Slot {
                in_use: AtomicBool::new(false),
                state: AtomicU64::new(0),
            }
        }
    }

    /// Leave the outermost read-side section.
    #[inline]
    pub fn exit(&self) {
        self.state.store(0, Ordering::Release);
    }
}

/// The global epoch.
pub struct Epoch {
    epoch: AtomicU64,
}

impl Default for Epoch {
    fn default() -> Self {
        Self::new()
    }
}

impl Epoch {
    const_unless_loom! {
        /// Epoch 1.
        pub fn new() -> Self {
            Epoch {
                epoch: AtomicU64::new(1),
            }
        }
    }

    /// Enter the outermost read-side section in `slot`. `fence_free`: the
    /// advancer's `heavy_fence` runs a barrier on this CPU for it, so only
    /// the compiler must keep the section's loads after the slot store.
    #[inline]
    pub fn enter(&self, slot: &Slot, fence_free: bool) {
        let e = self.epoch.load(Ordering::Relaxed);
        slot.state.store((e << 1) | 1, Ordering::Relaxed);
        // Pairs with the fences in try_advance: either the advancer sees
        // us, or we see every unlink that preceded its advance.
        if fence_free {
            compiler_fence(Ordering::SeqCst);
        } else {
            fence(Ordering::SeqCst);
        }
    }

    /// The epoch an object unpublished before this call is retired in:
    /// it may be freed once [`Self::now`] reaches [`due`] of it. The fence
    /// makes the unpublish visible before the epoch is read (Linux's
    /// `smp_mb()` in `rcu_seq_snap`): a reader that entered at a later
    /// epoch read it after an advance that came after our read, and its
    /// own fence after the slot store orders its loads after that, so it
    /// cannot reach the object. Without it the unpublish may still sit in
    /// this CPU's store buffer while such a reader enters and reads.
    #[inline]
    pub fn snap(&self) -> u64 {
        fence(Ordering::SeqCst);
        self.epoch.load(Ordering::Acquire)
    }

    /// The current epoch.
    #[inline]
    pub fn now(&self) -> u64 {
        self.epoch.load(Ordering::Acquire)
    }

    /// Try to move the epoch forward by one; `slots` are every reader's,
    /// and `heavy_fence` is the advancer's half of the reader pairing (a
    /// fence, or a barrier on every reader's CPU). Returns the epoch after.
    pub fn try_advance(&self, slots: &[Slot], heavy_fence: impl Fn()) -> u64 {
        let e = self.epoch.load(Ordering::Relaxed);
        // Pairs with the reader's fence (or stands in for it).
        heavy_fence();
        for s in slots {
            let st = s.state.load(Ordering::Relaxed);
            if st & 1 == 1 && st >> 1 != e {
                return e;
            }
        }
        fence(Ordering::SeqCst);
        match self
            .epoch
            .compare_exchange(e, e + 1, Ordering::AcqRel, Ordering::Relaxed)
        {
            Ok(_) => e + 1,
            Err(now) => now,
        }
    }
}

/// Whether an object retired in epoch `retired` may be freed at epoch `now`.
#[inline]
pub fn due(retired: u64, now: u64) -> bool {
    retired + 2 <= now
}
