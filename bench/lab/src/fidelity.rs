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

/// The prototype's designs and their Linux 7.3.4 builds; `None`: no Linux
/// counterpart. The first is each side's baseline.
pub const PAIRS: [(&str, Option<&str>); 4] = [
    ("transient", Some("vanilla")),
    ("negative", Some("negative")),
    ("noalloc", Some("noalloc")),
    ("negbound", None),
];

/// One `fidelity …` line.
#[derive(Clone, Debug, PartialEq)]
pub struct Line {
    pub design: String,
    /// The Linux build; `None`: the design has none (printed `none`, and so
    /// are the Linux-side figures).
    pub linux: Option<String>,
    pub vcpus: u32,
    pub proto_ratio: f64,
    pub linux_ratio: Option<f64>,
    pub rank_agrees: Option<bool>,
}

impl Line {
    /// `(proto / linux - 1) * 100`: how far the prototype's ratio is from
    /// Linux's, in percent of Linux's.
    pub fn error_pct(&self) -> Option<f64> {
        self.linux_ratio.map(|l| error_pct(self.proto_ratio, l))
    }

    /// Reads a line `Display` wrote.
    pub fn parse(line: &str) -> Result<Line, String> {
        let mut w = line.split_whitespace();
        if w.next() != Some("fidelity") {
            return Err(format!("not a fidelity line: {line:?}"));
        }
        const KEYS: [&str; 7] = [
            "design",
            "linux",
            "vcpus",
            "proto_ratio",
            "linux_ratio",
            "error_pct",
            "rank_agrees",
        ];
        let mut v: [Option<&str>; 7] = [None; 7];
        for (i, word) in w.enumerate() {
            let (k, val) = word
                .split_once('=')
                .ok_or_else(|| format!("{word:?} is not KEY=VALUE"))?;
            if KEYS.get(i) != Some(&k) {
                return Err(format!("{k}= where {:?} belongs", KEYS.get(i)));
            }
            v[i] = Some(val);
        }
        let get = |i: usize| v[i].ok_or_else(|| format!("no {}= in {line:?}", KEYS[i]));
        let num = |i: usize| -> Result<Option<f64>, String> {
            match get(i)? {
                "none" => Ok(None),
                s => s
                    .parse::<f64>()
                    .ok()
                    .filter(|x| x.is_finite())
                    .map(Some)
                    .ok_or_else(|| format!("{}={s} is not a number", KEYS[i])),
            }
        };
        let linux = match get(1)? {
            "none" => None,
            k => Some(k.to_string()),
        };
        let rank_agrees = match get(6)? {
            "yes" => Some(true),
            "no" => Some(false),
            "none" => None,
            s => return Err(format!("rank_agrees={s} is not yes, no or none")),
        };
        let l = Line {
            design: get(0)?.to_string(),
            linux,
            vcpus: get(2)?
                .parse()
                .map_err(|_| format!("vcpus={} is not a count", v[2].unwrap_or("")))?,
            proto_ratio: num(3)?.ok_or("proto_ratio=none")?,
            linux_ratio: num(4)?,
            rank_agrees,
        };
        if (
            l.linux.is_none(),
            l.linux_ratio.is_none(),
            l.rank_agrees.is_none(),
        ) != (l.linux.is_none(), l.linux.is_none(), l.linux.is_none())
        {
            return Err(format!(
                "a line with linux={} needs every Linux figure, one without none",
                get(1)?
            ));
        }
        Ok(l)
    }
}

impl fmt::Display for Line {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let opt =
            |x: Option<f64>, prec: usize| x.map_or("none".to_string(), |x| format!("{x:.prec$}"));
        write!(
            f,
            "fidelity design={} linux={} vcpus={} proto_ratio={:.3} linux_ratio={} error_pct={} rank_agrees={}",
            self.design,
            self.linux.as_deref().unwrap_or("none"),
            self.vcpus,
            self.proto_ratio,
            opt(self.linux_ratio, 3),
            opt(self.error_pct(), 1),
            match self.rank_agrees {
                Some(true) => "yes",
                Some(false) => "no",
                None => "none",
            }
        )
    }
}

/// The host pairs: the prototype's design in host mode, the name of its
/// Linux counterpart on the `fidelity` line, and the filesystem host Linux
/// answers on (its native miss behaves as the design does: tmpfs keeps no
/// negative dentry, ext4 keeps one).
pub const HOST_PAIRS: [(&str, &str, &str); 2] = [
    ("transient", "host-tmpfs", "tmpfs"),
    ("negative", "host-ext4", "ext4"),
];

