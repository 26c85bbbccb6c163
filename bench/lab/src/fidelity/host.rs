//! The host pairs: host mode (`bench host`, the stat frontend) beside
//! host Linux natively (`bench linux-stat --in-dir`), rounds in ABBA order.
//!
//! Touches: this program's `host` and `linux-stat` as child processes;
//! stats `nonexistent` in the pairs' directories.

use super::*;

/// One host-mode window: `bench host bench=statneg design=D tasks=N`
/// (the stat frontend, one real `getppid` per stat), natively.
pub(super) fn host_proto_window(a: &FidelityArgs, design: &str, tasks: u32) -> Result<f64, String> {
    let exe = std::env::current_exe().map_err(|e| format!("cannot find this program: {e}"))?;
    let mut cmd = Command::new(exe);
    cmd.arg("host").args([
        "bench=statneg".to_string(),
        format!("design={design}"),
        format!("tasks={tasks}"),
        format!("warmup={}", a.warmup),
        format!("secs={}", a.secs),
    ]);
    let out = run_window(cmd, "bench host", a)?;
    if !out.testcase.contains("frontend=stat") {
        return Err(format!("not the stat frontend: {}", out.testcase));
    }
    Ok(out.average as f64)
}

/// One host Linux window: `bench linux-stat --in-dir --dir DIR --tasks N`
/// (`newfstatat(AT_FDCWD, "nonexistent", &st, 0)` in DIR), after checking
/// that DIR is on `fstype`.
pub(super) fn host_linux_window(
    a: &FidelityArgs,
    dir: &Path,
    fstype: &str,
    tasks: u32,
) -> Result<f64, String> {
    let found = crate::linux::fs_type(dir);
    if found.as_deref() != Some(fstype) {
        return Err(format!(
            "{} is on {}, not {fstype} (name another with --host-{fstype}-dir)",
            dir.display(),
            found.as_deref().unwrap_or("an unknown filesystem")
        ));
    }
    let exe = std::env::current_exe().map_err(|e| format!("cannot find this program: {e}"))?;
    let mut cmd = Command::new(exe);
    cmd.arg("linux-stat")
        .arg("--in-dir")
        .arg("--dir")
        .arg(dir)
        .arg(format!("--tasks={tasks}"))
        .arg(format!("--warmup={}", a.warmup))
        .arg(format!("--secs={}", a.secs));
    Ok(run_window(cmd, "bench linux-stat", a)?.average as f64)
}

/// One window of this program run as `what`: its output read back, a
/// non-zero exit an error naming its last line on stderr.
fn run_window(cmd: Command, what: &str, a: &FidelityArgs) -> Result<output::RunOutput, String> {
    let f = run_with_timeout(cmd, Duration::from_secs(u64::from(a.warmup + a.secs) + 60))?;
    if f.code != Some(0) {
        return Err(format!(
            "{what} exit {:?}: {}",
            f.code,
            last_line(&f.stderr)
        ));
    }
    output::parse(&f.stdout).map_err(|e| format!("output: {e}"))
}

/// Which side of which host pair at how many tasks.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(super) enum HostJob {
    Proto(usize, u32),
    Linux(usize, u32),
}

/// The host windows of round `r`: every task count, every host pair, host
/// mode and host Linux side by side; every other round in reverse (ABBA).
pub(super) fn host_round_jobs(cpus: &[u32], r: u32) -> Vec<HostJob> {
    let mut jobs = Vec::new();
    for &n in cpus {
        for i in 0..HOST_PAIRS.len() {
            jobs.push(HostJob::Proto(i, n));
            jobs.push(HostJob::Linux(i, n));
        }
    }
    if r % 2 == 1 {
        jobs.reverse();
    }
    jobs
}

/// The ops/s of every window of job `j`, in round order.
fn host_side(got: &[(u32, HostJob, f64)], j: HostJob) -> Vec<f64> {
    got.iter()
        .filter(|(_, g, _)| *g == j)
        .map(|(_, _, x)| *x)
        .collect()
}

