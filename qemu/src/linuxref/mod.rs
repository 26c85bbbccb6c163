//! The Linux references for statneg: a Debian cloud kernel booted under the
//! same QEMU settings as our kernel, with a busybox initramfs that runs the C
//! statneg (`qemu/linuxref/statneg.c`) on tmpfs and on an ext4 virtio disk; and
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
//!
//! - `build`: the cached build of a release: the static statneg, the kernel, the ext4 image.
//! - `apt`: where the packages come from (the machine's apt, a private Debian 13 one).
//! - `tools`: the host programs a build runs (shared with the ksmbd fixture).
//! - `initramfs`: the guest's initramfs (busybox, helpers, GNU `ls`, modules, `/init`).
//! - `guest`: booting the guest and running statneg in it (and on the host).
//! - `parse`: will-it-scale's format as the guest and the host print it.
//! - `source`: Debian 13's other packages (each release's source tree, headers, coreutils).
//! - `cifsmod`: cifs.ko built out of tree with a patch series of `linux/patches/REL/`.
//! - `kbuild`: our builds of 6.12.117 and 7.3.4 (vanilla and patched) in place of Debian's kernel.
//! - `oracle`: the dcache stress oracle in the guest, on tmpfs and ext4.
//! - `walks`: ftrace's function graph of single stats in the guest (`make linux-walks`).
//! - `negcost`: N missing names' cost to a tmpfs directory's readdir and rmdir (`make negcost`).
//! - `fidelity`: the system call constant and one statneg window per boot (`make fidelity`).
//! - `console`: a guest that did not finish: its crash report, its console kept, one retry.
//!
//! The guest's own files (its `/init` scripts, the C programs built static
//! for it, the walks' function list) are this crate's, in `qemu/linuxref/`
//! ([`guest_file`]); nothing else reads them.

use std::fmt;
use std::path::{Path, PathBuf};

/// One of the reference guest's own files, by name: `qemu/linuxref/NAME`
/// (an `/init` script, a C program built static for the guest, the walks'
/// function list).
pub fn guest_file(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("linuxref")
        .join(name)
}

mod apt;
mod build;
mod cifsmod;
mod console;
mod guest;
mod guest_fidelity;
mod guest_negcost;
mod initramfs;
mod kbuild;
mod modules;
mod oracle;
mod parse;
mod source;
mod tools;
mod walks;

/// What the ksmbd guest (`crate::ksmbd`) builds with.
pub(crate) use apt::download;
pub use apt::{AptSource, PRIVATE_SUITES};
pub(crate) use build::kernel_image as package_kernel_image;
pub use build::{
    default_build_dir, ensure_built, ensure_release, lrtime_source, statneg_source, xattr_source,
};
pub use cifsmod::{ensure_cifs_module, patch_series, patch_series_dir, CifsModule};
pub use console::{
    crash_report, indent, judge, keep_console, retry_on_panic, unfinished, CrashReport, Retried,
};
pub use guest::{
    dropped_options, finished_runs, guest_cmdline, parse_listings, parse_xattr_lines, run_guest,
    run_host_statneg, run_statneg, trace_counts, CifsListing, CifsRun, EaCheck, GuestReport,
    GuestRun, XattrSeen, DEFAULT_COUNT_ITERS, MARKER_PORT,
};
pub use guest_fidelity::{
    fidelity_cmdline, fidelity_script, parse_fidelity, run_fidelity, FidelityReport, FidelityRun,
    Probed, ProbedPerOp, FIDELITY_PATH, TMPFS_MAGIC,
};
pub use guest_negcost::{
    locked_stretches, negcost_cmdline, negcost_script, negcost_source, parse_negcost, run_negcost,
    trace_steps, GuestNegcost, LockedStretch, NegcostKernel, NegcostReport, StepStretches,
    NEGCOST_FILES, NEGCOST_MEM_MIB,
};
pub use kbuild::{
    broken_dir, ensure_kernel, kernel_image, patches_dir, select_kernel, Kernel, BROKEN_DIR,
    PATCHES_DIR,
};
pub(crate) use modules::{decompressed_modules, module_load_order};
pub use oracle::{
    cached_line, cached_source, cached_verdict, casefold_line, casefold_source, oracle_line,
    oracle_source, oracle_verdict, parse_cached, parse_casefold, parse_oracle, run_oracle, Cached,
    Casefold, OracleReport, OracleRun,
};
pub use parse::{parse_wis, parse_wis_unchecked, PerOp, Sample, WisResult};
pub use source::{
    ensure_linux_source, tree_release, trixie_apt, trixie_deb, LINUX_SOURCE_PACKAGE,
    LINUX_SOURCE_VERSION,
};
pub(crate) use tools::{digest, dpkg_x, gcc_static, pack_initramfs, require_tools};
pub use walks::{
    entry_subtree, function_list, interrupted, keep_lookup_path, parse_function_list, parse_graph,
    parse_walks, run_walks, walks_script, walkstat_source, Call, CaseTrace, Walk, WalkKernel,
    WalksReport,
};

