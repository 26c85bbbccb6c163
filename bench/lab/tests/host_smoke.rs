//! Smoke runs of the real paths, 1 s each: host mode (the fs crate on two
//! threads), host Linux's stat() reference, and — when the kernel image and
//! the runner have been built — the guest under QEMU. Each checks that the
//! output parses and that every task did work.

use std::path::PathBuf;
use std::process::Command;

use benchlab::sweep::{default_kernel, default_runner, runner_accel};
use formats::output::parse;

fn bench_exe() -> Command {
    Command::new(env!("CARGO_BIN_EXE_bench"))
}

#[test]
fn host_mode_noalloc_two_tasks() {
    let out = bench_exe()
        .args([
            "host",
            "bench=statneg",
            "tasks=2",
            "design=noalloc",
            "warmup=0",
            "secs=1",
        ])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "exit {:?}\nstdout:\n{stdout}\nstderr:\n{stderr}",
        out.status
    );
    let r = parse(&stdout).unwrap_or_else(|e| panic!("{e}\n{stdout}"));
    assert_eq!(
        r.testcase,
        "non-existent file stat (tmpfs enoent=noalloc frontend=stat syscall=getppid)"
    );
    assert!(r.warmup.is_empty());
    assert_eq!(r.measurement.len(), 1);
    assert!(r.measurement[0].min > 0, "a task did nothing: {stdout}");
    assert_eq!(r.average, r.measurement[0].total);
    assert!(
        r.per_op.is_some(),
        "host mode prints the per-op line: {stdout}"
    );
}

/// `frontend=walk`: the walk alone, said on the `testcase:` line, and no
/// slower than the same run through the syscall-shaped stat (which adds a
/// names buffer, two copies and a real system call to each operation).
#[test]
fn host_mode_frontend_walk_is_named_and_faster() {
    let run = |frontend: &str| {
        let out = bench_exe()
            .args([
                "host",
                "bench=statneg",
                "design=negative",
                "warmup=0",
                "secs=1",
                frontend,
            ])
            .output()
            .unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
        assert!(out.status.success(), "{frontend}: {stdout}");
        parse(&stdout).unwrap_or_else(|e| panic!("{e}\n{stdout}"))
    };
    let walk = run("frontend=walk");
    assert_eq!(
        walk.testcase,
        "non-existent file stat (tmpfs enoent=negative frontend=walk)"
    );
    let stat = run("frontend=stat");
    assert!(stat.testcase.ends_with("frontend=stat syscall=getppid)"));
    // A real system call alone costs more than a negative-dentry walk.
    assert!(
        walk.average > stat.average,
        "walk {} ops/s, stat {} ops/s",
        walk.average,
        stat.average
    );
}

/// `statneg-owndir`: each task misses in its own directory, so two
/// transient tasks allocate every time yet move no counted line between
/// them; `statneg-distinct` (the same misses under one parent) does (only
/// a few per op when other tests load the machine and the two tasks take
/// turns on a core, but never none).
#[test]
fn host_mode_owndir_shares_no_counted_line() {
    let run = |bench: &str| {
        let out = bench_exe()
            .args([
                "host",
                bench,
                "tasks=2",
                "design=transient",
                "warmup=0",
                "secs=1",
            ])
            .output()
            .unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
        assert!(out.status.success(), "{bench}: {stdout}");
        let r = parse(&stdout).unwrap_or_else(|e| panic!("{e}\n{stdout}"));
        assert!(r.measurement[0].min > 0, "a task did nothing: {stdout}");
        (r, stdout)
    };
    // For one hash seed in 256 the two tasks' names fall in one in-lookup
    // bucket and share its lock (dcache.rs, `InLookupBucket`); each run
    // has a seed of its own, so three such runs in a row would take a line
    // shared for every seed.
    let mut runs = 0;
    let (own, stdout) = loop {
        let (r, stdout) = run("bench=statneg-owndir");
        runs += 1;
        let moved = r.per_op.as_ref().and_then(|p| p.transfers) != Some(0.0);
        if !moved || runs == 3 {
            break (r, stdout);
        }
    };
    assert_eq!(
        own.testcase,
        "non-existent file stat, one directory per task (tmpfs enoent=transient frontend=stat syscall=getppid)"
    );
    let p = own.per_op.expect("per-op line");
    assert!((p.allocs - 1.0).abs() < 0.01, "{stdout}");
    assert_eq!(p.transfers, Some(0.0), "{stdout}");
    let (distinct, stdout) = run("bench=statneg-distinct");
    let t = distinct.per_op.expect("per-op line").transfers;
    assert!(t.is_some_and(|t| t > 0.0), "{stdout}");
}

