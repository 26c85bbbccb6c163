//! The paravirtual queued spinlock (`lock=pvqspinlock`), after Linux's
//! `kernel/locking/qspinlock_paravirt.h`: the queued lock of
//! [`super::qspinlock`] whose waiters stop spinning after a while and halt
//! their CPU until whoever they wait for kicks them.
//!
//! # Why
//! A spinlock assumes that whoever it waits for is running. A guest's vCPUs
//! are threads of the host: with more vCPUs than host cores, the host
//! deschedules a vCPU for milliseconds at a time, also one that holds a
//! lock or is next in a queued lock's line. A fair lock then makes every
//! other waiter spin, on the cores the descheduled vCPU needs, until the
//! host runs it again (lock-holder and lock-waiter preemption). On a 2-core
//! machine with 4 vCPUs, two runs of one benchmark gave 1,564 and 313,356
//! ops/s. A halted vCPU gives its host core back, so the vCPU that can make
//! progress gets it.
//!
//! # How
//! The lock word, the MCS queue and the fast paths are the queued lock's
//! ([`super::qspinlock::queue`] with the waits of [`Halt`]); three waits
//! change:
//!
//! - **A queued waiter** (not the head) spins on its node for
//!   [`SPIN_TURNS`], then publishes `state = HALTED`, re-checks its node
//!   and halts ([`crate::platform::Platform::halt_while`]). The predecessor
//!   that makes it the head stores `locked`, then moves `HALTED ->
//!   RUNNING` and kicks its CPU ([`kick_node`]). Each side stores, issues a
//!   full fence, then reads what the other stored: at least one sees the
//!   other, so either the waiter does not halt or the kicker kicks.
//! - **The queue head** spins on the lock word for [`SPIN_TURNS`], holding
//!   the pending bit meanwhile; then it lets the bit go, enters `(lock
//!   word, its node)` in a hash table, turns the locked byte from `LOCKED`
//!   into [`SLOW`], and halts while it reads `SLOW`.
//! - **Lock stealing**: a CPU that arrives while a queue waits takes a
//!   free locked byte past it only while the pending bit is clear, i.e.
//!   while the head is halted, or waking, or not yet the head (Linux's
//!   hybrid unfair trylock). A running head is not overtaken; a halted one
//!   does not leave the lock idle for the host's wake-up.
//! - **The unlock** subtracts `LOCKED` from the locked byte as the queued
//!   lock does. Normally that leaves 0; if a head had marked it `SLOW` it
//!   leaves 2, still held, so nobody can take the lock while the unlocker
//!   removes the head's entry from the hash table; then it clears the byte
//!   and kicks the head's CPU. (The entry must go before the lock does: once
//!   free, the lock can get a new head that enters it again.)
//!
//! The halt itself is the platform's: on the guest `cli`, re-check, then
//! `sti; hlt`, which x86 runs without an interrupt window in between, so a
//! kick sent after the re-check wakes the `hlt` instead of being taken
//! before it. A kick that finds its CPU running is an interrupt that does
//! nothing. The tick also ends a halt; every wait re-checks after one.
//!
//! # Differences from Linux
//! - The new head is kicked when it becomes the head (Linux 4.2's first
//!   form), not lazily at the next unlock (Linux since 4.5 marks the lock
//!   `SLOW` on the halted successor's behalf and leaves the kick to the
//!   unlocker, and lets other CPUs steal the lock meanwhile). The early
//!   kick overlaps the host's wake-up with the holder's critical section.
//! - No pending waiter: a paravirt lock queues its second waiter too, as
//!   Linux's does, so that every waiter has a node to halt on; the pending
//!   bit only marks a spinning head, as in Linux's paravirt lock.
//! - No `pv_wait_early` (halting at once when the predecessor is halted)
//!   and no hypercall: the kick is an IPI.
//!
//! On host threads (feature `std`) the platform has no halt: the waits are
//! the queued lock's spins with [`super::spinwait`]'s yield, which is the
//! same idea for threads.
//!
//! Touches: the lock word, this CPU's MCS nodes and its neighbours', the
//! lock hash table, and the platform's halt and kick.

