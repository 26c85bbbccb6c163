//! Free-memory poisoning: a use-after-free detector in the global allocator
//! (what Linux's SLUB does with `slub_debug=P` and its `POISON_FREE` byte).
//!
//! Mental model: while poisoning is on ([`enable`]: the `poison=1` command
//! line, `stress=rcu`, the self-tests), every object the slab takes back is
//! filled with [`FREE_BYTE`] before it enters a magazine, and its magazine
//! entry is tagged "filled". When a filled object is handed out again, the
//! allocator first checks that every byte still is [`FREE_BYTE`]. Any other
//! byte was written by code that kept a pointer to freed memory: a write
//! after free. It is counted ([`totals`]`.violations`) and the first few are
//! printed with address, object size and offset; nothing panics (the object
//! is handed out as usual). Reads of freed memory are the other half: the
//! reader sees the fill, and the fs crate's canaries recognise it
//! (`fs::poison`). Dentries are freed only after their RCU grace period, so
//! a poisoned dentry that a lookup can still reach is an RCU bug.
//!
//! Implementation: the slab's free lists live outside the objects
//! (magazines are arrays of pointers), so nothing of a free object belongs
//! to the allocator and the whole object is filled; the "filled" tag is
//! bit 0 of the magazine entry ([`slab`](super::slab) objects are at least
//! 16-byte aligned). The tag travels with the entry through magazines and
//! the depot, so poisoning may be switched on and off at any time: an
//! object is checked if and only if it was filled. Fill and check use
//! volatile accesses: to the compiler the object is dead memory, and stores
//! to dead memory may otherwise be deleted.
//!
//! Large allocations (talc) are filled on free too, so late readers see
//! poison, but not checked on reuse: talc keeps its own headers inside free
//! chunks and merges neighbours, so "the fill is intact" has no fixed
//! meaning there.
//!
//! Counters: filled and checked objects per CPU (own cache line, plain
//! load + store: the allocator runs with the CPU fixed); violations in one
//! global atomic (only ever bumped by a bug). Touches: per-CPU counters and,
//! for the first few violations, the console (with a bounded wait for its
//! lock: the allocator may be called by code that holds it).

use core::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use crate::percpu::{per_cpu, PerCpu, MAX_CPUS};

/// The fill byte of freed memory (Linux `POISON_FREE`), shared with the fs
/// crate's canaries so that both sides agree.
pub const FREE_BYTE: u8 = fs::poison::FREE_BYTE;
/// Eight fill bytes.
pub const FREE_WORD: u64 = fs::poison::FREE_WORD;
/// Violations printed in full; the rest are only counted.
const PRINT_MAX: u64 = 8;

static ENABLED: AtomicBool = AtomicBool::new(false);
static VIOLATIONS: AtomicU64 = AtomicU64::new(0);

struct CpuCounts {
    /// Slab objects filled on free.
    filled: AtomicU64,
    /// Filled slab objects checked on reuse.
    checked: AtomicU64,
    /// Large (talc) allocations filled on free.
    large_filled: AtomicU64,
}

static COUNTS: PerCpu<CpuCounts> = per_cpu!(CpuCounts {
    filled: AtomicU64::new(0),
    checked: AtomicU64::new(0),
    large_filled: AtomicU64::new(0),
});

/// Only the owning CPU writes its slot: a plain load + store is enough.
#[inline]
fn bump(c: &AtomicU64) {
    c.store(c.load(Ordering::Relaxed) + 1, Ordering::Relaxed);
}

/// Turn poisoning on (objects freed from now on are filled and later
/// checked).
pub fn enable() {
    ENABLED.store(true, Ordering::Relaxed);
}

/// Turn poisoning off. Objects filled meanwhile are still checked when
/// they are reused (their magazine entry says so).
pub fn disable() {
    ENABLED.store(false, Ordering::Relaxed);
}

/// Is poisoning on? One relaxed load of a read-mostly flag.
#[inline]
pub fn enabled() -> bool {
    ENABLED.load(Ordering::Relaxed)
}

/// Counter sums over all CPUs.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Totals {
    /// Slab objects filled with poison when freed.
    pub filled: u64,
    /// Filled slab objects whose fill was checked when reused.
    pub checked: u64,
    /// Checked objects whose fill had been overwritten: writes after free.
    pub violations: u64,
    /// Large (talc) allocations filled when freed (never checked).
    pub large_filled: u64,
}

