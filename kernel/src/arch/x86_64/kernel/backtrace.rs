//! Frame-pointer backtraces (the kernel is built with
//! `-C force-frame-pointers=yes`): `[rbp]` is the caller's rbp and
//! `[rbp + 8]` the return address. Entry code zeroes rbp, which ends the walk.
//!
//! Only frames inside a known, mapped stack are followed (checked through
//! `crate::mm::stack::readable`), so a corrupt chain ends the trace instead of
//! faulting inside the fault handler. Addresses are printed as absolute
//! addresses of the statically linked image; `addr2line -fe <kernel ELF>`
//! turns them into function names and lines.

use super::processor;

/// Deepest trace printed.
pub const MAX_FRAMES: usize = 32;

/// Walk from `rip` / `rbp`, calling `f` with each code address.
pub fn walk(rip: usize, rbp: usize, mut f: impl FnMut(usize)) {
    f(rip);
    let mut fp = rbp;
    for _ in 1..MAX_FRAMES {
        if fp == 0 || !fp.is_multiple_of(8) || !crate::mm::stack::readable(fp, 16) {
            break;
        }
        // SAFETY: [fp, fp + 16) lies inside a mapped stack (checked above),
        // so both words can be read; they are plain stack data.
        let (next, ret) = unsafe { (*(fp as *const usize), *((fp + 8) as *const usize)) };
        if ret == 0 {
            break;
        }
        f(ret);
        if next <= fp {
            break;
        }
        fp = next;
    }
}

/// Print a trace starting at `rip` / `rbp` on the console (fatal path).
pub fn print(rip: usize, rbp: usize) {
    crate::console::emergency(format_args!(
        "backtrace (addr2line -fe <kernel ELF> ADDR):\n"
    ));
    let mut i = 0;
    let (mut last, mut repeats) = (0, 0);
    walk(rip, rbp, |addr| {
        if addr == last {
            repeats += 1;
        } else {
            if repeats > 0 {
                crate::console::emergency(format_args!(
                    "  ... {repeats} more frames at {last:#018x}\n"
                ));
                repeats = 0;
            }
            crate::console::emergency(format_args!("  #{i:<2} {addr:#018x}\n"));
            last = addr;
        }
        i += 1;
    });
    if repeats > 0 {
        crate::console::emergency(format_args!(
            "  ... {repeats} more frames at {last:#018x}\n"
        ));
    }
}

/// Print the caller's own trace.
#[inline(never)]
pub fn print_here() {
    let rbp = processor::frame_pointer();
    print(print_here as *const () as usize, rbp);
}
