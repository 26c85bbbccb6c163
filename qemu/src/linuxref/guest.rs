//! Running the reference: one QEMU boot of the guest through
//! [`crate::runner`] (the ext4 image attached `snapshot=on`, so the cached
//! image is never modified), and `statneg-host` run natively on the host.
//!
//! It holds what a boot is asked ([`GuestRun`], [`CifsRun`]: the `lr.*`
//! words of [`guest_cmdline`] that `init.sh` reads, and the test hook
//! that crashes a boot on purpose), the boot itself ([`run_guest`]; a
//! cifs.ko of one's own rides in a second initramfs), and what the boot
//! answered ([`GuestReport`]): the console split per filesystem, and the
//! lines `init.sh` prints for cifs read back (listings, xattr lines,
//! dropped mount options, notes, kprobe counts). The will-it-scale lines
//! inside each filesystem's part are parsed in `parse.rs` ([`parse_wis`]).

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use super::{parse_wis, Fs, LinuxRefError, Paths, WisResult};
use crate::runner::{Accel, GuestStatus, Runner};

/// One boot of the reference guest.
#[derive(Clone, Debug)]
pub struct GuestRun {
    /// vCPUs (also the statneg thread count).
    pub cpus: u32,
    /// Filesystems to run on, in order, within the same boot (may be empty
    /// when the boot only lists cifs shares).
    pub fs: Vec<Fs>,
    /// Warm-up seconds.
    pub warmup: u32,
    /// Measured seconds.
    pub secs: u32,
    /// Stats per thread of the counting run after each timed run (kprobe
    /// hit counts, printed as the `per-op:` line); 0: no counting run.
    pub count: u32,
    /// After the counting run, one more with the lock probes keyed by
    /// caller (`linuxref-callers` in the section): who takes each lock.
    pub stacks: bool,
    /// Accelerator.
    pub accel: Accel,
    /// Stream the guest console to stdout.
    pub echo: bool,
    /// Optional `ls -la` of cifs shares in the same boot.
    pub cifs: Option<CifsRun>,
    /// A cifs.ko to load instead of the packaged one (e.g. one built with
    /// a patch series, see [`super::ensure_cifs_module`]); it rides in a
    /// second initramfs archive (`lr.cifsko=/extra/cifs.ko`).
    pub cifs_module: Option<PathBuf>,
    /// Rename loads, `RATE@FS` each (`lr.renames`): after each counting
    /// run, one more per entry while a thread of another name renames a
    /// file of its own in `/mnt/FS` RATE times a second (0: flat out); one
    /// `linuxref-renames` line each in the filesystem's section. Needs
    /// `count` > 0.
    pub renames: Vec<String>,
}

impl GuestRun {
    /// statneg on `fs` at `cpus` vCPUs under TCG, `warmup` + `secs`
    /// seconds, no counting run, no cifs.
    pub fn statneg(cpus: u32, fs: Vec<Fs>, warmup: u32, secs: u32) -> Self {
        GuestRun {
            cpus,
            fs,
            warmup,
            secs,
            count: 0,
            stacks: false,
            accel: Accel::Tcg,
            echo: false,
            cifs: None,
            cifs_module: None,
            renames: Vec::new(),
        }
    }
}

/// The stats per thread a counting run does by default: enough that the
/// start-up left over after the baseline subtraction is below 0.1 %.
pub const DEFAULT_COUNT_ITERS: u32 = 20_000;

/// `ls -la` of a share by the guest's own cifs client, through the relay.
#[derive(Clone, Debug)]
pub struct CifsRun {
    /// `//10.0.2.100/SHARE`.
    pub unc: String,
    /// (variant name, full mount data string with credentials and `ip=`).
    pub variants: Vec<(String, String)>,
    /// The program (and arguments) QEMU starts per guest connection to
    /// 10.0.2.100:445: the latency relay in stdio mode.
    pub relay: Vec<String>,
    /// The relay's `--stats-dir` (one JSON file per connection).
    pub stats_dir: PathBuf,
    /// Where each marker request copies the stats dir (`MARKS/NAME/`).
    pub marks_dir: PathBuf,
    /// (variant, ls version) for variants that list with the host's GNU
    /// `ls` (`9.1`) instead of Debian 13's 9.7, the default.
    pub ls: Vec<(String, String)>,
    /// Entries whose xattrs are printed after each listing
    /// (`linuxref-xattr … when=cold|warm`).
    pub eashow: Vec<String>,
    /// After the listings of a variant: an EA set on an entry through a
    /// second connection, and that entry's xattrs seen by the first mount
    /// at once and some seconds later (`when=before|soon|later`).
    pub eacheck: Option<EaCheck>,
}

