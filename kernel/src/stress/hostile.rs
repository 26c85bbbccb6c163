//! `stress=hostile`: the seed-style unbounded-growth check. For `secs`
//! seconds (default 60) every CPU stats distinct missing names as fast as
//! it can, up to 1,000,000 a second each (`/h/cCCC-NNNNNNNNNN`, never the
//! same name twice), on a tmpfs with the negative design (or `design=`),
//! with the default unused-dentry limit: nothing here shrinks the cache on
//! purpose. Every miss leaves a negative dentry, so only the dcache's own
//! bounds (the LRU limit, reclaim when memory admission refuses) keep the
//! guest alive. Once a second CPU 0 samples the live dentries, the LRU and
//! the heap; the verdict: no wrong answer, no panic, the heap never full
//! (callbacks queued while a grace period waits counted at each sample),
//! no RCU callback leaked for want of a queue segment, and everything
//! freed at the end.
//!
//! Touches: the fs crate (a fresh tmpfs), `smp`, RCU, `mm::heap` (figures),
//! the console. Safe code only.

use core::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

use bench::params::Design;

use super::{drain, live_dentries, scratch_tmpfs, settle, Misses};
use crate::console::kprintln;
use crate::smp::{self, CpuSet};
use crate::sync::rcu;
use crate::time;

/// Most misses per CPU per second.
pub const RATE_PER_CPU: u64 = 1_000_000;

/// `/h/cCCC-NNNNNNNNNN` into `buf`; returns the length.
fn name(buf: &mut [u8; 24], cpu: usize, mut i: u64) -> usize {
    buf[..4].copy_from_slice(b"/h/c");
    let mut c = cpu;
    for k in (4..7).rev() {
        buf[k] = b'0' + (c % 10) as u8;
        c /= 10;
    }
    buf[7] = b'-';
    for k in (8..18).rev() {
        buf[k] = b'0' + (i % 10) as u8;
        i /= 10;
    }
    18
}

/// `stress=hostile`: true when the guest stayed bounded and right.
pub fn hostile_stress(secs: u32, design: Design) -> bool {
    let n = smp::online_count();
    let base = drain(2000);
    let Some(vfs) = scratch_tmpfs("hostile", design, b"/h") else {
        return false;
    };
    let (_, heap_size, _) = crate::mm::heap::stats();
    let live_max = AtomicU64::new(0);
    let unused_max = AtomicUsize::new(0);
    let heap_max = AtomicUsize::new(0);
    let rcu_pending_max = AtomicUsize::new(0);
    let c0 = fs::stats::snapshot();
    let leaked0 = rcu::leaked();
    let t0 = time::now_ns();
    let end = t0 + secs as u64 * 1_000_000_000;
    let vfs_ref = &vfs;
    let results = smp::run_on_collect(&CpuSet::first(n), |cpu| {
        let mut misses = Misses::default();
        let mut buf = [0u8; 24];
        let mut i = 0u64;
        let mut next_sample = t0 + 1_000_000_000;
        loop {
            let len = name(&mut buf, cpu, i);
            misses.stat("hostile", vfs_ref, &buf[..len]);
            i += 1;
            if i.is_multiple_of(256) {
                let now = time::now_ns();
                if now >= end {
                    break;
                }
                // At most RATE_PER_CPU a second: wait out a head start.
                let allowed = (now - t0) as u128 * RATE_PER_CPU as u128 / 1_000_000_000;
                while (i as u128) > allowed + 256 && time::now_ns() < end {
                    rcu::quiescent_state();
                    core::hint::spin_loop();
                    let now = time::now_ns();
                    if (i as u128) <= (now - t0) as u128 * RATE_PER_CPU as u128 / 1_000_000_000 {
                        break;
                    }
                }
                if cpu == 0 && now >= next_sample {
                    next_sample += 1_000_000_000;
                    let live = live_dentries().max(0) as u64;
                    let unused = fs::dcache::nr_unused();
                    let (_, _, used) = crate::mm::heap::stats();
                    live_max.fetch_max(live, Ordering::Relaxed);
                    unused_max.fetch_max(unused, Ordering::Relaxed);
                    heap_max.fetch_max(used, Ordering::Relaxed);
                    let pending = (0..n).map(rcu::pending).sum();
                    rcu_pending_max.fetch_max(pending, Ordering::Relaxed);
                    let t = (now - t0) / 1_000_000_000;
                    if t.is_multiple_of(10) {
                        kprintln!(
                            "stress=hostile: t={t} s dentries_live={live} nr_unused={unused} heap_used_kib={} of {}",
                            used >> 10,
                            heap_size >> 10
                        );
                    }
                }
            }
        }
        misses
    });
    let ms = (time::now_ns() - t0) / 1_000_000;
    let c = fs::stats::snapshot().delta(&c0);
    let total = Misses::sum(&results);
    let lookups = total.lookups();
    let Misses {
        enoent,
        enomem,
        wrong: other,
    } = total;
    drop(vfs);
    let live = settle(base, 5000);
    let heap_peak = heap_max.load(Ordering::Relaxed);
    let leaked = rcu::leaked() - leaked0;
    kprintln!(
        "stress=hostile design={design} cpus={n} secs={secs} lookups={lookups} per_cpu_per_s={} enoent={enoent} enomem={enomem} wrong={other} ms={ms} negative_created={} shrunk={} dentries_live_max={} nr_unused_max={} heap_used_max_kib={} of {} free_kib_min={} reserve_kib={} stats_enomem={} rcu_pending_max={} rcu_leaked={leaked} dentries_live={base}->{live}",
        lookups * 1000 / (ms.max(1) * n as u64),
        c.negative_created,
        c.shrunk,
        live_max.load(Ordering::Relaxed),
        unused_max.load(Ordering::Relaxed),
        heap_peak >> 10,
        heap_size >> 10,
        heap_size.saturating_sub(heap_peak) >> 10,
        crate::mm::heap::reserve() >> 10,
        c.enomem,
        rcu_pending_max.load(Ordering::Relaxed)
    );
    other == 0 && enoent > 0 && live == base && heap_peak < heap_size && leaked == 0
}
