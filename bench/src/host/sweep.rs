//! The sweep: for each testcase × CPU count, run every chosen source — the
//! guest (our kernel under the `qemu-run` runner), host mode (this binary's
//! `host` subcommand, one process per run), host Linux's `stat()` on
//! `/dev/shm` and `/tmp`, and the Linux reference guest — and write
//! `raw.csv`, `report.md` and `scaling.svg` into `OUT/<timestamp>/`, with
//! each run's own output (stdout, stderr) in `OUT/<timestamp>/runs/`.
//!
//! With `--repeat N` every run is made N times, in N *rounds*: the whole
//! plan once, then the whole plan again, and so on (see [`run_order`]).
//! Each row records its round as `rep`, and the report shows each point's
//! median run. A run with a setup cost repeats it: each Linux-guest run
//! boots its own QEMU (the guest's build is made once and cached).
//!
//! A source that cannot run (no kernel image, no runner, no Linux guest)
//! gives a `skipped` row with the reason instead of stopping the sweep;
//! a run that starts but fails gives a `failed` row. raw.csv is rewritten
//! after every run, so an interrupted sweep keeps what it measured.
//!
//! Touches: child processes it starts (this binary, `qemu-run`), the
//! output directory, and stat() of `/dev/shm/nonexistent`, `/tmp/nonexistent`.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use indicatif::{ProgressBar, ProgressStyle};

use super::proc::{last_line, run_with_timeout};
use super::rows::{self, Row};
use super::{hostname, linux, now_stamp, plot, report};
use crate::output;
use crate::params::{Bench, Design, Params};

/// A source of figures.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, clap::ValueEnum)]
pub enum Source {
    /// Our kernel under QEMU (`qemu-run`).
    Guest,
    /// The fs crate and the workloads on native host threads.
    Host,
    /// Host Linux's own stat() of a missing name (tmpfs /dev/shm and /tmp).
    LinuxHost,
    /// A Linux guest under the same QEMU settings (qemu::linuxref).
    LinuxGuest,
}

impl Source {
    /// The name in raw.csv.
    pub fn name(self) -> &'static str {
        match self {
            Source::Guest => "guest",
            Source::Host => "host",
            Source::LinuxHost => "linux-host",
            Source::LinuxGuest => "linux-guest",
        }
    }
}

fn parse_bench(s: &str) -> Result<Bench, String> {
    Bench::from_name(s).ok_or_else(|| {
        format!(
            "unknown testcase '{s}' (valid: {})",
            crate::params::KEYS[0].values
        )
    })
}

fn parse_design(s: &str) -> Result<Design, String> {
    Design::from_name(s)
        .ok_or_else(|| format!("unknown design '{s}' (valid: transient, negative, noalloc)"))
}

fn parse_cpus(s: &str) -> Result<usize, String> {
    match s.parse::<usize>() {
        Ok(n) if (1..=crate::params::MAX_TASKS).contains(&n) => Ok(n),
        _ => Err(format!(
            "bad CPU count '{s}' (1 to {})",
            crate::params::MAX_TASKS
        )),
    }
}

fn parse_warmup(s: &str) -> Result<u32, String> {
    match s.parse::<u32>() {
        Ok(n) if n <= crate::params::MAX_SECS => Ok(n),
        _ => Err(format!(
            "bad warmup '{s}' (0 to {} seconds)",
            crate::params::MAX_SECS
        )),
    }
}

fn parse_secs(s: &str) -> Result<u32, String> {
    match s.parse::<u32>() {
        Ok(n) if (1..=crate::params::MAX_SECS).contains(&n) => Ok(n),
        _ => Err(format!(
            "bad secs '{s}' (1 to {} seconds)",
            crate::params::MAX_SECS
        )),
    }
}

/// Most repetitions of one point `--repeat` accepts.
pub const MAX_REPEAT: u32 = 100;

fn parse_repeat(s: &str) -> Result<u32, String> {
    match s.parse::<u32>() {
        Ok(n) if (1..=MAX_REPEAT).contains(&n) => Ok(n),
        _ => Err(format!("bad repeat count '{s}' (1 to {MAX_REPEAT})")),
    }
}

