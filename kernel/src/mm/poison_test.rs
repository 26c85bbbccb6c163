//! Self-tests of memory poisoning (listed in `crate::selftest`): a clean
//! free/reuse cycle is checked and finds nothing; a deliberate write after
//! free is counted; a freed inode's canary reads as poison; and an RCU
//! lookup that steps on a (simulated) freed dentry counts it instead of
//! crashing.
//!
//! They live here and not in `selftest.rs` because two of them must touch
//! memory behind the allocator's or the dcache's back, which takes unsafe
//! code, allowed in `mm` only. Each unsafe block says why it cannot hurt
//! anything but the object under test. They run on the boot CPU while the
//! other CPUs idle, and leave poisoning as they found it.
//!
//! Touches: the slab, the global allocator, the fs crate (a noalloc tmpfs),
//! interrupts (off around sequences that must reuse the same object).

use alloc::format;
use alloc::string::String;
use alloc::sync::Arc;
use alloc::vec::Vec;
use core::alloc::Layout;

use super::{heap, poison, slab};
use crate::arch::interrupts;
use crate::ktest::TestResult;

/// Poisoning on for the guard's life; the previous state comes back on
/// drop.
struct PoisonOn(bool);

impl PoisonOn {
    fn new() -> Self {
        let was = poison::enabled();
        poison::enable();
        PoisonOn(was)
    }
}

impl Drop for PoisonOn {
    fn drop(&mut self) {
        if !self.0 {
            poison::disable();
        }
    }
}

/// The slab class of a `size`-byte object.
fn class(size: usize) -> usize {
    slab::class_of(Layout::from_size_align(size, 8).expect("valid layout")).expect("a slab size")
}

/// Is every byte of the live object `[p, p + len)` the poison byte?
fn all_poison(p: *const u8, len: usize) -> bool {
    (0..len).all(|i| {
        // SAFETY: the caller allocated `[p, p + len)` and has not freed it;
        // the allocator initialised it (the fill), so the read is defined.
        unsafe { p.add(i).read_volatile() == poison::FREE_BYTE }
    })
}

/// Read one word of freed heap memory (the allocator still owns it).
/// `None` unless `addr` is an 8-aligned word inside the kernel heap.
fn read_heap_word(addr: usize) -> Option<u64> {
    let (start, size, _) = heap::stats();
    if !addr.is_multiple_of(8) || addr < start || addr + 8 > start + size {
        return None;
    }
    // SAFETY: the heap is identity-mapped RAM for the kernel's whole life
    // (talc never unmaps it), so an aligned volatile load from it is a
    // plain memory read; it changes nothing, and whatever the allocator
    // does with that word meanwhile only changes the value we see.
    Some(unsafe { (addr as *const u64).read_volatile() })
}

/// Free and reuse: the reused object is the freed one (LIFO magazines),
/// still holds the fill, was checked, and no violation was counted. Then
/// a burst of ordinary `Box`es of several sizes through the global
/// allocator: all checked, none violated.
pub fn clean_cycle() -> TestResult {
    let _on = PoisonOn::new();
    let size = 200;
    let c = class(size);
    let t0 = poison::totals();
    let (same, filled) = interrupts::without(|| {
        let p = slab::alloc(c).ok_or("slab alloc failed")?.as_ptr();
        // SAFETY: `p` came from `slab::alloc(c)` and is not used again.
        unsafe { slab::free(c, p) };
        let q = slab::alloc(c).ok_or("slab alloc failed")?.as_ptr();
        let filled = all_poison(q, slab::class_size(c));
        // SAFETY: `q` came from `slab::alloc(c)` and is not used again.
        unsafe { slab::free(c, q) };
        Ok::<_, String>((p == q, filled))
    })?;
    if !same {
        return Err("the magazine did not hand back the object just freed".into());
    }
    if !filled {
        return Err("a freed and reused object does not hold the poison fill".into());
    }
    for round in 0..200usize {
        let boxes: Vec<alloc::boxed::Box<[u64]>> = [2usize, 7, 30, 100, 250]
            .iter()
            .map(|&n| alloc::vec![round as u64; n].into_boxed_slice())
            .collect();
        if boxes.iter().any(|b| b.iter().any(|&x| x != round as u64)) {
            return Err(format!("round {round}: a fresh object lost its contents"));
        }
    }
    let d = poison::totals().delta(&t0);
    if d.violations != 0 {
        return Err(format!(
            "{} writes after free in a clean cycle",
            d.violations
        ));
    }
    if d.checked < 1 + 200 {
        return Err(format!(
            "only {} reused objects were checked (expected over 200)",
            d.checked
        ));
    }
    Ok(())
}

