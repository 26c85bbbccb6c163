//! Loom models of the two RCU implementations' grace periods, on their own
//! code: the kernel's QSBR machine (`fs::sync::qsbr`, which
//! `kernel/src/sync/rcu.rs` runs) and host mode's epochs (`fs::sync::epoch`,
//! which `fs::sync::host` runs). `make test-loom` runs them with the other
//! models (`fs/tests/loom.rs`):
//!
//! ```text
//! RUSTFLAGS="--cfg loom" CARGO_TARGET_DIR=target/loom \
//!     cargo test -p fs --release --test loom_rcu
//! ```
//!
//! Each model is the race of an updater's `call_rcu` against a reader's
//! next read-side section: the updater unpublishes object A (the pointer
//! now names B), takes the grace period A must wait for, waits for it and
//! frees A; a reader's CPU moves the grace-period counter on (its own
//! `call_rcu` of something else starts a grace period; host mode's
//! `rcu_quiescent_state` advances the epoch), reports a quiescent state or
//! enters at the new count, and in its read-side section reads the pointer
//! and asserts that what it reached is not freed. The harmful
//! interleaving: the updater's read of the counter comes before the
//! increment, the reader's report or entry after it, and the reader still
//! reads A. The updater's fence after the unpublish (Linux's `smp_mb()` in
//! `rcu_seq_snap`) is what forbids it; loom finds it without.
//!
//! Callback queues, the tick and memory are the platforms' own and not
//! modelled: the updater waits for its grace period in place.
//!
//! Without `--cfg loom` this file is empty.
#![cfg(loom)]

use std::sync::Arc;

use fs::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use fs::sync::epoch::{due, Epoch, Slot};
use fs::sync::qsbr::{CpuGp, GracePeriods};
use loom::thread;

/// Preemption bound: the harmful interleavings need two (the updater
/// between its unpublish and its snapshot, the reader after its
/// increment).
const BOUND: usize = 3;

fn model<F: Fn() + Sync + Send + 'static>(f: F) {
    let mut b = loom::model::Builder::new();
    if b.preemption_bound.is_none() {
        b.preemption_bound = Some(BOUND);
    }
    // The waits spin with a yield on every turn.
    b.max_branches = b.max_branches.max(20_000);
    b.check(f);
}

/// The published pointer (which object a reader reaches) and each object's
/// freed flag.
struct Objects {
    published: AtomicUsize,
    freed: [AtomicBool; 2],
    /// The updater has freed A: the other CPUs may stop reporting.
    finished: AtomicBool,
}

const A: usize = 0;
const B: usize = 1;

impl Objects {
    fn new() -> Objects {
        Objects {
            published: AtomicUsize::new(A),
            freed: [AtomicBool::new(false), AtomicBool::new(false)],
            finished: AtomicBool::new(false),
        }
    }

    /// The updater's unpublish: the pointer names B from now on.
    fn unpublish_a(&self) {
        self.published.store(B, Ordering::Release);
    }

    /// A's grace period is over: free it.
    fn free_a(&self) {
        self.freed[A].store(true, Ordering::Release);
        self.finished.store(true, Ordering::Release);
    }

    /// A reader's dereference inside its read-side section.
    fn read(&self) {
        let o = self.published.load(Ordering::Acquire);
        assert!(
            !self.freed[o].load(Ordering::Acquire),
            "a reader reached object {o} after its grace period freed it"
        );
    }

    fn finished(&self) -> bool {
        self.finished.load(Ordering::Acquire)
    }
}

// ---------------------------------------------------------------- QSBR

struct Qsbr {
    gp: GracePeriods,
    cpus: [CpuGp; 2],
    objs: Objects,
}

const READER: usize = 0;
const UPDATER: usize = 1;

impl Qsbr {
    fn new() -> Arc<Qsbr> {
        let q = Qsbr {
            gp: GracePeriods::new(),
            cpus: [CpuGp::new(), CpuGp::new()],
            objs: Objects::new(),
        };
        for c in &q.cpus {
            q.gp.online(c);
        }
        Arc::new(q)
    }

