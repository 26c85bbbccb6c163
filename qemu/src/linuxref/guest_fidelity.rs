//! The Linux side of `make fidelity`: one boot of one of our 7.3.4 builds
//! in the reference guest that measures the guest's system call constant
//! (`statneg --calib`, a `getppid` loop) and one statneg window, both
//! through `qemu/linuxref/statneg.c`, the harness of every Linux figure
//! (run by `qemu/linuxref/fidelity.sh` as `/init`): `newfstatat` of
//! `/nonexistent` in the root tmpfs, a start barrier, one 128-byte counter
//! per thread, every answer checked.
//!
//! Booted as `make linux-patched` boots its guests under TCG (the `qemu64`
//! CPU, one CPU online at boot, the others brought up by the init) with
//! the reference initramfs and a second archive appended (as
//! [`super::run_negcost`] does). No modules; no probes in the timed
//! window. With [`FidelityRun::probed`] a second window follows in the same
//! boot with `make linux-patched`'s counting kprobes armed (hist triggers on
//! the comm statneg): its rate beside the first window's is the distortion
//! the probes add, its hits over its stats Linux's per-op counters
//! ([`Probed`]).
//!
//! Touches `BUILD_DIR/fidelity/KERNEL-NCPU/` (the archive, the console) and
//! QEMU; reads the cached reference initramfs and the kernel image, builds
//! neither.

use std::fs;
use std::path::{Path, PathBuf};
use std::time::Duration;

use super::walks::{appended_initramfs, boot_and_judge};
use super::{parse_wis_unchecked, LinuxRefError, WisResult};
use crate::runner::Accel;

/// The guest's `/init` for the fidelity boot.
pub fn fidelity_script() -> PathBuf {
    super::guest_file("fidelity.sh")
}

/// The missing name both sides stat: one component in the root of a tmpfs.
pub const FIDELITY_PATH: &str = "/nonexistent";

/// `statfs(2)`'s `f_type` of tmpfs (shmem).
pub const TMPFS_MAGIC: u64 = 0x0102_1994;

/// One fidelity boot's settings.
#[derive(Clone, Debug)]
pub struct FidelityRun {
    /// `vanilla`, `negative`, `noalloc`: the name under `build/kbuild-7.3/`.
    pub kernel: String,
    pub image: PathBuf,
    /// The reference initramfs the fidelity archive is appended to.
    pub base_initramfs: PathBuf,
    /// vCPUs, and statneg's threads (one per vCPU).
    pub vcpus: u32,
    pub warmup: u32,
    pub secs: u32,
    /// Seconds of the `getppid` loop.
    pub calib_secs: u32,
    /// Also run the probed window after the timed one.
    pub probed: bool,
}

/// The probed window: statneg again, the counting kprobes armed.
#[derive(Clone, Debug, PartialEq)]
pub struct Probed {
    /// Its will-it-scale report.
    pub wis: WisResult,
    /// The stats its threads made over the whole run (`statneg-check
    /// ops=`): the hits' denominator.
    pub ops: u64,
    /// Hits per probe (`d_alloc`, `__d_alloc`, `lookup_slow`, `down_read`,
    /// `spin_lock`, …) by the comm statneg over the whole run.
    pub hits: Vec<(String, u64)>,
    /// statneg's exit status in it.
    pub rc: i32,
}

/// Per-op counters from a probed window, as `make linux-patched` derives
/// them (qemu/linuxref/init.sh's `count_fs`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ProbedPerOp {
    /// `__d_alloc` (else `d_alloc`) hits per stat.
    pub allocs: f64,
    /// `__lookup_slow` hits per stat.
    pub fallbacks: f64,
    /// `down_read` + `down_write` hits per stat.
    pub rwsem: f64,
    /// `_raw_spin_lock*` and `_raw_spin_trylock` hits per stat (bit
    /// spinlocks, as the dcache hash buckets', are not among them).
    pub locks: f64,
}

impl Probed {
    fn hit(&self, name: &str) -> Option<u64> {
        self.hits.iter().find(|(k, _)| k == name).map(|(_, v)| *v)
    }

    /// The per-op counters; `None` without stats.
    pub fn per_op(&self) -> Option<ProbedPerOp> {
        if self.ops == 0 {
            return None;
        }
        let ops = self.ops as f64;
        let h = |k: &str| self.hit(k).unwrap_or(0) as f64;
        let allocs = self.hit("__d_alloc").or(self.hit("d_alloc")).unwrap_or(0) as f64;
        let locks: f64 = [
            "spin_lock",
            "spin_lock_nested",
            "spin_lock_irq",
            "spin_lock_irqsave",
            "spin_lock_bh",
            "spin_trylock",
        ]
        .iter()
        .map(|k| h(k))
        .sum();
        Some(ProbedPerOp {
            allocs: allocs / ops,
            fallbacks: h("lookup_slow") / ops,
            rwsem: (h("down_read") + h("down_write")) / ops,
            locks: locks / ops,
        })
    }
}