/// One host pair's `fidelity …` line: ops/s on both sides (host mode and
/// host Linux run on the same CPUs, so the rates compare directly, where
/// the guest lines compare ratios).
#[derive(Clone, Debug, PartialEq)]
pub struct HostLine {
    pub design: String,
    /// `host-tmpfs`, `host-ext4`.
    pub linux: String,
    /// Tasks, one per CPU (named as the guest lines name it).
    pub vcpus: u32,
    pub proto_ops: f64,
    pub linux_ops: f64,
}

impl HostLine {
    /// `(proto_ops / linux_ops - 1) * 100`.
    pub fn error_pct(&self) -> f64 {
        error_pct(self.proto_ops, self.linux_ops)
    }

    /// Reads a line `Display` wrote.
    pub fn parse(line: &str) -> Result<HostLine, String> {
        const KEYS: [&str; 6] = [
            "design",
            "linux",
            "vcpus",
            "proto_ops",
            "linux_ops",
            "error_pct",
        ];
        let mut w = line.split_whitespace();
        if w.next() != Some("fidelity") {
            return Err(format!("not a fidelity line: {line:?}"));
        }
        let mut v: [&str; 6] = [""; 6];
        let mut n = 0;
        for (i, word) in w.enumerate() {
            let (k, val) = word
                .split_once('=')
                .ok_or_else(|| format!("{word:?} is not KEY=VALUE"))?;
            if KEYS.get(i) != Some(&k) {
                return Err(format!("{k}= where {:?} belongs", KEYS.get(i)));
            }
            v[i] = val;
            n = i + 1;
        }
        if n != KEYS.len() {
            return Err(format!("no {}= in {line:?}", KEYS[n]));
        }
        let ops = |i: usize| -> Result<f64, String> {
            v[i].parse::<f64>()
                .ok()
                .filter(|x| x.is_finite() && *x > 0.0)
                .ok_or_else(|| format!("{}={} is not a rate", KEYS[i], v[i]))
        };
        let l = HostLine {
            design: v[0].to_string(),
            linux: v[1].to_string(),
            vcpus: v[2]
                .parse()
                .map_err(|_| format!("vcpus={} is not a count", v[2]))?,
            proto_ops: ops(3)?,
            linux_ops: ops(4)?,
        };
        let e: f64 = v[5]
            .parse()
            .map_err(|_| format!("error_pct={} is not a number", v[5]))?;
        if (e - l.error_pct()).abs() > 0.051 {
            return Err(format!(
                "error_pct={e} is not that of the rates ({:.1})",
                l.error_pct()
            ));
        }
        Ok(l)
    }
}

impl fmt::Display for HostLine {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "fidelity design={} linux={} vcpus={} proto_ops={:.0} linux_ops={:.0} error_pct={:.1}",
            self.design,
            self.linux,
            self.vcpus,
            self.proto_ops,
            self.linux_ops,
            self.error_pct()
        )
    }
}

/// Any `fidelity …` line: a guest pair's ratios or a host pair's rates.
#[derive(Clone, Debug, PartialEq)]
pub enum AnyLine {
    Guest(Line),
    Host(HostLine),
}

impl AnyLine {
    /// Reads either form (the fifth word tells them apart: `proto_ratio=`
    /// or `proto_ops=`).
    pub fn parse(line: &str) -> Result<AnyLine, String> {
        if line
            .split_whitespace()
            .nth(4)
            .is_some_and(|w| w.starts_with("proto_ops="))
        {
            HostLine::parse(line).map(AnyLine::Host)
        } else {
            Line::parse(line).map(AnyLine::Guest)
        }
    }
}

/// `(proto / linux - 1) * 100`.
pub fn error_pct(proto: f64, linux: f64) -> f64 {
    (proto / linux - 1.0) * 100.0
}

/// Ops/s of `tasks` tasks had each stat also paid `syscall_ns`: each
/// task's time per stat (`tasks / ops` seconds) plus the constant. Exact
/// on one task; on more it leaves out that a slower stat also meets less
/// contention on shared lines, so it charges contended designs slightly
/// too much.
pub fn with_syscall(ops: f64, tasks: u32, syscall_ns: f64) -> f64 {
    if ops <= 0.0 {
        return 0.0;
    }
    let per_op_s = f64::from(tasks) / ops;
    f64::from(tasks) / (per_op_s + syscall_ns * 1e-9)
}

