//! A queued spinlock shaped like Linux's (`kernel/locking/qspinlock.c`):
//! a locked byte, a pending bit, and the tail of an MCS queue of per-CPU
//! nodes, all in one 32-bit lock value (layout in [`super::lockword`]).
//!
//! The value reads as a triple (tail, pending, locked), and a CPU moves it
//! through these steps:
//!
//! 1. **Fast path**: `(0,0,0) -> (0,0,1)` with one cmpxchg. Uncontended, the
//!    lock costs what a test-and-set costs.
//! 2. **Pending**: if only the owner is there, `(0,0,1) -> (0,1,1)`: this one
//!    waiter spins on the lock word until the owner leaves, then takes it
//!    `(*,1,0) -> (*,0,1)`. A second waiter would make the line bounce, so
//!    anyone who finds pending or a tail set queues instead.
//! 3. **Queue**: take one of this CPU's MCS nodes, swap its code into the
//!    tail and link it behind the previous tail; then spin on *our own
//!    node* (our own cache line) until the predecessor hands over the
//!    queue head. The head spins on the lock word until both locked and
//!    pending are clear, takes the lock, and passes the head on to its
//!    successor with one store to that successor's node. So a release moves
//!    the lock word to one CPU and an MCS hand-over touches one other line:
//!    the cost per hand-over stays flat however many CPUs wait, which is why
//!    Linux's contended locks saturate instead of collapsing.
//!
//! # Per-CPU nodes and nesting
//! A CPU waits for one lock at a time, except that an interrupt (or, in
//! Linux, a softirq or NMI) may spin on another lock while the interrupted
//! code waits in a queue. Like Linux, each CPU has [`MAX_NODES`] = 4 nodes
//! and a count of those in use; the tail names `(cpu + 1, index)`. A fifth
//! level spins on the lock word with trylock (Linux does the same). Nodes
//! are only in use while waiting: a holder has released its node.
//!
//! # Differences from Linux
//! - Linux writes the locked byte and the 16-bit tail with byte and
//!   halfword stores into the same word; Rust has no mixed-size atomics, so
//!   `set_locked`, `clear_pending_set_locked`, `xchg_tail` and the release
//!   are read-modify-writes of the whole value.
//! - Node links are tail codes, not pointers (no unsafe code needed).
//! - The paravirt hooks (`pv_wait`/`pv_kick`) are a separate kind,
//!   [`super::pvqspinlock`], which runs [`queue`] with its own [`Waits`];
//!   this kind's waiters never halt.
//!
//! Touches: the lock word, this CPU's nodes and its predecessor's and
//! successor's nodes; the CPU id from [`crate::platform`] on the queued path.

use super::atomic::{AtomicU32, Ordering};
use super::lockword::LockWord;
use super::spinwait::SpinWait;

/// MCS nodes per CPU: the nesting levels a CPU may wait on at once.
pub const MAX_NODES: usize = 4;

pub(super) const LOCKED: u32 = 1;
pub(super) const LOCKED_MASK: u32 = 0xff;
pub(super) const PENDING: u32 = 1 << 8;
const TAIL_IDX_SHIFT: u32 = 16;
const TAIL_CPU_SHIFT: u32 = 18;
pub(super) const TAIL_MASK: u32 = 0xffff_0000;
/// How long a waiter that sees a pending→locked hand-over in flight waits
/// for it to finish before queueing (Linux's `_Q_PENDING_LOOPS` on x86: 1).
const PENDING_LOOPS: u32 = 1;

/// One waiter's place in a queue.
pub(super) struct Node {
    /// Set (release) by the predecessor when this node becomes the head.
    pub(super) locked: AtomicU32,
    /// The tail code of the node queued behind this one, 0 while none.
    next: AtomicU32,
    /// Paravirt only: whether this waiter runs or has halted its CPU
    /// ([`super::pvqspinlock`]).
    pub(super) state: AtomicU32,
}

/// A CPU's nodes, on a line (two, for the adjacent-line prefetcher) that
/// only this CPU spins on.
#[repr(align(128))]
struct CpuNodes {
    nodes: [Node; MAX_NODES],
    /// Nodes in use (nesting depth); only this CPU changes it.
    count: AtomicU32,
}

