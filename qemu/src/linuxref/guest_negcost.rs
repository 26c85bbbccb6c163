//! Negative dentries' cost in the reference guest (`make negcost`, Linux
//! side): N distinct missing names stat()ed in one tmpfs directory, then
//! that directory's readdir and rmdir timed, the dentry count read before
//! and after the misses, and the longest stretch a function held the
//! directory's `d_lock` across its children (ftrace's function graph on
//! `find_positive_dentry`, `simple_empty`, `d_walk`: the guest kernels
//! have no preemptoff tracer, see `qemu/linuxref/negcost.sh`).
//!
//! The boot reuses the reference initramfs with a second archive appended
//! (as [`super::run_walks`] does): `qemu/linuxref/negcost.sh` as `/init`
//! and the static `qemu/linuxref/negcost.c` as `/negcost`. One vCPU under
//! TCG, booted as `make linux-patched` boots the counting guest (the same
//! command line, the `qemu64` CPU) but with more memory
//! ([`NEGCOST_MEM_MIB`]) for 10^6 dentries.
//!
//! Touches `BUILD_DIR/negcost/KERNEL/` (the archive, the console) and QEMU;
//! reads the cached reference initramfs and the kernel image, builds
//! neither.

use std::fs;
use std::path::{Path, PathBuf};
use std::time::Duration;

use super::walks::{appended_initramfs, boot_and_judge};
use super::LinuxRefError;
use crate::runner::Accel;

/// The guest's `/init` for the negcost boot.
pub fn negcost_script() -> PathBuf {
    super::guest_file("negcost.sh")
}

/// The C source of `/negcost`.
pub fn negcost_source() -> PathBuf {
    super::guest_file("negcost.c")
}

/// Regular files made in the directory before the misses: a readdir has
/// entries to return, and the rmdir's directory is emptied after the misses.
pub const NEGCOST_FILES: u32 = 10;

/// The guest's memory (MiB): room for 10^6 dentries beside the
/// initramfs (the counting guest's 512 MiB is tight for them).
pub const NEGCOST_MEM_MIB: u32 = 1024;

/// The longest call of one traced function.
#[derive(Clone, Debug, PartialEq)]
pub struct LockedStretch {
    /// `find_positive_dentry`, `simple_empty`, `d_walk`.
    pub function: String,
    /// Its longest call, microseconds (function_graph's duration).
    pub max_us: f64,
    /// Its calls in the traced readdir and rmdir.
    pub calls: usize,
}

/// One N's figures, as the guest printed them.
#[derive(Clone, Debug, PartialEq)]
pub struct GuestNegcost {
    pub names: u64,
    pub files: u64,
    /// The N stat()s, microseconds.
    pub stat_us: f64,
    /// The readdir (open + getdents64 to the end + close).
    pub ls_us: f64,
    /// Entries it returned (`.`, `..` and the files).
    pub ls_entries: u64,
    /// rmdir of the directory emptied after the misses.
    pub rmdir_us: f64,
    /// nr_dentry before and after the misses.
    pub dentries_before: i64,
    pub dentries_after: i64,
    /// Per step of the traced part (`ls 1` … `ls 3`, `unlink`, `rmdir`, as
    /// negcost marked them), each traced function's longest call (no step
    /// when nothing was traced).
    pub steps: Vec<StepStretches>,
    /// negcost's exit status.
    pub rc: i32,
}

impl GuestNegcost {
    /// Dentries the misses left (the growth of nr_dentry).
    pub fn dentries(&self) -> i64 {
        self.dentries_after - self.dentries_before
    }

    /// The longest locked stretch of the readdir and of the rmdir, the
    /// larger of the two: the readdir's is that of its fastest repetition
    /// (as `ls_us` is the fastest readdir: a slower one met a busier host),
    /// the rmdir's the longest call in it. `None` when nothing was traced.
    pub fn max_locked(&self) -> Option<&LockedStretch> {
        fn longest(st: &StepStretches) -> Option<&LockedStretch> {
            st.stretches
                .iter()
                .max_by(|a, b| a.max_us.total_cmp(&b.max_us))
        }
        let ls = self
            .steps
            .iter()
            .filter(|st| st.step.starts_with("ls"))
            .filter_map(longest)
            .min_by(|a, b| a.max_us.total_cmp(&b.max_us));
        let rmdir = self
            .steps
            .iter()
            .filter(|st| st.step == "rmdir")
            .filter_map(longest)
            .max_by(|a, b| a.max_us.total_cmp(&b.max_us));
        [ls, rmdir]
            .into_iter()
            .flatten()
            .max_by(|a, b| a.max_us.total_cmp(&b.max_us))
    }
}

