//! Self-tests of the kernel's RCU (listed in `crate::selftest`): a callback
//! waits for the reader on its own CPU and on another, `call_rcu` from every
//! CPU, grace periods with the system idle, callbacks driven by ticks and the
//! idle loop alone, and `call_rcu` with no segment to be had or with the heap
//! nearly full (spares, leaks counted, never a panic).
//!
//! Safe code only; beside the RCU they exercise. Touches: [`super::rcu`]
//! (its segment fault hook, left off), the heap (filled and given back),
//! every CPU through `crate::smp`.

use alloc::boxed::Box;
use alloc::sync::Arc;
use alloc::vec::Vec;
use core::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use super::rcu;
use crate::ktest::{ensure, ncpus, wait_until, DropFlag, TestResult};
use crate::smp::{self, CpuSet};
use crate::time;

pub(crate) fn rcu_waits_for_reader() -> TestResult {
    // same CPU: a callback cannot run while this CPU is inside a read section
    let dropped = Arc::new(AtomicUsize::new(0));
    rcu::read_lock();
    rcu::call_rcu(fs::sync::rcu::Retired::from_box(Box::new(DropFlag(
        dropped.clone(),
    ))));
    time::delay_us(30_000);
    rcu::run_callbacks();
    let early = dropped.load(Ordering::SeqCst);
    rcu::read_unlock();
    ensure!(
        early == 0,
        "callback ran inside the caller's own read section"
    );
    rcu::synchronize_rcu();
    ensure!(
        dropped.load(Ordering::SeqCst) == 1,
        "callback did not run after synchronize_rcu"
    );
    if ncpus() < 2 {
        return Ok(());
    }
    // two CPUs: CPU 1 holds a read section for 100 ms while CPU 0 waits
    let dropped = Arc::new(AtomicUsize::new(0));
    let reader_in = AtomicBool::new(false);
    let reader_out = AtomicBool::new(false);
    let seen_early = AtomicBool::new(false);
    let sync_saw_reader_out = AtomicBool::new(false);
    let mut set = CpuSet::single(0);
    set.insert(1);
    smp::run_on(&set, |cpu| {
        if cpu == 1 {
            rcu::read_lock();
            reader_in.store(true, Ordering::SeqCst);
            let t0 = time::now_ns();
            while time::now_ns() - t0 < 100_000_000 {
                if dropped.load(Ordering::SeqCst) != 0 {
                    seen_early.store(true, Ordering::SeqCst);
                }
                crate::arch::processor::pause();
            }
            reader_out.store(true, Ordering::SeqCst);
            rcu::read_unlock();
        } else {
            while !reader_in.load(Ordering::SeqCst) {
                crate::arch::processor::pause();
            }
            rcu::call_rcu(fs::sync::rcu::Retired::from_box(Box::new(DropFlag(
                dropped.clone(),
            ))));
            rcu::synchronize_rcu();
            sync_saw_reader_out.store(reader_out.load(Ordering::SeqCst), Ordering::SeqCst);
        }
    });
    ensure!(
        !seen_early.load(Ordering::SeqCst),
        "object reclaimed while a reader was inside its section"
    );
    ensure!(
        sync_saw_reader_out.load(Ordering::SeqCst),
        "synchronize_rcu returned before the reader left"
    );
    ensure!(dropped.load(Ordering::SeqCst) == 1, "callback did not run");
    Ok(())
}

