//! Time: the TSC calibrated at boot against the reference clock `arch` picks,
//! `now_ns()` (nanoseconds since the PVH entry), busy-wait delays, and the
//! per-CPU tick and its count. The timer interrupt (`arch`) calls
//! [`on_tick`] and then RCU's tick (`crate::sync::rcu::on_tick`, the
//! quiescent states): time is a floor that RCU and the console read, and
//! calls up into neither.
//!
//! Touches: the clocks only through `crate::arch::clock`; per-CPU
//! tick counters. `on_tick` runs in interrupt context: atomics only.

use core::sync::atomic::{AtomicU32, AtomicU64, Ordering};

use crate::arch::processor::rdtsc;
use crate::percpu::{per_cpu, PerCpu};

static TSC_HZ: AtomicU64 = AtomicU64::new(0);
/// Nanoseconds per TSC tick, as a 32.32 fixed-point number.
static NS_PER_TICK_FP: AtomicU64 = AtomicU64::new(0);
static TICK_HZ: AtomicU32 = AtomicU32::new(0);
static TIMER_HZ: AtomicU64 = AtomicU64::new(0);

/// Timer interrupts taken, per CPU.
pub static TICKS: PerCpu<AtomicU64> = per_cpu!(AtomicU64::new(0));

pub use crate::arch::clock::Reference;

/// Calibrate the TSC against the reference clock of `machine` (see
/// `arch::clock`). Returns the TSC frequency in Hz and the reference
/// used.
pub fn init(machine: &crate::arch::Machine) -> (u64, Reference) {
    let measured = crate::arch::clock::calibrate_tsc(machine);
    let (hz, ok) = match measured {
        Some((hz, r)) if hz > 1_000_000 => (hz, r),
        _ => (2_000_000_000, Reference::Guess),
    };
    TSC_HZ.store(hz, Ordering::Relaxed);
    NS_PER_TICK_FP.store(
        ((1_000_000_000u128 << 32) / hz as u128) as u64,
        Ordering::Relaxed,
    );
    (hz, ok)
}

/// Calibrate the tick timer against the TSC and start the boot CPU's tick
/// at `hz`; APs start theirs with the same count when they come up.
pub fn start_tick(hz: u32) {
    TICK_HZ.store(hz, Ordering::Relaxed);
    let timer = crate::arch::clock::start_tick_timer(tsc_hz(), hz);
    TIMER_HZ.store(timer, Ordering::Relaxed);
}

/// TSC frequency in Hz.
pub fn tsc_hz() -> u64 {
    TSC_HZ.load(Ordering::Relaxed)
}

/// Tick timer frequency (after its divider) in Hz.
pub fn timer_hz() -> u64 {
    TIMER_HZ.load(Ordering::Relaxed)
}

/// Tick frequency in Hz.
pub fn tick_hz() -> u32 {
    TICK_HZ.load(Ordering::Relaxed)
}

/// Convert TSC ticks to nanoseconds.
#[inline]
pub fn tsc_to_ns(ticks: u64) -> u64 {
    ((ticks as u128 * NS_PER_TICK_FP.load(Ordering::Relaxed) as u128) >> 32) as u64
}

/// Monotonic nanoseconds since the PVH entry.
#[inline]
pub fn now_ns() -> u64 {
    tsc_to_ns(rdtsc().wrapping_sub(crate::arch::boot_tsc()))
}

/// Busy-wait `us` microseconds.
pub fn delay_us(us: u64) {
    let t0 = rdtsc();
    let n = tsc_hz() * us / 1_000_000;
    while rdtsc().wrapping_sub(t0) < n {
        crate::arch::processor::pause();
    }
}

/// Timer interrupt: count the tick (interrupt context, interrupts off).
pub fn on_tick() {
    TICKS.get().fetch_add(1, Ordering::Relaxed);
}

/// Ticks taken so far by `cpu`.
pub fn ticks(cpu: usize) -> u64 {
    TICKS[cpu].load(Ordering::Relaxed)
}
