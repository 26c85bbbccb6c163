//! Stress tests of the lookup path in the guest (`stress=rcu|mem|oom`).
//!
//! Four tests, one module each: [`hostile`] (`stress=hostile`: distinct
//! misses from every CPU, memory must stay bounded), [`churn`]
//! (`stress=rcu`: RCU-walk lookups checked against concurrent churn, with
//! memory poisoning; named for what it does, so that it is not taken for
//! [`crate::sync::rcu`]), [`mem`] (`stress=mem`:
//! a million misses under the unused-dentry limit) and [`oom`]
//! (`stress=oom`: tmpfs filled until memory admission refuses). This module
//! holds what they share (settling the dcache and RCU, the design list) and
//! [`run`], which picks one and exits with its verdict.
//!
//! Touches: the fs crate (a fresh tmpfs per design, dcache limit and
//! shrinker), `smp`, RCU, `mm::poison` (on for `stress=rcu`), `mm::heap`
//! (figures), the console. Safe code only.

mod churn;
mod hostile;
mod mem;
mod oom;

use alloc::vec::Vec;

use bench::params::Design;
use fs::vfs::Vfs;
use fs::Errno;
use kernel::cmdline::Stress;

use crate::console::kprintln;
use crate::exit::{exit, ExitCode};
use crate::mm::poison;
use crate::smp::{self, CpuSet};
use crate::time;

use self::churn::{rcu_stress, reads_of_poison};
use self::hostile::hostile_stress;
use self::mem::mem_stress;
use self::oom::oom_stress;

fn show(path: &[u8]) -> &str {
    core::str::from_utf8(path).unwrap_or("?")
}

/// Live dentries by the fs counters.
fn live_dentries() -> i64 {
    let c = fs::stats::snapshot();
    c.dentry_alloc as i64 - c.dentry_free as i64
}

/// Shrink, then pass grace periods on every CPU until every queued RCU
/// callback has run and the live dentry count is `target` (or `timeout_ms`
/// passed). Returns the final live count.
pub fn settle(target: i64, timeout_ms: u64) -> i64 {
    settle_until(Some(target), timeout_ms)
}

/// Shrink and pass grace periods until no RCU callback is queued; returns
/// the live dentry count then (the baseline for a later [`settle`]).
pub fn drain(timeout_ms: u64) -> i64 {
    settle_until(None, timeout_ms)
}

fn settle_until(target: Option<i64>, timeout_ms: u64) -> i64 {
    let deadline = time::now_ns() + timeout_ms * 1_000_000;
    loop {
        fs::dcache::shrink_all();
        crate::sync::rcu::synchronize_rcu();
        smp::run_on(&CpuSet::all(), |_| crate::sync::rcu::quiescent_state());
        let pending: usize = (0..smp::cpu_count()).map(crate::sync::rcu::pending).sum();
        let live = live_dentries();
        if (pending == 0 && target.is_none_or(|t| live == t)) || time::now_ns() > deadline {
            return live;
        }
    }
}

/// A fresh tmpfs with `design`'s mount options and the directory `dir`
/// made in it; `None` (said on the console as `stress=TEST: ...`) when
/// either step fails.
fn scratch_tmpfs(test: &str, design: Design, dir: &[u8]) -> Option<Vfs> {
    let vfs = match Vfs::new_tmpfs(&design.mount_opts()) {
        Ok(v) => v,
        Err(e) => {
            kprintln!("stress={test}: tmpfs {}: {e}", design.mount_opts());
            return None;
        }
    };
    if let Err(e) = vfs.mkdir(dir, 0o755) {
        kprintln!("stress={test}: mkdir {}: {e}", show(dir));
        return None;
    }
    Some(vfs)
}

/// One CPU's answers to stats of names that must be missing: ENOENT is
/// right, ENOMEM (memory admission refused) is counted apart, anything
/// else is wrong.
#[derive(Clone, Copy, Default)]
struct Misses {
    enoent: u64,
    enomem: u64,
    wrong: u64,
}

