//! Memory management: physical frames, the kernel heap, the per-CPU slab
//! behind `#[global_allocator]`, and guarded stacks.
//!
//! ```text
//!  Physical memory (QEMU q35, -m 256M)              Virtual memory
//!  0x0000_0000 +---------------------------+        0 .. 4 GiB: identity map
//!              | page 0: unmapped (null)   |        (boot tables; 0..2 MiB in
//!              | start info, cmdline, E820 |         4 KiB pages so page 0 and
//!  0x0000_8000 | AP trampoline (1 page)    |         the boot stack guard can
//!              | ... BIOS, ACPI RSDP       |         stay unmapped, the rest in
//!  0x0010_0000 +---------------------------+ 1 MiB   2 MiB pages)
//!              | guard page (unmapped)     |
//!              | boot stack, 128 KiB       |
//!              | .text .rodata .data .bss  |
//!  kernel_end  +---------------------------+
//!              | frame allocator           |  4 KiB frames: page tables,
//!              |   (bump + free list)      |  stacks, anything page-sized
//!              +---------------------------+
//!              | kernel heap (talc)        |  half of usable RAM, at the top
//!              |   large allocations,      |  of the largest RAM region
//!              |   slab chunks, magazines  |
//!  top of RAM  +---------------------------+
//!              | ACPI tables (reserved)    |
//!  0xFEC0_0000 | IOAPIC, HPET, LAPIC MMIO  |
//!  4 GiB       +---------------------------+
//!
//!  0x0000_1000_0000_0000  stack region: 256 KiB slots, each
//!                         [guard page | stack pages | unmapped rest]
//! ```
//!
//! RAM above 4 GiB is ignored (only 0..4 GiB is identity-mapped).
//!
//! Modules: [`frame`] (physical frames), [`heap`] (talc), [`allocator`]
//! (the global allocator and memory admission), [`slab`] (per-CPU
//! magazines over size classes), [`poison`] (fill freed memory, check the
//! fill on reuse: a use-after-free detector), [`stack`] (guarded stacks
//! mapped through `crate::arch::paging`). Unsafe code is allowed here (and
//! in `arch`) only; each block says why it is sound.

pub mod alloc_test;
pub mod allocator;
pub mod dma;
pub mod frame;
pub mod heap;
pub mod poison;
pub mod poison_test;
pub mod slab;
pub mod stack;
pub mod stack_test;

use crate::arch::{MemRegion, MEMMAP_RAM};

const MIB: u64 = 1 << 20;
/// Highest physical address the kernel uses (end of the identity map).
pub const PHYS_LIMIT: u64 = 1 << 32;

/// What `init` set up, for the boot log.
#[derive(Debug, Clone, Copy)]
pub struct MemoryLayout {
    /// Usable RAM (below 4 GiB, above the kernel) in bytes.
    pub usable: u64,
    /// Heap [start, start + size).
    pub heap_start: u64,
    /// Heap size in bytes.
    pub heap_size: u64,
    /// Frames handed to the frame allocator.
    pub frames: usize,
}

