//! The PVH entry: the Xen ELF note that tells QEMU where to jump, and the
//! 32-bit code that builds the boot page tables, enters long mode and calls
//! `kernel_main` on the boot stack.
//!
//! Boot page tables (in .bss, zeroed here first):
//! - 0..2 MiB with 4 KiB pages, the boot stack's guard page left unmapped
//!   (page 0 is unmapped by `mm::init` once the start info, which QEMU may
//!   put there, has been copied);
//! - 2 MiB..4 GiB identity-mapped with 2 MiB pages (RAM, ACPI, LAPIC, IOAPIC).
//!
//! Touches: only its own statics, `BOOT_TSC` (TSC at PVH entry, the origin of
//! `now_ns()` and of the `smp:` boot figure) and CR0/CR3/CR4/EFER.

use core::arch::global_asm;
use core::sync::atomic::{AtomicU64, Ordering};

/// TSC value read by the first instruction block of the PVH entry.
pub static BOOT_TSC: AtomicU64 = AtomicU64::new(0);

/// The TSC at PVH entry.
pub fn boot_tsc() -> u64 {
    BOOT_TSC.load(Ordering::Relaxed)
}

global_asm!(
    r#"
    .section .note.Xen, "a", @note
    .balign 4
    .long 4                 /* namesz: "Xen\0" */
    .long 4                 /* descsz */
    .long 18                /* XEN_ELFNOTE_PHYS32_ENTRY */
    .asciz "Xen"
    .balign 4
    .long pvh_start32
    .balign 4

    .section .bss.boot_page_tables, "aw", @nobits
    .balign 4096
boot_pml4:  .skip 4096
boot_pdpt:  .skip 4096
boot_pd:    .skip 4 * 4096
boot_pt0:   .skip 4096

    .section .text.pvh, "ax"
    .code32
    .global pvh_start32
pvh_start32:
    cli
    cld
    mov %ebx, %esi                  /* hvm_start_info (physical) */
    rdtsc
    mov %eax, %ebp                  /* keep the entry TSC in ebx:ebp */
    mov %edx, %ebx
    mov $__boot_stack_top, %esp

    /* zero .bss (the loader does too, but do not rely on it) */
    mov $__bss_start, %edi
    mov $__bss_end, %ecx
    sub %edi, %ecx
    shr $2, %ecx
    xor %eax, %eax
    rep stosl
    mov %ebp, ({boot_tsc})          /* BOOT_TSC lives in .bss: store after */
    mov %ebx, ({boot_tsc} + 4)

    /* PT0: 0..2 MiB in 4 KiB pages, minus the boot stack guard (page 0 is
       unmapped later, once the start info, which may live there, is copied) */
    mov $__boot_stack_guard, %edx
    shr $12, %edx
    mov $boot_pt0, %ebx
    xor %ecx, %ecx
1:  cmp %edx, %ecx
    je 2f
    mov %ecx, %eax
    shl $12, %eax
    or $0x3, %eax                   /* present | writable */
    mov %eax, (%ebx,%ecx,8)
2:  inc %ecx
    cmp $512, %ecx
    jne 1b

    /* PD0..PD3: 4 GiB identity in 2 MiB pages */
    mov $boot_pd, %ebx
    xor %ecx, %ecx
3:  mov %ecx, %eax
    shl $21, %eax
    or $0x83, %eax                  /* present | writable | huge */
    mov %eax, (%ebx,%ecx,8)
    inc %ecx
    cmp $2048, %ecx
    jne 3b
    mov $boot_pt0, %eax             /* first 2 MiB through PT0 */
    or $0x3, %eax
    mov %eax, (%ebx)

    /* PDPT[0..4] -> PD0..PD3, PML4[0] -> PDPT */
    mov $boot_pdpt, %ebx
    mov $boot_pd, %eax
    or $0x3, %eax
    mov %eax, 0(%ebx)
    add $0x1000, %eax
    mov %eax, 8(%ebx)
    add $0x1000, %eax
    mov %eax, 16(%ebx)
    add $0x1000, %eax
    mov %eax, 24(%ebx)
    mov $boot_pdpt, %eax
    or $0x3, %eax
    mov %eax, (boot_pml4)

    /* long mode: PAE, CR3, EFER.LME, paging + write protect */
    mov %cr4, %eax
    or $0x20, %eax
    mov %eax, %cr4
    mov $boot_pml4, %eax
    mov %eax, %cr3
    mov $0xC0000080, %ecx
    rdmsr
    or $0x100, %eax
    wrmsr
    mov %cr0, %eax
    or $0x80010001, %eax
    mov %eax, %cr0

    lgdt (boot_gdt_ptr)
    ljmp $0x08, $pvh_start64

    .code64
pvh_start64:
    mov $0x10, %eax
    mov %eax, %ds
    mov %eax, %es
    mov %eax, %ss
    xor %eax, %eax
    mov %eax, %fs
    mov %eax, %gs
    mov $__boot_stack_top, %rsp
    xor %ebp, %ebp
    mov %esi, %edi                  /* zero-extends: start info address */
    call {kernel_main}
4:  cli
    hlt
    jmp 4b

    .balign 8
boot_gdt:
    .quad 0
    .quad 0x00af9a000000ffff        /* 0x08: 64-bit code */
    .quad 0x00cf92000000ffff        /* 0x10: data */
boot_gdt_ptr:
    .word boot_gdt_ptr - boot_gdt - 1
    .long boot_gdt
    .long 0

    .section .text
    "#,
    boot_tsc = sym BOOT_TSC,
    kernel_main = sym crate::kernel_main,
    options(att_syntax)
);

extern "C" {
    static __boot_stack_guard: u8;
    static __boot_stack_bottom: u8;
    static __boot_stack_top: u8;
    static __kernel_start: u8;
    static __kernel_end: u8;
}

/// The boot CPU's stack: (guard page, bottom, top).
pub fn boot_stack() -> (usize, usize, usize) {
    (
        &raw const __boot_stack_guard as usize,
        &raw const __boot_stack_bottom as usize,
        &raw const __boot_stack_top as usize,
    )
}

/// Physical [start, end) of the loaded kernel image (boot stack, code,
/// data, bss).
pub fn kernel_image() -> (usize, usize) {
    (
        &raw const __kernel_start as usize,
        &raw const __kernel_end as usize,
    )
}
