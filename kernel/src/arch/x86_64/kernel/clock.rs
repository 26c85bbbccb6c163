//! The clocks behind `crate::time`, chosen here so generic code never names
//! an x86 device: the TSC's reference at boot (the HPET if ACPI lists one,
//! else the PIT), a later re-measurement for the self-test, and the
//! per-CPU tick timer (the local APIC timer).
//!
//! Touches: the HPET or PIT (boot CPU, at calibration), the boot CPU's LAPIC
//! timer; nothing else. `crate::time` keeps the frequencies.

use super::{apic, hpet, pit, Machine};

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

/// The references [`calibrate_tsc`] tries, for the warning when none answers.
pub const REFERENCES: &str = "HPET or PIT";

/// The per-CPU tick timer's name, as the boot log says it.
pub const TICK_TIMER: &str = "LAPIC timer";

/// Measure the TSC against the HPET `machine` has if there is one (median
/// of three 20 ms windows), else the PIT. `None`: nothing answered.
pub fn calibrate_tsc(machine: &Machine) -> Option<(u64, Reference)> {
    let hpet = machine.hpet_base.is_some_and(|b| hpet::init(b as usize));
    if hpet {
        let mut v = [0u64; 3];
        for x in v.iter_mut() {
            *x = hpet::tsc_hz(20).unwrap_or(0);
        }
        v.sort_unstable();
        Some((v[1], Reference::Hpet))
    } else {
        pit::tsc_hz().map(|hz| (hz, Reference::Pit))
    }
}

/// Measure the TSC again over `ms` milliseconds against the reference boot
/// used: `(Hz, the reference's name)`, or why it could not.
pub fn remeasure_tsc_hz(ms: u64) -> Result<(u64, &'static str), &'static str> {
    if hpet::available() {
        Ok((hpet::tsc_hz(ms).ok_or("HPET does not count")?, "HPET"))
    } else {
        Ok((pit::tsc_hz_over(ms).ok_or("PIT does not count")?, "PIT"))
    }
}

/// Measure this CPU's tick timer against the (calibrated) TSC and start it
/// at `hz`. Returns the timer's frequency.
pub fn start_tick_timer(tsc_hz: u64, hz: u32) -> u64 {
    apic::calibrate_timer(tsc_hz, hz)
}
