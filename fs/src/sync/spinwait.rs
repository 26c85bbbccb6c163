//! How a lock waiter spins: a CPU hint per turn, and after a long wait, the
//! CPU given away — the host-thread counterpart of Linux's paravirt
//! spinlocks (`kernel/locking/qspinlock_paravirt.h`).
//!
//! # Why a spinning waiter must sometimes stop spinning
//! A spinlock assumes that whoever it waits for is running. In a kernel that
//! holds with preemption off; Linux guests on an overcommitted host do not
//! (the host may deschedule a vCPU at any time), and neither do our host
//! threads when there are more spinning threads than cores. A *fair* lock
//! makes that worst: the queued lock (and the ticket lock) hand the lock to
//! the next waiter in line, so when that waiter's thread is descheduled,
//! every other thread spins until the scheduler runs it again — a convoy
//! that costs a scheduler tick (milliseconds) per hand-over. On the 2-core
//! test machine, three threads contending for the LRU lock made 5 000
//! lookups take 19 s (about 4 ms each) with the queued lock: it looked like
//! a deadlock, and it was the reason `ttas` (unfair: whoever runs takes the
//! lock) had stayed the default.
//!
//! Linux's answer for guests is `pv_wait`/`pv_kick`: a waiter that has spun
//! `SPIN_THRESHOLD` times asks the hypervisor to halt its vCPU until the
//! lock holder kicks it. Ours is simpler, because the host scheduler already
//! knows who is runnable: after [`YIELD_AFTER_NS`] of waiting it yields
//! (`sched_yield`), which lets the descheduled thread — the next owner, or
//! the holder — run. When nobody else wants the core the yield returns at
//! once (well under a microsecond), so an honest long wait on an idle
//! machine pays almost nothing. Each yield is counted (`spin_yields` in
//! [`crate::stats`]): a benchmark that sees them had more spinners than
//! CPUs, and its timings include the scheduler.
//!
//! Yielding is the host's answer to threads outnumbering cores. Where they
//! do not — a benchmark of N tasks pinned to N free cores — a host waiter
//! spins as the guest's and Linux's do, so that both sides measure one
//! policy: [`set_yielding`] turns the yield off (the host benchmark does,
//! for pinned tasks ≤ its CPUs: a waiter's yield cannot hand its core to a
//! holder pinned to another, and the rate did not tell the two policies
//! apart, docs/spinlocks.md). Without it every long wait there yielded, and a run with
//! yields is no run to judge a lock by. A wait that spins on past the
//! threshold is still counted (`spin_long_waits`): with a core per task
//! it means the holder or the next owner was preempted, by another thread
//! of the process (the host RCU's reclaimer) or of the machine.
//!
//! In the guest kernel there is nothing to yield to (one CPU is one vCPU,
//! nothing else is scheduled on it), and under loom every turn already
//! yields to another modelled thread, so there a turn is only the hint.
//!
//! # Waits that halt (guest, `lock=pvqspinlock`)
//! Not every wait is for a spinlock: a reader of the `i_rwsem` waits for its
//! writer, a second lookup of a name waits for the first (`d_wait_lookup`).
//! With more vCPUs than host cores these spin behind a descheduled vCPU just
//! as lock waiters do. [`SpinWait::turn_on`] gives them the paravirt lock's
//! remedy: after [`SPIN_TURNS`] turns, on a platform that halts and with
//! the paravirt lock chosen, the CPU notes the address it waits on and
//! halts while the wait lasts; whoever ends such a wait
//! calls [`wake`] after its release, which kicks the CPUs halted on that
//! address. Both sides are sequentially consistent (the waiter counts
//! itself in, then looks; the waker releases with a SeqCst RMW or store,
//! then looks at the count), so either the waiter sees the release or the
//! waker sees the waiter. When nobody is halted, [`wake`] is one load of a
//! line nobody writes. Loom models the lock's halts, not these (here a
//! turn under loom is only a turn).
//!
//! Touches: the per-CPU statistics counter; the host scheduler (feature
//! `std`); the table of halted waiters and the platform's halt and kick.

use super::atomic::spin_loop;
#[cfg(not(loom))]
use super::atomic::{AtomicUsize, Ordering};

/// How long a host thread waits before it gives its CPU away, and then
/// between yields: longer than an honest wait on the lookup path (a lock
/// held for well under a microsecond, even behind a queue of 64 waiters),
/// and a few hundred times shorter than a scheduler tick.
pub const YIELD_AFTER_NS: u64 = 5_000;

/// Turns between two looks at the clock (a clock read costs about as
/// much as a few turns; only the host reads it).
#[cfg(all(any(feature = "std", test), not(loom)))]
const CHECK_EVERY: u32 = 16;

