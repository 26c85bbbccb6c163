//! The line census: a measuring aid for `bench predict` (see the parent
//! module's docs). While it is on, every counted store and every lock hold
//! is booked against its line's address, so a 1-CPU run can name the lines
//! an operation shares and the time spent inside each lock; it also times
//! spans of each operation (those alone also at N CPUs). Off, it costs one
//! relaxed load of a read-mostly flag per counted store.
//!
//! It stays in the VFS crate although only a tool reads it: it is booked
//! from inside the lookup path (the lockref, the spinlock, `dput`, the
//! in-lookup table), as Linux's lock statistics (`CONFIG_LOCK_STAT`,
//! `kernel/locking/lockdep.c`) are booked inside the kernel; the model
//! that reads its tables lives with the benchmark (`bench/lab`, `predict`).
//!
//! Touches: the platform's `now_ns` and `cpu_id`, its own tables.

use crate::platform;
use core::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};

// ---- the line census ------------------------------------------------------
//
// Per line the census books what the model needs to price the line when
// several CPUs share it (docs/scaling-model.md):
//
// - every store, and which of them carry no transfer tag (the `Arc` counts
//   and list heads a dentry's lifetime writes: [`census_untagged_store`]);
// - *visits*: a store to a line whose previous booked store went to another
//   line. A run of stores to one line with nothing in between is one visit:
//   when CPUs take turns at the line it moves once for the run, not once per
//   store;
// - of those, the visits of a lockref's lock-free fast path (`get`, `put`),
//   which take the lock instead when they find it held;
// - stores made while this CPU holds the line's own lock (a lockref's count,
//   a list head beside the lock word, the release): free alone, but each
//   moves the line when a waiter spins on it;
// - lock holds and the time inside them;
// - the visits and in-hold stores made while the operation's own dentry is
//   hashed (the sharing window, timed below): when they move the line or
//   wait for it, the window stretches and other CPUs find the name hashed
//   longer;
// - which *tasks* stored to it (a bit per task, modulo 64): `bench
//   predict` runs two tasks' operations alternately on one thread and names
//   the task before each ([`census_task`]); a line both store to is shared
//   by every task, one only one of them stores to is that task's own (its
//   directory in `statneg-owndir`, its name's hash bucket in
//   `statneg-distinct`). Without a task named, the CPU id stands for it.

/// Lines the census can tell apart (a power of two); a line that finds
/// no free entry within [`CENSUS_PROBES`] is booked to the overflow count.
/// Only host mode runs a census (`bench predict`); the guest keeps a token
/// table.
#[cfg(feature = "std")]
const CENSUS_LINES: usize = 4096;
#[cfg(not(feature = "std"))]
const CENSUS_LINES: usize = 16;
const CENSUS_PROBES: usize = 8;

struct CensusEntry {
    addr: AtomicUsize,
    stores: AtomicU64,
    untagged: AtomicU64,
    visits: AtomicU64,
    fast: AtomicU64,
    in_hold: AtomicU64,
    holds: AtomicU64,
    hold_ns: AtomicU64,
    win_visits: AtomicU64,
    win_in_hold: AtomicU64,
    /// A bit per CPU id (modulo 64) that stored to the line.
    writers: AtomicU64,
}

#[allow(clippy::declare_interior_mutable_const)]
const ZERO: AtomicU64 = AtomicU64::new(0);
#[allow(clippy::declare_interior_mutable_const)]
const CENSUS_ENTRY: CensusEntry = CensusEntry {
    addr: AtomicUsize::new(0),
    stores: ZERO,
    untagged: ZERO,
    visits: ZERO,
    fast: ZERO,
    in_hold: ZERO,
    holds: ZERO,
    hold_ns: ZERO,
    win_visits: ZERO,
    win_in_hold: ZERO,
    writers: ZERO,
};
static CENSUS_ON: AtomicBool = AtomicBool::new(false);
static CENSUS: [CensusEntry; CENSUS_LINES] = [CENSUS_ENTRY; CENSUS_LINES];
static CENSUS_OVERFLOW: AtomicU64 = AtomicU64::new(0);
/// The line of the previous booked store (0: none), for telling visits.
static LAST_LINE: AtomicUsize = AtomicUsize::new(0);
/// The task whose operation runs now ([`census_task`]; `usize::MAX`: none
/// named, the CPU id stands for it).
static TASK: AtomicUsize = AtomicUsize::new(usize::MAX);
/// Lines whose lock is held now (the census runs on one CPU: whoever
/// holds a lock, no other task stores to its line meanwhile).
const HELD_MAX: usize = 8;
#[allow(clippy::declare_interior_mutable_const)]
const NO_LINE: AtomicUsize = AtomicUsize::new(0);
static HELD: [AtomicUsize; HELD_MAX] = [NO_LINE; HELD_MAX];

