//! Turns for the integration tests that count: the fs crate's counters
//! (`fs::stats`) and its RCU queues are global to a test process, so a
//! file whose tests read counter windows runs them one at a time, and each
//! turn ends with everything the test queued for RCU having run.
//!
//! Why the end of a turn needs a barrier: a thread that never reports
//! quiescent states keeps its RCU callbacks in its own queue until it holds
//! 128 entries or exits, and the test harness lets a finished test's thread
//! exit while the next test runs. The few dentries still queued were then
//! freed inside the next test's window (stress.rs's churn test read
//! `leaked=-4` in CI). `rcu_barrier` flushes the caller's queue
//! first, then waits until every callback queued anywhere before it ran.
//!
//! Touches: the fs crate's public RCU API only.

use std::sync::{Mutex, MutexGuard};

use fs::sync::rcu::rcu_barrier;

/// A test's turn: holds the file's lock; dropping it runs this thread's RCU
/// callbacks (and those they queue) before the next test's turn starts.
pub struct Turn(#[allow(dead_code)] MutexGuard<'static, ()>);

impl Drop for Turn {
    fn drop(&mut self) {
        // Runs before the guard field is dropped: still our turn.
        rcu_barrier();
    }
}

/// Wait for the turn that `lock` hands out (a test that panicked leaves it
/// poisoned; the next test still gets its turn).
pub fn take(lock: &'static Mutex<()>) -> Turn {
    Turn(lock.lock().unwrap_or_else(|e| e.into_inner()))
}
