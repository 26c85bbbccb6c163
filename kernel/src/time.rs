//! Time: the TSC calibrated against the HPET (else the PIT) at boot, `now_ns()` (nanoseconds
//! since the PVH entry), busy-wait delays, and the per-CPU LAPIC tick that
//! drives RCU quiescent states (and, later, per-second benchmark samples).
//!
//! Touches: the HPET or PIT (boot CPU, at calibration), each CPU's LAPIC timer, per-CPU tick
//! counters. `on_tick` runs in interrupt context: atomics only.

use core::sync::atomic::{AtomicU32, AtomicU64, Ordering};

use crate::arch::processor::rdtsc;
use crate::percpu::{per_cpu, PerCpu};

static TSC_HZ: AtomicU64 = AtomicU64::new(0);
/// Nanoseconds per TSC tick, as a 32.32 fixed-point number.
static NS_PER_TICK_FP: AtomicU64 = AtomicU64::new(0);
static TICK_HZ: AtomicU32 = AtomicU32::new(0);
static LAPIC_HZ: AtomicU64 = AtomicU64::new(0);

/// Timer interrupts taken, per CPU.
pub static TICKS: PerCpu<AtomicU64> = per_cpu!(AtomicU64::new(0));

/// The clock the TSC was calibrated against.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Reference {
    /// HPET main counter (preferred: robust against vCPU descheduling).
    Hpet,
    /// PIT channel 0 (latched read-back).
    Pit,
    /// Nothing answered; a 2 GHz TSC is assumed.
    Guess,
}

/// Calibrate the TSC against the HPET `machine` has if there is one, else
/// the PIT. Returns the TSC frequency in Hz and the reference used.
pub fn init(machine: &crate::arch::kernel::Machine) -> (u64, Reference) {
    let hpet = machine
        .hpet_base
        .is_some_and(|b| crate::arch::kernel::hpet::init(b as usize));
    let measured = if hpet {
        let mut v = [0u64; 3];
        for x in v.iter_mut() {
            *x = crate::arch::kernel::hpet::tsc_hz(20).unwrap_or(0);
        }
        v.sort_unstable();
        Some((v[1], Reference::Hpet))
    } else {
        crate::arch::kernel::pit::tsc_hz().map(|hz| (hz, Reference::Pit))
    };
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

/// Calibrate the LAPIC timer against the TSC and start the boot CPU's tick
/// at `hz`; APs start theirs with the same count when they come up.
pub fn start_tick(hz: u32) {
    TICK_HZ.store(hz, Ordering::Relaxed);
    let lapic = crate::arch::kernel::apic::calibrate_timer(tsc_hz(), hz);
    LAPIC_HZ.store(lapic, Ordering::Relaxed);
}

/// TSC frequency in Hz.
pub fn tsc_hz() -> u64 {
    TSC_HZ.load(Ordering::Relaxed)
}

/// LAPIC timer frequency (after its divider) in Hz.
pub fn lapic_hz() -> u64 {
    LAPIC_HZ.load(Ordering::Relaxed)
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
    tsc_to_ns(rdtsc().wrapping_sub(crate::arch::start::entry::boot_tsc()))
}

/// Busy-wait `us` microseconds.
pub fn delay_us(us: u64) {
    let t0 = rdtsc();
    let n = tsc_hz() * us / 1_000_000;
    while rdtsc().wrapping_sub(t0) < n {
        crate::arch::processor::pause();
    }
}

/// Timer interrupt (interrupt context, interrupts off).
pub fn on_tick() {
    TICKS.get().fetch_add(1, Ordering::Relaxed);
    crate::sync::rcu::on_tick();
}

/// Ticks taken so far by `cpu`.
pub fn ticks(cpu: usize) -> u64 {
    TICKS[cpu].load(Ordering::Relaxed)
}