pub(crate) fn rcu_call_rcu_all_cpus() -> TestResult {
    const PER_CPU: usize = 200;
    let dropped = Arc::new(AtomicUsize::new(0));
    smp::run_on(&CpuSet::all(), |_| {
        for _ in 0..PER_CPU {
            rcu::call_rcu(fs::sync::rcu::Retired::from_arc(Arc::new(DropFlag(
                dropped.clone(),
            ))));
        }
        rcu::synchronize_rcu();
    });
    let want = PER_CPU * ncpus();
    ensure!(
        dropped.load(Ordering::SeqCst) == want,
        "{} of {want} callbacks ran",
        dropped.load(Ordering::SeqCst)
    );
    let left: usize = (0..ncpus()).map(rcu::pending).sum();
    ensure!(left == 0, "{left} callbacks still queued");
    let idle_cpu_ran: Vec<usize> = (0..ncpus())
        .filter(|&c| rcu::reclaimed(c) < PER_CPU as u64)
        .collect();
    ensure!(
        idle_cpu_ran.is_empty(),
        "CPUs that reclaimed fewer than their own callbacks: {idle_cpu_ran:?}"
    );
    Ok(())
}

pub(crate) fn rcu_grace_periods_idle() -> TestResult {
    for i in 0..3 {
        let t0 = time::now_ns();
        let (s0, _) = rcu::gp_state();
        rcu::synchronize_rcu();
        let (s1, d1) = rcu::gp_state();
        let ms = (time::now_ns() - t0) / 1_000_000;
        ensure!(
            s1 > s0 && d1 > s0,
            "round {i}: grace period state {s0} -> ({s1}, {d1})"
        );
        ensure!(ms < 20_000, "round {i}: synchronize_rcu took {ms} ms");
    }
    Ok(())
}

pub(crate) fn rcu_async_callbacks() -> TestResult {
    // Queue without waiting: grace periods must be driven by ticks and the
    // idle loop alone, and each CPU must run its own callbacks.
    let dropped = Arc::new(AtomicUsize::new(0));
    let before: Vec<u64> = (0..ncpus()).map(rcu::reclaimed).collect();
    smp::run_on(&CpuSet::all(), |_| {
        for _ in 0..3 {
            rcu::call_rcu(fs::sync::rcu::Retired::from_box(Box::new(DropFlag(
                dropped.clone(),
            ))));
        }
    });
    let want = 3 * ncpus();
    let ok = wait_until(20_000, || {
        rcu::quiescent_state();
        dropped.load(Ordering::SeqCst) == want
    });
    ensure!(
        ok,
        "{} of {want} callbacks ran within 20 s",
        dropped.load(Ordering::SeqCst)
    );
    for (c, b) in before.iter().enumerate() {
        ensure!(
            rcu::reclaimed(c) >= b + 3,
            "cpu {c} did not run its own callbacks"
        );
    }
    Ok(())
}

/// Drain CPU 0's callback queue (callbacks may queue more) until no
/// segment is left; true if it got there.
fn drain_own_queue() -> bool {
    for _ in 0..20 {
        rcu::synchronize_rcu();
        if rcu::segments().0 == 0 {
            return true;
        }
    }
    false
}

/// Wait (grace periods) until `dropped` reaches `want`.
fn wait_dropped(dropped: &AtomicUsize, want: usize) -> bool {
    for _ in 0..50 {
        if dropped.load(Ordering::SeqCst) >= want {
            return true;
        }
        rcu::synchronize_rcu();
    }
    dropped.load(Ordering::SeqCst) >= want
}

