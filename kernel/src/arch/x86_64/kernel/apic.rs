//! The local APIC in xAPIC (MMIO) mode: enable, end-of-interrupt, the
//! periodic timer tick, and inter-processor interrupts (INIT, SIPI, fixed).
//! Also masks the legacy 8259 PICs, which the kernel never uses.
//!
//! The interrupt vectors live here (as Linux keeps them in
//! `asm/irq_vectors.h`): every one of them reaches a CPU through its local
//! APIC (the timer's LVT entry, the spurious-vector register, IPIs sent
//! through the ICR). `interrupts` builds the IDT from them and `smp` sends
//! them; neither is imported here.
//!
//! The LAPIC page (0xFEE00000 unless the MADT says otherwise) is reached
//! through the boot identity map. Each CPU programs only its own LAPIC; ICR
//! writes are done with interrupts off so the high/low pair is not split.

use core::sync::atomic::{AtomicU32, AtomicUsize, Ordering};

use ::x86_64::instructions::interrupts::without_interrupts;
use ::x86_64::instructions::port::Port;

use super::processor;

/// LAPIC timer tick.
pub const TIMER_VECTOR: u8 = 0x20;
/// "Look at your mailbox" IPI.
pub const WAKEUP_VECTOR: u8 = 0xF0;
/// IPI used by the self-tests.
pub const TEST_VECTOR: u8 = 0xF1;
/// The paravirt lock's kick (`fs::sync::pvqspinlock`).
pub const KICK_VECTOR: u8 = 0xF2;
/// LAPIC spurious interrupt vector.
pub const SPURIOUS_VECTOR: u8 = 0xFF;

const REG_ID: usize = 0x20;
const REG_TPR: usize = 0x80;
const REG_EOI: usize = 0xB0;
const REG_SVR: usize = 0xF0;
const REG_ICR_LOW: usize = 0x300;
const REG_ICR_HIGH: usize = 0x310;
const REG_LVT_TIMER: usize = 0x320;
const REG_TIMER_INIT: usize = 0x380;
const REG_TIMER_CUR: usize = 0x390;
const REG_TIMER_DIV: usize = 0x3E0;

const ICR_PENDING: u32 = 1 << 12;
const ICR_ASSERT: u32 = 1 << 14;
const ICR_INIT: u32 = 5 << 8;
const ICR_STARTUP: u32 = 6 << 8;
const LVT_MASKED: u32 = 1 << 16;
const LVT_PERIODIC: u32 = 1 << 17;
/// Divide configuration value for "divide by 16".
const DIV_16: u32 = 0x3;

static BASE: AtomicUsize = AtomicUsize::new(0xFEE0_0000);
/// Timer initial count for one tick, set by [`calibrate_timer`].
static TICK_COUNT: AtomicU32 = AtomicU32::new(0);

/// Use the LAPIC at physical `addr` (from the MADT).
pub fn set_base(addr: usize) {
    BASE.store(addr, Ordering::Relaxed);
}

fn read(reg: usize) -> u32 {
    // SAFETY: BASE is the LAPIC MMIO page, identity-mapped; `reg` is one of
    // the 16-byte aligned 32-bit registers above.
    unsafe { core::ptr::read_volatile((BASE.load(Ordering::Relaxed) + reg) as *const u32) }
}

fn write(reg: usize, v: u32) {
    // SAFETY: as in `read`; writes to the calling CPU's own LAPIC.
    unsafe { core::ptr::write_volatile((BASE.load(Ordering::Relaxed) + reg) as *mut u32, v) }
}

/// Mask both legacy PICs (all IRQs come through the LAPIC).
pub fn disable_legacy_pic() {
    // SAFETY: the 8259 data ports; masking all lines only stops legacy IRQs.
    unsafe {
        Port::<u8>::new(0x21).write(0xFF);
        Port::<u8>::new(0xA1).write(0xFF);
    }
}

/// This CPU's LAPIC id.
pub fn id() -> u32 {
    read(REG_ID) >> 24
}

/// Enable this CPU's LAPIC (spurious vector, accept all priorities) and, if
/// calibrated, start its periodic tick.
pub fn init_local() {
    write(REG_TPR, 0);
    write(REG_SVR, 0x100 | SPURIOUS_VECTOR as u32);
    let count = TICK_COUNT.load(Ordering::Relaxed);
    if count != 0 {
        start_tick(count);
    }
}

fn start_tick(count: u32) {
    write(REG_TIMER_DIV, DIV_16);
    write(REG_LVT_TIMER, TIMER_VECTOR as u32 | LVT_PERIODIC);
    write(REG_TIMER_INIT, count);
}

/// Measure the LAPIC timer against the (calibrated) TSC, then start this
/// CPU's tick at `hz`. Returns the timer frequency (after the divider).
pub fn calibrate_timer(tsc_hz: u64, hz: u32) -> u64 {
    write(REG_TIMER_DIV, DIV_16);
    write(REG_LVT_TIMER, LVT_MASKED);
    write(REG_TIMER_INIT, u32::MAX);
    let window = tsc_hz / 50; // 20 ms
    let (t0, c0) = paired_count();
    while processor::rdtsc() - t0 < window {
        processor::pause();
    }
    let (t1, c1) = paired_count();
    write(REG_TIMER_INIT, 0);
    let timer_hz = ((c0 - c1) as u128 * tsc_hz as u128 / (t1 - t0).max(1) as u128) as u64;
    let count = (timer_hz / hz as u64).clamp(1, u32::MAX as u64) as u32;
    TICK_COUNT.store(count, Ordering::Relaxed);
    start_tick(count);
    timer_hz
}

/// (TSC, timer current count) read as close together as possible: the
/// tightest of eight tries (a vCPU may be descheduled between two reads).
fn paired_count() -> (u64, u32) {
    let mut best = (u64::MAX, 0, 0);
    for _ in 0..8 {
        let t0 = processor::rdtsc();
        let c = read(REG_TIMER_CUR);
        let t1 = processor::rdtsc();
        if t1 - t0 < best.0 {
            best = (t1 - t0, t0 + (t1 - t0) / 2, c);
        }
    }
    (best.1, best.2)
}

/// Signal end of interrupt.
pub fn eoi() {
    write(REG_EOI, 0);
}

fn send_icr(apic_id: u32, low: u32) {
    without_interrupts(|| {
        while read(REG_ICR_LOW) & ICR_PENDING != 0 {
            processor::pause();
        }
        write(REG_ICR_HIGH, apic_id << 24);
        write(REG_ICR_LOW, low);
        while read(REG_ICR_LOW) & ICR_PENDING != 0 {
            processor::pause();
        }
    });
}

/// Send a fixed interrupt `vector` to `apic_id`.
pub fn send_ipi(apic_id: u32, vector: u8) {
    send_icr(apic_id, ICR_ASSERT | vector as u32);
}

/// Send INIT to `apic_id`.
pub fn send_init(apic_id: u32) {
    send_icr(apic_id, ICR_ASSERT | ICR_INIT);
}

/// Send a STARTUP IPI pointing the AP at physical page `page` (address >> 12).
pub fn send_startup(apic_id: u32, page: u8) {
    send_icr(apic_id, ICR_ASSERT | ICR_STARTUP | page as u32);
}