/// One marked step of the trace and what its traced functions held.
#[derive(Clone, Debug, PartialEq)]
pub struct StepStretches {
    /// The marker's words after `negcost-`: `ls 1`, `unlink`, `rmdir`.
    pub step: String,
    pub stretches: Vec<LockedStretch>,
}

/// Splits a trace at negcost's markers (`/* negcost-STEP */` lines, as
/// function_graph prints trace_marker writes) and reads each step's
/// longest calls. What comes before the first marker is left out.
pub fn trace_steps(trace: &str) -> Vec<StepStretches> {
    let mut steps: Vec<(String, String)> = Vec::new();
    for line in trace.lines() {
        if let Some(i) = line.find("/* negcost-") {
            let rest = &line[i + "/* negcost-".len()..];
            let step = rest.split("*/").next().unwrap_or(rest).trim();
            steps.push((step.to_string(), String::new()));
        } else if let Some((_, text)) = steps.last_mut() {
            text.push_str(line);
            text.push('\n');
        }
    }
    steps
        .into_iter()
        .map(|(step, text)| StepStretches {
            step,
            stretches: locked_stretches(&text),
        })
        .collect()
}

/// What one negcost boot printed.
#[derive(Clone, Debug, PartialEq)]
pub struct NegcostReport {
    /// `uname -r` in the guest.
    pub uname: String,
    /// The functions this kernel could trace.
    pub traced: Vec<String>,
    /// One entry per N, in order.
    pub runs: Vec<GuestNegcost>,
    /// `negcost-error …` lines (the guest's and the program's).
    pub errors: Vec<String>,
}

fn field<'a>(line: &'a str, key: &str) -> Option<&'a str> {
    line.split_whitespace()
        .find_map(|w| w.strip_prefix(key)?.strip_prefix('='))
}

/// The longest call per function in a function_graph trace of leaf calls.
pub fn locked_stretches(trace: &str) -> Vec<LockedStretch> {
    let mut out: Vec<LockedStretch> = Vec::new();
    for c in super::parse_graph(trace) {
        let Some(us) = c.duration_us else { continue };
        match out.iter_mut().find(|s| s.function == c.function) {
            Some(s) => {
                s.calls += 1;
                if us > s.max_us {
                    s.max_us = us;
                }
            }
            None => out.push(LockedStretch {
                function: c.function,
                max_us: us,
                calls: 1,
            }),
        }
    }
    out
}

/// Parses the negcost boot's console output.
pub fn parse_negcost(serial: &str) -> Result<NegcostReport, LinuxRefError> {
    let mut rep = NegcostReport {
        uname: String::new(),
        traced: Vec::new(),
        runs: Vec::new(),
        errors: Vec::new(),
    };
    // The figures line and the trace of the N being read.
    let mut cur: Option<(Option<GuestNegcost>, String)> = None;
    for line in serial.lines() {
        if let Some(r) = line.strip_prefix("negcost-kernel ") {
            rep.uname = r.trim().to_string();
        } else if let Some(r) = line.strip_prefix("negcost-traced") {
            rep.traced = r.split_whitespace().map(str::to_string).collect();
        } else if let Some(r) = line.strip_prefix("negcost-error ") {
            rep.errors.push(r.trim().to_string());
        } else if line.starts_with("negcost-begin ") {
            cur = Some((None, String::new()));
        } else if line.starts_with("negcost-end ") {
            let rc: i32 = field(line, "rc").and_then(|v| v.parse().ok()).unwrap_or(-1);
            if let Some((figures, trace)) = cur.take() {
                match figures {
                    Some(mut g) => {
                        g.steps = trace_steps(&trace);
                        g.rc = rc;
                        rep.runs.push(g);
                    }
                    None => rep.errors.push(format!(
                        "names={}: no figures (negcost exited {rc})",
                        field(line, "names").unwrap_or("?")
                    )),
                }
            }
        } else if let Some((figures, trace)) = cur.as_mut() {
            if line.starts_with("negcost-guest ") {
                *figures = parse_figures(line);
                if figures.is_none() {
                    rep.errors.push(format!("unreadable figures: {line}"));
                }
            } else {
                trace.push_str(line);
                trace.push('\n');
            }
        }
    }
    if rep.uname.is_empty() {
        return Err(LinuxRefError::Parse(
            "no `negcost-kernel` line: the negcost init did not run".into(),
        ));
    }
    Ok(rep)
}

