//! The IDT, the assembly entry stubs and the trap dispatcher.
//!
//! Every vector enters through a stub that pushes an error code (a zero where
//! the CPU pushes none) and the vector number, then `isr_common` saves all
//! general registers into a [`TrapFrame`] and calls [`trap_dispatch`]. The
//! frame is writable, so a handler can resume elsewhere (the fault probes in
//! `probe`).
//!
//! This file reads `apic` (the vectors, which are the local APIC's, and
//! `eoi`), `probe` (the page-fault fixup) and the leaf `trap_frame` (the
//! frame's layout); none of them reads this file.
//!
//! - Exceptions 0..31: a breakpoint (#BP) is counted and resumed; a page
//!   fault at a registered probe instruction is fixed up; anything else is
//!   fatal: vector, error code, RIP, CR2, all registers and a frame-pointer
//!   backtrace are printed and the machine exits with `ExitCode::Exception`.
//!   The double fault runs on its own IST stack.
//! - [`TIMER_VECTOR`]: the per-CPU LAPIC tick (`crate::time::on_tick`
//!   counts it, then `crate::sync::rcu::on_tick` notes the quiescent state).
//! - [`WAKEUP_VECTOR`], [`TEST_VECTOR`]: IPIs; counted, nothing else (the
//!   woken CPU's idle loop looks at its mailbox).
//! - [`KICK_VECTOR`]: the paravirt lock's kick; counted, nothing else (it
//!   only has to end a `hlt`: the halted waiter looks at its lock again).
//! - [`SPURIOUS_VECTOR`]: ignored. Other vectors are fatal.
//!
//! Handlers run with interrupts off and never allocate or take locks that
//! interrupted code may hold (the console uses a bounded wait on fatal paths).

use core::arch::global_asm;
use core::sync::atomic::{AtomicUsize, Ordering};

use super::apic::{self, KICK_VECTOR, SPURIOUS_VECTOR, TEST_VECTOR, TIMER_VECTOR, WAKEUP_VECTOR};
use super::trap_frame::TrapFrame;
use super::{backtrace, core_local, gdt, probe};
use crate::percpu::{per_cpu, PerCpu};

/// IPIs received per CPU (wake-up and test vectors).
pub static IPIS: PerCpu<AtomicUsize> = per_cpu!(AtomicUsize::new(0));
/// Paravirt lock kicks received per CPU.
pub static KICKS: PerCpu<AtomicUsize> = per_cpu!(AtomicUsize::new(0));

global_asm!(
    r#"
    .macro ISR_NOERR n
    .global isr_stub_\n
isr_stub_\n:
    push $0
    push $\n
    jmp isr_common
    .endm
    .macro ISR_ERR n
    .global isr_stub_\n
isr_stub_\n:
    push $\n
    jmp isr_common
    .endm

    .section .text.isr, "ax"
    .irp n, 0,1,2,3,4,5,6,7,9,15,16,18,19,20,22,23,24,25,26,27,28,31,32,240,241,242,255,256
    ISR_NOERR \n
    .endr
    .irp n, 8,10,11,12,13,14,17,21,29,30
    ISR_ERR \n
    .endr

isr_common:
    push %r15
    push %r14
    push %r13
    push %r12
    push %r11
    push %r10
    push %r9
    push %r8
    push %rbp
    push %rdi
    push %rsi
    push %rdx
    push %rcx
    push %rbx
    push %rax
    mov %rsp, %rdi
    cld
    call {dispatch}
    pop %rax
    pop %rbx
    pop %rcx
    pop %rdx
    pop %rsi
    pop %rdi
    pop %rbp
    pop %r8
    pop %r9
    pop %r10
    pop %r11
    pop %r12
    pop %r13
    pop %r14
    pop %r15
    add $16, %rsp
    iretq

    .section .rodata.isr_table, "a"
    .balign 8
    .global isr_stub_table
isr_stub_table:
    .irp n, 0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17,18,19,20,21,22,23,24,25,26,27,28,29,30,31
    .quad isr_stub_\n
    .endr
    .quad isr_stub_32
    .quad isr_stub_240
    .quad isr_stub_241
    .quad isr_stub_242
    .quad isr_stub_255
    .quad isr_stub_256
    .section .text
    "#,
    dispatch = sym trap_dispatch,
    options(att_syntax)
);

