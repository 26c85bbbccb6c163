//! Linux's own walk (`make linux-walks`): ftrace's function graph of single
//! `stat()` calls in the reference guest, under any kernel it boots
//! (Debian's or one of ours, see [`super::kbuild`]), kept as data for the
//! step-through page (docs/explore/linux/).
//!
//! The boot reuses the reference initramfs unchanged with a second newc
//! archive appended (the kernel unpacks concatenated archives in order):
//! `qemu/linuxref/walks.sh` as `/init` and the static `qemu/linuxref/walkstat.c`
//! as `/walkstat`. The guest prints each case's trace file between markers;
//! [`parse_graph`] reads function_graph's text, and [`keep_lookup_path`]
//! keeps the functions of the committed list (`qemu/linuxref/walk-functions.txt`:
//! fs/namei.c, fs/dcache.c, the filesystems' lookups, the locks), each
//! one's depth counted among the kept ones.
//!
//! Touches `BUILD_DIR/linux-walks/` (the archive, the raw traces) and QEMU.

use std::collections::BTreeSet;
use std::fs;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::tools::initramfs_with_init;
use super::{LinuxRefError, Paths};
use crate::runner::{Accel, GuestStatus, QemuConfig, Runner};

/// The guest's `/init` for the walks boot.
pub fn walks_script() -> PathBuf {
    super::guest_file("walks.sh")
}

/// The C source of `/walkstat`.
pub fn walkstat_source() -> PathBuf {
    super::guest_file("walkstat.c")
}

/// The committed list of the lookup path's functions.
pub fn function_list() -> PathBuf {
    super::guest_file("walk-functions.txt")
}

/// One call of the function graph.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Call {
    /// The function, without a compiler suffix (`.isra.0`, `.constprop.0`).
    pub function: String,
    /// Nesting depth (0: the entry point; after [`keep_lookup_path`], among
    /// the kept calls).
    pub depth: u32,
    /// Duration in microseconds as function_graph measured it (under TCG,
    /// tracing included); `None` for a call the trace did not close.
    pub duration_us: Option<f64>,
    /// The symbol as traced, when it differs from `function`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub symbol: Option<String>,
}

/// `name.isra.0` → `name`; ` [ext4]` (a module's tag) dropped.
fn base_name(sym: &str) -> String {
    let sym = match sym.find(" [") {
        Some(i) => &sym[..i],
        None => sym,
    };
    sym.split('.').next().unwrap_or(sym).trim().to_string()
}

/// The duration in a function_graph line's left part (`  1.234 us`, `+ 12.5 us`).
fn duration(left: &str) -> Option<f64> {
    let i = left.find(" us")?;
    left[..i].split_whitespace().last()?.parse().ok()
}

/// Reads function_graph's text (one CPU's calls; headers, comments and
/// context-switch lines skipped): every call in order with its depth and,
/// once it returned, its duration.
pub fn parse_graph(text: &str) -> Vec<Call> {
    let mut calls: Vec<Call> = Vec::new();
    let mut open: Vec<usize> = Vec::new();
    for line in text.lines() {
        if line.trim_start().starts_with('#') || line.contains("=>") {
            continue;
        }
        let Some((left, right)) = line.split_once('|') else {
            continue;
        };
        // The CPU column: ` 0)`.
        let cpu = left.trim_start();
        if !cpu
            .split(')')
            .next()
            .is_some_and(|c| !c.is_empty() && c.trim().chars().all(|ch| ch.is_ascii_digit()))
        {
            continue;
        }
        let right = right.trim();
        if let Some(name) = right.strip_suffix("() {") {
            open.push(calls.len());
            calls.push(Call {
                function: base_name(name),
                depth: (open.len() - 1) as u32,
                duration_us: None,
                symbol: None,
            });
            let c = calls.last_mut().expect("just pushed");
            if c.function != name.trim() {
                c.symbol = Some(name.trim().to_string());
            }
        } else if let Some(name) = right.strip_suffix("();") {
            let f = base_name(name);
            calls.push(Call {
                symbol: (f != name.trim()).then(|| name.trim().to_string()),
                function: f,
                depth: open.len() as u32,
                duration_us: duration(left),
            });
        } else if right.starts_with('}') {
            if let Some(i) = open.pop() {
                calls[i].duration_us = duration(left);
            }
        }
    }
    calls
}

/// The first call of `entry` and everything under it, depths counted from
/// it: the trace may open inside whatever was running when tracing was
/// turned on (the end of the write to `tracing_on`).
pub fn entry_subtree(calls: &[Call], entry: &str) -> Vec<Call> {
    let Some(i) = calls.iter().position(|c| c.function == entry) else {
        return Vec::new();
    };
    let d = calls[i].depth;
    let end = calls[i + 1..]
        .iter()
        .position(|c| c.depth <= d)
        .map_or(calls.len(), |j| i + 1 + j);
    calls[i..end]
        .iter()
        .map(|c| Call {
            depth: c.depth - d,
            ..c.clone()
        })
        .collect()
}

