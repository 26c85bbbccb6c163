//! The dcache stress oracle in the reference guest: `qemu/linuxref/dcache-oracle.c`
//! (create/unlink/rename churn against concurrent stats, every answer checked
//! against what the churn allowed) on the guest's tmpfs, its ramfs and its
//! ext4 disk (a patch must not change a filesystem it does not target),
//! under any kernel (Debian's or one of ours, see [`super::kbuild`]); then
//! the case-folding check and the RESOLVE_CACHED check of a missing name.
//!
//! The reference initramfs is reused unchanged: a second newc archive is
//! appended to it (the kernel unpacks concatenated archives in order), holding
//! the static oracle and an `/init` of its own
//! (`qemu/linuxref/oracle-init.sh`) that replaces the reference's for this
//! boot; the ext4 image is attached `snapshot=on`, as for statneg. Touches
//! `BUILD_DIR/kbuild/oracle-REL/` and QEMU.

use std::path::{Path, PathBuf};
use std::time::Duration;

use super::tools::initramfs_with_init;
use super::{Fs, LinuxRefError, Paths};
use crate::runner::{Accel, GuestStatus, Runner};

/// The `/init` of the oracle's boot (`qemu/linuxref/oracle-init.sh`): tmpfs
/// and ext4 mounted, the oracle on each filesystem asked for, power off.
const ORACLE_INIT: &str = include_str!("../../linuxref/oracle-init.sh");

/// The C source of the oracle.
pub fn oracle_source() -> PathBuf {
    super::guest_file("dcache-oracle.c")
}

/// The case-folding check the oracle's boot runs after it
/// (`qemu/linuxref/casefold.c`, on a tmpfs mounted with `-o casefold`).
pub fn casefold_source() -> PathBuf {
    super::guest_file("casefold.c")
}

/// The RESOLVE_CACHED check the oracle's boot runs last
/// (`qemu/linuxref/cached.c`, on tmpfs, ramfs, ext4 and devtmpfs).
pub fn cached_source() -> PathBuf {
    super::guest_file("cached.c")
}

/// What a name missing from a fresh directory answered on one filesystem:
/// `openat2(RESOLVE_CACHED)` of it (`ENOENT`, `EAGAIN`, ...), then an
/// `O_CREAT` open of it and `RESOLVE_CACHED` of the created name (`ok` or
/// the error).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Cached {
    /// The filesystem (`dir=/mnt/FS`).
    pub fs: Fs,
    /// RESOLVE_CACHED of the missing name.
    pub miss: String,
    /// O_CREAT open of it, and a stat that finds it.
    pub create: String,
    /// RESOLVE_CACHED of the created name.
    pub hit: String,
}

/// The `cached: dir=/mnt/FS miss=E create=C hit=H` lines of a boot.
pub fn parse_cached(serial: &str) -> Result<Vec<Cached>, LinuxRefError> {
    let word = |l: &str, k: &str| {
        l.split_whitespace()
            .find_map(|w| w.strip_prefix(k)?.strip_prefix('='))
            .map(str::to_string)
            .ok_or_else(|| LinuxRefError::Parse(format!("no {k}= in `{l}`")))
    };
    serial
        .lines()
        .filter(|l| l.starts_with("cached: "))
        .map(|l| {
            let dir = word(l, "dir")?;
            let fs = dir
                .strip_prefix("/mnt/")
                .ok_or_else(|| LinuxRefError::Parse(format!("`{l}`: not a /mnt/FS")))?
                .parse()
                .map_err(LinuxRefError::Parse)?;
            Ok(Cached {
                fs,
                miss: word(l, "miss")?,
                create: word(l, "create")?,
                hit: word(l, "hit")?,
            })
        })
        .collect()
}

/// The `linuxcached` line `make linux-oracle` prints per filesystem:
/// `linuxcached kernel=K miss=E create=C hit=H fs=F`.
pub fn cached_line(kernel: &str, c: &Cached) -> String {
    format!(
        "linuxcached kernel={kernel} miss={} create={} hit={} fs={}",
        c.miss, c.create, c.hit, c.fs
    )
}

/// Whether the answers are the kernel's: the missing name is `ENOENT`
/// where a dcache miss is final (`final_miss`), `EAGAIN` (the lookup
/// would have to ask the filesystem) elsewhere; the create and the cached
/// lookup of the created name succeed everywhere.
pub fn cached_verdict(c: &Cached, final_miss: bool) -> bool {
    let want = if final_miss { "ENOENT" } else { "EAGAIN" };
    c.miss == want && c.create == "ok" && c.hit == "ok"
}

