//! QSBR RCU and the kernel's implementation of `fs::platform::Platform`.
//!
//! Mental model: a grace period (GP) is numbered; starting one bumps
//! [`GP_STARTED`]. A CPU reports a quiescent state (QS) by copying the
//! current `GP_STARTED` into its `qs_seen`, which it may only do while it is
//! outside any read-side section (nesting counter zero): from the LAPIC tick
//! when the interrupted code holds no RCU read lock, and at explicit points
//! (`rcu_quiescent_state`, `synchronize_rcu`, the idle loop). GP `g` is
//! complete once every online CPU has `qs_seen >= g`: each of them passed a
//! moment with no reader after `g` started, so no reader that could have
//! seen an object unpublished before `g` started is still running.
//!
//! Readers only touch their own CPU's nesting counter (plain loads and stores
//! of a per-CPU atomic, ordered against the critical section by compiler
//! fences: the tick that reads it interrupts the same CPU).
//!
//! `call_rcu` queues the object on the calling CPU's callback queue tagged
//! with the GP it needs (`GP_STARTED + 1`). That GP is started at once if
//! none is in flight, else by whoever next completes the current one
//! (`advance`, which looks at every CPU's `requested`): callbacks batch up
//! behind one grace period and `call_rcu` makes no store to shared memory
//! except, once per grace period, starting it. Callbacks run
//! on their own CPU at explicit points once that GP is complete — never in
//! the tick: the tick only stores `qs_seen`, so it cannot deadlock against a
//! `call_rcu` it interrupted, and destructors (which free memory) never run
//! in interrupt context. The queue lock is per CPU and uncontended.
//!
//! Touches: per-CPU RCU state, `crate::time` (clock), `crate::smp` (CPU
//! count), `crate::mm::heap` (memory admission for the fs). Safe code only.

use alloc::collections::VecDeque;
use core::sync::atomic::{compiler_fence, fence, AtomicBool, AtomicU32, AtomicU64, Ordering};

use fs::platform::Platform;
use fs::sync::rcu::Retired;

use crate::percpu::{per_cpu, PerCpu};

/// Grace periods started so far (GP numbers are 1, 2, ...).
static GP_STARTED: AtomicU64 = AtomicU64::new(0);
/// Highest grace period known complete.
static GP_DONE: AtomicU64 = AtomicU64::new(0);

/// Queue length at which `call_rcu` itself tries to run due callbacks.
const POLL_BATCH: usize = 64;

struct RcuCpu {
    /// Read-side nesting depth (written only by the owning CPU).
    nesting: AtomicU32,
    /// `GP_STARTED` as seen at this CPU's latest quiescent state.
    qs_seen: AtomicU64,
    /// Does this CPU take part in grace periods?
    online: AtomicBool,
    /// Callbacks waiting for their grace period: (GP needed, object).
    callbacks: spin::Mutex<VecDeque<(u64, Retired)>>,
    /// Callbacks run on this CPU.
    reclaimed: AtomicU64,
    /// Highest grace period this CPU's callbacks wait for.
    requested: AtomicU64,
    /// This CPU is inside `run_callbacks` (a callback that calls
    /// `call_rcu`, e.g. a dentry dropping its inode, must not recurse into
    /// another round: the outer loop keeps draining).
    in_callbacks: AtomicBool,
}

static CPUS: PerCpu<RcuCpu> = per_cpu!(RcuCpu {
    nesting: AtomicU32::new(0),
    qs_seen: AtomicU64::new(0),
    online: AtomicBool::new(false),
    callbacks: spin::Mutex::new(VecDeque::new()),
    reclaimed: AtomicU64::new(0),
    requested: AtomicU64::new(0),
    in_callbacks: AtomicBool::new(false),
});

/// Let the calling CPU take part in grace periods (during its bring-up).
pub fn cpu_online() {
    let me = CPUS.get();
    me.qs_seen
        .store(GP_STARTED.load(Ordering::SeqCst), Ordering::SeqCst);
    me.online.store(true, Ordering::SeqCst);
}

/// Enter a read-side section.
#[inline]
pub fn read_lock() {
    let n = &CPUS.get().nesting;
    n.store(n.load(Ordering::Relaxed) + 1, Ordering::Relaxed);
    compiler_fence(Ordering::SeqCst);
}

/// Leave a read-side section.
#[inline]
pub fn read_unlock() {
    compiler_fence(Ordering::SeqCst);
    let n = &CPUS.get().nesting;
    let v = n.load(Ordering::Relaxed);
    debug_assert!(v > 0, "rcu_read_unlock without rcu_read_lock");
    n.store(v.saturating_sub(1), Ordering::Relaxed);
}

/// Read-side nesting depth of the calling CPU.
pub fn nesting() -> u32 {
    CPUS.get().nesting.load(Ordering::Relaxed)
}

/// Report a quiescent state if the calling CPU is outside any read-side
/// section. Cheap: no store when nothing changed.
#[inline]
fn report_qs() {
    let me = CPUS.get();
    if me.nesting.load(Ordering::Relaxed) != 0 {
        return;
    }
    // Everything the CPU did before (its finished read sections) is ordered
    // before the report.
    fence(Ordering::SeqCst);
    let g = GP_STARTED.load(Ordering::SeqCst);
    if me.qs_seen.load(Ordering::Relaxed) != g {
        me.qs_seen.store(g, Ordering::Release);
    }
}

/// Tick hook (interrupt context): quiescent state if no reader is active.
pub fn on_tick() {
    report_qs();
}