/// Functions that mean the traced stat was interrupted or preempted: their
/// handlers' calls are in the graph, inside whatever step was running.
pub const INTERRUPTIONS: &[&str] = &[
    "irq_enter_rcu",
    "irq_exit_rcu",
    "irq_enter",
    "handle_softirqs",
    "__sysvec_apic_timer_interrupt",
    "sysvec_apic_timer_interrupt",
    "__hrtimer_rearm_deferred",
    "schedule",
    "__schedule",
    "preempt_schedule",
    "preempt_schedule_irq",
    "rcu_note_context_switch",
];

/// The first interruption in `calls`, if any.
pub fn interrupted(calls: &[Call]) -> Option<&str> {
    calls
        .iter()
        .find(|c| INTERRUPTIONS.contains(&c.function.as_str()))
        .map(|c| c.function.as_str())
}

/// The function names of the committed list (one a line; `#` comments).
pub fn parse_function_list(text: &str) -> BTreeSet<String> {
    text.lines()
        .map(|l| l.split('#').next().unwrap_or("").trim())
        .filter(|l| !l.is_empty())
        .map(str::to_string)
        .collect()
}

/// The calls of `keep` (by function name), each one's depth counted among
/// the kept calls above it; the entry point (the first call) is always kept.
/// Returns the kept calls and how many were left out.
pub fn keep_lookup_path(calls: &[Call], keep: &BTreeSet<String>) -> (Vec<Call>, usize) {
    let mut out = Vec::new();
    // The original depths of the kept ancestors of the current call.
    let mut stack: Vec<u32> = Vec::new();
    let mut dropped = 0;
    for (i, c) in calls.iter().enumerate() {
        while stack.last().is_some_and(|&d| d >= c.depth) {
            stack.pop();
        }
        if i == 0 || keep.contains(&c.function) {
            out.push(Call {
                depth: stack.len() as u32,
                ..c.clone()
            });
            stack.push(c.depth);
        } else {
            dropped += 1;
        }
    }
    (out, dropped)
}

/// One traced case, as the guest printed it.
#[derive(Clone, Debug, PartialEq)]
pub struct CaseTrace {
    /// `tmpfs-missing`, `tmpfs-hit`, `ext4-missing`.
    pub case: String,
    /// `tmpfs` or `ext4`.
    pub fs: String,
    /// The chroot the stat ran in (the filesystem's mount point).
    pub root: String,
    /// The path stat()ed inside it.
    pub path: String,
    /// The function set_graph_function named.
    pub entry: String,
    /// `ok` or the errno's name (`ENOENT`).
    pub result: String,
    /// The trace file as read.
    pub raw: String,
}

/// What one walks boot printed.
#[derive(Clone, Debug, PartialEq)]
pub struct WalksReport {
    /// `uname -r` in the guest.
    pub uname: String,
    /// available_tracers.
    pub tracers: String,
    /// Every case, in order.
    pub cases: Vec<CaseTrace>,
    /// The `linuxwalk-error …` lines.
    pub errors: Vec<String>,
}

fn field<'a>(line: &'a str, key: &str) -> Option<&'a str> {
    line.split_whitespace()
        .find_map(|w| w.strip_prefix(key)?.strip_prefix('='))
}

/// Parses the walks boot's console output.
pub fn parse_walks(serial: &str) -> Result<WalksReport, LinuxRefError> {
    let mut rep = WalksReport {
        uname: String::new(),
        tracers: String::new(),
        cases: Vec::new(),
        errors: Vec::new(),
    };
    let mut cur: Option<CaseTrace> = None;
    for line in serial.lines() {
        if let Some(r) = line.strip_prefix("linuxwalk-kernel ") {
            rep.uname = r.trim().to_string();
        } else if let Some(r) = line.strip_prefix("linuxwalk-tracers ") {
            rep.tracers = r.trim().to_string();
        } else if let Some(r) = line.strip_prefix("linuxwalk-error ") {
            rep.errors.push(r.trim().to_string());
        } else if line.starts_with("linuxwalk-begin ") {
            let get = |k: &str| field(line, k).unwrap_or_default().to_string();
            cur = Some(CaseTrace {
                case: get("case"),
                fs: get("fs"),
                root: get("root"),
                path: get("path"),
                entry: get("entry"),
                result: String::new(),
                raw: String::new(),
            });
        } else if line.starts_with("linuxwalk-end ") {
            if let Some(c) = cur.take() {
                rep.cases.push(c);
            }
        } else if let Some(c) = cur.as_mut() {
            if line.starts_with("walkstat ") {
                c.result = field(line, "result").unwrap_or_default().to_string();
            } else {
                c.raw.push_str(line);
                c.raw.push('\n');
            }
        }
    }
    if rep.uname.is_empty() {
        return Err(LinuxRefError::Parse(
            "no `linuxwalk-kernel` line: the walks init did not run".into(),
        ));
    }
    Ok(rep)
}

