//! The registers a trap saved: [`TrapFrame`], the layout `isr_common` in
//! `interrupts` pushes (lowest address first) and hands to the dispatcher,
//! as Linux's `struct pt_regs` sits in `asm/ptrace.h` apart from the entry
//! code and the handlers. `interrupts` reads and `probe` rewrites it (a
//! fixup resumes elsewhere); this file imports neither, so the three form a
//! line, not a circle. Changing a field here means changing the push order
//! in `isr_common` with it.

/// Registers saved by `isr_common`, lowest address first.
#[repr(C)]
#[derive(Debug)]
pub struct TrapFrame {
    pub rax: u64,
    pub rbx: u64,
    pub rcx: u64,
    pub rdx: u64,
    pub rsi: u64,
    pub rdi: u64,
    pub rbp: u64,
    pub r8: u64,
    pub r9: u64,
    pub r10: u64,
    pub r11: u64,
    pub r12: u64,
    pub r13: u64,
    pub r14: u64,
    pub r15: u64,
    pub vector: u64,
    pub error_code: u64,
    pub rip: u64,
    pub cs: u64,
    pub rflags: u64,
    pub rsp: u64,
    pub ss: u64,
}

const _: () = assert!(core::mem::size_of::<TrapFrame>() == 22 * 8);