/// One line's figures over a census.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LineCensus {
    /// The line's address (64-byte aligned).
    pub addr: usize,
    /// Booked stores to it, and those of them without a transfer tag.
    pub stores: u64,
    pub untagged: u64,
    /// Visits (runs of stores with no other line's store in between) made
    /// while not holding the line's lock; of those, lockref fast paths.
    pub visits: u64,
    pub fast: u64,
    /// Stores made while holding the line's own lock.
    pub in_hold: u64,
    /// Lock holds on it, and nanoseconds spent inside them.
    pub holds: u64,
    pub hold_ns: u64,
    /// Of the visits and in-hold stores, those made while the operation's
    /// own dentry was hashed.
    pub win_visits: u64,
    pub win_in_hold: u64,
    /// A bit per task (or CPU id, see [`census_task`]; modulo 64) that
    /// stored to it.
    pub writers: u64,
}

impl LineCensus {
    /// How many tasks (modulo 64) stored to it.
    pub fn writers(&self) -> u32 {
        self.writers.count_ones()
    }
}

fn line_key(line: usize) -> usize {
    (line & !63) | 1 // never 0: 0 marks a free entry
}

/// The entry for `line`, claimed if new; `None` when the table is full.
fn census_entry(line: usize) -> Option<&'static CensusEntry> {
    let key = line_key(line);
    let start = (key >> 6).wrapping_mul(0x9e37_79b9_7f4a_7c15_u64 as usize) >> 20;
    for i in 0..CENSUS_PROBES {
        let e = &CENSUS[(start + i) % CENSUS_LINES];
        match e
            .addr
            .compare_exchange(0, key, Ordering::Relaxed, Ordering::Relaxed)
        {
            Ok(_) => return Some(e),
            Err(k) if k == key => return Some(e),
            Err(_) => {}
        }
    }
    None
}

fn held(key: usize) -> bool {
    HELD.iter().any(|h| h.load(Ordering::Relaxed) == key)
}

#[inline]
pub(super) fn census_store(line: usize) {
    if CENSUS_ON.load(Ordering::Relaxed) {
        census_store_slow(line, true);
    }
}

#[cold]
fn census_store_slow(line: usize, tagged: bool) {
    let key = line_key(line);
    let Some(e) = census_entry(line) else {
        CENSUS_OVERFLOW.fetch_add(1, Ordering::Relaxed);
        LAST_LINE.store(key, Ordering::Relaxed);
        return;
    };
    e.stores.fetch_add(1, Ordering::Relaxed);
    if !tagged {
        e.untagged.fetch_add(1, Ordering::Relaxed);
    }
    let in_window = in_own_window();
    if held(key) {
        e.in_hold.fetch_add(1, Ordering::Relaxed);
        if in_window {
            e.win_in_hold.fetch_add(1, Ordering::Relaxed);
        }
    } else if LAST_LINE.load(Ordering::Relaxed) != key {
        e.visits.fetch_add(1, Ordering::Relaxed);
        if in_window {
            e.win_visits.fetch_add(1, Ordering::Relaxed);
        }
    }
    let task = match TASK.load(Ordering::Relaxed) {
        usize::MAX => platform::get().cpu_id(),
        t => t,
    };
    e.writers.fetch_or(1 << (task % 64), Ordering::Relaxed);
    LAST_LINE.store(key, Ordering::Relaxed);
}

/// Name the task whose operation runs next, for the lines' writer sets
/// (`None`: the CPU id stands for the task again).
pub fn census_task(task: Option<usize>) {
    TASK.store(task.unwrap_or(usize::MAX), Ordering::Relaxed);
}