#[cfg(not(loom))]
mod table {
    use super::{AtomicU32, CpuNodes, Node, MAX_NODES};
    use crate::platform::MAX_CPUS;

    #[allow(clippy::declare_interior_mutable_const)]
    const NODE: Node = Node {
        locked: AtomicU32::new(0),
        next: AtomicU32::new(0),
        state: AtomicU32::new(0),
    };
    #[allow(clippy::declare_interior_mutable_const)]
    const CPU: CpuNodes = CpuNodes {
        nodes: [NODE; MAX_NODES],
        count: AtomicU32::new(0),
    };
    static NODES: [CpuNodes; MAX_CPUS] = [CPU; MAX_CPUS];

    #[inline]
    pub(super) fn cpu(cpu: usize) -> &'static CpuNodes {
        &NODES[cpu]
    }
}

#[cfg(loom)]
mod table {
    use super::{AtomicU32, CpuNodes, Node};

    // One CPU per loom thread (`crate::sync::model::MODEL_CPUS`).
    loom::lazy_static! {
        static ref NODES: alloc::vec::Vec<CpuNodes> = (0..loom::MAX_THREADS)
            .map(|_| CpuNodes {
                nodes: core::array::from_fn(|_| Node {
                    locked: AtomicU32::new(0),
                    next: AtomicU32::new(0),
                    state: AtomicU32::new(0),
                }),
                count: AtomicU32::new(0),
            })
            .collect();
    }

    pub(super) fn cpu(cpu: usize) -> &'static CpuNodes {
        &NODES[cpu]
    }
}

/// Build this execution's node table now (loom: before any thread is
/// spawned, see `super::model::init`).
#[cfg(loom)]
pub(crate) fn model_init() {
    let _ = table::cpu(0);
}

// The tail must have room for every CPU id + 1 in its 14 bits.
const _: () = assert!(crate::platform::MAX_CPUS < (1 << (32 - TAIL_CPU_SHIFT)));

#[inline]
fn encode_tail(cpu: usize, idx: usize) -> u32 {
    ((cpu as u32 + 1) << TAIL_CPU_SHIFT) | ((idx as u32) << TAIL_IDX_SHIFT)
}

/// The CPU whose node a tail code names.
#[inline]
pub(super) fn tail_cpu(tail: u32) -> usize {
    (tail >> TAIL_CPU_SHIFT) as usize - 1
}

#[inline]
fn decode_tail(tail: u32) -> &'static Node {
    let cpu = (tail >> TAIL_CPU_SHIFT) as usize - 1;
    let idx = ((tail >> TAIL_IDX_SHIFT) & 3) as usize;
    &table::cpu(cpu).nodes[idx]
}

/// Take the lock if it is free and nobody waits (`queued_spin_trylock`).
#[inline]
pub fn try_lock(w: &impl LockWord) -> bool {
    w.load(Ordering::Relaxed) == 0 && w.cas(0, LOCKED, Ordering::Acquire).is_ok()
}

/// Spin until the lock is ours (`queued_spin_lock`).
#[inline]
pub fn lock(w: &impl LockWord) {
    if w.cas(0, LOCKED, Ordering::Acquire).is_ok() {
        return;
    }
    slow_path(w, true);
}

/// Release the lock (`queued_spin_unlock`): clear the locked byte, keeping
/// the pending bit and the tail that waiters may be setting right now.
#[inline]
pub fn unlock(w: &impl LockWord) {
    // The holder's locked byte is exactly LOCKED: subtracting it borrows
    // from nothing.
    w.fetch_add(LOCKED.wrapping_neg(), Ordering::Release);
}

/// The same lock, but the queue head takes the lock once the locked byte is
/// clear without waiting for the pending waiter, which then takes it too.
/// Only for the loom model that must see this bug (`fs/tests/loom.rs`).
#[cfg(loom)]
pub fn lock_without_pending_wait(w: &AtomicU32) {
    if w.cas(0, LOCKED, Ordering::Acquire).is_ok() {
        return;
    }
    slow_path(w, false);
}