/// The reference guest's QEMU configuration for `kernel` under `accel`: under
/// TCG the `qemu64` CPU model every Linux figure of the project was measured
/// on, not the runner's default (`max`, which our kernel asks for its
/// RDRAND): `max` would also hand Linux 5-level paging, PCID and the like,
/// and move its figures. Linux draws its keys from its own pool either way.
pub fn guest_config(
    kernel: &std::path::Path,
    accel: crate::runner::Accel,
) -> crate::runner::QemuConfig {
    let cfg = crate::runner::QemuConfig::new(kernel).accel(accel);
    match accel {
        crate::runner::Accel::Tcg => cfg.cpu(LINUX_TCG_CPU),
        _ => cfg,
    }
}

/// The CPU model of the reference guest under TCG (see [`guest_config`]).
pub const LINUX_TCG_CPU: &str = "qemu64";

/// On every multi-vCPU guest's command line: the kernel boots on one CPU
/// and the guest's init brings the others up once its modules are in.
/// A kernel patches its own text while it boots (static keys flipped by
/// initcalls, modules' jump labels) and when probes are armed; under
/// QEMU 7.2's multi-threaded TCG a vCPU running a site that another vCPU
/// patches dies at address 0 or on an int3 nobody claims
/// (`scripts/linux-pokes.sh`: every 2-vCPU boot within 100 kprobe
/// arm/disarm cycles, none with one CPU online; docs/linux-guest-crash.md).
pub const BOOT_ONE_CPU: &str = "maxcpus=1";

/// Checks the guest's own count of online CPUs (`N cpus`, as its init
/// prints it once it has brought them up) against the vCPUs it was given:
/// a guest that could not bring one up would measure fewer CPUs than its
/// line says.
pub fn check_online_cpus(said: &str, vcpus: u32) -> Result<(), LinuxRefError> {
    let online = said
        .trim()
        .strip_suffix(" cpus")
        .and_then(|n| n.trim().parse::<u32>().ok());
    match online {
        Some(n) if n == vcpus => Ok(()),
        Some(n) => Err(LinuxRefError::Guest(format!(
            "the guest brought {n} of its {vcpus} vCPUs online"
        ))),
        None => Err(LinuxRefError::Parse(format!(
            "no online CPU count (`N cpus`) in the guest's kernel line: `{said}`"
        ))),
    }
}

/// The metapackage whose dependency names the current cloud kernel.
pub const KERNEL_METAPACKAGE: &str = "linux-image-cloud-amd64";
/// The package that provides a static busybox.
pub const BUSYBOX_PACKAGE: &str = "busybox-static";

/// A filesystem the guest runs statneg (tmpfs, ext4) or the dcache oracle
/// (all three) on.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Fs {
    /// A tmpfs mounted in the guest (`/mnt/tmpfs`).
    Tmpfs,
    /// The ext4 virtio disk (`/mnt/ext4`, from `ext4.img`).
    Ext4,
    /// A ramfs mounted in the oracle's boot (`/mnt/ramfs`): the other
    /// filesystem the tmpfs-noalloc series gives a complete dcache. The
    /// statneg guest does not mount it.
    Ramfs,
    /// The kernel's devtmpfs mounted a second time in the oracle's boot
    /// (`/mnt/devtmpfs`): one superblock, a tmpfs instance (a ramfs one
    /// without CONFIG_TMPFS), so it gets whatever tmpfs gets. The statneg
    /// guest does not run on it.
    Devtmpfs,
}

impl Fs {
    /// Lower-case name, as used on the guest command line and in reports.
    pub fn name(self) -> &'static str {
        match self {
            Fs::Tmpfs => "tmpfs",
            Fs::Ext4 => "ext4",
            Fs::Ramfs => "ramfs",
            Fs::Devtmpfs => "devtmpfs",
        }
    }
}