/// The store just booked on `line` was a lockref's lock-free fast path.
#[inline]
pub fn census_fast_path(line: usize) {
    if CENSUS_ON.load(Ordering::Relaxed) {
        if let Some(e) = census_entry(line) {
            e.fast.fetch_add(1, Ordering::Relaxed);
        }
    }
}

/// Book a counted store to `line` in the census (for locks whose word
/// carries its writer itself; [`super::LastWriter::note`] books its own).
#[inline]
pub fn census_line_store(line: usize) {
    census_store(line);
}

/// Book a store the transfer counter does not see (no writer tag): an
/// `Arc` count or a list head on a line other CPUs' lookups share.
#[inline]
pub fn census_untagged_store(line: usize) {
    if CENSUS_ON.load(Ordering::Relaxed) {
        census_store_slow(line, false);
    }
}

/// Book the reference-count update of `a` (an `Arc` clone or drop).
#[inline]
pub fn census_arc<T>(a: &alloc::sync::Arc<T>) {
    census_arc_ptr(alloc::sync::Arc::as_ptr(a));
}

/// Book the reference-count update of the `Arc` whose value is at `value`
/// (an address only: nothing is read). The counts sit in front of the
/// value, rounded up to its alignment.
#[inline]
pub fn census_arc_ptr<T>(value: *const T) {
    if CENSUS_ON.load(Ordering::Relaxed) && !value.is_null() {
        let header = 2 * core::mem::size_of::<usize>();
        let offset = header.next_multiple_of(core::mem::align_of::<T>());
        census_store_slow((value as usize).wrapping_sub(offset), false);
    }
}

/// Books the drop of an `Arc` when it goes out of scope: declare it right
/// after the `Arc` it borrows, so it drops (and books) just before it.
pub struct CensusArcDrop<'a, T>(pub &'a alloc::sync::Arc<T>);

impl<T> Drop for CensusArcDrop<'_, T> {
    fn drop(&mut self) {
        census_arc(self.0);
    }
}

/// Start timing a hold of the lock at `line` (just acquired): a
/// timestamp while the census is on, else 0 (and no clock read).
#[inline]
pub fn hold_start(line: usize) -> u64 {
    if CENSUS_ON.load(Ordering::Relaxed) {
        hold_start_slow(line)
    } else {
        0
    }
}

#[cold]
fn hold_start_slow(line: usize) -> u64 {
    let key = line_key(line);
    if let Some(h) = HELD.iter().find(|h| h.load(Ordering::Relaxed) == 0) {
        h.store(key, Ordering::Relaxed);
    }
    platform::get().now_ns().max(1)
}

/// End a hold begun with [`hold_start`] on the lock at `line` (its release
/// store already booked).
#[inline]
pub fn hold_end(line: usize, t0: u64) {
    if t0 != 0 {
        hold_end_slow(line, t0);
    }
}

#[cold]
fn hold_end_slow(line: usize, t0: u64) {
    let dt = platform::get().now_ns().saturating_sub(t0);
    let key = line_key(line);
    if let Some(h) = HELD.iter().find(|h| h.load(Ordering::Relaxed) == key) {
        h.store(0, Ordering::Relaxed);
    }
    if let Some(e) = census_entry(line) {
        e.holds.fetch_add(1, Ordering::Relaxed);
        e.hold_ns.fetch_add(dt, Ordering::Relaxed);
    }
}

// ---- the census' windows per operation -----------------------------------
//
// Besides lines, the census times spans of each operation: how long a
// dentry stays *hashed* (from its hash insert to its unhash: the window in
// which another CPU's RCU-walk of the same name would find it instead of
// missing), how long the *slow part* of a walk lasts (from an RCU-walk miss
// handing over to ref-walk, to the end of the walk), and within it the
// time to `d_alloc_parallel`'s look in the dcache and the time to the walk
// hashing a dentry of its own. `bench predict` turns them into the sharing
// term of its model.
//
// The spans are kept per CPU (a slot per CPU id, modulo [`WIN_SLOTS`], on
// its own cache line), so they can also be timed while several CPUs run
// (`census_windows_begin`, without the line census, whose shared table
// would contend): what the spans stretch to at N CPUs is what the model's
// sharing term has to predict. A dentry's unhash may come from another CPU
// than its hash (the last of the walks holding it drops it): the unhash
// looks for the slot that timed the hash.

