//! Self-tests of time (listed in `crate::selftest`): the boot calibration
//! against a fresh measurement of the reference clock, `now_ns` monotonic
//! across CPUs, and the tick on every CPU at no more than its configured
//! rate.
//!
//! Safe code only; beside `time.rs`. Touches: the reference clock through
//! `crate::arch::clock`, the tick counters, every CPU through `crate::smp`.

use alloc::vec::Vec;

use crate::ktest::{ensure, ncpus, wait_until, TestResult};
use crate::smp::{self, CpuSet};
use crate::time;

pub(crate) fn tsc_vs_reference_clock() -> TestResult {
    let (hz, what) = crate::arch::clock::remeasure_tsc_hz(50)?;
    let ratio = hz as f64 / time::tsc_hz() as f64;
    ensure!(
        (0.95..1.05).contains(&ratio),
        "{what} now says a {hz} Hz TSC, boot calibration {} Hz",
        time::tsc_hz()
    );
    let t0 = time::now_ns();
    time::delay_us(5000);
    let dt = time::now_ns() - t0;
    // Only the lower bound is exact: the host may deschedule this vCPU.
    ensure!(
        (5_000_000..2_000_000_000).contains(&dt),
        "delay_us(5000) took {dt} ns"
    );
    Ok(())
}

pub(crate) fn clock_monotonic_across_cpus() -> TestResult {
    let before = time::now_ns();
    let r = smp::run_on_collect(&CpuSet::all(), |_| {
        let a = time::now_ns();
        let b = time::now_ns();
        (a, b)
    });
    let after = time::now_ns();
    for (cpu, (a, b)) in r {
        ensure!(a <= b, "cpu {cpu}: clock went back {a} -> {b}");
        ensure!(
            before <= a && b <= after,
            "cpu {cpu}: {a}..{b} outside the caller's {before}..{after}"
        );
    }
    Ok(())
}

pub(crate) fn timer_ticks_on_every_cpu() -> TestResult {
    let n = ncpus();
    let t0: Vec<u64> = (0..n).map(time::ticks).collect();
    let ok = wait_until(10_000, || (0..n).all(|c| time::ticks(c) >= t0[c] + 3));
    let lagging: Vec<usize> = (0..n).filter(|&c| time::ticks(c) < t0[c] + 3).collect();
    ensure!(ok, "CPUs without 3 ticks in 10 s: {lagging:?}");
    // The boot CPU never ticks faster than configured. It may tick slower:
    // when the host deschedules a vCPU, the emulated LAPIC coalesces missed
    // periodic ticks, so only a loose lower bound holds under TCG.
    let hz = time::tick_hz() as u64;
    let (k0, s0) = (time::ticks(0), time::now_ns());
    time::delay_us(500_000);
    let (k1, s1) = (time::ticks(0), time::now_ns());
    let expect = hz * (s1 - s0) / 1_000_000_000;
    let got = k1 - k0;
    let ms = (s1 - s0) / 1_000_000;
    ensure!(
        got <= expect + 2,
        "boot CPU took {got} ticks in {ms} ms at {hz} Hz"
    );
    ensure!(
        got * 10 >= expect,
        "boot CPU took only {got} ticks in {ms} ms at {hz} Hz"
    );
    Ok(())
}
