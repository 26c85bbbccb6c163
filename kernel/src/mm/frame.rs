//! Physical frame allocator: 4 KiB frames from the usable regions of the
//! memory map (what `mm::init` did not give to the heap). New frames come
//! from a bump pointer per region; freed frames go on an intrusive free list
//! (the next pointer lives in the free frame itself, reached through the
//! identity map). One spinlock; page-table and stack setup are not hot.

use core::sync::atomic::{AtomicUsize, Ordering};

use spin::Mutex;

/// Frame size.
pub const FRAME_SIZE: u64 = 4096;
const MAX_REGIONS: usize = 64;

#[derive(Clone, Copy)]
struct Region {
    next: u64,
    end: u64,
}

struct Frames {
    regions: [Region; MAX_REGIONS],
    nregions: usize,
    /// Physical address of the first free-listed frame, 0 if none.
    free_head: u64,
}

static FRAMES: Mutex<Frames> = Mutex::new(Frames {
    regions: [Region { next: 0, end: 0 }; MAX_REGIONS],
    nregions: 0,
    free_head: 0,
});
static TOTAL: AtomicUsize = AtomicUsize::new(0);
static IN_USE: AtomicUsize = AtomicUsize::new(0);

/// Hand [start, end) (page-aligned, identity-mapped RAM nobody else uses)
/// to the allocator. Returns the number of frames added.
pub fn add_region(start: u64, end: u64) -> usize {
    let mut f = FRAMES.lock();
    if f.nregions == MAX_REGIONS || end <= start {
        return 0;
    }
    let i = f.nregions;
    f.regions[i] = Region { next: start, end };
    f.nregions += 1;
    let n = ((end - start) / FRAME_SIZE) as usize;
    TOTAL.fetch_add(n, Ordering::Relaxed);
    n
}

/// Allocate one frame; returns its physical address (contents undefined).
pub fn alloc() -> Option<u64> {
    let pa = crate::arch::interrupts::without(|| {
        let mut f = FRAMES.lock();
        if f.free_head != 0 {
            let pa = f.free_head;
            // SAFETY: free-listed frames are identity-mapped RAM owned by
            // the allocator; their first word holds the next free frame.
            f.free_head = unsafe { core::ptr::read(pa as usize as *const u64) };
            return Some(pa);
        }
        let n = f.nregions;
        f.regions[..n].iter_mut().find(|r| r.next < r.end).map(|r| {
            let pa = r.next;
            r.next += FRAME_SIZE;
            pa
        })
    })?;
    IN_USE.fetch_add(1, Ordering::Relaxed);
    Some(pa)
}

/// Return a frame obtained from [`alloc`]. The caller must no longer use it.
pub fn free(pa: u64) {
    assert!(
        pa.is_multiple_of(FRAME_SIZE) && pa != 0,
        "frame::free of a bad address {pa:#x}"
    );
    crate::arch::interrupts::without(|| {
        let mut f = FRAMES.lock();
        // SAFETY: `pa` is a frame returned by `alloc` and given back by its
        // owner, so nobody else uses it; it is identity-mapped RAM.
        unsafe { core::ptr::write(pa as usize as *mut u64, f.free_head) };
        f.free_head = pa;
    });
    IN_USE.fetch_sub(1, Ordering::Relaxed);
}

/// Read the 8-byte word at `offset` of an owned frame.
pub fn read_word(pa: u64, offset: usize) -> u64 {
    assert!(offset + 8 <= FRAME_SIZE as usize);
    // SAFETY: the caller owns frame `pa`; the read is inside it.
    unsafe { core::ptr::read_volatile((pa as usize + offset) as *const u64) }
}

/// Write the 8-byte word at `offset` of an owned frame.
pub fn write_word(pa: u64, offset: usize, v: u64) {
    assert!(offset + 8 <= FRAME_SIZE as usize);
    // SAFETY: the caller owns frame `pa`; the write is inside it.
    unsafe { core::ptr::write_volatile((pa as usize + offset) as *mut u64, v) }
}

/// (total frames, frames in use).
pub fn stats() -> (usize, usize) {
    (
        TOTAL.load(Ordering::Relaxed),
        IN_USE.load(Ordering::Relaxed),
    )
}