/// Free an object, write one byte into it, allocate again: the same object
/// comes back and exactly one write after free is counted.
pub fn write_after_free_counted() -> TestResult {
    let _on = PoisonOn::new();
    let c = class(64);
    let t0 = poison::totals();
    let same = interrupts::without(|| {
        let p = slab::alloc(c).ok_or("slab alloc failed")?.as_ptr();
        // SAFETY: `p` came from `slab::alloc(c)`; it is written below only
        // on purpose.
        unsafe { slab::free(c, p) };
        // SAFETY: a deliberate use after free, the bug this checker exists
        // to catch. The object is in this CPU's loaded magazine: the slab
        // owns it, it stays mapped (slab memory is never returned to talc)
        // and, with interrupts off and nothing allocating in between, no one
        // else can be handed it before we take it back on the next line.
        unsafe { p.add(40).write_volatile(0x00) };
        let q = slab::alloc(c).ok_or("slab alloc failed")?.as_ptr();
        // SAFETY: `q` came from `slab::alloc(c)` and is not used again.
        unsafe { slab::free(c, q) };
        Ok::<_, String>(p == q)
    })?;
    if !same {
        return Err("the magazine did not hand back the object just freed".into());
    }
    let d = poison::totals().delta(&t0);
    if d.violations != 1 {
        return Err(format!(
            "{} writes after free counted, expected 1",
            d.violations
        ));
    }
    Ok(())
}

/// A dropped inode (no RCU reader can reach it) is filled at once: its
/// canary word reads as the poison the fs crate's readers look for.
pub fn freed_inode_reads_as_poison() -> TestResult {
    use fs::poison::{read_word, Reading, INODE_LIVE};
    let _on = PoisonOn::new();
    let inode = Arc::new(fs::inode::Inode::new(
        1,
        fs::vfs::FileType::File,
        0o644,
        b"",
    ));
    let addr = inode.canary_addr();
    let (live, after) = interrupts::without(|| {
        let live = read_heap_word(addr);
        drop(inode); // the last reference: freed (and filled) right here
        (live, read_heap_word(addr))
    });
    let (Some(live), Some(after)) = (live, after) else {
        return Err(format!("canary at {addr:#x} is not a heap word"));
    };
    if read_word(live, INODE_LIVE) != Reading::Live {
        return Err(format!("a live inode's canary reads {live:#x}"));
    }
    if read_word(after, INODE_LIVE) != Reading::Poison {
        return Err(format!(
            "a freed inode's canary reads {after:#x} ({:?}), not the poison",
            read_word(after, INODE_LIVE)
        ));
    }
    Ok(())
}

/// An RCU lookup steps on a dentry whose memory reads as freed: fill a live
/// dentry of a private noalloc tmpfs with poison (what a premature free
/// would leave), stat its name, restore it. The walk must count the poison
/// (the canary in `d_lookup_rcu`, the chain link in `rculist`) and answer
/// without finding it; afterwards all is as before.
pub fn rcu_lookup_counts_freed_dentry() -> TestResult {
    use bench::params::Design;
    let vfs = fs::vfs::Vfs::new_tmpfs(&Design::named("noalloc").mount_opts())
        .map_err(|e| format!("tmpfs: {e}"))?;
    vfs.write_file(b"/pf", b"x")
        .map_err(|e| format!("create /pf: {e}"))?;
    let flags = fs::namei::LookupFlags::default();
    let dentry: Arc<fs::dcache::Dentry> = fs::namei::resolve(vfs.mnt_ns(), b"/pf", flags)
        .map_err(|e| format!("resolve /pf: {e}"))?
        .1
        .arc()
        .clone();
    // Nothing of the creation is still waiting for a grace period.
    crate::stress::drain(1000);
    let addr = Arc::as_ptr(&dentry) as *mut u8;
    let len = core::mem::size_of::<fs::dcache::Dentry>();
    let mut saved = alloc::vec![0u8; len];
    let (seen0, hits0) = (
        fs::stats::snapshot().poison_seen,
        fs::sync::rculist::poison_hits(),
    );
    // SAFETY: (1) `[addr, addr + len)` is the value of a live `Arc<Dentry>`
    // that we hold, so it is mapped and stays allocated; the Arc's counts
    // sit before it and are not touched. (2) Until the bytes are restored
    // below nothing else touches them: the other CPUs idle, the tmpfs is
    // private to this test, no RCU callback refers to the dentry (drained
    // above), and the only code that runs is a noalloc `stat` of its name,
    // whose RCU-walk checks the chain link and the canary before reading
    // any other field, and whose ref-walk then misses without allocating.
    unsafe {
        core::ptr::copy_nonoverlapping(addr, saved.as_mut_ptr(), len);
        for i in 0..len {
            addr.add(i).write_volatile(poison::FREE_BYTE);
        }
    }
    let answer = vfs.stat(b"/pf");
    // SAFETY: the same range, given back exactly the bytes it held.
    unsafe { core::ptr::copy_nonoverlapping(saved.as_ptr(), addr, len) };
    let (seen, hits) = (
        fs::stats::snapshot().poison_seen - seen0,
        fs::sync::rculist::poison_hits() - hits0,
    );
    if answer.is_ok() {
        return Err("stat found a dentry made of poison".into());
    }
    if seen == 0 || hits == 0 {
        return Err(format!(
            "poison not counted: canary {seen}, chain link {hits}"
        ));
    }
    if vfs.stat(b"/pf").is_err() {
        return Err("/pf is gone after its bytes were restored".into());
    }
    if fs::stats::snapshot().poison_seen - seen0 != seen {
        return Err("poison counted after the bytes were restored".into());
    }
    drop(dentry);
    vfs.unlink(b"/pf").map_err(|e| format!("unlink /pf: {e}"))?;
    drop(vfs);
    crate::stress::drain(1000);
    Ok(())
}
