//! Loom model of host mode's grace periods without `membarrier`
//! (`fs::sync::host`, "Grace periods without membarrier"; the promises
//! are `fs::sync::epoch`'s, run here as host mode runs them): fence-free
//! readers, quiescent-state acks, offline threads, and the `membarrier`
//! an advance pays only for a slot that made no promise. `make test-loom`
//! runs it with the other models:
//!
//! ```text
//! RUSTFLAGS="--cfg loom" CARGO_TARGET_DIR=target/loom \
//!     cargo test -p fs --release --test loom_host_rcu
//! ```
//!
//! The property: an object retired before a grace period starts is never
//! freed while a reader that could have seen it is inside its read-side
//! section. The updater unpublishes A (the pointer now names B), takes the
//! epoch A is retired in, advances until A is due and frees A. A reader
//! thread lives a benchmark task's life beside it: it claims a slot (the
//! claimed count grows), comes online, runs a section as a laggard (no
//! promise yet), reports a quiescent state, runs a section on that promise,
//! goes offline (the monitor's wait), comes online, runs a last section and
//! exits (its slot offline). In every section it dereferences what the
//! pointer names, and dereferences it again before it leaves: each access
//! is a read of a `loom::cell::UnsafeCell` that the free writes, so loom
//! reports any access that does not happen before the free (and the freed
//! flag makes the common case a plain assertion).
//!
//! `membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED)` is modelled by what it
//! guarantees: every running thread of the process passes a full barrier
//! between the call's entry and return. The caller fences, posts a
//! request, waits until the reader has served it (or exited: a thread that
//! is not running needs no interrupt) and fences again; the reader serves a
//! request at its barrier points, where an interrupt may land: at its
//! compiler barrier (between its slot store and its first load of the
//! pointer) and between its two dereferences. Elsewhere a landing either
//! sits next to a fence of the reader's own (`come_online`, `quiescent`)
//! or between the epoch load and the slot store, which only makes the
//! published epoch older (an advance waits longer).
//!
//! Two configurations. In the first the updater advances the epoch
//! itself (`synchronize_rcu`), and the reader is fence-free: the promises
//! and the laggard's `membarrier` are what keep it safe. In the second the
//! reclaimer advances on its own thread and the updater only waits for its
//! object to come due (a task that runs its own callbacks), and the reader
//! fences (`FS_RCU_READER=fence`): there the claimed count, read by an
//! advance after its fence, and the offline and exited slots are checked
//! with a third thread. The fence-free reader is not checked against the
//! reclaimer's advances: it rests on its epoch load staying before its
//! pointer loads against a retirer that fenced before reading the older
//! epoch (x86 keeps loads in order; ARMv8 keeps them after the `ldar` of
//! `Epoch::enter`'s acquire), an ordering C11's fences give no reader
//! without a fence of its own. Loom finds that execution there, with every
//! advance paying its `membarrier`: the reader enters at the epoch the
//! reclaimer's advance made, still reads A, and the interrupt lands after
//! its dereference. It is the premise of the `membarrier` reader mode
//! (liburcu's `urcu-memb`), not of the promises.
//!
//! Deliberate bugs the models catch (each tried, none kept): an advance
//! that skips the laggard's `membarrier` (the first model: a causality
//! violation on A's memory); a quiescent-state ack inside the section (the
//! first); an advance that reads the claimed count before its fence (the
//! second).
//!
//! Without `--cfg loom` this file is empty.
#![cfg(loom)]

use std::sync::atomic::AtomicU64 as StdAtomicU64;
use std::sync::Arc;

use fs::sync::atomic::{fence, AtomicBool, AtomicUsize, Ordering};
use fs::sync::epoch::{due, Epoch, Slot};
use loom::cell::UnsafeCell;
use loom::thread;

/// Preemption bound: the harmful interleavings need two (the updater
/// between its unpublish and its snapshot, the reader after its slot
/// store); three leaves one to spare.
const BOUND: usize = 3;

fn model<F: Fn() + Sync + Send + 'static>(f: F) {
    let mut b = loom::model::Builder::new();
    if b.preemption_bound.is_none() {
        b.preemption_bound = Some(BOUND);
    }
    // The advancer spins (with a yield) while the reader is in a section
    // and while a membarrier waits for it.
    b.max_branches = b.max_branches.max(50_000);
    b.check(f);
}

/// Host mode's reader modes: `membarrier` (readers skip their fence) and
/// `fence` (`FS_RCU_READER=fence`).
const FENCE_FREE: bool = true;
const FENCED: bool = false;