/// CPU slots of the windows (CPU ids modulo this).
const WIN_SLOTS: usize = 64;

/// One CPU's open spans and its sums.
#[repr(align(128))]
struct WinSlot {
    /// The dentry this CPU hashed and when (0: none open).
    hashed_addr: AtomicUsize,
    hashed_since: AtomicU64,
    /// When this CPU's walk missed (0: no slow part open), and whether it
    /// hashed a dentry of its own since.
    slow_since: AtomicU64,
    slow_hashed: AtomicBool,
    hashed_n: AtomicU64,
    hashed_ns: AtomicU64,
    slow_n: AtomicU64,
    slow_ns: AtomicU64,
    lookup_n: AtomicU64,
    lookup_ns: AtomicU64,
    own_hash_n: AtomicU64,
    own_hash_ns: AtomicU64,
}

#[allow(clippy::declare_interior_mutable_const)]
const WIN_SLOT: WinSlot = WinSlot {
    hashed_addr: AtomicUsize::new(0),
    hashed_since: ZERO,
    slow_since: ZERO,
    slow_hashed: AtomicBool::new(false),
    hashed_n: ZERO,
    hashed_ns: ZERO,
    slow_n: ZERO,
    slow_ns: ZERO,
    lookup_n: ZERO,
    lookup_ns: ZERO,
    own_hash_n: ZERO,
    own_hash_ns: ZERO,
};

static WIN: [WinSlot; WIN_SLOTS] = [WIN_SLOT; WIN_SLOTS];
/// The windows are timed (with the line census, or alone).
static WINDOWS_ON: AtomicBool = AtomicBool::new(false);

fn win_slot() -> &'static WinSlot {
    &WIN[platform::get().cpu_id() % WIN_SLOTS]
}

/// Is the dentry this CPU hashed still hashed (the line census' window)?
fn in_own_window() -> bool {
    win_slot().hashed_since.load(Ordering::Relaxed) != 0
}

/// The name hash each named task hashed last, and how many hash inserts
/// found another task's last one the same.
const NAME_SLOTS: usize = 8;
static NAMES: [AtomicU64; NAME_SLOTS] = [ZERO; NAME_SLOTS];
static COMMON_N: AtomicU64 = AtomicU64::new(0);

/// The census' timed windows, summed over the operations it saw.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CensusWindows {
    /// Dentries hashed and unhashed again while the census ran, and the
    /// nanoseconds they spent hashed.
    pub hashed: u64,
    pub hashed_ns: u64,
    /// Walks that missed in RCU-walk (handed over to ref-walk with
    /// [`super::FallbackReason::CacheMiss`], or restarted because the dentry
    /// they stood on changed or died: `DentrySeq`, `Dead`), and the
    /// nanoseconds from that miss to the end of the walk.
    pub slow: u64,
    pub slow_ns: u64,
    /// Of those walks, the ones that reached `d_alloc_parallel`'s look in
    /// the dcache, and the nanoseconds from the miss to it: how long a
    /// miss is exposed to another CPU hashing the same name first (it then
    /// finds that dentry there and holds it).
    pub lookup: u64,
    pub lookup_ns: u64,
    /// Hash inserts whose name another named task ([`census_task`]) had
    /// last hashed too: the tasks miss the same name, and one can find the
    /// other's dentry. 0 with distinct names, or with no task named.
    pub common: u64,
    /// Of the walks that missed, the ones that hashed a dentry of their
    /// own, and the nanoseconds from the miss to that hash insert (when
    /// another CPU's RCU-walk of the name starts to find it).
    pub own_hash: u64,
    pub own_hash_ns: u64,
}

/// The dentry at `addr`, of name hash `hash`, was just inserted into the
/// hash table.
#[inline]
pub fn census_hashed(addr: usize, hash: u64) {
    if WINDOWS_ON.load(Ordering::Relaxed) {
        census_hashed_slow(addr, hash);
    }
}