#[cold]
fn slow_path(w: &impl LockWord, head_waits_for_pending: bool) {
    let mut val = w.load(Ordering::Relaxed);

    // A pending waiter is turning into the owner (*,1,0 -> *,0,1): give it
    // a moment rather than queueing behind a lock about to be free.
    if val == PENDING {
        let mut n = PENDING_LOOPS;
        while val == PENDING && n > 0 {
            super::atomic::spin_loop();
            val = w.load(Ordering::Relaxed);
            n -= 1;
        }
    }

    // Only the owner is there: try to become the one pending waiter.
    if val & !LOCKED_MASK == 0 {
        val = w.fetch_or(PENDING, Ordering::Acquire);
        if val & !LOCKED_MASK == 0 {
            // We are pending (0,1,*): wait for the owner to leave ...
            if val & LOCKED_MASK != 0 {
                let mut wait = SpinWait::new();
                while w.load(Ordering::Acquire) & LOCKED_MASK != 0 {
                    wait.turn();
                }
            }
            // ... and take over: (*,1,0) -> (*,0,1). Nobody else sets the
            // locked byte while pending is set (the queue head waits).
            w.fetch_add(LOCKED.wrapping_sub(PENDING), Ordering::Relaxed);
            return;
        }
        // Someone else was pending or queued: undo our bit if we set it.
        if val & PENDING == 0 {
            w.fetch_and(!PENDING, Ordering::Relaxed);
        }
    }
    queue::<Spin>(w, head_waits_for_pending);
}

/// The waits of [`queue`]: the steps in which the queued lock and its
/// paravirt kind differ. This kind spins ([`Spin`]); the paravirt kind
/// halts (`super::pvqspinlock::Halt`: a waiter halts its CPU after a
/// bounded spin, and whoever hands it the queue head or the lock kicks
/// it). Linux builds `queued_spin_lock_slowpath` twice, with its `pv_*`
/// hooks empty and with those of `qspinlock_paravirt.h`; here the hooks
/// are this trait, so the paravirt kind builds on this file and this file
/// does not name it.
pub(super) trait Waits {
    /// Whether [`Waits::wait_head`] returns with the locked byte taken
    /// (the paravirt head takes it with a cmpxchg: running CPUs may take a
    /// free byte while the head is halted).
    const HEAD_TAKES_LOCK: bool;
    /// A node enters the queue.
    fn init_node(node: &Node);
    /// Take the lock if that needs no waiting now (our node is ready).
    fn try_lock_now(w: &impl LockWord) -> bool;
    /// A queued waiter: until the predecessor makes `node` the head
    /// (`node.locked`, seen with acquire).
    fn wait_node(node: &Node);
    /// The head (tail code `tail`): until no bit of `busy` is set in the
    /// lock value; returns the value seen.
    fn wait_head(w: &impl LockWord, tail: u32, busy: u32) -> u32;
    /// The predecessor has just stored `succ.locked = 1` (`succ`'s tail
    /// code: `tail`).
    fn kick_node(succ: &Node, tail: u32);
}

/// This kind's waits: spin on our own node, then (as the head) on the
/// lock word.
pub(super) struct Spin;

impl Waits for Spin {
    const HEAD_TAKES_LOCK: bool = false;

    #[inline]
    fn init_node(_: &Node) {}

    #[inline]
    fn try_lock_now(w: &impl LockWord) -> bool {
        try_lock(w)
    }

    #[inline]
    fn wait_node(node: &Node) {
        let mut wait = SpinWait::new();
        while node.locked.load(Ordering::Acquire) == 0 {
            wait.turn();
        }
    }

    #[inline]
    fn wait_head(w: &impl LockWord, _tail: u32, busy: u32) -> u32 {
        let mut val = w.load(Ordering::Acquire);
        let mut wait = SpinWait::new();
        while val & busy != 0 {
            wait.turn();
            val = w.load(Ordering::Acquire);
        }
        val
    }

    #[inline]
    fn kick_node(_: &Node, _: u32) {}
}

