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
//! Promises (what lets fence-free readers' grace periods skip `membarrier`;
//! `host`'s module doc, "Grace periods without membarrier"): each slot also
//! holds an ack, its thread's promise about its *next* sections:
//! - [`Slot::quiescent`], outside any section: read `E` = `e`, fence, store
//!   `e` (release). Every later section of the thread comes after that
//!   fence, so it sees every unlink that an object retired in an epoch
//!   `< e` had (the retirer fenced before it read the older epoch); every
//!   earlier section has left its slot before the store.
//! - [`Slot::go_offline`], outside any section, before a wait: store
//!   [`OFFLINE`] (release). [`Slot::come_online`], before the next section:
//!   store 0, then fence. Either the advancer's fence precedes that fence
//!   (the section sees everything the advancer saw), or the advancer reads
//!   the 0 and has no promise.
//! - [`Epoch::try_advance`] fences, then reads the slots, then calls its
//!   `barrier`: host mode's checks [`Epoch::promised`] and pays
//!   `membarrier` only where a slot made no promise for the current epoch.
//!
//! Touches: only the atomics it is given; which slot is whose, the
//! `membarrier` stand-in for the reader's fence and the callback queues
//! stay with `host`.

use super::atomic::{compiler_fence, fence, AtomicBool, AtomicU64, Ordering};

/// An ack meaning: this slot's thread runs no section until it has
/// stored 0 and fenced ([`Slot::come_online`]). Epochs never reach it: one
/// advance per microsecond would take 584 000 years.
pub const OFFLINE: u64 = u64::MAX;

/// One reader's slot (a cache line of its own: only its thread writes it).
#[repr(align(128))]
pub struct Slot {
    /// Claimed by a thread (host mode's CPU id is the slot index).
    pub in_use: AtomicBool,
    /// 0: outside any read-side section; else `(epoch << 1) | 1`.
    state: AtomicU64,
    /// The thread's promise about its next sections (module doc): the
    /// epoch it acknowledged, 0 for none, or [`OFFLINE`].
    ack: AtomicU64,
}

impl Default for Slot {
    fn default() -> Self {
        Self::new()
    }
}

impl Slot {
    const_unless_loom! {
        /// A free, idle, offline slot.
        pub fn new() -> Self {
            Slot {
                in_use: AtomicBool::new(false),
                state: AtomicU64::new(0),
                ack: AtomicU64::new(OFFLINE),
            }
        }
    }

    /// Leave the outermost read-side section.
    #[inline]
    pub fn exit(&self) {
        self.state.store(0, Ordering::Release);
    }

    /// Outside any section: promise that every later section comes after
    /// a fence that follows a read of the current epoch (module doc).
    /// Release: the sections before it have left the slot for whoever
    /// reads the promise.
    #[inline]
    pub fn quiescent(&self, epoch: &Epoch) {
        let e = epoch.now();
        fence(Ordering::SeqCst);
        self.ack.store(e, Ordering::Release);
    }

    /// Outside any section, about to wait or exit: no section until
    /// [`Slot::come_online`]. Release, as for [`Slot::quiescent`].
    #[inline]
    pub fn go_offline(&self) {
        self.ack.store(OFFLINE, Ordering::Release);
    }

    /// Before the first section after [`Slot::go_offline`] (or after the
    /// slot was claimed): withdraw the promise, then fence (Dekker with the
    /// advancer's fence and its read of the ack).
    #[inline]
    pub fn come_online(&self) {
        self.ack.store(0, Ordering::Relaxed);
        fence(Ordering::SeqCst);
    }

    /// Does this slot promise that its thread's sections see what preceded
    /// epoch `e` (offline, or acked `e` or later)? Acquire: its sections
    /// before the promise have left the slot.
    #[inline]
    fn promises(&self, e: u64) -> bool {
        let a = self.ack.load(Ordering::Acquire);
        a == OFFLINE || a >= e
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
        // Acquire, for the fence-free reader: it must not load the
        // section's pointers before this load (a plain load on x86, whose
        // loads stay in order; `ldar` on ARMv8). A reader that saw the
        // epoch an advance made then sees every unlink that a retirer
        // ordered, with its fence, before reading the older epoch: the
        // hardware's order, which C11's fences do not give a reader without
        // one (loom finds the execution: fs/tests/loom_host_rcu.rs).
        let e = self.epoch.load(Ordering::Acquire);
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

    /// Has every slot in `slots` but the one at `skip` (the advancer's
    /// own: its thread is outside any section, and its later sections
    /// follow its own fence) promised that its sections see what preceded
    /// the current epoch? Read after the advancer's fence ([`Self::try_advance`]
    /// calls its `barrier` there). An epoch that moved on since the
    /// advancer read its own only makes this stricter (its advance then
    /// fails anyway).
    pub fn promised(&self, slots: &[Slot], skip: Option<usize>) -> bool {
        let e = self.now();
        slots
            .iter()
            .enumerate()
            .filter(|&(i, _)| Some(i) != skip)
            .all(|(_, s)| s.promises(e))
    }

    /// Try to move the epoch forward by one. `slots` names every reader's
    /// slot; it is called after the advancer's fence, so a thread that
    /// claimed a slot it does not name fenced after that fence
    /// ([`Slot::come_online`]) and sees everything before it. `barrier` is
    /// the rest of the advancer's half of the reader pairing, given the
    /// slots: nothing for readers that fence, a barrier on every reader's
    /// CPU (`membarrier`) for fence-free readers that made no promise.
    /// Returns the epoch after.
    pub fn try_advance<'a>(
        &self,
        slots: impl FnOnce() -> &'a [Slot],
        barrier: impl FnOnce(&'a [Slot]),
    ) -> u64 {
        let e = self.epoch.load(Ordering::Relaxed);
        // Pairs with the reader's fence (or with the fence of its
        // promise; `barrier` stands in for the rest).
        fence(Ordering::SeqCst);
        let slots = slots();
        barrier(slots);
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
