//! The application processors' start: a real-mode trampoline copied to
//! physical [`TRAMPOLINE_BASE`] (the SIPI vector page), which switches to
//! protected mode, enables PAE and long mode with the boot CPU's CR3, picks
//! its stack from [`AP_STACK_TOPS`] by initial APIC id (CPUID leaf 1), and
//! calls the entry [`install`] was given, with the APIC id as argument.
//!
//! The entry is handed over as data ([`AP_ENTRY`]), not named in the
//! assembly, as Linux's `smpboot.c` sets `initial_code` for `head_64.S` to
//! jump through: the trampoline reads nothing of `kernel::smp`, which
//! installs it and gives it its stacks and entry. No symbol reference
//! demands a circle here.
//!
//! Touches: physical page [`TRAMPOLINE_BASE`] (reserved: the frame allocator
//! never hands out memory below 1 MiB), [`AP_STACK_TOPS`] and [`AP_ENTRY`].

use core::arch::global_asm;
use core::sync::atomic::{AtomicU64, Ordering};

/// Physical address the trampoline is copied to (SIPI vector 0x08).
pub const TRAMPOLINE_BASE: usize = 0x8000;

/// Stack top of each AP, indexed by APIC id; written by the boot CPU before
/// it sends the SIPIs.
pub static AP_STACK_TOPS: [AtomicU64; 256] = [const { AtomicU64::new(0) }; 256];

/// Address of the 64-bit entry every AP calls (`extern "C" fn(apic_id: u32)
/// -> !`); written by [`install`] before any SIPI is sent.
pub static AP_ENTRY: AtomicU64 = AtomicU64::new(0);

global_asm!(
    r#"
    .section .text.ap_trampoline, "ax"
    .set TRAMP, 0x8000
    .global ap_trampoline_start
    .global ap_trampoline_end
    .global ap_trampoline_cr3
    .code16
ap_trampoline_start:
    cli
    cld
    xor %ax, %ax
    mov %ax, %ds
    mov %ax, %es
    mov %ax, %ss
    lgdtl (TRAMP + tramp_gdt_ptr - ap_trampoline_start)
    mov %cr0, %eax
    or $1, %eax
    mov %eax, %cr0
    ljmpl $0x08, $(TRAMP + tramp32 - ap_trampoline_start)

    .code32
tramp32:
    mov $0x10, %ax
    mov %ax, %ds
    mov %ax, %es
    mov %ax, %ss
    mov %cr4, %eax
    or $0x20, %eax                  /* PAE */
    mov %eax, %cr4
    mov (TRAMP + ap_trampoline_cr3 - ap_trampoline_start), %eax
    mov %eax, %cr3
    mov $0xC0000080, %ecx
    rdmsr
    or $0x100, %eax                 /* EFER.LME */
    wrmsr
    mov %cr0, %eax
    or $0x80010001, %eax            /* PG | WP | PE */
    mov %eax, %cr0
    ljmpl $0x18, $(TRAMP + tramp64 - ap_trampoline_start)

    .code64
tramp64:
    mov $0x10, %eax
    mov %eax, %ds
    mov %eax, %es
    mov %eax, %ss
    xor %eax, %eax
    mov %eax, %fs
    mov %eax, %gs
    mov $1, %eax
    cpuid
    shr $24, %ebx                   /* initial APIC id */
    movabs ${stacks}, %rax
    mov (%rax,%rbx,8), %rsp
    xor %ebp, %ebp
    mov %ebx, %edi
    movabs ${entry}, %rax
    mov (%rax), %rax
    call *%rax
1:  cli
    hlt
    jmp 1b

    .balign 8
tramp_gdt:
    .quad 0
    .quad 0x00cf9a000000ffff        /* 0x08: 32-bit code */
    .quad 0x00cf92000000ffff        /* 0x10: data */
    .quad 0x00af9a000000ffff        /* 0x18: 64-bit code */
tramp_gdt_ptr:
    .word tramp_gdt_ptr - tramp_gdt - 1
    .long TRAMP + tramp_gdt - ap_trampoline_start
    .balign 4
ap_trampoline_cr3:
    .long 0
ap_trampoline_end:
    .section .text
    "#,
    stacks = sym AP_STACK_TOPS,
    entry = sym AP_ENTRY,
    options(att_syntax)
);

extern "C" {
    static ap_trampoline_start: u8;
    static ap_trampoline_end: u8;
    static ap_trampoline_cr3: u8;
}

/// Copy the trampoline to [`TRAMPOLINE_BASE`], patch in `cr3` (the boot
/// CPU's page table root, below 4 GiB) and record `entry`, where each AP
/// goes in long mode on its own stack, called with its APIC id.
pub fn install(cr3: u64, entry: extern "C" fn(u32) -> !) {
    assert!(
        cr3 < (1 << 32),
        "AP trampoline needs a page table root below 4 GiB"
    );
    let start = &raw const ap_trampoline_start as usize;
    let end = &raw const ap_trampoline_end as usize;
    let cr3_off = &raw const ap_trampoline_cr3 as usize - start;
    let len = end - start;
    assert!(len <= 4096, "AP trampoline larger than a page");
    // SAFETY: (1) [TRAMPOLINE_BASE, +len) is identity-mapped low RAM that the
    // frame allocator never hands out (everything below 1 MiB is reserved)
    // and no AP runs yet, so nobody else reads or writes it. (2) The source
    // is the trampoline's bytes in the kernel image.
    unsafe {
        core::ptr::copy_nonoverlapping(start as *const u8, TRAMPOLINE_BASE as *mut u8, len);
        core::ptr::write_volatile((TRAMPOLINE_BASE + cr3_off) as *mut u32, cr3 as u32);
    }
    AP_ENTRY.store(entry as usize as u64, Ordering::SeqCst);
    core::sync::atomic::fence(Ordering::SeqCst);
}

/// Give the AP with `apic_id` its initial stack.
pub fn set_stack(apic_id: u32, top: u64) {
    AP_STACK_TOPS[apic_id as usize].store(top, Ordering::SeqCst);
}
