//! What a cache-line move adds to a loop that does other work around it,
//! beside `bench pingpong`'s transfer latency measured just before.
//!
//! Two threads, pinned to the first two CPUs, each run `WORK` dependent
//! loads from an L1-resident table (its own), then one `fetch_add` on a
//! counter they share; the same loop on one thread alone is the baseline.
//! Per trial it prints the transfer latency, how often the counter moved
//! between the threads (per iteration, from the values `fetch_add` saw) and
//! the time that adds per iteration. docs/designs.md ("Where it stands")
//! quotes it: the move costs far less than the latency while the core has
//! independent work to run.
//!
//!     cargo run --release -p bench --example movecost [TRIALS]
//!
//! Touches: the first two CPUs, for about a second per trial.

use std::hint::black_box;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

use bench::host::exec::{pin_current_thread, HostExecutor};

/// Dependent loads between two `fetch_add`s (about 50 ns here).
const WORK: usize = 20;
const ITERS: u64 = 2_000_000;

#[repr(align(128))]
struct Counter(AtomicU64);

/// One thread's loop; returns (ns per iteration, iterations that found the
/// counter moved since this thread's last `fetch_add`).
fn run_loop(shared: &Counter, table: &[usize; 512]) -> (f64, u64) {
    let mut x = 0usize;
    let mut last = u64::MAX;
    let mut moved = 0;
    let t0 = Instant::now();
    for i in 0..ITERS {
        for k in 0..WORK {
            x = table[(x + k) & 511];
        }
        let seen = shared.0.fetch_add(1, Ordering::SeqCst);
        if seen != last.wrapping_add(1) {
            moved += 1;
        }
        last = seen;
        black_box(i);
    }
    black_box(x);
    (t0.elapsed().as_nanos() as f64 / ITERS as f64, moved)
}

fn threads(n: usize, cpus: &[usize]) -> (f64, f64) {
    let shared = Counter(AtomicU64::new(0));
    let table: [usize; 512] = core::array::from_fn(|i| (i * 97 + 13) & 511);
    let out: Vec<(f64, u64)> = std::thread::scope(|s| {
        let hs: Vec<_> = (0..n)
            .map(|t| {
                let (shared, table, cpu) = (&shared, table, cpus[t]);
                s.spawn(move || {
                    pin_current_thread(cpu);
                    run_loop(shared, &table)
                })
            })
            .collect();
        hs.into_iter().map(|h| h.join().unwrap()).collect()
    });
    let ns = out.iter().map(|o| o.0).sum::<f64>() / n as f64;
    let moved = out.iter().map(|o| o.1 as f64).sum::<f64>() / (n as f64 * ITERS as f64);
    (ns, moved)
}

fn main() {
    let trials: usize = std::env::args()
        .nth(1)
        .and_then(|t| t.parse().ok())
        .unwrap_or(6);
    let exec = HostExecutor::new(true);
    let cpus = exec.cpus().to_vec();
    if cpus.len() < 2 {
        eprintln!("movecost needs two CPUs");
        std::process::exit(1);
    }
    for _ in 0..trials {
        let tx = bench::pingpong::run(&exec, 50)
            .map(|p| p.transfer_ns)
            .unwrap_or(0.0);
        let (one, _) = threads(1, &cpus);
        let (two, moved) = threads(2, &cpus);
        println!(
            "movecost: transfer_ns={tx:.1} moved_per_iter={moved:.2} one_ns={one:.1} two_ns={two:.1} \
             added_ns={:.1} added_per_move_ns={:.1}",
            two - one,
            if moved > 0.0 { (two - one) / moved } else { 0.0 }
        );
    }
}
