//! The per-CPU slab: size classes 16..2048 bytes (powers of two), each with
//! per-CPU magazines in front of a global depot (Bonwick's magazine layer,
//! as in Solaris' kmem and Linux's per-CPU kmem_cache arrays).
//!
//! Mental model: each CPU holds, per class, a *loaded* and a *previous*
//! magazine (stacks of up to [`MAG_SIZE`] free objects). Allocation pops from
//! the loaded one, swapping in the previous one when it runs dry; freeing
//! pushes, swapping when full. Only when both are empty (alloc) or full
//! (free) does the CPU visit the class's depot under its lock, exchanging a
//! whole magazine. A steady alloc/free pattern on one CPU therefore touches
//! only that CPU's cache lines. New objects are carved [`MAG_SIZE`] at a
//! time from one talc chunk; memory is never given back to talc.
//!
//! Implementation: the per-CPU state is only touched by its own CPU, with
//! interrupts disabled (interrupt handlers do not allocate, but this keeps
//! the invariant local). Objects of a class are interchangeable, so a free
//! on another CPU than the allocation is fine. Magazines are linked through
//! a `next` field so depot operations never allocate.
//!
//! Poisoning ([`super::poison`]): a magazine entry is an object address
//! whose bit 0 ([`FILLED`]) says the object was filled with poison when it
//! was freed; `alloc` checks such an object before handing it out. Free
//! objects hold no allocator data (the magazines do), so the fill covers
//! the whole object.

use core::alloc::Layout;
use core::cell::UnsafeCell;
use core::ptr::{null_mut, NonNull};
use core::sync::atomic::{AtomicU64, Ordering};

use spin::Mutex;

use super::heap::talc_alloc;
use super::poison;
use crate::percpu::{per_cpu, PerCpu};

/// Number of size classes (16 << 0 ..= 16 << 7).
pub const NCLASSES: usize = 8;
/// Largest size (and alignment) served by the slab.
pub const MAX_SMALL: usize = 16 << (NCLASSES - 1);
/// Objects per magazine.
pub const MAG_SIZE: usize = 64;

/// Object size of `class`.
pub const fn class_size(class: usize) -> usize {
    16 << class
}

/// The class serving `layout`, or `None` for the large-object heap.
#[inline]
pub fn class_of(layout: Layout) -> Option<usize> {
    let need = layout.size().max(layout.align()).max(16);
    if need > MAX_SMALL {
        return None;
    }
    Some((usize::BITS - (need - 1).leading_zeros()) as usize - 4)
}

/// Bit 0 of a magazine entry: the object was filled with poison when
/// freed, so `alloc` checks the fill (objects are at least 16-byte aligned,
/// so the bit is free).
const FILLED: usize = 1;

/// One magazine: a stack of up to [`MAG_SIZE`] free objects, and the link
/// that chains it into a depot list. Only reached through a [`Mag`].
struct Magazine {
    next: Option<Mag>,
    count: usize,
    /// Free objects, each tagged with [`FILLED`] or not.
    objs: [*mut u8; MAG_SIZE],
}

/// The one owner of a magazine: a CPU's cache slot or a depot list holds
/// it, and whoever holds the `Mag` may touch the magazine. Invariant: the
/// pointer is to a `Magazine` written by [`Mag::new`] (talc memory, never
/// freed), and no other `Mag` or reference to it exists. All magazine
/// handling below is safe code on top of that.
struct Mag(NonNull<Magazine>);

// SAFETY: a `Mag` is the unique owner of heap memory (no thread-bound
// state), so handing it to another CPU (through the depot) is fine.
unsafe impl Send for Mag {}

impl Mag {
    /// A new, empty magazine from talc; `None` when the heap is exhausted.
    fn new() -> Option<Mag> {
        let m = NonNull::new(talc_alloc(Layout::new::<Magazine>()) as *mut Magazine)?;
        // SAFETY: fresh memory, sized and aligned for one `Magazine` (its
        // layout), that nothing else points to: writing it makes the
        // `Mag` invariant true.
        unsafe {
            m.write(Magazine {
                next: None,
                count: 0,
                objs: [null_mut(); MAG_SIZE],
            })
        };
        Some(Mag(m))
    }

    fn get(&self) -> &Magazine {
        // SAFETY: valid and not aliased mutably (the `Mag` invariant; a
        // mutable borrow would need `&mut self`).
        unsafe { self.0.as_ref() }
    }

    fn get_mut(&mut self) -> &mut Magazine {
        // SAFETY: valid and owned by this `Mag` alone (the invariant).
        unsafe { self.0.as_mut() }
    }

    fn count(&self) -> usize {
        self.get().count
    }

    /// Pop an entry (tagged, see [`FILLED`]); `None` when empty.
    fn pop(&mut self) -> Option<*mut u8> {
        let m = self.get_mut();
        m.count = m.count.checked_sub(1)?;
        Some(m.objs[m.count])
    }

