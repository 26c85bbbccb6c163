//! Per-CPU event counters of the lookup path.
//!
//! Each CPU increments only its own cache-line-aligned slot (a relaxed
//! add to a line no other CPU writes), so counting never adds the shared-line
//! traffic it is meant to measure. Readers sum the slots; a sum taken while
//! others run is a snapshot, exact once they stop.
//!
//! Touches: the platform's `cpu_id`, nothing else.

use crate::platform::{self, MAX_CPUS};
use core::sync::atomic::{AtomicU64, Ordering};

/// Why an RCU-walk handed over to ref-walk (or restarted).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(usize)]
pub enum FallbackReason {
    /// The dcache had no entry and the design asked the filesystem
    /// (`lookup_slow` needs the directory lock).
    CacheMiss = 0,
    /// A dentry's `d_seq` changed under us (rename, unlink, instantiate).
    DentrySeq = 1,
    /// The directory's child sequence changed during a noalloc miss.
    DirSeq = 2,
    /// `mount_lock` or `rename_lock` changed during the walk.
    GlobalSeq = 3,
    /// A dentry died before we could take a reference.
    Dead = 4,
    /// A symlink body had to be read with references.
    Symlink = 5,
    /// The filesystem asked for revalidation (network filesystems).
    Revalidate = 6,
    /// Anything else: creation, `..` at a mount root, ...
    Other = 7,
}

/// Number of [`FallbackReason`] variants.
pub const NR_FALLBACK_REASONS: usize = 8;

impl FallbackReason {
    /// All reasons, in counter order.
    pub const ALL: [FallbackReason; NR_FALLBACK_REASONS] = [
        FallbackReason::CacheMiss,
        FallbackReason::DentrySeq,
        FallbackReason::DirSeq,
        FallbackReason::GlobalSeq,
        FallbackReason::Dead,
        FallbackReason::Symlink,
        FallbackReason::Revalidate,
        FallbackReason::Other,
    ];

    /// Short name for reports and traces.
    pub fn name(self) -> &'static str {
        match self {
            FallbackReason::CacheMiss => "cache_miss",
            FallbackReason::DentrySeq => "d_seq",
            FallbackReason::DirSeq => "dir_seq",
            FallbackReason::GlobalSeq => "global_seq",
            FallbackReason::Dead => "dead",
            FallbackReason::Symlink => "symlink",
            FallbackReason::Revalidate => "revalidate",
            FallbackReason::Other => "other",
        }
    }
}

/// The counters, one field per event. Summed over CPUs by [`snapshot`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Counters {
    /// Path walks started (`filename_lookup` calls).
    pub lookups: u64,
    /// Walks that completed entirely in RCU mode.
    pub rcu_walks: u64,
    /// RCU-walk → ref-walk handovers or restarts, total.
    pub fallbacks: u64,
    /// The same, by [`FallbackReason`].
    pub fallbacks_by_reason: [u64; NR_FALLBACK_REASONS],
    /// Dentries allocated / freed (freed = destructor ran after RCU).
    pub dentry_alloc: u64,
    pub dentry_free: u64,
    /// Negative dentries created / destroyed (current = difference).
    pub negative_created: u64,
    pub negative_destroyed: u64,
    /// Lookups answered ENOENT.
    pub enoent: u64,
    /// Locks taken on the lookup path (spinlocks, rwsems, bucket locks).
    pub locks: u64,
    /// Atomic stores/RMWs to cache lines other CPUs also write (lockref
    /// updates, lock acquire/release, refcounts) on the lookup path.
    pub shared_stores: u64,
    /// Dentries reclaimed by the shrinker.
    pub shrunk: u64,
    /// RCU readers that found a dentry or inode canary not live: they stood
    /// on freed (dropped or poisoned) memory. Always 0 in a correct kernel
    /// (see `crate::poison`).
    pub poison_seen: u64,
    /// Allocations refused (each one an `ENOMEM` answer): memory below the
    /// platform's reserve even after reclaim, or fault injection.
    pub enomem: u64,
}