/// See [`CifsRun::eacheck`].
#[derive(Clone, Debug)]
pub struct EaCheck {
    /// The variant whose mount is checked (give it short attribute windows).
    pub variant: String,
    /// The entry (a name in the share's root).
    pub entry: String,
    /// Seconds to wait before the last look.
    pub wait_s: u32,
}

/// One `linuxref-xattr` line: an entry's xattrs as the guest's `xattr list`
/// saw them (`n` is `None` when listxattr failed).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct XattrSeen {
    /// Variant.
    pub variant: String,
    /// `cold`, `warm`, `before`, `soon` or `later`.
    pub when: String,
    /// Names listed.
    pub n: Option<usize>,
    /// The rest of the line: `NAME=VALUE …` or `error=…`.
    pub attrs: String,
}

/// The guest port of the marker connection: each HTTP request to
/// 10.0.2.100:4450/NAME copies the relay's stats dir to `MARKS/NAME/`
/// before it is answered, so the guest knows the snapshot is taken.
pub const MARKER_PORT: u16 = 4450;

impl CifsRun {
    /// A run against the SMB server on the host's `port`, sharing `share`:
    /// each guest connection goes through the latency relay `relay_bin`
    /// (no delay), whose stats land in `dir/stats` and whose marker
    /// snapshots in `dir/marks`; one mount per (name, mount data) of
    /// `variants`. No host `ls`, no xattrs shown, no EA check: set those
    /// fields after.
    pub fn through_relay(
        relay_bin: &str,
        port: u16,
        share: &str,
        dir: &Path,
        variants: Vec<(String, String)>,
    ) -> CifsRun {
        let stats_dir = dir.join("stats");
        CifsRun {
            unc: format!("//10.0.2.100/{share}"),
            variants,
            relay: vec![
                relay_bin.into(),
                "--target".into(),
                format!("127.0.0.1:{port}"),
                "--stats-dir".into(),
                stats_dir.display().to_string(),
                "--sync-stats".into(),
            ],
            stats_dir,
            marks_dir: dir.join("marks"),
            ls: vec![],
            eashow: vec![],
            eacheck: None,
        }
    }

    /// What the relay counted between the guest's markers `phase` and
    /// `phase-end` (the snapshots under `marks_dir`).
    pub fn between_marks(&self, phase: &str) -> std::io::Result<crate::relay::Totals> {
        use crate::relay::{load_stats_dir, Totals};
        let at = |name: &str| -> std::io::Result<Totals> {
            Ok(Totals::sum(&load_stats_dir(&self.marks_dir.join(name))?))
        };
        Ok(at(&format!("{phase}-end"))?.since(&at(phase)?))
    }

    /// The `-netdev` value: the SMB forward to the relay and the marker
    /// forward to `qemu/linuxref/marker.sh`, which snapshots the stats dir
    /// (the directories passed as its arguments).
    pub fn netdev_arg(&self) -> String {
        let smb = crate::runner::GuestFwd::smb(self.relay.clone()).netdev_arg();
        let cmd = [
            "/bin/sh".to_string(),
            super::guest_file("marker.sh").display().to_string(),
            self.marks_dir.display().to_string(),
            self.stats_dir.display().to_string(),
        ]
        .iter()
        .map(|a| sh_quote(a))
        .collect::<Vec<_>>()
        .join(" ")
        .replace(',', ",,");
        format!("{smb},guestfwd=tcp:10.0.2.100:{MARKER_PORT}-cmd:{cmd}")
    }
}