/// What one fidelity boot printed.
#[derive(Clone, Debug, PartialEq)]
pub struct FidelityReport {
    /// `uname -r` in the guest.
    pub uname: String,
    /// CPUs online when the run started (the init's `N cpus`).
    pub cpus: u32,
    /// ns per `getppid` call; `None` when the loop did not report.
    pub getppid_ns: Option<f64>,
    /// statneg's window.
    pub wis: WisResult,
    /// Answers other than ENOENT (the run stops at the first).
    pub wrong: u64,
    /// The first of them as statneg names it (`exists`, `errno:N`), or
    /// `none`.
    pub first_wrong: String,
    /// `f_type` of the missing name's directory.
    pub fstype: u64,
    /// statneg's exit status.
    pub rc: i32,
    /// `fidelity-error …` lines.
    pub errors: Vec<String>,
    /// The probed window, when the boot ran one.
    pub probed: Option<Probed>,
}

fn field<'a>(line: &'a str, key: &str) -> Option<&'a str> {
    line.split_whitespace()
        .find_map(|w| w.strip_prefix(key)?.strip_prefix('='))
}

/// The `statneg-check` line's figures: wrong, first, fstype, ops.
type Check = (Option<u64>, Option<String>, Option<u64>, Option<u64>);

fn check_line(line: &str) -> Check {
    (
        field(line, "wrong").and_then(|v| v.parse::<u64>().ok()),
        field(line, "first").map(str::to_string),
        field(line, "fstype")
            .and_then(|v| v.strip_prefix("0x"))
            .and_then(|v| u64::from_str_radix(v, 16).ok()),
        field(line, "ops").and_then(|v| v.parse::<u64>().ok()),
    )
}

/// Parses the probed window: the console after `fidelity-probed-begin`.
fn parse_probed(part: &str) -> Result<Probed, LinuxRefError> {
    let bad = |what: &str| LinuxRefError::Parse(format!("fidelity guest, probed window: {what}"));
    let mut ops = None;
    let mut hits = None;
    let mut rc = None;
    for line in part.lines().map(str::trim_end) {
        if line.starts_with("statneg-check ") {
            ops = check_line(line).3;
        } else if let Some(r) = line.strip_prefix("fidelity-probed ") {
            hits = Some(
                r.split_whitespace()
                    .filter_map(|w| {
                        let (k, v) = w.split_once('=')?;
                        Some((k.to_string(), v.parse::<u64>().ok()?))
                    })
                    .collect::<Vec<_>>(),
            );
        } else if line.starts_with("fidelity-probed-end ") {
            rc = field(line, "rc").and_then(|v| v.parse::<i32>().ok());
        }
    }
    Ok(Probed {
        wis: parse_wis_unchecked(part)?,
        ops: ops.ok_or_else(|| bad("no ops= on its `statneg-check` line"))?,
        hits: hits.ok_or_else(|| bad("no `fidelity-probed` line"))?,
        rc: rc.ok_or_else(|| bad("no `fidelity-probed-end rc=` line"))?,
    })
}

/// Parses the fidelity boot's console output.
pub fn parse_fidelity(serial: &str) -> Result<FidelityReport, LinuxRefError> {
    let bad = |what: &str| LinuxRefError::Parse(format!("fidelity guest: {what}"));
    let (serial, probed) = match serial.split_once("fidelity-probed-begin\n") {
        Some((timed, probed)) => (timed, Some(parse_probed(probed)?)),
        None => (serial, None),
    };
    let mut uname = None;
    let mut cpus = None;
    let mut getppid_ns = None;
    let mut stat = None;
    let mut rc = None;
    let mut errors = Vec::new();
    for line in serial.lines().map(str::trim_end) {
        if let Some(r) = line.strip_prefix("fidelity-kernel ") {
            let mut w = r.split_whitespace();
            uname = w.next().map(str::to_string);
            cpus = w.next().and_then(|n| n.parse::<u32>().ok());
        } else if line.starts_with("statneg-calib ") {
            getppid_ns = field(line, "getppid_ns")
                .and_then(|v| v.parse::<f64>().ok())
                .filter(|v| v.is_finite() && *v > 0.0);
        } else if line.starts_with("statneg-check ") {
            let (wrong, first, fstype, _) = check_line(line);
            stat = Some((wrong, first, fstype));
        } else if line.starts_with("fidelity-end ") {
            rc = field(line, "rc").and_then(|v| v.parse::<i32>().ok());
        } else if let Some(r) = line.strip_prefix("fidelity-error ") {
            errors.push(r.to_string());
        }
    }
    let uname = uname.ok_or_else(|| bad("no `fidelity-kernel` line: the init did not run"))?;
    let cpus = cpus.ok_or_else(|| bad("no CPU count on the `fidelity-kernel` line"))?;
    let (wrong, first, fstype) = stat.ok_or_else(|| bad("no `statneg-check` line"))?;
    let wis = parse_wis_unchecked(serial)?;
    Ok(FidelityReport {
        uname,
        cpus,
        getppid_ns,
        wis,
        wrong: wrong.ok_or_else(|| bad("no wrong= on the `statneg-check` line"))?,
        first_wrong: first.ok_or_else(|| bad("no first= on the `statneg-check` line"))?,
        fstype: fstype.ok_or_else(|| bad("no fstype= on the `statneg-check` line"))?,
        rc: rc.ok_or_else(|| bad("no `fidelity-end rc=` line"))?,
        errors,
        probed,
    })
}

