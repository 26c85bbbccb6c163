//! Per-CPU event counters of the lookup path.
//!
//! Each CPU increments only its own cache-line-aligned slot (a relaxed
//! add to a line no other CPU writes), so counting never adds the shared-line
//! traffic it is meant to measure. Readers sum the slots; a sum taken while
//! others run is a snapshot, exact once they stop.
//!
//! `transfers` counts cache-line transfers: stores to a shared line whose
//! previous writer was another CPU. Every counted line carries the id of
//! its last writer, either inside the word its RMW already writes (the
//! lockref keeps it in spare bits of its cmpxchg word, see [`writer_bits`])
//! or in a [`LastWriter`] beside the lock word, written only when it changes
//! (a store to a line this CPU has just written, so it moves nothing). Paths
//! without shared stores (noalloc, negative hits) pay nothing for it.
//!
//! The *line census* ([`census_begin`] .. [`census_end`], `census.rs`) is
//! a measuring aid for `bench predict`: while it is on, every counted store
//! (and the `Arc` counts and list heads that carry no tag) and every lock
//! hold is also booked against its line's address, with the visits, the
//! stores inside the line's own holds and the tasks that stored, so a
//! 1-CPU run can name the lines tasks share and what each costs. Off, it
//! costs one relaxed load of a read-mostly flag per booked store. It also
//! times windows of each operation ([`census_windows`]): how long a dentry
//! stays hashed, how long a walk runs after an RCU-walk miss, and how long
//! that miss takes to look again in `d_alloc_parallel`.
//!
//! Touches: the platform's `cpu_id` and `now_ns`, nothing else.

use crate::platform::{self, MAX_CPUS};
use core::sync::atomic::{AtomicU16, AtomicU64, Ordering};

mod census;
pub use census::{
    census_arc, census_arc_ptr, census_begin, census_end, census_fast_path, census_hashed,
    census_line_store, census_parallel_lookup, census_task, census_unhashed, census_untagged_store,
    census_walk_done, census_windows, census_windows_begin, hold_end, hold_start, CensusArcDrop,
    CensusWindows, LineCensus,
};
use census::{census_slow_begin, census_store};

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
    /// `try_to_unlazy` found the dentry dead (killed after the walk
    /// stepped on it) when it came to take the reference: the handover
    /// failed and the walk restarts. Counted besides the reason the
    /// handover was asked for, so one such walk counts two fallbacks.
    Dead = 4,
    /// The filesystem asked for revalidation (network filesystems).
    Revalidate = 5,
    /// The walk needs a counted reference for its caller (`take_ref`: the
    /// parent of the last component for create, mkdir, unlink, rename …).
    Other = 6,
    /// A dentry or inode the RCU-walk stood on had its canary not live: it
    /// was freed memory (see `crate::poison`, counted also in
    /// `poison_seen`). Nothing read there is believed; the walk restarts.
    Poisoned = 7,
}

// No `symlink` reason: a symlink's body lives in its inode, immutable from
// creation, so RCU-walk reads it without leaving (Linux's `i_link` fast
// path); nothing here needs references to read one.

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
        FallbackReason::Revalidate,
        FallbackReason::Other,
        FallbackReason::Poisoned,
    ];

    /// Short name for reports and traces.
    pub fn name(self) -> &'static str {
        match self {
            FallbackReason::CacheMiss => "cache_miss",
            FallbackReason::DentrySeq => "d_seq",
            FallbackReason::DirSeq => "dir_seq",
            FallbackReason::GlobalSeq => "global_seq",
            FallbackReason::Dead => "dead",
            FallbackReason::Revalidate => "revalidate",
            FallbackReason::Other => "other",
            FallbackReason::Poisoned => "poisoned",
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
    /// Stores to a shared line whose previous writer was another CPU (the
    /// line had to move here): see the module doc.
    pub transfers: u64,
    /// Dentries reclaimed by the shrinker.
    pub shrunk: u64,
    /// RCU readers that found a dentry or inode canary not live: they stood
    /// on freed (dropped or poisoned) memory. Always 0 in a correct kernel
    /// (see `crate::poison`).
    pub poison_seen: u64,
    /// Allocations refused (each one an `ENOMEM` answer): memory below the
    /// platform's reserve even after reclaim, or fault injection.
    pub enomem: u64,
    /// Lock waiters that gave their CPU away after a long spin
    /// ([`crate::sync::spinwait`]): more spinning threads than CPUs. 0 in
    /// the guest, and in a host benchmark with a core per thread.
    pub spin_yields: u64,
    /// Lock waits that lasted past the yield threshold where waiters do
    /// not yield (a host benchmark with a core per thread: the holder or
    /// the next owner was off its CPU, preempted by another thread of
    /// the process or of the machine), one per threshold's length waited.
    /// 0 in the guest.
    pub spin_long_waits: u64,
    /// Misses that allocated a dentry, then found the name hashed by
    /// another lookup when `d_alloc_parallel` looked in the dcache again:
    /// they free theirs and use that one (they count in `dentry_alloc`
    /// too, but ask the filesystem nothing). 0 on one CPU.
    pub parallel_found: u64,
    /// Times `d_alloc_parallel` found another lookup of the same name in
    /// the in-lookup table and waited for it to finish (Linux sleeps in
    /// `d_wait_lookup`). 0 on one CPU.
    pub in_lookup_waits: u64,
    /// `membarrier(2)` calls of host mode's RCU ([`crate::sync::host`]):
    /// a grace period that could not rely on its threads' quiescent-state
    /// reports interrupted every CPU running one of them. Process-wide,
    /// not per CPU; 0 in the guest.
    pub membarriers: u64,
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
            transfers: self.transfers.saturating_sub(earlier.transfers),
            spin_yields: self.spin_yields.saturating_sub(earlier.spin_yields),
            spin_long_waits: self.spin_long_waits.saturating_sub(earlier.spin_long_waits),
            parallel_found: self.parallel_found.saturating_sub(earlier.parallel_found),
            in_lookup_waits: self.in_lookup_waits.saturating_sub(earlier.in_lookup_waits),
            membarriers: self.membarriers.saturating_sub(earlier.membarriers),
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
    Transfer,
    SpinYield,
    SpinLongWait,
    ParallelFound,
    InLookupWait,
}
/// Keep in step with the last variant of [`Event`].
const NR_EVENTS: usize = Event::InLookupWait as usize + 1;
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
    bump(NR_EVENTS + r as usize, 1);
    // The walk leaves RCU-walk for the name (a miss, or a dentry that
    // changed or died under it: at N CPUs, another CPU's transient dentry
    // being killed): its slow part begins, if it had not already.
    if matches!(
        r,
        FallbackReason::CacheMiss | FallbackReason::DentrySeq | FallbackReason::Dead
    ) {
        census_slow_begin();
    }
}

