//! The sweep: for each testcase × CPU count, run every chosen source — the
//! guest (our kernel under the `qemu-run` runner), host mode (this binary's
//! `host` subcommand, one process per run), host Linux's `stat()` on
//! `/dev/shm` and `/tmp`, and the Linux reference guest — and write
//! `raw.csv`, `report.md` and `scaling.svg` into `OUT/<timestamp>/`, with
//! each run's own output (stdout, stderr) in `OUT/<timestamp>/runs/`.
//!
//! With `--repeat N` every run is made N times, in N *rounds*: the whole
//! plan once, then the whole plan backwards, and so on; the plan puts the
//! runs a ratio divides side by side, so each such pair runs back to back
//! in every round, in alternating order (ABBA; see [`plan::plan`] and
//! [`plan::run_order`]).
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
//!
//! Each row also records its session (the directory's name), the host's
//! load average before and after the run, its steal, the CPU the run's own
//! processes got and what everyone else used in the run's window (`load`)
//! and host mode's spin yields.
//!
//! The code is in four parts: the flags (`args`), the plan and the order
//! of its runs (`plan`), one function per source that makes a run and
//! turns its output into rows (`sources`), and here the loop that runs
//! the plan and writes the results.

mod args;
pub(crate) mod load;
mod plan;
mod sources;

use std::path::{Path, PathBuf};

use indicatif::{ProgressBar, ProgressStyle};

use super::rows::{self, Row};
use super::{hostname, now_stamp, plot, report};
use args::parse_accel;
use plan::{job_label, plan, run_order, Job};
use sources::{run_guest, run_host, run_linux_guest, run_linux_host};

pub use crate::proc::{runner_accel, runner_cpu};
pub use args::{default_kernel, default_runner, target_dir, SweepArgs, MAX_REPEAT};
pub use plan::design_label;

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

/// Refuse, before anything runs, inputs that would make whole sources
/// measure nothing: a `--kernel` or `--runner` given by name that is not
/// there (the defaults may be missing: those runs become `skipped` rows).
fn check_inputs(a: &SweepArgs) -> Result<(), String> {
    if a.sources.contains(&Source::Guest) {
        for (flag, path) in [("--kernel", &a.kernel), ("--runner", &a.runner)] {
            if let Some(p) = path {
                if !p.is_file() {
                    return Err(format!(
                        "{flag} {}: no such file (ENOENT); nothing was run",
                        p.display()
                    ));
                }
            }
        }
    }
    Ok(())
}

/// A sweep none of whose points ran is a failure, not results.
fn check_some_ran(rows: &[Row], dir: &Path) -> Result<(), String> {
    if rows.iter().any(Row::is_ok) {
        return Ok(());
    }
    let skipped = rows.iter().filter(|r| r.status == "skipped").count();
    let why = rows
        .first()
        .map(|r| format!("; first: {}: {}", r.status, r.note))
        .unwrap_or_default();
    Err(format!(
        "no point ran ({skipped} skipped, {} failed{why}); rows in {}",
        rows.len() - skipped,
        dir.join("raw.csv").display()
    ))
}