extern "C" {
    /// Stub addresses: vectors 0..31, then 0x20, 0xF0, 0xF1, 0xF2, 0xFF,
    /// unknown.
    static isr_stub_table: [u64; 38];
}

#[derive(Clone, Copy)]
#[repr(C)]
struct IdtEntry {
    offset_low: u16,
    selector: u16,
    ist: u8,
    type_attr: u8,
    offset_mid: u16,
    offset_high: u32,
    reserved: u32,
}

impl IdtEntry {
    fn new(handler: u64, selector: u16, ist: u8) -> Self {
        IdtEntry {
            offset_low: handler as u16,
            selector,
            ist,
            type_attr: 0x8E, // present, ring 0, 64-bit interrupt gate
            offset_mid: (handler >> 16) as u16,
            offset_high: (handler >> 32) as u32,
            reserved: 0,
        }
    }
}

#[repr(C, align(16))]
struct Idt([IdtEntry; 256]);

const _: () = assert!(core::mem::size_of::<IdtEntry>() == 16);
const _: () = assert!(core::mem::size_of::<Idt>() == 4096);

static IDT: spin::Once<Idt> = spin::Once::new();

/// Build the shared IDT (boot CPU, once).
pub fn build_idt() {
    IDT.call_once(|| {
        // SAFETY: isr_stub_table is a read-only table of 38 addresses
        // emitted by the global_asm above.
        let table = unsafe { isr_stub_table };
        // Code selector 0x08: every GDT built by `gdt::init_cpu` has the
        // kernel code segment first.
        let cs = 0x08;
        let mut idt = Idt([IdtEntry::new(table[37], cs, 0); 256]);
        for (v, &addr) in table.iter().take(32).enumerate() {
            let ist = if v == 8 { gdt::DOUBLE_FAULT_IST } else { 0 };
            idt.0[v] = IdtEntry::new(addr, cs, ist);
        }
        idt.0[TIMER_VECTOR as usize] = IdtEntry::new(table[32], cs, 0);
        idt.0[WAKEUP_VECTOR as usize] = IdtEntry::new(table[33], cs, 0);
        idt.0[TEST_VECTOR as usize] = IdtEntry::new(table[34], cs, 0);
        idt.0[KICK_VECTOR as usize] = IdtEntry::new(table[35], cs, 0);
        idt.0[SPURIOUS_VECTOR as usize] = IdtEntry::new(table[36], cs, 0);
        idt
    });
}

/// Load the shared IDT on this CPU.
pub fn load_idt() {
    let idt = IDT.get().expect("build_idt runs on the boot CPU first");
    let ptr = ::x86_64::structures::DescriptorTablePointer {
        limit: (core::mem::size_of::<Idt>() - 1) as u16,
        base: ::x86_64::VirtAddr::new(idt as *const Idt as u64),
    };
    // SAFETY: the IDT is a 'static table of valid 64-bit interrupt gates
    // pointing at the stubs above, with the kernel code selector.
    unsafe { ::x86_64::instructions::tables::lidt(&ptr) };
}

/// Enable interrupts on this CPU.
pub fn enable() {
    ::x86_64::instructions::interrupts::enable();
}

/// Disable interrupts on this CPU.
pub fn disable() {
    ::x86_64::instructions::interrupts::disable();
}

/// Run `f` with interrupts disabled, restoring the previous state.
#[inline]
pub fn without<R>(f: impl FnOnce() -> R) -> R {
    ::x86_64::instructions::interrupts::without_interrupts(f)
}