fn parse_accel(s: &str) -> Result<String, String> {
    match s {
        "auto" | "tcg" | "kvm" => Ok(s.to_string()),
        _ => Err(format!("bad accelerator '{s}' (auto, tcg or kvm)")),
    }
}

/// `bench sweep` flags.
#[derive(Clone, Debug, clap::Args)]
pub struct SweepArgs {
    /// Testcases (comma-separated): statneg, statneg-distinct, statneg-deep, statpos, churn.
    #[arg(long, value_delimiter = ',', value_parser = parse_bench, default_value = "statneg")]
    pub testcases: Vec<Bench>,
    /// ENOENT designs (comma-separated).
    #[arg(long, value_delimiter = ',', value_parser = parse_design, default_value = "transient,negative,noalloc")]
    pub designs: Vec<Design>,
    /// CPU (task, vCPU) counts (comma-separated).
    #[arg(long, value_delimiter = ',', value_parser = parse_cpus, default_value = "1,2")]
    pub cpus: Vec<usize>,
    /// Warmup seconds of every run.
    #[arg(long, value_parser = parse_warmup, default_value = "2")]
    pub warmup: u32,
    /// Measured seconds of every run.
    #[arg(long, value_parser = parse_secs, default_value = "5")]
    pub secs: u32,
    /// Runs of every point (1 to 100), made in rounds over the whole plan;
    /// report.md then shows each point's median run and the spread.
    #[arg(long, value_parser = parse_repeat, default_value = "1")]
    pub repeat: u32,
    /// Sources (comma-separated).
    #[arg(
        long,
        value_delimiter = ',',
        value_enum,
        default_value = "guest,host,linux-host,linux-guest"
    )]
    pub sources: Vec<Source>,
    /// Results go to OUT/<timestamp>/.
    #[arg(long, default_value = "results")]
    pub out: PathBuf,
    /// Our kernel image [default: <target>/x86_64-unknown-none/release/kernel].
    #[arg(long)]
    pub kernel: Option<PathBuf>,
    /// The QEMU runner [default: <target>/release/qemu-run].
    #[arg(long)]
    pub runner: Option<PathBuf>,
    /// QEMU accelerator for guests: auto, tcg or kvm [default: $ACCEL, else auto].
    #[arg(long, value_parser = parse_accel)]
    pub accel: Option<String>,
    /// Build/cache directory of the Linux reference guest [default: the workspace's build/].
    #[arg(long)]
    pub build_dir: Option<PathBuf>,
    /// Directories for host Linux's stat() reference (comma-separated).
    #[arg(long, value_delimiter = ',', default_value = "/dev/shm,/tmp")]
    pub linux_dirs: Vec<PathBuf>,
}

/// The workspace's cargo target directory ($CARGO_TARGET_DIR, else
/// `<workspace>/target`).
pub fn target_dir() -> PathBuf {
    std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("..")
                .join("target")
        })
}

/// Default kernel image path.
pub fn default_kernel() -> PathBuf {
    target_dir()
        .join("x86_64-unknown-none")
        .join("release")
        .join("kernel")
}

/// Default runner path.
pub fn default_runner() -> PathBuf {
    target_dir().join("release").join("qemu-run")
}

/// One planned run.
#[derive(Clone, Debug)]
enum Job {
    Guest(Params),
    Host(Params),
    LinuxHost { dir: PathBuf, cpus: usize },
    LinuxGuest { cpus: usize },
}

