//! Per-core data reached through the GS base: one [`CoreLocal`] per CPU in a
//! static array; GS base points at this CPU's entry, whose first word is its
//! CPU id, so [`cpu_id`] is one `mov %gs:0`.
//!
//! CPU ids are dense (0 = boot CPU, then APs in MADT order); APIC ids are
//! whatever the firmware says. Generic per-CPU state lives in the owning
//! modules as `PerCpu` arrays indexed by CPU id.

use core::arch::asm;
use core::sync::atomic::{AtomicU32, AtomicUsize, Ordering};

use crate::percpu::MAX_CPUS;

/// One CPU's core-local area.
#[repr(C, align(64))]
pub struct CoreLocal {
    /// Dense CPU id (offset 0: read through `%gs:0`).
    cpu_id: usize,
    /// Local APIC id.
    pub apic_id: AtomicU32,
    /// This CPU's kernel stack [bottom, top) (for backtraces).
    pub stack_bottom: AtomicUsize,
    /// See `stack_bottom`.
    pub stack_top: AtomicUsize,
    /// Nesting depth of fatal-fault handling (a fault inside the report).
    pub fault_depth: AtomicU32,
    /// Breakpoint exceptions (#BP) taken and resumed.
    pub breakpoints: AtomicUsize,
}

impl CoreLocal {
    const fn new(cpu_id: usize) -> Self {
        CoreLocal {
            cpu_id,
            apic_id: AtomicU32::new(0),
            stack_bottom: AtomicUsize::new(0),
            stack_top: AtomicUsize::new(0),
            fault_depth: AtomicU32::new(0),
            breakpoints: AtomicUsize::new(0),
        }
    }
}

const fn make_cores() -> [CoreLocal; MAX_CPUS] {
    let mut a = [const { CoreLocal::new(0) }; MAX_CPUS];
    let mut i = 0;
    while i < MAX_CPUS {
        a[i] = CoreLocal::new(i);
        i += 1;
    }
    a
}

static CORES: [CoreLocal; MAX_CPUS] = make_cores();

/// Point this CPU's GS base at `CORES[cpu]`.
pub fn install(cpu: usize) {
    let addr = &CORES[cpu] as *const CoreLocal as u64;
    // SAFETY: writing IA32_GS_BASE only changes what %gs-relative accesses
    // read; CORES is a static, so the address stays valid forever, and its
    // first word is `cpu_id` as `cpu_id()` expects.
    unsafe {
        ::x86_64::registers::model_specific::Msr::new(0xC000_0101).write(addr);
    }
}

/// The calling CPU's dense id.
#[inline(always)]
pub fn cpu_id() -> usize {
    let id: usize;
    // SAFETY: GS base points at this CPU's CoreLocal (installed first thing
    // on every CPU), whose offset 0 holds the immutable cpu_id.
    unsafe { asm!("mov {}, gs:[0]", out(reg) id, options(nostack, readonly, preserves_flags)) };
    id
}

/// The calling CPU's core-local area.
#[inline]
pub fn this() -> &'static CoreLocal {
    &CORES[cpu_id()]
}

/// CPU `cpu`'s core-local area.
pub fn of(cpu: usize) -> &'static CoreLocal {
    &CORES[cpu]
}

/// Record the stack the CPU runs on (used to bound backtraces).
pub fn set_stack(cpu: usize, bottom: usize, top: usize) {
    CORES[cpu].stack_bottom.store(bottom, Ordering::Relaxed);
    CORES[cpu].stack_top.store(top, Ordering::Relaxed);
}
