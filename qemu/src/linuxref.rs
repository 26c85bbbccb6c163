//! The Linux references for statneg: a Debian cloud kernel booted under the
//! same QEMU settings as our kernel, with a busybox initramfs that runs the C
//! statneg (`bench/linux/statneg.c`) on tmpfs and on an ext4 virtio disk; and
//! the same C program run natively on the host (`statneg-host`).
//!
//! Building ([`ensure_built`]) touches only `BUILD_DIR/linuxref/`: it runs
//! `apt-cache`/`apt-get download` (no root needed), `dpkg -x`, `gcc -static`,
//! `cpio`, `gzip` and `mkfs.ext4`, and caches everything it made there. When
//! a package or tool cannot be had it returns a [`SkipReason`] that says what
//! is missing, so a sweep can skip the reference with a note. Running
//! ([`run_guest`]) boots QEMU through [`crate::runner`] with the disk image
//! attached `snapshot=on`, so the cached image is never modified.
//!
//! Both print will-it-scale's format, parsed by [`parse_wis`]:
//! `testcase:DESC`, `warmup`, `min:N max:N total:N` per second,
//! `measurement`, the same lines, `average:N`.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::fs;
use std::io;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use crate::runner::{Accel, GuestStatus, QemuConfig, Runner};

/// The metapackage whose dependency names the current cloud kernel.
pub const KERNEL_METAPACKAGE: &str = "linux-image-cloud-amd64";
/// The package that provides a static busybox.
pub const BUSYBOX_PACKAGE: &str = "busybox-static";
/// Modules the guest loads (with their dependencies) to see the virtio disk.
const GUEST_MODULES: &[&str] = &["virtio_pci", "virtio_blk"];
/// Size of the ext4 image.
const EXT4_IMAGE_MIB: u32 = 64;
/// Bumped whenever the layout of the cached build changes.
const STAMP_VERSION: &str = "linuxref-build 1";

/// A filesystem the guest runs statneg on.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Fs {
    /// A tmpfs mounted in the guest (`/mnt/tmpfs`).
    Tmpfs,
    /// The ext4 virtio disk (`/mnt/ext4`, from `ext4.img`).
    Ext4,
}

impl Fs {
    /// Lower-case name, as used on the guest command line and in reports.
    pub fn name(self) -> &'static str {
        match self {
            Fs::Tmpfs => "tmpfs",
            Fs::Ext4 => "ext4",
        }
    }
}

impl std::str::FromStr for Fs {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "tmpfs" => Ok(Fs::Tmpfs),
            "ext4" => Ok(Fs::Ext4),
            other => Err(format!(
                "unknown filesystem `{other}` (expected tmpfs or ext4)"
            )),
        }
    }
}

impl fmt::Display for Fs {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Everything [`ensure_built`] made, inside `BUILD_DIR/linuxref/`.
#[derive(Clone, Debug)]
pub struct Paths {
    /// The cache directory.
    pub dir: PathBuf,
    /// The guest kernel (bzImage).
    pub kernel: PathBuf,
    /// The gzip'd newc initramfs (busybox, init, statneg, virtio modules).
    pub initramfs: PathBuf,
    /// The raw ext4 image attached as `/dev/vda`.
    pub ext4_image: PathBuf,
    /// statneg for the host (same static binary as in the guest):
    /// `statneg-host PATH THREADS WARMUP SECS`.
    pub statneg_host: PathBuf,
    /// The Debian kernel package used, e.g. `linux-image-6.1.0-57-cloud-amd64`.
    pub kernel_package: String,
}

/// Why the Linux reference guest cannot be built here.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SkipReason {
    /// A program is not installed.
    MissingTool {
        /// The program.
        tool: String,
        /// The Debian package that provides it.
        package: String,
    },
    /// A Debian package could not be found or downloaded.
    PackageUnavailable {
        /// The package.
        package: String,
        /// What apt said.
        detail: String,
    },
    /// A build step failed.
    BuildFailed {
        /// The step.
        step: String,
        /// Its error output.
        detail: String,
    },
}

