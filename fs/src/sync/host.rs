//! The host platform: ordinary threads play CPUs, and RCU is epoch based.
//!
//! CPU ids: the first time a thread calls into the fs crate it claims a free
//! slot in a fixed table (`MAX_CPUS` of them) and keeps it until it exits;
//! the slot index is its CPU id, so per-CPU counters stay per-thread.
//!
//! RCU (epoch-based reclamation, a close cousin of Linux's QSBR):
//! - A global epoch counter `E`. A reader entering its outermost section
//!   publishes `(E << 1) | 1` in its own slot (a store to a line only it
//!   writes) and issues a full fence; leaving, it stores 0.
//! - The epoch may advance from `e` to `e + 1` only when every slot is either
//!   idle or was entered in epoch `e`.
//! - An object unlinked while the epoch read `r` may be freed once the epoch
//!   reaches `r + 2`: any reader that could have seen it entered in an
//!   epoch `<= r`, and two advances prove it has left.
//! - `call_rcu` queues on the calling thread (no lock, no allocation once the
//!   queue has grown); the queue is drained when it passes a threshold. A
//!   thread that exits hands its queue to a global orphan list.
//!
//! Touches: its own slot table and thread-locals; std's thread_local only.

use alloc::collections::VecDeque;
use alloc::vec::Vec;
use core::cell::{Cell, RefCell};
use std::sync::{Mutex, OnceLock};
use std::time::Instant;

use super::atomic::{fence, AtomicBool, AtomicU64, AtomicUsize, Ordering};
use super::rcu::Retired;
use crate::platform::{Platform, MAX_CPUS};

#[repr(align(128))]
struct Slot {
    in_use: AtomicBool,
    /// 0: outside any read-side section; else `(epoch << 1) | 1`.
    state: AtomicU64,
}

#[allow(clippy::declare_interior_mutable_const)]
const SLOT: Slot = Slot {
    in_use: AtomicBool::new(false),
    state: AtomicU64::new(0),
};
static SLOTS: [Slot; MAX_CPUS] = [SLOT; MAX_CPUS];
static HIGH_WATER: AtomicUsize = AtomicUsize::new(0);
static EPOCH: AtomicU64 = AtomicU64::new(1);
static ORPHANS: Mutex<Vec<(u64, Retired)>> = Mutex::new(Vec::new());

/// Queue length at which `call_rcu` tries to reclaim.
const RECLAIM_AT: usize = 128;

struct Local {
    slot: usize,
    nest: Cell<u32>,
    queue: RefCell<VecDeque<(u64, Retired)>>,
}

impl Local {
    fn claim() -> Local {
        for (i, s) in SLOTS.iter().enumerate() {
            if !s.in_use.load(Ordering::Relaxed)
                && s.in_use
                    .compare_exchange(false, true, Ordering::AcqRel, Ordering::Relaxed)
                    .is_ok()
            {
                HIGH_WATER.fetch_max(i + 1, Ordering::Relaxed);
                return Local {
                    slot: i,
                    nest: Cell::new(0),
                    queue: RefCell::new(VecDeque::new()),
                };
            }
        }
        panic!("fs host platform: more than {MAX_CPUS} threads use the fs crate at once");
    }
}

impl Drop for Local {
    fn drop(&mut self) {
        SLOTS[self.slot].state.store(0, Ordering::Release);
        let q: Vec<_> = self.queue.get_mut().drain(..).collect();
        if !q.is_empty() {
            ORPHANS.lock().unwrap_or_else(|e| e.into_inner()).extend(q);
        }
        SLOTS[self.slot].in_use.store(false, Ordering::Release);
    }
}

std::thread_local! {
    static LOCAL: Local = Local::claim();
}

/// Try to move the global epoch forward by one. Returns the epoch after.
fn try_advance() -> u64 {
    let e = EPOCH.load(Ordering::Relaxed);
    fence(Ordering::SeqCst);
    let hw = HIGH_WATER.load(Ordering::Relaxed);
    for s in &SLOTS[..hw] {
        let st = s.state.load(Ordering::Relaxed);
        if st & 1 == 1 && st >> 1 != e {
            return e;
        }
    }
    fence(Ordering::SeqCst);
    match EPOCH.compare_exchange(e, e + 1, Ordering::AcqRel, Ordering::Relaxed) {
        Ok(_) => e + 1,
        Err(now) => now,
    }
}

