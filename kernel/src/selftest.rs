//! The in-guest self-tests (`selftest` on the command line): this file holds
//! the list and the runner; the bodies live beside what they test (the
//! Asterinas habit), sharing [`TestResult`], [`ensure!`], [`ncpus`] and
//! [`wait_until`] from here:
//!
//! - `mm::alloc_test` (frames, heap, slab under concurrent use from every
//!   CPU), `mm::poison_test` (free-memory poisoning), `mm::stack_test`
//!   (guarded stacks);
//! - `arch::percpu_test` (per-core data and CPU ids), `arch::trap_test`
//!   (a breakpoint, page faults through the probe, caught);
//! - `time::clock_test` (TSC against the reference clock, ticks),
//!   `smp::cross_cpu_test` (cross-CPU calls and IPIs);
//! - `sync::fs_test` (the fs crate on this kernel's platform);
//! - here: the command-line parser and the RCU grace periods.
//!
//! Each test runs on the boot CPU (fanning out with `smp::run_on`), returns
//! `Err(reason)` on failure, and is reported as one line; `run` returns the
//! [`Summary`] and `main` prints the `N passed, M failed` verdict.
//!
//! A test that needs what not every machine offers is listed in [`NEEDS`];
//! where the kernel finds at run time that this machine lacks it (today:
//! `int3` under a KVM that emulates instructions, see
//! `arch::hypervisor`), the test is not run and its line reads
//! `test NAME ... skipped: REASON`; the verdict then gains `, K skipped`
//! (`N passed, M failed, K skipped`). Where nothing is skipped the output
//! is as it always was.

use alloc::boxed::Box;
use alloc::format;
use alloc::string::String;
use alloc::sync::Arc;
use alloc::vec::Vec;
use core::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use crate::console::kprintln;
use crate::mm::{alloc_test, poison_test, slab, stack_test};
use crate::smp::{self, CpuSet};
use crate::sync::{fs_test, rcu};
use crate::time;

/// What a test body returns: `Err(reason)` fails it. The bodies live beside
/// the subsystems they test and share this type, [`ensure!`], [`ncpus`] and
/// [`wait_until`].
pub(crate) type TestResult = Result<(), String>;
type Test = (&'static str, fn() -> TestResult);

/// `ensure!(cond, "reason {x}")`: fail the test with the formatted reason
/// unless `cond` holds.
macro_rules! ensure {
    ($cond:expr, $($arg:tt)*) => {
        if !$cond {
            return Err(alloc::format!($($arg)*));
        }
    };
}
pub(crate) use ensure;

const TESTS: &[Test] = &[
    ("cmdline_parser", cmdline_parser),
    ("percpu_data", crate::arch::percpu_test::percpu_data),
    ("frame_alloc_all_cpus", alloc_test::frame_alloc_all_cpus),
    ("heap_large_all_cpus", alloc_test::heap_large_all_cpus),
    ("slab_all_cpus", alloc_test::slab_all_cpus),
    ("slab_cross_cpu_free", alloc_test::slab_cross_cpu_free),
    (
        "slab_fast_path_is_per_cpu",
        alloc_test::slab_fast_path_is_per_cpu,
    ),
    ("poison_clean_cycle", poison_test::clean_cycle),
    (
        "poison_write_after_free_counted",
        poison_test::write_after_free_counted,
    ),
    (
        "poison_freed_inode_reads_as_poison",
        poison_test::freed_inode_reads_as_poison,
    ),
    (
        "tsc_vs_reference_clock",
        time::clock_test::tsc_vs_reference_clock,
    ),
    (
        "clock_monotonic_across_cpus",
        time::clock_test::clock_monotonic_across_cpus,
    ),
    (
        "timer_ticks_on_every_cpu",
        time::clock_test::timer_ticks_on_every_cpu,
    ),
    ("cross_cpu_calls", smp::cross_cpu_test::cross_cpu_calls),
    ("ipi_delivery", smp::cross_cpu_test::ipi_delivery),
    ("rcu_waits_for_reader", rcu_waits_for_reader),
    ("rcu_call_rcu_all_cpus", rcu_call_rcu_all_cpus),
    ("rcu_grace_periods_idle", rcu_grace_periods_idle),
    ("rcu_async_callbacks", rcu_async_callbacks),
    (
        "rcu_call_rcu_without_segments",
        rcu_call_rcu_without_segments,
    ),
    (
        "rcu_call_rcu_nearly_full_heap",
        rcu_call_rcu_nearly_full_heap,
    ),
    (
        "exception_breakpoint",
        crate::arch::trap_test::exception_breakpoint,
    ),
    (
        "exception_page_fault",
        crate::arch::trap_test::exception_page_fault,
    ),
    ("guarded_stack", stack_test::guarded_stack),
    ("fs_platform", fs_test::fs_platform),
    (
        "fs_mkdir_stat_enoent_per_design",
        fs_test::fs_mkdir_stat_enoent_per_design,
    ),
    (
        "fs_lookups_all_cpus_per_design",
        fs_test::fs_lookups_all_cpus_per_design,
    ),
    (
        "fs_rcu_grace_period_reclaims_dentries",
        fs_test::fs_rcu_grace_period_reclaims_dentries,
    ),
    (
        "poison_rcu_lookup_counts_freed_dentry",
        poison_test::rcu_lookup_counts_freed_dentry,
    ),
    ("fs_enomem_is_an_answer", fs_test::fs_enomem_is_an_answer),
];

/// What a test needs beyond what every x86 machine we boot on offers.
#[derive(Clone, Copy, Debug)]
enum Needs {
    /// `int3` delivered to our #BP handler (an instruction-emulating KVM
    /// stops the whole VM instead).
    Breakpoint,
}

impl Needs {
    /// Why this machine lacks it, or `None` where it has it (decided by
    /// probing at run time, never by which host we are on).
    fn missing(self) -> Option<&'static str> {
        match self {
            Needs::Breakpoint => crate::arch::hypervisor::breakpoint_unsupported(),
        }
    }
}