/// Wait in the MCS queue, then take the lock, with the waits of `W`; the
/// steps between the waits are the same for both kinds.
pub(super) fn queue<W: Waits>(w: &impl LockWord, head_waits_for_pending: bool) {
    let cpu = crate::platform::get().cpu_id();
    let mine = table::cpu(cpu);
    let idx = mine.count.fetch_add(1, Ordering::Relaxed) as usize;
    if idx >= MAX_NODES {
        // Nested deeper than we have nodes: spin on the word (Linux too).
        let mut wait = SpinWait::new();
        while !try_lock(w) {
            wait.turn();
        }
        mine.count.fetch_sub(1, Ordering::Relaxed);
        return;
    }
    let node = &mine.nodes[idx];
    let tail = encode_tail(cpu, idx);
    node.locked.store(0, Ordering::Relaxed);
    node.next.store(0, Ordering::Relaxed);
    W::init_node(node);

    // Touching our node may have taken a while (a cold line): the lock may
    // be free by now. (A paravirt waiter takes a free locked byte even past
    // a queue whose head is halted: see pvqspinlock.)
    if W::try_lock_now(w) {
        mine.count.fetch_sub(1, Ordering::Relaxed);
        return;
    }

    // Publish the node: (p,*,*) -> (n,*,*). Release, so that whoever finds
    // our code in the tail also finds the node initialised.
    let old = xchg_tail(w, tail);
    let mut next = 0;
    if old & TAIL_MASK != 0 {
        // Link behind the previous tail, then wait on our own line. The
        // predecessor cannot leave the queue before it sees this link (it
        // waits for `next` unless the tail is still its own).
        let prev = decode_tail(old);
        prev.next.store(tail, Ordering::Release);
        W::wait_node(node);
        // Whoever queued behind us meanwhile; read early, as Linux does,
        // to overlap the miss with the wait below.
        next = node.next.load(Ordering::Acquire);
    }

    // We are the head: wait for the owner and the pending waiter to leave
    // (*,x,y) -> (*,0,0). The pending waiter goes first: it was there
    // before any queue formed.
    let busy = if head_waits_for_pending {
        LOCKED_MASK | PENDING
    } else {
        LOCKED_MASK
    };
    // The paravirt head returns with the locked byte ours: running CPUs
    // may take it while the head is halted, so the head takes it with a
    // cmpxchg.
    let val = W::wait_head(w, tail, busy);

    // Claim the lock. Alone in the queue: (n,0,0) -> (0,0,1), dissolving
    // it. Else (*,*,0) -> (*,*,1) and hand the head to the next node.
    if val & TAIL_MASK == tail && w.cas(val, LOCKED, Ordering::Relaxed).is_ok() {
        mine.count.fetch_sub(1, Ordering::Relaxed);
        return;
    }
    if !W::HEAD_TAKES_LOCK {
        w.fetch_or(LOCKED, Ordering::Relaxed);
    }
    // The tail moved, so someone is behind us; it may not have linked yet.
    let mut wait = SpinWait::new();
    while next == 0 {
        wait.turn();
        next = node.next.load(Ordering::Acquire);
    }
    let succ = decode_tail(next);
    succ.locked.store(1, Ordering::Release);
    W::kick_node(succ, next);
    mine.count.fetch_sub(1, Ordering::Relaxed);
}

