//! Page tables through the `x86_64` crate's `OffsetPageTable`, with offset 0:
//! all page-table frames are below 4 GiB and identity-mapped by the boot
//! tables, so a table's physical address is also its virtual address.
//!
//! The boot tables (built by the PVH entry) identity-map 0..4 GiB; this module
//! adds 4 KiB mappings elsewhere (the stack region of `crate::mm::stack`).
//! Only new mappings are made (no TLB shootdown needed: nothing was cached
//! for a non-present page). One lock serialises all changes.

use ::x86_64::structures::paging::{
    FrameAllocator, Mapper, OffsetPageTable, Page, PageTable, PageTableFlags, PhysFrame, Size4KiB,
};
use ::x86_64::{PhysAddr, VirtAddr};
use spin::Mutex;

struct Tables(OffsetPageTable<'static>);

static TABLES: Mutex<Option<Tables>> = Mutex::new(None);

/// Frames for intermediate page tables, from the kernel frame allocator.
struct KernelFrames;

// SAFETY: `crate::mm::frame::alloc` returns each free 4 KiB frame at most
// once until it is freed, and all frames are below 4 GiB (identity-mapped).
unsafe impl FrameAllocator<Size4KiB> for KernelFrames {
    fn allocate_frame(&mut self) -> Option<PhysFrame<Size4KiB>> {
        crate::mm::frame::alloc().map(|pa| PhysFrame::containing_address(PhysAddr::new(pa)))
    }
}

/// Take over the active (boot) page tables.
pub fn init() {
    let (frame, _) = ::x86_64::registers::control::Cr3::read();
    let pml4 = frame.start_address().as_u64() as usize as *mut PageTable;
    // SAFETY: (1) CR3 points at the boot PML4 in the kernel's .bss, which is
    // identity-mapped, so physical == virtual with offset 0; (2) from now
    // on only this module (under TABLES' lock) changes the tables.
    let table = unsafe { OffsetPageTable::new(&mut *pml4, VirtAddr::new(0)) };
    *TABLES.lock() = Some(Tables(table));
}

/// Map the 4 KiB page at `virt` to the frame at `phys`, writable, kernel only.
pub fn map_page(virt: usize, phys: u64) -> Result<(), &'static str> {
    let mut guard = TABLES.lock();
    let t = &mut guard.as_mut().ok_or("paging not initialised")?.0;
    let page = Page::<Size4KiB>::containing_address(VirtAddr::new(virt as u64));
    let frame = PhysFrame::containing_address(PhysAddr::new(phys));
    let flags = PageTableFlags::PRESENT | PageTableFlags::WRITABLE;
    // SAFETY: (1) `page` is in a kernel-managed region (the stack region)
    // that was unmapped, so no existing reference aliases it; (2) `frame` is
    // a fresh frame from the frame allocator, owned by the caller.
    let flush = unsafe { t.map_to(page, frame, flags, &mut KernelFrames) }
        .map_err(|_| "page already mapped or no frame for a page table")?;
    flush.flush();
    Ok(())
}

/// Remove the 4 KiB mapping of `virt` (used once, for the null page).
pub fn unmap_page(virt: usize) -> Result<(), &'static str> {
    let mut guard = TABLES.lock();
    let t = &mut guard.as_mut().ok_or("paging not initialised")?.0;
    let page = Page::<Size4KiB>::containing_address(VirtAddr::new(virt as u64));
    let (_, flush) = t
        .unmap(page)
        .map_err(|_| "page not mapped with a 4 KiB entry")?;
    flush.flush();
    Ok(())
}
