//! `bench fidelity` (`make fidelity`, issue 52): does the prototype's
//! verdict on the ENOENT designs match Linux's? The prototype's designs in
//! its guest kernel and their Linux 7.3.4 counterparts (transient ↔
//! vanilla, negative ↔ negative, noalloc ↔ noalloc) in the reference guest,
//! the same statneg (`newfstatat` of `/nonexistent`, one component in the
//! root of a tmpfs) under the same accelerator (TCG), one boot per window,
//! in rounds whose order alternates so that both sides meet the same
//! machine. Per pair and CPU count one line:
//!
//! ```text
//! fidelity design=D linux=K vcpus=N proto_ratio=X linux_ratio=Y error_pct=E rank_agrees=yes|no
//! ```
//!
//! Ratios are to each side's baseline (transient / vanilla) in the same
//! round, the median over rounds; `error_pct` is how far the prototype's
//! ratio is from Linux's. The table is printed with the guest's system call
//! constant (measured in the Linux guests by a `getppid` loop, the median of
//! every boot's figure) added to the prototype's time per stat
//! ([`with_syscall`]) and without it, each from two figures of a window: its
//! average and its fastest second (`fidelity-table estimator=…
//! syscall=with|without` heads each block). `fidelity-spread` lines give
//! each ratio's range over the rounds, `fidelity-ops` the median ops/s,
//! `fidelity-counters` the prototype's per-op counters from the same timed
//! windows beside Linux's. Linux's need kprobes, which stretch the run they
//! count, so each Linux boot runs a second window after the timed one with
//! the counting probes armed (`--no-probes` leaves it out): the counters
//! come from it, and the line states the distortion as the probed window's
//! ops/s over the timed one's in the same boot (`linux_rate_ratio`).
//! Each `fidelity-window` and `fidelity-host-window` line ends with the
//! machine around that window (`eff_cpus`, `others_cpus`, `steal`:
//! [`crate::sweep::load::around`]), so a window run beside other work shows it.
//! `fidelity-cost` lines split each ratio's error into its two sides: per
//! design, the prototype's time per stat (the constant paid) over Linux's
//! in the same round ([`costs`]). A design's ratio error is the baseline's
//! cost ratio over the design's, so these say which side's miss the
//! prototype prices wrongly.
//!
//! Both guests run on the same QEMU CPU model (`-cpu qemu64`, the reference
//! guest's [`linuxref::LINUX_TCG_CPU`]; our kernel falls back from RDRAND
//! to its TSC mix there), printed on the `fidelity-setup` header line and
//! checked against what `qemu-run` reports for every prototype window.
//!
//! The host pairs ([`HOST_PAIRS`]) set host mode (`bench host`, the stat
//! frontend: one real `getppid` per stat) beside host Linux natively
//! (`bench linux-stat --in-dir`: `newfstatat(AT_FDCWD, "nonexistent", &st,
//! 0)` with the directory as the working directory, the prototype's path
//! shape): transient ↔ tmpfs, negative ↔ ext4, at each CPU count as tasks,
//! in rounds of their own whose order alternates. They compare ops/s, one
//! line per pair and task count ([`HostLine`]):
//!
//! ```text
//! fidelity design=D linux=host-FS vcpus=N proto_ops=X linux_ops=Y error_pct=E
//! ```
//!
//! Touches: child processes (`qemu-run` booting our kernel, QEMU booting
//! the Linux guests through `qemu::linuxref::run_fidelity`, this program's
//! `host` and `linux-stat` for the host pairs), files under
//! `build/fidelity/`; stats `nonexistent` in the host pairs' directories.

use std::fmt;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use formats::output::{self, PerOp};
use qemu::linuxref::{self, FidelityRun};

use crate::proc::{last_line, run_with_timeout};

mod cost;
mod host;
mod ratio;
#[cfg(test)]
mod tests;

pub use cost::*;
use host::*;
pub use ratio::*;

/// The prototype's designs and their Linux 7.3.4 builds; `None`: no Linux
/// counterpart. The first is each side's baseline.
pub const PAIRS: [(&str, Option<&str>); 4] = [
    ("transient", Some("vanilla")),
    ("negative", Some("negative")),
    ("noalloc", Some("noalloc")),
    ("negbound", None),
];