/// negcost's `negcost-guest …` line.
fn parse_figures(line: &str) -> Option<GuestNegcost> {
    let num = |k: &str| field(line, k)?.parse::<f64>().ok();
    let int = |k: &str| field(line, k)?.parse::<i64>().ok();
    Some(GuestNegcost {
        names: field(line, "names")?.parse().ok()?,
        files: field(line, "files")?.parse().ok()?,
        stat_us: num("stat_us")?,
        ls_us: num("ls_us")?,
        ls_entries: field(line, "ls_entries")?.parse().ok()?,
        rmdir_us: num("rmdir_us")?,
        dentries_before: int("dentries_before")?,
        dentries_after: int("dentries_after")?,
        steps: Vec::new(),
        rc: 0,
    })
}

/// A kernel for a negcost boot.
#[derive(Clone, Debug)]
pub struct NegcostKernel {
    /// `vanilla`, `negative`, `noalloc`: the directory name under
    /// `build/kbuild-7.3/`, and the name the lines print.
    pub name: String,
    /// Its bzImage.
    pub image: PathBuf,
    /// The reference initramfs the negcost archive is appended to.
    pub base_initramfs: PathBuf,
}

/// The guest's command line: `make linux-patched`'s boot words (one CPU
/// online at boot, no timer check) and the negcost ones.
pub fn negcost_cmdline(names: &[u64]) -> String {
    let list: Vec<String> = names.iter().map(u64::to_string).collect();
    format!(
        "console=ttyS0 quiet loglevel=1 panic=-1 no_timer_check {} rdinit=/init \
         negcost.names={} negcost.files={NEGCOST_FILES}",
        super::BOOT_ONE_CPU,
        list.join(",")
    )
}

/// Boots `kernel` once on 1 vCPU (TCG) and runs every N of `names`.
/// `per_name_us`: the time budget per stat()ed name (the timeout is the
/// boot's 180 s plus that per name, twice over).
pub fn run_negcost(
    kernel: &NegcostKernel,
    build_dir: &Path,
    names: &[u64],
    per_name_us: u64,
    echo: bool,
) -> Result<NegcostReport, LinuxRefError> {
    let dir = build_dir.join("negcost").join(&kernel.name);
    fs::create_dir_all(&dir)
        .map_err(|e| LinuxRefError::Guest(format!("{}: {e}", dir.display())))?;
    let initramfs = appended_initramfs(
        &kernel.base_initramfs,
        &dir,
        &negcost_script(),
        &[("negcost", negcost_source())],
        "the negcost archive",
    )?;
    let mem = format!("{NEGCOST_MEM_MIB}M");
    let cfg = super::guest_config(&kernel.image, Accel::Tcg)
        .initrd(&initramfs)
        .smp(1)
        .memory(mem.parse().expect("constant size"))
        .cmdline(negcost_cmdline(names));
    let total: u64 = names.iter().sum();
    let budget = 180 + 2 * total.saturating_mul(per_name_us) / 1_000_000;
    let serial = boot_and_judge(
        cfg,
        Duration::from_secs(budget),
        echo,
        &dir,
        &kernel.image,
        "the negcost guest",
    )?;
    parse_negcost(&serial)
}

#[cfg(test)]
mod tests {
    use super::*;