/// The guest's command line: `make linux-patched`'s boot words (one CPU
/// online at boot, no timer check) and the fidelity ones.
pub fn fidelity_cmdline(r: &FidelityRun) -> String {
    format!(
        "console=ttyS0 quiet loglevel=1 panic=-1 no_timer_check {} rdinit=/init \
         fid.threads={} fid.warmup={} fid.secs={} fid.calib={} fid.path={FIDELITY_PATH} \
         fid.probed={}",
        super::BOOT_ONE_CPU,
        r.vcpus,
        r.warmup,
        r.secs,
        r.calib_secs,
        u8::from(r.probed)
    )
}

/// Boots `r.kernel` once under TCG and reads its figures. The report is
/// an error unless the guest finished, brought every vCPU up, answered
/// ENOENT every time and stat()ed in a tmpfs.
pub fn run_fidelity(
    r: &FidelityRun,
    build_dir: &Path,
    echo: bool,
) -> Result<FidelityReport, LinuxRefError> {
    let dir = build_dir
        .join("fidelity")
        .join(format!("{}-{}cpu", r.kernel, r.vcpus));
    fs::create_dir_all(&dir)
        .map_err(|e| LinuxRefError::Guest(format!("{}: {e}", dir.display())))?;
    let initramfs = appended_initramfs(
        &r.base_initramfs,
        &dir,
        &fidelity_script(),
        // Built from this tree's source: it replaces the cached reference
        // initramfs's `/statneg`, which may predate it.
        &[("statneg", super::build::statneg_source())],
        "the fidelity archive",
    )?;
    let cfg = super::guest_config(&r.image, Accel::Tcg)
        .initrd(&initramfs)
        .smp(r.vcpus)
        .memory("512M".parse().expect("constant size"))
        .cmdline(fidelity_cmdline(r));
    let windows = if r.probed { 2 } else { 1 };
    let budget = 180 + u64::from((r.warmup + r.secs) * windows + r.calib_secs) * 2;
    let serial = boot_and_judge(
        cfg,
        Duration::from_secs(budget),
        echo,
        &dir,
        &r.image,
        "the fidelity guest",
    )?;
    let rep = parse_fidelity(&serial)?;
    if rep.cpus != r.vcpus {
        return Err(LinuxRefError::Guest(format!(
            "the guest brought {} of its {} vCPUs online",
            rep.cpus, r.vcpus
        )));
    }
    if rep.wrong != 0 || rep.rc != 0 {
        return Err(LinuxRefError::Guest(format!(
            "statneg got {} answers other than ENOENT, the first {} (exit {})",
            rep.wrong, rep.first_wrong, rep.rc
        )));
    }
    if let Some(p) = &rep.probed {
        if p.rc != 0 {
            return Err(LinuxRefError::Guest(format!(
                "the probed window's statneg exited {}",
                p.rc
            )));
        }
    } else if r.probed {
        return Err(LinuxRefError::Guest("the probed window did not run".into()));
    }
    if rep.fstype != TMPFS_MAGIC {
        return Err(LinuxRefError::Guest(format!(
            "{FIDELITY_PATH}'s directory is f_type {:#x}, not tmpfs ({TMPFS_MAGIC:#x})",
            rep.fstype
        )));
    }
    Ok(rep)
}

#[cfg(test)]
mod tests {
    use super::*;

