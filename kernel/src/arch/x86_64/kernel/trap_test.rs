//! Self-tests of the trap handlers (listed in `crate::selftest`): a
//! breakpoint on every CPU is counted and returns, and page faults taken
//! through the fault probe (the null page, every CPU's stack guard page)
//! report the faulting address while a mapped word reads fine.
//!
//! They live here because they raise x86 exceptions on purpose, which
//! generic code must not name. Safe code only (the probe holds the unsafe
//! part). Touches: every CPU through `crate::smp`, per-core counters.

use alloc::format;
use core::sync::atomic::Ordering;

use super::{core_local, probe};
use crate::ktest::{ensure, TestResult};
use crate::smp::{self, CpuSet};

pub(crate) fn exception_breakpoint() -> TestResult {
    let r = smp::run_on_collect(&CpuSet::all(), |cpu| {
        let before = core_local::of(cpu).breakpoints.load(Ordering::Relaxed);
        crate::arch::processor::breakpoint();
        core_local::of(cpu).breakpoints.load(Ordering::Relaxed) - before
    });
    for (cpu, n) in r {
        ensure!(n == 1, "cpu {cpu}: {n} breakpoints counted");
    }
    Ok(())
}

pub(crate) fn exception_page_fault() -> TestResult {
    // null page
    match probe::read_u64(0) {
        Ok(v) => return Err(format!("reading address 0 returned {v:#x}")),
        Err(f) => ensure!(
            f.addr == 0 && f.error_code & 1 == 0,
            "null read fault {f:?}"
        ),
    }
    // a mapped word reads fine through the probe
    let word: u64 = 0x5eed_cafe_f00d_0001;
    let got = probe::read_u64(&word as *const u64 as u64);
    ensure!(got == Ok(word), "probe of a mapped word gave {got:?}");
    // every CPU's own stack guard page faults
    let r = smp::run_on_collect(&CpuSet::all(), |cpu| {
        let cl = core_local::of(cpu);
        let bottom = if cpu == 0 {
            crate::arch::boot_stack().1
        } else {
            cl.stack_bottom.load(Ordering::Relaxed)
        };
        let guard = (bottom - 4096) as u64;
        (
            guard,
            crate::mm::stack::is_guard_page(guard as usize),
            probe::read_u64(guard + 64),
        )
    });
    for (cpu, (guard, known, res)) in r {
        ensure!(
            known,
            "cpu {cpu}: {guard:#x} not recognised as a guard page"
        );
        match res {
            Ok(v) => {
                return Err(format!(
                    "cpu {cpu}: guard page {guard:#x} readable ({v:#x})"
                ))
            }
            Err(f) => ensure!(
                f.addr == guard + 64,
                "cpu {cpu}: fault at {:#x}, expected {:#x}",
                f.addr,
                guard + 64
            ),
        }
    }
    Ok(())
}
