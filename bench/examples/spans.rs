//! The spans of a design's operation at one CPU and at N, side by side:
//! how long its dentry stays hashed, how long a miss takes to look in the
//! dcache again and to hash its own dentry, how long the slow part lasts,
//! and how often the CPUs found each other's dentry
//! (`bench::host::predict::spans` says what is timed). docs/designs.md
//! ("The spans at two CPUs") quotes it:
//!
//!     cargo run --release -p bench --example spans [DESIGN [LOCK [N [TRIALS]]]]
//!
//! (defaults: transient, qspinlock, 2, 3). Each trial prints one line per
//! CPU count, with `bench pingpong`'s latency read before it.
//!
//! Touches: a fresh tmpfs per run, the first N CPUs, about 1 s per run.

use std::time::Duration;

use bench::host::exec::HostExecutor;
use bench::host::predict::spans;

const RUN: Duration = Duration::from_millis(400);

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let design = args.get(1).map_or("transient", String::as_str);
    let lock = args.get(2).map_or("qspinlock", String::as_str);
    let n: usize = args.get(3).and_then(|t| t.parse().ok()).unwrap_or(2);
    let trials: usize = args.get(4).and_then(|t| t.parse().ok()).unwrap_or(3);
    let exec = HostExecutor::new(true);
    let lock_word = if bench::host::predict::has_lock_word() {
        format!(" lock={lock}")
    } else {
        String::new()
    };
    let p = bench::params::Params::parse_line(&format!(
        "bench=statneg tasks=1 design={design}{lock_word} warmup=0 secs=1"
    ))
    .unwrap_or_else(|e| panic!("{e}"));
    for trial in 0..trials {
        let tx = bench::pingpong::run(&exec, 50)
            .map(|p| p.transfer_ns)
            .unwrap_or(0.0);
        for tasks in [1, n] {
            let s = spans::at(&p, &exec, tasks, RUN).unwrap_or_else(|e| {
                eprintln!("spans: {e}");
                std::process::exit(1)
            });
            println!(
                "spans: trial={trial} transfer_ns={tx:.1} cpus={tasks} ns_per_op={:.0} \
                 fast_ns={:.0} slow={:.3} allocs={:.3} own_hash={:.3} found={:.3} waits={:.3} \
                 restarts={:.3} hashed_ns={:.0} slow_ns={:.0} lookup_ns={:.0} own_hash_ns={:.0}",
                s.ns_per_op,
                s.fast_ns(),
                s.slow,
                s.allocs,
                s.own_hash,
                s.found,
                s.waits,
                s.restarts,
                s.hashed_ns,
                s.slow_ns,
                s.lookup_ns,
                s.own_hash_ns
            );
        }
    }
}