/// Run the sweep; returns the result directory. Fails before running when
/// an input named on the command line is missing or the output directory
/// cannot be made, and after running when no point ran.
pub fn sweep(a: &SweepArgs) -> Result<PathBuf, String> {
    check_inputs(a)?;
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
    // The reference guest of each release, built (or found) once per sweep.
    let mut linuxref: std::collections::BTreeMap<
        qemu::linuxref::Release,
        Result<qemu::linuxref::Paths, String>,
    > = Default::default();
    // Our kernels, each built (or found) once per sweep.
    let mut kernels: std::collections::BTreeMap<
        qemu::linuxref::Kernel,
        Result<qemu::linuxref::Paths, String>,
    > = Default::default();
    let runs = dir.join("runs");
    let _ = std::fs::create_dir_all(&runs);
    // The session every row of this sweep belongs to: its directory's name.
    let session = dir
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
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
        // Spin yields host mode reported on stderr (a guest never yields).
        let yields = std::cell::Cell::new(None);
        // Keep every run's own output beside raw.csv (best effort).
        let save = |name: &str, stdout: &str, stderr: &str| {
            yields.set(Some(spin_yields(stderr)));
            let _ = std::fs::write(
                runs.join(format!("{name}{suffix}.txt")),
                format!("{stdout}\n--- stderr ---\n{stderr}"),
            );
        };
        pb.set_message(label.clone());
        // A Linux guest's build (cached) is found before the run's window
        // opens, so the window holds the boot alone.
        if let Job::LinuxGuest { kernel, .. } = job {
            let paths = linuxref.entry(kernel.release()).or_insert_with(|| {
                pb.set_message(format!(
                    "linux-guest: building the Linux {} reference guest (cached in the build dir)",
                    kernel.release()
                ));
                qemu::linuxref::ensure_release(&build_dir, kernel.release())
                    .map_err(|e| e.to_string())
            });
            kernels.entry(kernel.clone()).or_insert_with(|| {
                pb.set_message(format!(
                    "linux-guest: building kernel {kernel} (cached in the build dir)"
                ));
                paths.clone().and_then(|p| {
                    qemu::linuxref::select_kernel(&p, &build_dir, kernel).map_err(|e| e.to_string())
                })
            });
            pb.set_message(label.clone());
        }
        // The run's window: every source's run is child processes this
        // loop starts and waits for, so the children's CPU time that grew
        // in the window is the run's own.
        let loadavg_before = load::loadavg();
        let own0 = crate::proc::children_cpu_ms();
        let stat0 = load::cpu_times();
        let t0 = std::time::Instant::now();
        let new_rows = match job {
            Job::Host(p) => vec![run_host(p, &host, &save)],
            Job::Guest(p) => vec![run_guest(p, &host, &kernel, &runner, &accel, &save)],
            Job::LinuxHost { dir, cpus } => {
                vec![run_linux_host(dir, *cpus, a.warmup, a.secs, &host, &save)]
            }
            Job::LinuxGuest { cpus, kernel } => {
                let missing = Err("reference guest not prepared".to_string());
                let paths = kernels.get(kernel).unwrap_or(&missing);
                run_linux_guest(paths, kernel, *cpus, a.warmup, a.secs, &host, &accel)
            }
        };
        let wall = t0.elapsed().as_secs_f64();
        let stat1 = load::cpu_times();
        let own = own0
            .zip(crate::proc::children_cpu_ms())
            .and_then(|(a, b)| b.checked_sub(a));
        let (eff_cpus, others_cpus) = load::cpu_use(own, stat0, stat1, wall);
        let steal = load::steal_percent(stat0, stat1);
        let loadavg = load::loadavg();
        for mut row in new_rows {
            row.rep = rep;
            row.session = session.clone();
            row.loadavg = loadavg;
            row.loadavg_before = loadavg_before;
            row.steal = steal;
            row.eff_cpus = eff_cpus;
            row.others_cpus = others_cpus;
            row.yields = match job {
                Job::Host(_) => yields.get(),
                Job::Guest(_) => Some(0),
                _ => None,
            };
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
    check_some_ran(&rows, &dir)?;
    Ok(dir)
}

/// The spin yields host mode's note on `stderr` counts (`bench: note: N
/// spin yields in …`); 0 without the note.
pub fn spin_yields(stderr: &str) -> u64 {
    stderr
        .lines()
        .filter_map(|l| l.strip_prefix("bench: note: "))
        .filter_map(|l| l.split_once(" spin yields"))
        .filter_map(|(n, _)| n.parse::<u64>().ok())
        .sum()
}

/// A `bench fidelity` run's output kept beside raw.csv; `bench report`
/// carries its section (`fidelity::report_section`).
pub const FIDELITY_RUN: &str = "fidelity-run.txt";

/// Write report.md and scaling.svg (raw.csv is written by the caller).
pub fn write_outputs(dir: &Path, rows: &[Row]) -> Result<(), String> {
    write_outputs_with(dir, rows, &[], "", "")
}

/// [`write_outputs`] with `bench predict` models: the report's predicted
/// section and dashed curves, and their predict.csv kept beside raw.csv.
pub fn write_outputs_with(
    dir: &Path,
    rows: &[Row],
    models: &[crate::predict::Model],
    validation: &str,
    fidelity: &str,
) -> Result<(), String> {
    report::check(rows)?;
    let mut md = report::render_full(rows, models, validation);
    if let Some(section) = crate::fidelity::report_section(fidelity) {
        md.push('\n');
        md.push_str(&section);
        std::fs::write(dir.join(FIDELITY_RUN), fidelity)
            .map_err(|e| format!("writing {FIDELITY_RUN}: {e}"))?;
    }
    std::fs::write(dir.join("report.md"), md).map_err(|e| format!("writing report.md: {e}"))?;
    let svg = plot::render_with(rows, models)?;
    std::fs::write(dir.join("scaling.svg"), svg)
        .map_err(|e| format!("writing scaling.svg: {e}"))?;
    if !models.is_empty() {
        std::fs::write(dir.join("predict.csv"), crate::predict::to_csv(models))
            .map_err(|e| format!("writing predict.csv: {e}"))?;
    }
    if !validation.is_empty() {
        std::fs::write(dir.join("validation.md"), validation)
            .map_err(|e| format!("writing validation.md: {e}"))?;
    }
    Ok(())
}

/// `bench report DIR…`: merge the raw.csv of each directory into one
/// report in `out` (raw.csv, report.md, scaling.svg).
pub fn merge(dirs: &[PathBuf], out: &Path) -> Result<usize, String> {
    merge_opts(dirs, out, false)
}

/// [`merge`]; `with_overcommit` keeps overcommitted runs in the report's
/// ratios (`bench report --with-overcommit`).
pub fn merge_opts(dirs: &[PathBuf], out: &Path, with_overcommit: bool) -> Result<usize, String> {
    let mut all = Vec::new();
    let mut models = Vec::new();
    let mut validation = String::new();
    let mut fidelity = String::new();
    for d in dirs {
        let p = if d.is_file() {
            d.clone()
        } else {
            // A `bench predict --out` directory may hold predictions only.
            models.extend(crate::predict::read_dir(d)?);
            // Joined by a blank line; one directory's text is written back
            // as it was read, so `bench report D --out D` is idempotent.
            if let Ok(v) = std::fs::read_to_string(d.join("validation.md")) {
                if !validation.is_empty() {
                    validation.push('\n');
                }
                validation.push_str(&v);
            }
            // One fidelity run per report: the last directory's.
            if let Ok(f) = std::fs::read_to_string(d.join(FIDELITY_RUN)) {
                fidelity = f;
            }
            let raw = d.join("raw.csv");
            if !raw.exists() && d.join("predict.csv").exists() {
                continue;
            }
            raw
        };
        // Rows from before the `session` column, merged from several
        // directories, belong to the directory they were read from: two
        // directories are two sessions.
        let mut read = rows::read(&p)?;
        if dirs.len() > 1 {
            for r in read.iter_mut().filter(|r| r.session.is_empty()) {
                r.session = d.display().to_string();
            }
        }
        all.extend(read);
    }
    report::check(&all)?;
    std::fs::create_dir_all(out).map_err(|e| format!("creating {}: {e}", out.display()))?;
    rows::write(&out.join("raw.csv"), &all)?;
    write_outputs_with(out, &all, &models, &validation, &fidelity)?;
    if with_overcommit {
        std::fs::write(
            out.join("report.md"),
            report::render_opts(&all, &models, &validation, true),
        )
        .map_err(|e| format!("writing report.md: {e}"))?;
    }
    Ok(all.len())
}
