//! Generic SMP interface: which CPUs are online, CPU sets, and running a
//! closure on a chosen set of CPUs (the boot CPU's tool for benchmark tasks:
//! one task per CPU, pinned, and for the self-tests).
//!
//! The mechanism (mailboxes, wake-up IPIs, AP start) is
//! `crate::arch::smp`; this module is safe code on top of it.
//!
//! ```ignore
//! // one pinned task on each of the first 8 CPUs, results in CPU order
//! let per_cpu_ops: Vec<u64> = smp::run_on_collect(&CpuSet::first(8), |cpu| work(cpu));
//! ```

use alloc::vec::Vec;

use crate::arch::smp as arch_smp;
use crate::percpu::MAX_CPUS;

/// A set of CPU ids.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CpuSet([u64; MAX_CPUS / 64]);

impl CpuSet {
    /// No CPU.
    pub const fn empty() -> Self {
        CpuSet([0; MAX_CPUS / 64])
    }

    /// The first `n` online CPUs (all of them if fewer are online).
    pub fn first(n: usize) -> Self {
        let mut s = Self::empty();
        for c in (0..cpu_count())
            .filter(|&c| arch_smp::is_online(c) || c == 0)
            .take(n)
        {
            s.insert(c);
        }
        s
    }

    /// Every online CPU.
    pub fn all() -> Self {
        Self::first(cpu_count())
    }

    /// Just `cpu`.
    pub fn single(cpu: usize) -> Self {
        let mut s = Self::empty();
        s.insert(cpu);
        s
    }

    /// Add `cpu`.
    pub fn insert(&mut self, cpu: usize) {
        self.0[cpu / 64] |= 1 << (cpu % 64);
    }

    /// Remove `cpu`.
    pub fn remove(&mut self, cpu: usize) {
        self.0[cpu / 64] &= !(1 << (cpu % 64));
    }

    /// Is `cpu` in the set?
    pub fn contains(&self, cpu: usize) -> bool {
        cpu < MAX_CPUS && self.0[cpu / 64] & (1 << (cpu % 64)) != 0
    }

    /// Number of CPUs in the set.
    pub fn len(&self) -> usize {
        self.0.iter().map(|w| w.count_ones() as usize).sum()
    }

    /// Is the set empty?
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// CPU ids in ascending order.
    pub fn iter(&self) -> impl Iterator<Item = usize> + '_ {
        (0..MAX_CPUS).filter(|&c| self.contains(c))
    }
}

/// Number of CPU ids in use: highest online id + 1. CPU ids are dense
/// (`0..cpu_count()` are all online) unless an AP failed to start, which the
/// boot log reports.
pub fn cpu_count() -> usize {
    arch_smp::id_limit().max(1)
}

/// Number of CPUs online.
pub fn online_count() -> usize {
    arch_smp::online_count().max(1)
}

/// The calling CPU's id.
pub fn current_cpu() -> usize {
    crate::arch::cpu_id()
}

/// Run `f(cpu)` on every CPU of `cpus` at once (each on its own CPU, the
/// caller too if it is in the set) and wait until all have returned.
///
/// Call from the boot CPU (or any CPU not itself running a job); one call at
/// a time system-wide. Offline CPUs in the set are a bug (panic).
pub fn run_on<F: Fn(usize) + Sync>(cpus: &CpuSet, f: F) {
    let list: Vec<usize> = cpus.iter().collect();
    arch_smp::call_on(&list, &f);
}

/// Like [`run_on`], collecting each CPU's result in ascending CPU order.
pub fn run_on_collect<R: Send, F: Fn(usize) -> R + Sync>(cpus: &CpuSet, f: F) -> Vec<(usize, R)> {
    let list: Vec<usize> = cpus.iter().collect();
    let slots: Vec<spin::Mutex<Option<R>>> = list.iter().map(|_| spin::Mutex::new(None)).collect();
    let g = |cpu: usize| {
        let i = list.iter().position(|&c| c == cpu).expect("cpu in list");
        let r = f(cpu);
        *slots[i].lock() = Some(r);
    };
    arch_smp::call_on(&list, &g);
    list.iter()
        .zip(slots)
        .map(|(&c, s)| {
            (
                c,
                s.into_inner()
                    .expect("every CPU of the set ran the closure"),
            )
        })
        .collect()
}

/// Send a wake-up IPI to `cpu` (its idle loop re-checks its work).
pub fn kick(cpu: usize) {
    arch_smp::kick(cpu);
}