use super::atomic::{fence, AtomicU32, AtomicUsize, Ordering};
use super::lockword::LockWord;
use super::qspinlock::{self, Node, Waits, LOCKED, LOCKED_MASK, MAX_NODES, PENDING, TAIL_MASK};
use super::spinwait::{SpinWait, SPIN_TURNS};

/// The locked byte of a lock whose queue head has halted and entered the
/// hash table: the unlocker must remove the entry and kick it (Linux's
/// `_Q_SLOW_VAL`).
pub const SLOW: u32 = 3;

/// Node states ([`Node::state`]).
const RUNNING: u32 = 0;
const HALTED: u32 = 1;

/// Take the lock if it is free and nobody waits.
#[inline]
pub fn try_lock(w: &impl LockWord) -> bool {
    qspinlock::try_lock(w)
}

/// Spin, then halt, until the lock is ours.
#[inline]
pub fn lock(w: &impl LockWord) {
    if w.cas(0, LOCKED, Ordering::Acquire).is_ok() || try_steal(w) {
        return;
    }
    // No pending step: the second waiter queues too (see the module doc).
    qspinlock::queue::<Halt>(w, true);
}

/// Take the lock if the locked byte is free and no queue head is spinning
/// for it (Linux's hybrid unfair trylock, in its one-look form): a running
/// CPU does not wait behind a queue head that is halted or not yet awake,
/// but does not overtake one that is running either. A spinning head holds
/// the pending bit ([`wait_head`]), as in Linux's `pv_wait_head_or_lock`.
#[inline]
fn try_steal(w: &impl LockWord) -> bool {
    let v = w.load(Ordering::Relaxed);
    if v & (LOCKED_MASK | PENDING) == 0 && w.cas(v, v | LOCKED, Ordering::Acquire).is_ok() {
        if v & TAIL_MASK != 0 {
            events::steal();
        }
        return true;
    }
    false
}

/// Release the lock; if the queue head halted on it, kick it.
#[inline]
pub fn unlock(w: &impl LockWord) {
    // LOCKED -> 0, or SLOW -> 2 (still held: see unlock_slow).
    let old = w.fetch_add(LOCKED.wrapping_neg(), Ordering::Release);
    if old & LOCKED_MASK == SLOW {
        unlock_slow(w);
    }
}

#[cold]
fn unlock_slow(w: &impl LockWord) {
    // Pairs with the head's release when it set SLOW: its entry is there.
    fence(Ordering::Acquire);
    let head = unhash(w.addr());
    // 2 -> 0: now the head may take it.
    w.fetch_add((SLOW - LOCKED).wrapping_neg(), Ordering::Release);
    if let Some(tail) = head {
        crate::platform::get().kick(qspinlock::tail_cpu(tail));
    }
}

/// A node enters the queue running.
#[inline]
fn init_node(node: &Node) {
    node.state.store(RUNNING, Ordering::Relaxed);
}

/// A queued waiter: spin, then halt, until the predecessor makes this node
/// the head (`node.locked`). Returns with that seen (acquire).
fn wait_node(node: &Node) {
    #[cfg(loom)]
    let recheck = !NO_RECHECK.with(|f| f.get());
    #[cfg(not(loom))]
    let recheck = true;
    wait_node_checked(node, recheck)
}