/// Single-quotes `s` for a POSIX shell (libslirp splits with shell rules).
fn sh_quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', r"'\''"))
}

/// One `ls -la` as the guest saw it.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct CifsListing {
    /// Variant name.
    pub variant: String,
    /// `cold` or `warm`.
    pub phase: String,
    /// Wall time of `ls -la` (lrtime, CLOCK_MONOTONIC).
    pub wall_s: f64,
    /// `ls -la`'s exit status.
    pub rc: i32,
    /// The `ls` used: its version (`9.7`, `9.1`), or `busybox`.
    pub ls: String,
    /// Output lines (`total`, `.`, `..` and one per entry).
    pub lines: usize,
    /// /proc/fs/cifs/Stats after the listing (reset before it).
    pub stats: String,
    /// The seed's analysis of the smb3 tracepoints of this listing: counts
    /// per status, per command code and per event, as `uniq -c` prints them.
    pub trace: String,
}

impl CifsListing {
    /// Entries listed (the lines less `total`, `.` and `..`).
    pub fn entries(&self) -> usize {
        self.lines.saturating_sub(3)
    }
    /// A counter of /proc/fs/cifs/Stats, e.g. `QueryInfos` → its total.
    pub fn stat(&self, name: &str) -> Option<u64> {
        self.stats.lines().find_map(|l| {
            let rest = l.trim().strip_prefix(name)?.strip_prefix(':')?;
            rest.split_whitespace().next()?.parse().ok()
        })
    }
}

/// What a boot produced: one report per filesystem, plus the boot's wall time.
#[derive(Clone, Debug)]
pub struct GuestReport {
    /// Reports in the order requested.
    pub results: Vec<(Fs, WisResult)>,
    /// The console text of each filesystem's run (will-it-scale's lines,
    /// the `per-op:` and `linuxref-count` lines), for re-parsing and notes.
    pub sections: Vec<(Fs, String)>,
    /// Every cifs listing, in order.
    pub listings: Vec<CifsListing>,
    /// The kernel release the guest reported (`uname -r`).
    pub uname: String,
    /// Notes the guest printed (`linuxref: …`: failed steps, the ls used).
    pub notes: Vec<String>,
    /// (variant, option) for every mount option the kernel refused
    /// (`Unknown parameter`) and the guest dropped before mounting.
    pub dropped: Vec<(String, String)>,
    /// Every `linuxref-xattr` line.
    pub xattrs: Vec<XattrSeen>,
    /// With [`GuestRun::cifs_module`]: what the kernel logged about the
    /// module (its taint and signature lines) and `/proc/sys/kernel/tainted`.
    pub module_log: Vec<String>,
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
    let run = GuestRun::statneg(cpus, vec![fs], warmup, secs);
    let mut report = run_guest(paths, &run)?;
    Ok(report.results.remove(0).1)
}

/// The kernel command line of `run` (`no_timer_check`: under TCG on a
/// loaded host the boot-time check of the IO-APIC timer can miss its
/// ticks and panic, "IO-APIC + timer doesn't work"; `maxcpus=1`: init.sh
/// brings the other vCPUs up once the boot's text patching is done, see
/// [`super::BOOT_ONE_CPU`]).
pub fn guest_cmdline(run: &GuestRun) -> String {
    let fs_list: Vec<&str> = run.fs.iter().map(|f| f.name()).collect();
    let mut cmdline = format!(
        "console=ttyS0 quiet loglevel=1 panic=-1 no_timer_check {} rdinit=/init lr.fs={} lr.threads={} lr.warmup={} lr.secs={} lr.count={}",
        super::BOOT_ONE_CPU,
        fs_list.join(","),
        run.cpus,
        run.warmup,
        run.secs,
        run.count
    );
    if run.stacks {
        cmdline.push_str(" lr.stacks=1");
    }
    if let Some(c) = &run.cifs {
        cmdline.push_str(&format!(" lr.unc={}", c.unc));
        for (name, opts) in &c.variants {
            cmdline.push_str(&format!(" lr.cifs={name}:{opts}"));
        }
        for (name, v) in &c.ls {
            cmdline.push_str(&format!(" lr.ls={name}:{v}"));
        }
        for e in &c.eashow {
            cmdline.push_str(&format!(" lr.eashow={e}"));
        }
        if let Some(e) = &c.eacheck {
            cmdline.push_str(&format!(
                " lr.eacheck={}:{}:{}",
                e.variant, e.entry, e.wait_s
            ));
        }
    }
    if run.cifs_module.is_some() {
        cmdline.push_str(" lr.cifsko=/extra/cifs.ko");
    }
    if !run.renames.is_empty() {
        cmdline.push_str(&format!(" lr.renames={}", run.renames.join(",")));
    }
    cmdline
}