/// A walk as committed under docs/explore/linux/: one kernel, one case.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Walk {
    /// How the page names the kernel: `Debian 6.12.117`, `6.12.117-noalloc`.
    pub kernel: String,
    /// `uname -r` in the guest.
    pub uname: String,
    /// Where the kernel came from (the Debian package, or our build).
    pub source: String,
    /// `tmpfs-missing`, `tmpfs-hit`, `ext4-missing`.
    pub case: String,
    /// `tmpfs` or `ext4`.
    pub fs: String,
    /// The chroot the stat ran in.
    pub root: String,
    /// The path stat()ed.
    pub path: String,
    /// `ok` or the errno's name.
    pub result: String,
    /// The tracer and its settings.
    pub tracer: String,
    /// The command that made this file.
    pub command: String,
    /// The guest-side files that ran.
    pub guest: Vec<String>,
    /// The committed list the calls were kept by.
    pub filter: String,
    /// Calls of the graph left out (not on the list).
    pub filtered_out: usize,
    /// What the durations are.
    pub note: String,
    /// The kept calls, in order.
    pub calls: Vec<Call>,
}

/// A kernel for a walks boot: the reference guest's files with that
/// kernel image, and how the page names it.
#[derive(Clone, Debug)]
pub struct WalkKernel {
    /// File-name stem and page label, e.g. `debian-6.12.117`, `6.12.117-noalloc`.
    pub name: String,
    /// The page's label.
    pub label: String,
    /// Where the image came from.
    pub source: String,
    /// The reference guest (initramfs, ext4 image) with this kernel image.
    pub paths: Paths,
}

/// The reference initramfs with the walks archive appended (rebuilt each
/// run: walkstat and the script are small).
fn walks_initramfs(paths: &Paths, dir: &Path) -> Result<PathBuf, LinuxRefError> {
    appended_initramfs(
        &paths.initramfs,
        dir,
        &walks_script(),
        &[("walkstat", walkstat_source())],
        "the walks archive",
    )
}

/// The reference initramfs with a second newc archive appended after
/// `base`: `script` as `/init` and each C source compiled static as
/// `/NAME` ([`initramfs_with_init`]). Written to `dir/initramfs.gz`.
pub(super) fn appended_initramfs(
    base: &Path,
    dir: &Path,
    script: &Path,
    programs: &[(&str, PathBuf)],
    what_archive: &str,
) -> Result<PathBuf, LinuxRefError> {
    let init = fs::read(script).map_err(|e| LinuxRefError::Guest(format!("init: {e}")))?;
    let programs: Vec<(PathBuf, &str, &[&str])> = programs
        .iter()
        .map(|(name, source)| (source.clone(), *name, &[][..]))
        .collect();
    initramfs_with_init(base, dir, &init, &programs)
        .map_err(|e| LinuxRefError::Guest(format!("{what_archive}: {e}")))
}

/// Boots `cfg` within `timeout`, keeps its console (carriage returns
/// dropped) as `dir/console.txt`, and judges the run ([`super::judge`]):
/// finished means the guest printed `linuxref-done` and powered off without
/// a debug exit. Returns the console for the caller to parse.
pub(super) fn boot_and_judge(
    cfg: QemuConfig,
    timeout: Duration,
    echo: bool,
    dir: &Path,
    kernel: &Path,
    what: &str,
) -> Result<String, LinuxRefError> {
    let out = Runner::new(cfg)
        .timeout(timeout)
        .echo(echo)
        .run()
        .map_err(|e| LinuxRefError::Guest(e.to_string()))?;
    let serial = out.serial_output.replace('\r', "");
    let _ = fs::write(dir.join("console.txt"), &serial);
    super::judge(
        kernel,
        what,
        &out.status,
        &serial,
        serial.contains("linuxref-done") && matches!(out.status, GuestStatus::NoDebugExit),
    )?;
    Ok(serial)
}

/// Boots `kernel` once on 1 vCPU (TCG) and traces every case.
pub fn run_walks(
    kernel: &WalkKernel,
    build_dir: &Path,
    echo: bool,
) -> Result<WalksReport, LinuxRefError> {
    let dir = build_dir.join("linux-walks").join(&kernel.name);
    fs::create_dir_all(&dir)
        .map_err(|e| LinuxRefError::Guest(format!("{}: {e}", dir.display())))?;
    let initramfs = walks_initramfs(&kernel.paths, &dir)?;
    let cfg = super::guest_config(&kernel.paths.kernel, Accel::Tcg)
        .initrd(&initramfs)
        .disk(&kernel.paths.ext4_image)
        .smp(1)
        .memory("512M".parse().expect("constant size"))
        .cmdline("console=ttyS0 quiet loglevel=1 panic=-1 rdinit=/init");
    let serial = boot_and_judge(
        cfg,
        Duration::from_secs(300),
        echo,
        &dir,
        &kernel.paths.kernel,
        "the walks guest",
    )?;
    parse_walks(&serial)
}

