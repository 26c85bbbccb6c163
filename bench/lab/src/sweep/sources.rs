//! One function per source: make one run (a child process, a QEMU boot)
//! and turn its output into raw.csv rows. Touches: the child processes it
//! starts (this binary, `qemu-run`, the Linux reference guest).

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use super::super::linux;
use super::super::proc::{last_line, run_with_timeout, runner_accel, runner_cpu};
use super::super::rows::Key;
use super::super::rows::Row;
use super::plan::design_label;
use super::Source;
use bench::params::Params;
use formats::output;

fn run_limit(warmup: u32, secs: u32, extra: u64) -> Duration {
    Duration::from_secs(warmup as u64 + secs as u64 + extra)
}

/// The row of the point `key` from a run's output `text`; `failure`: why
/// the run failed although it printed something (exit status, timeout).
fn row_from_text(text: &str, key: Key, failure: Option<String>) -> Row {
    match output::parse(text) {
        // Output that parses from a run that failed (non-zero exit,
        // timeout) is still a failed run: keep its figures, say why.
        Ok(out) => {
            let row = Row::from_output(key, &out, "");
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
            Row::not_run("failed", key, &format!("{why}output: {e}"))
        }
    }
}

pub(super) fn run_host(p: &Params, host: &str, save: &dyn Fn(&str, &str, &str)) -> Row {
    let fail = |note: String| {
        Row::not_run(
            "failed",
            Key {
                source: "host".into(),
                accel: "native".into(),
                host: host.into(),
                testcase: p.bench.name().into(),
                design: design_label(p),
                cpus: p.tasks,
            },
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
                &format!("host-{}-{}-{}", p.bench, design_label(p), p.tasks),
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
                Key {
                    source: Source::Host.name().into(),
                    accel: "native".into(),
                    host: host.into(),
                    testcase: p.bench.name().into(),
                    design: design_label(p),
                    cpus: p.tasks,
                },
                failure,
            );
            if row.is_ok() && f.stderr.contains("not pinned") {
                row.note = "threads not pinned".into();
            }
            row.cpu_model = super::super::host_cpu_model();
            row
        }
    }
}

#[allow(clippy::too_many_arguments)]
pub(super) fn run_guest(
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
            Key {
                source: "guest".into(),
                accel: accel.into(),
                host: host.into(),
                testcase: p.bench.name().into(),
                design: design_label(p),
                cpus: p.tasks,
            },
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
                &format!("guest-{}-{}-{}", p.bench, design_label(p), p.tasks),
                &f.stdout,
                &f.stderr,
            );
            let used = runner_accel(&f.stderr).unwrap_or_else(|| accel.to_string());
            let cpu_model = runner_cpu(&f.stderr)
                .map(|c| super::super::guest_cpu_model(&used, &c))
                .unwrap_or_default();
            let failure = (f.code != Some(0)).then(|| {
                format!(
                    "qemu-run exit {:?}: {}; guest: {}",
                    f.code,
                    last_line(&f.stderr),
                    guest_complaint(&f.stdout)
                )
            });
            let mut row = row_from_text(
                &f.stdout,
                Key {
                    source: Source::Guest.name().into(),
                    accel: used,
                    host: host.into(),
                    testcase: p.bench.name().into(),
                    design: design_label(p),
                    cpus: p.tasks,
                },
                failure,
            );
            row.cpu_model = cpu_model;
            row
        }
    }
}

/// The design name of a linux-guest row: `linux-tmpfs` under Debian's
/// 6.12 kernel, `linux-VARIANT-tmpfs` under our 6.12 build VARIANT; other
/// releases put theirs after `linux-` (`linux-7.3-tmpfs`,
/// `linux-7.3-noalloc-tmpfs`), so rows of two releases never share a name.
pub(super) fn linux_design(kernel: &qemu::linuxref::Kernel, fs: qemu::linuxref::Fs) -> String {
    let release = match kernel.release() {
        qemu::linuxref::Release::V6_12 => String::new(),
        r => format!("{r}-"),
    };
    match kernel.variant() {
        None => format!("linux-{release}{}", fs.name()),
        Some(v) => format!("linux-{release}{v}-{}", fs.name()),
    }
}

/// One boot of the Linux reference guest with `cpus` vCPUs, statneg on its
/// tmpfs and on its ext4 disk: two rows (see [`linux_design`]).
pub(super) fn run_linux_guest(
    paths: &Result<qemu::linuxref::Paths, String>,
    kernel: &qemu::linuxref::Kernel,
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
                let design = linux_design(kernel, *f);
                Row::not_run(
                    status,
                    Key {
                        source: Source::LinuxGuest.name().into(),
                        accel: acc.into(),
                        host: host.into(),
                        testcase: "statneg".into(),
                        design: design.clone(),
                        cpus,
                    },
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
    // A crashed guest is booted once more; the rows say so in their note.
    let boot = qemu::linuxref::retry_on_panic(|| qemu::linuxref::run_guest(paths, &run));
    boot.report_first_crash("bench sweep: linux-guest");
    let retried = boot.suffix();
    match boot.result {
        Err(e) => rows_for("failed", resolved.name(), &e.to_string()),
        Ok(report) => report
            .sections
            .iter()
            .map(|(f, text)| {
                let design = linux_design(kernel, *f);
                // The same parser as every other row; rwsem (Linux's only
                // counter) rides in the note beside the exact kernel.
                let rwsem = output::parse(text)
                    .ok()
                    .and_then(|o| o.per_op?.rwsem)
                    .map(|r| format!("; rwsem/op={r:.3}"))
                    .unwrap_or_default();
                let mut row = row_from_text(
                    text,
                    Key {
                        source: Source::LinuxGuest.name().into(),
                        accel: resolved.name().into(),
                        host: host.into(),
                        testcase: "statneg".into(),
                        design: design.clone(),
                        cpus,
                    },
                    None,
                );
                row.cpu_model = super::super::guest_cpu_model(
                    resolved.name(),
                    qemu::linuxref::guest_config(&paths.kernel, resolved).cpu_model(),
                );
                let kernel = format!("{}{rwsem}{retried}", paths.describe());
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

#[allow(clippy::too_many_arguments)]
pub(super) fn run_linux_host(
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
            Key {
                source: "linux-host".into(),
                accel: "native".into(),
                host: host.into(),
                testcase: "statneg".into(),
                design: design.clone(),
                cpus,
            },
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
                Key {
                    source: Source::LinuxHost.name().into(),
                    accel: "native".into(),
                    host: host.into(),
                    testcase: "statneg".into(),
                    design: design.clone(),
                    cpus,
                },
                failure,
            );
            if row.is_ok() {
                // The directory, and the host kernel that answered (the
                // report names every Linux row's release).
                row.note = match std::fs::read_to_string("/proc/sys/kernel/osrelease") {
                    Ok(r) => format!("{}; Linux {}", dir.display(), r.trim()),
                    Err(_) => dir.display().to_string(),
                };
            }
            row.cpu_model = super::super::host_cpu_model();
            row
        }
    }
}