/// A rename load as `lr.renames` takes it: `RATE@FS`, RATE a count of
/// renames a second (0: flat out), FS a filesystem the guest mounts.
pub fn valid_rename_load(spec: &str) -> bool {
    spec.split_once('@').is_some_and(|(rate, fs)| {
        rate.parse::<u32>().is_ok_and(|r| r <= 10_000_000) && matches!(fs, "tmpfs" | "ext4")
    })
}

/// The test hook's variable: `LINUXREF_TEST_CRASH=PHASE:N` makes the first
/// N guests that this process boots through [`run_guest`] panic on purpose
/// in the last filesystem's run, at PHASE (init.sh's `lr.crash`: `timed`,
/// before its timed statneg; `count`, in its first counting run, probes and
/// triggers armed), so that
/// the crash path of every runner built on [`run_guest`] can be run end to
/// end without waiting for a real crash: under
/// `LINUXREF_TEST_CRASH=count:1`, `linux-patched --kernels debian --cpus 2`
/// prints its lines with ` retried=1` and exits 0; under `count:2` it
/// prints only the lines of the filesystems before the last, ending in
/// ` retried=1 crashed_later=1`, and exits 1. Never set in a measurement.
pub const TEST_CRASH_VAR: &str = "LINUXREF_TEST_CRASH";

/// Guests booted by [`run_guest`] while [`TEST_CRASH_VAR`] is set.
static TEST_CRASH_BOOTS: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);

/// [`TEST_CRASH_VAR`]'s value read: the phase and how many boots crash.
fn parse_test_crash(v: &str) -> Result<(&'static str, u32), LinuxRefError> {
    let bad = || {
        LinuxRefError::Args(format!(
            "{TEST_CRASH_VAR}={v}: want timed:N or count:N (crash the first N boots)"
        ))
    };
    let (phase, n) = v.split_once(':').ok_or_else(bad)?;
    let phase = match phase {
        "timed" => "timed",
        "count" => "count",
        _ => return Err(bad()),
    };
    Ok((phase, n.parse().map_err(|_| bad())?))
}

/// The `lr.crash` word for this boot, if the test hook asks for one
/// (`boots` counts this process's boots under the hook).
fn test_crash_word(
    var: Option<&str>,
    boots: &std::sync::atomic::AtomicU32,
) -> Result<Option<String>, LinuxRefError> {
    let Some(v) = var else { return Ok(None) };
    let (phase, n) = parse_test_crash(v)?;
    let this = boots.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    Ok((this < n).then(|| format!(" lr.crash={phase}")))
}

