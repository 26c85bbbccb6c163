//! The line census: a measuring aid for `bench predict` (see the parent
//! module's docs). While it is on, every counted store and every lock hold
//! is booked against its line's address, so a 1-CPU run can name the lines
//! an operation shares and the time spent inside each lock; it also times
//! two windows of each operation. Off, it costs one relaxed load of a
//! read-mostly flag per counted store.
//!
//! Touches: the platform's `now_ns`, its own tables.

use crate::platform;
use core::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};

// ---- the line census ------------------------------------------------------

/// Lines the census can tell apart (a power of two); a line that finds
/// no free entry within [`CENSUS_PROBES`] is booked to the overflow count.
const CENSUS_LINES: usize = 4096;
const CENSUS_PROBES: usize = 8;

struct CensusEntry {
    addr: AtomicUsize,
    stores: AtomicU64,
    holds: AtomicU64,
    hold_ns: AtomicU64,
}

#[allow(clippy::declare_interior_mutable_const)]
const CENSUS_ENTRY: CensusEntry = CensusEntry {
    addr: AtomicUsize::new(0),
    stores: AtomicU64::new(0),
    holds: AtomicU64::new(0),
    hold_ns: AtomicU64::new(0),
};
static CENSUS_ON: AtomicBool = AtomicBool::new(false);
static CENSUS: [CensusEntry; CENSUS_LINES] = [CENSUS_ENTRY; CENSUS_LINES];
static CENSUS_OVERFLOW: AtomicU64 = AtomicU64::new(0);

/// One line's figures over a census.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LineCensus {
    /// The line's address (64-byte aligned).
    pub addr: usize,
    /// Counted stores to it.
    pub stores: u64,
    /// Lock holds on it, and nanoseconds spent inside them.
    pub holds: u64,
    pub hold_ns: u64,
}

/// The entry for `line`, claimed if new; `None` when the table is full.
fn census_entry(line: usize) -> Option<&'static CensusEntry> {
    let key = (line & !63) | 1; // never 0: 0 marks a free entry
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

#[inline]
pub(super) fn census_store(line: usize) {
    if CENSUS_ON.load(Ordering::Relaxed) {
        census_store_slow(line);
    }
}

#[cold]
fn census_store_slow(line: usize) {
    match census_entry(line) {
        Some(e) => {
            e.stores.fetch_add(1, Ordering::Relaxed);
        }
        None => {
            CENSUS_OVERFLOW.fetch_add(1, Ordering::Relaxed);
        }
    }
}

/// Book a counted store to `line` in the census (for locks whose word
/// carries its writer itself; [`LastWriter::note`] books its own).
#[inline]
pub fn census_line_store(line: usize) {
    census_store(line);
}

/// Start timing a lock hold: a timestamp while the census is on, else 0
/// (and no clock read).
#[inline]
pub fn hold_start() -> u64 {
    if CENSUS_ON.load(Ordering::Relaxed) {
        platform::get().now_ns().max(1)
    } else {
        0
    }
}

/// End a hold begun with [`hold_start`] on the lock at `line`.
#[inline]
pub fn hold_end(line: usize, t0: u64) {
    if t0 != 0 {
        hold_end_slow(line, t0);
    }
}

#[cold]
fn hold_end_slow(line: usize, t0: u64) {
    let dt = platform::get().now_ns().saturating_sub(t0);
    if let Some(e) = census_entry(line) {
        e.holds.fetch_add(1, Ordering::Relaxed);
        e.hold_ns.fetch_add(dt, Ordering::Relaxed);
    }
}

// ---- the census' two windows per operation --------------------------------
//
// Besides lines, the census times two spans of each operation (on one CPU,
// so one global slot each is exact): how long a dentry stays *hashed*
// (from its hash insert to its unhash: the window in which another CPU's
// RCU-walk of the same name would find it instead of missing), and how long
// the *slow part* of a walk lasts (from an RCU-walk miss handing over to
// ref-walk, to the end of the walk). `bench predict` turns them into the
// sharing term of its model.

static HASHED_ADDR: AtomicUsize = AtomicUsize::new(0);
static HASHED_SINCE: AtomicU64 = AtomicU64::new(0);
static HASHED_NS: AtomicU64 = AtomicU64::new(0);
static HASHED_N: AtomicU64 = AtomicU64::new(0);
static SLOW_SINCE: AtomicU64 = AtomicU64::new(0);
static SLOW_NS: AtomicU64 = AtomicU64::new(0);
static SLOW_N: AtomicU64 = AtomicU64::new(0);