#[test]
fn host_mode_refuses_bad_words() {
    let out = bench_exe()
        .args(["host", "bench=statneg", "cpus=2"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("bench host: Unknown parameter `cpus' (ENOENT)")
            && stderr.contains("valid keys:")
            && stderr.contains("design="),
        "{stderr}"
    );
    assert!(out.stdout.is_empty());
}

#[test]
fn linux_stat_reference() {
    let out = bench_exe()
        .args([
            "linux-stat",
            "--dir",
            "/dev/shm",
            "--tasks",
            "2",
            "--warmup",
            "0",
            "--secs",
            "1",
        ])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let r = parse(&stdout).unwrap_or_else(|e| panic!("{e}\n{stdout}"));
    assert!(
        r.testcase.starts_with("non-existent file stat (linux "),
        "{}",
        r.testcase
    );
    assert!(r.measurement[0].min > 0);
    assert_eq!(r.per_op, None, "Linux has no fs counters");
}

/// Guest smoke: needs the kernel image and `qemu-run` (BENCH_KERNEL /
/// BENCH_RUNNER, else the default target paths). `make test` builds both
/// first; without them this test skips (fails under `REQUIRE_FIXTURES=1`).
#[test]
fn guest_two_vcpus() {
    let kernel = std::env::var_os("BENCH_KERNEL")
        .map(PathBuf::from)
        .unwrap_or_else(default_kernel);
    let runner = std::env::var_os("BENCH_RUNNER")
        .map(PathBuf::from)
        .unwrap_or_else(default_runner);
    if !kernel.is_file() || !runner.is_file() {
        qemu::fixtures::skip(
            "host_smoke",
            "the kernel image and qemu-run",
            format!("{} or {} missing", kernel.display(), runner.display()),
        );
        return;
    }
    let out = Command::new(&runner)
        .args([
            "--smp",
            "2",
            "--accel",
            "tcg",
            "--timeout",
            "120",
            "--cmdline",
        ])
        .arg("bench=statneg tasks=2 design=noalloc warmup=0 secs=1")
        .arg("--kernel")
        .arg(&kernel)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "exit {:?}\n{stdout}\n{stderr}",
        out.status
    );
    assert_eq!(runner_accel(&stderr).as_deref(), Some("tcg"), "{stderr}");
    let r = parse(&stdout).unwrap_or_else(|e| panic!("{e}\n{stdout}"));
    assert_eq!(r.measurement.len(), 1);
    assert!(r.measurement[0].min > 0, "{stdout}");
    assert!(r.per_op.is_some(), "{stdout}");
    // The guest stats through the syscall-shaped frontend by default, and
    // pays no system call cost yet (no calibrated constant).
    assert_eq!(
        r.testcase,
        "non-existent file stat (tmpfs enoent=noalloc frontend=stat syscall=none)"
    );
}

/// Host mode names what it measures with: the allocator (mimalloc, whose
/// remote frees take no lock, where glibc's took the arena lock), the
/// lock waiters' policy (spinning as the guest's with a core per task,
/// `+yield` with more tasks than cores, [`more_tasks_than_cores_yield`]), and the membarrier calls of the host RCU, none of
/// them in a noalloc window (nothing retired, no grace period).
#[test]
fn host_mode_names_allocator_lock_and_membarriers() {
    let out = bench_exe()
        .args([
            "host",
            "bench=statneg",
            "tasks=2",
            "design=noalloc",
            "warmup=1",
            "secs=1",
        ])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(stderr.contains("bench: allocator: mimalloc\n"), "{stderr}");
    // Two tasks on as many CPUs as the machine has, or more.
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    if cpus >= 2 {
        assert!(
            stderr
                .contains("bench: host lock=qspinlock (waiters spin as the guest's do: 2 tasks on"),
            "{stderr}"
        );
        assert!(!stderr.contains("spin yields"), "{stderr}");
    } else {
        assert!(stderr.contains("+yield (waiters yield after"), "{stderr}");
    }
    assert!(
        stderr.contains("bench: membarrier: 0 calls in the measured window, "),
        "{stderr}"
    );
}

/// `--in-dir`: the one component `nonexistent`, DIR the working directory
/// (the fidelity host pairs' shape), through `newfstatat`; a name that
/// exists is refused before any window.
#[test]
fn linux_stat_in_dir_stats_one_component_and_refuses_an_existing_name() {
    let dir = std::env::temp_dir().join(format!("linux-stat-in-dir-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let run = || {
        bench_exe()
            .args(["linux-stat", "--in-dir", "--dir"])
            .arg(&dir)
            .args(["--tasks", "1", "--warmup", "0", "--secs", "1"])
            .output()
            .unwrap()
    };
    let out = run();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stdout}");
    let r = parse(&stdout).unwrap_or_else(|e| panic!("{e}\n{stdout}"));
    assert!(
        r.testcase.ends_with("newfstatat \"nonexistent\")"),
        "{}",
        r.testcase
    );
    assert!(r.measurement[0].min > 0);
    std::fs::write(dir.join("nonexistent"), b"").unwrap();
    let out = run();
    let _ = std::fs::remove_dir_all(&dir);
    assert!(!out.status.success(), "an existing name must be refused");
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("exists"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// With more tasks than CPUs the host waiters give their thread away, and
/// the lock is named for it.
#[test]
fn more_tasks_than_cores_yield() {
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    let tasks = (cpus + 1).to_string();
    let out = bench_exe()
        .args([
            "host",
            "bench=statneg",
            &format!("tasks={tasks}"),
            "design=transient",
            "warmup=0",
            "secs=1",
        ])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(
        stderr.contains(&format!(
            "bench: host lock=qspinlock+yield (waiters yield after 5 us of spinning: {tasks} tasks on {cpus} CPUs"
        )),
        "{stderr}"
    );
}