/// Boots the guest once and runs statneg on every filesystem in `run.fs`
/// (then the counting run, then the cifs listings, as asked).
pub fn run_guest(paths: &Paths, run: &GuestRun) -> Result<GuestReport, LinuxRefError> {
    if run.cpus == 0 || run.cpus > 255 || run.secs == 0 || (run.fs.is_empty() && run.cifs.is_none())
    {
        return Err(LinuxRefError::Args(
            "need 1..=255 cpus, secs >= 1 and a filesystem or a cifs share".into(),
        ));
    }
    if run.fs.contains(&Fs::Ramfs) || run.fs.contains(&Fs::Devtmpfs) {
        return Err(LinuxRefError::Args(
            "statneg runs on tmpfs and ext4; ramfs and devtmpfs are the dcache oracle's (--oracle)"
                .into(),
        ));
    }
    if let Some(bad) = run.renames.iter().find(|r| !valid_rename_load(r)) {
        return Err(LinuxRefError::Args(format!(
            "rename load {bad}: want RATE@FS, RATE 0..=10000000 (0: flat out), FS tmpfs or ext4"
        )));
    }
    if !run.renames.is_empty() && run.count == 0 {
        return Err(LinuxRefError::Args(
            "rename loads run beside the counting run: need count > 0".into(),
        ));
    }
    if let Some(c) = &run.cifs {
        let bad = c.variants.iter().any(|(n, o)| {
            n.is_empty() || n.contains([' ', ':', '/']) || o.contains(char::is_whitespace)
        });
        if bad || c.relay.is_empty() {
            return Err(LinuxRefError::Args(
                "cifs variants need a name without ' :/' and options without spaces, and a relay"
                    .into(),
            ));
        }
    }
    // x86 keeps COMMAND_LINE_SIZE (2048) bytes of it; a longer one boots
    // a guest that prints nothing.
    let mut cmdline = guest_cmdline(run);
    let hook = std::env::var(TEST_CRASH_VAR).ok();
    if let Some(word) = test_crash_word(hook.as_deref(), &TEST_CRASH_BOOTS)? {
        cmdline.push_str(&word);
    }
    if cmdline.len() >= 2048 {
        return Err(LinuxRefError::Args(format!(
            "the guest command line is {} bytes (x86 keeps 2047): fewer cifs variants per boot",
            cmdline.len()
        )));
    }
    let extra_dir = std::env::temp_dir().join(format!(
        "linuxref-initrd-{}-{:?}",
        std::process::id(),
        std::thread::current().id()
    ));
    let initrd = match &run.cifs_module {
        Some(ko) => with_extra_module(&paths.initramfs, ko, &extra_dir)?,
        None => paths.initramfs.clone(),
    };
    let mut cfg = super::guest_config(&paths.kernel, run.accel)
        .initrd(&initrd)
        .disk(&paths.ext4_image)
        .smp(run.cpus)
        .memory("512M".parse().expect("constant size"))
        .cmdline(cmdline);
    if let Some(c) = &run.cifs {
        for d in [&c.stats_dir, &c.marks_dir] {
            std::fs::create_dir_all(d)
                .map_err(|e| LinuxRefError::Guest(format!("{}: {e}", d.display())))?;
        }
        for a in [
            "-netdev".to_string(),
            c.netdev_arg(),
            "-device".into(),
            "virtio-net-pci,netdev=n0".into(),
        ] {
            cfg = cfg.extra_arg(a);
        }
    }
    // Boot takes ~15-30 s under TCG; each run warmup + secs plus start-up;
    // a counting run ~1 minute; a cifs variant up to 2 × 40 s at 76 ms.
    let per_fs = u64::from(run.warmup + run.secs + 5)
        + if run.count > 0 { 90 } else { 0 }
        + 60 * run.renames.len() as u64;
    let cifs = run
        .cifs
        .as_ref()
        .map_or(0, |c| c.variants.len() as u64 * 150);
    let budget = 180 + per_fs * run.fs.len() as u64 * 2 + cifs;
    let out = Runner::new(cfg)
        .timeout(Duration::from_secs(budget))
        .echo(run.echo)
        .run()
        .map_err(|e| LinuxRefError::Guest(e.to_string()));
    let _ = std::fs::remove_dir_all(&extra_dir);
    let out = out?;
    let serial = out.serial_output.replace('\r', "");
    let what = format!("the guest ({} vCPUs)", run.cpus);
    super::judge(
        &paths.kernel,
        &what,
        &out.status,
        &serial,
        serial.contains("linuxref-done"),
    )?;
    if !matches!(out.status, GuestStatus::NoDebugExit) {
        return Err(LinuxRefError::Guest(format!(
            "unexpected end after the runs: {}",
            out.status
        )));
    }
    let mut results = Vec::new();
    let mut sections = Vec::new();
    for fs in &run.fs {
        let section = guest_section(&serial, *fs)?;
        let r = parse_wis(section)?;
        if run.count > 0 && r.per_op.is_none() {
            // What the guest said about it: its error line and any CPU that
            // did not go offline or come back (init.sh's solo).
            let said: Vec<&str> = section
                .lines()
                .filter(|l| l.starts_with("error:") || l.starts_with("linuxref-solo-failed"))
                .collect();
            return Err(LinuxRefError::Parse(format!(
                "the counting run on {fs} printed no per-op line: {}",
                if said.is_empty() {
                    section.lines().last().unwrap_or("").to_string()
                } else {
                    said.join("; ")
                }
            )));
        }
        results.push((*fs, r));
        sections.push((*fs, section.to_string()));
    }
    let listings = parse_listings(&serial)?;
    if let Some(c) = &run.cifs {
        let want = c.variants.len() * 2;
        if listings.len() != want {
            return Err(LinuxRefError::Guest(format!(
                "{} of {want} cifs listings ran; guest notes: {}",
                listings.len(),
                guest_notes(&serial).join("; ")
            )));
        }
    }
    let uname = kernel_line(&serial)
        .split(',')
        .next()
        .unwrap_or_default()
        .to_string();
    check_guest_cpus(&serial, run.cpus)?;
    Ok(GuestReport {
        results,
        sections,
        listings,
        uname,
        notes: guest_notes(&serial),
        dropped: dropped_options(&serial),
        xattrs: parse_xattr_lines(&serial),
        module_log: serial
            .lines()
            .filter_map(|l| {
                l.strip_prefix("linuxref-dmesg: ")
                    .or_else(|| l.strip_prefix("linuxref: cifs.ko from "))
            })
            .map(str::to_string)
            .collect(),
        wall: out.wall,
    })
}

