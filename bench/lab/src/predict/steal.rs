//! What one move of the parent's lines costs a lookup, measured on the
//! workload itself: the design's operations on one CPU, alone and then
//! while a *thief* on a second CPU takes and drops a reference on the
//! parent (the tmpfs root), `gap` spin-wait hints apart, and does nothing
//! else (docs/predict-probes.md, "stealcost").
//!
//! The thief runs no lookup, allocates nothing and shares no name, so the
//! sharing term and the convoy of two lookups are out of play: what the
//! victim loses is what its visits pay when the parent's lines were taken
//! at a random instant. The victim is also measured beside a thief that
//! only spins, with the same gap and no line touched: a VM may place the
//! two vCPUs on one core's hardware threads, where any busy neighbour
//! slows the victim, and the price is the difference between the two.
//! The thief's reference updates carry its writer tag,
//! so the victim's `transfers` count how often its counted stores found the
//! line moved. Each loop of the thief moves two lines, the lockref word's
//! (counted) and the `Arc` count beside it (not counted), and the victim
//! visits both together, so a counted transfer stands for
//! [`LINES_PER_STEAL`] moves.
//!
//! `bench predict --validate` prices each round's allocating ops with it
//! beside the model's `t_x` (the *at measured sharing and move price*
//! column).
//!
//! Touches: a fresh tmpfs, the first two CPUs, for `3 × (run + warm-up)`
//! per pair.

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use crate::exec::{pin_current_thread, HostExecutor};
use bench::params::Params;
use bench::workloads::Sys;
use bench::workloads::Workload;
use fs::vfs::Vfs;

/// Line moves a counted transfer of the victim stands for (the lockref
/// line and the `Arc` count beside it).
pub const LINES_PER_STEAL: f64 = 2.0;

/// The thief's gap between its loops (spin-wait hints): about one loop
/// per victim operation here, so the victim's visits find the lines moved
/// about once per op without the thief holding them all the time.
pub const GAP: u32 = 16;

/// The victim's measurements alone, beside a thief that only spins, and
/// beside the thief, per operation.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Pair {
    pub alone_ns: f64,
    pub spin_ns: f64,
    pub beside_ns: f64,
    /// The victim's counted transfers per op beside the thief.
    pub transfers: f64,
    /// Lockref fast paths per op that found the lock word busy and took
    /// the lock instead (the victim's extra `locks` beside the thief, over
    /// those beside the spinner).
    pub fallbacks: f64,
    /// The thief's loops per victim op (approximate: the thief also runs
    /// while the victim warms up).
    pub steals: f64,
    /// Of the thief's loops, the share whose `dget` or `dput` found the
    /// parent's lock held by the victim and took the lock itself (it then
    /// spins on the victim's lock line).
    pub thief_locked: f64,
}

impl Pair {
    /// Nanoseconds per op the thief's moves added: beside the thief less
    /// beside the spinner.
    pub fn added_ns(&self) -> f64 {
        self.beside_ns - self.spin_ns
    }
    /// Added nanoseconds per counted transfer, where there were enough to
    /// divide by (one in ten ops).
    pub fn per_transfer_ns(&self) -> Option<f64> {
        (self.transfers >= 0.1).then(|| self.added_ns() / self.transfers)
    }
}

/// What the victim did in one measurement.
struct Victim {
    ns: f64,
    transfers: f64,
    locks: f64,
}

/// Run `w` on `cpu` for `run` after `warmup`, quiescing every 64
/// operations as the benchmark loop does.
fn victim(vfs: &Vfs, w: &dyn Workload, cpu: usize, run: Duration, warmup: Duration) -> Victim {
    pin_current_thread(cpu);
    let platform = fs::platform::get();
    let t = Instant::now();
    while t.elapsed() < warmup {
        w.run_once(&Sys::walk(vfs), 0);
    }
    let c0 = fs::stats::snapshot_this_cpu();
    let t0 = Instant::now();
    let mut ops = 0u64;
    while t0.elapsed() < run {
        for _ in 0..64 {
            assert!(w.run_once(&Sys::walk(vfs), 0), "not {}", w.expected(0));
        }
        ops += 64;
        platform.rcu_quiescent_state();
    }
    let ns = t0.elapsed().as_nanos() as f64;
    let c1 = fs::stats::snapshot_this_cpu();
    let per = |n: u64| n as f64 / ops as f64;
    Victim {
        ns: ns / ops as f64,
        transfers: per(c1.transfers - c0.transfers),
        locks: per(c1.locks - c0.locks),
    }
}