/// Bring up memory management from the PVH memory map: split usable RAM
/// between the heap (half, from the largest region) and the frame
/// allocator (the rest), then take over the page tables.
pub fn init(memmap: &[MemRegion]) -> Result<MemoryLayout, &'static str> {
    let (_, kernel_end) = crate::arch::kernel_image();
    let floor = (kernel_end as u64).max(MIB);
    // usable RAM regions, page-aligned, above the kernel and below 4 GiB
    let mut regions = [(0u64, 0u64); 64];
    let mut n = 0;
    for r in memmap.iter().filter(|r| r.kind == MEMMAP_RAM) {
        let start = align_up(r.addr.max(floor), 4096);
        let end = (r.addr.saturating_add(r.size)).min(PHYS_LIMIT) & !4095;
        if end > start && n < regions.len() {
            regions[n] = (start, end);
            n += 1;
        }
    }
    let regions = &mut regions[..n];
    let usable: u64 = regions.iter().map(|(s, e)| e - s).sum();
    let above: u64 = memmap
        .iter()
        .filter(|r| r.kind == MEMMAP_RAM)
        .map(|r| {
            r.addr
                .saturating_add(r.size)
                .saturating_sub(r.addr.max(PHYS_LIMIT))
        })
        .sum();
    if above > 0 {
        log::info!("mm: ignoring {} MiB of RAM above 4 GiB", above >> 20);
    }
    if usable < 16 * MIB {
        return Err("less than 16 MiB of usable RAM");
    }
    let largest = (0..regions.len())
        .max_by_key(|&i| regions[i].1 - regions[i].0)
        .ok_or("no RAM")?;
    let (ls, le) = regions[largest];
    let heap_size = ((usable / 2) & !(2 * MIB - 1))
        .min((le - ls) & !(MIB - 1))
        .max(4 * MIB);
    let heap_start = (le - heap_size) & !(MIB - 1);
    if heap_start < ls {
        return Err("largest RAM region too small for the heap");
    }
    regions[largest].1 = heap_start;
    heap::init(heap_start as usize, (le - heap_start) as usize);
    let mut frames = 0;
    for &(s, e) in regions.iter() {
        frames += frame::add_region(s, e);
    }
    crate::arch::paging::init();
    // Null pointers fault from now on (the boot info in page 0 was copied).
    crate::arch::paging::unmap_page(0)?;
    Ok(MemoryLayout {
        usable,
        heap_start,
        heap_size: le - heap_start,
        frames,
    })
}

/// Usable RAM every boot needs before any CPU's own share: the boot
/// CPU's heap users (ACPI, the fs caches' tables, the console) and the
/// frames of the page tables, counted twice because `init` gives the heap
/// half of usable RAM and the frame allocator the other half.
const BASE_NEED: u64 = 2 * (2 * MIB);
/// Usable RAM each vCPU needs to boot: its 128 KiB stack, 16 KiB
/// double-fault stack, guard pages and page tables come from the frame
/// allocator (half of usable RAM), so twice ~160 KiB. Measured: 64 vCPUs
/// panicked "no double-fault stack" with 17 MiB usable, booted with 21.
const PER_CPU_BOOT: u64 = 2 * 160 * 1024;
/// Usable RAM each vCPU needs for `selftest`: the per-CPU slab magazines
/// and the tests' per-CPU work sit on the heap (half of usable RAM).
/// Measured: 64 vCPUs failed with 61 MiB usable and passed with 77.
const PER_CPU_SELFTEST: u64 = 2 * 640 * 1024;

/// The least usable RAM (bytes) a boot with `cpus` vCPUs needs: for the
/// self-tests if `selftest`, else to boot and run one workload. Never under
/// the 16 MiB `init` requires.
pub fn usable_needed(cpus: usize, selftest: bool) -> u64 {
    let per_cpu = if selftest {
        PER_CPU_SELFTEST
    } else {
        PER_CPU_BOOT
    };
    (BASE_NEED + cpus as u64 * per_cpu).max(16 * MIB)
}

/// Refuse a configuration the memory cannot carry, before the APs start:
/// `Err` names the minimum guest memory (`-m`) for this vCPU count.
/// `ram` is all RAM in the memory map below 4 GiB, `usable` what `init`
/// found above the kernel.
pub fn check_fits(cpus: usize, selftest: bool, ram: u64, usable: u64) -> Result<(), u64> {
    let need = usable_needed(cpus, selftest);
    if usable >= need {
        return Ok(());
    }
    // What the kernel image and low memory take from `-m` stays the same;
    // the memory map also leaves out the legacy hole below 1 MiB (the
    // BIOS area, 384 KiB and more), so `-m` needs up to 1 MiB more.
    let overhead = ram.saturating_sub(usable);
    Err((need + overhead + MIB).div_ceil(MIB))
}

/// All RAM the memory map lists below 4 GiB, in bytes.
pub fn ram_below_4g(memmap: &[MemRegion]) -> u64 {
    memmap
        .iter()
        .filter(|r| r.kind == MEMMAP_RAM)
        .map(|r| {
            r.addr
                .saturating_add(r.size)
                .min(PHYS_LIMIT)
                .saturating_sub(r.addr.min(PHYS_LIMIT))
        })
        .sum()
}

fn align_up(x: u64, a: u64) -> u64 {
    (x + a - 1) & !(a - 1)
}