/// [`wait_node`], where `recheck: false` reads `locked` before publishing
/// `HALTED` instead of after: a predecessor that stores `locked` between
/// the two finds the node running and does not kick, and the waiter halts
/// for good. Only for the loom model that must see this bug.
fn wait_node_checked(node: &Node, recheck: bool) {
    let p = crate::platform::get();
    loop {
        let mut wait = SpinWait::new();
        for _ in 0..SPIN_TURNS {
            if node.locked.load(Ordering::Acquire) != 0 {
                return;
            }
            wait.turn();
        }
        if recheck {
            // [S] state = HALTED; MB; [L] locked  pairs with kick_node's
            // [S] locked = 1; MB; [RMW] state.
            node.state.store(HALTED, Ordering::Relaxed);
            fence(Ordering::SeqCst);
            if node.locked.load(Ordering::Relaxed) == 0 {
                p.halt_while(&|| node.state.load(Ordering::Relaxed) == HALTED);
            }
        } else if node.locked.load(Ordering::Relaxed) == 0 {
            node.state.store(HALTED, Ordering::Relaxed);
            fence(Ordering::SeqCst);
            p.halt_while(&|| node.state.load(Ordering::Relaxed) == HALTED);
        }
        // Kicked (the kicker already set RUNNING), or woken by the tick.
        let _ = node
            .state
            .compare_exchange(HALTED, RUNNING, Ordering::Relaxed, Ordering::Relaxed);
    }
}

/// The predecessor has just stored `succ.locked = 1`: if `succ` (tail code
/// `tail`) halted, wake it.
#[inline]
fn kick_node(succ: &Node, tail: u32) {
    fence(Ordering::SeqCst);
    if succ
        .state
        .compare_exchange(HALTED, RUNNING, Ordering::Relaxed, Ordering::Relaxed)
        .is_ok()
    {
        crate::platform::get().kick(qspinlock::tail_cpu(tail));
    }
}

/// The queue head (tail code `tail`): spin, then halt, until it has taken
/// the locked byte with a cmpxchg. While it spins it holds the pending bit,
/// so that no running CPU takes the lock past it ([`try_steal`]); before
/// it halts it lets the bit go, so that the lock does not sit free while
/// the host wakes its vCPU (Linux's `pv_wait_head_or_lock`: `set_pending`,
/// `trylock_clear_pending`, `clear_pending`). Returns the lock value it
/// set.
fn wait_head(w: &impl LockWord, tail: u32) -> u32 {
    let p = crate::platform::get();
    let addr = w.addr();
    let mut hashed = false;
    let since = p.now_ns();
    loop {
        // Only the head sets or clears PENDING on this kind of lock.
        w.fetch_or(PENDING, Ordering::Relaxed);
        let mut wait = SpinWait::new();
        for _ in 0..SPIN_TURNS {
            let v = w.load(Ordering::Relaxed);
            if v & LOCKED_MASK == 0 {
                // (*,1,0) -> (*,0,1)
                let mine = (v & !PENDING) | LOCKED;
                if w.cas(v, mine, Ordering::Acquire).is_ok() {
                    events::head_locked(since);
                    return mine;
                }
                continue;
            }
            wait.turn();
        }
        w.fetch_and(!PENDING, Ordering::Relaxed);
        // The byte left SLOW (and its release step, 2) only through an
        // unlock, which took our entry out first.
        let b = w.load(Ordering::Relaxed) & LOCKED_MASK;
        if hashed && b != SLOW && b != SLOW - LOCKED {
            hashed = false;
        }
        if !hashed {
            // Enter the table before the mark: an unlocker that sees SLOW
            // must find the entry.
            hash(addr, tail);
            let mut v = w.load(Ordering::Relaxed);
            loop {
                if v & LOCKED_MASK == 0 {
                    // Released before we marked it: take it, then our
                    // entry out (nobody looks for it: no SLOW was seen).
                    match w.cas(v, v | LOCKED, Ordering::Acquire) {
                        Ok(_) => {
                            let _ = unhash(addr);
                            events::head_locked(since);
                            return v | LOCKED;
                        }
                        Err(now) => {
                            v = now;
                            continue;
                        }
                    }
                }
                // The byte is LOCKED here: SLOW is only ever set by us.
                match w.cas(v, (v & !LOCKED_MASK) | SLOW, Ordering::Release) {
                    Ok(_) => break,
                    Err(now) => v = now,
                }
            }
            hashed = true;
        }
        // Until the unlocker has taken our entry out and cleared the byte
        // (it reads 2 meanwhile: then spin, the release is a moment away).
        p.halt_while(&|| w.load(Ordering::Relaxed) & LOCKED_MASK == SLOW);
    }
}

