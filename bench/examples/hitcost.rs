//! What a hit costs while another CPU misses in the same directory: one
//! CPU stats an existing file (`/file`, found in RCU-walk: it reads the
//! root's and the file's dentries and stores nothing) alone, then beside a
//! second CPU that stats a missing name of the same directory under the
//! transient design (allocating and killing a dentry under the root's lock
//! each time: the root's lines move), then beside one that stats `/file`
//! too (nothing moves). The difference is what an RCU-walk's reads of the
//! parent's lines cost it when the other CPU writes them, which the model
//! does not charge (docs/designs.md, "The spans in every check").
//!
//!     cargo run --release -p bench --example hitcost [TRIALS [DEPTH]]
//!
//! (default 4 trials, depth 0). With DEPTH > 0 the file and the missing
//! name sit DEPTH directories down (`/d0/d1/file`), so the walk also reads
//! the directories' inodes the misses lock. Each trial prints one line per
//! neighbour with `bench pingpong`'s latency read before it.
//!
//! Touches: a fresh tmpfs, the first two CPUs, about 1.5 s per trial.

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use bench::host::exec::{pin_current_thread, HostExecutor};
use fs::vfs::Vfs;

const RUN: Duration = Duration::from_millis(400);

/// ns per `stat(name)` on this thread over `RUN`, quiescing every 64 ops.
fn stats_of(v: &Vfs, name: &[u8]) -> f64 {
    let p = fs::platform::get();
    let t = Instant::now();
    let mut n = 0u64;
    while t.elapsed() < RUN {
        for _ in 0..64 {
            assert!(v.stat(name).is_ok(), "{}", String::from_utf8_lossy(name));
        }
        n += 64;
        p.rcu_quiescent_state();
    }
    t.elapsed().as_nanos() as f64 / n as f64
}

fn main() {
    let arg = |i: usize, d: usize| {
        std::env::args()
            .nth(i)
            .and_then(|t| t.parse().ok())
            .unwrap_or(d)
    };
    let (trials, depth) = (arg(1, 4), arg(2, 0));
    let exec = HostExecutor::new(true);
    let cpus = exec.cpus().to_vec();
    if cpus.len() < 2 {
        eprintln!("hitcost: needs two CPUs");
        std::process::exit(1);
    }
    let v = Vfs::new_tmpfs("enoent=transient").expect("tmpfs");
    let mut dir = String::new();
    for i in 0..depth {
        dir.push_str(&format!("/d{i}"));
        v.mkdir(dir.as_bytes(), 0o755).expect("mkdir");
    }
    let file = format!("{dir}/file");
    let missing = format!("{dir}/missing");
    let (file, missing) = (file.as_bytes(), missing.as_bytes());
    v.write_file(file, b"x").expect("the file");
    let on = |cpu: usize, f: &(dyn Fn() -> f64 + Sync)| -> f64 {
        std::thread::scope(|s| {
            s.spawn(|| {
                pin_current_thread(cpu);
                f()
            })
            .join()
            .expect("the reader panicked")
        })
    };
    for trial in 0..trials {
        let tx = bench::pingpong::run(&exec, 50)
            .map(|p| p.transfer_ns)
            .unwrap_or(0.0);
        let alone = on(cpus[0], &|| stats_of(&v, file));
        for other in [missing, file] {
            let stop = AtomicBool::new(false);
            let beside = std::thread::scope(|s| {
                s.spawn(|| {
                    pin_current_thread(cpus[1]);
                    let p = fs::platform::get();
                    let mut i = 0u64;
                    while !stop.load(Ordering::Relaxed) {
                        let _ = v.stat(other);
                        i += 1;
                        if i.is_multiple_of(64) {
                            p.rcu_quiescent_state();
                        }
                    }
                });
                let ns = on(cpus[0], &|| stats_of(&v, file));
                stop.store(true, Ordering::Relaxed);
                ns
            });
            println!(
                "hitcost: trial={trial} transfer_ns={tx:.1} alone_ns={alone:.0} beside={} \
                 beside_ns={beside:.0} added_ns={:.0}",
                String::from_utf8_lossy(other),
                beside - alone
            );
        }
    }
}
