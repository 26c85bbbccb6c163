//! `benchlab::predict::spans` on this machine: at one CPU every miss of
//! the transient design hashes its own dentry and finds nobody's; at two
//! (where there are two CPUs) every allocation either hashed its own or
//! found the other CPU's, and the spans are timed. Its own process: the
//! census and the counters are global.

use std::sync::Mutex;
use std::time::Duration;

use bench::params::Params;
use benchlab::exec::HostExecutor;
use benchlab::predict::spans;

/// The census and the counters are global: one test at a time.
static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

fn transient() -> Params {
    Params::parse_line("bench=statneg tasks=1 design=transient warmup=0 secs=1").unwrap()
}

#[test]
fn one_cpu_hashes_its_own_and_finds_nothing() {
    let _turn = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let exec = HostExecutor::new(false);
    let s = spans::at(&transient(), &exec, 1, Duration::from_millis(60)).unwrap();
    assert!(s.ops > 1000, "{s:?}");
    assert_eq!((s.slow, s.allocs, s.own_hash), (1.0, 1.0, 1.0), "{s:?}");
    assert_eq!((s.found, s.waits, s.restarts), (0.0, 0.0, 0.0), "{s:?}");
    // The spans nest: the look in the dcache, then the hash, inside the
    // slow part, inside the operation.
    assert!(0.0 < s.lookup_ns && s.lookup_ns < s.own_hash_ns, "{s:?}");
    assert!(
        s.own_hash_ns < s.slow_ns && s.slow_ns < s.ns_per_op,
        "{s:?}"
    );
    assert!(s.hashed_ns > 0.0 && s.fast_ns() > 0.0, "{s:?}");
    // noalloc never leaves RCU-walk: nothing to time.
    let p = Params::parse_line("bench=statneg tasks=1 design=noalloc warmup=0 secs=1").unwrap();
    let n = spans::at(&p, &exec, 1, Duration::from_millis(30)).unwrap();
    assert_eq!((n.slow, n.allocs, n.hashed_ns), (0.0, 0.0, 0.0), "{n:?}");
}

#[test]
fn two_cpus_hash_or_find() {
    let _turn = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let exec = HostExecutor::new(false);
    if exec.cpus().len() < 2 {
        eprintln!("one CPU here: the 2-CPU spans are not measured");
        return;
    }
    let s = spans::at(&transient(), &exec, 2, Duration::from_millis(100)).unwrap();
    assert!((s.own_hash + s.found - s.allocs).abs() < 1e-9, "{s:?}");
    assert!(s.slow > 0.0 && s.slow <= 1.0, "{s:?}");
    assert!(s.hashed_ns > 0.0 && s.own_hash_ns < s.slow_ns, "{s:?}");
}
