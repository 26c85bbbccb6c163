//! The HPET main counter as the TSC's reference clock: a 64-bit counter at a
//! fixed, self-described period (femtoseconds per tick), read through MMIO
//! (identity-mapped, 0xFED00000 on q35). Calibration pairs TSC and HPET
//! reads and keeps the tightest pair, so a vCPU descheduled by the host
//! (common under TCG on a busy machine) does not skew the result.
//!
//! Touches: the HPET's general configuration (sets "enable counter") and
//! counter registers only; no HPET interrupts are used.

use core::sync::atomic::{AtomicUsize, Ordering};

use super::processor::rdtsc;

const REG_CAPS: usize = 0x00;
const REG_CONFIG: usize = 0x10;
const REG_COUNTER: usize = 0xF0;

static BASE: AtomicUsize = AtomicUsize::new(0);
static PERIOD_FS: AtomicUsize = AtomicUsize::new(0);

fn read(reg: usize) -> u64 {
    // SAFETY: BASE is the HPET register block from the ACPI HPET table,
    // identity-mapped (below 4 GiB); `reg` is an 8-byte aligned register.
    unsafe { core::ptr::read_volatile((BASE.load(Ordering::Relaxed) + reg) as *const u64) }
}

fn write(reg: usize, v: u64) {
    // SAFETY: as in `read`; only the configuration register is written.
    unsafe { core::ptr::write_volatile((BASE.load(Ordering::Relaxed) + reg) as *mut u64, v) }
}

/// Use the HPET at physical `base`; enables its main counter. Returns false
/// if the block does not look like an HPET.
pub fn init(base: usize) -> bool {
    if base == 0 || base >= (1 << 32) {
        return false;
    }
    BASE.store(base, Ordering::Relaxed);
    let period = read(REG_CAPS) >> 32;
    if period == 0 || period > 100_000_000 {
        BASE.store(0, Ordering::Relaxed);
        return false;
    }
    PERIOD_FS.store(period as usize, Ordering::Relaxed);
    write(REG_CONFIG, read(REG_CONFIG) | 1);
    true
}

/// Is an HPET in use?
pub fn available() -> bool {
    PERIOD_FS.load(Ordering::Relaxed) != 0
}

/// Current main counter value.
pub fn counter() -> u64 {
    read(REG_COUNTER)
}

/// (TSC, HPET) read as close together as possible: the pair whose two
/// surrounding TSC reads are nearest of eight tries.
fn paired_read() -> (u64, u64) {
    let mut best = (u64::MAX, 0, 0);
    for _ in 0..8 {
        let t0 = rdtsc();
        let h = counter();
        let t1 = rdtsc();
        if t1 - t0 < best.0 {
            best = (t1 - t0, t0 + (t1 - t0) / 2, h);
        }
    }
    (best.1, best.2)
}

/// TSC frequency measured against the HPET over about `ms` milliseconds.
pub fn tsc_hz(ms: u64) -> Option<u64> {
    let period = PERIOD_FS.load(Ordering::Relaxed) as u128;
    if period == 0 {
        return None;
    }
    let ticks = (ms as u128 * 1_000_000_000_000 / period) as u64;
    let (t0, h0) = paired_read();
    while counter().wrapping_sub(h0) < ticks {
        core::hint::spin_loop();
    }
    let (t1, h1) = paired_read();
    let fs = (h1.wrapping_sub(h0)) as u128 * period;
    if fs == 0 {
        return None;
    }
    Some(((t1 - t0) as u128 * 1_000_000_000_000_000 / fs) as u64)
}
