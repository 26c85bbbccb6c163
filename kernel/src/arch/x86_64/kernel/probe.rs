//! Fault probes: memory reads that may fault, with the page fault turned into
//! an error instead of a crash (an exception table with one entry, as Linux's
//! `extable` does for user copies). Used by the self-tests to take a real
//! page fault on purpose and check what the handler saw.
//!
//! The trap dispatcher in `interrupts` calls [`fixup`] with the saved
//! registers; their layout comes from the leaf `trap_frame`, so this file
//! does not read `interrupts`.

use core::arch::global_asm;
use core::sync::atomic::{AtomicU64, Ordering};

use super::trap_frame::TrapFrame;

global_asm!(
    r#"
    .section .text.probe, "ax"
    .global probe_read_u64
    .global probe_read_u64_insn
    .global probe_read_u64_fixup
/* rdi = address; returns rax = value, rdx = 0 (ok) or 1 (faulted) */
probe_read_u64:
    xor %edx, %edx
probe_read_u64_insn:
    mov (%rdi), %rax
probe_read_u64_fixup:
    ret
    .section .text
    "#,
    options(att_syntax)
);

#[repr(C)]
struct ProbeResult {
    value: u64,
    faulted: u64,
}

extern "C" {
    fn probe_read_u64(addr: u64) -> ProbeResult;
    static probe_read_u64_insn: u8;
    static probe_read_u64_fixup: u8;
}

/// What the page-fault handler saw during a probe.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ProbeFault {
    /// CR2 at the fault.
    pub addr: u64,
    /// The page-fault error code.
    pub error_code: u64,
}

static LAST_CR2: crate::percpu::PerCpu<AtomicU64> = crate::percpu::per_cpu!(AtomicU64::new(0));
static LAST_ERR: crate::percpu::PerCpu<AtomicU64> = crate::percpu::per_cpu!(AtomicU64::new(0));

/// Read 8 bytes at `addr`; a page fault returns `Err` with what the handler
/// recorded instead of crashing.
pub fn read_u64(addr: u64) -> Result<u64, ProbeFault> {
    // SAFETY: probe_read_u64 reads one word at `addr`; a page fault there is
    // resumed at its fixup label by `fixup` (registered for exactly that
    // instruction). Any other fault is reported as usual. It touches no other
    // memory and follows the C ABI.
    let r = unsafe { probe_read_u64(addr) };
    if r.faulted == 0 {
        Ok(r.value)
    } else {
        Err(ProbeFault {
            addr: LAST_CR2.get().load(Ordering::Relaxed),
            error_code: LAST_ERR.get().load(Ordering::Relaxed),
        })
    }
}

/// Page-fault hook: if the fault is the probe instruction, resume at the
/// fixup with `rdx = 1` and return true.
pub fn fixup(frame: &mut TrapFrame) -> bool {
    let insn = &raw const probe_read_u64_insn as u64;
    if frame.rip != insn {
        return false;
    }
    LAST_CR2.get().store(
        ::x86_64::registers::control::Cr2::read_raw(),
        Ordering::Relaxed,
    );
    LAST_ERR.get().store(frame.error_code, Ordering::Relaxed);
    frame.rip = &raw const probe_read_u64_fixup as u64;
    frame.rdx = 1;
    frame.rax = 0;
    true
}