/// Try to complete grace periods, and start the next one if none is in
/// flight and some CPU's callbacks wait for it. Returns the highest complete
/// grace period.
fn advance() -> u64 {
    let n = crate::smp::cpu_count();
    let started = GP_STARTED.load(Ordering::SeqCst);
    let mut done = GP_DONE.load(Ordering::Acquire);
    if done < started {
        let min = CPUS
            .iter(n)
            .filter(|c| c.online.load(Ordering::Acquire))
            .map(|c| c.qs_seen.load(Ordering::Acquire))
            .fold(started, u64::min);
        GP_DONE.fetch_max(min, Ordering::AcqRel);
        done = GP_DONE.load(Ordering::Acquire);
    }
    if done >= started
        && CPUS
            .iter(n)
            .any(|c| c.requested.load(Ordering::Acquire) > started)
    {
        // Callbacks queued during the previous grace period need one that
        // starts after them: this one.
        let _ =
            GP_STARTED.compare_exchange(started, started + 1, Ordering::SeqCst, Ordering::Relaxed);
    }
    done
}

/// Run the calling CPU's callbacks whose grace period is complete.
/// Returns how many ran.
pub fn run_callbacks() -> usize {
    let me = CPUS.get();
    if me.in_callbacks.swap(true, Ordering::Relaxed) {
        return 0;
    }
    let done = advance();
    let mut ran = 0;
    loop {
        let item = crate::arch::interrupts::without(|| {
            let mut q = me.callbacks.lock();
            match q.front() {
                Some(&(g, _)) if g <= done => q.pop_front(),
                _ => None,
            }
        });
        match item {
            Some((_, obj)) => {
                obj.reclaim();
                ran += 1;
            }
            None => break,
        }
    }
    if ran > 0 {
        me.reclaimed.fetch_add(ran as u64, Ordering::Relaxed);
    }
    me.in_callbacks.store(false, Ordering::Relaxed);
    ran
}

/// Explicit quiescent state (outside read sections) plus callback processing.
pub fn quiescent_state() {
    report_qs();
    run_callbacks();
}

/// Queue `obj` to be reclaimed after a grace period.
pub fn call_rcu(obj: Retired) {
    let me = CPUS.get();
    // The object was unpublished before this load, so any grace period
    // numbered above `started` begins after the unpublish.
    let started = GP_STARTED.load(Ordering::SeqCst);
    let target = started + 1;
    let len = crate::arch::interrupts::without(|| {
        let mut q = me.callbacks.lock();
        q.push_back((target, obj));
        q.len()
    });
    if me.requested.load(Ordering::Relaxed) < target {
        me.requested.store(target, Ordering::Release);
    }
    // Start grace period `target` now if none is in flight; otherwise
    // `advance` starts it when the current one completes. Either way only
    // one CPU per grace period writes GP_STARTED (no shared store per call).
    if GP_DONE.load(Ordering::Acquire) >= started {
        let _ = GP_STARTED.compare_exchange(started, target, Ordering::SeqCst, Ordering::Relaxed);
    }
    if len >= POLL_BATCH && me.nesting.load(Ordering::Relaxed) == 0 {
        quiescent_state();
    }
}

/// Wait for a full grace period, then run this CPU's due callbacks. Must be
/// called outside any read-side section, with interrupts enabled (other
/// CPUs' ticks are what completes the grace period).
pub fn synchronize_rcu() {
    assert_eq!(
        nesting(),
        0,
        "synchronize_rcu inside an RCU read-side section"
    );
    let target = GP_STARTED.fetch_add(1, Ordering::SeqCst) + 1;
    loop {
        report_qs();
        if advance() >= target {
            break;
        }
        crate::arch::processor::pause();
    }
    run_callbacks();
}

/// (grace periods started, grace periods complete).
pub fn gp_state() -> (u64, u64) {
    (
        GP_STARTED.load(Ordering::SeqCst),
        GP_DONE.load(Ordering::SeqCst),
    )
}

/// Callbacks still queued on `cpu`.
pub fn pending(cpu: usize) -> usize {
    crate::arch::interrupts::without(|| CPUS[cpu].callbacks.lock().len())
}

/// Callbacks run so far on `cpu`.
pub fn reclaimed(cpu: usize) -> u64 {
    CPUS[cpu].reclaimed.load(Ordering::Relaxed)
}

/// The kernel's `fs::platform::Platform`.
pub struct KernelPlatform;

/// The instance installed with `fs::platform::install` at boot.
pub static PLATFORM: KernelPlatform = KernelPlatform;

impl Platform for KernelPlatform {
    fn cpu_id(&self) -> usize {
        crate::arch::cpu_id()
    }

    fn cpu_count(&self) -> usize {
        crate::smp::cpu_count()
    }

    fn now_ns(&self) -> u64 {
        crate::time::now_ns()
    }

    fn rcu_read_lock(&self) {
        read_lock()
    }

    fn rcu_read_unlock(&self) {
        read_unlock()
    }

    fn call_rcu(&self, obj: Retired) {
        call_rcu(obj)
    }

    fn synchronize_rcu(&self) {
        synchronize_rcu()
    }

    fn rcu_quiescent_state(&self) {
        quiescent_state()
    }

    fn may_alloc(&self, bytes: usize) -> bool {
        crate::mm::heap::may_alloc(bytes)
    }
}

/// Install [`PLATFORM`] as the fs crate's platform.
pub fn install() -> bool {
    fs::platform::install(&PLATFORM)
}