/// The median of `xs` (the mean of the middle two for an even count);
/// `None` when empty.
pub fn median(xs: &[f64]) -> Option<f64> {
    let mut v: Vec<f64> = xs.iter().copied().filter(|x| x.is_finite()).collect();
    if v.is_empty() {
        return None;
    }
    v.sort_by(f64::total_cmp);
    let n = v.len();
    Some(if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    })
}

/// One design's per-round ratios on both sides, at one CPU count.
#[derive(Clone, Debug, PartialEq)]
pub struct Ratios {
    pub design: String,
    pub linux: Option<String>,
    pub proto: Vec<f64>,
    pub linux_rounds: Vec<f64>,
}

/// `[MIN-MAX]` of `xs`, or `none`.
fn range(xs: &[f64]) -> String {
    let lo = xs.iter().copied().fold(f64::INFINITY, f64::min);
    let hi = xs.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    if xs.is_empty() {
        "none".into()
    } else {
        format!("[{lo:.3}-{hi:.3}]")
    }
}

fn spread(xs: &[f64]) -> f64 {
    let lo = xs.iter().copied().fold(f64::INFINITY, f64::min);
    let hi = xs.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    if lo.is_finite() && hi.is_finite() {
        (hi - lo) / 2.0
    } else {
        0.0
    }
}

/// Whether design `i` is ranked as Linux ranks it against each other
/// design of `rows` with a Linux counterpart: the prototype's medians must
/// order the two as Linux's do wherever Linux's medians differ by more than
/// their spread (half the range of each one's per-round ratios, the two
/// added); closer than that, Linux does not rank them and neither order
/// disagrees. `None` for a design without a Linux counterpart.
pub fn rank_agrees(rows: &[Ratios], i: usize) -> Option<bool> {
    let a = &rows[i];
    a.linux.as_ref()?;
    let (pa, la) = (median(&a.proto)?, median(&a.linux_rounds)?);
    for (j, b) in rows.iter().enumerate() {
        if j == i || b.linux.is_none() {
            continue;
        }
        let (Some(pb), Some(lb)) = (median(&b.proto), median(&b.linux_rounds)) else {
            continue;
        };
        let tie = spread(&a.linux_rounds) + spread(&b.linux_rounds);
        if (la - lb).abs() > tie && (pa - pb).signum() != (la - lb).signum() {
            return Some(false);
        }
    }
    Some(true)
}

/// The lines of one CPU count from its rows.
pub fn lines(rows: &[Ratios], vcpus: u32) -> Vec<Line> {
    (0..rows.len())
        .filter_map(|i| {
            let r = &rows[i];
            Some(Line {
                design: r.design.clone(),
                linux: r.linux.clone(),
                vcpus,
                proto_ratio: median(&r.proto)?,
                linux_ratio: r.linux.as_ref().and_then(|_| median(&r.linux_rounds)),
                rank_agrees: rank_agrees(rows, i),
            })
        })
        .collect()
}

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
    let cpu = crate::sweep::runner_cpu(&f.stderr);
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

/// One host-mode window: `bench host bench=statneg design=D tasks=N`
/// (the stat frontend, one real `getppid` per stat), natively.
fn host_proto_window(a: &FidelityArgs, design: &str, tasks: u32) -> Result<f64, String> {
    let exe = std::env::current_exe().map_err(|e| format!("cannot find this program: {e}"))?;
    let mut cmd = Command::new(exe);
    cmd.arg("host").args([
        "bench=statneg".to_string(),
        format!("design={design}"),
        format!("tasks={tasks}"),
        format!("warmup={}", a.warmup),
        format!("secs={}", a.secs),
    ]);
    let f = run_with_timeout(cmd, Duration::from_secs(u64::from(a.warmup + a.secs) + 60))?;
    if f.code != Some(0) {
        return Err(format!(
            "bench host exit {:?}: {}",
            f.code,
            last_line(&f.stderr)
        ));
    }
    let out = output::parse(&f.stdout).map_err(|e| format!("output: {e}"))?;
    if !out.testcase.contains("frontend=stat") {
        return Err(format!("not the stat frontend: {}", out.testcase));
    }
    Ok(out.average as f64)
}

