//! The 8254 PIT as a fixed-frequency reference (1.193182 MHz) for TSC
//! calibration when there is no HPET: channel 0 runs free in mode 2 over the
//! full 16-bit range and is read back with latch commands, so no speaker
//! gate (port 0x61, absent on microvm) is needed. The PIT's IRQ 0 is never
//! delivered (legacy PICs masked, IOAPIC not programmed). Used on the boot
//! CPU before the APs start and by a self-test; nothing else touches the PIT.

use ::x86_64::instructions::port::Port;

use super::processor::rdtsc;

/// PIT input clock in Hz.
pub const PIT_HZ: u64 = 1_193_182;

fn outb(port: u16, v: u8) {
    // SAFETY: PIT command/data ports; only channel 0, whose interrupt is
    // masked, is reprogrammed.
    unsafe { Port::<u8>::new(port).write(v) }
}

fn inb(port: u16) -> u8 {
    // SAFETY: reading a latched PIT count has no other effect.
    unsafe { Port::<u8>::new(port).read() }
}

fn read_count() -> u16 {
    outb(0x43, 0x00); // latch channel 0
    let lo = inb(0x40) as u16;
    let hi = inb(0x40) as u16;
    (hi << 8) | lo
}

/// (TSC, PIT count) as close together as possible (tightest of 4 tries).
fn paired_read() -> (u64, u16) {
    let mut best = (u64::MAX, 0, 0);
    for _ in 0..4 {
        let t0 = rdtsc();
        let c = read_count();
        let t1 = rdtsc();
        if t1 - t0 < best.0 {
            best = (t1 - t0, t0 + (t1 - t0) / 2, c);
        }
    }
    (best.1, best.2)
}

/// TSC frequency measured over about `ms` milliseconds of PIT time, or
/// `None` if the PIT does not count.
pub fn tsc_hz_over(ms: u64) -> Option<u64> {
    outb(0x43, 0x34); // channel 0, lo/hi byte, mode 2, binary
    outb(0x40, 0);
    outb(0x40, 0); // count 0 = 65536
    let want = PIT_HZ * ms / 1000;
    let (t0, c0) = paired_read();
    let mut prev = c0;
    let mut elapsed: u64 = 0;
    let mut spins: u64 = 0;
    while elapsed < want {
        let c = read_count();
        // counts down; wraps from 1 to 0xffff (mode 2 skips 0)
        elapsed += prev.wrapping_sub(c) as u64;
        prev = c;
        spins += 1;
        if spins > 10_000_000 && elapsed == 0 {
            return None;
        }
    }
    let (t1, c1) = paired_read();
    let ticks = elapsed + prev.wrapping_sub(c1) as u64;
    Some(((t1 - t0) as u128 * PIT_HZ as u128 / ticks.max(1) as u128) as u64)
}

/// Calibrated TSC frequency: median of three 30 ms measurements.
pub fn tsc_hz() -> Option<u64> {
    let mut v = [0u64; 3];
    for x in v.iter_mut() {
        *x = tsc_hz_over(30)?;
    }
    v.sort_unstable();
    Some(v[1])
}