impl Totals {
    /// Field-wise `self - earlier`, for the figures of one run.
    pub fn delta(&self, earlier: &Totals) -> Totals {
        Totals {
            filled: self.filled - earlier.filled,
            checked: self.checked - earlier.checked,
            violations: self.violations - earlier.violations,
            large_filled: self.large_filled - earlier.large_filled,
        }
    }
}

/// The counters now (a snapshot while other CPUs allocate).
pub fn totals() -> Totals {
    let mut t = Totals {
        violations: VIOLATIONS.load(Ordering::Relaxed),
        ..Totals::default()
    };
    for c in COUNTS.iter(MAX_CPUS) {
        t.filled += c.filled.load(Ordering::Relaxed);
        t.checked += c.checked.load(Ordering::Relaxed);
        t.large_filled += c.large_filled.load(Ordering::Relaxed);
    }
    t
}

/// Fill `[p, p + len)` with [`FREE_BYTE`]: bytes up to the first 8-byte
/// boundary, then words, then the tail.
///
/// # Safety
/// The caller owns the range (it is being freed and nobody may use it).
unsafe fn fill(p: *mut u8, len: usize) {
    let head = p.align_offset(8).min(len);
    let words = (len - head) / 8;
    for i in (0..head).chain(head + words * 8..len) {
        // SAFETY: `i < len`, inside the caller's range.
        unsafe { p.add(i).write_volatile(FREE_BYTE) };
    }
    // SAFETY: `p + head` is inside the range (or its end) and 8-aligned.
    let w = unsafe { p.add(head) } as *mut u64;
    for i in 0..words {
        // SAFETY: `head + i * 8 + 8 <= len`: inside the range, aligned.
        unsafe { w.add(i).write_volatile(FREE_WORD) };
    }
}

/// Fill a slab object of `size` bytes that is being freed; counts it.
///
/// # Safety
/// As for [`fill`]: `p` is a whole slab object of `size` bytes that the
/// slab now owns.
pub(super) unsafe fn fill_object(p: *mut u8, size: usize) {
    // SAFETY: guaranteed by the caller.
    unsafe { fill(p, size) };
    bump(&COUNTS.get().filled);
}

/// Fill a large allocation that is being freed; counts it.
///
/// # Safety
/// As for [`fill`]: the caller is freeing `[p, p + len)`.
pub(super) unsafe fn fill_large(p: *mut u8, len: usize) {
    // SAFETY: guaranteed by the caller.
    unsafe { fill(p, len) };
    bump(&COUNTS.get().large_filled);
}

/// Check a filled slab object of `size` bytes that is being handed out
/// again. Returns whether its fill was intact; a broken fill is counted and
/// (the first few) printed.
///
/// # Safety
/// `p` is a slab object of `size` bytes (a multiple of 8, 8-aligned) that
/// was filled when freed and that the slab still owns.
pub(super) unsafe fn check_object(p: *const u8, size: usize) -> bool {
    bump(&COUNTS.get().checked);
    let w = p as *const u64;
    let mut first = None;
    let mut changed = 0usize;
    for i in 0..size / 8 {
        // SAFETY: inside the object (caller), aligned.
        let v = unsafe { w.add(i).read_volatile() };
        if v != FREE_WORD {
            first.get_or_insert((i, v));
            changed += (v ^ FREE_WORD)
                .to_ne_bytes()
                .iter()
                .filter(|&&b| b != 0)
                .count();
        }
    }
    let Some((word, value)) = first else {
        return true;
    };
    let n = VIOLATIONS.fetch_add(1, Ordering::Relaxed);
    if n < PRINT_MAX {
        let byte = value
            .to_ne_bytes()
            .iter()
            .position(|&b| b != FREE_BYTE)
            .unwrap_or(0);
        crate::console::emergency(format_args!(
            "poison: write after free on cpu {}: object {:#x} ({size} bytes), first changed byte at offset {} ({:#04x}), {changed} bytes changed\n",
            crate::arch::cpu_id(),
            p as usize,
            word * 8 + byte,
            value.to_ne_bytes()[byte]
        ));
    }
    false
}