impl fmt::Display for SkipReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SkipReason::MissingTool { tool, package } => write!(
                f,
                "Linux reference skipped: `{tool}` is missing (install the Debian package {package}, or run `make setup` as root)"
            ),
            SkipReason::PackageUnavailable { package, detail } => write!(
                f,
                "Linux reference skipped: Debian package {package} cannot be had ({}); \
                 it needs Debian's package lists (`apt-get update`) and access to the archive",
                detail.trim()
            ),
            SkipReason::BuildFailed { step, detail } => {
                write!(f, "Linux reference skipped: {step} failed: {}", detail.trim())
            }
        }
    }
}

impl std::error::Error for SkipReason {}

/// One `min:N max:N total:N` line: operations in one second.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Sample {
    /// The slowest thread's count.
    pub min: u64,
    /// The fastest thread's count.
    pub max: u64,
    /// All threads together.
    pub total: u64,
}

/// A parsed will-it-scale report.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WisResult {
    /// The `testcase:` description.
    pub testcase: String,
    /// Per-second samples of the warm-up.
    pub warmup: Vec<Sample>,
    /// Per-second samples of the measurement.
    pub measurement: Vec<Sample>,
    /// `average:` (mean of the measurement totals), ops/s.
    pub average: u64,
}

impl WisResult {
    /// Lowest per-thread count of any measurement second.
    pub fn min(&self) -> u64 {
        self.measurement.iter().map(|s| s.min).min().unwrap_or(0)
    }
    /// Highest per-thread count of any measurement second.
    pub fn max(&self) -> u64 {
        self.measurement.iter().map(|s| s.max).max().unwrap_or(0)
    }
}

/// Errors of a reference run.
#[derive(Debug)]
pub enum LinuxRefError {
    /// QEMU did not run, or the guest did not finish.
    Guest(String),
    /// The output did not hold a well-formed report.
    Parse(String),
    /// The host statneg could not run.
    Host(String),
    /// Bad arguments.
    Args(String),
}

impl fmt::Display for LinuxRefError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            LinuxRefError::Guest(m) => write!(f, "Linux reference guest: {m}"),
            LinuxRefError::Parse(m) => write!(f, "statneg output: {m}"),
            LinuxRefError::Host(m) => write!(f, "host statneg: {m}"),
            LinuxRefError::Args(m) => write!(f, "bad arguments: {m}"),
        }
    }
}

impl std::error::Error for LinuxRefError {}

/// Parses will-it-scale's format out of `text`. Lines that are not part of
/// the format (kernel messages on a shared console) are ignored; the
/// structure (testcase, warmup, samples, measurement, samples, average) is
/// required, and `average` must be the mean of the measurement totals.
pub fn parse_wis(text: &str) -> Result<WisResult, LinuxRefError> {
    #[derive(PartialEq)]
    enum Phase {
        Start,
        Warmup,
        Measure,
    }
    let err = |m: String| Err(LinuxRefError::Parse(m));
    let mut testcase = None;
    let mut phase = Phase::Start;
    let mut warmup = Vec::new();
    let mut measurement = Vec::new();
    for line in text.lines().map(|l| l.trim_end_matches('\r').trim()) {
        if let Some(t) = line.strip_prefix("testcase:") {
            testcase = Some(t.to_string());
            phase = Phase::Start;
            warmup.clear();
            measurement.clear();
        } else if line == "warmup" && testcase.is_some() {
            phase = Phase::Warmup;
        } else if line == "measurement" && phase == Phase::Warmup {
            phase = Phase::Measure;
        } else if let Some(s) = parse_sample(line) {
            match phase {
                Phase::Warmup => warmup.push(s),
                Phase::Measure => measurement.push(s),
                Phase::Start => return err(format!("sample before `warmup`: {line}")),
            }
        } else if let Some(a) = line.strip_prefix("average:") {
            let Some(testcase) = testcase else {
                return err("`average:` without `testcase:`".into());
            };
            if phase != Phase::Measure || measurement.is_empty() {
                return err("`average:` before any measurement sample".into());
            }
            let Ok(average) = a.trim().parse::<u64>() else {
                return err(format!("bad average line: {line}"));
            };
            let mean = measurement.iter().map(|s| s.total).sum::<u64>() / measurement.len() as u64;
            if mean != average {
                return err(format!(
                    "average:{average} is not the mean of the totals ({mean})"
                ));
            }
            return Ok(WisResult {
                testcase,
                warmup,
                measurement,
                average,
            });
        }
    }
    err("no complete report (testcase, warmup, measurement, average) found".into())
}

