//! The grace-period machine of the kernel's QSBR RCU (`kernel/src/sync/rcu.rs`),
//! here so that the loom models run it as the kernel does.
//!
//! A grace period (GP) is numbered; starting one bumps `started`. A CPU
//! reports a quiescent state by copying `started` into its `qs_seen` while
//! it is outside every read-side section. GP `g` is complete once every
//! online CPU has `qs_seen >= g`, and `done` records the highest complete
//! one. A callback queued while `started` reads `s` waits for GP `s + 1`
//! ([`GracePeriods::snap`]); the caller records that in its CPU's
//! `requested`, and whoever completes a GP starts the next one if some CPU
//! requested it ([`GracePeriods::advance`]).
//!
//! The ordering argument, the same as Linux's (`rcu_seq_snap`'s `smp_mb()`
//! and the full barriers around a quiescent-state report):
//! - The updater unpublishes, issues a full fence, then reads `started`
//!   (`s`) in [`GracePeriods::snap`]. A CPU that reports a quiescent state
//!   for GP `s + 1` read `started` at `s + 1` or later, after the updater's
//!   read (which came before the increment), and issues a full fence after
//!   that read, before its next read-side section. The two fences are thus
//!   ordered, so that section sees the unpublish and cannot reach the
//!   object. Without the updater's fence its unpublish may still sit in
//!   its store buffer after the read; without the reporter's fence after
//!   its read, C11 (not x86, which keeps loads in order) lets the section's
//!   loads pass it. `fs/tests/loom_rcu.rs` shows both.
//! - The report's `qs_seen` store is Release: the CPU's finished read
//!   sections happen before an `advance` that reads it (Acquire) and lets
//!   their objects go.
//!
//! Readers touch only their own CPU's nesting counter, with compiler fences:
//! the tick that reads it interrupts the same CPU.
//!
//! Touches: only the atomics it is given. Callback queues, the tick and CPU
//! bring-up stay with the kernel.

use super::atomic::{compiler_fence, fence, AtomicBool, AtomicU32, AtomicU64, Ordering};

/// The global grace-period counters.
pub struct GracePeriods {
    /// Grace periods started so far (GP numbers are 1, 2, ...).
    started: AtomicU64,
    /// Highest grace period known complete.
    done: AtomicU64,
}

/// One CPU's part in grace periods.
pub struct CpuGp {
    /// Read-side nesting depth (written only by the owning CPU).
    nesting: AtomicU32,
    /// `started` as seen at this CPU's latest quiescent state.
    qs_seen: AtomicU64,
    /// Does this CPU take part in grace periods?
    online: AtomicBool,
    /// Highest grace period this CPU's callbacks wait for.
    requested: AtomicU64,
}

impl Default for CpuGp {
    fn default() -> Self {
        Self::new()
    }
}

impl CpuGp {
    const_unless_loom! {
        /// An offline CPU outside any read-side section.
        pub fn new() -> Self {
            CpuGp {
                nesting: AtomicU32::new(0),
                qs_seen: AtomicU64::new(0),
                online: AtomicBool::new(false),
                requested: AtomicU64::new(0),
            }
        }
    }

    /// Enter a read-side section (the owning CPU only).
    #[inline]
    pub fn read_lock(&self) {
        let n = &self.nesting;
        n.store(n.load(Ordering::Relaxed) + 1, Ordering::Relaxed);
        compiler_fence(Ordering::SeqCst);
    }

    /// Leave a read-side section (the owning CPU only).
    #[inline]
    pub fn read_unlock(&self) {
        compiler_fence(Ordering::SeqCst);
        let n = &self.nesting;
        let v = n.load(Ordering::Relaxed);
        debug_assert!(v > 0, "rcu_read_unlock without rcu_read_lock");
        n.store(v.saturating_sub(1), Ordering::Relaxed);
    }

    /// Read-side nesting depth.
    #[inline]
    pub fn nesting(&self) -> u32 {
        self.nesting.load(Ordering::Relaxed)
    }
}

impl Default for GracePeriods {
    fn default() -> Self {
        Self::new()
    }
}

