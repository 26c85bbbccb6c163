//! Self-tests of the allocators (listed in `crate::selftest`): the frame
//! allocator and the heap's large allocations from every CPU at once, the
//! per-CPU slab (contents, counters, frees on another CPU than the
//! allocation) and its fast path staying off the global depot.
//!
//! Safe code only (they use the allocators as any caller does); they live
//! beside what they test, as `poison_test` does. Touches: frames, the heap
//! and the slab, from every CPU through `crate::smp`.

use alloc::boxed::Box;
use alloc::format;
use alloc::sync::Arc;
use alloc::vec::Vec;
use core::sync::atomic::{AtomicUsize, Ordering};

use super::{frame, slab};
use crate::ktest::{ensure, ncpus, TestResult};
use crate::smp::{self, CpuSet};

pub(crate) fn frame_alloc_all_cpus() -> TestResult {
    const PER_CPU: usize = 16;
    let (_, before) = frame::stats();
    let got = smp::run_on_collect(&CpuSet::all(), |cpu| {
        let mut v = Vec::new();
        for i in 0..PER_CPU {
            if let Some(pa) = frame::alloc() {
                let tag = ((cpu as u64) << 32) | i as u64;
                frame::write_word(pa, 0, tag);
                frame::write_word(pa, 4088, !tag);
                v.push((pa, tag));
            }
        }
        v
    });
    let mut all: Vec<u64> = Vec::new();
    let mut err = None;
    for (cpu, v) in &got {
        if v.len() != PER_CPU {
            err = Some(format!("cpu {cpu} got {} frames", v.len()));
        }
        for &(pa, tag) in v {
            if frame::read_word(pa, 0) != tag || frame::read_word(pa, 4088) != !tag {
                err = Some(format!("frame {pa:#x} of cpu {cpu} overwritten"));
            }
            all.push(pa);
        }
    }
    let n = all.len();
    all.sort_unstable();
    all.dedup();
    if all.len() != n {
        err = Some(format!("{} frames handed out twice", n - all.len()));
    }
    let (_, during) = frame::stats();
    smp::run_on(&CpuSet::all(), |cpu| {
        for &(pa, _) in &got[cpu].1 {
            frame::free(pa);
        }
    });
    let (_, after) = frame::stats();
    if let Some(e) = err {
        return Err(e);
    }
    ensure!(
        during == before + n,
        "in-use count {during}, expected {}",
        before + n
    );
    ensure!(
        after == before,
        "in-use count {after} after freeing, expected {before}"
    );
    // freed frames are reused
    let pa = frame::alloc().ok_or("no frame after freeing")?;
    let reused = all.binary_search(&pa).is_ok();
    frame::free(pa);
    ensure!(reused, "freed frames are not reused");
    Ok(())
}

pub(crate) fn heap_large_all_cpus() -> TestResult {
    let bad = AtomicUsize::new(0);
    smp::run_on(&CpuSet::all(), |cpu| {
        let mut vs: Vec<Vec<u8>> = Vec::new();
        for i in 0..8 {
            let len = 4096 + i * 7919 + cpu * 13;
            vs.push(alloc::vec![(cpu + i) as u8; len]);
        }
        for (i, v) in vs.iter().enumerate() {
            if v.iter().any(|&b| b != (cpu + i) as u8) {
                bad.fetch_add(1, Ordering::Relaxed);
            }
        }
    });
    ensure!(
        bad.load(Ordering::Relaxed) == 0,
        "{} large allocations corrupted",
        bad.load(Ordering::Relaxed)
    );
    Ok(())
}