    const CONSOLE: &str = "negcost-kernel 7.3.4-negative\n\
negcost-traced find_positive_dentry simple_empty d_walk\n\
negcost-begin names=10000\n\
negcost-guest names=10000 files=10 stat_us=81234.5 ls_us=2345.6 ls_entries=12 rmdir_us=3456.7 dentries_before=5000 dentries_after=15002\n\
# tracer: function_graph\n\
#\n\
# CPU  DURATION                  FUNCTION CALLS\n\
# |     |   |                     |   |   |   |\n \
0) + 99.000 us   |  d_walk();\n \
0)               |  /* negcost-ls 1 */\n \
0) # 1520.250 us |  find_positive_dentry();\n \
0)   0.800 us    |  find_positive_dentry();\n \
0)               |  /* negcost-ls 2 */\n \
0) ! 520.250 us  |  find_positive_dentry();\n \
0)               |  /* negcost-unlink */\n \
0)               |  /* negcost-rmdir */\n \
0) ! 700.000 us  |  simple_empty();\n \
0) + 40.100 us   |  d_walk();\n \
0) + 30.100 us   |  d_walk();\n\
negcost-end names=10000 rc=0\n\
negcost-begin names=100000\n\
negcost-error stat of a missing name: No space left on device\n\
negcost-end names=100000 rc=1\n\
linuxref-done\n";

    #[test]
    fn reads_each_runs_figures_and_its_longest_locked_call() {
        let r = parse_negcost(CONSOLE).unwrap();
        assert_eq!(r.uname, "7.3.4-negative");
        assert_eq!(r.traced, ["find_positive_dentry", "simple_empty", "d_walk"]);
        assert_eq!(r.runs.len(), 1);
        let g = &r.runs[0];
        assert_eq!((g.names, g.files, g.ls_entries, g.rc), (10000, 10, 12, 0));
        assert_eq!(g.dentries(), 10002);
        assert_eq!(g.ls_us, 2345.6);
        let steps: Vec<&str> = g.steps.iter().map(|s| s.step.as_str()).collect();
        assert_eq!(steps, ["ls 1", "ls 2", "unlink", "rmdir"]);
        let f: Vec<(&str, f64, usize)> = g.steps[0]
            .stretches
            .iter()
            .map(|s| (s.function.as_str(), s.max_us, s.calls))
            .collect();
        assert_eq!(f, [("find_positive_dentry", 1520.25, 2)]);
        let f: Vec<(&str, f64, usize)> = g.steps[3]
            .stretches
            .iter()
            .map(|s| (s.function.as_str(), s.max_us, s.calls))
            .collect();
        assert_eq!(f, [("simple_empty", 700.0, 1), ("d_walk", 40.1, 2)]);
        // The fastest readdir's 520 us, less than the rmdir's 700 us; the
        // d_walk before the first marker is not the run's.
        let m = g.max_locked().unwrap();
        assert_eq!((m.function.as_str(), m.max_us), ("simple_empty", 700.0));
        // The failed N is an error, not a run with made-up figures.
        assert_eq!(r.errors.len(), 2, "{:?}", r.errors);
        assert!(r.errors[1].contains("names=100000"));
    }

    #[test]
    fn the_readdirs_fastest_repetition_stands_for_it() {
        let g = GuestNegcost {
            names: 1,
            files: 0,
            stat_us: 0.0,
            ls_us: 0.0,
            ls_entries: 2,
            rmdir_us: 0.0,
            dentries_before: 0,
            dentries_after: 0,
            steps: trace_steps(
                " 0)  |  /* negcost-ls 1 */\n 0) ! 900.0 us |  find_positive_dentry();\n\
                 \x20 0)  |  /* negcost-ls 2 */\n 0) ! 800.0 us |  find_positive_dentry();\n\
                 \x20 0)  |  /* negcost-rmdir */\n 0)  5.0 us |  simple_empty();\n",
            ),
            rc: 0,
        };
        assert_eq!(g.max_locked().unwrap().max_us, 800.0);
        assert_eq!(trace_steps("no markers\n"), []);
    }

    #[test]
    fn a_console_without_the_init_is_an_error() {
        assert!(parse_negcost("Kernel panic\n").is_err());
    }

    #[test]
    fn the_command_line_boots_like_linux_patched() {
        let c = negcost_cmdline(&[10, 100]);
        assert!(c.contains("maxcpus=1") && c.contains("no_timer_check"));
        assert!(c.contains("negcost.names=10,100 negcost.files=10"));
    }
}