fn parse_sample(line: &str) -> Option<Sample> {
    let mut it = line.split_whitespace();
    let mut field = |name: &str| -> Option<u64> { it.next()?.strip_prefix(name)?.parse().ok() };
    let s = Sample {
        min: field("min:")?,
        max: field("max:")?,
        total: field("total:")?,
    };
    (it.next().is_none() && s.min <= s.max).then_some(s)
}

// ---------------------------------------------------------------------------
// Building
// ---------------------------------------------------------------------------

/// The C source of statneg.
pub fn statneg_source() -> PathBuf {
    crate::runner::workspace_root().join("bench/linux/statneg.c")
}

/// The workspace's default build directory (`build/`).
pub fn default_build_dir() -> PathBuf {
    crate::runner::workspace_root().join("build")
}

/// Builds (or finds cached in `build_dir/linuxref/`) the kernel, initramfs,
/// ext4 image and host statneg.
pub fn ensure_built(build_dir: &Path) -> Result<Paths, SkipReason> {
    let dir = build_dir.join("linuxref");
    mkdir(&dir)?;
    // Absolute and free of `..`, since shell steps below `cd` into it.
    let dir = dir
        .canonicalize()
        .map_err(|e| failed(&format!("resolving {}", dir.display()), e))?;
    let paths = Paths {
        kernel: dir.join("vmlinuz"),
        initramfs: dir.join("initramfs.gz"),
        ext4_image: dir.join("ext4.img"),
        statneg_host: dir.join("statneg-host"),
        kernel_package: String::new(),
        dir: dir.clone(),
    };
    for (tool, package) in [
        ("gcc", "gcc"),
        ("cpio", "cpio"),
        ("gzip", "gzip"),
        ("mkfs.ext4", "e2fsprogs"),
        ("dpkg", "dpkg"),
        ("apt-get", "apt"),
        ("apt-cache", "apt"),
    ] {
        if !have_tool(tool) {
            return Err(SkipReason::MissingTool {
                tool: tool.into(),
                package: package.into(),
            });
        }
    }

    // statneg is cheap: rebuild whenever the source changed.
    let statneg = dir.join("statneg");
    build_statneg(&statneg)?;
    let _ = fs::remove_file(&paths.statneg_host);
    fs::copy(&statneg, &paths.statneg_host).map_err(|e| failed("copying statneg-host", e))?;

    // The rest is cached behind a stamp that names the statneg build it holds.
    let stamp = dir.join("stamp");
    let statneg_sum = file_digest(&statneg);
    if let Ok(s) = fs::read_to_string(&stamp) {
        let mut lines = s.lines();
        if lines.next() == Some(STAMP_VERSION) && lines.next() == Some(statneg_sum.as_str()) {
            if let Some(pkg) = lines.next() {
                if [&paths.kernel, &paths.initramfs, &paths.ext4_image]
                    .iter()
                    .all(|p| p.is_file())
                {
                    return Ok(Paths {
                        kernel_package: pkg.to_string(),
                        ..paths
                    });
                }
            }
        }
    }

    let kernel_package = current_kernel_package()?;
    let debs = dir.join("debs");
    mkdir(&debs)?;
    let kernel_deb = download(&debs, &kernel_package)?;
    let busybox_deb = download(&debs, BUSYBOX_PACKAGE)?;

    let kroot = dir.join("kernel-root");
    let bbroot = dir.join("busybox-root");
    for (deb, root) in [(&kernel_deb, &kroot), (&busybox_deb, &bbroot)] {
        let _ = fs::remove_dir_all(root);
        run_tool("dpkg -x", Command::new("dpkg").arg("-x").arg(deb).arg(root))?;
    }
    let vmlinuz =
        find_file(&kroot.join("boot"), |n| n.starts_with("vmlinuz-")).ok_or_else(|| {
            SkipReason::BuildFailed {
                step: "unpacking the kernel".into(),
                detail: format!("no boot/vmlinuz-* in {}", kernel_deb.display()),
            }
        })?;
    fs::copy(&vmlinuz, &paths.kernel).map_err(|e| failed("copying vmlinuz", e))?;
    let busybox = bbroot.join("bin/busybox");
    if !busybox.is_file() {
        return Err(SkipReason::BuildFailed {
            step: "unpacking busybox-static".into(),
            detail: "no bin/busybox in the package".into(),
        });
    }

    let modules = module_load_order(&kroot.join("lib/modules"), GUEST_MODULES)?;
    build_initramfs(&dir, &busybox, &statneg, &modules, &paths.initramfs)?;
    build_ext4_image(&dir, &paths.ext4_image)?;

    fs::write(
        &stamp,
        format!("{STAMP_VERSION}\n{statneg_sum}\n{kernel_package}\n"),
    )
    .map_err(|e| failed("writing the stamp", e))?;
    // The unpacked trees are large and no longer needed.
    let _ = fs::remove_dir_all(&kroot);
    let _ = fs::remove_dir_all(&bbroot);
    let _ = fs::remove_dir_all(dir.join("initramfs-root"));
    Ok(Paths {
        kernel_package,
        ..paths
    })
}