impl std::str::FromStr for Fs {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "tmpfs" => Ok(Fs::Tmpfs),
            "ext4" => Ok(Fs::Ext4),
            "ramfs" => Ok(Fs::Ramfs),
            "devtmpfs" => Ok(Fs::Devtmpfs),
            other => Err(format!(
                "unknown filesystem `{other}` (expected tmpfs, ext4, ramfs or devtmpfs)"
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
    /// The Debian kernel package used, e.g. `linux-image-6.12.117+deb13-cloud-amd64`.
    pub kernel_package: String,
    /// Its Debian version, e.g. `6.12.117-1`.
    pub package_version: String,
    /// The kernel's own release (`uname -r`), e.g. `6.12.117+deb13-cloud-amd64`.
    pub kernel_release: String,
    /// Which reference this is.
    pub release: Release,
}

impl Paths {
    /// The exact kernel, as reports name it:
    /// `Linux 6.12.117-1 (linux-image-6.12.117+deb13-cloud-amd64)`.
    pub fn describe(&self) -> String {
        let v = if self.package_version.is_empty() {
            self.kernel_release.as_str()
        } else {
            self.package_version.as_str()
        };
        format!("Linux {v} ({})", self.kernel_package)
    }

    /// The design label of a cifs row: `linux-6.12`.
    pub fn cifs_design(&self) -> String {
        format!("linux-{}", self.release.name())
    }
}

/// Which Linux the reference guest runs (`--linux-release 6.12`, the
/// default, `7.3` or `6.1`): a Debian cloud kernel of Debian 13 (through a
/// private apt configuration: `trixie` for 6.12, `trixie-backports` for 7.3)
/// or of the machine's own Debian 12 lists (6.1).
///
/// 6.12 is the default because it is the seed's kernel line (RHEL 10 is
/// based on 6.12); 7.3 is mainline's, the release patches are posted against.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Release {
    /// Debian 13 "trixie": `linux-image-cloud-amd64` 6.12.
    #[default]
    V6_12,
    /// Debian 13 "trixie-backports": the 7.3.4 cloud kernel.
    V7_3,
    /// Debian 12 "bookworm" (the machine's lists): 6.1.
    V6_1,
}

impl Release {
    /// Every release, the default first.
    pub const ALL: [Release; 3] = [Release::V6_12, Release::V7_3, Release::V6_1];
    /// The releases we build and patch kernels of (`linux/patches/REL/`).
    pub const PATCHED: [Release; 2] = [Release::V6_12, Release::V7_3];

    /// `6.12`, `7.3` or `6.1`.
    pub fn name(self) -> &'static str {
        match self {
            Release::V6_12 => "6.12",
            Release::V7_3 => "7.3",
            Release::V6_1 => "6.1",
        }
    }

    /// The Debian suite to fetch from with a private apt configuration;
    /// `None`: the machine's own lists.
    pub fn suite(self) -> Option<&'static str> {
        match self {
            Release::V6_12 => Some("trixie"),
            Release::V7_3 => Some("trixie-backports"),
            Release::V6_1 => None,
        }
    }

    /// The full upstream release of its Debian source package and of our
    /// builds (`6.12.117`, `7.3.4`); `None` for 6.1, which we do not build.
    pub fn full(self) -> Option<&'static str> {
        match self {
            Release::V6_12 => Some("6.12.117"),
            Release::V7_3 => Some("7.3.4"),
            Release::V6_1 => None,
        }
    }

    /// Debian's ABI name of that release (`uname -r` less the flavour):
    /// `6.12.117+deb13`, `7.3.4+deb13`.
    pub fn debian_abi(self) -> Option<String> {
        self.full().map(|v| format!("{v}+deb13"))
    }

    /// The Debian package holding its source tarball (`linux-source-7.3`).
    pub fn source_package(self) -> String {
        format!("linux-source-{}", self.name())
    }

    /// The Debian packages of its cloud kernel when they are split (from
    /// 6.19 on `linux-image-*` is a metapackage): the image
    /// (`linux-binary-unsigned-ABI-cloud-amd64`, first), the modules and the
    /// config (`linux-base-…`). `None`: one `linux-image-*` package, the
    /// one `linux-image-cloud-amd64` names.
    pub fn split_packages(self) -> Option<Vec<String>> {
        match self {
            Release::V7_3 => {
                let abi = self.debian_abi()?;
                Some(
                    ["binary-unsigned", "modules", "base"]
                        .iter()
                        .map(|p| format!("linux-{p}-{abi}-cloud-amd64"))
                        .collect(),
                )
            }
            Release::V6_12 | Release::V6_1 => None,
        }
    }

    /// Our kernel builds' directory under the build dir: `kbuild` for 6.12
    /// (as before 7.3 existed), `kbuild-7.3` otherwise.
    pub fn kbuild_dir(self) -> String {
        match self {
            Release::V6_12 => "kbuild".to_string(),
            r => format!("kbuild-{}", r.name()),
        }
    }
}

