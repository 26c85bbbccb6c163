//! Per-CPU arrays: `PerCpu<T>` holds one cache-line-aligned `T` per possible
//! CPU id, so CPUs writing their own slot never share a line. [`PerCpu::get`]
//! picks the calling CPU's slot (CPU id from the GS-based core-local area);
//! indexing picks any CPU's slot (for statistics and remote checks).
//!
//! Build them with [`per_cpu!`] from a const expression.

use core::ops::Index;

/// Upper bound on CPU ids (the fs crate uses the same bound).
pub const MAX_CPUS: usize = fs::platform::MAX_CPUS;

/// A value padded to its own cache line (two lines against the adjacent
/// line prefetcher).
#[repr(C, align(128))]
pub struct CachePadded<T>(pub T);

/// One `T` per CPU id.
pub struct PerCpu<T>(pub [CachePadded<T>; MAX_CPUS]);

impl<T> PerCpu<T> {
    /// The calling CPU's slot.
    #[inline]
    pub fn get(&self) -> &T {
        &self.0[crate::arch::cpu_id()].0
    }

    /// Iterate over the first `n` CPUs' slots.
    pub fn iter(&self, n: usize) -> impl Iterator<Item = &T> {
        self.0[..n.min(MAX_CPUS)].iter().map(|c| &c.0)
    }
}

impl<T> Index<usize> for PerCpu<T> {
    type Output = T;
    #[inline]
    fn index(&self, cpu: usize) -> &T {
        &self.0[cpu].0
    }
}

/// `per_cpu!(EXPR)`: a `PerCpu` whose every slot is the const `EXPR`.
macro_rules! per_cpu {
    ($init:expr) => {
        $crate::percpu::PerCpu(
            [const { $crate::percpu::CachePadded($init) }; $crate::percpu::MAX_CPUS],
        )
    };
}
pub(crate) use per_cpu;
