//! What a move of the parent's lines costs a lookup, measured on the
//! workload itself: `statneg` on one CPU, while a *thief* on a second CPU
//! takes and drops a reference on the parent (the tmpfs root) and does
//! nothing else, `P` spin-wait hints apart.
//!
//! The thief runs no lookup, allocates nothing and shares no name, so the
//! sharing term and the convoy of two lookups are out of play: what the
//! victim loses is what its visits pay when the parent's lockref line (and
//! the `Arc` count beside it) was taken by another CPU at a random instant.
//! The thief's reference updates carry its writer tag, so the victim's
//! `transfers` count how often its counted stores found the line moved;
//! its `locks` count the lockref fast paths that found the lock word busy
//! and took the lock instead.
//!
//! Each trial runs the victim alone, then beside the thief, three times
//! over, and prints one line per pair with `bench pingpong`'s latency read
//! before the trial. docs/designs.md ("Where it stands") quotes it beside
//! `movecost`:
//!
//!     cargo run --release -p bench --example stealcost [DESIGN [P,P,...] [TRIALS]]
//!
//! (defaults: transient, 16,64, 3).
//!
//! Touches: a fresh tmpfs, the first two CPUs, for about 5 s per trial and
//! gap.

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use bench::host::exec::{pin_current_thread, HostExecutor};
use fs::vfs::Vfs;

/// How long the victim runs per measurement (after a short warm-up).
const RUN: Duration = Duration::from_millis(400);
const WARMUP: Duration = Duration::from_millis(100);

/// What the victim did in one measurement, per operation.
struct Victim {
    ns: f64,
    transfers: f64,
    locks: f64,
}

/// Run `w` on `cpu` for [`RUN`], quiescing every 64 operations as the
/// benchmark loop does.
fn victim(vfs: &Vfs, w: &dyn bench::workloads::Workload, cpu: usize) -> Victim {
    pin_current_thread(cpu);
    let platform = fs::platform::get();
    let t = Instant::now();
    while t.elapsed() < WARMUP {
        w.run_once(vfs, 0);
    }
    let c0 = fs::stats::snapshot_this_cpu();
    let t0 = Instant::now();
    let mut ops = 0u64;
    while t0.elapsed() < RUN {
        for _ in 0..64 {
            assert!(w.run_once(vfs, 0), "not {}", w.expected(0));
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

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let design = args.get(1).map_or("transient", String::as_str);
    let gaps: Vec<u32> = args
        .get(2)
        .map(|s| s.split(',').map(|x| x.parse().expect("P,P,...")).collect())
        .unwrap_or_else(|| vec![16, 64]);
    let trials: usize = args.get(3).and_then(|t| t.parse().ok()).unwrap_or(3);
    let exec = HostExecutor::new(true);
    let cpus = exec.cpus().to_vec();
    if cpus.len() < 2 {
        eprintln!("stealcost needs two CPUs");
        std::process::exit(1);
    }
    let p = bench::params::Params::parse_line(&format!(
        "bench=statneg tasks=1 design={design} warmup=0 secs=1"
    ))
    .unwrap_or_else(|e| panic!("{e}"));
    let vfs = bench::fresh_tmpfs(&p).unwrap_or_else(|e| panic!("{e}"));
    let mut w = bench::workloads::boxed(p.bench);
    w.setup(&vfs, 1).unwrap_or_else(|e| panic!("{e}"));
    let w = &*w;
    let (_, root) = fs::namei::resolve(&vfs, b"/", Default::default()).expect("the root");
    for trial in 0..trials {
        let tx = bench::pingpong::run(&exec, 50)
            .map(|p| p.transfer_ns)
            .unwrap_or(0.0);
        for &gap in &gaps {
            for _ in 0..3 {
                let alone = std::thread::scope(|s| s.spawn(|| victim(&vfs, w, cpus[0])).join());
                let alone = alone.expect("the victim panicked");
                let stop = AtomicBool::new(false);
                let (beside, steals) = std::thread::scope(|s| {
                    let thief = s.spawn(|| {
                        pin_current_thread(cpus[1]);
                        let mut n = 0u64;
                        while !stop.load(Ordering::Relaxed) {
                            drop(root.dget());
                            bench::driver::gap(gap);
                            n += 1;
                        }
                        n
                    });
                    let v = s.spawn(|| victim(&vfs, w, cpus[0])).join();
                    stop.store(true, Ordering::Relaxed);
                    let n = thief.join().expect("the thief panicked");
                    (v.expect("the victim panicked"), n)
                });
                let added = beside.ns - alone.ns;
                let ops = RUN.as_nanos() as f64 / beside.ns;
                println!(
                    "stealcost: trial={trial} transfer_ns={tx:.1} pause={gap} alone_ns={:.0} \
                     beside_ns={:.0} added_ns={added:.0} steals_per_op={:.2} transfers_per_op={:.2} \
                     fallbacks_per_op={:.2} added_per_transfer_ns={:.0}",
                    alone.ns,
                    beside.ns,
                    // The thief's loops per victim op (approximate: the
                    // thief also runs while the victim warms up).
                    steals as f64 / ops / ((RUN + WARMUP).as_secs_f64() / RUN.as_secs_f64()),
                    beside.transfers,
                    beside.locks - alone.locks,
                    if beside.transfers > 0.0 {
                        added / beside.transfers
                    } else {
                        0.0
                    }
                );
            }
        }
    }
}