/// call_rcu when no segment can be allocated (the allocation hook fails
/// every one): the spare reserve takes exactly SPARES * SEG_CAP callbacks,
/// `room` says no beyond that, the rest are leaked and counted — no panic,
/// no wait — and everything queued runs after a grace period. Inside a
/// read section, so that no callback runs and recycles a segment meanwhile.
pub(crate) fn rcu_call_rcu_without_segments() -> TestResult {
    ensure!(drain_own_queue(), "cpu 0's callback queue did not drain");
    let (_, spares) = rcu::segments();
    ensure!(
        spares == rcu::SPARES,
        "{spares} spare segments after a drain, want {}",
        rcu::SPARES
    );
    let cap = rcu::SPARES * rcu::SEG_CAP;
    const EXTRA: usize = 10;
    let dropped = Arc::new(AtomicUsize::new(0));
    let objs: Vec<_> = (0..cap + EXTRA)
        .map(|_| fs::sync::rcu::Retired::from_box(Box::new(DropFlag(dropped.clone()))))
        .collect();
    let leaked0 = rcu::leaked();
    rcu::read_lock();
    rcu::fail_segments(true);
    let room_all = rcu::room(cap);
    let room_more = rcu::room(cap + 1);
    for o in objs {
        rcu::call_rcu(o);
    }
    let room_after = rcu::room(1);
    let (segs, spares_after) = rcu::segments();
    rcu::fail_segments(false);
    rcu::read_unlock();
    let leaked = rcu::leaked() - leaked0;
    ensure!(room_all, "room({cap}) said no with {} spares", rcu::SPARES);
    ensure!(!room_more, "room({}) said yes with no memory", cap + 1);
    ensure!(!room_after, "room(1) said yes with every segment full");
    ensure!(
        segs == rcu::SPARES && spares_after == 0,
        "{segs} segments queued, {spares_after} spares left"
    );
    ensure!(
        leaked == EXTRA as u64,
        "{leaked} callbacks leaked, want {EXTRA}"
    );
    ensure!(
        wait_dropped(&dropped, cap),
        "{} of {cap} queued callbacks ran",
        dropped.load(Ordering::SeqCst)
    );
    ensure!(
        dropped.load(Ordering::SeqCst) == cap,
        "{} callbacks ran, want {cap} (leaked ones must not run)",
        dropped.load(Ordering::SeqCst)
    );
    ensure!(drain_own_queue(), "cpu 0's callback queue did not drain");
    let (_, spares) = rcu::segments();
    ensure!(
        spares == rcu::SPARES,
        "spares not refilled: {spares} of {}",
        rcu::SPARES
    );
    Ok(())
}

/// call_rcu with the heap filled to its admission watermark: segments
/// come from the spares, then from the heap's reserve; nothing leaks, no
/// panic, and everything runs after a grace period once memory is back.
pub(crate) fn rcu_call_rcu_nearly_full_heap() -> TestResult {
    const BLOCK: usize = 64 << 10;
    const N: usize = 8 * rcu::SEG_CAP;
    ensure!(drain_own_queue(), "cpu 0's callback queue did not drain");
    let dropped = Arc::new(AtomicUsize::new(0));
    let objs: Vec<_> = (0..N)
        .map(|_| fs::sync::rcu::Retired::from_box(Box::new(DropFlag(dropped.clone()))))
        .collect();
    let (_, heap_size, _) = crate::mm::heap::stats();
    let mut hog: Vec<Vec<u8>> = Vec::new();
    ensure!(
        hog.try_reserve_exact(heap_size / BLOCK + 1).is_ok(),
        "no memory for the hog's list"
    );
    while crate::mm::allocator::may_alloc(BLOCK) && hog.len() < hog.capacity() {
        let mut b = Vec::new();
        if b.try_reserve_exact(BLOCK).is_err() {
            break;
        }
        hog.push(b);
    }
    let short = !crate::mm::allocator::may_alloc(BLOCK);
    let free_kib = crate::mm::heap::free() >> 10;
    let leaked0 = rcu::leaked();
    rcu::read_lock();
    let room = rcu::room(rcu::SEG_CAP);
    for o in objs {
        rcu::call_rcu(o);
    }
    let (segs, _) = rcu::segments();
    rcu::read_unlock();
    drop(hog);
    let leaked = rcu::leaked() - leaked0;
    ensure!(short, "the heap did not fill to its watermark");
    ensure!(
        room,
        "room({}) said no with {free_kib} KiB free",
        rcu::SEG_CAP
    );
    ensure!(
        leaked == 0,
        "{leaked} callbacks leaked with {free_kib} KiB free"
    );
    ensure!(
        segs == N / rcu::SEG_CAP,
        "{segs} segments for {N} callbacks"
    );
    ensure!(
        wait_dropped(&dropped, N),
        "{} of {N} callbacks ran",
        dropped.load(Ordering::SeqCst)
    );
    Ok(())
}