#[cold]
fn census_hashed_slow(addr: usize, hash: u64) {
    let now = platform::get().now_ns().max(1);
    let w = win_slot();
    w.hashed_addr.store(addr, Ordering::Relaxed);
    w.hashed_since.store(now, Ordering::Relaxed);
    let t0 = w.slow_since.load(Ordering::Relaxed);
    if t0 != 0 && !w.slow_hashed.swap(true, Ordering::Relaxed) {
        w.own_hash_ns
            .fetch_add(now.saturating_sub(t0), Ordering::Relaxed);
        w.own_hash_n.fetch_add(1, Ordering::Relaxed);
    }
    // Did another task last hash the same name? (Only named tasks count:
    // one task alone cannot tell a name it shares.)
    let task = TASK.load(Ordering::Relaxed);
    if task != usize::MAX {
        let me = task % NAME_SLOTS;
        let common = NAMES
            .iter()
            .enumerate()
            .any(|(t, h)| t != me && h.load(Ordering::Relaxed) == hash);
        if common {
            COMMON_N.fetch_add(1, Ordering::Relaxed);
        }
        NAMES[me].store(hash, Ordering::Relaxed);
    }
}

/// The dentry at `addr` was just taken out of the hash table.
#[inline]
pub fn census_unhashed(addr: usize) {
    if WINDOWS_ON.load(Ordering::Relaxed) {
        census_unhashed_slow(addr);
    }
}

#[cold]
fn census_unhashed_slow(addr: usize) {
    // Our own slot first: on one CPU, and mostly at N, the hasher unhashes.
    let mine = win_slot();
    let slot = core::iter::once(mine)
        .chain(WIN.iter())
        .find(|w| w.hashed_addr.load(Ordering::Relaxed) == addr);
    let Some(w) = slot else { return };
    let t0 = w.hashed_since.swap(0, Ordering::Relaxed);
    w.hashed_addr.store(0, Ordering::Relaxed);
    if t0 != 0 {
        let dt = platform::get().now_ns().saturating_sub(t0);
        w.hashed_ns.fetch_add(dt, Ordering::Relaxed);
        w.hashed_n.fetch_add(1, Ordering::Relaxed);
    }
}

/// An RCU-walk missed (or the dentry it stood on changed) and hands over
/// to ref-walk: its slow part begins, unless it already began.
#[inline]
pub(super) fn census_slow_begin() {
    if WINDOWS_ON.load(Ordering::Relaxed) {
        let w = win_slot();
        if w.slow_since.load(Ordering::Relaxed) == 0 {
            w.slow_hashed.store(false, Ordering::Relaxed);
            w.slow_since
                .store(platform::get().now_ns().max(1), Ordering::Relaxed);
        }
    }
}

/// A miss reached `d_alloc_parallel`'s look in the dcache.
#[inline]
pub fn census_parallel_lookup() {
    if WINDOWS_ON.load(Ordering::Relaxed) {
        let w = win_slot();
        let t0 = w.slow_since.load(Ordering::Relaxed);
        if t0 != 0 {
            let dt = platform::get().now_ns().saturating_sub(t0);
            w.lookup_ns.fetch_add(dt, Ordering::Relaxed);
            w.lookup_n.fetch_add(1, Ordering::Relaxed);
        }
    }
}

/// A walk is over (called at the end of every path lookup).
#[inline]
pub fn census_walk_done() {
    if WINDOWS_ON.load(Ordering::Relaxed) {
        census_walk_done_slow();
    }
}

#[cold]
fn census_walk_done_slow() {
    let w = win_slot();
    let t0 = w.slow_since.swap(0, Ordering::Relaxed);
    if t0 != 0 {
        let dt = platform::get().now_ns().saturating_sub(t0);
        w.slow_ns.fetch_add(dt, Ordering::Relaxed);
        w.slow_n.fetch_add(1, Ordering::Relaxed);
    }
}

/// The windows timed since [`census_begin`] or [`census_windows_begin`],
/// summed over the CPUs.
pub fn census_windows() -> CensusWindows {
    let sum = |f: fn(&WinSlot) -> &AtomicU64| -> u64 {
        WIN.iter().map(|w| f(w).load(Ordering::Relaxed)).sum()
    };
    CensusWindows {
        hashed: sum(|w| &w.hashed_n),
        hashed_ns: sum(|w| &w.hashed_ns),
        slow: sum(|w| &w.slow_n),
        slow_ns: sum(|w| &w.slow_ns),
        lookup: sum(|w| &w.lookup_n),
        lookup_ns: sum(|w| &w.lookup_ns),
        common: COMMON_N.load(Ordering::Relaxed),
        own_hash: sum(|w| &w.own_hash_n),
        own_hash_ns: sum(|w| &w.own_hash_ns),
    }
}