/// Where `tool` is: on `PATH`, or in the sbin directories a non-root `PATH` lacks.
fn tool_path(tool: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .chain(["/usr/sbin", "/sbin"].iter().map(PathBuf::from))
        .map(|d| d.join(tool))
        .find(|p| p.is_file())
}

fn have_tool(tool: &str) -> bool {
    tool_path(tool).is_some()
}

fn failed(step: &str, e: io::Error) -> SkipReason {
    SkipReason::BuildFailed {
        step: step.into(),
        detail: e.to_string(),
    }
}

fn mkdir(d: &Path) -> Result<(), SkipReason> {
    fs::create_dir_all(d).map_err(|e| failed(&format!("creating {}", d.display()), e))
}

/// Runs a tool to completion; its stderr becomes the failure detail.
fn run_tool(step: &str, cmd: &mut Command) -> Result<String, SkipReason> {
    let out = cmd
        .stdin(Stdio::null())
        .output()
        .map_err(|e| failed(step, e))?;
    if !out.status.success() {
        return Err(SkipReason::BuildFailed {
            step: step.into(),
            detail: format!(
                "{}{}",
                String::from_utf8_lossy(&out.stderr),
                String::from_utf8_lossy(&out.stdout)
            ),
        });
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// A cheap content fingerprint (FNV-1a) for the cache stamp.
fn file_digest(p: &Path) -> String {
    let bytes = fs::read(p).unwrap_or_default();
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in bytes {
        h = (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3);
    }
    format!("statneg {h:016x}")
}

fn build_statneg(out: &Path) -> Result<(), SkipReason> {
    let src = statneg_source();
    let fresh = match (fs::metadata(&src), fs::metadata(out)) {
        (Ok(s), Ok(o)) => match (s.modified(), o.modified()) {
            (Ok(sm), Ok(om)) => om >= sm,
            _ => false,
        },
        (Err(e), _) => return Err(failed(&format!("reading {}", src.display()), e)),
        _ => false,
    };
    if fresh {
        return Ok(());
    }
    run_tool(
        "compiling statneg (gcc -static; needs libc6-dev)",
        Command::new("gcc")
            .args(["-static", "-O2", "-pthread", "-Wall", "-o"])
            .arg(out)
            .arg(&src),
    )
    .map(|_| ())
}

/// The versioned kernel package the metapackage currently depends on.
fn current_kernel_package() -> Result<String, SkipReason> {
    let out = Command::new("apt-cache")
        .args(["depends", KERNEL_METAPACKAGE])
        .stdin(Stdio::null())
        .output()
        .map_err(|e| failed("apt-cache depends", e))?;
    let text = String::from_utf8_lossy(&out.stdout);
    pick_kernel_package(&text).ok_or_else(|| SkipReason::PackageUnavailable {
        package: KERNEL_METAPACKAGE.into(),
        detail: format!(
            "apt-cache depends found no linux-image-*-cloud-amd64 dependency{}",
            if out.stderr.is_empty() {
                String::new()
            } else {
                format!(": {}", String::from_utf8_lossy(&out.stderr).trim())
            }
        ),
    })
}

/// Picks `linux-image-X-cloud-amd64` out of `apt-cache depends` output.
fn pick_kernel_package(apt_cache_depends: &str) -> Option<String> {
    apt_cache_depends.lines().find_map(|l| {
        let dep = l.trim().strip_prefix("Depends:")?.trim();
        (dep.starts_with("linux-image-")
            && dep.ends_with("-cloud-amd64")
            && dep != KERNEL_METAPACKAGE)
            .then(|| dep.to_string())
    })
}

/// `apt-get download PACKAGE` into `dir` (reusing a file already there).
fn download(dir: &Path, package: &str) -> Result<PathBuf, SkipReason> {
    let prefix = format!("{package}_");
    if let Some(p) = find_file(dir, |n| n.starts_with(&prefix) && n.ends_with(".deb")) {
        return Ok(p);
    }
    let out = Command::new("apt-get")
        .args(["download", "-q", package])
        .current_dir(dir)
        .stdin(Stdio::null())
        .output()
        .map_err(|e| failed("apt-get download", e))?;
    match find_file(dir, |n| n.starts_with(&prefix) && n.ends_with(".deb")) {
        Some(p) if out.status.success() => Ok(p),
        _ => Err(SkipReason::PackageUnavailable {
            package: package.into(),
            detail: String::from_utf8_lossy(&out.stderr)
                .lines()
                .filter(|l| l.starts_with("E:"))
                .collect::<Vec<_>>()
                .join("; "),
        }),
    }
}

fn find_file(dir: &Path, pred: impl Fn(&str) -> bool) -> Option<PathBuf> {
    let mut hits: Vec<PathBuf> = fs::read_dir(dir)
        .ok()?
        .filter_map(|e| e.ok())
        .filter(|e| e.file_name().to_str().is_some_and(&pred))
        .map(|e| e.path())
        .collect();
    hits.sort();
    hits.pop()
}

/// Module files under `modules_root/VERSION/` needed for `wanted`, in load
/// order (dependencies first), read from each module's `.modinfo` `depends=`
/// (the package ships no modules.dep: depmod runs at install time).
fn module_load_order(modules_root: &Path, wanted: &[&str]) -> Result<Vec<PathBuf>, SkipReason> {
    let mut by_name = BTreeMap::new();
    let mut stack = vec![modules_root.to_path_buf()];
    while let Some(d) = stack.pop() {
        let Ok(rd) = fs::read_dir(&d) else { continue };
        for e in rd.filter_map(|e| e.ok()) {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
            } else if let Some(n) = p.file_name().and_then(|n| n.to_str()) {
                if let Some(stem) = n.strip_suffix(".ko") {
                    by_name.insert(stem.replace('-', "_"), p.clone());
                }
            }
        }
    }
    let mut order = Vec::new();
    let mut done = BTreeSet::new();
    for w in wanted {
        visit_module(w, &by_name, &mut done, &mut Vec::new(), &mut order)?;
    }
    Ok(order)
}

fn visit_module(
    name: &str,
    by_name: &BTreeMap<String, PathBuf>,
    done: &mut BTreeSet<String>,
    path: &mut Vec<String>,
    order: &mut Vec<PathBuf>,
) -> Result<(), SkipReason> {
    if done.contains(name) {
        return Ok(());
    }
    if path.iter().any(|p| p == name) {
        return Err(SkipReason::BuildFailed {
            step: "resolving module dependencies".into(),
            detail: format!("dependency cycle through {name}"),
        });
    }
    let file = by_name.get(name).ok_or_else(|| SkipReason::BuildFailed {
        step: "resolving module dependencies".into(),
        detail: format!("module {name}.ko not in the kernel package"),
    })?;
    let bytes = fs::read(file).map_err(|e| failed("reading a module", e))?;
    path.push(name.to_string());
    for dep in modinfo_depends(&bytes) {
        visit_module(&dep, by_name, done, path, order)?;
    }
    path.pop();
    done.insert(name.to_string());
    order.push(file.clone());
    Ok(())
}

/// The `depends=` list of a module's `.modinfo` (NUL-separated `key=value`).
fn modinfo_depends(ko: &[u8]) -> Vec<String> {
    ko.split(|&b| b == 0)
        .find_map(|s| s.strip_prefix(b"depends="))
        .map(|d| {
            String::from_utf8_lossy(d)
                .split(',')
                .filter(|s| !s.is_empty())
                .map(|s| s.replace('-', "_"))
                .collect()
        })
        .unwrap_or_default()
}

/// The guest's /init: mounts, loads the virtio modules, runs statneg on each
/// requested filesystem (from `lr.*` words of the kernel command line) and
/// powers off.
const INIT_SCRIPT: &str = r#"#!/bin/busybox sh
# linuxref init: runs statneg on tmpfs and ext4, then powers off.
/bin/busybox mkdir -p /proc /sys /dev /mnt/tmpfs /mnt/ext4
/bin/busybox --install -s /bin
export PATH=/bin
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev
for m in $(cat /modules/order); do
    insmod /modules/$m || echo "linuxref: insmod $m failed"
done
FS=tmpfs,ext4 THREADS=1 WARMUP=1 SECS=3
for w in $(cat /proc/cmdline); do
    case $w in
        lr.fs=*) FS=${w#lr.fs=} ;;
        lr.threads=*) THREADS=${w#lr.threads=} ;;
        lr.warmup=*) WARMUP=${w#lr.warmup=} ;;
        lr.secs=*) SECS=${w#lr.secs=} ;;
    esac
done
mount -t tmpfs -o size=64m tmpfs /mnt/tmpfs || echo "linuxref: tmpfs mount failed"
i=0
while [ ! -b /dev/vda ] && [ $i -lt 50 ]; do sleep 0.1; i=$((i + 1)); done
mount -t ext4 /dev/vda /mnt/ext4 || echo "linuxref: ext4 mount failed"
echo "linuxref: kernel $(uname -r), $(nproc) cpus, fs=$FS threads=$THREADS warmup=$WARMUP secs=$SECS"
for fs in $(echo $FS | tr , ' '); do
    echo "linuxref-begin fs=$fs"
    /statneg /mnt/$fs/missing-name $THREADS $WARMUP $SECS
    echo "linuxref-end fs=$fs rc=$?"
done
echo "linuxref-done"
sync
poweroff -f
"#;

fn build_initramfs(
    dir: &Path,
    busybox: &Path,
    statneg: &Path,
    modules: &[PathBuf],
    out: &Path,
) -> Result<(), SkipReason> {
    let root = dir.join("initramfs-root");
    let _ = fs::remove_dir_all(&root);
    for d in ["bin", "modules"] {
        mkdir(&root.join(d))?;
    }
    let copy = |from: &Path, to: PathBuf| {
        fs::copy(from, &to).map_err(|e| failed(&format!("copying {}", from.display()), e))
    };
    copy(busybox, root.join("bin/busybox"))?;
    copy(statneg, root.join("statneg"))?;
    let mut order = String::new();
    for m in modules {
        let name = m
            .file_name()
            .unwrap_or_default()
            .to_string_lossy()
            .into_owned();
        copy(m, root.join("modules").join(&name))?;
        order.push_str(&name);
        order.push('\n');
    }
    let w = |p: PathBuf, s: &str| fs::write(&p, s).map_err(|e| failed("writing the initramfs", e));
    w(root.join("modules/order"), &order)?;
    w(root.join("init"), INIT_SCRIPT)?;
    let chmod = |p: PathBuf| {
        use std::os::unix::fs::PermissionsExt;
        fs::set_permissions(&p, fs::Permissions::from_mode(0o755))
            .map_err(|e| failed("chmod in the initramfs", e))
    };
    chmod(root.join("init"))?;
    chmod(root.join("bin/busybox"))?;
    chmod(root.join("statneg"))?;
    let tmp = out.with_extension("tmp");
    run_tool(
        "packing the initramfs (cpio | gzip)",
        Command::new("sh")
            .arg("-c")
            .arg("cd \"$1\" && find . | LC_ALL=C sort | cpio -o -H newc --quiet -R 0:0 | gzip -6 > \"$2\"")
            .arg("sh")
            .arg(&root)
            .arg(&tmp),
    )?;
    fs::rename(&tmp, out).map_err(|e| failed("writing the initramfs", e))
}

fn build_ext4_image(dir: &Path, out: &Path) -> Result<(), SkipReason> {
    // A few entries so the root directory is not trivially empty.
    let content = dir.join("ext4-root");
    let _ = fs::remove_dir_all(&content);
    mkdir(&content.join("dir"))?;
    fs::write(content.join("present"), "linuxref\n").map_err(|e| failed("ext4 content", e))?;
    let tmp = out.with_extension("tmp");
    let _ = fs::remove_file(&tmp);
    run_tool(
        "mkfs.ext4 -d",
        Command::new(tool_path("mkfs.ext4").unwrap_or_else(|| "mkfs.ext4".into()))
            .args(["-q", "-F", "-L", "linuxref", "-d"])
            .arg(&content)
            .arg(&tmp)
            .arg(format!("{EXT4_IMAGE_MIB}M")),
    )?;
    let _ = fs::remove_dir_all(&content);
    fs::rename(&tmp, out).map_err(|e| failed("writing the ext4 image", e))
}

// ---------------------------------------------------------------------------
// Running
// ---------------------------------------------------------------------------

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
    fn parses_will_it_scale_format() {
        let r = parse_wis(REPORT).unwrap();
        assert_eq!(
            r.testcase,
            "stat() of a missing name (/mnt/tmpfs/x), 2 threads"
        );
        assert_eq!(
            r.warmup,
            vec![Sample {
                min: 10,
                max: 12,
                total: 22
            }]
        );
        assert_eq!(r.measurement.len(), 2);
        assert_eq!(r.average, 22);
        assert_eq!(r.min(), 9);
        assert_eq!(r.max(), 13);
    }

    #[test]
    fn ignores_interleaved_console_noise_and_crlf() {
        let noisy = REPORT.replace(
            "measurement\n",
            "measurement\r\n[   12.3] random: crng init done\r\n",
        );
        assert_eq!(parse_wis(&noisy).unwrap().average, 22);
    }

    #[test]
    fn rejects_malformed_reports() {
        assert!(parse_wis("").is_err());
        assert!(parse_wis(&REPORT.replace("average:22", "average:23")).is_err());
        assert!(parse_wis(&REPORT.replace("average:22\n", "")).is_err());
        assert!(parse_wis(&REPORT.replace("measurement\n", "")).is_err());
        assert!(parse_wis(&REPORT.replace("warmup\n", "")).is_err());
        assert!(parse_sample("min:5 max:4 total:9").is_none());
        assert!(parse_sample("min:1 max:2 total:3 extra").is_none());
        assert!(parse_sample("min:x max:2 total:3").is_none());
    }

    #[test]
    fn picks_the_versioned_cloud_kernel() {
        let out = "linux-image-cloud-amd64\n  Depends: linux-image-6.1.0-57-cloud-amd64\n";
        assert_eq!(
            pick_kernel_package(out).as_deref(),
            Some("linux-image-6.1.0-57-cloud-amd64")
        );
        assert_eq!(pick_kernel_package("linux-image-cloud-amd64\n"), None);
    }

    #[test]
    fn reads_modinfo_depends() {
        let ko = b"\x7fELF...\0license=GPL\0depends=virtio_ring,virtio-pci-modern-dev\0intree=Y\0";
        assert_eq!(
            modinfo_depends(ko),
            vec!["virtio_ring", "virtio_pci_modern_dev"]
        );
        assert!(modinfo_depends(b"\0depends=\0").is_empty());
        assert!(modinfo_depends(b"nothing").is_empty());
    }

    #[test]
    fn module_order_puts_dependencies_first() {
        let root = std::env::temp_dir().join(format!("linuxref-mod-test-{}", std::process::id()));
        let d = root.join("6.1/kernel/drivers");
        fs::create_dir_all(&d).unwrap();
        fs::write(d.join("a.ko"), b"\0depends=b,c\0").unwrap();
        fs::write(d.join("b.ko"), b"\0depends=c\0").unwrap();
        fs::write(d.join("c.ko"), b"\0depends=\0").unwrap();
        fs::write(d.join("loop.ko"), b"\0depends=loop\0").unwrap();
        let order = module_load_order(&root, &["a"]).unwrap();
        let names: Vec<_> = order
            .iter()
            .map(|p| p.file_name().unwrap().to_string_lossy().into_owned())
            .collect();
        assert_eq!(names, ["c.ko", "b.ko", "a.ko"]);
        assert!(module_load_order(&root, &["missing"]).is_err());
        assert!(module_load_order(&root, &["loop"]).is_err());
        fs::remove_dir_all(&root).unwrap();
    }

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

    #[test]
    fn fs_names_round_trip() {
        for f in [Fs::Tmpfs, Fs::Ext4] {
            assert_eq!(f.name().parse::<Fs>(), Ok(f));
        }
        assert!("btrfs".parse::<Fs>().is_err());
    }

    #[test]
    fn skip_reasons_say_what_to_install() {
        let s = SkipReason::MissingTool {
            tool: "cpio".into(),
            package: "cpio".into(),
        }
        .to_string();
        assert!(s.contains("cpio") && s.contains("make setup"));
    }
}