/// Spin turns before a waiter halts. Linux spins `SPIN_THRESHOLD` = 2^15
/// `pause`s; under QEMU's TCG a `pause` leaves the translated code, which
/// costs far more than on hardware, so ours is shorter (see
/// `docs/overcommit.md`). Loom halts after one turn, so that
/// its models reach every halt.
#[cfg(not(loom))]
pub const SPIN_TURNS: u32 = 1 << 10;
#[cfg(loom)]
pub const SPIN_TURNS: u32 = 1;

/// The state of one wait: create it when the wait begins, call
/// [`SpinWait::turn`] once per failed check.
#[derive(Default)]
pub struct SpinWait {
    /// Turns so far, and when this wait began or last yielded (host only:
    /// elsewhere a turn is only the hint).
    #[cfg(all(any(feature = "std", test), not(loom)))]
    turns: u32,
    #[cfg(all(any(feature = "std", test), not(loom)))]
    since: Option<std::time::Instant>,
    /// Turns since this wait last halted ([`SpinWait::turn_on`]).
    #[cfg(not(loom))]
    halt_turns: u32,
}

impl SpinWait {
    /// A wait that has not spun yet.
    #[inline]
    pub fn new() -> Self {
        SpinWait::default()
    }

    /// One more turn of waiting.
    #[inline]
    pub fn turn(&mut self) {
        spin_loop();
        #[cfg(all(any(feature = "std", test), not(loom)))]
        {
            self.turns = self.turns.wrapping_add(1);
            if self.turns.is_multiple_of(CHECK_EVERY) {
                self.look_at_the_clock();
            }
        }
    }

    /// One more turn of a wait that a [`wake`]`(addr)` ends, while `still()`
    /// (sequentially consistent loads) says it goes on. After
    /// [`SPIN_TURNS`] turns on a platform that halts, with
    /// `lock=pvqspinlock`, the CPU halts until kicked (see the module doc).
    /// Elsewhere the same as [`SpinWait::turn`].
    #[inline]
    pub fn turn_on(&mut self, addr: usize, still: &dyn Fn() -> bool) {
        self.turn();
        #[cfg(not(loom))]
        {
            self.halt_turns += 1;
            if self.halt_turns >= SPIN_TURNS {
                self.halt_turns = 0;
                halt_on(addr, still);
            }
        }
        #[cfg(loom)]
        let _ = (addr, still);
    }

    /// Host: give the CPU away once the wait has lasted [`YIELD_AFTER_NS`]
    /// (while [`yielding`]).
    #[cfg(all(any(feature = "std", test), not(loom)))]
    #[cold]
    fn look_at_the_clock(&mut self) {
        let now = std::time::Instant::now();
        match self.since {
            // The first look starts the clock: a wait shorter than
            // CHECK_EVERY turns never reads it at all.
            None => self.since = Some(now),
            Some(t) if now.duration_since(t).as_nanos() as u64 >= YIELD_AFTER_NS => {
                if yielding() {
                    crate::stats::inc(crate::stats::Event::SpinYield);
                    std::thread::yield_now();
                } else {
                    // Spinning on: counted, so that a holder preempted
                    // behind the waiter's back still shows.
                    crate::stats::inc(crate::stats::Event::SpinLongWait);
                }
                self.since = Some(std::time::Instant::now());
            }
            Some(_) => {}
        }
    }
}

/// Whether host waiters yield after [`YIELD_AFTER_NS`]: on unless a
/// caller that knows its threads have a core each says otherwise.
/// Configuration, not synchronisation: a plain atomic.
#[cfg(all(any(feature = "std", test), not(loom)))]
static YIELDING: core::sync::atomic::AtomicBool = core::sync::atomic::AtomicBool::new(true);

/// Let host waiters yield after a long wait (the default), or spin for as
/// long as the wait lasts, as the guest's do: only for threads that each
/// have a core of their own. A no-op where nothing yields.
pub fn set_yielding(on: bool) {
    #[cfg(all(any(feature = "std", test), not(loom)))]
    YIELDING.store(on, core::sync::atomic::Ordering::Relaxed);
    #[cfg(not(all(any(feature = "std", test), not(loom))))]
    let _ = on;
}

/// Whether host waiters yield (see [`set_yielding`]); `false` where
/// nothing yields (the guest, loom).
pub fn yielding() -> bool {
    #[cfg(all(any(feature = "std", test), not(loom)))]
    return YIELDING.load(core::sync::atomic::Ordering::Relaxed);
    #[cfg(not(all(any(feature = "std", test), not(loom))))]
    false
}

/// Waiters halted in [`SpinWait::turn_on`] now, and the address each CPU
/// halted on (0: none).
#[cfg(not(loom))]
static HALTERS: AtomicUsize = AtomicUsize::new(0);
#[cfg(not(loom))]
#[allow(clippy::declare_interior_mutable_const)]
const NOT_HALTED: AtomicUsize = AtomicUsize::new(0);
#[cfg(not(loom))]
static HALTED_ON: [AtomicUsize; crate::platform::MAX_CPUS] =
    [NOT_HALTED; crate::platform::MAX_CPUS];

