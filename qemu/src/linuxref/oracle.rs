//! The dcache stress oracle in the reference guest: `bench/linux/dcache-oracle.c`
//! (create/unlink/rename churn against concurrent stats, every answer checked
//! against what the churn allowed) on the guest's tmpfs, under any kernel
//! (Debian's or one of ours, see [`super::kbuild`]).
//!
//! The reference initramfs is reused unchanged: a second newc archive is
//! appended to it (the kernel unpacks concatenated archives in order), holding
//! the static oracle and an `/init` of its own that replaces the reference's
//! for this boot. Touches `BUILD_DIR/kbuild/oracle/` and QEMU.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use super::{LinuxRefError, Paths};
use crate::runner::{Accel, GuestStatus, QemuConfig, Runner};

/// The `/init` of the oracle's boot (`bench/linux/oracle-init.sh`): tmpfs,
/// the oracle, power off.
const ORACLE_INIT: &str = include_str!("../../../bench/linux/oracle-init.sh");

/// The C source of the oracle.
pub fn oracle_source() -> PathBuf {
    crate::runner::workspace_root().join("bench/linux/dcache-oracle.c")
}

/// What one oracle boot found.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OracleReport {
    /// `uname -r` in the guest.
    pub uname: String,
    /// The summary line (`dcache-oracle: secs=… wrong=W …`).
    pub summary: String,
    /// Stats done and checked exactly, and wrong answers.
    pub stats: u64,
    /// Stats whose name did not change existence during the call.
    pub exact: u64,
    /// Answers the churn did not allow.
    pub wrong: u64,
    /// The first wrong answers (`dcache-oracle-wrong …` lines).
    pub examples: Vec<String>,
}

/// The value of `key=` in a `key=value` line.
fn field(line: &str, key: &str) -> Option<u64> {
    line.split_whitespace()
        .find_map(|w| w.strip_prefix(key)?.strip_prefix('='))?
        .parse()
        .ok()
}

/// Parses the oracle's console output.
pub fn parse_oracle(serial: &str) -> Result<OracleReport, LinuxRefError> {
    let summary = serial
        .lines()
        .find(|l| l.starts_with("dcache-oracle: "))
        .ok_or_else(|| LinuxRefError::Parse("no `dcache-oracle:` summary line".into()))?;
    let get = |k: &str| {
        field(summary, k).ok_or_else(|| LinuxRefError::Parse(format!("no {k}= in `{summary}`")))
    };
    Ok(OracleReport {
        uname: serial
            .lines()
            .find_map(|l| l.strip_prefix("dcache-oracle-kernel "))
            .and_then(|r| r.split_whitespace().next())
            .unwrap_or_default()
            .to_string(),
        summary: summary.to_string(),
        stats: get("stats")?,
        exact: get("exact")?,
        wrong: get("wrong")?,
        examples: serial
            .lines()
            .filter(|l| l.starts_with("dcache-oracle-wrong "))
            .map(str::to_string)
            .collect(),
    })
}

/// The reference initramfs with the oracle's archive appended, rebuilt when
/// the oracle's source or the reference initramfs changed.
fn oracle_initramfs(paths: &Paths, build_dir: &Path) -> Result<PathBuf, LinuxRefError> {
    let dir = build_dir.join("kbuild").join("oracle");
    let root = dir.join("root");
    let _ = fs::remove_dir_all(&root);
    fs::create_dir_all(&root)
        .map_err(|e| LinuxRefError::Guest(format!("{}: {e}", root.display())))?;
    let sh = |what: &str, script: &str, args: &[&Path]| -> Result<(), LinuxRefError> {
        let out = Command::new("sh")
            .arg("-c")
            .arg(script)
            .arg("sh")
            .args(args)
            .output()
            .map_err(|e| LinuxRefError::Guest(format!("{what}: {e}")))?;
        if out.status.success() {
            Ok(())
        } else {
            Err(LinuxRefError::Guest(format!(
                "{what}: {}",
                String::from_utf8_lossy(&out.stderr).trim()
            )))
        }
    };
    sh(
        "compiling the oracle (gcc -static; needs libc6-dev)",
        "gcc -static -O2 -pthread -Wall -o \"$1/dcache-oracle\" \"$2\"",
        &[&root, &oracle_source()],
    )?;
    let init = root.join("init");
    fs::write(&init, ORACLE_INIT).map_err(|e| LinuxRefError::Guest(format!("init: {e}")))?;
    let out = dir.join("initramfs.gz");
    sh(
        "packing the oracle's initramfs",
        "chmod 755 \"$1/init\" && cp \"$2\" \"$3.tmp\" && \
         (cd \"$1\" && printf '%s\\n' . init dcache-oracle | cpio -o -H newc --quiet -R 0:0 | gzip -6) >> \"$3.tmp\" && \
         mv \"$3.tmp\" \"$3\"",
        &[&root, &paths.initramfs, &out],
    )?;
    Ok(out)
}

/// Boots `paths`' kernel with `cpus` vCPUs and runs the oracle for `secs`
/// seconds with `readers` stat threads beside its one writer.
pub fn run_oracle(
    paths: &Paths,
    build_dir: &Path,
    cpus: u32,
    readers: u32,
    secs: u32,
    echo: bool,
) -> Result<OracleReport, LinuxRefError> {
    if cpus == 0 || readers == 0 || secs == 0 {
        return Err(LinuxRefError::Args(
            "need cpus, readers and secs >= 1".into(),
        ));
    }
    let initramfs = oracle_initramfs(paths, build_dir)?;
    let cfg = QemuConfig::new(&paths.kernel)
        .initrd(&initramfs)
        .smp(cpus)
        .memory("512M".parse().expect("constant size"))
        .accel(Accel::Tcg)
        .cmdline(format!(
            "console=ttyS0 quiet loglevel=1 panic=-1 rdinit=/init oracle.readers={readers} oracle.secs={secs}"
        ));
    let out = Runner::new(cfg)
        .timeout(Duration::from_secs(180 + u64::from(secs)))
        .echo(echo)
        .run()
        .map_err(|e| LinuxRefError::Guest(e.to_string()))?;
    let serial = out.serial_output.replace('\r', "");
    if !serial.contains("linuxref-done") || !matches!(out.status, GuestStatus::NoDebugExit) {
        let tail: Vec<&str> = serial.lines().rev().take(15).collect();
        let tail: Vec<&str> = tail.into_iter().rev().collect();
        return Err(LinuxRefError::Guest(format!(
            "the oracle's guest did not finish ({}); last console lines:\n{}",
            out.status,
            tail.join("\n")
        )));
    }
    parse_oracle(&serial)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_the_summary_and_wrong_answers() {
        let s = "dcache-oracle-kernel 6.12.117-noalloc 2 cpus\n\
                 dcache-oracle-wrong name=/mnt/tmpfs/oracle/b3 expected=present got=No such file or directory (x)\n\
                 dcache-oracle: secs=60 readers=1 stats=100 exact=90 wrong=1 creates=5 renames=4 exchanges=3 unlinks=2\n";
        let r = parse_oracle(s).unwrap();
        assert_eq!((r.stats, r.exact, r.wrong), (100, 90, 1));
        assert_eq!(r.uname, "6.12.117-noalloc");
        assert_eq!(r.examples.len(), 1);
        assert!(parse_oracle("nothing\n").is_err());
    }
}