fn plan(a: &SweepArgs) -> Vec<Job> {
    let mut jobs = Vec::new();
    let mut sources = a.sources.clone();
    sources.sort();
    sources.dedup();
    for &bench in &a.testcases {
        for &cpus in &a.cpus {
            for &src in &sources {
                match src {
                    Source::Guest | Source::Host => {
                        for &design in &a.designs {
                            let p = Params {
                                bench,
                                tasks: cpus,
                                design,
                                warmup: a.warmup,
                                secs: a.secs,
                            };
                            jobs.push(if src == Source::Guest {
                                Job::Guest(p)
                            } else {
                                Job::Host(p)
                            });
                        }
                    }
                    // The Linux references measure statneg only.
                    Source::LinuxHost if bench == Bench::Statneg => {
                        for d in &a.linux_dirs {
                            jobs.push(Job::LinuxHost {
                                dir: d.clone(),
                                cpus,
                            });
                        }
                    }
                    Source::LinuxGuest if bench == Bench::Statneg => {
                        jobs.push(Job::LinuxGuest { cpus })
                    }
                    _ => {}
                }
            }
        }
    }
    jobs
}

/// The order runs are made in: `(rep, job)` pairs, `rep` counting from 1.
///
/// Repetitions go in rounds over the whole plan — every job once, then
/// every job again — rather than N back-to-back runs of each job. Slow drift
/// on the machine (another build starting, the CPU warming) then falls on
/// every point of a round alike, instead of on whichever point happened to
/// be running, so ratios between points stay fair. For one design at cpus
/// 1,2 and N = 3 the order is 1, 2, 1, 2, 1, 2. It is the simplest order the
/// plan allows: the plan itself is not touched.
fn run_order(jobs: &[Job], repeat: u32) -> Vec<(u32, &Job)> {
    (1..=repeat)
        .flat_map(|rep| jobs.iter().map(move |j| (rep, j)))
        .collect()
}

fn job_label(j: &Job) -> String {
    match j {
        Job::Guest(p) => format!("guest {} {} cpus={}", p.bench, p.design, p.tasks),
        Job::Host(p) => format!("host {} {} cpus={}", p.bench, p.design, p.tasks),
        Job::LinuxHost { dir, cpus } => format!("linux-host {} cpus={cpus}", dir.display()),
        Job::LinuxGuest { cpus } => format!("linux-guest cpus={cpus}"),
    }
}

/// Run the sweep; returns the result directory.
pub fn sweep(a: &SweepArgs) -> Result<PathBuf, String> {
    let accel = match &a.accel {
        Some(x) => x.clone(),
        None => match std::env::var("ACCEL") {
            Ok(x) if !x.is_empty() => parse_accel(&x).map_err(|e| format!("ACCEL: {e}"))?,
            _ => "auto".into(),
        },
    };
    let dir = a.out.join(now_stamp());
    std::fs::create_dir_all(&dir).map_err(|e| format!("creating {}: {e}", dir.display()))?;
    let host = hostname();
    let jobs = plan(a);
    let order = run_order(&jobs, a.repeat);
    // The bar counts runs, repetitions included.
    let pb = ProgressBar::new(order.len() as u64);
    pb.set_style(
        ProgressStyle::with_template("{elapsed_precise} [{bar:30}] {pos}/{len} {msg}")
            .unwrap_or_else(|_| ProgressStyle::default_bar())
            .progress_chars("=> "),
    );
    let kernel = a.kernel.clone().unwrap_or_else(default_kernel);
    let runner = a.runner.clone().unwrap_or_else(default_runner);
    let build_dir = a
        .build_dir
        .clone()
        .unwrap_or_else(qemu::linuxref::default_build_dir);
    let mut linuxref: Option<Result<qemu::linuxref::Paths, String>> = None;
    let runs = dir.join("runs");
    let _ = std::fs::create_dir_all(&runs);
    let mut rows: Vec<Row> = Vec::new();
    for (rep, job) in order {
        // With repetitions, the label and the saved output name say which.
        let (label, suffix) = if a.repeat > 1 {
            (
                format!("{} (rep {rep}/{})", job_label(job), a.repeat),
                format!("-rep{rep}"),
            )
        } else {
            (job_label(job), String::new())
        };
        // Keep every run's own output beside raw.csv (best effort).
        let save = |name: &str, stdout: &str, stderr: &str| {
            let _ = std::fs::write(
                runs.join(format!("{name}{suffix}.txt")),
                format!("{stdout}\n--- stderr ---\n{stderr}"),
            );
        };
        pb.set_message(label.clone());
        let new_rows = match job {
            Job::Host(p) => vec![run_host(p, &host, &save)],
            Job::Guest(p) => vec![run_guest(p, &host, &kernel, &runner, &accel, &save)],
            Job::LinuxHost { dir, cpus } => {
                vec![run_linux_host(dir, *cpus, a.warmup, a.secs, &host, &save)]
            }
            Job::LinuxGuest { cpus } => {
                let paths = linuxref.get_or_insert_with(|| {
                    pb.set_message(
                        "linux-guest: building the reference guest (cached in the build dir)",
                    );
                    qemu::linuxref::ensure_built(&build_dir).map_err(|e| e.to_string())
                });
                pb.set_message(label.clone());
                run_linux_guest(paths, *cpus, a.warmup, a.secs, &host, &accel)
            }
        };
        for mut row in new_rows {
            row.rep = rep;
            if !row.is_ok() {
                pb.println(format!("{label}: {}: {}", row.status, row.note));
            }
            rows.push(row);
        }
        rows::write(&dir.join("raw.csv"), &rows)?;
        pb.inc(1);
    }
    pb.finish_with_message("done");
    write_outputs(&dir, &rows)?;
    Ok(dir)
}