#[cfg(test)]
mod tests {
    use super::*;

    const GRAPH: &str = "# tracer: function_graph\n\
#\n\
# CPU  DURATION                  FUNCTION CALLS\n\
# |     |   |                     |   |   |   |\n \
0)               |  mutex_unlock() {\n \
0)   0.300 us    |    irq_enter_rcu();\n \
0)   9.000 us    |  } /* mutex_unlock */\n \
0)               |  vfs_statx() {\n \
0)               |    getname_flags() {\n \
0)   0.700 us    |      kmem_cache_alloc_noprof();\n \
0)   1.500 us    |    } /* getname_flags */\n \
0)               |    filename_lookup() {\n \
0)               |      path_lookupat.isra.0() {\n \
0)   0.400 us    |        path_init();\n \
0)               |        link_path_walk.part.0() {\n \
0) + 12.300 us   |          __d_lookup_rcu();\n \
0) + 20.100 us   |        } /* link_path_walk.part.0 */\n \
0) + 30.000 us   |      } /* path_lookupat.isra.0 */\n \
0) + 31.000 us   |    } /* filename_lookup */\n \
0) + 40.000 us   |  } /* vfs_statx */\n";

    #[test]
    fn reads_the_graph_with_depths_and_durations() {
        let c = entry_subtree(&parse_graph(GRAPH), "vfs_statx");
        let f: Vec<(&str, u32)> = c.iter().map(|c| (c.function.as_str(), c.depth)).collect();
        assert_eq!(
            f,
            [
                ("vfs_statx", 0),
                ("getname_flags", 1),
                ("kmem_cache_alloc_noprof", 2),
                ("filename_lookup", 1),
                ("path_lookupat", 2),
                ("path_init", 3),
                ("link_path_walk", 3),
                ("__d_lookup_rcu", 4)
            ]
        );
        assert_eq!(c[0].duration_us, Some(40.0));
        assert_eq!(c[7].duration_us, Some(12.3));
        assert_eq!(c[4].symbol.as_deref(), Some("path_lookupat.isra.0"));
    }

    #[test]
    fn keeps_the_listed_functions_with_their_depth_among_them() {
        let keep = parse_function_list("# namei\nfilename_lookup\n__d_lookup_rcu # dcache\n");
        let (k, dropped) =
            keep_lookup_path(&entry_subtree(&parse_graph(GRAPH), "vfs_statx"), &keep);
        let f: Vec<(&str, u32)> = k.iter().map(|c| (c.function.as_str(), c.depth)).collect();
        assert_eq!(
            f,
            [
                ("vfs_statx", 0),
                ("filename_lookup", 1),
                ("__d_lookup_rcu", 2)
            ]
        );
        assert_eq!(dropped, 5);
    }

    #[test]
    fn an_interrupt_inside_the_stat_is_seen() {
        let clean = entry_subtree(&parse_graph(GRAPH), "vfs_statx");
        assert_eq!(interrupted(&clean), None);
        // The trace opens inside mutex_unlock, whose interrupt is outside the stat.
        assert_eq!(interrupted(&parse_graph(GRAPH)), Some("irq_enter_rcu"));
    }

    #[test]
    fn parses_the_console_per_case() {
        let s = "linuxwalk-kernel 6.12.117+deb13-cloud-amd64\n\
                 linuxwalk-tracers function_graph function nop\n\
                 linuxwalk-begin case=tmpfs-missing fs=tmpfs root=/tmp path=/a/b/missing entry=vfs_statx\n\
                 # tracer: function_graph\n \
                 0)   1.000 us    |  vfs_statx();\n\
                 walkstat path=/a/b/missing result=ENOENT\n\
                 linuxwalk-end case=tmpfs-missing\n";
        let r = parse_walks(s).unwrap();
        assert_eq!(r.uname, "6.12.117+deb13-cloud-amd64");
        assert_eq!(r.cases.len(), 1);
        let c = &r.cases[0];
        assert_eq!(
            (c.case.as_str(), c.result.as_str()),
            ("tmpfs-missing", "ENOENT")
        );
        assert_eq!(parse_graph(&c.raw).len(), 1);
        assert!(entry_subtree(&parse_graph(&c.raw), "vfs_fstatat").is_empty());
        assert!(parse_walks("nothing\n").is_err());
    }
}