impl std::str::FromStr for Release {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Release::ALL
            .into_iter()
            .find(|r| r.name() == s)
            .ok_or_else(|| format!("unknown Linux release `{s}` (expected 6.12, 7.3 or 6.1)"))
    }
}

impl fmt::Display for Release {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Why the Linux reference guest cannot be built here.
/// A step that failed with an I/O error, as a [`SkipReason`].
pub(crate) fn failed(step: &str, e: std::io::Error) -> SkipReason {
    SkipReason::BuildFailed {
        step: step.into(),
        detail: e.to_string(),
    }
}

/// `mkdir -p`, its failure a [`SkipReason`].
pub(crate) fn mkdir(d: &std::path::Path) -> Result<(), SkipReason> {
    std::fs::create_dir_all(d).map_err(|e| failed(&format!("creating {}", d.display()), e))
}

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

/// Errors of a reference run.
#[derive(Debug)]
pub enum LinuxRefError {
    /// QEMU did not run, or the guest did not finish.
    Guest(String),
    /// The guest's kernel crashed: `what` booted, the crash report's lines
    /// ([`crash_report`]) and the whole console (what the guest finished
    /// before the crash is in it: [`finished_runs`]).
    Panic {
        what: String,
        lines: Vec<String>,
        console: String,
    },
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
            LinuxRefError::Panic { what, lines, .. } => {
                write!(
                    f,
                    "Linux reference guest: {what}: the kernel crashed:\n{}",
                    indent(lines)
                )
            }
            LinuxRefError::Parse(m) => write!(f, "statneg output: {m}"),
            LinuxRefError::Host(m) => write!(f, "host statneg: {m}"),
            LinuxRefError::Args(m) => write!(f, "bad arguments: {m}"),
        }
    }
}

impl std::error::Error for LinuxRefError {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_guest_short_of_its_vcpus_is_refused() {
        assert!(check_online_cpus(" 2 cpus", 2).is_ok());
        assert!(check_online_cpus("1 cpus", 1).is_ok());
        let short = check_online_cpus(" 1 cpus", 2).unwrap_err().to_string();
        assert!(short.contains("brought 1 of its 2 vCPUs online"), "{short}");
        assert!(check_online_cpus("", 2).is_err());
        assert!(check_online_cpus(" two cpus", 2).is_err());
    }

    #[test]
    fn fs_names_round_trip() {
        for f in [Fs::Tmpfs, Fs::Ext4, Fs::Ramfs, Fs::Devtmpfs] {
            assert_eq!(f.name().parse::<Fs>(), Ok(f));
        }
        assert!("btrfs".parse::<Fs>().is_err());
    }

    #[test]
    fn releases_name_their_packages() {
        for r in Release::ALL {
            assert_eq!(r.name().parse::<Release>(), Ok(r));
        }
        assert_eq!(Release::default(), Release::V6_12);
        assert!("7.2".parse::<Release>().is_err());
        assert_eq!(Release::V7_3.suite(), Some("trixie-backports"));
        assert_eq!(Release::V6_12.suite(), Some("trixie"));
        assert_eq!(Release::V6_1.suite(), None);
        assert_eq!(Release::V7_3.debian_abi().as_deref(), Some("7.3.4+deb13"));
        assert_eq!(
            Release::V7_3.split_packages().unwrap(),
            [
                "linux-binary-unsigned-7.3.4+deb13-cloud-amd64",
                "linux-modules-7.3.4+deb13-cloud-amd64",
                "linux-base-7.3.4+deb13-cloud-amd64"
            ]
        );
        assert_eq!(Release::V6_12.split_packages(), None);
        assert_eq!(Release::V6_12.kbuild_dir(), "kbuild");
        assert_eq!(Release::V7_3.kbuild_dir(), "kbuild-7.3");
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