/// `bench fidelity`'s settings.
#[derive(clap::Args, Debug, Clone)]
pub struct FidelityArgs {
    /// Rounds; each boots every design and kernel once per CPU count, the
    /// order reversed every other round.
    #[arg(long, default_value_t = 5, value_parser = clap::value_parser!(u32).range(1..=100))]
    pub rounds: u32,
    /// vCPU counts (one task or thread per vCPU).
    #[arg(long, value_delimiter = ',', default_value = "1,2")]
    pub cpus: Vec<u32>,
    /// Warm-up seconds of each window.
    #[arg(long, default_value_t = 1)]
    pub warmup: u32,
    /// Measured seconds of each window.
    #[arg(long, default_value_t = 2)]
    pub secs: u32,
    /// Seconds of each Linux boot's getppid loop.
    #[arg(long, default_value_t = 1)]
    pub calib_secs: u32,
    /// Leave out each Linux boot's second, probed window (the counting
    /// kprobes armed: Linux's per-op counters and their distortion).
    #[arg(long)]
    pub no_probes: bool,
    /// The prototype's kernel ELF (default: the workspace's release build).
    #[arg(long)]
    pub kernel: Option<PathBuf>,
    /// The QEMU runner (default: the workspace's release qemu-run).
    #[arg(long)]
    pub runner: Option<PathBuf>,
    /// Build directory (default: the workspace's build/).
    #[arg(long)]
    pub build_dir: Option<PathBuf>,
    /// Which parts run: `guest` (both guests under TCG), `host` (host mode
    /// beside host Linux natively).
    #[arg(long, value_delimiter = ',', default_value = "guest,host")]
    pub parts: Vec<Part>,
    /// The host pair transient ↔ tmpfs stats `nonexistent` in this
    /// directory (it must be on tmpfs).
    #[arg(long, default_value = "/dev/shm")]
    pub host_tmpfs_dir: PathBuf,
    /// The host pair negative ↔ ext4 stats `nonexistent` in this directory
    /// (it must be on ext4: `findmnt -t ext4` lists them).
    #[arg(long, default_value = "/tmp")]
    pub host_ext4_dir: PathBuf,
}

/// A part of `bench fidelity`.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum Part {
    /// The prototype's guest beside the Linux 7.3.4 guests, under TCG.
    Guest,
    /// Host mode beside host Linux, natively.
    Host,
}

/// One window's result.
#[derive(Clone, Debug)]
struct Window {
    /// The measurement's average ops/s.
    ops: f64,
    /// Its fastest second's ops (the second least disturbed by the
    /// machine's other work).
    best: f64,
    per_op: Option<PerOp>,
    getppid_ns: Option<f64>,
    /// A Linux boot's probed window: its ops/s and per-op counters.
    probed: Option<(f64, linuxref::ProbedPerOp)>,
}

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// One prototype boot: `bench=statneg design=D tasks=N` under TCG.
fn proto_window(
    a: &FidelityArgs,
    kernel: &Path,
    runner: &Path,
    design: &str,
    vcpus: u32,
) -> Result<Window, String> {
    let words = format!(
        "bench=statneg design={design} tasks={vcpus} warmup={} secs={}",
        a.warmup, a.secs
    );
    let limit = Duration::from_secs(u64::from(a.warmup + a.secs) + 120);
    let mut cmd = Command::new(runner);
    cmd.args([
        "--smp",
        &vcpus.to_string(),
        "--accel",
        "tcg",
        "--cmdline",
        &words,
    ])
    .args(["--cpu", linuxref::LINUX_TCG_CPU])
    .arg("--kernel")
    .arg(kernel)
    .args(["--timeout", &(limit.as_secs() - 10).to_string()]);
    let f = run_with_timeout(cmd, limit)?;
    if f.code != Some(0) {
        return Err(format!(
            "qemu-run exit {:?}: {}",
            f.code,
            last_line(&f.stderr)
        ));
    }
    let cpu = crate::proc::runner_cpu(&f.stderr);
    if cpu.as_deref() != Some(linuxref::LINUX_TCG_CPU) {
        return Err(format!(
            "qemu-run ran CPU model {cpu:?}, not the Linux guests' {}",
            linuxref::LINUX_TCG_CPU
        ));
    }
    let out = output::parse(&f.stdout).map_err(|e| format!("output: {e}"))?;
    if !out.testcase.contains("frontend=stat") {
        return Err(format!("not the stat frontend: {}", out.testcase));
    }
    Ok(Window {
        ops: out.average as f64,
        best: out.max_total() as f64,
        per_op: out.per_op,
        getppid_ns: None,
        probed: None,
    })
}