    /// Push an entry; false (and nothing changed) when full.
    fn push(&mut self, entry: *mut u8) -> bool {
        let m = self.get_mut();
        if m.count == MAG_SIZE {
            return false;
        }
        m.objs[m.count] = entry;
        m.count += 1;
        true
    }

    /// Fill this empty magazine with [`MAG_SIZE`] new objects of `class`
    /// carved from one talc chunk. Returns false when the heap is exhausted.
    fn carve(&mut self, class: usize) -> bool {
        debug_assert_eq!(self.count(), 0, "carving into a magazine in use");
        let size = class_size(class);
        let Ok(layout) = Layout::from_size_align(size * MAG_SIZE, size.min(4096)) else {
            return false;
        };
        let chunk = talc_alloc(layout);
        if chunk.is_null() {
            return false;
        }
        // The chunk holds MAG_SIZE objects of `size` bytes, each aligned to
        // `size` (the chunk's alignment); the addresses are only stored.
        let m = self.get_mut();
        for (i, slot) in m.objs.iter_mut().enumerate() {
            *slot = chunk.wrapping_add(i * size);
        }
        m.count = MAG_SIZE;
        DEPOT[class].lock().carved += MAG_SIZE;
        true
    }
}

/// A depot list of magazines, chained through `Magazine::next`.
struct MagList {
    head: Option<Mag>,
    len: usize,
}

impl MagList {
    const fn new() -> MagList {
        MagList { head: None, len: 0 }
    }

    fn push(&mut self, mut m: Mag) {
        m.get_mut().next = self.head.take();
        self.head = Some(m);
        self.len += 1;
    }

    fn pop(&mut self) -> Option<Mag> {
        let mut m = self.head.take()?;
        self.head = m.get_mut().next.take();
        self.len -= 1;
        Some(m)
    }
}

/// One class's magazines on one CPU.
struct ClassCache {
    loaded: Option<Mag>,
    previous: Option<Mag>,
}

struct CpuSlab {
    classes: UnsafeCell<[ClassCache; NCLASSES]>,
}

// SAFETY: `classes` is only accessed by the CPU owning the slot, with
// interrupts disabled (see `with_cpu_cache`), so there is never concurrent
// access; the magazines it holds are owned by that CPU.
unsafe impl Sync for CpuSlab {}

/// One class's shared store: full (or partly full) and empty magazines.
struct Depot {
    full: MagList,
    empty: MagList,
    /// Objects carved from talc so far.
    carved: usize,
}

static CPU: PerCpu<CpuSlab> = per_cpu!(CpuSlab {
    classes: UnsafeCell::new(
        [const {
            ClassCache {
                loaded: None,
                previous: None,
            }
        }; NCLASSES]
    )
});

static DEPOT: [Mutex<Depot>; NCLASSES] = [const {
    Mutex::new(Depot {
        full: MagList::new(),
        empty: MagList::new(),
        carved: 0,
    })
}; NCLASSES];

/// Allocation counters of one CPU.
pub struct CpuCounts {
    /// `GlobalAlloc::alloc` calls on this CPU (slab and large).
    pub allocs: AtomicU64,
    /// `GlobalAlloc::dealloc` calls on this CPU.
    pub frees: AtomicU64,
    /// Depot visits (magazine exchanges or refills) on this CPU.
    pub depot_visits: AtomicU64,
}

/// Per-CPU allocation counters.
pub static COUNTS: PerCpu<CpuCounts> = per_cpu!(CpuCounts {
    allocs: AtomicU64::new(0),
    frees: AtomicU64::new(0),
    depot_visits: AtomicU64::new(0),
});

#[inline]
pub(super) fn count_alloc() {
    let c = COUNTS.get();
    c.allocs
        .store(c.allocs.load(Ordering::Relaxed) + 1, Ordering::Relaxed);
}

#[inline]
pub(super) fn count_free() {
    let c = COUNTS.get();
    c.frees
        .store(c.frees.load(Ordering::Relaxed) + 1, Ordering::Relaxed);
}

fn with_cpu_cache<R>(class: usize, f: impl FnOnce(&mut ClassCache) -> R) -> R {
    crate::arch::interrupts::without(|| {
        let slab = CPU.get();
        // SAFETY: this is the calling CPU's own slot and interrupts are off,
        // so no other code (another CPU or an interrupt handler) can access
        // it while `f` runs; `f` does not call back into the slab for the
        // same CPU (depot and talc paths never use the global allocator).
        let caches = unsafe { &mut *slab.classes.get() };
        f(&mut caches[class])
    })
}

/// Allocate one object of `class`.
pub fn alloc(class: usize) -> Option<NonNull<u8>> {
    let entry = take(class)?;
    let p = entry.map_addr(|a| a & !FILLED);
    if entry.addr() & FILLED != 0 {
        // SAFETY: the entry came from a magazine of `class`, so `p` is a
        // whole free object of `class_size(class)` bytes (a multiple of 16,
        // 16-aligned) that `free` filled before tagging it; no one else may
        // use it until we return it.
        unsafe { poison::check_object(p, class_size(class)) };
    }
    NonNull::new(p)
}