/// `n` pairs of `p`'s workload (one task; its design and lock kind) on the
/// executor's first CPU, alone and beside a thief on the second `gap`
/// hints apart, each measurement `run` long after a warm-up of a quarter
/// of it.
pub fn pairs(
    p: &Params,
    exec: &HostExecutor,
    gap: u32,
    n: usize,
    run: Duration,
) -> Result<Vec<Pair>, String> {
    let cpus = exec.cpus().to_vec();
    if cpus.len() < 2 {
        return Err("the move price needs two CPUs".into());
    }
    let vfs = bench::fresh_tmpfs(p).map_err(|e| format!("{p}: {e}"))?;
    let mut w = bench::workloads::boxed(p.bench);
    w.setup(&vfs, 1).map_err(|e| format!("{p}: {e}"))?;
    let w = &*w;
    let (_, root) = fs::namei::resolve(vfs.mnt_ns(), b"/", Default::default())
        .map_err(|e| format!("/: {e:?}"))?;
    let warmup = run / 4;
    // The victim beside a second CPU that loops `gap` hints apart, taking
    // and dropping the parent's reference each loop or not: the victim's
    // figures and the loops.
    let beside = |steal: bool| -> Result<(Victim, u64, u64), String> {
        let stop = AtomicBool::new(false);
        let (v, loops) = std::thread::scope(|s| {
            let thief = s.spawn(|| {
                pin_current_thread(cpus[1]);
                let c0 = fs::stats::snapshot_this_cpu();
                let mut n = 0u64;
                while !stop.load(Ordering::Relaxed) {
                    if steal {
                        drop(root.dget());
                    }
                    bench::driver::gap(gap);
                    n += 1;
                }
                (n, fs::stats::snapshot_this_cpu().locks - c0.locks)
            });
            let v = s.spawn(|| victim(&vfs, w, cpus[0], run, warmup)).join();
            stop.store(true, Ordering::Relaxed);
            (v, thief.join())
        });
        let v = v.map_err(|_| "the victim panicked")?;
        let (loops, locked) = loops.map_err(|_| "the thief panicked")?;
        Ok((v, loops, locked))
    };
    let mut out = Vec::with_capacity(n);
    for _ in 0..n {
        let alone =
            std::thread::scope(|s| s.spawn(|| victim(&vfs, w, cpus[0], run, warmup)).join())
                .map_err(|_| "the victim panicked")?;
        let (spin, _, _) = beside(false)?;
        let (stolen, steals, locked) = beside(true)?;
        let ops = run.as_nanos() as f64 / stolen.ns;
        let spans = (run + warmup).as_secs_f64() / run.as_secs_f64();
        out.push(Pair {
            alone_ns: alone.ns,
            spin_ns: spin.ns,
            beside_ns: stolen.ns,
            transfers: stolen.transfers,
            fallbacks: stolen.locks - spin.locks,
            steals: steals as f64 / ops / spans,
            thief_locked: locked as f64 / steals.max(1) as f64,
        });
    }
    Ok(out)
}

/// Nanoseconds one move of a line costs the victim: the cheapest pair's
/// added time per counted transfer over [`LINES_PER_STEAL`]; `None` where
/// no pair moved a counted line often enough (a design that shares none of
/// the parent's lines). Never below 0 (a pair the thief did not slow).
///
/// The cheapest, not the median: in the measured runs most pairs read 78–135 ns
/// per counted transfer at either latency and about one in three
/// 215–517 ns, with as many transfers per op and the thief taking the lock
/// less often in the dear ones, not more. What makes a pair dear has not
/// been found, so it is left out of the price.
pub fn move_ns(pairs: &[Pair]) -> Option<f64> {
    let cheapest = pairs
        .iter()
        .filter_map(Pair::per_transfer_ns)
        .fold(f64::INFINITY, f64::min);
    cheapest
        .is_finite()
        .then(|| (cheapest / LINES_PER_STEAL).max(0.0))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pair(spin_ns: f64, beside_ns: f64, transfers: f64) -> Pair {
        Pair {
            alone_ns: spin_ns,
            spin_ns,
            beside_ns,
            transfers,
            fallbacks: 0.0,
            steals: 1.0,
            thief_locked: 0.0,
        }
    }

    #[test]
    fn a_move_is_the_cheapest_pair_per_line() {
        // 120, 80 and 200 ns per counted transfer: the cheapest is 80, two
        // lines a transfer, 40 ns a move.
        let v = [
            pair(500.0, 620.0, 1.0),
            pair(500.0, 580.0, 1.0),
            pair(500.0, 700.0, 1.0),
        ];
        assert_eq!(v[0].added_ns(), 120.0);
        // What the spinner alone costs the victim (a shared core) is not
        // the moves'.
        let slowed = Pair {
            alone_ns: 400.0,
            ..v[0]
        };
        assert_eq!(slowed.added_ns(), 120.0);
        assert_eq!(move_ns(&v), Some(40.0));
        // Pairs without counted transfers do not count; none at all: no
        // price. A thief that sped the victim up prices nothing below 0.
        assert_eq!(move_ns(&[pair(500.0, 900.0, 0.01)]), None);
        assert_eq!(move_ns(&[]), None);
        assert_eq!(move_ns(&[pair(500.0, 450.0, 1.0)]), Some(0.0));
    }
}