/// The paravirt waits of the queued lock's slow path.
pub(super) struct Halt;

impl Waits for Halt {
    const HEAD_TAKES_LOCK: bool = true;

    #[inline]
    fn init_node(node: &Node) {
        init_node(node)
    }

    #[inline]
    fn try_lock_now(w: &impl LockWord) -> bool {
        try_steal(w)
    }

    #[inline]
    fn wait_node(node: &Node) {
        wait_node(node)
    }

    /// `busy` is the queued lock's: a paravirt lock has no pending waiter
    /// (see the module doc), so the head waits for the locked byte alone.
    #[inline]
    fn wait_head(w: &impl LockWord, tail: u32, _busy: u32) -> u32 {
        wait_head(w, tail)
    }

    #[inline]
    fn kick_node(succ: &Node, tail: u32) {
        kick_node(succ, tail)
    }
}

// ------------------------------------------------------------ events

/// What the paravirt lock's waiters did (Linux's `lockevent` counters
/// `pv_lock_stealing` and friends): locks taken past a queue, locks taken
/// by a queue head, and the longest wait of a head, from becoming the head
/// to holding the lock. Each CPU counts in its own line, only on the slow
/// paths; plain (not loom) atomics, as they order nothing.
pub mod events {
    use core::sync::atomic::{AtomicU64, Ordering};

    use crate::platform::MAX_CPUS;

    #[repr(align(128))]
    struct Slot {
        steals: AtomicU64,
        head_locks: AtomicU64,
        head_wait_max_ns: AtomicU64,
    }

    #[allow(clippy::declare_interior_mutable_const)]
    const SLOT: Slot = Slot {
        steals: AtomicU64::new(0),
        head_locks: AtomicU64::new(0),
        head_wait_max_ns: AtomicU64::new(0),
    };
    static SLOTS: [Slot; MAX_CPUS] = [SLOT; MAX_CPUS];

    fn mine() -> &'static Slot {
        &SLOTS[crate::platform::get().cpu_id() % MAX_CPUS]
    }

    /// A lock taken while a queue waited.
    pub(super) fn steal() {
        let s = mine();
        s.steals
            .store(s.steals.load(Ordering::Relaxed) + 1, Ordering::Relaxed);
    }

    /// A queue head took the lock; it had been the head since `since`.
    pub(super) fn head_locked(since: u64) {
        let s = mine();
        s.head_locks
            .store(s.head_locks.load(Ordering::Relaxed) + 1, Ordering::Relaxed);
        let waited = crate::platform::get().now_ns().saturating_sub(since);
        if waited > s.head_wait_max_ns.load(Ordering::Relaxed) {
            s.head_wait_max_ns.store(waited, Ordering::Relaxed);
        }
    }

    /// The sums over every CPU (a snapshot while locks are in use).
    #[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
    pub struct Events {
        /// Locks taken past a waiting queue.
        pub steals: u64,
        /// Locks taken by a queue head.
        pub head_locks: u64,
        /// The longest a head waited for the lock, in nanoseconds.
        pub head_wait_max_ns: u64,
    }

    /// Every CPU's events so far.
    pub fn read() -> Events {
        SLOTS.iter().fold(Events::default(), |e, s| Events {
            steals: e.steals + s.steals.load(Ordering::Relaxed),
            head_locks: e.head_locks + s.head_locks.load(Ordering::Relaxed),
            head_wait_max_ns: e
                .head_wait_max_ns
                .max(s.head_wait_max_ns.load(Ordering::Relaxed)),
        })
    }

    /// Start counting afresh (no lock in use: a benchmark's start).
    pub fn reset() {
        for s in &SLOTS {
            s.steals.store(0, Ordering::Relaxed);
            s.head_locks.store(0, Ordering::Relaxed);
            s.head_wait_max_ns.store(0, Ordering::Relaxed);
        }
    }
}

// ------------------------------------------------------------ hash table

/// One entry: a lock word's address (0: free) and the tail code of the
/// head halted on it.
struct Entry {
    lock: AtomicUsize,
    node: AtomicU32,
}

