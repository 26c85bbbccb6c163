//! Guest benchmarks: `bench=NAME tasks=N design=D warmup=S secs=S` on the
//! kernel command line runs `bench`'s workload with `bench`'s driver on N
//! CPUs (one pinned task per CPU) and prints will-it-scale's format on the
//! console, exactly as host mode does.
//!
//! The kernel is the driver's [`Executor`]: tasks run through
//! `smp::run_on` on the first N online CPUs; with one task per CPU and no
//! preemption, task 0 (the boot CPU) does the sampling inline
//! (`concurrent_monitor` = false). Quiescent states: the workload body
//! reports one every `POLL_EVERY` iterations (callbacks of the transient
//! design run there), and every wait here reports them too.
//!
//! Touches: the console, `smp` (CPU sets), `time`, RCU quiescent states,
//! and the fs crate through `bench`. Safe code only.

use core::fmt;

use bench::driver::{Executor, RunError, Summary};
use bench::params::Params;

use crate::console::kprintln;
use crate::exit::{exit, ExitCode};
use crate::smp::{self, CpuSet};
use crate::sync::rcu;
use crate::time;

/// The kernel as the driver's executor.
pub struct KernelExecutor;

impl Executor for KernelExecutor {
    fn max_tasks(&self) -> usize {
        smp::online_count().min(bench::params::MAX_TASKS)
    }

    fn now_ns(&self) -> u64 {
        time::now_ns()
    }

    fn wait_until(&self, deadline_ns: u64) {
        while time::now_ns() < deadline_ns {
            rcu::quiescent_state();
            crate::arch::processor::pause();
        }
    }

    fn concurrent_monitor(&self) -> bool {
        false
    }

    fn run(&self, n: usize, task: &(dyn Fn(usize) + Sync), monitor: &mut dyn FnMut()) {
        // Inline monitoring: this returns at once; task 0 samples.
        monitor();
        let set = CpuSet::first(n);
        let cpus: alloc::vec::Vec<usize> = set.iter().collect();
        smp::run_on(&set, |cpu| {
            if let Some(i) = cpus.iter().position(|&c| c == cpu) {
                task(i);
            }
            rcu::quiescent_state();
        });
    }
}

/// `fmt::Write` onto the serial console.
pub struct Console;

impl fmt::Write for Console {
    fn write_str(&mut self, s: &str) -> fmt::Result {
        crate::console::print(format_args!("{s}"));
        Ok(())
    }
}

/// Heap figures for the log line after a run: (talc bytes in use, live
/// allocations = allocs - frees, RCU callbacks queued).
pub fn memory_figures() -> (usize, u64, usize) {
    let n = smp::cpu_count();
    let (allocs, frees) = crate::mm::slab::totals(n);
    let (_, _, used) = crate::mm::heap::stats();
    let pending = (0..n).map(rcu::pending).sum();
    (used, allocs.saturating_sub(frees), pending)
}

/// Run one benchmark to `out`; checks the task count first (a clear error
/// rather than the driver's).
pub fn run_to<W: fmt::Write + Send>(p: &Params, out: &mut W) -> Result<Summary, RunError> {
    let max = KernelExecutor.max_tasks();
    if p.tasks > max {
        return Err(RunError::Tasks {
            asked: p.tasks,
            max,
        });
    }
    bench::run_params(p, &KernelExecutor, out)
}

/// `demo=pingpong`: bench's cache-line pingpong between the first two
/// CPUs (21 batches of 100 round trips: under TCG each handoff can wait for
/// a host time slice), its `pingpong:` line on the console. False if it could not run
/// (one CPU online).
pub fn pingpong() -> bool {
    match bench::pingpong::run_with(&KernelExecutor, 21, 100) {
        Ok(r) => {
            kprintln!("{r}");
            true
        }
        Err(e) => {
            kprintln!("pingpong: {e} ({} online)", smp::online_count());
            false
        }
    }
}

/// `bench=…`: run, print, exit (0 when the run succeeded).
pub fn run(p: &Params) -> ! {
    let (used0, live0, _) = memory_figures();
    log::info!("bench: {p} on {} online CPUs", smp::online_count());
    fs::sync::pvqspinlock::events::reset();
    let r = run_to(p, &mut Console);
    let ev = fs::sync::pvqspinlock::events::read();
    // Warmup and measurement together; zero unless lock=pvqspinlock.
    kprintln!(
        "pvqspinlock: steals={} head_locks={} head_wait_max_us={}",
        ev.steals,
        ev.head_locks,
        ev.head_wait_max_ns / 1000
    );
    // Let every CPU pass quiescent states so the run's callbacks drain.
    rcu::synchronize_rcu();
    let (used, live, pending) = memory_figures();
    log::info!(
        "bench: heap {} -> {} KiB in use (slab chunks never shrink: this is the high-water mark), live allocations {live0} -> {live}, RCU callbacks queued {pending}",
        used0 >> 10,
        used >> 10
    );
    match r {
        Ok(_) => exit(ExitCode::Success),
        Err(e @ RunError::Tasks { .. }) => {
            kprintln!(
                "bench: {e} (boot with -smp {} or more for tasks={})",
                p.tasks,
                p.tasks
            );
            exit(ExitCode::RunFailed)
        }
        Err(e) => {
            kprintln!("bench: {e}");
            exit(ExitCode::RunFailed)
        }
    }
}