    const CONSOLE: &str = "[    1.234567] random: crng init done\n\
fidelity-kernel 7.3.4-negative 2 cpus\n\
statneg-calib getppid_ns=812.5 calls=1232896\n\
testcase:newfstatat() of a missing name (/nonexistent), 2 threads\n\
warmup\n\
min:500 max:520 total:1020\n\
measurement\n\
min:510 max:530 total:1040\n\
min:490 max:500 total:990\n\
average:1015\n\
statneg-check wrong=0 first=none fstype=0x1021994\n\
fidelity-end rc=0\n\
linuxref-done\n";

    #[test]
    fn reads_the_constant_the_window_and_the_checks() {
        let r = parse_fidelity(CONSOLE).unwrap();
        assert_eq!(r.uname, "7.3.4-negative");
        assert_eq!(r.cpus, 2);
        assert_eq!(r.getppid_ns, Some(812.5));
        assert_eq!(r.wis.average, 1015);
        assert_eq!(r.wis.measurement.len(), 2);
        assert_eq!((r.wrong, r.fstype, r.rc), (0, TMPFS_MAGIC, 0));
        assert_eq!(r.first_wrong, "none");
        assert!(r.errors.is_empty());
    }

    #[test]
    fn a_missing_or_bad_calibration_is_none_not_a_number() {
        let c = CONSOLE.replace("getppid_ns=812.5", "getppid_ns=nan");
        assert_eq!(parse_fidelity(&c).unwrap().getppid_ns, None);
        let c = CONSOLE.replace("statneg-calib getppid_ns=812.5 calls=1232896\n", "");
        assert_eq!(parse_fidelity(&c).unwrap().getppid_ns, None);
    }

    #[test]
    fn the_probed_window_is_read_apart_with_its_per_op_counters() {
        let probed = "fidelity-probed-begin\n\
testcase:newfstatat() of a missing name (/nonexistent), 2 threads\n\
warmup\n\
min:100 max:110 total:210\n\
measurement\n\
min:100 max:100 total:200\n\
average:200\n\
statneg-check wrong=0 first=none fstype=0x1021994 ops=1000\n\
fidelity-probed lookup_slow=1000 __d_alloc=1000 d_alloc=0 down_read=0 down_write=0 spin_lock=3000 spin_trylock=500 spin_lock_irqsave=0\n\
fidelity-probed-end rc=0\n";
        let c = CONSOLE.replace("linuxref-done\n", &format!("{probed}linuxref-done\n"));
        let r = parse_fidelity(&c).unwrap();
        assert_eq!(r.wis.average, 1015, "the timed window is the first one");
        let p = r.probed.expect("a probed window");
        assert_eq!((p.wis.average, p.ops, p.rc), (200, 1000, 0));
        let o = p.per_op().unwrap();
        assert_eq!(
            (o.allocs, o.fallbacks, o.rwsem, o.locks),
            (1.0, 1.0, 0.0, 3.5)
        );
        // Without the hits line it is an error, not a window without hits.
        let c2 = c.replace(
            "fidelity-probed lookup_slow",
            "fidelity-notprobed lookup_slow",
        );
        assert!(parse_fidelity(&c2).is_err());
        assert_eq!(parse_fidelity(CONSOLE).unwrap().probed, None);
    }

    #[test]
    fn a_wrong_answer_is_read_with_the_first_one_named() {
        let c = CONSOLE
            .replace("wrong=0 first=none", "wrong=1 first=exists")
            .replace("rc=0", "rc=1");
        let r = parse_fidelity(&c).unwrap();
        assert_eq!((r.wrong, r.first_wrong.as_str(), r.rc), (1, "exists", 1));
    }

    #[test]
    fn a_console_without_its_lines_is_an_error() {
        assert!(parse_fidelity("Kernel panic\n").is_err());
        let c = CONSOLE.replace("statneg-check wrong=0 first=none fstype=0x1021994\n", "");
        assert!(parse_fidelity(&c).is_err());
        let c = CONSOLE.replace(" first=none", "");
        assert!(parse_fidelity(&c).is_err(), "a check line without first=");
        let c = CONSOLE.replace("average:1015", "average:9999");
        assert!(
            parse_fidelity(&c).is_err(),
            "an average that is not the mean"
        );
    }

    #[test]
    fn the_command_line_boots_like_linux_patched() {
        let c = fidelity_cmdline(&FidelityRun {
            kernel: "noalloc".into(),
            image: "bz".into(),
            base_initramfs: "i".into(),
            vcpus: 2,
            warmup: 1,
            secs: 3,
            calib_secs: 1,
            probed: true,
        });
        assert!(c.contains("maxcpus=1") && c.contains("no_timer_check"));
        assert!(c.contains(
            "fid.threads=2 fid.warmup=1 fid.secs=3 fid.calib=1 fid.path=/nonexistent fid.probed=1"
        ));
    }
}