const A: usize = 0;
const B: usize = 1;

/// The updater's slot (claimed first, as the benchmark's main thread's
/// is) and the reader's.
const UPDATER: usize = 0;
const READER: usize = 1;

/// A wait's turn that saw epoch `now`: yield to the other threads only
/// when the epoch has not moved since the last turn (`last`), or has
/// reached [`BUSY_UNTIL`]. Loom lets no load after a yield return a value
/// its thread saw before it, so a yield after every advance would hide the
/// advances that read a stale value (the claimed count of an advance that
/// follows another at once); a wait that never yields would never end.
fn stuck(last: &mut u64, now: u64) {
    if now == *last || now >= BUSY_UNTIL {
        thread::yield_now();
    }
    *last = now;
}

/// The epoch from which every wait's turn yields: the object retired at 1
/// is due there.
const BUSY_UNTIL: u64 = 3;

/// The membarrier model (module doc), for one reader thread.
struct Membarrier {
    /// Requests posted so far.
    requested: AtomicUsize,
    /// The last request the reader passed a barrier for.
    served: AtomicUsize,
    /// The reader thread has exited.
    gone: AtomicBool,
}

impl Membarrier {
    /// The advancer's `membarrier(2)`.
    fn call(&self) {
        fence(Ordering::SeqCst);
        let n = self.requested.fetch_add(1, Ordering::AcqRel) + 1;
        while !(self.gone.load(Ordering::Acquire) || self.served.load(Ordering::Acquire) >= n) {
            thread::yield_now();
        }
        fence(Ordering::SeqCst);
    }

    /// A point of the reader's where the interrupt may land.
    fn point(&self) {
        let n = self.requested.load(Ordering::Acquire);
        if n > self.served.load(Ordering::Relaxed) {
            fence(Ordering::SeqCst);
            self.served.store(n, Ordering::Release);
        }
    }

    /// The reader thread is gone: no barrier waits for it.
    fn exit(&self) {
        self.gone.store(true, Ordering::Release);
    }
}

/// How the model's executions ended their grace periods (over all
/// executions, so not a loom atomic): the test requires both kinds.
static BARRIERS_PAID: StdAtomicU64 = StdAtomicU64::new(0);
static BARRIERS_SKIPPED: StdAtomicU64 = StdAtomicU64::new(0);

struct Host {
    /// Readers skip their fence: advances pay `membarrier` where a slot
    /// made no promise (host mode's `FENCE_FREE`).
    fence_free: bool,
    epoch: Epoch,
    slots: [Slot; 2],
    /// Host mode's `HIGH_WATER`: how many slots are claimed.
    claimed: AtomicUsize,
    mb: Membarrier,
    published: AtomicUsize,
    freed: [AtomicBool; 2],
    /// The updater has freed A: the reclaimer may stop.
    finished: AtomicBool,
    /// The objects' memory: a dereference reads it, the free writes it.
    memory: [UnsafeCell<u64>; 2],
}

impl Host {
    // Loom's cells are not Sync, and its threads are coroutines on one OS
    // thread: the cells are there for loom to check who touches A when.
    #[allow(clippy::arc_with_non_send_sync)]
    fn new(fence_free: bool) -> Arc<Host> {
        Arc::new(Host {
            fence_free,
            epoch: Epoch::new(),
            slots: [Slot::new(), Slot::new()],
            claimed: AtomicUsize::new(UPDATER + 1),
            mb: Membarrier {
                requested: AtomicUsize::new(0),
                served: AtomicUsize::new(0),
                gone: AtomicBool::new(false),
            },
            published: AtomicUsize::new(A),
            freed: [AtomicBool::new(false), AtomicBool::new(false)],
            finished: AtomicBool::new(false),
            memory: [UnsafeCell::new(0), UnsafeCell::new(0)],
        })
    }

    /// Host mode's `try_advance` by the thread of slot `own` (the
    /// updater's, or the reclaimer's): the claimed slots read after the
    /// fence, `membarrier` unless every other slot promised.
    fn advance(&self, own: usize) -> u64 {
        self.epoch.try_advance(
            || &self.slots[..self.claimed.load(Ordering::Relaxed)],
            |slots| {
                if !self.fence_free {
                    return;
                }
                if self.epoch.promised(slots, Some(own)) {
                    BARRIERS_SKIPPED.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                } else {
                    BARRIERS_PAID.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    self.mb.call();
                }
            },
        )
    }