/// Entries: one per node that could be a halted head at once, so the table
/// never fills (Linux sizes its table the same way).
#[cfg(not(loom))]
const ENTRIES: usize = crate::platform::MAX_CPUS * MAX_NODES;
#[cfg(loom)]
// One CPU per loom thread (`super::model::MODEL_CPUS`).
const ENTRIES: usize = loom::MAX_THREADS * MAX_NODES;

#[cfg(not(loom))]
mod table {
    use super::{AtomicU32, AtomicUsize, Entry, ENTRIES};

    #[allow(clippy::declare_interior_mutable_const)]
    const FREE: Entry = Entry {
        lock: AtomicUsize::new(0),
        node: AtomicU32::new(0),
    };
    static TABLE: [Entry; ENTRIES] = [FREE; ENTRIES];

    #[inline]
    pub(super) fn entry(i: usize) -> &'static Entry {
        &TABLE[i]
    }
}

#[cfg(loom)]
mod table {
    use super::{AtomicU32, AtomicUsize, Entry, ENTRIES};

    loom::lazy_static! {
        static ref TABLE: alloc::vec::Vec<Entry> = (0..ENTRIES)
            .map(|_| Entry {
                lock: AtomicUsize::new(0),
                node: AtomicU32::new(0),
            })
            .collect();
    }

    pub(super) fn entry(i: usize) -> &'static Entry {
        &TABLE[i]
    }
}

/// Build this execution's hash table now (loom: before any thread is
/// spawned, see `super::model::init`).
#[cfg(loom)]
pub(crate) fn model_init() {
    let _ = table::entry(0);
}

/// Where the probe for `addr` starts (Fibonacci hashing of the address).
#[inline]
fn slot(addr: usize) -> usize {
    ((addr as u64 >> 2).wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 32) as usize % ENTRIES
}

/// Enter `(addr, tail)`. Linear probing from [`slot`]; a free entry always
/// exists (one per possible head).
fn hash(addr: usize, tail: u32) {
    let mut i = slot(addr);
    loop {
        let e = table::entry(i);
        if e.lock.load(Ordering::Relaxed) == 0
            && e.lock
                .compare_exchange(0, addr, Ordering::Acquire, Ordering::Relaxed)
                .is_ok()
        {
            e.node.store(tail, Ordering::Relaxed);
            return;
        }
        i = (i + 1) % ENTRIES;
    }
}

/// Take `addr`'s entry out; its tail code. There is exactly one entry per
/// lock with a halted head, and only that lock's holder (or the head
/// itself, before it marked the lock) takes it out.
fn unhash(addr: usize) -> Option<u32> {
    let mut i = slot(addr);
    for _ in 0..ENTRIES {
        let e = table::entry(i);
        if e.lock.load(Ordering::Relaxed) == addr {
            let tail = e.node.load(Ordering::Relaxed);
            // Our read of `node` comes before the next owner's write.
            e.lock.store(0, Ordering::Release);
            return Some(tail);
        }
        i = (i + 1) % ENTRIES;
    }
    debug_assert!(false, "pvqspinlock: no hash entry for a SLOW lock");
    None
}

/// The lock with `recheck: false` in its queued waits ([`wait_node_checked`]):
/// a kick can be lost. Only for the loom model that must see this bug
/// (`fs/tests/loom.rs`).
#[cfg(loom)]
pub fn lock_without_recheck(w: &AtomicU32) {
    NO_RECHECK.with(|f| f.set(true));
    lock(w);
    NO_RECHECK.with(|f| f.set(false));
}

