//! COM1 (I/O port 0x3f8), a polled 16550 UART at 115200 8N1: the kernel
//! console. Output only.
//!
//! One spinlock serialises lines from different CPUs, taken with interrupts
//! off. The fatal paths (exceptions, panics) use [`write_fmt_emergency`],
//! which gives up on the lock after a while so that a CPU that died while
//! printing cannot silence the report.

use core::fmt::{self, Write};

use ::x86_64::instructions::interrupts::without_interrupts;
use ::x86_64::instructions::port::Port;
use spin::Mutex;

const COM1: u16 = 0x3f8;

static LOCK: Mutex<()> = Mutex::new(());

fn outb(port: u16, v: u8) {
    // SAFETY: COM1's registers; writing them only affects the UART.
    unsafe { Port::<u8>::new(port).write(v) }
}

fn inb(port: u16) -> u8 {
    // SAFETY: reading COM1's line status register has no side effects.
    unsafe { Port::<u8>::new(port).read() }
}

/// Program the UART (115200 baud, 8N1, FIFO on, interrupts off).
pub fn init() {
    outb(COM1 + 1, 0x00); // no interrupts
    outb(COM1 + 3, 0x80); // DLAB
    outb(COM1, 0x01); // divisor 1 = 115200
    outb(COM1 + 1, 0x00);
    outb(COM1 + 3, 0x03); // 8N1
    outb(COM1 + 2, 0xC7); // FIFO on, cleared, 14-byte threshold
    outb(COM1 + 4, 0x03); // DTR | RTS
}

fn put(b: u8) {
    let mut spins = 0u32;
    while inb(COM1 + 5) & 0x20 == 0 && spins < 100_000 {
        spins += 1;
        core::hint::spin_loop();
    }
    outb(COM1, b);
}

struct Raw;

impl Write for Raw {
    fn write_str(&mut self, s: &str) -> fmt::Result {
        for b in s.bytes() {
            put(b);
        }
        Ok(())
    }
}

/// Print under the console lock (whole calls are not interleaved).
pub fn write_fmt(args: fmt::Arguments) {
    without_interrupts(|| {
        let _g = LOCK.lock();
        let _ = Raw.write_fmt(args);
    });
}

/// Print from a fatal path: wait a bounded time for the lock, then print
/// anyway.
pub fn write_fmt_emergency(args: fmt::Arguments) {
    without_interrupts(|| {
        for _ in 0..10_000_000u32 {
            if let Some(_g) = LOCK.try_lock() {
                let _ = Raw.write_fmt(args);
                return;
            }
            core::hint::spin_loop();
        }
        let _ = Raw.write_fmt(args);
    });
}
