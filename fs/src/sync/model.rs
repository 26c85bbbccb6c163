//! The platform loom models run on (`--cfg loom` only).
//!
//! Its RCU is host mode's epoch machine ([`super::epoch`], the code
//! `super::host` runs, with readers that fence), built from the same loom
//! atomics as the primitives it protects:
//! - each model thread owns one reader slot; its outermost read-side
//!   section enters and leaves it as host mode's readers do;
//! - `call_rcu` queues on the calling thread and never frees anything;
//! - `synchronize_rcu` takes the caller's queue, snapshots the epoch,
//!   advances it (as host mode's `synchronize_rcu` does) until the queue is
//!   due, and only then runs the queued destructors.
//!
//! Reclamation happens only at an explicit `synchronize_rcu`, so a model
//! decides where grace periods end.
//!
//! The paravirt lock's halt and kick ([`Platform::halt_while`],
//! [`Platform::kick`]) are modelled as x86 runs them: each CPU has a
//! pending-kick flag under a loom mutex. Entering the halt is `cli`: a kick
//! that came before it was taken as an interrupt while running, so the flag
//! is cleared; then the condition is looked at, and the CPU waits on a
//! condvar until a kick sets the flag (`sti; hlt`: the wait releases the
//! mutex atomically, so no kick slips in between). There is no tick, so a
//! kick that is lost leaves the CPU halted for good and loom reports the
//! deadlock.
//!
//! State lives in `loom::lazy_static`/`loom::thread_local`, i.e. per loom
//! execution. Call [`init`] at the start of each model, before spawning, so
//! that the lazy initialisation adds no synchronisation between the modelled
//! threads.
//!
//! Touches: only its own per-execution state.

use alloc::vec::Vec;
use core::cell::{Cell, RefCell};

use super::atomic::spin_loop;
use super::epoch::{due, Epoch, Slot};
use super::rcu::Retired;
use crate::platform::Platform;

/// Model threads (loom's limit): one `active` flag and one CPU id each.
pub const MODEL_CPUS: usize = loom::MAX_THREADS;

struct Readers {
    epoch: Epoch,
    slots: [Slot; MODEL_CPUS],
}

/// One CPU's halt: whether a kick is pending, and the `hlt` to wait in.
struct Halt {
    kicked: loom::sync::Mutex<bool>,
    wake: loom::sync::Condvar,
}

loom::lazy_static! {
    static ref READERS: Readers = Readers {
        epoch: Epoch::new(),
        slots: core::array::from_fn(|_| Slot::new()),
    };
    static ref HALTS: Vec<Halt> = (0..MODEL_CPUS)
        .map(|_| Halt {
            kicked: loom::sync::Mutex::new(false),
            wake: loom::sync::Condvar::new(),
        })
        .collect();
    /// CPU ids are handed out in thread start order; not a modelled
    /// atomic because it synchronises nothing.
    static ref NEXT_CPU: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
}

struct Local {
    cpu: usize,
    nest: Cell<u32>,
    queue: RefCell<Vec<Retired>>,
}

loom::thread_local! {
    static LOCAL: Local = Local {
        cpu: NEXT_CPU.fetch_add(1, std::sync::atomic::Ordering::Relaxed) % MODEL_CPUS,
        nest: Cell::new(0),
        queue: RefCell::new(Vec::new()),
    };
}

/// Initialise this execution's platform state (call first in every model,
/// on the model's main thread).
pub fn init() {
    let _ = &READERS.slots;
    let _ = HALTS.len();
    super::qspinlock::model_init();
    super::pvqspinlock::model_init();
    let _ = LOCAL.with(|l| l.cpu);
}

/// Objects this thread has retired and not yet reclaimed.
pub fn pending() -> usize {
    LOCAL.with(|l| l.queue.borrow().len())
}

/// The loom model platform (a handle; its state is per execution).
pub struct ModelPlatform;

impl Platform for ModelPlatform {
    fn cpu_id(&self) -> usize {
        LOCAL.with(|l| l.cpu)
    }

    fn cpu_count(&self) -> usize {
        MODEL_CPUS
    }

    fn now_ns(&self) -> u64 {
        0
    }

    fn rcu_read_lock(&self) {
        LOCAL.with(|l| {
            let n = l.nest.get();
            l.nest.set(n + 1);
            if n == 0 {
                READERS.epoch.enter(&READERS.slots[l.cpu], false);
            }
        })
    }

    fn rcu_read_unlock(&self) {
        LOCAL.with(|l| {
            let n = l.nest.get();
            assert!(n > 0, "rcu_read_unlock without rcu_read_lock");
            l.nest.set(n - 1);
            if n == 1 {
                READERS.slots[l.cpu].exit();
            }
        })
    }

    fn call_rcu(&self, obj: Retired) {
        // A thread whose locals are gone leaks the object (Retired's Drop
        // never frees): leaking is safe, freeing early is not.
        let _ = LOCAL.try_with(|l| l.queue.borrow_mut().push(obj));
    }

    fn synchronize_rcu(&self) {
        let nest = LOCAL.with(|l| l.nest.get());
        assert_eq!(nest, 0, "synchronize_rcu inside an RCU read-side section");
        let batch = LOCAL.with(|l| core::mem::take(&mut *l.queue.borrow_mut()));
        // Everything in `batch` was unlinked before this snapshot.
        let retired = READERS.epoch.snap();
        while !due(
            retired,
            READERS.epoch.try_advance(|| &READERS.slots[..], |_| ()),
        ) {
            spin_loop();
        }
        // Destructors may retire more objects: those wait for the next call.
        for obj in batch {
            obj.reclaim();
        }
    }

    fn rcu_quiescent_state(&self) {}

    fn halt_while(&self, still: &dyn Fn() -> bool) {
        let h = &HALTS[self.cpu_id()];
        let mut kicked = h.kicked.lock().unwrap();
        // `cli`: kicks before this point were taken while running.
        *kicked = false;
        if !still() {
            return;
        }
        // `sti; hlt`
        while !*kicked {
            kicked = h.wake.wait(kicked).unwrap();
        }
        *kicked = false;
    }

    fn kick(&self, cpu: usize) {
        let h = &HALTS[cpu];
        *h.kicked.lock().unwrap() = true;
        h.wake.notify_one();
    }
}
