//! The line census run of `bench predict`: a workload's operations for two
//! tasks, taking turns on one thread, with the fs line census on.
//!
//! Why two tasks on one thread: the model prices only the lines that the
//! tasks share, and one task cannot tell them from its own (in
//! `statneg-owndir` each task's directory is stored to on every operation,
//! yet no other task touches it). Two tasks' operations, alternately, show
//! it: the census names the task before each operation
//! ([`fs::stats::census_task`]) and keeps, per line, which tasks stored to
//! it. On one thread nothing contends, so every time the census takes is
//! a 1-CPU time, and no operation finds the other task's transient dentry
//! hashed (each kills its own before the other starts).
//!
//! Touches: a fresh tmpfs of its own, the fs census (global: one census at
//! a time), this thread (pinned to `cpu` when given).

use std::time::{Duration, Instant};

use bench::params::Params;
use bench::workloads;
use bench::workloads::Sys;

/// Tasks whose operations take turns in a census run.
pub const TASKS: usize = 2;

/// What a census run saw.
pub struct CensusRun {
    /// The lines stored to, most-stored first.
    pub lines: Vec<fs::stats::LineCensus>,
    /// The two timed windows of each operation.
    pub windows: fs::stats::CensusWindows,
    /// Operations run under the census, and nanoseconds each took.
    pub ops: u64,
    pub ns_per_op: f64,
}

/// Quiescent states every this many operations (as the benchmark loop).
const QUIESCE_EVERY: u64 = 64;

/// Run `p`'s workload (its design, lock kind, warmup and seconds; not its
/// task count) for [`TASKS`] tasks taking turns on this thread, the census
/// on for the measured seconds.
pub fn run(p: &Params, cpu: Option<usize>) -> Result<CensusRun, String> {
    std::thread::scope(|s| {
        s.spawn(|| {
            if let Some(c) = cpu {
                let _ = super::super::exec::pin_current_thread(c);
            }
            run_here(p)
        })
        .join()
        .map_err(|_| format!("{p}: the census run panicked"))?
    })
}

fn run_here(p: &Params) -> Result<CensusRun, String> {
    let vfs = bench::fresh_tmpfs(p).map_err(|e| format!("{p}: {e}"))?;
    let mut w = workloads::boxed(p.bench);
    w.setup(&vfs, TASKS)
        .map_err(|e| format!("{p}: setup: {e}"))?;
    let w = &*w;
    let platform = fs::platform::get();
    // Run until `end`, alternating tasks; the number of operations run.
    let run_until = |end: Instant| -> Result<u64, String> {
        let mut ops = 0u64;
        loop {
            for t in 0..TASKS {
                fs::stats::census_task(Some(t));
                if !w.run_once(&Sys::walk(&vfs), t) {
                    return Err(format!("{p}: task {t}: not {}", w.expected(t)));
                }
                // The gap the 2-task run leaves after each operation
                // (`pause=`), so that the census' op times carry it too.
                bench::driver::gap(p.pause);
                ops += 1;
            }
            if ops.is_multiple_of(QUIESCE_EVERY) {
                platform.rcu_quiescent_state();
                if Instant::now() >= end {
                    return Ok(ops);
                }
            }
        }
    };
    let r = (|| {
        run_until(Instant::now() + Duration::from_secs(u64::from(p.warmup)))?;
        fs::stats::census_begin();
        let t0 = Instant::now();
        let ops = run_until(t0 + Duration::from_secs(u64::from(p.secs)));
        let elapsed = t0.elapsed();
        let (lines, _overflow) = fs::stats::census_end();
        let windows = fs::stats::census_windows();
        let ops = ops?;
        Ok(CensusRun {
            lines,
            windows,
            ops,
            ns_per_op: elapsed.as_nanos() as f64 / ops.max(1) as f64,
        })
    })();
    fs::stats::census_task(None);
    r
}