/// The runs of `run` that a guest which did not finish (its kernel
/// crashed, say) had finished, from its console: each filesystem whose
/// section ended with status 0 and, when `run` counts, printed its per-op
/// line. They were measured before the crash; a caller that prints them
/// says where they come from.
pub fn finished_runs(serial: &str, run: &GuestRun) -> Vec<(Fs, WisResult)> {
    // Runs made on fewer CPUs than the guest was given are not its figures.
    if check_guest_cpus(serial, run.cpus).is_err() {
        return Vec::new();
    }
    run.fs
        .iter()
        .filter_map(|fs| {
            let r = parse_wis(guest_section(serial, *fs).ok()?).ok()?;
            (run.count == 0 || r.per_op.is_some()).then_some((*fs, r))
        })
        .collect()
}

/// What follows `linuxref: kernel ` on the guest's console ("" if none).
fn kernel_line(serial: &str) -> &str {
    serial
        .lines()
        .find_map(|l| l.strip_prefix("linuxref: kernel "))
        .unwrap_or_default()
}

/// [`super::check_online_cpus`] on the kernel line's `N cpus`; a refusal
/// quotes init.sh's own account (`linuxref-solo-failed …`) when it gave one.
fn check_guest_cpus(serial: &str, vcpus: u32) -> Result<(), LinuxRefError> {
    let said = kernel_line(serial).split(',').nth(1).unwrap_or_default();
    super::check_online_cpus(said, vcpus).map_err(|e| {
        let why: Vec<&str> = serial
            .lines()
            .filter(|l| l.starts_with("linuxref-solo-failed"))
            .collect();
        match (e, why.is_empty()) {
            (LinuxRefError::Guest(m), false) => {
                LinuxRefError::Guest(format!("{m}: {}", why.join("; ")))
            }
            (e, _) => e,
        }
    })
}

/// The `linuxref-dropped variant=V option=O` lines, as (V, O).
pub fn dropped_options(serial: &str) -> Vec<(String, String)> {
    serial
        .lines()
        .filter_map(|l| {
            let rest = l.strip_prefix("linuxref-dropped variant=")?;
            let (v, o) = rest.split_once(" option=")?;
            Some((v.to_string(), o.trim().to_string()))
        })
        .collect()
}