/// What the case-folding check answered in one boot: its checks and wrong
/// answers, or `None` where the kernel's tmpfs has no case folding (6.12).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Casefold {
    /// Answers checked.
    pub checks: u64,
    /// Answers a case-folding tmpfs must not give.
    pub wrong: u64,
}

/// The `casefold: checks=N wrong=W` line of a boot, if the check ran.
pub fn parse_casefold(serial: &str) -> Option<Casefold> {
    let l = serial
        .lines()
        .find(|l| l.starts_with("casefold: checks="))?;
    Some(Casefold {
        checks: field(l, "checks")?,
        wrong: field(l, "wrong")?,
    })
}

/// The `linuxcasefold` line `make linux-oracle` prints for a boot:
/// `linuxcasefold kernel=K checks=N wrong=W` (`checks=- wrong=-`: no case
/// folding in this kernel's tmpfs).
pub fn casefold_line(kernel: &str, c: Option<Casefold>) -> String {
    match c {
        Some(c) => format!(
            "linuxcasefold kernel={kernel} checks={} wrong={}",
            c.checks, c.wrong
        ),
        None => format!("linuxcasefold kernel={kernel} checks=- wrong=-"),
    }
}

/// What the oracle found on one filesystem of a boot.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OracleReport {
    /// The filesystem it ran on.
    pub fs: Fs,
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

/// Parses the oracle's console output: one report per
/// `dcache-oracle-begin fs=FS` section, in order.
pub fn parse_oracle(serial: &str) -> Result<Vec<OracleReport>, LinuxRefError> {
    let uname = serial
        .lines()
        .find_map(|l| l.strip_prefix("dcache-oracle-kernel "))
        .and_then(|r| r.split_whitespace().next())
        .unwrap_or_default()
        .to_string();
    let mut out = Vec::new();
    let mut lines = serial.lines().peekable();
    while let Some(l) = lines.next() {
        let Some(name) = l.strip_prefix("dcache-oracle-begin fs=") else {
            continue;
        };
        let fs: Fs = name.trim().parse().map_err(LinuxRefError::Parse)?;
        let mut section = Vec::new();
        while let Some(l) = lines.next_if(|l| !l.starts_with("dcache-oracle-begin ")) {
            section.push(l);
        }
        let summary = section
            .iter()
            .find(|l| l.starts_with("dcache-oracle: "))
            .ok_or_else(|| {
                LinuxRefError::Parse(format!("no `dcache-oracle:` summary line for {fs}"))
            })?;
        let get = |k: &str| {
            field(summary, k).ok_or_else(|| LinuxRefError::Parse(format!("no {k}= in `{summary}`")))
        };
        out.push(OracleReport {
            fs,
            uname: uname.clone(),
            summary: summary.to_string(),
            stats: get("stats")?,
            exact: get("exact")?,
            wrong: get("wrong")?,
            examples: section
                .iter()
                .filter(|l| l.starts_with("dcache-oracle-wrong "))
                .map(|l| l.to_string())
                .collect(),
        });
    }
    if out.is_empty() {
        return Err(LinuxRefError::Parse(
            "no `dcache-oracle-begin fs=` section".into(),
        ));
    }
    Ok(out)
}

/// The `linuxoracle` line of one report (the format `make linux-oracle`
/// prints; `fs=` is last):
/// `linuxoracle kernel=K vcpus=N secs=S stats=N exact=E wrong=W fs=F`.
pub fn oracle_line(kernel: &str, vcpus: u32, secs: u32, r: &OracleReport) -> String {
    format!(
        "linuxoracle kernel={kernel} vcpus={vcpus} secs={secs} stats={} exact={} wrong={} fs={}",
        r.stats, r.exact, r.wrong, r.fs
    )
}

/// Whether a report is what a kernel must show: no wrong answer, except on
/// the filesystems a deliberately broken kernel is broken on (`broken_on`),
/// where finding none is the failure.
pub fn oracle_verdict(r: &OracleReport, broken_on: &[Fs]) -> bool {
    (r.wrong > 0) == broken_on.contains(&r.fs)
}

/// The reference initramfs with the oracle's archive appended, rebuilt when
/// the oracle's source or the reference initramfs changed.
fn oracle_initramfs(paths: &Paths, build_dir: &Path) -> Result<PathBuf, LinuxRefError> {
    let dir = build_dir
        .join("kbuild")
        .join(format!("oracle-{}", paths.release.name()));
    let programs = [
        (oracle_source(), "dcache-oracle", &["-pthread"][..]),
        (casefold_source(), "casefold", &[][..]),
        (cached_source(), "cached", &[][..]),
    ];
    initramfs_with_init(&paths.initramfs, &dir, ORACLE_INIT.as_bytes(), &programs)
        .map_err(|e| LinuxRefError::Guest(e.to_string()))
}