/// One host Linux window: `bench linux-stat --in-dir --dir DIR --tasks N`
/// (`newfstatat(AT_FDCWD, "nonexistent", &st, 0)` in DIR), after checking
/// that DIR is on `fstype`.
fn host_linux_window(
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
    let f = run_with_timeout(cmd, Duration::from_secs(u64::from(a.warmup + a.secs) + 60))?;
    if f.code != Some(0) {
        return Err(format!(
            "bench linux-stat exit {:?}: {}",
            f.code,
            last_line(&f.stderr)
        ));
    }
    let out = output::parse(&f.stdout).map_err(|e| format!("output: {e}"))?;
    Ok(out.average as f64)
}

/// Which side of which host pair at how many tasks.
#[derive(Clone, Copy, Debug, PartialEq)]
enum HostJob {
    Proto(usize, u32),
    Linux(usize, u32),
}

/// The host windows of round `r`: every task count, every host pair, host
/// mode and host Linux side by side; every other round in reverse (ABBA).
fn host_round_jobs(cpus: &[u32], r: u32) -> Vec<HostJob> {
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

/// The host lines of one run: per task count and pair, each side's median
/// ops/s over the rounds (rounded to whole ops/s, as printed).
fn host_lines(got: &[(u32, HostJob, f64)], cpus: &[u32]) -> Vec<HostLine> {
    let mut out = Vec::new();
    for &n in cpus {
        for (i, (d, k, _)) in HOST_PAIRS.iter().enumerate() {
            let side = |j: HostJob| -> Vec<f64> {
                got.iter()
                    .filter(|(_, g, _)| *g == j)
                    .map(|(_, _, x)| *x)
                    .collect()
            };
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
fn run_host_part(a: &FidelityArgs) -> Vec<String> {
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
            let (res, name) = match job {
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
            };
            match res {
                Ok(ops) => {
                    println!("fidelity-host-window round={r} {name} ops={ops:.0}");
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
            let side = |j: HostJob| -> Vec<f64> {
                got.iter()
                    .filter(|(_, g, _)| *g == j)
                    .map(|(_, _, x)| *x)
                    .collect()
            };
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
fn ops_range(xs: &[f64]) -> String {
    let lo = xs.iter().copied().fold(f64::INFINITY, f64::min);
    let hi = xs.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    if xs.is_empty() {
        "none".into()
    } else {
        format!("[{lo:.0}-{hi:.0}]")
    }
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
            let res = match job {
                Job::Proto(i, n) => proto_window(a, kernel, runner, PAIRS[i].0, n),
                Job::Linux(i, n) => linux_window(a, build, PAIRS[i].1.unwrap_or(""), n),
            };
            let name = match job {
                Job::Proto(i, n) => format!("proto {} vcpus={n}", PAIRS[i].0),
                Job::Linux(i, n) => format!("7.3.4-{} vcpus={n}", PAIRS[i].1.unwrap_or("")),
            };
            match res {
                Ok(w) => {
                    println!(
                        "fidelity-window round={r} {name} ops={:.0} best_second={:.0}{}{}",
                        w.ops,
                        w.best,
                        w.getppid_ns
                            .map_or(String::new(), |g| format!(" getppid_ns={g:.1}")),
                        w.probed
                            .map_or(String::new(), |(o, _)| format!(" probed_ops={o:.0}"))
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
                    row.proto.len(),
                    range(&row.proto),
                    range(&row.linux_rounds)
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

/// One design's time per stat on both sides at one CPU count ([`costs`]).
#[derive(Debug, Clone, PartialEq)]
pub struct Cost {
    pub design: String,
    pub linux: String,
    /// Per round where both sides ran: the prototype's ns per stat and
    /// task (`tasks / ops`, the system call constant added), Linux's.
    pub proto_ns: Vec<f64>,
    pub linux_ns: Vec<f64>,
}

impl Cost {
    /// The line: medians, and the per-round cost ratio's median and range.
    pub fn line(&self, vcpus: u32) -> String {
        let ratios: Vec<f64> = self
            .proto_ns
            .iter()
            .zip(&self.linux_ns)
            .map(|(p, l)| p / l)
            .collect();
        let f = |x: Option<f64>| x.map_or("none".into(), |x| format!("{x:.0}"));
        format!(
            "fidelity-cost design={} linux={} vcpus={vcpus} proto_ns={} linux_ns={} cost_ratio={} range={}",
            self.design,
            self.linux,
            f(median(&self.proto_ns)),
            f(median(&self.linux_ns)),
            median(&ratios).map_or("none".into(), |x| format!("{x:.3}")),
            range(&ratios),
        )
    }
}

/// Each paired design's time per stat and task on both sides, round by
/// round (the average estimator; the prototype's with `syscall_ns` added,
/// as [`with_syscall`] adds it). `proto_ratio ÷ linux_ratio` of a design is
/// the baseline's cost ratio over the design's, so a design whose cost
/// ratio is near 1 while the baseline's is not has its error from the
/// baseline's miss, not its own.
fn costs(got: &[(u32, Job, Window)], rounds: u32, vcpus: u32, syscall_ns: f64) -> Vec<Cost> {
    let ns = |r: u32, job: Job| {
        got.iter()
            .find(|(gr, j, _)| *gr == r && *j == job)
            .map(|(_, _, w)| w.ops)
            .filter(|ops| *ops > 0.0)
            .map(|ops| f64::from(vcpus) / ops * 1e9)
    };
    PAIRS
        .iter()
        .enumerate()
        .filter_map(|(i, (d, k))| {
            let k = (*k)?;
            let (mut p, mut l) = (Vec::new(), Vec::new());
            for r in 0..rounds {
                if let (Some(x), Some(y)) =
                    (ns(r, Job::Proto(i, vcpus)), ns(r, Job::Linux(i, vcpus)))
                {
                    p.push(x + syscall_ns);
                    l.push(y);
                }
            }
            Some(Cost {
                design: d.to_string(),
                linux: k.to_string(),
                proto_ns: p,
                linux_ns: l,
            })
        })
        .collect()
}

/// The windows of a run's output (`fidelity-window` lines), as the run
/// collected them (the ops, the fastest second, a Linux boot's getppid
/// figure; per-op counters are not on these lines).
fn windows_from(text: &str) -> Vec<(u32, Job, Window)> {
    let mut got = Vec::new();
    for l in text.lines() {
        let Some(rest) = l.strip_prefix("fidelity-window ") else {
            continue;
        };
        let w: Vec<&str> = rest.split_whitespace().collect();
        let field = |k: &str| {
            w.iter()
                .find_map(|x| x.strip_prefix(k)?.strip_prefix('='))
                .and_then(|v| v.parse::<f64>().ok())
        };
        let (Some(r), Some(n), Some(ops)) = (field("round"), field("vcpus"), field("ops")) else {
            continue;
        };
        let job = match w.get(1..3) {
            Some(["proto", d]) => PAIRS
                .iter()
                .position(|(p, _)| p == d)
                .map(|i| Job::Proto(i, n as u32)),
            Some([k, _]) => k
                .strip_prefix("7.3.4-")
                .and_then(|k| PAIRS.iter().position(|(_, l)| *l == Some(k)))
                .map(|i| Job::Linux(i, n as u32)),
            _ => None,
        };
        if let Some(job) = job {
            got.push((
                r as u32,
                job,
                Window {
                    ops,
                    best: field("best_second").unwrap_or(ops),
                    per_op: None,
                    getppid_ns: field("getppid_ns"),
                    probed: None,
                },
            ));
        }
    }
    got
}

/// The report's section of a `bench fidelity` run (its whole output, as
/// `docs/bench/fidelity-run.txt` keeps it): the ratio table with the
/// system call constant (window averages), the host pairs, and the cost
/// split ([`costs`]) recomputed from the run's windows, so a reader can
/// check it against the lines. `None` for a text with no windows.
pub fn report_section(run: &str) -> Option<String> {
    let got = windows_from(run);
    if got.is_empty() {
        return None;
    }
    let calib: Vec<f64> = got.iter().filter_map(|(_, _, w)| w.getppid_ns).collect();
    let c = median(&calib).unwrap_or(0.0);
    let rounds = got.iter().map(|(r, _, _)| r + 1).max().unwrap_or(0);
    let mut cpus: Vec<u32> = got
        .iter()
        .map(|(_, j, _)| match j {
            Job::Proto(_, n) | Job::Linux(_, n) => *n,
        })
        .collect();
    cpus.sort_unstable();
    cpus.dedup();
    let mut s =
        String::from("## Fidelity: the prototype's ratios beside Linux's (`make fidelity`)\n\n");
    s.push_str(
        "From the committed run's output (fidelity-run.txt; method, counters and the residual \
         per pair: [fidelity.md](fidelity.md)). Ratios are each design's ops/s over its side's \
         baseline in the same round (transient, 7.3.4-vanilla), the median over rounds, with \
         the guest's system call constant paid; `fidelity-cost` splits each error into the \
         two sides' time per stat and task (recomputed here from the run's windows).\n\n```\n",
    );
    let mut in_table = false;
    for l in run.lines() {
        if l.starts_with("fidelity-setup") || l.starts_with("fidelity-calibration") {
            s.push_str(l);
            s.push('\n');
        } else if l.starts_with("fidelity-table ") {
            let words: Vec<&str> = l.split_whitespace().collect();
            in_table = words.contains(&"estimator=average") && words.contains(&"syscall=with");
        } else if (in_table && l.starts_with("fidelity design=")) || l.contains(" linux=host-") {
            s.push_str(l);
            s.push('\n');
        }
    }
    for n in cpus {
        for cost in costs(&got, rounds, n, c) {
            s.push_str(&cost.line(n));
            s.push('\n');
        }
    }
    s.push_str("```\n");
    Some(s)
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
                    if b > 0.0 {
                        proto.push(x / b);
                    }
                }
                if let (Some(x), Some(b)) =
                    (find(r, Job::Linux(i, vcpus)), find(r, Job::Linux(0, vcpus)))
                {
                    if b > 0.0 {
                        lin.push(x / b);
                    }
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

#[cfg(test)]
mod tests {
    use super::*;

    fn window(ops: f64) -> Window {
        Window {
            ops,
            best: ops,
            per_op: None,
            getppid_ns: None,
            probed: None,
        }
    }

    #[test]
    fn the_report_section_reads_a_runs_windows_back() {
        let run = "fidelity-setup part=guest accel=tcg cpu=qemu64 rounds=1 vcpus=1\n\
            fidelity-window round=0 proto transient vcpus=1 ops=100000 best_second=110000\n\
            fidelity-window round=0 7.3.4-vanilla vcpus=1 ops=200000 best_second=210000 getppid_ns=500.0 probed_ops=50000\n\
            fidelity-window round=0 proto negative vcpus=1 ops=1000000 best_second=1100000\n\
            fidelity-window round=0 7.3.4-negative vcpus=1 ops=600000 best_second=610000 getppid_ns=500.0\n\
            fidelity-table estimator=average syscall=with syscall_ns=500.0\n\
            fidelity design=negative linux=negative vcpus=1 proto_ratio=6.667 linux_ratio=3.000 error_pct=122.2 rank_agrees=yes\n\
            fidelity-table estimator=average syscall=without syscall_ns=0\n\
            fidelity design=negative linux=negative vcpus=1 proto_ratio=10.000 linux_ratio=3.000 error_pct=233.3 rank_agrees=yes\n";
        let s = report_section(run).unwrap();
        assert!(s.contains("proto_ratio=6.667"), "{s}");
        assert!(
            !s.contains("proto_ratio=10.000"),
            "only the table with the constant: {s}"
        );
        assert!(
            s.contains("fidelity-cost design=transient linux=vanilla vcpus=1 proto_ns=10500 linux_ns=5000 cost_ratio=2.100"),
            "{s}"
        );
        assert!(report_section("no windows here\n").is_none());
    }

    #[test]
    fn costs_split_a_ratio_error_into_the_baselines_and_the_designs() {
        // One round at 1 vCPU: our transient 100 k/s (10 µs), Linux's
        // vanilla 200 k/s (5 µs); our negative 1 M/s (1 µs), Linux's 600 k/s.
        let got = vec![
            (0, Job::Proto(0, 1), window(100_000.0)),
            (0, Job::Linux(0, 1), window(200_000.0)),
            (0, Job::Proto(1, 1), window(1_000_000.0)),
            (0, Job::Linux(1, 1), window(600_000.0)),
        ];
        let c = costs(&got, 1, 1, 500.0);
        assert_eq!(c.len(), 3, "negbound has no Linux side: {c:?}");
        let (t, n) = (&c[0], &c[1]);
        assert_eq!((t.proto_ns[0], t.linux_ns[0]), (10_500.0, 5_000.0));
        assert!((n.proto_ns[0] - 1_500.0).abs() < 1e-6);
        assert!(c[2].proto_ns.is_empty(), "noalloc did not run");
        assert_eq!(
            t.line(1),
            "fidelity-cost design=transient linux=vanilla vcpus=1 proto_ns=10500 linux_ns=5000 cost_ratio=2.100 range=[2.100-2.100]"
        );
        // The identity the line rests on: the ratio error is the
        // baseline's cost ratio over the design's.
        let r = ratios(&got, 1, 1, 500.0, Estimator::Average);
        let error = r[1].proto[0] / r[1].linux_rounds[0];
        let split = (t.proto_ns[0] / t.linux_ns[0]) / (n.proto_ns[0] / n.linux_ns[0]);
        assert!((error - split).abs() < 1e-9, "{error} vs {split}");
    }

    #[test]
    fn rounds_alternate_and_pair_each_design_with_its_kernel() {
        let j0 = round_jobs(&[1], 0);
        assert_eq!(j0[0], Job::Proto(0, 1));
        assert_eq!(j0[1], Job::Linux(0, 1));
        assert_eq!(j0.len(), 7, "four designs, three kernels");
        let mut j1 = round_jobs(&[1], 1);
        j1.reverse();
        assert_eq!(j0, j1);
    }

    #[test]
    fn a_line_prints_exactly_and_reads_back() {
        let l = Line {
            design: "noalloc".into(),
            linux: Some("noalloc".into()),
            vcpus: 2,
            proto_ratio: 3.3,
            linux_ratio: Some(2.75),
            rank_agrees: Some(false),
        };
        let s = l.to_string();
        assert_eq!(
            s,
            "fidelity design=noalloc linux=noalloc vcpus=2 proto_ratio=3.300 linux_ratio=2.750 error_pct=20.0 rank_agrees=no"
        );
        assert_eq!(Line::parse(&s).unwrap(), l);
        let nb = Line {
            design: "negbound".into(),
            linux: None,
            vcpus: 1,
            proto_ratio: 4.0,
            linux_ratio: None,
            rank_agrees: None,
        };
        let s = nb.to_string();
        assert!(
            s.ends_with("linux_ratio=none error_pct=none rank_agrees=none"),
            "{s}"
        );
        assert_eq!(Line::parse(&s).unwrap(), nb);
        // Keys out of order, a missing Linux figure, a bad word.
        assert!(Line::parse("fidelity linux=x design=y").is_err());
        assert!(Line::parse(
            &l.to_string()
                .replace("linux_ratio=2.750", "linux_ratio=none")
        )
        .is_err());
        assert!(
            Line::parse(&l.to_string().replace("rank_agrees=no", "rank_agrees=maybe")).is_err()
        );
        assert!(Line::parse("negcost kernel=proto").is_err());
    }

    #[test]
    fn a_host_line_prints_exactly_and_reads_back() {
        let l = HostLine {
            design: "transient".into(),
            linux: "host-tmpfs".into(),
            vcpus: 2,
            proto_ops: 1_250_000.0,
            linux_ops: 1_000_000.0,
        };
        let s = l.to_string();
        assert_eq!(
            s,
            "fidelity design=transient linux=host-tmpfs vcpus=2 proto_ops=1250000 linux_ops=1000000 error_pct=25.0"
        );
        assert_eq!(HostLine::parse(&s).unwrap(), l);
        assert_eq!(AnyLine::parse(&s).unwrap(), AnyLine::Host(l.clone()));
        // A guest line still reads as one, through either parser.
        let g = "fidelity design=noalloc linux=noalloc vcpus=2 proto_ratio=3.300 linux_ratio=2.750 error_pct=20.0 rank_agrees=no";
        assert!(matches!(AnyLine::parse(g), Ok(AnyLine::Guest(_))));
        assert!(Line::parse(&s).is_err(), "a host line is not a guest line");
        assert!(HostLine::parse(g).is_err());
        // An error that is not the rates', a missing key, a zero rate.
        assert!(HostLine::parse(&s.replace("error_pct=25.0", "error_pct=20.0")).is_err());
        assert!(HostLine::parse(&s.replace(" error_pct=25.0", "")).is_err());
        assert!(HostLine::parse(&s.replace("linux_ops=1000000", "linux_ops=0")).is_err());
        assert!(HostLine::parse(&s.replace("proto_ops=1250000", "proto_ops=fast")).is_err());
    }

    #[test]
    fn host_rounds_alternate_and_lines_take_each_sides_median() {
        let j0 = host_round_jobs(&[1, 2], 0);
        assert_eq!(j0.len(), 8, "two pairs, two sides, two task counts");
        assert_eq!(&j0[..2], &[HostJob::Proto(0, 1), HostJob::Linux(0, 1)]);
        let mut j1 = host_round_jobs(&[1, 2], 1);
        j1.reverse();
        assert_eq!(j0, j1);
        let got = [
            (0, HostJob::Proto(1, 1), 300.0),
            (1, HostJob::Proto(1, 1), 100.0),
            (2, HostJob::Proto(1, 1), 200.0),
            (0, HostJob::Linux(1, 1), 150.4),
            (1, HostJob::Linux(1, 1), 250.0),
            // transient has no Linux window: no line.
            (0, HostJob::Proto(0, 1), 50.0),
        ];
        let ls = host_lines(&got, &[1]);
        assert_eq!(ls.len(), 1);
        assert_eq!(
            ls[0].to_string(),
            "fidelity design=negative linux=host-ext4 vcpus=1 proto_ops=200 linux_ops=200 error_pct=0.0"
        );
    }

    #[test]
    fn the_constant_is_added_to_each_tasks_time_per_stat() {
        // 1 task at 1 M ops/s: 1000 ns a stat; + 1000 ns: 500 k.
        assert!((with_syscall(1e6, 1, 1000.0) - 5e5).abs() < 1e-6);
        // 2 tasks at 1 M ops/s together: 2000 ns each; + 2000 ns: 500 k.
        assert!((with_syscall(1e6, 2, 2000.0) - 5e5).abs() < 1e-6);
        assert_eq!(with_syscall(1e6, 1, 0.0), 1e6);
        assert_eq!(with_syscall(0.0, 1, 100.0), 0.0);
        // It pulls a ratio toward 1: 10x faster alone, 5.5x with the
        // constant equal to the baseline's time per stat... (1000 vs 100 ns
        // + 1000 each: 2000 / 1100).
        let r = with_syscall(1e7, 1, 1000.0) / with_syscall(1e6, 1, 1000.0);
        assert!((r - 2000.0 / 1100.0).abs() < 1e-9);
        assert!((error_pct(3.3, 2.75) - 20.0).abs() < 1e-9);
        assert_eq!(median(&[3.0, 1.0, 2.0]), Some(2.0));
        assert_eq!(median(&[4.0, 1.0, 2.0, 3.0]), Some(2.5));
        assert_eq!(median(&[]), None);
    }

    fn row(d: &str, linux: bool, proto: &[f64], lin: &[f64]) -> Ratios {
        Ratios {
            design: d.into(),
            linux: linux.then(|| d.to_string()),
            proto: proto.to_vec(),
            linux_rounds: lin.to_vec(),
        }
    }

    #[test]
    fn rank_agrees_only_where_linux_ranks_beyond_its_spread() {
        // Issue 52's case: the prototype puts noalloc above negative, Linux
        // below it by more than its spread: no, for both.
        let rows = [
            row("transient", true, &[1.0, 1.0], &[1.0, 1.0]),
            row("negative", true, &[6.6, 6.5], &[2.95, 2.97]),
            row("noalloc", true, &[8.8, 8.7], &[2.73, 2.75]),
            row("negbound", false, &[5.0, 5.0], &[]),
        ];
        assert_eq!(rank_agrees(&rows, 1), Some(false));
        assert_eq!(rank_agrees(&rows, 2), Some(false));
        assert_eq!(rank_agrees(&rows, 0), Some(true));
        assert_eq!(rank_agrees(&rows, 3), None);
        // The same medians, Linux's rounds spread wider than the gap: a tie
        // in Linux, so either order agrees.
        let mut wide = rows.clone();
        wide[1].linux_rounds = vec![2.6, 3.3];
        wide[2].linux_rounds = vec![2.5, 3.0];
        assert_eq!(rank_agrees(&wide, 2), Some(true));
        // The prototype in Linux's order: yes.
        let mut ok = rows.clone();
        ok[2].proto = vec![6.0, 6.1];
        assert_eq!(rank_agrees(&ok, 2), Some(true));
        let ls = lines(&rows, 1);
        assert_eq!(ls.len(), 4);
        assert_eq!(ls[0].proto_ratio, 1.0);
        assert_eq!(ls[3].linux, None);
    }
}