/// `initramfs` followed by a second gzip'd newc archive holding `ko` as
/// `/extra/cifs.ko` (the kernel unpacks concatenated archives in order),
/// written into `dir`.
fn with_extra_module(initramfs: &Path, ko: &Path, dir: &Path) -> Result<PathBuf, LinuxRefError> {
    let err = |m: String| LinuxRefError::Guest(format!("adding {}: {m}", ko.display()));
    let root = dir.join("root");
    std::fs::create_dir_all(root.join("extra")).map_err(|e| err(e.to_string()))?;
    std::fs::copy(ko, root.join("extra/cifs.ko")).map_err(|e| err(e.to_string()))?;
    let out = dir.join("initramfs.gz");
    super::tools::append_initramfs(initramfs, &root, &out).map_err(|e| err(e.to_string()))?;
    Ok(out)
}

/// The `linuxref-xattr variant=V when=W xattr-list path=P n=N …` lines.
pub fn parse_xattr_lines(serial: &str) -> Vec<XattrSeen> {
    serial
        .lines()
        .filter_map(|l| {
            let rest = l.strip_prefix("linuxref-xattr ")?;
            let mut x = XattrSeen::default();
            let mut attrs = Vec::new();
            for w in rest.split_whitespace() {
                match w.split_once('=') {
                    Some(("variant", v)) => x.variant = v.into(),
                    Some(("when", v)) => x.when = v.into(),
                    Some(("n", v)) => x.n = v.parse().ok(),
                    Some(("path", _)) | None => {}
                    Some(_) => attrs.push(w),
                }
            }
            x.attrs = attrs.join(" ");
            Some(x)
        })
        .collect()
}

/// The guest's `linuxref: …` lines other than the banner.
fn guest_notes(serial: &str) -> Vec<String> {
    serial
        .lines()
        .filter_map(|l| l.strip_prefix("linuxref: "))
        .filter(|l| !l.starts_with("kernel "))
        .map(str::to_string)
        .collect()
}

/// Every `linuxref-lsla` block: its line, the Stats after it, the trace
/// analysis (`linuxref-trace … linuxref-trace-end`).
pub fn parse_listings(serial: &str) -> Result<Vec<CifsListing>, LinuxRefError> {
    let bad = |m: String| LinuxRefError::Parse(format!("cifs listing: {m}"));
    let mut out = Vec::new();
    let mut lines = serial.lines();
    while let Some(l) = lines.next() {
        let Some(rest) = l.strip_prefix("linuxref-lsla ") else {
            continue;
        };
        let mut c = CifsListing::default();
        for w in rest.split_whitespace() {
            let (k, v) = w
                .split_once('=')
                .ok_or_else(|| bad(format!("bad word `{w}`")))?;
            match k {
                "variant" => c.variant = v.into(),
                "phase" => c.phase = v.into(),
                "wall_s" => c.wall_s = v.parse().map_err(|_| bad(format!("bad wall_s `{v}`")))?,
                "rc" => c.rc = v.parse().map_err(|_| bad(format!("bad rc `{v}`")))?,
                "lines" => c.lines = v.parse().map_err(|_| bad(format!("bad lines `{v}`")))?,
                "ls" => c.ls = v.into(),
                _ => {}
            }
        }
        if c.variant.is_empty() || c.phase.is_empty() {
            return Err(bad(format!("incomplete line `{l}`")));
        }
        // Stats, then the trace analysis.
        let mut in_trace = false;
        for l in lines.by_ref() {
            if l.starts_with("linuxref-stats ") {
                continue;
            } else if l.starts_with("linuxref-trace ") {
                in_trace = true;
            } else if l == "linuxref-trace-end" {
                break;
            } else if in_trace {
                c.trace.push_str(l.trim());
                c.trace.push('\n');
            } else {
                c.stats.push_str(l);
                c.stats.push('\n');
            }
        }
        out.push(c);
    }
    Ok(out)
}

/// `uniq -c` lines of the trace analysis that start with `key=`, as
/// (value, count): e.g. `status` → [("0xc0000052", 268), …].
pub fn trace_counts(trace: &str, key: &str) -> Vec<(String, u64)> {
    trace
        .lines()
        .filter_map(|l| {
            let (n, w) = l.trim().split_once(' ')?;
            let v = w.trim().strip_prefix(key)?.strip_prefix('=')?;
            Some((v.to_string(), n.parse().ok()?))
        })
        .collect()
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
mod tests;
