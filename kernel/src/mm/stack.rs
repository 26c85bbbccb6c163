//! Guarded kernel stacks in their own virtual region: slot `i` spans
//! [`STACK_REGION`] + i * [`SLOT_SIZE`]; its first page is never mapped (the
//! guard page: an overflow faults instead of corrupting memory), the stack
//! pages follow, the rest of the slot stays unmapped. Used for every AP's
//! kernel stack and every CPU's double-fault IST stack; the boot CPU's stack
//! sits in the kernel image with its own unmapped guard page.
//!
//! Also answers "is this address inside a mapped stack?" for backtraces and
//! "is it a guard page?" for fault reports, without taking locks.

use core::sync::atomic::{AtomicUsize, Ordering};

use crate::percpu::MAX_CPUS;

/// Base of the stack region (PML4 slot 32, far from the identity map).
pub const STACK_REGION: usize = 0x0000_1000_0000_0000;
/// Virtual size of one slot (guard page + at most 252 KiB of stack).
pub const SLOT_SIZE: usize = 256 * 1024;
const PAGE: usize = 4096;
/// Slots available: a kernel and an IST stack per CPU, plus spares.
pub const MAX_SLOTS: usize = 2 * MAX_CPUS + 16;

static NEXT_SLOT: AtomicUsize = AtomicUsize::new(0);
/// Mapped bytes of each slot (0 = not ready).
static SLOT_BYTES: [AtomicUsize; MAX_SLOTS] = [const { AtomicUsize::new(0) }; MAX_SLOTS];

/// A mapped stack: [bottom, top), with the guard page just below `bottom`.
#[derive(Clone, Copy, Debug)]
pub struct Stack {
    /// Address of the unmapped guard page.
    pub guard: usize,
    /// Lowest mapped address.
    pub bottom: usize,
    /// One past the highest mapped address (initial stack pointer).
    pub top: usize,
}

/// Map a new stack of `size` bytes (rounded up to pages) under a guard page.
pub fn alloc(size: usize) -> Result<Stack, &'static str> {
    let size = size.div_ceil(PAGE) * PAGE;
    if size == 0 || size > SLOT_SIZE - PAGE {
        return Err("stack size out of range");
    }
    let slot = NEXT_SLOT.fetch_add(1, Ordering::Relaxed);
    if slot >= MAX_SLOTS {
        return Err("out of stack slots");
    }
    let guard = STACK_REGION + slot * SLOT_SIZE;
    let bottom = guard + PAGE;
    for page in (bottom..bottom + size).step_by(PAGE) {
        let frame = super::frame::alloc().ok_or("out of physical frames for a stack")?;
        crate::arch::paging::map_page(page, frame)?;
    }
    SLOT_BYTES[slot].store(size, Ordering::Release);
    Ok(Stack {
        guard,
        bottom,
        top: bottom + size,
    })
}

/// Is [addr, addr + len) inside one mapped stack (a slot's stack pages or
/// the boot stack)?
pub fn readable(addr: usize, len: usize) -> bool {
    let Some(end) = addr.checked_add(len) else {
        return false;
    };
    let (_, boot_bottom, boot_top) = crate::arch::boot_stack();
    if addr >= boot_bottom && end <= boot_top {
        return true;
    }
    if addr < STACK_REGION {
        return false;
    }
    let slot = (addr - STACK_REGION) / SLOT_SIZE;
    if slot >= MAX_SLOTS {
        return false;
    }
    let bottom = STACK_REGION + slot * SLOT_SIZE + PAGE;
    let bytes = SLOT_BYTES[slot].load(Ordering::Acquire);
    addr >= bottom && end <= bottom + bytes
}

/// Is `addr` in a stack guard page?
pub fn is_guard_page(addr: usize) -> bool {
    let (boot_guard, _, _) = crate::arch::boot_stack();
    if addr >= boot_guard && addr < boot_guard + PAGE {
        return true;
    }
    addr >= STACK_REGION
        && (addr - STACK_REGION) / SLOT_SIZE < NEXT_SLOT.load(Ordering::Relaxed).min(MAX_SLOTS)
        && (addr - STACK_REGION) % SLOT_SIZE < PAGE
}