pub(crate) fn slab_all_cpus() -> TestResult {
    const N: usize = 1500;
    let before: Vec<(u64, u64)> = (0..ncpus())
        .map(|c| {
            (
                slab::COUNTS[c].allocs.load(Ordering::Relaxed),
                slab::COUNTS[c].frees.load(Ordering::Relaxed),
            )
        })
        .collect();
    let bad = AtomicUsize::new(0);
    smp::run_on(&CpuSet::all(), |cpu| {
        let tag = cpu as u64 * 1_000_003;
        let mut small: Vec<Box<[u64; 2]>> = Vec::with_capacity(N);
        let mut mid: Vec<Box<[u64; 24]>> = Vec::with_capacity(N / 4);
        let mut big: Vec<Box<[u64; 200]>> = Vec::with_capacity(N / 16);
        for i in 0..N as u64 {
            small.push(Box::new([tag + i, !(tag + i)]));
            if i % 4 == 0 {
                mid.push(Box::new([tag ^ i; 24]));
            }
            if i % 16 == 0 {
                big.push(Box::new([tag + 7 * i; 200]));
            }
        }
        // free the second half of the small objects, reallocate them, check
        small.truncate(N / 2);
        for i in (N / 2) as u64..N as u64 {
            small.push(Box::new([tag + i, !(tag + i)]));
        }
        let ok = small
            .iter()
            .enumerate()
            .all(|(i, b)| b[0] == tag + i as u64 && b[1] == !(tag + i as u64))
            && mid
                .iter()
                .enumerate()
                .all(|(i, b)| b.iter().all(|&x| x == tag ^ (4 * i) as u64))
            && big
                .iter()
                .enumerate()
                .all(|(i, b)| b.iter().all(|&x| x == tag + 7 * 16 * i as u64));
        if !ok {
            bad.fetch_add(1, Ordering::Relaxed);
        }
    });
    ensure!(
        bad.load(Ordering::Relaxed) == 0,
        "slab objects corrupted on {} CPUs",
        bad.load(Ordering::Relaxed)
    );
    for (c, (a0, f0)) in before.iter().enumerate() {
        let a = slab::COUNTS[c].allocs.load(Ordering::Relaxed) - a0;
        let f = slab::COUNTS[c].frees.load(Ordering::Relaxed) - f0;
        ensure!(
            a as usize >= N + N / 2,
            "cpu {c} counted only {a} allocations"
        );
        ensure!(f as usize >= N + N / 2, "cpu {c} counted only {f} frees");
    }
    Ok(())
}

pub(crate) fn slab_cross_cpu_free() -> TestResult {
    let n = ncpus();
    let slots: Vec<spin::Mutex<Vec<Arc<[u64; 6]>>>> =
        (0..n).map(|_| spin::Mutex::new(Vec::new())).collect();
    smp::run_on(&CpuSet::all(), |cpu| {
        let mut v = slots[cpu].lock();
        for i in 0..500u64 {
            v.push(Arc::new([cpu as u64, i, 0, 0, 0, cpu as u64 ^ i]));
        }
    });
    let bad = AtomicUsize::new(0);
    smp::run_on(&CpuSet::all(), |cpu| {
        let victim = (cpu + 1) % n;
        let v = core::mem::take(&mut *slots[victim].lock());
        for (i, a) in v.iter().enumerate() {
            if a[0] != victim as u64 || a[1] != i as u64 || a[5] != victim as u64 ^ i as u64 {
                bad.fetch_add(1, Ordering::Relaxed);
            }
        }
        drop(v); // freed on another CPU than the allocation
        let mine: Vec<Arc<[u64; 6]>> = (0..500u64).map(|i| Arc::new([i; 6])).collect();
        if mine
            .iter()
            .enumerate()
            .any(|(i, a)| a.iter().any(|&x| x != i as u64))
        {
            bad.fetch_add(1, Ordering::Relaxed);
        }
    });
    ensure!(
        bad.load(Ordering::Relaxed) == 0,
        "{} objects corrupted",
        bad.load(Ordering::Relaxed)
    );
    Ok(())
}

pub(crate) fn slab_fast_path_is_per_cpu() -> TestResult {
    let c = &slab::COUNTS[smp::current_cpu()];
    // warm up the magazines of this class
    let warm: Vec<Box<[u8; 48]>> = (0..8).map(|_| Box::new([1; 48])).collect();
    drop(warm);
    let v0 = c.depot_visits.load(Ordering::Relaxed);
    for i in 0..20_000u32 {
        let b = core::hint::black_box(Box::new([i as u8; 48]));
        drop(b);
    }
    let visits = c.depot_visits.load(Ordering::Relaxed) - v0;
    ensure!(
        visits <= 2,
        "20000 alloc/free pairs visited the global depot {visits} times"
    );
    Ok(())
}
