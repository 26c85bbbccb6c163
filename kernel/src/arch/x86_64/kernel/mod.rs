//! CPU-level support: console, exit port, per-core data, descriptor tables,
//! traps, local APIC, PIT, ACPI tables, SMP start and cross-CPU calls.
//!
//! [`boot_processor_init`] and [`application_processor_init`] are the ordered
//! steps that make a CPU ready to run generic kernel code; the generic boot
//! order lives in `main.rs`.

pub mod acpi;
pub mod apic;
pub mod backtrace;
pub mod clock;
pub mod core_local;
pub mod exit;
pub mod gdt;
pub mod hpet;
pub mod hypervisor;
pub mod interrupts;
pub mod pci;
pub mod percpu_test;
pub mod pit;
pub mod probe;
pub mod processor;
pub mod rand;
pub mod serial;
pub mod smp;
pub mod trap_frame;
pub mod trap_test;

pub use core_local::cpu_id;

use super::start::pvh::BootInfo;

/// What the firmware told us about this machine: the CPUs to start, and
/// where the clocks are (opaque to generic code; `crate::time` hands it
/// back to [`clock::calibrate_tsc`]).
pub struct Machine {
    /// Hardware ids (local APIC ids) of every processor, boot CPU included.
    pub cpu_ids: alloc::vec::Vec<u32>,
    /// HPET registers, if ACPI lists one.
    hpet_base: Option<u64>,
}

/// CPU discovery on the boot CPU, once the heap and the IDT exist: register
/// the boot CPU, then read the processors and the local APIC and HPET
/// addresses from ACPI (the MADT and HPET tables). Without usable tables the
/// kernel runs on the boot CPU only.
pub fn discover_cpus(boot: &BootInfo) -> Machine {
    let bsp = apic::id();
    smp::register_boot_cpu(bsp);
    match acpi::processors(boot.rsdp) {
        Ok(p) => {
            apic::set_base(p.lapic_base as usize);
            log::info!(
                "acpi: {} processors in the MADT, LAPIC at {:#x}",
                p.apic_ids.len(),
                p.lapic_base
            );
            Machine {
                cpu_ids: p.apic_ids,
                hpet_base: p.hpet_base,
            }
        }
        Err(e) => {
            log::warn!("acpi: {e}; running on the boot CPU only");
            Machine {
                cpu_ids: alloc::vec![bsp],
                hpet_base: None,
            }
        }
    }
}

/// Very first step on the boot CPU: GS base to CPU 0's per-core area (so
/// `cpu_id()`, the slab and the logger work), serial port up.
pub fn early_init() {
    core_local::install(0);
    serial::init();
}

/// Boot CPU, once the heap exists: its own GDT + TSS (with a guarded
/// double-fault IST stack), the shared IDT, the legacy PIC masked.
pub fn boot_processor_init() {
    interrupts::build_idt();
    gdt::init_cpu(0);
    interrupts::load_idt();
    apic::disable_legacy_pic();
}

/// Boot CPU, once the TSC is calibrated: its local interrupt controller
/// (the local APIC), ready for `crate::time::start_tick`.
pub fn boot_processor_local_init() {
    apic::init_local();
}

/// Application processor `cpu`, first thing on its own stack: per-core area,
/// GDT + TSS prepared by the boot CPU, the IDT, its local APIC.
pub fn application_processor_init(cpu: usize) {
    core_local::install(cpu);
    gdt::init_cpu(cpu);
    interrupts::load_idt();
    apic::init_local();
}