/// Swap our code into the tail, keeping pending and locked; returns the
/// previous value. Release publishes our initialised node to whoever queues
/// behind us; acquire makes the previous tail's initialisation of its node
/// (`next = 0`) happen before our link into it. Without the acquire, the
/// memory model lets the predecessor's `next = 0` land after our link and
/// erase it, and the predecessor waits for a link forever: the loom model
/// of the paravirt lock found this (x86's `lock cmpxchg` is a full barrier
/// either way, Linux relies on the address dependency).
fn xchg_tail(w: &impl LockWord, tail: u32) -> u32 {
    let mut old = w.load(Ordering::Relaxed);
    loop {
        match w.cas(old, (old & !TAIL_MASK) | tail, Ordering::AcqRel) {
            Ok(_) => return old,
            Err(now) => old = now,
        }
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn tail_codes_round_trip_and_are_never_zero() {
        for cpu in [0, 1, 17, crate::platform::MAX_CPUS - 1] {
            for idx in 0..MAX_NODES {
                let t = encode_tail(cpu, idx);
                assert_ne!(t, 0);
                assert_eq!(t & !TAIL_MASK, 0);
                assert!(core::ptr::eq(decode_tail(t), &table::cpu(cpu).nodes[idx]));
            }
        }
    }

    #[test]
    fn uncontended_lock_is_the_locked_byte() {
        let a = AtomicU32::new(0);
        lock(&a);
        assert_eq!(a.load(Ordering::Relaxed), LOCKED);
        assert!(!try_lock(&a));
        unlock(&a);
        assert_eq!(a.load(Ordering::Relaxed), 0);
    }

    #[test]
    fn a_queue_forms_behind_the_pending_waiter_and_drains() {
        use std::sync::Arc;
        use std::time::{Duration, Instant};
        let a = Arc::new(AtomicU32::new(0));
        let n = Arc::new(AtomicU32::new(0));
        lock(&*a);
        let hs: Vec<_> = (0..3)
            .map(|_| {
                let (a, n) = (a.clone(), n.clone());
                std::thread::spawn(move || {
                    lock(&*a);
                    let v = n.load(Ordering::Relaxed);
                    n.store(v + 1, Ordering::Relaxed);
                    unlock(&*a);
                })
            })
            .collect();
        // One waiter becomes pending, the other two queue behind it.
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            let v = a.load(Ordering::Relaxed);
            if v & PENDING != 0 && v & TAIL_MASK != 0 {
                break;
            }
            assert!(Instant::now() < deadline, "no pending + queue: {v:#x}");
            std::thread::yield_now();
        }
        assert_eq!(n.load(Ordering::Relaxed), 0, "someone got in while held");
        unlock(&*a);
        for h in hs {
            h.join().unwrap();
        }
        assert_eq!(n.load(Ordering::Relaxed), 3);
        assert_eq!(a.load(Ordering::Relaxed), 0, "queue left behind");
    }

    #[test]
    fn many_threads_keep_an_exact_count() {
        use std::sync::Arc;
        let a = Arc::new(AtomicU32::new(0));
        let n = Arc::new(AtomicU32::new(0));
        let hs: Vec<_> = (0..4)
            .map(|_| {
                let (a, n) = (a.clone(), n.clone());
                std::thread::spawn(move || {
                    for _ in 0..20_000 {
                        lock(&*a);
                        let v = n.load(Ordering::Relaxed);
                        n.store(v + 1, Ordering::Relaxed);
                        unlock(&*a);
                    }
                })
            })
            .collect();
        for h in hs {
            h.join().unwrap();
        }
        assert_eq!(n.load(Ordering::Relaxed), 80_000);
        assert_eq!(a.load(Ordering::Relaxed), 0, "queue left behind");
    }

    /// More spinning threads than cores: hand-overs go to threads the
    /// scheduler has taken off their core, and waiters give their CPU away
    /// (`sync::spinwait`) mid-queue. The count must stay exact and the
    /// queue must drain. (The convoy that made the queued lock look hung
    /// needs the lookup path's nesting: `fs/tests/enomem.rs`'s negative-LRU
    /// test took about 4 ms per lookup without the yield, see spinwait.)
    #[test]
    fn more_threads_than_cores_still_make_progress() {
        use std::sync::Arc;
        let cores = std::thread::available_parallelism().map_or(2, |n| n.get());
        let threads = 2 * cores + 1;
        const EACH: u32 = 5_000;
        let a = Arc::new(AtomicU32::new(0));
        let n = Arc::new(AtomicU32::new(0));
        // All start together, so that they really contend.
        let go = Arc::new(std::sync::Barrier::new(threads));
        let hs: Vec<_> = (0..threads)
            .map(|_| {
                let (a, n, go) = (a.clone(), n.clone(), go.clone());
                std::thread::spawn(move || {
                    go.wait();
                    for _ in 0..EACH {
                        lock(&*a);
                        let v = n.load(Ordering::Relaxed);
                        // A hold long enough for the others to queue.
                        for _ in 0..50 {
                            core::hint::spin_loop();
                        }
                        n.store(v + 1, Ordering::Relaxed);
                        unlock(&*a);
                    }
                })
            })
            .collect();
        for h in hs {
            h.join().unwrap();
        }
        assert_eq!(n.load(Ordering::Relaxed), threads as u32 * EACH);
        assert_eq!(a.load(Ordering::Relaxed), 0, "queue left behind");
    }
}
