//! The architecture seam: generic kernel code says `crate::arch::…` and never
//! names x86. Only x86_64 exists today; a second architecture would be one
//! more `cfg`-selected module exporting the same names below (as Hermit's
//! `src/arch/mod.rs` does). The list is explicit so that what generic code
//! may use is written down here: the devices behind it (the local APIC,
//! HPET, PIT, ACPI tables, the PVH start info) stay inside `x86_64`.
//!
//! Everything below `arch/` may use unsafe code (each block with a SAFETY
//! comment); the generic modules that call it stay safe.

mod x86_64;

// Boot, in `main.rs`'s order: the boot information, per-core area and
// console, descriptor tables, the firmware's CPUs and clocks, the boot CPU's
// local interrupt controller.
pub use self::x86_64::kernel::{
    boot_processor_init, boot_processor_local_init, discover_cpus, early_init, Machine,
};
pub use self::x86_64::start::entry::{boot_stack, boot_tsc, kernel_image};
pub use self::x86_64::start::pvh::{read as read_boot_info, MemRegion, MEMMAP_RAM};

// CPU-level services: the calling CPU, interrupts, instructions, the exit
// port, backtraces, the serial console, per-core data.
pub use self::x86_64::{backtrace, core_local, cpu_id, exit, interrupts, processor, serial};

// The clocks behind `crate::time`, cross-CPU calls, PCI configuration
// space, the hardware random source, fault probes, page tables, and what
// the hypervisor (if any) can run.
pub use self::x86_64::kernel::{clock, hypervisor, pci, probe, rand, smp};
pub use self::x86_64::mm::paging;

// Self-test bodies that check x86 identities (listed in `crate::selftest`).
pub use self::x86_64::kernel::{percpu_test, trap_test};