impl Counters {
    /// Field-wise `self - earlier` (saturating), for per-interval figures.
    pub fn delta(&self, earlier: &Counters) -> Counters {
        let mut d = Counters {
            lookups: self.lookups.saturating_sub(earlier.lookups),
            rcu_walks: self.rcu_walks.saturating_sub(earlier.rcu_walks),
            fallbacks: self.fallbacks.saturating_sub(earlier.fallbacks),
            fallbacks_by_reason: [0; NR_FALLBACK_REASONS],
            dentry_alloc: self.dentry_alloc.saturating_sub(earlier.dentry_alloc),
            dentry_free: self.dentry_free.saturating_sub(earlier.dentry_free),
            negative_created: self
                .negative_created
                .saturating_sub(earlier.negative_created),
            negative_destroyed: self
                .negative_destroyed
                .saturating_sub(earlier.negative_destroyed),
            enoent: self.enoent.saturating_sub(earlier.enoent),
            locks: self.locks.saturating_sub(earlier.locks),
            shared_stores: self.shared_stores.saturating_sub(earlier.shared_stores),
            shrunk: self.shrunk.saturating_sub(earlier.shrunk),
            poison_seen: self.poison_seen.saturating_sub(earlier.poison_seen),
            enomem: self.enomem.saturating_sub(earlier.enomem),
        };
        for i in 0..NR_FALLBACK_REASONS {
            d.fallbacks_by_reason[i] =
                self.fallbacks_by_reason[i].saturating_sub(earlier.fallbacks_by_reason[i]);
        }
        d
    }
}

/// Event names understood by [`inc`].
#[derive(Clone, Copy, Debug)]
#[repr(usize)]
pub enum Event {
    Lookup = 0,
    RcuWalk,
    DentryAlloc,
    DentryFree,
    NegativeCreated,
    NegativeDestroyed,
    Enoent,
    Lock,
    SharedStore,
    Shrunk,
    PoisonSeen,
    Enomem,
}
/// Keep in step with the last variant of [`Event`].
const NR_EVENTS: usize = Event::Enomem as usize + 1;
const SLOTS: usize = NR_EVENTS + NR_FALLBACK_REASONS;

#[repr(align(128))]
struct Slot {
    c: [AtomicU64; SLOTS],
}

#[allow(clippy::declare_interior_mutable_const)]
const ZERO: AtomicU64 = AtomicU64::new(0);
#[allow(clippy::declare_interior_mutable_const)]
const SLOT: Slot = Slot { c: [ZERO; SLOTS] };
static PER_CPU: [Slot; MAX_CPUS] = [SLOT; MAX_CPUS];

#[inline]
fn bump(idx: usize, n: u64) {
    let cpu = platform::get().cpu_id() % MAX_CPUS;
    let c = &PER_CPU[cpu].c[idx];
    // Only this CPU writes this slot: a plain load+store is enough and keeps
    // the instruction cheap (no lock prefix).
    c.store(c.load(Ordering::Relaxed).wrapping_add(n), Ordering::Relaxed);
}

/// Count one event on this CPU.
#[inline]
pub fn inc(e: Event) {
    bump(e as usize, 1)
}

/// Count `n` events on this CPU.
#[inline]
pub fn add(e: Event, n: u64) {
    bump(e as usize, n)
}

/// Count a fallback from RCU-walk.
#[inline]
pub fn fallback(r: FallbackReason) {
    bump(NR_EVENTS + r as usize, 1)
}

/// Sum of all CPUs' counters.
pub fn snapshot() -> Counters {
    let mut sum = [0u64; SLOTS];
    for slot in PER_CPU.iter() {
        for (i, c) in slot.c.iter().enumerate() {
            sum[i] = sum[i].wrapping_add(c.load(Ordering::Relaxed));
        }
    }
    let mut by_reason = [0; NR_FALLBACK_REASONS];
    by_reason.copy_from_slice(&sum[NR_EVENTS..]);
    Counters {
        lookups: sum[Event::Lookup as usize],
        rcu_walks: sum[Event::RcuWalk as usize],
        fallbacks: by_reason.iter().sum(),
        fallbacks_by_reason: by_reason,
        dentry_alloc: sum[Event::DentryAlloc as usize],
        dentry_free: sum[Event::DentryFree as usize],
        negative_created: sum[Event::NegativeCreated as usize],
        negative_destroyed: sum[Event::NegativeDestroyed as usize],
        enoent: sum[Event::Enoent as usize],
        locks: sum[Event::Lock as usize],
        shared_stores: sum[Event::SharedStore as usize],
        shrunk: sum[Event::Shrunk as usize],
        poison_seen: sum[Event::PoisonSeen as usize],
        enomem: sum[Event::Enomem as usize],
    }
}