/// Write report.md and scaling.svg (raw.csv is written by the caller).
pub fn write_outputs(dir: &Path, rows: &[Row]) -> Result<(), String> {
    std::fs::write(dir.join("report.md"), report::render(rows))
        .map_err(|e| format!("writing report.md: {e}"))?;
    let svg = plot::render(rows)?;
    std::fs::write(dir.join("scaling.svg"), svg).map_err(|e| format!("writing scaling.svg: {e}"))
}

/// `bench report DIR…`: merge the raw.csv of each directory into one
/// report in `out` (raw.csv, report.md, scaling.svg).
pub fn merge(dirs: &[PathBuf], out: &Path) -> Result<usize, String> {
    let mut all = Vec::new();
    for d in dirs {
        let p = if d.is_file() {
            d.clone()
        } else {
            d.join("raw.csv")
        };
        all.extend(rows::read(&p)?);
    }
    std::fs::create_dir_all(out).map_err(|e| format!("creating {}: {e}", out.display()))?;
    rows::write(&out.join("raw.csv"), &all)?;
    write_outputs(out, &all)?;
    Ok(all.len())
}

fn run_limit(warmup: u32, secs: u32, extra: u64) -> Duration {
    Duration::from_secs(warmup as u64 + secs as u64 + extra)
}

#[allow(clippy::too_many_arguments)]
fn row_from_text(
    text: &str,
    source: Source,
    accel: &str,
    host: &str,
    testcase: &str,
    design: &str,
    cpus: usize,
    failure: Option<String>,
) -> Row {
    match output::parse(text) {
        // Output that parses from a run that failed (non-zero exit,
        // timeout) is still a failed run: keep its figures, say why.
        Ok(out) => {
            let row =
                Row::from_output(source.name(), accel, host, testcase, design, cpus, &out, "");
            match failure {
                Some(why) => Row {
                    status: "failed".into(),
                    note: why,
                    ..row
                },
                None => row,
            }
        }
        Err(e) => {
            let why = failure.map(|f| format!("{f}; ")).unwrap_or_default();
            Row::not_run(
                "failed",
                source.name(),
                accel,
                host,
                testcase,
                design,
                cpus,
                &format!("{why}output: {e}"),
            )
        }
    }
}