#[cfg(loom)]
loom::thread_local! {
    static NO_RECHECK: core::cell::Cell<bool> = core::cell::Cell::new(false);
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use std::sync::Arc;
    use std::time::{Duration, Instant};

    fn entries_for(addr: usize) -> usize {
        (0..ENTRIES)
            .filter(|&i| table::entry(i).lock.load(Ordering::Relaxed) == addr)
            .count()
    }

    /// A waiter behind a long hold becomes the queue head, spins out its
    /// turns, enters the table and marks the lock SLOW (on host threads
    /// the halt itself returns at once); the unlock takes the entry out,
    /// and the waiter gets the lock and leaves the word clean.
    #[test]
    fn a_long_wait_marks_the_lock_slow_and_the_unlock_clears_it() {
        let w = Arc::new(AtomicU32::new(0));
        lock(&*w);
        let addr = w.addr();
        let t = {
            let w = w.clone();
            std::thread::spawn(move || {
                lock(&*w);
                unlock(&*w);
            })
        };
        let deadline = Instant::now() + Duration::from_secs(20);
        while w.load(Ordering::Relaxed) & LOCKED_MASK != SLOW {
            assert!(Instant::now() < deadline, "never marked SLOW");
            std::thread::yield_now();
        }
        assert_eq!(entries_for(addr), 1, "SLOW without one hash entry");
        unlock(&*w);
        t.join().unwrap();
        assert_eq!(w.load(Ordering::Relaxed), 0, "word left dirty");
        assert_eq!(entries_for(addr), 0, "hash entry left behind");
    }

    /// A queue head that spins holds the pending bit: seen from outside,
    /// the word of a held lock with a waiter shows PENDING with its tail.
    #[test]
    fn a_spinning_head_holds_the_pending_bit() {
        let w = Arc::new(AtomicU32::new(0));
        lock(&*w);
        let t = {
            let w = w.clone();
            std::thread::spawn(move || {
                lock(&*w);
                unlock(&*w);
            })
        };
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            let v = w.load(Ordering::Relaxed);
            if v & PENDING != 0 && v & TAIL_MASK != 0 {
                break;
            }
            assert!(Instant::now() < deadline, "head never set PENDING: {v:#x}");
            std::thread::yield_now();
        }
        unlock(&*w);
        t.join().unwrap();
        assert_eq!(w.load(Ordering::Relaxed), 0, "word left dirty");
    }

    /// A free locked byte is not taken past a queue whose head holds the
    /// pending bit (it is spinning for it), and is taken while the bit is
    /// clear (the head halted): Linux's hybrid unfair trylock.
    #[test]
    fn no_steal_past_a_spinning_head() {
        let tail = TAIL_MASK & (1 << 18);
        let w = AtomicU32::new(tail | PENDING);
        assert!(!try_steal(&w), "stole past a spinning head");
        assert_eq!(w.load(Ordering::Relaxed), tail | PENDING);
        let w = AtomicU32::new(tail);
        assert!(try_steal(&w), "did not take a lock whose head is halted");
        assert_eq!(w.load(Ordering::Relaxed), tail | LOCKED);
    }

    #[test]
    fn many_locks_many_threads_keep_exact_counts_and_an_empty_table() {
        let cores = std::thread::available_parallelism().map_or(2, |n| n.get());
        let threads = 2 * cores + 1;
        let words: Arc<Vec<AtomicU32>> = Arc::new((0..3).map(|_| AtomicU32::new(0)).collect());
        let n: Arc<Vec<AtomicU32>> = Arc::new((0..3).map(|_| AtomicU32::new(0)).collect());
        let hs: Vec<_> = (0..threads)
            .map(|t| {
                let (words, n) = (words.clone(), n.clone());
                std::thread::spawn(move || {
                    for i in 0..3_000usize {
                        let k = (i + t) % 3;
                        lock(&words[k]);
                        let v = n[k].load(Ordering::Relaxed);
                        for _ in 0..50 {
                            core::hint::spin_loop();
                        }
                        n[k].store(v + 1, Ordering::Relaxed);
                        unlock(&words[k]);
                    }
                })
            })
            .collect();
        for h in hs {
            h.join().unwrap();
        }
        let total: u32 = n.iter().map(|c| c.load(Ordering::Relaxed)).sum();
        assert_eq!(total, threads as u32 * 3_000);
        for w in words.iter() {
            assert_eq!(w.load(Ordering::Relaxed), 0, "word left dirty");
            assert_eq!(entries_for(w.addr()), 0, "hash entry left behind");
        }
    }
}