/// The tests that need something of [`Needs`].
const NEEDS: &[(&str, Needs)] = &[("exception_breakpoint", Needs::Breakpoint)];

/// Why `name` cannot run on this machine, if it cannot.
fn skip_reason(name: &str) -> Option<&'static str> {
    NEEDS
        .iter()
        .filter(|(n, _)| *n == name)
        .find_map(|(_, needs)| needs.missing())
}

/// How the suite went. Prints as the verdict line: `N passed, M failed`,
/// with `, K skipped` appended when K is not 0.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Summary {
    pub passed: usize,
    pub failed: usize,
    pub skipped: usize,
}

impl core::fmt::Display for Summary {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(f, "{} passed, {} failed", self.passed, self.failed)?;
        if self.skipped > 0 {
            write!(f, ", {} skipped", self.skipped)?;
        }
        Ok(())
    }
}

/// Run every test this machine can run; returns the counts.
pub fn run() -> Summary {
    kprintln!(
        "selftest: {} tests on {} CPUs",
        TESTS.len(),
        smp::online_count()
    );
    let mut sum = Summary::default();
    for (name, test) in TESTS {
        if let Some(why) = skip_reason(name) {
            sum.skipped += 1;
            kprintln!("test {name} ... skipped: {why}");
            continue;
        }
        let t0 = time::now_ns();
        let r = test();
        let ms = (time::now_ns() - t0) / 1_000_000;
        match r {
            Ok(()) => {
                sum.passed += 1;
                kprintln!("test {name} ... ok ({ms} ms)");
            }
            Err(e) => {
                sum.failed += 1;
                kprintln!("test {name} ... FAILED: {e}");
            }
        }
        rcu::quiescent_state();
    }
    let (allocs, frees) = slab::totals(ncpus());
    let (_, heap_size, heap_used) = crate::mm::heap::stats();
    let (nfull, nempty, carved) = (0..slab::NCLASSES)
        .map(slab::depot_stats)
        .fold((0, 0, 0), |a, d| (a.0 + d.0, a.1 + d.1, a.2 + d.2));
    log::info!(
        "mm: {allocs} allocations, {frees} frees on {} CPUs; heap {} of {} KiB in use; depot {nfull} full/{nempty} empty magazines, {carved} slab objects",
        ncpus(),
        heap_used >> 10,
        heap_size >> 10
    );
    sum
}

/// CPUs the kernel knows (started or not).
pub(crate) fn ncpus() -> usize {
    smp::cpu_count()
}

/// Spin (with quiescent states) until `cond` or `timeout_ms`.
pub(crate) fn wait_until(timeout_ms: u64, cond: impl Fn() -> bool) -> bool {
    let deadline = time::now_ns() + timeout_ms * 1_000_000;
    while !cond() {
        if time::now_ns() > deadline {
            return false;
        }
        crate::arch::processor::pause();
    }
    true
}

fn cmdline_parser() -> TestResult {
    use kernel::cmdline::{parse, CmdlineError};
    let c = parse("selftest hz=250").map_err(|e| format!("{e}"))?;
    ensure!(c.selftest && c.hz == 250, "parsed {c:?}");
    ensure!(
        parse("bogus=1") == Err(CmdlineError::UnknownKey("bogus")),
        "bogus=1 accepted"
    );
    ensure!(parse("hz=x").is_err(), "hz=x accepted");
    Ok(())
}

/// Counts its drops: what an RCU callback freed (shared with `sync::fs_test`).
pub(crate) struct DropFlag(pub(crate) Arc<AtomicUsize>);

impl Drop for DropFlag {
    fn drop(&mut self) {
        self.0.fetch_add(1, Ordering::SeqCst);
    }
}

fn rcu_waits_for_reader() -> TestResult {
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

fn rcu_call_rcu_all_cpus() -> TestResult {
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

fn rcu_grace_periods_idle() -> TestResult {
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

fn rcu_async_callbacks() -> TestResult {
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
fn rcu_call_rcu_without_segments() -> TestResult {
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
fn rcu_call_rcu_nearly_full_heap() -> TestResult {
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
    while crate::mm::heap::may_alloc(BLOCK) && hog.len() < hog.capacity() {
        let mut b = Vec::new();
        if b.try_reserve_exact(BLOCK).is_err() {
            break;
        }
        hog.push(b);
    }
    let short = !crate::mm::heap::may_alloc(BLOCK);
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