impl GracePeriods {
    const_unless_loom! {
        /// No grace period started yet.
        pub fn new() -> Self {
            GracePeriods {
                started: AtomicU64::new(0),
                done: AtomicU64::new(0),
            }
        }
    }

    /// `me` takes part in grace periods from now on (its CPU's bring-up),
    /// as if it had just reported a quiescent state.
    pub fn online(&self, me: &CpuGp) {
        let g = self.started.load(Ordering::SeqCst);
        // As in report_qs: this CPU's read sections come after the read.
        fence(Ordering::SeqCst);
        me.qs_seen.store(g, Ordering::SeqCst);
        me.online.store(true, Ordering::SeqCst);
    }

    /// Report a quiescent state for `me` if it is outside every read-side
    /// section (its own CPU: the tick, or an explicit point). No fence and
    /// no store when nothing changed since the last report.
    #[inline]
    pub fn report_qs(&self, me: &CpuGp) {
        if me.nesting.load(Ordering::Relaxed) != 0 {
            return;
        }
        let g = self.started.load(Ordering::SeqCst);
        if me.qs_seen.load(Ordering::Relaxed) != g {
            // Orders this CPU's later read sections after the read of `g`
            // (module doc); when nothing changed, the report that stored
            // `g` already did.
            fence(Ordering::SeqCst);
            // Release: the finished read sections happen before an
            // `advance` that reads this.
            me.qs_seen.store(g, Ordering::Release);
        }
    }

    /// The grace period a callback queued now must wait for: one that
    /// starts after this call. The caller has unpublished the object; the
    /// fence makes that visible before `started` is read (Linux's
    /// `rcu_seq_snap`), so every reader that reports a quiescent state for
    /// the returned grace period comes after the unpublish (module doc).
    #[inline]
    pub fn snap(&self) -> u64 {
        fence(Ordering::SeqCst);
        self.started.load(Ordering::SeqCst) + 1
    }

    /// A callback waiting for `target` (from [`Self::snap`]) has been queued
    /// on `me`: record the request, and start `target` now if no grace
    /// period is in flight (otherwise [`Self::advance`] starts it when the
    /// current one completes). Either way only one CPU per grace period
    /// writes `started`.
    #[inline]
    pub fn request(&self, me: &CpuGp, target: u64) {
        if me.requested.load(Ordering::Relaxed) < target {
            me.requested.store(target, Ordering::Release);
        }
        let started = target - 1;
        if self.done.load(Ordering::Acquire) >= started {
            let _ =
                self.started
                    .compare_exchange(started, target, Ordering::SeqCst, Ordering::Relaxed);
        }
    }

    /// Start a grace period unconditionally (`synchronize_rcu`); returns
    /// its number, which is complete once `advance` returns at least it.
    pub fn start(&self) -> u64 {
        self.started.fetch_add(1, Ordering::SeqCst) + 1
    }

    /// Try to complete grace periods, and start the next one if none is in
    /// flight and some CPU requested it. `cpus` lists every CPU (called
    /// twice). Returns the highest complete grace period.
    pub fn advance<'a, I>(&self, cpus: impl Fn() -> I) -> u64
    where
        I: Iterator<Item = &'a CpuGp>,
    {
        let started = self.started.load(Ordering::SeqCst);
        let mut done = self.done.load(Ordering::Acquire);
        if done < started {
            let min = cpus()
                .filter(|c| c.online.load(Ordering::Acquire))
                .map(|c| c.qs_seen.load(Ordering::Acquire))
                .fold(started, u64::min);
            self.done.fetch_max(min, Ordering::AcqRel);
            done = self.done.load(Ordering::Acquire);
        }
        if done >= started && cpus().any(|c| c.requested.load(Ordering::Acquire) > started) {
            // Callbacks queued during the previous grace period need one
            // that starts after them: this one.
            let _ = self.started.compare_exchange(
                started,
                started + 1,
                Ordering::SeqCst,
                Ordering::Relaxed,
            );
        }
        done
    }

    /// (grace periods started, grace periods complete).
    pub fn state(&self) -> (u64, u64) {
        (
            self.started.load(Ordering::SeqCst),
            self.done.load(Ordering::SeqCst),
        )
    }
}
