//! Single instructions the generic kernel needs: TSC, CPUID, pause, halt,
//! and reading the frame pointer.

use core::arch::asm;

/// Read the time-stamp counter.
#[inline(always)]
pub fn rdtsc() -> u64 {
    let lo: u32;
    let hi: u32;
    // SAFETY: rdtsc only reads the TSC (CR4.TSD is clear in ring 0 anyway).
    unsafe {
        asm!("rdtsc", out("eax") lo, out("edx") hi, options(nomem, nostack, preserves_flags))
    };
    ((hi as u64) << 32) | lo as u64
}

/// CPUID leaf/subleaf: (eax, ebx, ecx, edx).
pub fn cpuid(leaf: u32, sub: u32) -> (u32, u32, u32, u32) {
    let r = core::arch::x86_64::__cpuid_count(leaf, sub);
    (r.eax, r.ebx, r.ecx, r.edx)
}

/// Initial APIC id of this CPU (CPUID leaf 1).
pub fn initial_apic_id() -> u32 {
    cpuid(1, 0).1 >> 24
}

/// Busy-wait hint.
#[inline(always)]
pub fn pause() {
    core::hint::spin_loop();
}

/// Current frame pointer (RBP); code is built with frame pointers forced on.
#[inline(always)]
pub fn frame_pointer() -> usize {
    let rbp: usize;
    // SAFETY: reads a register only.
    unsafe { asm!("mov {}, rbp", out(reg) rbp, options(nomem, nostack, preserves_flags)) };
    rbp
}

/// Halt until the next interrupt, enabling interrupts atomically with the
/// halt (so a wake-up IPI cannot slip in between a check and the halt).
#[inline]
pub fn enable_interrupts_and_halt() {
    ::x86_64::instructions::interrupts::enable_and_hlt();
}

/// The paravirt lock's `pv_wait`: halt until an interrupt (a kick, the
/// tick) if `still()` holds with interrupts off. `sti; hlt` opens no
/// interrupt window before the `hlt` (the `sti` shadow), so a kick sent
/// after the look ends the halt instead of being taken before it. With
/// interrupts already off nothing could end the halt: return at once, the
/// caller spins.
#[inline]
pub fn halt_while(still: &dyn Fn() -> bool) {
    use ::x86_64::instructions::interrupts;
    if !interrupts::are_enabled() {
        return;
    }
    interrupts::disable();
    if still() {
        interrupts::enable_and_hlt();
    } else {
        interrupts::enable();
    }
}

/// Raise a breakpoint exception (#BP); the handler counts it and resumes.
#[inline(never)]
pub fn breakpoint() {
    // SAFETY: int3 traps to our #BP handler, which returns right after it.
    unsafe { asm!("int3", options(nomem, nostack)) };
}

/// Execute `ud2` (fatal #UD), for `crash=ud`.
pub fn invalid_opcode() -> ! {
    // SAFETY: deliberately faults; the #UD handler reports and exits.
    unsafe { asm!("ud2", options(noreturn)) }
}

/// Read an unmapped address (fatal #PF), for `crash=pagefault`.
pub fn read_unmapped() -> u64 {
    // SAFETY: deliberately faults; the page-fault handler reports and exits.
    unsafe { core::ptr::read_volatile(0x0000_7000_dead_0000 as *const u64) }
}
