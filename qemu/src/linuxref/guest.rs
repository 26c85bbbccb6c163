//! Running the reference: one QEMU boot of the guest through
//! [`crate::runner`] (the ext4 image attached `snapshot=on`, so the cached
//! image is never modified), its console split per filesystem; and
//! `statneg-host` run natively on the host.

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

use super::{parse_wis, Fs, LinuxRefError, Paths, WisResult};
use crate::runner::{Accel, GuestStatus, QemuConfig, Runner};

/// One boot of the reference guest.
#[derive(Clone, Debug)]
pub struct GuestRun {
    /// vCPUs (also the statneg thread count).
    pub cpus: u32,
    /// Filesystems to run on, in order, within the same boot.
    pub fs: Vec<Fs>,
    /// Warm-up seconds.
    pub warmup: u32,
    /// Measured seconds.
    pub secs: u32,
    /// Accelerator.
    pub accel: Accel,
    /// Stream the guest console to stdout.
    pub echo: bool,
}

/// What a boot produced: one report per filesystem, plus the boot's wall time.
#[derive(Clone, Debug)]
pub struct GuestReport {
    /// Reports in the order requested.
    pub results: Vec<(Fs, WisResult)>,
    /// Wall time of the whole boot (start-up, runs, power-off).
    pub wall: Duration,
}

/// Boots the guest once with `cpus` vCPUs and runs statneg on `fs` with as
/// many threads.
pub fn run_statneg(
    paths: &Paths,
    cpus: u32,
    fs: Fs,
    warmup: u32,
    secs: u32,
) -> Result<WisResult, LinuxRefError> {
    let run = GuestRun {
        cpus,
        fs: vec![fs],
        warmup,
        secs,
        accel: Accel::Tcg,
        echo: false,
    };
    let mut report = run_guest(paths, &run)?;
    Ok(report.results.remove(0).1)
}

/// Boots the guest once and runs statneg on every filesystem in `run.fs`.
pub fn run_guest(paths: &Paths, run: &GuestRun) -> Result<GuestReport, LinuxRefError> {
    if run.cpus == 0 || run.cpus > 255 || run.secs == 0 || run.fs.is_empty() {
        return Err(LinuxRefError::Args(
            "need 1..=255 cpus, secs >= 1 and at least one filesystem".into(),
        ));
    }
    let fs_list: Vec<&str> = run.fs.iter().map(|f| f.name()).collect();
    let cmdline = format!(
        "console=ttyS0 quiet loglevel=1 panic=-1 rdinit=/init lr.fs={} lr.threads={} lr.warmup={} lr.secs={}",
        fs_list.join(","),
        run.cpus,
        run.warmup,
        run.secs
    );
    let cfg = QemuConfig::new(&paths.kernel)
        .initrd(&paths.initramfs)
        .disk(&paths.ext4_image)
        .smp(run.cpus)
        .memory("512M".parse().expect("constant size"))
        .accel(run.accel)
        .cmdline(cmdline);
    // Boot takes ~15-30 s under TCG; each run warmup + secs plus start-up.
    let budget = 180 + u64::from(run.warmup + run.secs + 5) * run.fs.len() as u64 * 2;
    let out = Runner::new(cfg)
        .timeout(Duration::from_secs(budget))
        .echo(run.echo)
        .run()
        .map_err(|e| LinuxRefError::Guest(e.to_string()))?;
    let serial = out.serial_output.replace('\r', "");
    if !serial.contains("linuxref-done") {
        let tail: Vec<&str> = serial.lines().rev().take(15).collect();
        let tail: Vec<&str> = tail.into_iter().rev().collect();
        return Err(LinuxRefError::Guest(format!(
            "the guest did not finish ({}); last console lines:\n{}",
            out.status,
            tail.join("\n")
        )));
    }
    if !matches!(out.status, GuestStatus::NoDebugExit) {
        return Err(LinuxRefError::Guest(format!(
            "unexpected end after the runs: {}",
            out.status
        )));
    }
    let mut results = Vec::new();
    for fs in &run.fs {
        let section = guest_section(&serial, *fs)?;
        results.push((*fs, parse_wis(section)?));
    }
    Ok(GuestReport {
        results,
        wall: out.wall,
    })
}

/// The console text between `linuxref-begin fs=X` and `linuxref-end fs=X rc=0`.
fn guest_section(serial: &str, fs: Fs) -> Result<&str, LinuxRefError> {
    let begin = format!("linuxref-begin fs={}\n", fs.name());
    let start = serial
        .find(&begin)
        .ok_or_else(|| LinuxRefError::Parse(format!("no run on {fs} in the guest output")))?
        + begin.len();
    let end_marker = format!("linuxref-end fs={} rc=", fs.name());
    let end = serial[start..]
        .find(&end_marker)
        .ok_or_else(|| LinuxRefError::Parse(format!("the run on {fs} did not end")))?;
    let rc: String = serial[start + end + end_marker.len()..]
        .chars()
        .take_while(|c| c.is_ascii_digit())
        .collect();
    if rc != "0" {
        return Err(LinuxRefError::Guest(format!(
            "statneg on {fs} exited with status {rc}: {}",
            serial[start..start + end].trim()
        )));
    }
    Ok(&serial[start..start + end])
}

/// Runs `statneg-host` on the host: `threads` threads stat a missing name
/// inside `dir` (e.g. `/dev/shm` for tmpfs, `/tmp` for ext4).
pub fn run_host_statneg(
    paths: &Paths,
    dir: &Path,
    threads: u32,
    warmup: u32,
    secs: u32,
) -> Result<WisResult, LinuxRefError> {
    let missing = dir.join(format!("linuxref-missing-{}", std::process::id()));
    let out = Command::new(&paths.statneg_host)
        .arg(&missing)
        .args([threads.to_string(), warmup.to_string(), secs.to_string()])
        .stdin(Stdio::null())
        .output()
        .map_err(|e| LinuxRefError::Host(format!("{}: {e}", paths.statneg_host.display())))?;
    if !out.status.success() {
        return Err(LinuxRefError::Host(format!(
            "exit {}: {}",
            out.status,
            String::from_utf8_lossy(&out.stderr).trim()
        )));
    }
    parse_wis(&String::from_utf8_lossy(&out.stdout))
}

#[cfg(test)]
mod tests {
    use super::*;

    const REPORT: &str = "testcase:stat() of a missing name (/mnt/tmpfs/x), 2 threads\n\
        warmup\n\
        min:10 max:12 total:22\n\
        measurement\n\
        min:11 max:13 total:24\n\
        min:9 max:11 total:20\n\
        average:22\n";

    #[test]
    fn guest_sections_are_split_and_checked() {
        let serial = format!(
            "boot noise\nlinuxref-begin fs=tmpfs\n{REPORT}linuxref-end fs=tmpfs rc=0\n\
             linuxref-begin fs=ext4\nstatneg: bad\nlinuxref-end fs=ext4 rc=1\nlinuxref-done\n"
        );
        assert_eq!(
            parse_wis(guest_section(&serial, Fs::Tmpfs).unwrap())
                .unwrap()
                .average,
            22
        );
        assert!(matches!(
            guest_section(&serial, Fs::Ext4),
            Err(LinuxRefError::Guest(_))
        ));
        assert!(guest_section("nothing", Fs::Tmpfs).is_err());
    }
}