/// The Linux side's inputs, checked before any round runs: each paired
/// kernel's image and the cached 7.3 reference initramfs (what `make
/// linux-patched-build LINUX_RELEASE=7.3` builds; `make fidelity` runs it
/// first).
fn missing_linux_inputs(build: &Path) -> Result<(), String> {
    let mut need: Vec<PathBuf> = PAIRS
        .iter()
        .filter_map(|(_, k)| *k)
        .map(|k| build.join("kbuild-7.3").join(k).join("bzImage"))
        .collect();
    need.push(build.join("linuxref/7.3/initramfs.gz"));
    let missing: Vec<String> = need
        .iter()
        .filter(|p| !p.is_file())
        .map(|p| p.display().to_string())
        .collect();
    if missing.is_empty() {
        Ok(())
    } else {
        Err(format!(
            "the Linux side needs {} (run `make linux-patched-build LINUX_RELEASE=7.3`)",
            missing.join(", ")
        ))
    }
}

fn linux_window(
    a: &FidelityArgs,
    build: &Path,
    kernel: &str,
    vcpus: u32,
) -> Result<Window, String> {
    let r = FidelityRun {
        kernel: kernel.into(),
        image: build.join("kbuild-7.3").join(kernel).join("bzImage"),
        base_initramfs: build.join("linuxref/7.3/initramfs.gz"),
        vcpus,
        warmup: a.warmup,
        secs: a.secs,
        calib_secs: a.calib_secs,
        probed: !a.no_probes,
    };
    for p in [&r.image, &r.base_initramfs] {
        if !p.is_file() {
            return Err(format!(
                "{} is missing (make linux-patched-build LINUX_RELEASE=7.3 builds it)",
                p.display()
            ));
        }
    }
    let boot = linuxref::retry_on_panic(|| linuxref::run_fidelity(&r, build, false));
    boot.report_first_crash(&format!("fidelity: 7.3.4-{kernel}"));
    let rep = boot.result.map_err(|e| e.to_string())?;
    Ok(Window {
        ops: rep.wis.average as f64,
        best: rep.wis.max_total() as f64,
        per_op: None,
        getppid_ns: rep.getppid_ns,
        probed: rep
            .probed
            .as_ref()
            .and_then(|p| Some((p.wis.average as f64, p.per_op()?))),
    })
}

/// Which figure of a window a ratio divides.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Estimator {
    /// The measurement's average ops/s.
    Average,
    /// Its fastest second: on a shared machine the seconds the guest was
    /// descheduled least, on both sides alike.
    BestSecond,
}

impl Estimator {
    fn name(self) -> &'static str {
        match self {
            Estimator::Average => "average",
            Estimator::BestSecond => "best-second",
        }
    }
}

/// Which side and what of one window.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Job {
    Proto(usize, u32),
    Linux(usize, u32),
}

/// The windows of round `r`: every CPU count, every pair, the prototype's
/// and Linux's side by side; every other round in reverse.
fn round_jobs(cpus: &[u32], r: u32) -> Vec<Job> {
    let mut jobs = Vec::new();
    for &n in cpus {
        for (i, (_, linux)) in PAIRS.iter().enumerate() {
            jobs.push(Job::Proto(i, n));
            if linux.is_some() {
                jobs.push(Job::Linux(i, n));
            }
        }
    }
    if r % 2 == 1 {
        jobs.reverse();
    }
    jobs
}

/// Runs every round and prints the tables. Err when any window failed
/// (the tables are still printed from those that ran).
pub fn run(a: &FidelityArgs) -> Result<(), String> {
    let ws = workspace();
    let kernel = a
        .kernel
        .clone()
        .unwrap_or_else(|| ws.join("target/x86_64-unknown-none/release/kernel"));
    let runner = a
        .runner
        .clone()
        .unwrap_or_else(|| ws.join("target/release/qemu-run"));
    let build = a
        .build_dir
        .clone()
        .unwrap_or_else(linuxref::default_build_dir);
    if a.parts.contains(&Part::Guest) {
        missing_linux_inputs(&build)?;
    }
    let t0 = Instant::now();
    let mut failures = Vec::new();
    if a.parts.contains(&Part::Guest) {
        failures.extend(run_guest_part(a, &kernel, &runner, &build));
    }
    if a.parts.contains(&Part::Host) {
        failures.extend(run_host_part(a));
    }
    println!("fidelity-time secs={:.0}", t0.elapsed().as_secs_f64());
    if failures.is_empty() {
        Ok(())
    } else {
        Err(format!(
            "{} windows failed: {}",
            failures.len(),
            failures.join(", ")
        ))
    }
}

