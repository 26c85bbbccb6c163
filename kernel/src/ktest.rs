//! The in-kernel test harness: what every self-test body shares, and
//! nothing else. [`TestResult`] (what a body returns), [`ensure!`] (fail
//! with a reason), [`ncpus`], [`wait_until`] and [`DropFlag`] (an object
//! that counts its drops: what an RCU callback or a deferred drop freed).
//!
//! A leaf among the tests: the bodies (`*_test.rs`, beside what they test)
//! import it, the runner (`crate::selftest`) imports the bodies, and this
//! file imports neither, only the kernel services it wraps (`smp`, `time`).
//! No body imports another.

use alloc::string::String;
use alloc::sync::Arc;
use core::sync::atomic::{AtomicUsize, Ordering};

use crate::{smp, time};

/// What a test body returns: `Err(reason)` fails it.
pub(crate) type TestResult = Result<(), String>;

/// `ensure!(cond, "reason {x}")`: fail the test with the formatted reason
/// unless `cond` holds.
macro_rules! ensure {
    ($cond:expr, $($arg:tt)*) => {
        if !$cond {
            return Err(alloc::format!($($arg)*));
        }
    };
}
pub(crate) use ensure;

/// CPUs the kernel knows (started or not).
pub(crate) fn ncpus() -> usize {
    smp::cpu_count()
}

/// Spin (with quiescent states) until `cond` or `timeout_ms`.
pub(crate) fn wait_until(timeout_ms: u64, cond: impl Fn() -> bool) -> bool {
    let deadline = time::now_ns() + timeout_ms * 1_000_000;
    while !cond() {
        if time::now_ns() > deadline {
            return false;
        }
        crate::arch::processor::pause();
    }
    true
}

/// Counts its drops: what an RCU callback freed.
pub(crate) struct DropFlag(pub(crate) Arc<AtomicUsize>);

impl Drop for DropFlag {
    fn drop(&mut self) {
        self.0.fetch_add(1, Ordering::SeqCst);
    }
}
