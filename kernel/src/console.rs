//! The console: `kprintln!` for contract lines that must appear
//! verbatim (`smp: …`, `N passed, M failed`), and the `log` crate backend
//! (`[   1.234567] cpu 3 INFO: …`). Everything goes to COM1.
//!
//! May be used from any CPU; not from interrupt handlers except through
//! [`emergency`] (fatal paths).

use core::fmt;
use core::sync::atomic::{AtomicBool, Ordering};

/// Print a line.
macro_rules! kprintln {
    () => { $crate::console::print(format_args!("\n")) };
    ($($arg:tt)*) => { $crate::console::print(format_args!("{}\n", format_args!($($arg)*))) };
}
pub(crate) use kprintln;

/// Print under the console lock.
pub fn print(args: fmt::Arguments) {
    crate::arch::serial::write_fmt(args);
}

/// Print from a fatal path (bounded wait for the console lock).
pub fn emergency(args: fmt::Arguments) {
    crate::arch::serial::write_fmt_emergency(args);
}

struct Logger;

static LOGGER: Logger = Logger;
static TIME_READY: AtomicBool = AtomicBool::new(false);

impl log::Log for Logger {
    fn enabled(&self, metadata: &log::Metadata) -> bool {
        metadata.level() <= log::max_level()
    }

    fn log(&self, record: &log::Record) {
        if !self.enabled(record.metadata()) {
            return;
        }
        let cpu = crate::arch::cpu_id();
        if TIME_READY.load(Ordering::Relaxed) {
            let ns = crate::time::now_ns();
            print(format_args!(
                "[{:4}.{:06}] cpu {} {}: {}\n",
                ns / 1_000_000_000,
                (ns / 1000) % 1_000_000,
                cpu,
                record.level(),
                record.args()
            ));
        } else {
            print(format_args!(
                "[   ?.??????] cpu {} {}: {}\n",
                cpu,
                record.level(),
                record.args()
            ));
        }
    }

    fn flush(&self) {}
}

/// Install the logger at `level`.
pub fn init(level: log::LevelFilter) {
    let _ = log::set_logger(&LOGGER);
    log::set_max_level(level);
}

/// Timestamps become available (TSC calibrated).
pub fn time_ready() {
    TIME_READY.store(true, Ordering::Relaxed);
}