/// What one oracle boot found: see [`run_oracle`].
#[derive(Clone, Debug)]
pub struct OracleRun {
    /// The oracle's report per filesystem, in the order asked.
    pub reports: Vec<OracleReport>,
    /// The case-folding check (`None`: no case folding in this tmpfs).
    pub casefold: Option<Casefold>,
    /// The RESOLVE_CACHED check, per filesystem.
    pub cached: Vec<Cached>,
}

/// Boots `paths`' kernel with `cpus` vCPUs and runs the oracle for `secs`
/// seconds on each of `fss` with `readers` stat threads beside its one
/// writer (and its dentry dropper); one report per filesystem, in order,
/// what the case-folding check that follows answered, and what the
/// RESOLVE_CACHED check answered on tmpfs, ramfs, ext4 and devtmpfs.
pub fn run_oracle(
    paths: &Paths,
    build_dir: &Path,
    fss: &[Fs],
    cpus: u32,
    readers: u32,
    secs: u32,
    echo: bool,
) -> Result<OracleRun, LinuxRefError> {
    if cpus == 0 || readers == 0 || secs == 0 || fss.is_empty() {
        return Err(LinuxRefError::Args(
            "need a filesystem, and cpus, readers and secs >= 1".into(),
        ));
    }
    let fs_list = fss.iter().map(|f| f.name()).collect::<Vec<_>>().join(",");
    let initramfs = oracle_initramfs(paths, build_dir)?;
    let cfg = super::guest_config(&paths.kernel, Accel::Tcg)
        .initrd(&initramfs)
        .smp(cpus)
        .memory("512M".parse().expect("constant size"))
        .disk(&paths.ext4_image)
        .cmdline(format!(
            "console=ttyS0 quiet loglevel=1 panic=-1 no_timer_check {} rdinit=/init \
             oracle.fs={fs_list} oracle.readers={readers} oracle.secs={secs}",
            super::BOOT_ONE_CPU
        ));
    let out = Runner::new(cfg)
        .timeout(Duration::from_secs(
            180 + u64::from(secs) * fss.len() as u64,
        ))
        .echo(echo)
        .run()
        .map_err(|e| LinuxRefError::Guest(e.to_string()))?;
    let serial = out.serial_output.replace('\r', "");
    super::judge(
        &paths.kernel,
        &format!("the oracle's guest ({cpus} vCPUs)"),
        &out.status,
        &serial,
        serial.contains("linuxref-done") && matches!(out.status, GuestStatus::NoDebugExit),
    )?;
    let reports = parse_oracle(&serial)?;
    let kernel_line = serial
        .lines()
        .find_map(|l| l.strip_prefix("dcache-oracle-kernel "))
        .unwrap_or_default();
    super::check_online_cpus(kernel_line.split_once(' ').map_or("", |(_, n)| n), cpus)?;
    if reports.iter().map(|r| r.fs).ne(fss.iter().copied()) {
        return Err(LinuxRefError::Parse(format!(
            "the oracle ran on {:?}, not on {fs_list}",
            reports.iter().map(|r| r.fs.name()).collect::<Vec<_>>()
        )));
    }
    let cached = parse_cached(&serial)?;
    if cached.len() != 4 {
        return Err(LinuxRefError::Parse(format!(
            "the RESOLVE_CACHED check answered on {} filesystems, not 4 (tmpfs, ramfs, ext4, devtmpfs)",
            cached.len()
        )));
    }
    Ok(OracleRun {
        reports,
        casefold: parse_casefold(&serial),
        cached,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const SERIAL: &str = "dcache-oracle-kernel 7.3.4-noalloc-flag-collision 2 cpus\n\
        dcache-oracle-begin fs=tmpfs\n\
        dcache-oracle: secs=60 readers=1 stats=100 exact=90 wrong=0 creates=5 renames=4 exchanges=3 unlinks=2 drops=9\n\
        dcache-oracle-exit fs=tmpfs rc=0\n\
        dcache-oracle-begin fs=ext4\n\
        dcache-oracle-wrong name=/mnt/ext4/oracle/p3 expected=present got=No such file or directory (x)\n\
        dcache-oracle: secs=60 readers=1 stats=80 exact=70 wrong=1 creates=5 renames=4 exchanges=3 unlinks=2 drops=9\n\
        dcache-oracle-exit fs=ext4 rc=1\n\
        linuxref-done\n";

    #[test]
    fn the_cached_check_is_judged_per_filesystem() {
        let serial = "casefold-exit rc=0\n\
            cached: dir=/mnt/tmpfs miss=ENOENT create=ok hit=ok\n\
            cached: dir=/mnt/ramfs miss=ENOENT create=ok hit=ok\n\
            cached: dir=/mnt/ext4 miss=EAGAIN create=ok hit=ok\n\
            cached: dir=/mnt/devtmpfs miss=ENOENT create=ok hit=ok\n\
            cached-exit rc=0\nlinuxref-done\n";
        let c = parse_cached(serial).unwrap();
        assert_eq!(
            c.iter().map(|c| c.fs).collect::<Vec<_>>(),
            [Fs::Tmpfs, Fs::Ramfs, Fs::Ext4, Fs::Devtmpfs]
        );
        assert_eq!(
            cached_line("7.3.4-noalloc", &c[0]),
            "linuxcached kernel=7.3.4-noalloc miss=ENOENT create=ok hit=ok fs=tmpfs"
        );
        // noalloc: final on tmpfs and ramfs, not on ext4.
        assert!(cached_verdict(&c[0], true) && cached_verdict(&c[1], true));
        assert!(cached_verdict(&c[2], false));
        // devtmpfs is a tmpfs instance: final on noalloc too.
        assert!(cached_verdict(&c[3], true) && !cached_verdict(&c[3], false));
        // vanilla would have said EAGAIN on tmpfs: ENOENT there is wrong,
        // and so is EAGAIN where the miss is final.
        assert!(!cached_verdict(&c[0], false) && !cached_verdict(&c[2], true));
        // A final miss taken for the answer of an O_CREAT open.
        let bad = Cached {
            create: "ENOENT".into(),
            ..c[0].clone()
        };
        assert!(!cached_verdict(&bad, true));
        assert!(parse_cached("cached: dir=/mnt/btrfs miss=EAGAIN create=ok hit=ok\n").is_err());
        assert!(parse_cached("cached: dir=/mnt/tmpfs create=ok hit=ok\n").is_err());
    }

    #[test]
    fn the_casefold_line_says_whether_the_check_ran() {
        let c = parse_casefold("x\ncasefold: checks=20 wrong=1\nlinuxref-done\n");
        assert_eq!(
            c,
            Some(Casefold {
                checks: 20,
                wrong: 1
            })
        );
        assert_eq!(
            casefold_line("7.3.4-noalloc", c),
            "linuxcasefold kernel=7.3.4-noalloc checks=20 wrong=1"
        );
        let none = parse_casefold("casefold-unsupported: mount -o casefold failed\n");
        assert_eq!(none, None);
        assert_eq!(
            casefold_line("6.12.117-vanilla", none),
            "linuxcasefold kernel=6.12.117-vanilla checks=- wrong=-"
        );
    }

    #[test]
    fn parses_one_report_per_filesystem() {
        let r = parse_oracle(SERIAL).unwrap();
        assert_eq!(r.len(), 2);
        assert_eq!(
            (r[0].fs, r[0].stats, r[0].exact, r[0].wrong),
            (Fs::Tmpfs, 100, 90, 0)
        );
        assert_eq!(
            (r[1].fs, r[1].stats, r[1].exact, r[1].wrong),
            (Fs::Ext4, 80, 70, 1)
        );
        assert_eq!(r[1].uname, "7.3.4-noalloc-flag-collision");
        assert!(r[0].examples.is_empty());
        assert_eq!(r[1].examples.len(), 1);
        assert!(parse_oracle("nothing\n").is_err());
        // A section without its summary is an error, not a clean report.
        assert!(parse_oracle("dcache-oracle-begin fs=ext4\nlinuxref-done\n").is_err());
        assert!(parse_oracle("dcache-oracle-begin fs=xfs\n").is_err());
    }

    #[test]
    fn the_line_keeps_its_format_with_fs_last() {
        let r = &parse_oracle(SERIAL).unwrap()[1];
        assert_eq!(
            oracle_line("7.3.4-noalloc-flag-collision", 2, 60, r),
            "linuxoracle kernel=7.3.4-noalloc-flag-collision vcpus=2 secs=60 \
             stats=80 exact=70 wrong=1 fs=ext4"
        );
    }

    #[test]
    fn a_broken_kernel_must_fail_where_it_is_broken_and_only_there() {
        let r = parse_oracle(SERIAL).unwrap();
        let (tmpfs, ext4) = (&r[0], &r[1]);
        assert!(oracle_verdict(tmpfs, &[]));
        assert!(!oracle_verdict(ext4, &[]));
        assert!(oracle_verdict(ext4, &[Fs::Ext4]));
        assert!(oracle_verdict(tmpfs, &[Fs::Ext4]));
        assert!(!oracle_verdict(tmpfs, &[Fs::Tmpfs, Fs::Ramfs]));
        assert!(!oracle_verdict(ext4, &[Fs::Tmpfs, Fs::Ramfs]));
    }
}