fn run_host(p: &Params, host: &str, save: &dyn Fn(&str, &str, &str)) -> Row {
    let fail = |note: String| {
        Row::not_run(
            "failed",
            "host",
            "native",
            host,
            p.bench.name(),
            p.design.name(),
            p.tasks,
            &note,
        )
    };
    let exe = match std::env::current_exe() {
        Ok(e) => e,
        Err(e) => return fail(format!("cannot find this program: {e}")),
    };
    let mut cmd = Command::new(exe);
    cmd.arg("host").args(p.to_string().split(' '));
    match run_with_timeout(cmd, run_limit(p.warmup, p.secs, 60)) {
        Err(e) => fail(e),
        Ok(f) => {
            save(
                &format!("host-{}-{}-{}", p.bench, p.design, p.tasks),
                &f.stdout,
                &f.stderr,
            );
            let failure = (f.code != Some(0)).then(|| {
                format!(
                    "exit {:?}{}: {}",
                    f.code,
                    if f.timed_out { " (timeout)" } else { "" },
                    last_line(&f.stderr)
                )
            });
            let mut row = row_from_text(
                &f.stdout,
                Source::Host,
                "native",
                host,
                p.bench.name(),
                p.design.name(),
                p.tasks,
                failure,
            );
            if row.is_ok() && f.stderr.contains("not pinned") {
                row.note = "threads not pinned".into();
            }
            row
        }
    }
}

#[allow(clippy::too_many_arguments)]
fn run_guest(
    p: &Params,
    host: &str,
    kernel: &Path,
    runner: &Path,
    accel: &str,
    save: &dyn Fn(&str, &str, &str),
) -> Row {
    let skip = |note: String| {
        Row::not_run(
            "skipped",
            "guest",
            accel,
            host,
            p.bench.name(),
            p.design.name(),
            p.tasks,
            &note,
        )
    };
    if !runner.is_file() {
        return skip(format!(
            "runner {} not found (cargo build --release -p qemu)",
            runner.display()
        ));
    }
    if !kernel.is_file() {
        return skip(format!(
            "kernel {} not found (cargo build --release -p kernel --target x86_64-unknown-none)",
            kernel.display()
        ));
    }
    let limit = run_limit(p.warmup, p.secs, 120);
    let mut cmd = Command::new(runner);
    cmd.arg("--smp")
        .arg(p.tasks.to_string())
        .arg("--cmdline")
        .arg(p.to_string())
        .arg("--kernel")
        .arg(kernel)
        .arg("--accel")
        .arg(accel)
        .arg("--timeout")
        .arg((limit.as_secs() - 10).to_string());
    match run_with_timeout(cmd, limit) {
        Err(e) => skip(e),
        Ok(f) => {
            save(
                &format!("guest-{}-{}-{}", p.bench, p.design, p.tasks),
                &f.stdout,
                &f.stderr,
            );
            let used = runner_accel(&f.stderr).unwrap_or_else(|| accel.to_string());
            let failure = (f.code != Some(0)).then(|| {
                format!(
                    "qemu-run exit {:?}: {}; guest: {}",
                    f.code,
                    last_line(&f.stderr),
                    guest_complaint(&f.stdout)
                )
            });
            row_from_text(
                &f.stdout,
                Source::Guest,
                &used,
                host,
                p.bench.name(),
                p.design.name(),
                p.tasks,
                failure,
            )
        }
    }
}