/// Sum of all CPUs' counters.
pub fn snapshot() -> Counters {
    let mut sum = [0u64; SLOTS];
    for slot in PER_CPU.iter() {
        for (i, c) in slot.c.iter().enumerate() {
            sum[i] = sum[i].wrapping_add(c.load(Ordering::Relaxed));
        }
    }
    counters(sum)
}

/// The calling CPU's counters alone (a test's own thread, undisturbed by
/// what other threads count meanwhile).
pub fn snapshot_this_cpu() -> Counters {
    let cpu = platform::get().cpu_id() % MAX_CPUS;
    let mut v = [0u64; SLOTS];
    for (i, c) in PER_CPU[cpu].c.iter().enumerate() {
        v[i] = c.load(Ordering::Relaxed);
    }
    counters(v)
}

/// Host mode's `membarrier(2)` calls so far (none without it).
fn membarriers() -> u64 {
    #[cfg(all(feature = "std", not(loom)))]
    {
        crate::sync::host::membarrier_calls()
    }
    #[cfg(not(all(feature = "std", not(loom))))]
    {
        0
    }
}

fn counters(sum: [u64; SLOTS]) -> Counters {
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
        transfers: sum[Event::Transfer as usize],
        shrunk: sum[Event::Shrunk as usize],
        poison_seen: sum[Event::PoisonSeen as usize],
        enomem: sum[Event::Enomem as usize],
        spin_yields: sum[Event::SpinYield as usize],
        spin_long_waits: sum[Event::SpinLongWait as usize],
        parallel_found: sum[Event::ParallelFound as usize],
        in_lookup_waits: sum[Event::InLookupWait as usize],
        membarriers: membarriers(),
    }
}

/// This CPU's writer tag: `cpu_id + 1` (0 means "nobody wrote it yet", a
/// line fresh from the allocator, which no other CPU had to give up).
#[inline]
pub fn writer_tag() -> u16 {
    (platform::get().cpu_id() % MAX_CPUS) as u16 + 1
}

/// Count a store by this CPU (tag `me`) to a line whose last writer was
/// `prev`: a transfer unless the line was fresh or already ours.
#[inline]
pub fn count_transfer(prev: u16, me: u16) {
    if prev != 0 && prev != me {
        inc(Event::Transfer);
    }
}

/// Helpers for a lock word that keeps its last writer's tag in spare bits:
/// `shift` is where the [`WRITER_BITS`]-wide field starts.
pub mod writer_bits {
    /// Width of the tag field (tags go up to `MAX_CPUS`).
    pub const WRITER_BITS: u32 = 9;
    const MASK: u64 = (1 << WRITER_BITS) - 1;
    /// The tag stored in `w`.
    #[inline]
    pub fn get(w: u64, shift: u32) -> u16 {
        ((w >> shift) & MASK) as u16
    }
    /// `w` with its tag replaced by `tag`.
    #[inline]
    pub fn set(w: u64, shift: u32, tag: u16) -> u64 {
        (w & !(MASK << shift)) | ((tag as u64 & MASK) << shift)
    }
}

/// The last writer of a line, kept beside a lock word that has no room for
/// it. Call [`LastWriter::note`] right after a store to the lock word; it
/// writes only when the writer changed, to the line this CPU now owns.
pub struct LastWriter(AtomicU16);

impl Default for LastWriter {
    fn default() -> Self {
        Self::new()
    }
}

impl LastWriter {
    /// Nobody wrote the line yet.
    pub const fn new() -> Self {
        LastWriter(AtomicU16::new(0))
    }

    /// This CPU just stored to the line at `line` (its address, for the
    /// census): count a transfer if another CPU wrote it last.
    #[inline]
    pub fn note(&self, line: usize) {
        let me = writer_tag();
        let prev = self.0.load(Ordering::Relaxed);
        if prev != me {
            self.0.store(me, Ordering::Relaxed);
            count_transfer(prev, me);
        }
        census_store(line);
    }
}