/// The census' timed windows, summed over the operations it saw.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CensusWindows {
    /// Dentries hashed and unhashed again while the census ran, and the
    /// nanoseconds they spent hashed.
    pub hashed: u64,
    pub hashed_ns: u64,
    /// Walks that missed in RCU-walk (handed over to ref-walk with
    /// [`FallbackReason::CacheMiss`]), and the nanoseconds from that miss
    /// to the end of the walk.
    pub slow: u64,
    pub slow_ns: u64,
}

/// The dentry at `addr` was just inserted into the hash table.
#[inline]
pub fn census_hashed(addr: usize) {
    if CENSUS_ON.load(Ordering::Relaxed) {
        HASHED_ADDR.store(addr, Ordering::Relaxed);
        HASHED_SINCE.store(platform::get().now_ns().max(1), Ordering::Relaxed);
    }
}

/// The dentry at `addr` was just taken out of the hash table.
#[inline]
pub fn census_unhashed(addr: usize) {
    if CENSUS_ON.load(Ordering::Relaxed) {
        census_unhashed_slow(addr);
    }
}

#[cold]
fn census_unhashed_slow(addr: usize) {
    let t0 = HASHED_SINCE.load(Ordering::Relaxed);
    if t0 != 0 && HASHED_ADDR.load(Ordering::Relaxed) == addr {
        let dt = platform::get().now_ns().saturating_sub(t0);
        HASHED_NS.fetch_add(dt, Ordering::Relaxed);
        HASHED_N.fetch_add(1, Ordering::Relaxed);
        HASHED_SINCE.store(0, Ordering::Relaxed);
    }
}

/// An RCU-walk missed and hands over to ref-walk (its slow part begins).
#[inline]
pub(super) fn census_slow_begin() {
    if CENSUS_ON.load(Ordering::Relaxed) {
        SLOW_SINCE.store(platform::get().now_ns().max(1), Ordering::Relaxed);
    }
}

/// A walk is over (called at the end of every path lookup).
#[inline]
pub fn census_walk_done() {
    if CENSUS_ON.load(Ordering::Relaxed) {
        census_walk_done_slow();
    }
}

#[cold]
fn census_walk_done_slow() {
    let t0 = SLOW_SINCE.swap(0, Ordering::Relaxed);
    if t0 != 0 {
        let dt = platform::get().now_ns().saturating_sub(t0);
        SLOW_NS.fetch_add(dt, Ordering::Relaxed);
        SLOW_N.fetch_add(1, Ordering::Relaxed);
    }
}

/// The windows timed since [`census_begin`].
pub fn census_windows() -> CensusWindows {
    CensusWindows {
        hashed: HASHED_N.load(Ordering::Relaxed),
        hashed_ns: HASHED_NS.load(Ordering::Relaxed),
        slow: SLOW_N.load(Ordering::Relaxed),
        slow_ns: SLOW_NS.load(Ordering::Relaxed),
    }
}

/// Clear the census table and start booking. Meant for a run on one CPU
/// (a concurrent run gets correct counts per line, but holds then include
/// waiting for other CPUs' stores).
pub fn census_begin() {
    CENSUS_ON.store(false, Ordering::SeqCst);
    for e in CENSUS.iter() {
        e.addr.store(0, Ordering::Relaxed);
        e.stores.store(0, Ordering::Relaxed);
        e.holds.store(0, Ordering::Relaxed);
        e.hold_ns.store(0, Ordering::Relaxed);
    }
    CENSUS_OVERFLOW.store(0, Ordering::Relaxed);
    for a in [
        &HASHED_SINCE,
        &HASHED_NS,
        &HASHED_N,
        &SLOW_SINCE,
        &SLOW_NS,
        &SLOW_N,
    ] {
        a.store(0, Ordering::Relaxed);
    }
    HASHED_ADDR.store(0, Ordering::Relaxed);
    CENSUS_ON.store(true, Ordering::SeqCst);
}

/// Stop booking; the lines seen, most-stored first, and how many stores
/// did not fit in the table.
pub fn census_end() -> (alloc::vec::Vec<LineCensus>, u64) {
    CENSUS_ON.store(false, Ordering::SeqCst);
    let mut v: alloc::vec::Vec<LineCensus> = CENSUS
        .iter()
        .filter(|e| e.addr.load(Ordering::Relaxed) != 0)
        .map(|e| LineCensus {
            addr: e.addr.load(Ordering::Relaxed) & !63,
            stores: e.stores.load(Ordering::Relaxed),
            holds: e.holds.load(Ordering::Relaxed),
            hold_ns: e.hold_ns.load(Ordering::Relaxed),
        })
        .collect();
    v.sort_by(|a, b| b.stores.cmp(&a.stores).then(b.hold_ns.cmp(&a.hold_ns)));
    (v, CENSUS_OVERFLOW.load(Ordering::Relaxed))
}