fn reclaim_queue(q: &mut VecDeque<(u64, Retired)>) {
    let now = try_advance();
    // Read the epoch once; items were queued in epoch order.
    let mut due = Vec::new();
    while let Some((r, _)) = q.front() {
        if r + 2 > now {
            break;
        }
        due.push(q.pop_front().unwrap().1);
    }
    // Run destructors outside the queue borrow: they may call_rcu again.
    for obj in due {
        obj.reclaim();
    }
}

fn reclaim_orphans() {
    let Ok(mut o) = ORPHANS.try_lock() else {
        return;
    };
    if o.is_empty() {
        return;
    }
    let now = EPOCH.load(Ordering::Acquire);
    let mut keep = Vec::new();
    let mut due = Vec::new();
    for (r, obj) in o.drain(..) {
        if r + 2 <= now {
            due.push(obj);
        } else {
            keep.push((r, obj));
        }
    }
    *o = keep;
    drop(o);
    for obj in due {
        obj.reclaim();
    }
}

/// Reclaim what is due in this thread's queue.
fn drain_local() {
    LOCAL.with(|l| {
        let mut q = core::mem::take(&mut *l.queue.borrow_mut());
        reclaim_queue(&mut q);
        let mut cur = l.queue.borrow_mut();
        // Anything queued by the destructors goes after the survivors.
        q.extend(cur.drain(..));
        *cur = q;
    });
    reclaim_orphans();
}

/// The host implementation of [`Platform`].
pub struct HostPlatform {
    start: Instant,
}

impl HostPlatform {
    /// The process-wide instance.
    pub fn global() -> &'static HostPlatform {
        static P: OnceLock<HostPlatform> = OnceLock::new();
        P.get_or_init(|| HostPlatform {
            start: Instant::now(),
        })
    }

    /// Current global epoch (tests and diagnostics).
    pub fn epoch() -> u64 {
        EPOCH.load(Ordering::Relaxed)
    }
}

impl Platform for HostPlatform {
    #[inline]
    fn cpu_id(&self) -> usize {
        LOCAL.with(|l| l.slot)
    }

    fn cpu_count(&self) -> usize {
        HIGH_WATER.load(Ordering::Relaxed).max(1)
    }

    fn now_ns(&self) -> u64 {
        self.start.elapsed().as_nanos() as u64
    }

    #[inline]
    fn rcu_read_lock(&self) {
        LOCAL.with(|l| {
            let n = l.nest.get();
            l.nest.set(n + 1);
            if n == 0 {
                let e = EPOCH.load(Ordering::Relaxed);
                SLOTS[l.slot].state.store((e << 1) | 1, Ordering::Relaxed);
                // Pairs with the fences in try_advance: either the advancer
                // sees us, or we see every unlink that preceded its advance.
                fence(Ordering::SeqCst);
            }
        })
    }

    #[inline]
    fn rcu_read_unlock(&self) {
        LOCAL.with(|l| {
            let n = l.nest.get();
            debug_assert!(n > 0, "rcu_read_unlock without rcu_read_lock");
            l.nest.set(n - 1);
            if n == 1 {
                SLOTS[l.slot].state.store(0, Ordering::Release);
            }
        })
    }

    fn call_rcu(&self, obj: Retired) {
        let r = EPOCH.load(Ordering::Acquire);
        let mut obj = Some(obj);
        let full = LOCAL
            .try_with(|l| {
                let mut q = l.queue.borrow_mut();
                if let Some(o) = obj.take() {
                    q.push_back((r, o));
                }
                q.len() >= RECLAIM_AT && l.nest.get() == 0
            })
            .unwrap_or(false);
        if let Some(o) = obj {
            // This thread is exiting (its thread-locals are gone).
            ORPHANS
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .push((r, o));
            return;
        }
        if full {
            drain_local();
        }
    }

    fn synchronize_rcu(&self) {
        let nested = LOCAL.with(|l| l.nest.get());
        assert_eq!(nested, 0, "synchronize_rcu inside an RCU read-side section");
        let target = EPOCH.load(Ordering::Acquire) + 2;
        while try_advance() < target {
            std::thread::yield_now();
        }
        drain_local();
    }

    fn rcu_quiescent_state(&self) {
        // Epoch-based RCU needs no quiescent-state reports; use the call to
        // push reclamation along.
        let _ = try_advance();
    }
}