/// Store 0 in each of `counters`.
fn zero(counters: &[&AtomicU64]) {
    for a in counters {
        a.store(0, Ordering::Relaxed);
    }
}

fn windows_clear() {
    for w in WIN.iter() {
        w.hashed_addr.store(0, Ordering::Relaxed);
        w.slow_hashed.store(false, Ordering::Relaxed);
        zero(&[
            &w.hashed_since,
            &w.slow_since,
            &w.hashed_n,
            &w.hashed_ns,
            &w.slow_n,
            &w.slow_ns,
            &w.lookup_n,
            &w.lookup_ns,
            &w.own_hash_n,
            &w.own_hash_ns,
        ]);
    }
    COMMON_N.store(0, Ordering::Relaxed);
    for h in NAMES.iter() {
        h.store(0, Ordering::Relaxed);
    }
}

/// Time the windows alone, without the line census: for a run on several
/// CPUs (the line census' shared table would contend and its holds would
/// include waiting). [`census_end`] stops it; [`census_windows`] reads it.
pub fn census_windows_begin() {
    CENSUS_ON.store(false, Ordering::SeqCst);
    WINDOWS_ON.store(false, Ordering::SeqCst);
    lines_clear();
    windows_clear();
    WINDOWS_ON.store(true, Ordering::SeqCst);
}

/// Empty the line table (no line booked, no lock held, no task named).
fn lines_clear() {
    for e in CENSUS.iter() {
        e.addr.store(0, Ordering::Relaxed);
        zero(&[
            &e.stores,
            &e.untagged,
            &e.visits,
            &e.fast,
            &e.in_hold,
            &e.holds,
            &e.hold_ns,
            &e.win_visits,
            &e.win_in_hold,
            &e.writers,
        ]);
    }
    LAST_LINE.store(0, Ordering::Relaxed);
    TASK.store(usize::MAX, Ordering::Relaxed);
    for h in HELD.iter() {
        h.store(0, Ordering::Relaxed);
    }
    CENSUS_OVERFLOW.store(0, Ordering::Relaxed);
}

/// Clear the census table and start booking. Meant for a run on one CPU
/// (a concurrent run gets correct counts per line, but holds then include
/// waiting for other CPUs' stores).
pub fn census_begin() {
    CENSUS_ON.store(false, Ordering::SeqCst);
    lines_clear();
    WINDOWS_ON.store(false, Ordering::SeqCst);
    windows_clear();
    WINDOWS_ON.store(true, Ordering::SeqCst);
    CENSUS_ON.store(true, Ordering::SeqCst);
}

/// Stop booking; the lines seen, most-stored first, and how many stores
/// did not fit in the table.
pub fn census_end() -> (alloc::vec::Vec<LineCensus>, u64) {
    CENSUS_ON.store(false, Ordering::SeqCst);
    WINDOWS_ON.store(false, Ordering::SeqCst);
    let mut v: alloc::vec::Vec<LineCensus> = CENSUS
        .iter()
        .filter(|e| e.addr.load(Ordering::Relaxed) != 0)
        .map(|e| LineCensus {
            addr: e.addr.load(Ordering::Relaxed) & !63,
            stores: e.stores.load(Ordering::Relaxed),
            untagged: e.untagged.load(Ordering::Relaxed),
            visits: e.visits.load(Ordering::Relaxed),
            fast: e.fast.load(Ordering::Relaxed),
            in_hold: e.in_hold.load(Ordering::Relaxed),
            holds: e.holds.load(Ordering::Relaxed),
            hold_ns: e.hold_ns.load(Ordering::Relaxed),
            win_visits: e.win_visits.load(Ordering::Relaxed),
            win_in_hold: e.win_in_hold.load(Ordering::Relaxed),
            writers: e.writers.load(Ordering::Relaxed),
        })
        .collect();
    v.sort_by(|a, b| b.stores.cmp(&a.stores).then(b.hold_ns.cmp(&a.hold_ns)));
    (v, CENSUS_OVERFLOW.load(Ordering::Relaxed))
}
