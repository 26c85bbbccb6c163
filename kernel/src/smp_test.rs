//! Self-tests of cross-CPU calls (listed in `crate::selftest`): jobs on
//! every CPU and on subsets, results collected in CPU order, and the test
//! and wake-up IPIs reaching each application processor.
//!
//! Safe code only; beside `smp.rs`. Touches: every CPU through
//! `crate::smp`, the IPI counters of `crate::arch::interrupts`.

use alloc::vec::Vec;
use core::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

use crate::arch::{interrupts, smp as arch_smp};
use crate::ktest::{ensure, ncpus, wait_until, TestResult};
use crate::smp::{self, CpuSet};

pub(crate) fn cross_cpu_calls() -> TestResult {
    let n = ncpus();
    let hits: Vec<AtomicUsize> = (0..n).map(|_| AtomicUsize::new(0)).collect();
    for _ in 0..10 {
        smp::run_on(&CpuSet::all(), |cpu| {
            hits[cpu].fetch_add(1, Ordering::Relaxed);
        });
    }
    ensure!(
        hits.iter().all(|h| h.load(Ordering::Relaxed) == 10),
        "not every CPU ran 10 jobs"
    );
    // odd CPUs only (or just CPU 0 on a uniprocessor)
    let mut odd = CpuSet::all();
    (0..n).step_by(2).for_each(|c| odd.remove(c));
    if odd.is_empty() {
        odd.insert(0);
    }
    ensure!(
        odd.len() == n / 2 || n == 1,
        "CpuSet of odd CPUs has {} members",
        odd.len()
    );
    let ran = AtomicU64::new(0);
    smp::run_on(&odd, |cpu| {
        ran.fetch_or(1 << (cpu % 64), Ordering::Relaxed);
    });
    let expect = odd.iter().fold(0u64, |m, c| m | 1 << (c % 64));
    ensure!(
        ran.load(Ordering::Relaxed) == expect,
        "subset call ran on {:#x}, wanted {expect:#x}",
        ran.load(Ordering::Relaxed)
    );
    let r = smp::run_on_collect(&CpuSet::first(n), |cpu| cpu * 3);
    ensure!(
        r.iter()
            .enumerate()
            .all(|(i, &(c, v))| c == i && v == 3 * i),
        "collected results out of order"
    );
    Ok(())
}

pub(crate) fn ipi_delivery() -> TestResult {
    let n = ncpus();
    for cpu in 1..n {
        let before = interrupts::IPIS[cpu].load(Ordering::Relaxed);
        arch_smp::send_test_ipi(cpu);
        let ok = wait_until(5000, || {
            interrupts::IPIS[cpu].load(Ordering::Relaxed) > before
        });
        ensure!(ok, "cpu {cpu} did not take a test IPI within 5 s");
        smp::kick(cpu);
        let ok = wait_until(5000, || {
            interrupts::IPIS[cpu].load(Ordering::Relaxed) > before + 1
        });
        ensure!(ok, "cpu {cpu} did not take a wake-up IPI within 5 s");
    }
    Ok(())
}