/// Pop a magazine entry of `class` (tagged, see [`FILLED`]).
fn take(class: usize) -> Option<*mut u8> {
    with_cpu_cache(class, |c| {
        if let Some(entry) = c.loaded.as_mut().and_then(Mag::pop) {
            return Some(entry);
        }
        if c.previous.as_ref().is_some_and(|m| m.count() > 0) {
            core::mem::swap(&mut c.loaded, &mut c.previous);
            return c.loaded.as_mut().and_then(Mag::pop);
        }
        count_depot_visit();
        // both empty (or missing): trade the empty loaded one for a full one
        {
            let mut d = DEPOT[class].lock();
            if let Some(full) = d.full.pop() {
                if let Some(empty) = c.loaded.replace(full) {
                    d.empty.push(empty);
                }
                return c.loaded.as_mut().and_then(Mag::pop);
            }
        }
        if c.loaded.is_none() {
            c.loaded = Some(Mag::new()?);
        }
        let m = c.loaded.as_mut()?;
        if !m.carve(class) {
            return None;
        }
        m.pop()
    })
}

/// Free an object of `class`.
///
/// # Safety
/// `p` came from [`alloc`] with the same class and is not used afterwards.
pub unsafe fn free(class: usize, p: *mut u8) {
    let entry = if poison::enabled() {
        // SAFETY: `p` is a whole object of `class` that the slab owns from
        // now on (caller's contract).
        unsafe { poison::fill_object(p, class_size(class)) };
        p.map_addr(|a| a | FILLED)
    } else {
        p
    };
    with_cpu_cache(class, |c| {
        if c.loaded.as_mut().is_some_and(|m| m.push(entry)) {
            return;
        }
        if c.previous.as_ref().is_some_and(|m| m.count() == 0) {
            core::mem::swap(&mut c.loaded, &mut c.previous);
            if let Some(m) = c.loaded.as_mut() {
                m.push(entry);
            }
            return;
        }
        count_depot_visit();
        // loaded full (or missing), previous full (or missing): park the
        // previous in the depot, loaded becomes previous, get an empty one
        let empty = {
            let mut d = DEPOT[class].lock();
            if let Some(previous) = c.previous.take() {
                d.full.push(previous);
            }
            d.empty.pop()
        };
        let Some(mut empty) = empty.or_else(Mag::new) else {
            // No memory even for a magazine: keep the object in the
            // depot's world by leaking it (never happens before the heap
            // itself is exhausted).
            return;
        };
        empty.push(entry);
        c.previous = c.loaded.take();
        c.loaded = Some(empty);
    })
}

fn count_depot_visit() {
    let c = COUNTS.get();
    c.depot_visits.store(
        c.depot_visits.load(Ordering::Relaxed) + 1,
        Ordering::Relaxed,
    );
}

/// Can this CPU get an object of `class` without carving a new chunk from
/// talc? True when one of its own magazines or the depot holds a free
/// object. Free objects parked in *other* CPUs' magazines do not count:
/// this CPU cannot reach them. Memory admission asks this below the heap
/// watermark (`allocator::may_alloc`).
///
/// A depot magazine is claimed, not just seen: it is traded for this
/// CPU's empty one here (what the allocation would do), so another CPU
/// cannot take the object between admission and allocation and send this
/// CPU's allocation to talc, whose reserve a nearly full heap may have
/// only in fragments (each such race used to carve a chunk out of it).
pub fn has_free(class: usize) -> bool {
    with_cpu_cache(class, |c| {
        if c.loaded.as_ref().is_some_and(|m| m.count() > 0)
            || c.previous.as_ref().is_some_and(|m| m.count() > 0)
        {
            return true;
        }
        // Both empty (or missing): trade the empty loaded one for a full
        // one, as `take` does. The depot lock with interrupts off, as on
        // the allocation path.
        let mut d = DEPOT[class].lock();
        let Some(full) = d.full.pop() else {
            return false;
        };
        if let Some(empty) = c.loaded.replace(full) {
            d.empty.push(empty);
        }
        true
    })
}

/// Bytes a refill of `class` takes from talc in the worst case: one chunk
/// of [`MAG_SIZE`] objects and a magazine to hold them.
pub const fn refill_bytes(class: usize) -> usize {
    class_size(class) * MAG_SIZE + core::mem::size_of::<Magazine>()
}

/// Depot state of `class`: (full magazines, empty magazines, objects carved).
pub fn depot_stats(class: usize) -> (usize, usize, usize) {
    let d = DEPOT[class].lock();
    (d.full.len, d.empty.len, d.carved)
}

/// Sum of (allocs, frees) over the first `ncpus` CPUs.
pub fn totals(ncpus: usize) -> (u64, u64) {
    COUNTS.iter(ncpus).fold((0, 0), |(a, f), c| {
        (
            a + c.allocs.load(Ordering::Relaxed),
            f + c.frees.load(Ordering::Relaxed),
        )
    })
}