    /// One access to object `o`'s memory inside a section.
    fn touch(&self, o: usize) {
        assert!(
            !self.freed[o].load(Ordering::Acquire),
            "a reader reached object {o} after its grace period freed it"
        );
        self.memory[o].with(|_| ());
    }

    /// A read-side section (host mode's `rcu_read_lock` for a thread that
    /// is online; `fence_free` as in the `membarrier` mode): enter,
    /// dereference the pointer, dereference again before leaving.
    fn section(&self) {
        let slot = &self.slots[READER];
        self.epoch.enter(slot, self.fence_free);
        self.mb.point();
        let o = self.published.load(Ordering::Acquire);
        self.touch(o);
        self.mb.point();
        self.touch(o);
        slot.exit();
    }

    /// The updater: unpublish A, retire it, wait until it is due (advancing
    /// the epoch itself, as `synchronize_rcu` does, or watching the
    /// reclaimer's advances, as a task that runs its own callbacks does),
    /// free it (the callback's destructor writes its memory).
    fn update(&self, advances: bool) {
        self.published.store(B, Ordering::Release);
        let retired = self.epoch.snap();
        let mut last = retired;
        loop {
            let now = if advances {
                self.advance(UPDATER)
            } else {
                self.epoch.now()
            };
            if due(retired, now) {
                break;
            }
            stuck(&mut last, now);
        }
        self.freed[A].store(true, Ordering::Release);
        self.memory[A].with_mut(|_| ());
        self.finished.store(true, Ordering::Release);
    }

    /// The reclaimer's ticks (slot [`UPDATER`]'s, offline: the updater
    /// thread then takes no section): advance until the updater is done.
    fn reclaim(&self) {
        let mut last = 0;
        while !self.finished.load(Ordering::Acquire) {
            let now = self.advance(UPDATER);
            stuck(&mut last, now);
        }
    }
}

/// A benchmark task's life against a `call_rcu` whose grace period its
/// own thread drives: every kind of slot the advancer meets (unclaimed,
/// laggard, acked, offline, exited) in every interleaving.
#[test]
fn promises_never_let_a_grace_period_free_what_a_reader_holds() {
    model(|| {
        let h = Host::new(FENCE_FREE);
        let updater = {
            let h = h.clone();
            thread::spawn(move || h.update(true))
        };
        let slot = &h.slots[READER];
        // Local::claim: the claimed count grows; the slot is offline.
        h.claimed.fetch_max(READER + 1, Ordering::Relaxed);
        // First section: no promise yet (a laggard until it reports).
        slot.come_online();
        h.section();
        // rcu_quiescent_state, then a section on that promise.
        slot.quiescent(&h.epoch);
        h.section();
        // rcu_offline (the monitor's wait), then a section after coming
        // online again.
        slot.go_offline();
        slot.come_online();
        h.section();
        // Thread exit (Local's drop).
        slot.go_offline();
        h.mb.exit();
        updater.join().unwrap();
    });
    let (paid, skipped) = (
        BARRIERS_PAID.load(std::sync::atomic::Ordering::Relaxed),
        BARRIERS_SKIPPED.load(std::sync::atomic::Ordering::Relaxed),
    );
    eprintln!("advances that paid a membarrier: {paid}; that skipped it on a promise: {skipped}");
    assert!(
        paid > 0 && skipped > 0,
        "the model never took one of the two paths"
    );
}

/// The same race with host mode's threads as they are in a benchmark: the
/// reclaimer advances the epoch on its ticks, the updater (a task whose
/// callbacks run on its own thread) waits for its object to come due, and
/// the reader is a task that claims its slot while the reclaimer is
/// between advances: every advance reads the claimed slots after its
/// fence. The reader's life is shorter (a laggard's section, a report, a
/// section on it, exit) to keep three threads' interleavings in bounds.
#[test]
fn promises_hold_when_the_reclaimer_advances() {
    model(|| {
        let h = Host::new(FENCED);
        let updater = {
            let h = h.clone();
            thread::spawn(move || h.update(false))
        };
        let reclaimer = {
            let h = h.clone();
            thread::spawn(move || h.reclaim())
        };
        let slot = &h.slots[READER];
        h.claimed.fetch_max(READER + 1, Ordering::Relaxed);
        slot.come_online();
        h.section();
        slot.quiescent(&h.epoch);
        h.section();
        slot.go_offline();
        h.mb.exit();
        updater.join().unwrap();
        reclaimer.join().unwrap();
    });
}