/// Whether [`SpinWait::turn_on`] halts at all before anyone says
/// otherwise: off, as the default lock kind (`rawlock::LockKind::DEFAULT`,
/// which checks this at compile time) is not the paravirt one.
pub(crate) const HALTING_AT_START: bool = false;

/// Whether waits halt: on while the paravirt lock is the chosen kind
/// (`rawlock::set_default_kind` says so). Configuration, not
/// synchronisation: a plain atomic.
#[cfg(not(loom))]
static HALTING: core::sync::atomic::AtomicBool =
    core::sync::atomic::AtomicBool::new(HALTING_AT_START);

/// Let [`SpinWait::turn_on`] halt (on a platform that halts) or not: set
/// with the lock kind, on for `lock=pvqspinlock`.
pub fn set_halting(on: bool) {
    #[cfg(not(loom))]
    HALTING.store(on, core::sync::atomic::Ordering::Relaxed);
    #[cfg(loom)]
    let _ = on;
}

#[cfg(not(loom))]
#[cold]
fn halt_on(addr: usize, still: &dyn Fn() -> bool) {
    let p = crate::platform::get();
    if !HALTING.load(core::sync::atomic::Ordering::Relaxed) || !p.halts() {
        return;
    }
    let me = p.cpu_id();
    HALTED_ON[me].store(addr, Ordering::Relaxed);
    // Count in, then look: pairs with the waker's release, then count.
    HALTERS.fetch_add(1, Ordering::SeqCst);
    if still() {
        p.halt_while(still);
    }
    HALTED_ON[me].store(0, Ordering::Relaxed);
    HALTERS.fetch_sub(1, Ordering::Release);
}

/// The caller has just ended waits on `addr` with a sequentially
/// consistent release: kick the CPUs halted on it.
#[inline]
pub fn wake(addr: usize) {
    #[cfg(not(loom))]
    if HALTERS.load(Ordering::SeqCst) != 0 {
        wake_halted(addr);
    }
    #[cfg(loom)]
    let _ = addr;
}

#[cfg(not(loom))]
#[cold]
fn wake_halted(addr: usize) {
    let p = crate::platform::get();
    for (cpu, on) in HALTED_ON.iter().enumerate().take(p.cpu_count()) {
        if on.load(Ordering::Relaxed) == addr {
            p.kick(cpu);
        }
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use std::time::{Duration, Instant};

    #[test]
    fn a_short_wait_never_yields() {
        let before = crate::stats::snapshot_this_cpu().spin_yields;
        let mut w = SpinWait::new();
        for _ in 0..CHECK_EVERY - 1 {
            w.turn();
        }
        assert_eq!(crate::stats::snapshot_this_cpu().spin_yields, before);
    }

    /// The yield switch is process-wide: the tests that depend on it take
    /// turns.
    static SWITCH: std::sync::Mutex<()> = std::sync::Mutex::new(());

    #[test]
    fn a_long_wait_spins_without_yielding_when_told() {
        let _turn = SWITCH.lock().unwrap_or_else(|e| e.into_inner());
        // Restored before any assert.
        let before = crate::stats::snapshot_this_cpu().spin_yields;
        let long_before = crate::stats::snapshot_this_cpu().spin_long_waits;
        set_yielding(false);
        let t0 = Instant::now();
        let mut w = SpinWait::new();
        while t0.elapsed() < Duration::from_millis(2) {
            w.turn();
        }
        let spun = t0.elapsed().as_nanos() as u64;
        set_yielding(true);
        let now = crate::stats::snapshot_this_cpu();
        assert_eq!(now.spin_yields, before);
        // Still counted, as long waits: about one per threshold.
        let long = now.spin_long_waits - long_before;
        assert!(long >= 1, "a 2 ms wait counted no long wait");
        assert!(long <= spun / YIELD_AFTER_NS, "{long} in {spun} ns");
        assert!(yielding());
    }

    #[test]
    fn a_long_wait_yields_about_once_per_threshold_and_counts_it() {
        let _turn = SWITCH.lock().unwrap_or_else(|e| e.into_inner());
        // Counted on this thread's CPU slot only, so other tests cannot
        // disturb the difference.
        let before = crate::stats::snapshot_this_cpu().spin_yields;
        let t0 = Instant::now();
        let mut w = SpinWait::new();
        while t0.elapsed() < Duration::from_millis(2) {
            w.turn();
        }
        let spun = t0.elapsed().as_nanos() as u64;
        let yields = crate::stats::snapshot_this_cpu().spin_yields - before;
        assert!(yields >= 1, "a 2 ms wait never yielded");
        assert!(
            yields <= spun / YIELD_AFTER_NS,
            "{yields} yields in {spun} ns: more than one per {YIELD_AFTER_NS} ns"
        );
    }
}