impl Misses {
    /// Stat `path`, count the answer (printing the first three wrong ones as
    /// `stress=TEST: PATH: ANSWER`), and pass a quiescent state every 64
    /// stats so that this CPU never holds up a grace period for long.
    fn stat(&mut self, test: &str, vfs: &Vfs, path: &[u8]) {
        match vfs.stat(path) {
            Err(Errno::ENOENT) => self.enoent += 1,
            Err(Errno::ENOMEM) => self.enomem += 1,
            r => {
                self.wrong += 1;
                if self.wrong <= 3 {
                    kprintln!("stress={test}: {}: {r:?}", show(path));
                }
            }
        }
        if self.lookups().is_multiple_of(64) {
            crate::sync::rcu::quiescent_state();
        }
    }

    /// Stats counted.
    fn lookups(&self) -> u64 {
        self.enoent + self.enomem + self.wrong
    }

    /// Every CPU's counts added up.
    fn sum(per_cpu: &[(usize, Misses)]) -> Misses {
        per_cpu.iter().fold(Misses::default(), |a, (_, m)| Misses {
            enoent: a.enoent + m.enoent,
            enomem: a.enomem + m.enomem,
            wrong: a.wrong + m.wrong,
        })
    }
}

fn designs(only: Option<Design>) -> Vec<Design> {
    match only {
        Some(d) => alloc::vec![d],
        None => Design::all().collect(),
    }
}

/// Run the stress test `which` and exit with its verdict. `poisoning`:
/// `stress=rcu` with memory poisoning (the default; `poison=0` turns it off,
/// to measure what the checks cost).
pub fn run(which: Stress, secs: Option<u32>, design: Option<Design>, poisoning: bool) -> ! {
    match which {
        Stress::Rcu => {
            let secs = secs.unwrap_or(10);
            log::info!(
                "stress=rcu: {secs} s on {} CPUs (odd CPUs change the tree, even CPUs look up), poisoning {}",
                smp::online_count(),
                if poisoning { "on" } else { "off (poison=0)" }
            );
            let (p0, r0, t0) = (poison::totals(), reads_of_poison(), time::now_ns());
            let (mut v, lookups, leaked) = rcu_stress(secs, design, poisoning);
            let p = poison::totals().delta(&p0);
            kprintln!(
                "poison: freed_objects_checked={} writes_after_free={} reads_of_poison={} freed_objects_poisoned={} large_frees_poisoned={} ms={}",
                p.checked,
                p.violations,
                reads_of_poison() - r0,
                p.filled,
                p.large_filled,
                (time::now_ns() - t0) / 1_000_000
            );
            if poisoning && p.checked == 0 {
                // Poisoning was on and dentries were freed and reused: a
                // checker that checked nothing did not run.
                kprintln!("poison: no freed object was checked on reuse: the checker did not run");
                v += 1;
            }
            kprintln!("violations={v} lookups={lookups} leaked={leaked}");
            exit(if v == 0 && leaked == 0 {
                ExitCode::Success
            } else {
                ExitCode::TestsFailed
            })
        }
        Stress::Mem => {
            let ok = mem_stress(design);
            kprintln!("stress=mem: {}", if ok { "ok" } else { "FAILED" });
            exit(if ok {
                ExitCode::Success
            } else {
                ExitCode::TestsFailed
            })
        }
        Stress::Hostile => {
            let secs = secs.unwrap_or(60);
            let ok = hostile_stress(secs, design.unwrap_or_else(|| Design::named("negative")));
            kprintln!("stress=hostile: {}", if ok { "ok" } else { "FAILED" });
            exit(if ok {
                ExitCode::Success
            } else {
                ExitCode::TestsFailed
            })
        }
        Stress::Oom => {
            let ok = oom_stress(design);
            kprintln!("stress=oom: {}", if ok { "ok" } else { "FAILED" });
            exit(if ok {
                ExitCode::Success
            } else {
                ExitCode::TestsFailed
            })
        }
    }
}
