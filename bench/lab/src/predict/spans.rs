//! The spans of an operation at N CPUs: the design's workload on `N`
//! threads at once (each pinned to its own CPU), with the fs census timing
//! its windows and nothing else (`fs::stats::census_windows_begin`: no
//! line booked, so nothing shared is added), beside the same at one CPU.
//!
//! The model's sharing term turns 1-CPU spans (how long an operation's
//! dentry stays hashed, how long a miss takes to look in the dcache again
//! and to hash its own dentry, how long the slow part lasts) into how
//! often CPUs find each other's dentry at N; this measures what those
//! spans, and the sharing they lead to, really are at N, so the term's
//! errors can be told apart from the cost term's (docs/predict-probes.md,
//! "spans", and docs/scaling-model.md, "Where it does not hold"). `bench predict
//! --validate` times them in each round of a design that allocates and
//! prints the spans table (`tables::spans_table`).
//!
//! The census reads the clock at each span's ends (a few per missing op):
//! its ns per op are a little above a plain run's.
//!
//! Touches: a fresh tmpfs, the executor's first N CPUs, the fs census
//! (global: one at a time).

use std::sync::Barrier;
use std::time::{Duration, Instant};

use crate::exec::{pin_current_thread, HostExecutor};
use bench::params::Params;
use bench::workloads::Sys;

/// This module's path, which the spans table names as where its figures
/// are measured.
pub const MODULE: &str = module_path!();

/// What `tasks` CPUs did, per operation (all CPUs' operations together).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Spans {
    pub tasks: usize,
    /// Operations run under the census.
    pub ops: u64,
    /// CPU-nanoseconds per operation (wall time × tasks / operations).
    pub ns_per_op: f64,
    /// Per operation: walks that left RCU-walk for the name (a miss or a
    /// restart), dentries allocated, hashed by the operation's own walk,
    /// found in `d_alloc_parallel`, waits there, and restarts because a
    /// dentry changed under the walk (`DentrySeq`: at N CPUs, another
    /// CPU's dentry killed while this walk stood on it).
    pub slow: f64,
    pub allocs: f64,
    pub own_hash: f64,
    pub found: f64,
    pub waits: f64,
    pub restarts: f64,
    /// Mean nanoseconds: a dentry hashed (hash insert to unhash), a slow
    /// part (leaving RCU-walk to the walk's end), from leaving to
    /// `d_alloc_parallel`'s look, and from leaving to the walk's own hash.
    pub hashed_ns: f64,
    pub slow_ns: f64,
    pub lookup_ns: f64,
    pub own_hash_ns: f64,
}

impl Spans {
    /// Nanoseconds per operation outside slow parts: the RCU-walk part of
    /// every operation, the whole of one that found the name hashed.
    pub fn fast_ns(&self) -> f64 {
        self.ns_per_op - self.slow * self.slow_ns
    }
}

/// Run `p`'s workload (its design, lock kind and bench; not its task
/// count) on `tasks` CPUs for `run` after a warm-up of a quarter of it,
/// the windows timed during `run`.
pub fn at(p: &Params, exec: &HostExecutor, tasks: usize, run: Duration) -> Result<Spans, String> {
    let cpus = exec.cpus().to_vec();
    if cpus.len() < tasks || tasks == 0 {
        return Err(format!(
            "{tasks} tasks need as many CPUs ({} here)",
            cpus.len()
        ));
    }
    let vfs = bench::fresh_tmpfs(p).map_err(|e| format!("{p}: {e}"))?;
    let mut w = bench::workloads::boxed(p.bench);
    w.setup(&vfs, tasks)
        .map_err(|e| format!("{p}: setup: {e}"))?;
    let w = &*w;
    let warmup = run / 4;
    // Everyone warms up, then waits; the census starts between the two
    // waits, so it sees only the timed run.
    let warm = Barrier::new(tasks + 1);
    let go = Barrier::new(tasks + 1);
    let done = Barrier::new(tasks + 1);
    let (ops, wall, c) = std::thread::scope(|s| {
        let threads: Vec<_> = (0..tasks)
            .map(|t| {
                let (vfs, warm, go, done, cpu) = (&vfs, &warm, &go, &done, cpus[t]);
                s.spawn(move || {
                    pin_current_thread(cpu);
                    let platform = fs::platform::get();
                    let t0 = Instant::now();
                    while t0.elapsed() < warmup {
                        w.run_once(&Sys::walk(vfs), t);
                    }
                    platform.rcu_quiescent_state();
                    warm.wait();
                    go.wait();
                    let t1 = Instant::now();
                    let mut ops = 0u64;
                    let mut ok = true;
                    while t1.elapsed() < run {
                        for _ in 0..64 {
                            ok &= w.run_once(&Sys::walk(vfs), t);
                        }
                        ops += 64;
                        platform.rcu_quiescent_state();
                    }
                    done.wait();
                    (ops, ok)
                })
            })
            .collect();
        warm.wait();
        let before = fs::stats::snapshot();
        fs::stats::census_windows_begin();
        let t = Instant::now();
        go.wait();
        done.wait();
        let wall = t.elapsed();
        let spans = fs::stats::census_windows();
        let _ = fs::stats::census_end();
        let c = fs::stats::snapshot().delta(&before);
        let mut ops = 0;
        for (t, h) in threads.into_iter().enumerate() {
            match h.join() {
                Ok((n, true)) => ops += n,
                Ok((_, false)) => return Err(format!("{p}: task {t}: not {}", w.expected(t))),
                Err(_) => return Err(format!("{p}: task {t} panicked")),
            }
        }
        Ok((ops, wall, (c, spans)))
    })?;
    let (c, sp) = c;
    let per_op = |n: u64| n as f64 / ops.max(1) as f64;
    let mean = |ns: u64, n: u64| if n == 0 { 0.0 } else { ns as f64 / n as f64 };
    Ok(Spans {
        tasks,
        ops,
        ns_per_op: wall.as_nanos() as f64 * tasks as f64 / ops.max(1) as f64,
        slow: per_op(sp.slow),
        allocs: per_op(c.dentry_alloc),
        own_hash: per_op(sp.own_hash),
        found: per_op(c.parallel_found),
        waits: per_op(c.in_lookup_waits),
        restarts: per_op(c.fallbacks_by_reason[fs::stats::FallbackReason::DentrySeq as usize]),
        hashed_ns: mean(sp.hashed_ns, sp.hashed),
        slow_ns: mean(sp.slow_ns, sp.slow),
        lookup_ns: mean(sp.lookup_ns, sp.lookup),
        own_hash_ns: mean(sp.own_hash_ns, sp.own_hash),
    })
}