/// One boot of the Linux reference guest with `cpus` vCPUs, statneg on its
/// tmpfs and on its ext4 disk: two rows (`linux-tmpfs`, `linux-ext4`).
fn run_linux_guest(
    paths: &Result<qemu::linuxref::Paths, String>,
    cpus: usize,
    warmup: u32,
    secs: u32,
    host: &str,
    accel: &str,
) -> Vec<Row> {
    use qemu::linuxref::{Fs, GuestRun};
    use qemu::runner::{default_cache_dir, resolve_accel, AccelChoice, DEFAULT_QEMU};
    let all = [Fs::Tmpfs, Fs::Ext4];
    let rows_for = |status: &str, acc: &str, note: &str| -> Vec<Row> {
        all.iter()
            .map(|f| {
                let design = format!("linux-{}", f.name());
                Row::not_run(
                    status,
                    Source::LinuxGuest.name(),
                    acc,
                    host,
                    "statneg",
                    &design,
                    cpus,
                    note,
                )
            })
            .collect()
    };
    let paths = match paths {
        Ok(p) => p,
        Err(e) => return rows_for("skipped", accel, e),
    };
    let choice: AccelChoice = match accel.parse() {
        Ok(c) => c,
        Err(e) => return rows_for("skipped", accel, &e),
    };
    let (resolved, _why) = resolve_accel(choice, Path::new(DEFAULT_QEMU), &default_cache_dir());
    let run = GuestRun {
        count: qemu::linuxref::DEFAULT_COUNT_ITERS,
        accel: resolved,
        ..GuestRun::statneg(cpus as u32, all.to_vec(), warmup, secs)
    };
    match qemu::linuxref::run_guest(paths, &run) {
        Err(e) => rows_for("failed", resolved.name(), &e.to_string()),
        Ok(report) => report
            .sections
            .iter()
            .map(|(f, text)| {
                let design = format!("linux-{}", f.name());
                // The same parser as every other row; rwsem (Linux's only
                // counter) rides in the note beside the exact kernel.
                let rwsem = output::parse(text)
                    .ok()
                    .and_then(|o| o.per_op?.rwsem)
                    .map(|r| format!("; rwsem/op={r:.3}"))
                    .unwrap_or_default();
                let mut row = row_from_text(
                    text,
                    Source::LinuxGuest,
                    resolved.name(),
                    host,
                    "statneg",
                    &design,
                    cpus,
                    None,
                );
                let kernel = format!("{}{rwsem}", paths.describe());
                row.note = if row.note.is_empty() {
                    kernel
                } else {
                    format!("{kernel}: {}", row.note)
                };
                row
            })
            .collect(),
    }
}

/// The guest's first line that looks like an error, else its last line.
fn guest_complaint(stdout: &str) -> &str {
    let words = ["error", "unknown", "panic", "fail", "bad "];
    stdout
        .lines()
        .map(str::trim)
        .find(|l| {
            let low = l.to_ascii_lowercase();
            words.iter().any(|w| low.contains(w))
        })
        .unwrap_or_else(|| last_line(stdout))
}

/// The accelerator `qemu-run` reports on stderr (`... accel=tcg (...)`).
pub fn runner_accel(stderr: &str) -> Option<String> {
    stderr.lines().find_map(|l| {
        let rest = l.strip_prefix("qemu-run:")?;
        let v = rest
            .split_whitespace()
            .find_map(|w| w.strip_prefix("accel="))?;
        Some(v.to_string())
    })
}

