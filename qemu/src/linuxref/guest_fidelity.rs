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
//! [`super::run_negcost`] does). No modules, no probes: the timed run is
//! the only thing the guest does.
//!
//! Touches `BUILD_DIR/fidelity/KERNEL-NCPU/` (the archive, the console) and
//! QEMU; reads the cached reference initramfs and the kernel image, builds
//! neither.

use std::fs;
use std::path::{Path, PathBuf};
use std::time::Duration;

use super::walks::{appended_initramfs, boot_and_judge};
use super::{parse_wis, LinuxRefError, WisResult};
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
}

fn field<'a>(line: &'a str, key: &str) -> Option<&'a str> {
    line.split_whitespace()
        .find_map(|w| w.strip_prefix(key)?.strip_prefix('='))
}

/// Parses the fidelity boot's console output.
pub fn parse_fidelity(serial: &str) -> Result<FidelityReport, LinuxRefError> {
    let bad = |what: &str| LinuxRefError::Parse(format!("fidelity guest: {what}"));
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
            let wrong = field(line, "wrong").and_then(|v| v.parse::<u64>().ok());
            let first = field(line, "first").map(str::to_string);
            let fstype = field(line, "fstype")
                .and_then(|v| v.strip_prefix("0x"))
                .and_then(|v| u64::from_str_radix(v, 16).ok());
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
    let wis = parse_wis(serial)?;
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
    })
}

/// The guest's command line: `make linux-patched`'s boot words (one CPU
/// online at boot, no timer check) and the fidelity ones.
pub fn fidelity_cmdline(r: &FidelityRun) -> String {
    format!(
        "console=ttyS0 quiet loglevel=1 panic=-1 no_timer_check {} rdinit=/init \
         fid.threads={} fid.warmup={} fid.secs={} fid.calib={} fid.path={FIDELITY_PATH}",
        super::BOOT_ONE_CPU,
        r.vcpus,
        r.warmup,
        r.secs,
        r.calib_secs
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
    let budget = 180 + u64::from(r.warmup + r.secs + r.calib_secs) * 2;
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
        });
        assert!(c.contains("maxcpus=1") && c.contains("no_timer_check"));
        assert!(
            c.contains("fid.threads=2 fid.warmup=1 fid.secs=3 fid.calib=1 fid.path=/nonexistent")
        );
    }
}