/// Runs the guest rounds and prints their windows and tables; returns the
/// failed windows.
fn run_guest_part(a: &FidelityArgs, kernel: &Path, runner: &Path, build: &Path) -> Vec<String> {
    println!(
        "fidelity-setup part=guest accel=tcg cpu={} rounds={} vcpus={} warmup={} secs={} (the same QEMU CPU model for our kernel and the Linux guests)",
        linuxref::LINUX_TCG_CPU,
        a.rounds,
        a.cpus.iter().map(u32::to_string).collect::<Vec<_>>().join(","),
        a.warmup,
        a.secs,
    );
    // [round][job] results, keyed by job.
    let mut got: Vec<(u32, Job, Window)> = Vec::new();
    let mut failures = Vec::new();
    for r in 0..a.rounds {
        for job in round_jobs(&a.cpus, r) {
            let (res, load) = crate::sweep::load::around(|| match job {
                Job::Proto(i, n) => proto_window(a, kernel, runner, PAIRS[i].0, n),
                Job::Linux(i, n) => linux_window(a, build, PAIRS[i].1.unwrap_or(""), n),
            });
            let name = match job {
                Job::Proto(i, n) => format!("proto {} vcpus={n}", PAIRS[i].0),
                Job::Linux(i, n) => format!("7.3.4-{} vcpus={n}", PAIRS[i].1.unwrap_or("")),
            };
            match res {
                Ok(w) => {
                    println!(
                        "fidelity-window round={r} {name} ops={:.0} best_second={:.0}{}{}{}",
                        w.ops,
                        w.best,
                        w.getppid_ns
                            .map_or(String::new(), |g| format!(" getppid_ns={g:.1}")),
                        w.probed
                            .map_or(String::new(), |(o, _)| format!(" probed_ops={o:.0}")),
                        load.words()
                    );
                    got.push((r, job, w));
                }
                Err(e) => {
                    eprintln!("fidelity: round {r} {name}: {e}");
                    failures.push(format!("round {r} {name}"));
                }
            }
        }
    }
    let calib: Vec<f64> = got.iter().filter_map(|(_, _, w)| w.getppid_ns).collect();
    let syscall_ns = median(&calib);
    println!(
        "fidelity-calibration accel=tcg getppid_ns={} boots={} range={} (the Linux guests' getppid loop, median; the same for every design and CPU count)",
        syscall_ns.map_or("none".into(), |c| format!("{c:.1}")),
        calib.len(),
        range(&calib),
    );
    let tables = [
        (Estimator::Average, syscall_ns),
        (Estimator::Average, None),
        (Estimator::BestSecond, syscall_ns),
        (Estimator::BestSecond, None),
    ];
    for (est, c) in tables {
        println!(
            "fidelity-table estimator={} syscall={} syscall_ns={}",
            est.name(),
            if c.is_some() { "with" } else { "without" },
            c.map_or("0".into(), |c| format!("{c:.1}"))
        );
        for &n in &a.cpus {
            let rows = ratios(&got, a.rounds, n, c.unwrap_or(0.0), est);
            for l in lines(&rows, n) {
                println!("{l}");
            }
            for row in &rows {
                println!(
                    "fidelity-spread design={} vcpus={n} rounds={} proto={} linux={}",
                    row.design,
                    values(&row.proto).len(),
                    range(&values(&row.proto)),
                    range(&values(&row.linux_rounds))
                );
            }
        }
    }
    for &n in &a.cpus {
        for (i, (d, k)) in PAIRS.iter().enumerate() {
            let ops = |side: fn(usize, u32) -> Job| -> Vec<f64> {
                got.iter()
                    .filter(|(_, j, _)| *j == side(i, n))
                    .map(|(_, _, w)| w.ops)
                    .collect()
            };
            let pops = ops(Job::Proto);
            let lops = ops(Job::Linux);
            let po: Vec<PerOp> = got
                .iter()
                .filter(|(_, j, _)| *j == Job::Proto(i, n))
                .filter_map(|(_, _, w)| w.per_op)
                .collect();
            let pmed = |f: fn(&PerOp) -> f64| {
                median(&po.iter().map(f).collect::<Vec<_>>())
                    .map_or("none".into(), |x| format!("{x:.3}"))
            };
            println!(
                "fidelity-ops design={d} linux={} vcpus={n} proto_ops={:.0} linux_ops={}",
                k.unwrap_or("none"),
                median(&pops).unwrap_or(0.0),
                median(&lops).map_or("none".into(), |x| format!("{x:.0}"))
            );
            // Linux's counters come from each boot's probed window; the
            // rate ratio (probed / unprobed ops/s of the same boot) says how
            // much the probes stretched the run they counted.
            let lw: Vec<&Window> = got
                .iter()
                .filter(|(_, j, _)| *j == Job::Linux(i, n))
                .map(|(_, _, w)| w)
                .filter(|w| w.probed.is_some())
                .collect();
            let lmed = |f: fn(&Window) -> f64| {
                median(&lw.iter().map(|w| f(w)).collect::<Vec<_>>())
                    .map_or("none".into(), |x| format!("{x:.3}"))
            };
            let linux = if k.is_none() {
                "linux=none".to_string()
            } else if lw.is_empty() {
                "linux=not-counted".to_string()
            } else {
                format!(
                    "linux=probed linux_allocs={} linux_fallbacks={} linux_rwsem={} linux_locks={} linux_unprobed_ops={} linux_probed_ops={} linux_rate_ratio={}",
                    lmed(|w| w.probed.map_or(f64::NAN, |p| p.1.allocs)),
                    lmed(|w| w.probed.map_or(f64::NAN, |p| p.1.fallbacks)),
                    lmed(|w| w.probed.map_or(f64::NAN, |p| p.1.rwsem)),
                    lmed(|w| w.probed.map_or(f64::NAN, |p| p.1.locks)),
                    median(&lw.iter().map(|w| w.ops).collect::<Vec<_>>())
                        .map_or("none".into(), |x| format!("{x:.0}")),
                    median(&lw.iter().map(|w| w.probed.map_or(f64::NAN, |p| p.0)).collect::<Vec<_>>())
                        .map_or("none".into(), |x| format!("{x:.0}")),
                    lmed(|w| w.probed.map_or(f64::NAN, |p| p.0) / w.ops),
                )
            };
            println!(
                "fidelity-counters design={d} vcpus={n} proto_allocs={} proto_fallbacks={} proto_rwsem={} proto_locks={} {linux}",
                pmed(|p| p.allocs),
                pmed(|p| p.fallbacks),
                pmed(|p| p.rwsem.unwrap_or(f64::NAN)),
                pmed(|p| p.locks),
            );
        }
    }
    for &n in &a.cpus {
        for c in costs(&got, a.rounds, n, syscall_ns.unwrap_or(0.0)) {
            println!("{}", c.line(n));
        }
    }
    failures
}