/// The host lines of one run: per task count and pair, each side's median
/// ops/s over the rounds (rounded to whole ops/s, as printed).
pub(super) fn host_lines(got: &[(u32, HostJob, f64)], cpus: &[u32]) -> Vec<HostLine> {
    let mut out = Vec::new();
    for &n in cpus {
        for (i, (d, k, _)) in HOST_PAIRS.iter().enumerate() {
            let side = |j: HostJob| host_side(got, j);
            let (Some(p), Some(l)) = (
                median(&side(HostJob::Proto(i, n))),
                median(&side(HostJob::Linux(i, n))),
            ) else {
                continue;
            };
            if p.round() > 0.0 && l.round() > 0.0 {
                out.push(HostLine {
                    design: d.to_string(),
                    linux: k.to_string(),
                    vcpus: n,
                    proto_ops: p.round(),
                    linux_ops: l.round(),
                });
            }
        }
    }
    out
}

/// Runs the host rounds and prints their windows, lines and spreads;
/// returns the failed windows.
pub(super) fn run_host_part(a: &FidelityArgs) -> Vec<String> {
    println!(
        "fidelity-setup part=host cpu={:?} rounds={} tasks={} warmup={} secs={} tmpfs_dir={} ext4_dir={} (host mode: bench host, frontend=stat, one getppid per stat; Linux: bench linux-stat --in-dir, newfstatat(AT_FDCWD, \"nonexistent\", &st, 0))",
        crate::host_cpu_model(),
        a.rounds,
        a.cpus.iter().map(u32::to_string).collect::<Vec<_>>().join(","),
        a.warmup,
        a.secs,
        a.host_tmpfs_dir.display(),
        a.host_ext4_dir.display(),
    );
    let mut got: Vec<(u32, HostJob, f64)> = Vec::new();
    let mut failures = Vec::new();
    for r in 0..a.rounds {
        for job in host_round_jobs(&a.cpus, r) {
            let ((res, name), load) = crate::sweep::load::around(|| match job {
                HostJob::Proto(i, n) => (
                    host_proto_window(a, HOST_PAIRS[i].0, n),
                    format!("host-mode {} tasks={n}", HOST_PAIRS[i].0),
                ),
                HostJob::Linux(i, n) => {
                    let (_, k, fstype) = HOST_PAIRS[i];
                    let dir = if fstype == "ext4" {
                        &a.host_ext4_dir
                    } else {
                        &a.host_tmpfs_dir
                    };
                    (
                        host_linux_window(a, dir, fstype, n),
                        format!("{k} tasks={n}"),
                    )
                }
            });
            match res {
                Ok(ops) => {
                    println!(
                        "fidelity-host-window round={r} {name} ops={ops:.0}{}",
                        load.words()
                    );
                    got.push((r, job, ops));
                }
                Err(e) => {
                    eprintln!("fidelity: host round {r} {name}: {e}");
                    failures.push(format!("host round {r} {name}"));
                }
            }
        }
    }
    for l in host_lines(&got, &a.cpus) {
        println!("{l}");
    }
    for &n in &a.cpus {
        for (i, (d, k, _)) in HOST_PAIRS.iter().enumerate() {
            let side = |j: HostJob| host_side(&got, j);
            let p = side(HostJob::Proto(i, n));
            println!(
                "fidelity-host-spread design={d} linux={k} vcpus={n} rounds={} proto_ops={} linux_ops={}",
                p.len(),
                ops_range(&p),
                ops_range(&side(HostJob::Linux(i, n)))
            );
        }
    }
    failures
}

/// `[MIN-MAX]` of rates, whole ops/s, or `none`.
pub(super) fn ops_range(xs: &[f64]) -> String {
    let lo = xs.iter().copied().fold(f64::INFINITY, f64::min);
    let hi = xs.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    if xs.is_empty() {
        "none".into()
    } else {
        format!("[{lo:.0}-{hi:.0}]")
    }
}