    fn advance(&self) -> u64 {
        self.gp.advance(|| self.cpus.iter())
    }

    /// Report quiescent states on `cpu` (its tick) until the updater is
    /// done.
    fn idle(&self, cpu: usize) {
        while !self.objs.finished() {
            self.gp.report_qs(&self.cpus[cpu]);
            thread::yield_now();
        }
    }
}

/// The kernel's `call_rcu` against a CPU that starts a grace period (its
/// own `call_rcu` of something else), reports a quiescent state (the tick,
/// an explicit point) and enters a read-side section.
#[test]
fn qsbr_call_rcu_never_frees_what_a_later_reader_reaches() {
    model(|| {
        let q = Qsbr::new();
        let updater = {
            let q = q.clone();
            thread::spawn(move || {
                let me = &q.cpus[UPDATER];
                q.objs.unpublish_a();
                // call_rcu: snapshot, queue, request.
                let target = q.gp.snap();
                q.gp.request(me, target);
                // The callback runs once its grace period is complete.
                loop {
                    q.gp.report_qs(me);
                    if q.advance() >= target {
                        break;
                    }
                    thread::yield_now();
                }
                q.objs.free_a();
            })
        };
        let me = &q.cpus[READER];
        q.gp.request(me, q.gp.snap());
        q.gp.report_qs(me);
        me.read_lock();
        q.objs.read();
        me.read_unlock();
        q.idle(READER);
        updater.join().unwrap();
    });
}

/// As above, but the grace period is started by a third CPU (its
/// `synchronize_rcu`; outside the online set, so that the model stays
/// small: only its increment matters). The reader's report then reads a
/// count it did not write, and only a fence after that read keeps its next
/// read-side section after it (x86 keeps loads in order; C11 does not).
#[test]
fn qsbr_report_after_another_cpus_start_orders_the_next_section() {
    model(|| {
        let q = Qsbr::new();
        let updater = {
            let q = q.clone();
            thread::spawn(move || {
                let me = &q.cpus[UPDATER];
                q.objs.unpublish_a();
                let target = q.gp.snap();
                q.gp.request(me, target);
                loop {
                    q.gp.report_qs(me);
                    if q.advance() >= target {
                        break;
                    }
                    thread::yield_now();
                }
                q.objs.free_a();
            })
        };
        let starter = {
            let q = q.clone();
            thread::spawn(move || {
                q.gp.start();
            })
        };
        let me = &q.cpus[READER];
        q.gp.report_qs(me);
        me.read_lock();
        q.objs.read();
        me.read_unlock();
        q.idle(READER);
        updater.join().unwrap();
        starter.join().unwrap();
    });
}

// ---------------------------------------------------------------- epochs

struct Epochs {
    epoch: Epoch,
    slots: [Slot; 2],
    objs: Objects,
}

impl Epochs {
    /// Host mode's `try_advance` with readers that fence.
    fn advance(&self) -> u64 {
        self.epoch.try_advance(|| &self.slots[..], |_| ())
    }
}

/// Host mode's `call_rcu` (the epoch snapshot), waiting as
/// `synchronize_rcu` does, against a thread that advances the epoch (its
/// `rcu_quiescent_state`) and enters a read-side section. Readers that
/// fence (`FS_RCU_READER=fence`): the `membarrier` mode's barrier on other
/// CPUs has no loom model.
#[test]
fn epoch_call_rcu_never_frees_what_a_later_reader_reaches() {
    model(|| {
        let e = Arc::new(Epochs {
            epoch: Epoch::new(),
            slots: [Slot::new(), Slot::new()],
            objs: Objects::new(),
        });
        let updater = {
            let e = e.clone();
            thread::spawn(move || {
                e.objs.unpublish_a();
                let retired = e.epoch.snap();
                while !due(retired, e.advance()) {
                    thread::yield_now();
                }
                e.objs.free_a();
            })
        };
        e.advance();
        let slot = &e.slots[READER];
        e.epoch.enter(slot, false);
        e.objs.read();
        slot.exit();
        updater.join().unwrap();
    });
}
