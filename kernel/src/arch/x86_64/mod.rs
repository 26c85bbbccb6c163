//! x86_64 support, split like Hermit's: `start/` (PVH entry, hvm_start_info,
//! the AP real-mode trampoline), `kernel/` (serial, GDT/TSS, IDT and traps,
//! LAPIC, PIT, ACPI, per-core data, SMP start and cross-CPU calls,
//! backtraces) and `mm/` (page tables through the `x86_64` crate).

pub mod kernel;
pub mod mm;
pub mod start;

pub use kernel::{backtrace, core_local, cpu_id, exit::exit, interrupts, processor, serial};
