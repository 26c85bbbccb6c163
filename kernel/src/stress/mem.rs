//! `stress=mem`: with the unused-dentry limit set to [`MEM_LIMIT`], every
//! CPU stats its share of 1,000,000 distinct missing names per design
//! (`/m/missNNNNNNN`); each must be ENOENT (ENOMEM is counted apart). The
//! negative design's LRU must stay at or under the limit (the shrinker):
//! its highest sampled `nr_unused` is printed.
//!
//! Touches: the fs crate (a fresh tmpfs per design, the dcache limit and
//! shrinker), `smp`, the console. Safe code only.

use core::sync::atomic::{AtomicUsize, Ordering};

use bench::params::Design;

use super::{designs, drain, scratch_tmpfs, settle, Misses};
use crate::console::kprintln;
use crate::smp::{self, CpuSet};
use crate::time;

/// `stress=mem`: names per design.
pub const MEM_NAMES: usize = 1_000_000;
/// `stress=mem`: the unused-dentry limit.
pub const MEM_LIMIT: usize = 10_000;

/// `/m/missNNNNNNN` into `buf`; returns the length.
fn miss_name(buf: &mut [u8; 16], mut i: usize) -> usize {
    buf[..7].copy_from_slice(b"/m/miss");
    for k in (7..14).rev() {
        buf[k] = b'0' + (i % 10) as u8;
        i /= 10;
    }
    14
}

/// `stress=mem`: true when every design kept its promises.
pub fn mem_stress(only: Option<Design>) -> bool {
    let n = smp::online_count();
    let mut ok = true;
    fs::dcache::set_max_unused(MEM_LIMIT);
    for d in designs(only) {
        let base = drain(2000);
        let Some(vfs) = scratch_tmpfs("mem", d, b"/m") else {
            return false;
        };
        let c0 = fs::stats::snapshot();
        let max_unused = AtomicUsize::new(0);
        let t0 = time::now_ns();
        let vfs_ref = &vfs;
        let results = smp::run_on_collect(&CpuSet::first(n), |cpu| {
            let mut misses = Misses::default();
            let mut buf = [0u8; 16];
            for i in (cpu..MEM_NAMES).step_by(n) {
                let len = miss_name(&mut buf, i);
                misses.stat("mem", vfs_ref, &buf[..len]);
                if cpu == 0 && misses.lookups().is_multiple_of(1024) {
                    max_unused.fetch_max(fs::dcache::nr_unused(), Ordering::Relaxed);
                }
            }
            misses
        });
        let ms = (time::now_ns() - t0) / 1_000_000;
        max_unused.fetch_max(fs::dcache::nr_unused(), Ordering::Relaxed);
        let c = fs::stats::snapshot().delta(&c0);
        let Misses {
            enoent,
            enomem,
            wrong: other,
        } = Misses::sum(&results);
        let (used, _, _) = crate::benchrun::memory_figures();
        let (_, heap_size, _) = crate::mm::heap::stats();
        drop(vfs);
        let live = settle(base, 3000);
        let max = max_unused.load(Ordering::Relaxed);
        kprintln!(
            "stress=mem design={d} cpus={n} lookups={} enoent={enoent} enomem={enomem} wrong={other} ms={ms} dentry_allocs={} nr_unused_max={max} limit={MEM_LIMIT} shrunk={} heap_used_kib={} of {} dentries_live={base}->{live}",
            enoent + enomem + other,
            c.dentry_alloc,
            c.shrunk,
            used >> 10,
            heap_size >> 10
        );
        ok &= other == 0 && max <= MEM_LIMIT && live == base;
    }
    fs::dcache::set_max_unused(fs::dcache::DEFAULT_MAX_UNUSED);
    ok
}