extern "C" fn trap_dispatch(frame: &mut TrapFrame) {
    let vector = frame.vector;
    if vector == 14 && probe::fixup(frame) {
        return;
    }
    match vector {
        3 => {
            core_local::this()
                .breakpoints
                .fetch_add(1, Ordering::Relaxed);
        }
        0..=31 => fatal(frame),
        v if v == TIMER_VECTOR as u64 => {
            crate::time::on_tick();
            crate::sync::rcu::on_tick();
            apic::eoi();
        }
        v if v == WAKEUP_VECTOR as u64 || v == TEST_VECTOR as u64 => {
            IPIS.get().fetch_add(1, Ordering::Relaxed);
            apic::eoi();
        }
        v if v == KICK_VECTOR as u64 => {
            KICKS.get().fetch_add(1, Ordering::Relaxed);
            apic::eoi();
        }
        v if v == SPURIOUS_VECTOR as u64 => {}
        _ => fatal(frame),
    }
}

fn exception_name(v: u64) -> &'static str {
    match v {
        0 => "#DE divide error",
        1 => "#DB debug",
        2 => "NMI",
        3 => "#BP breakpoint",
        4 => "#OF overflow",
        5 => "#BR bound range",
        6 => "#UD invalid opcode",
        7 => "#NM device not available",
        8 => "#DF double fault",
        10 => "#TS invalid TSS",
        11 => "#NP segment not present",
        12 => "#SS stack-segment fault",
        13 => "#GP general protection",
        14 => "#PF page fault",
        16 => "#MF x87 floating point",
        17 => "#AC alignment check",
        18 => "#MC machine check",
        19 => "#XM SIMD floating point",
        20 => "#VE virtualization",
        21 => "#CP control protection",
        256 => "unexpected interrupt vector",
        _ => "reserved exception",
    }
}

/// Print everything about a fatal trap and exit with `ExitCode::Exception`.
fn fatal(f: &TrapFrame) -> ! {
    let cl = core_local::this();
    let depth = cl.fault_depth.fetch_add(1, Ordering::SeqCst);
    let cpu = core_local::cpu_id();
    let cr2 = ::x86_64::registers::control::Cr2::read_raw();
    if depth > 0 {
        crate::console::emergency(format_args!(
            "\n!!! cpu {cpu}: exception {} at RIP {:#018x} while reporting a fault\n",
            f.vector, f.rip
        ));
        crate::exit::exit(crate::exit::ExitCode::Exception);
    }
    crate::console::emergency(format_args!(
        "\n!!! cpu {cpu}: exception {} ({}), error code {:#x}\n\
         RIP {:#018x}  CR2 {:#018x}  RFLAGS {:#018x}\n\
         CS  {:#06x}  SS {:#06x}  RSP {:#018x}\n\
         RAX {:#018x}  RBX {:#018x}  RCX {:#018x}\n\
         RDX {:#018x}  RSI {:#018x}  RDI {:#018x}\n\
         RBP {:#018x}  R8  {:#018x}  R9  {:#018x}\n\
         R10 {:#018x}  R11 {:#018x}  R12 {:#018x}\n\
         R13 {:#018x}  R14 {:#018x}  R15 {:#018x}\n",
        f.vector,
        exception_name(f.vector),
        f.error_code,
        f.rip,
        cr2,
        f.rflags,
        f.cs,
        f.ss,
        f.rsp,
        f.rax,
        f.rbx,
        f.rcx,
        f.rdx,
        f.rsi,
        f.rdi,
        f.rbp,
        f.r8,
        f.r9,
        f.r10,
        f.r11,
        f.r12,
        f.r13,
        f.r14,
        f.r15
    ));
    if f.vector == 14 {
        crate::console::emergency(format_args!(
            "page fault: {} {} at {:#x}{}\n",
            if f.error_code & 1 != 0 {
                "protection violation"
            } else {
                "not-present page"
            },
            if f.error_code & 2 != 0 {
                "on write"
            } else {
                "on read"
            },
            cr2,
            if crate::mm::stack::is_guard_page(cr2 as usize) {
                " (a stack guard page: stack overflow)"
            } else {
                ""
            }
        ));
    }
    if f.vector == 8 && crate::mm::stack::is_guard_page(f.rsp as usize) {
        crate::console::emergency(format_args!(
            "double fault with RSP in a stack guard page: kernel stack overflow\n"
        ));
    }
    backtrace::print(f.rip as usize, f.rbp as usize);
    crate::exit::exit(crate::exit::ExitCode::Exception);
}