/// The figures [`Spans::values`] gives, in order: checks.csv's column
/// names (suffixed `_1` and `_2` there, for the 1-CPU and 2-CPU runs).
pub const COLUMNS: [&str; 11] = [
    "ns_per_op",
    "slow",
    "allocs",
    "own_hash",
    "found",
    "waits",
    "restarts",
    "hashed_ns",
    "slow_ns",
    "lookup_ns",
    "own_hash_ns",
];

impl Spans {
    /// The figures, in [`COLUMNS`]' order.
    pub fn values(&self) -> [f64; 11] {
        [
            self.ns_per_op,
            self.slow,
            self.allocs,
            self.own_hash,
            self.found,
            self.waits,
            self.restarts,
            self.hashed_ns,
            self.slow_ns,
            self.lookup_ns,
            self.own_hash_ns,
        ]
    }

    /// [`Spans::values`] back, for a run on `tasks` CPUs (0: not measured;
    /// the operation count is not kept).
    pub fn from_values(tasks: usize, v: &[f64; 11]) -> Spans {
        Spans {
            tasks,
            ops: 0,
            ns_per_op: v[0],
            slow: v[1],
            allocs: v[2],
            own_hash: v[3],
            found: v[4],
            waits: v[5],
            restarts: v[6],
            hashed_ns: v[7],
            slow_ns: v[8],
            lookup_ns: v[9],
            own_hash_ns: v[10],
        }
    }

    /// Share of the time the name is hashed: every CPU's hashes (its own
    /// walks', held on by finders included) times how long each lasts.
    /// Each CPU hashes `own_hash / ns_per_op` dentries per CPU-nanosecond.
    pub fn time_hashed(&self) -> f64 {
        if self.ns_per_op <= 0.0 {
            return 0.0;
        }
        (self.tasks as f64 * self.own_hash / self.ns_per_op * self.hashed_ns).min(1.0)
    }

    /// Share of the lookups that found the name hashed in RCU-walk: the
    /// hits, and the restarts (found it, then saw it killed).
    pub fn found_hashed(&self) -> f64 {
        1.0 - self.slow + self.restarts
    }

    /// The model's sharing term, fed these spans instead of its own (so
    /// that only its logic is judged; `predict::allocating_fraction`'s
    /// docs): with `r` allocating ops per CPU-nanosecond, `c = (N-1)·r·Δ`;
    /// the share of the allocating ops that find the name in
    /// `d_alloc_parallel` is `c/(1+c)`, and a lookup finds the name hashed
    /// with probability `H = (N-1)·r/(1+c)·(hashed window)`.
    pub fn term_at_these_spans(&self) -> (f64, f64) {
        if self.ns_per_op <= 0.0 || self.tasks < 2 {
            return (0.0, 0.0);
        }
        let others = self.tasks as f64 - 1.0;
        let r = self.allocs / self.ns_per_op;
        let c = others * r * self.lookup_ns;
        (
            c / (1.0 + c),
            (others * r / (1.0 + c) * self.hashed_ns).min(1.0),
        )
    }
}