#[allow(clippy::too_many_arguments)]
fn run_linux_host(
    dir: &Path,
    cpus: usize,
    warmup: u32,
    secs: u32,
    host: &str,
    save: &dyn Fn(&str, &str, &str),
) -> Row {
    let design = linux::label(dir);
    let fail = |note: String| {
        Row::not_run(
            "failed",
            "linux-host",
            "native",
            host,
            "statneg",
            &design,
            cpus,
            &note,
        )
    };
    let exe = match std::env::current_exe() {
        Ok(e) => e,
        Err(e) => return fail(format!("cannot find this program: {e}")),
    };
    let mut cmd = Command::new(exe);
    cmd.arg("linux-stat")
        .arg("--dir")
        .arg(dir)
        .arg(format!("--tasks={cpus}"))
        .arg(format!("--warmup={warmup}"))
        .arg(format!("--secs={secs}"));
    match run_with_timeout(cmd, run_limit(warmup, secs, 60)) {
        Err(e) => fail(e),
        Ok(f) => {
            save(
                &format!("linux-host-{}-{cpus}", design),
                &f.stdout,
                &f.stderr,
            );
            let failure =
                (f.code != Some(0)).then(|| format!("exit {:?}: {}", f.code, last_line(&f.stderr)));
            let mut row = row_from_text(
                &f.stdout,
                Source::LinuxHost,
                "native",
                host,
                "statneg",
                &design,
                cpus,
                failure,
            );
            if row.is_ok() {
                row.note = dir.display().to_string();
            }
            row
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plan_covers_every_source() {
        use clap::Parser;
        #[derive(Parser)]
        struct Cli {
            #[command(flatten)]
            a: SweepArgs,
        }
        let cli =
            Cli::try_parse_from(["x", "--testcases", "statneg,churn", "--cpus", "1,2"]).unwrap();
        let jobs = plan(&cli.a);
        let count = |f: fn(&Job) -> bool| jobs.iter().filter(|j| f(j)).count();
        assert_eq!(count(|j| matches!(j, Job::Guest(_))), 12);
        assert_eq!(count(|j| matches!(j, Job::Host(_))), 12);
        // The Linux references only measure statneg: 2 dirs × 2 CPU counts, 2 boots.
        assert_eq!(count(|j| matches!(j, Job::LinuxHost { .. })), 4);
        assert_eq!(count(|j| matches!(j, Job::LinuxGuest { .. })), 2);
        assert!(jobs.iter().all(|j| match j {
            Job::Host(p) | Job::Guest(p) => p.warmup == 2 && p.secs == 5,
            _ => true,
        }));
        assert!(Cli::try_parse_from(["x", "--designs", "fast"]).is_err());
        assert!(Cli::try_parse_from(["x", "--cpus", "0"]).is_err());
        assert!(Cli::try_parse_from(["x", "--accel", "foo"]).is_err());
        assert!(Cli::try_parse_from(["x", "--sources", "guest,nowhere"]).is_err());
    }

    #[test]
    fn repetitions_go_in_rounds_over_the_plan() {
        use clap::Parser;
        #[derive(Parser)]
        struct Cli {
            #[command(flatten)]
            a: SweepArgs,
        }
        // Host statneg at cpus 1,2 with `designs` (a repeated --designs
        // would add to the list, not replace it) and `extra` flags.
        let args = |designs: &str, extra: &[&str]| {
            let base = [
                "x",
                "--testcases",
                "statneg",
                "--designs",
                designs,
                "--cpus",
                "1,2",
                "--sources",
                "host",
            ];
            Cli::try_parse_from(base.iter().chain(extra)).unwrap().a
        };
        let a = args("noalloc", &["--repeat", "3"]);
        let jobs = plan(&a);
        let order: Vec<(u32, usize)> = run_order(&jobs, a.repeat)
            .into_iter()
            .map(|(rep, j)| match j {
                Job::Host(p) => (rep, p.tasks),
                other => panic!("only host jobs planned, got {other:?}"),
            })
            .collect();
        // 1, 2, 1, 2, 1, 2 CPUs: each round runs every point once.
        assert_eq!(
            order,
            [(1, 1), (1, 2), (2, 1), (2, 2), (3, 1), (3, 2)],
            "interleaved by rounds"
        );

        // With two designs each round still holds every point once, in the
        // plan's order, and the plan itself does not depend on --repeat.
        let two = args("transient,noalloc", &["--repeat", "2"]);
        let jobs = plan(&two);
        let labels: Vec<(u32, String)> = run_order(&jobs, two.repeat)
            .into_iter()
            .map(|(rep, j)| (rep, job_label(j)))
            .collect();
        let round: Vec<String> = jobs.iter().map(job_label).collect();
        assert_eq!(round.len(), 4);
        assert_eq!(labels.len(), 8);
        for (i, (rep, l)) in labels.iter().enumerate() {
            assert_eq!((*rep as usize, l), (i / 4 + 1, &round[i % 4]));
        }

        // The default is one run of everything, in plan order.
        let one = args("noalloc", &[]);
        assert_eq!(one.repeat, 1);
        assert_eq!(run_order(&plan(&one), one.repeat).len(), 2);
        for bad in ["0", "101", "many"] {
            let base = ["x", "--repeat", bad];
            assert!(Cli::try_parse_from(base).is_err(), "--repeat {bad}");
        }
    }

    #[test]
    fn accel_from_runner_stderr() {
        let e = "qemu-run: smp=2 mem=512M accel=tcg (auto: cached) timeout=60s cmdline=\"x\"\n";
        assert_eq!(runner_accel(e).as_deref(), Some("tcg"));
        assert_eq!(runner_accel("nothing here"), None);
    }
}