/// Per design at `vcpus`: the ratio of each round where both it and the
/// baseline ran, on each side; the prototype's with `syscall_ns` added
/// per stat ([`with_syscall`]).
fn ratios(
    got: &[(u32, Job, Window)],
    rounds: u32,
    vcpus: u32,
    syscall_ns: f64,
    est: Estimator,
) -> Vec<Ratios> {
    let find = |r: u32, job: Job| {
        got.iter()
            .find(|(gr, j, _)| *gr == r && *j == job)
            .map(|(_, _, w)| match est {
                Estimator::Average => w.ops,
                Estimator::BestSecond => w.best,
            })
    };
    PAIRS
        .iter()
        .enumerate()
        .map(|(i, (d, k))| {
            let mut proto = Vec::new();
            let mut lin = Vec::new();
            for r in 0..rounds {
                if let (Some(x), Some(b)) =
                    (find(r, Job::Proto(i, vcpus)), find(r, Job::Proto(0, vcpus)))
                {
                    let (x, b) = (
                        with_syscall(x, vcpus, syscall_ns),
                        with_syscall(b, vcpus, syscall_ns),
                    );
                    proto.push((b > 0.0).then(|| x / b));
                } else {
                    proto.push(None);
                }
                if let (Some(x), Some(b)) =
                    (find(r, Job::Linux(i, vcpus)), find(r, Job::Linux(0, vcpus)))
                {
                    lin.push((b > 0.0).then(|| x / b));
                } else {
                    lin.push(None);
                }
            }
            Ratios {
                design: d.to_string(),
                linux: k.map(str::to_string),
                proto,
                linux_rounds: lin,
            }
        })
        .collect()
}
