//! Atomics and cells, switched to loom's model-checked versions under
//! `--cfg loom`, so that the same primitive code is what loom explores.

#[cfg(loom)]
pub use core::sync::atomic::compiler_fence;
#[cfg(not(loom))]
pub use core::sync::atomic::{
    compiler_fence, fence, AtomicBool, AtomicPtr, AtomicU32, AtomicU64, AtomicUsize, Ordering,
};
#[cfg(loom)]
pub use loom::sync::atomic::{
    fence, AtomicBool, AtomicPtr, AtomicU32, AtomicU64, AtomicUsize, Ordering,
};

/// Spin-wait hint (loom: yield to another modelled thread).
#[inline]
pub fn spin_loop() {
    #[cfg(loom)]
    loom::thread::yield_now();
    #[cfg(not(loom))]
    core::hint::spin_loop();
}
