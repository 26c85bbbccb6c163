//! Memory a device may read and write (DMA), and the `virtio-drivers`
//! [`Hal`] over it. The kernel identity-maps 0..4 GiB and the heap lives
//! there, so a heap allocation's virtual address is its physical address:
//! DMA buffers are zeroed, page-aligned heap blocks, and sharing a driver
//! buffer that already lies in the identity map hands the device its
//! address directly. Buffers outside it (stacks live in the high stack
//! region) are bounced through a heap copy for the length of the transfer.
//!
//! Device MMIO must lie below 4 GiB (where QEMU's firmware puts BARs for
//! small machines); `crate::drivers::pci` checks that before a transport is
//! built, so [`Hal::mmio_phys_to_virt`] is the identity too.
//!
//! Touches: the global allocator only.

use core::alloc::Layout;
use core::ptr::NonNull;

use virtio_drivers::{BufferDirection, Hal, PhysAddr, PAGE_SIZE};

use super::PHYS_LIMIT;

/// Whether `[addr, addr + len)` lies in the identity map.
pub fn identity_mapped(addr: u64, len: usize) -> bool {
    addr.checked_add(len as u64)
        .is_some_and(|end| end <= PHYS_LIMIT)
}

fn dma_layout(pages: usize) -> Option<Layout> {
    Layout::from_size_align(pages.checked_mul(PAGE_SIZE)?, PAGE_SIZE).ok()
}

fn bounce_layout(len: usize) -> Option<Layout> {
    Layout::from_size_align(len.max(1), 16).ok()
}

/// The `virtio-drivers` HAL for identity-mapped kernel memory.
pub struct DmaHal;

// SAFETY: (1) `dma_alloc` returns zeroed, page-aligned memory owned by the
// device until `dma_dealloc`, whose physical address equals its virtual
// address (heap below 4 GiB, identity-mapped); (2) `share` returns a
// physical address under which the device sees the buffer's bytes for the
// whole transfer (the buffer itself when identity-mapped, else a heap copy
// that `unshare` copies back and frees); (3) MMIO regions are below 4 GiB
// (checked by the PCI driver), identity-mapped.
unsafe impl Hal for DmaHal {
    fn dma_alloc(pages: usize, _direction: BufferDirection) -> (PhysAddr, NonNull<u8>) {
        let Some(layout) = dma_layout(pages.max(1)) else {
            return (0, NonNull::dangling());
        };
        // SAFETY: the layout has a nonzero size.
        let p = unsafe { alloc::alloc::alloc_zeroed(layout) };
        match NonNull::new(p) {
            Some(p) if identity_mapped(p.as_ptr() as u64, layout.size()) => (p.as_ptr() as u64, p),
            Some(p) => {
                // SAFETY: `p` was just allocated with `layout`.
                unsafe { alloc::alloc::dealloc(p.as_ptr(), layout) };
                (0, NonNull::dangling())
            }
            None => (0, NonNull::dangling()),
        }
    }

    unsafe fn dma_dealloc(_paddr: PhysAddr, vaddr: NonNull<u8>, pages: usize) -> i32 {
        let Some(layout) = dma_layout(pages.max(1)) else {
            return -1;
        };
        // SAFETY: the caller passes back what `dma_alloc(pages)` returned,
        // which was allocated with this layout.
        unsafe { alloc::alloc::dealloc(vaddr.as_ptr(), layout) };
        0
    }

    unsafe fn mmio_phys_to_virt(paddr: PhysAddr, _size: usize) -> NonNull<u8> {
        // Identity map; the PCI driver refuses BARs above 4 GiB, and BAR
        // addresses are never 0 for an enabled region.
        NonNull::new(paddr as usize as *mut u8).unwrap_or(NonNull::dangling())
    }

    unsafe fn share(buffer: NonNull<[u8]>, direction: BufferDirection) -> PhysAddr {
        let addr = buffer.cast::<u8>().as_ptr() as u64;
        let len = buffer.len();
        if identity_mapped(addr, len) {
            return addr;
        }
        // Never hand the device address 0 (it would DMA into page 0):
        // out of memory here is handled like any failed allocation.
        let layout = bounce_layout(len).unwrap_or(Layout::new::<u128>());
        // SAFETY: nonzero size.
        let bounce = unsafe { alloc::alloc::alloc_zeroed(layout) };
        if bounce.is_null() || !identity_mapped(bounce as u64, len) {
            alloc::alloc::handle_alloc_error(layout);
        }
        if direction != BufferDirection::DeviceToDriver {
            // SAFETY: the caller guarantees `buffer` is valid for reads of
            // `len` bytes; `bounce` is a fresh allocation of `len` bytes.
            unsafe { core::ptr::copy_nonoverlapping(addr as *const u8, bounce, len) };
        }
        bounce as u64
    }

    unsafe fn unshare(paddr: PhysAddr, buffer: NonNull<[u8]>, direction: BufferDirection) {
        let addr = buffer.cast::<u8>().as_ptr() as u64;
        let len = buffer.len();
        if paddr == addr || paddr == 0 {
            return;
        }
        let Some(layout) = bounce_layout(len) else {
            return;
        };
        let bounce = paddr as usize as *mut u8;
        if direction != BufferDirection::DriverToDevice {
            // SAFETY: `paddr` is the bounce copy `share` made for this
            // buffer (identity-mapped, `len` bytes); the caller guarantees
            // `buffer` is valid for writes of `len` bytes.
            unsafe { core::ptr::copy_nonoverlapping(bounce, addr as *mut u8, len) };
        }
        // SAFETY: the bounce buffer was allocated in `share` with `layout`.
        unsafe { alloc::alloc::dealloc(bounce, layout) };
    }
}
