//! `bench sweep` flags and their checks, and the default paths of the
//! kernel image and the runner. Touches: environment variables only.

use std::path::{Path, PathBuf};

use super::Source;
use bench::params::{Bench, Design, LockKind};

fn parse_bench(s: &str) -> Result<Bench, String> {
    Bench::from_name(s).ok_or_else(|| {
        format!(
            "unknown testcase '{s}' (valid: {})",
            bench::params::KEYS[0].syntax
        )
    })
}

fn parse_design(s: &str) -> Result<Design, String> {
    Design::from_name(s).ok_or_else(|| {
        format!(
            "unknown design '{s}' (valid: {})",
            fs::dcache::design::Names
        )
    })
}

fn parse_cpus(s: &str) -> Result<usize, String> {
    match s.parse::<usize>() {
        Ok(n) if (1..=bench::params::MAX_TASKS).contains(&n) => Ok(n),
        _ => Err(format!(
            "bad CPU count '{s}' (1 to {})",
            bench::params::MAX_TASKS
        )),
    }
}

fn parse_warmup(s: &str) -> Result<u32, String> {
    match s.parse::<u32>() {
        Ok(n) if n <= bench::params::MAX_SECS => Ok(n),
        _ => Err(format!(
            "bad warmup '{s}' (0 to {} seconds)",
            bench::params::MAX_SECS
        )),
    }
}

fn parse_secs(s: &str) -> Result<u32, String> {
    match s.parse::<u32>() {
        Ok(n) if (1..=bench::params::MAX_SECS).contains(&n) => Ok(n),
        _ => Err(format!(
            "bad secs '{s}' (1 to {} seconds)",
            bench::params::MAX_SECS
        )),
    }
}

/// Most repetitions of one point `--repeat` accepts.
pub const MAX_REPEAT: u32 = 100;

fn parse_repeat(s: &str) -> Result<u32, String> {
    match s.parse::<u32>() {
        Ok(n) if (1..=MAX_REPEAT).contains(&n) => Ok(n),
        _ => Err(format!("bad repeat count '{s}' (1 to {MAX_REPEAT})")),
    }
}

/// A kernel name some patched release knows (its release is picked in
/// [`SweepArgs::kernels`], by `--linux-release` unless the name is a full label).
fn parse_kernel_name(s: &str) -> Result<String, String> {
    let mut err = String::new();
    for r in qemu::linuxref::Release::PATCHED {
        match qemu::linuxref::Kernel::parse(s, r) {
            Ok(_) => return Ok(s.to_string()),
            Err(e) => err = e,
        }
    }
    Err(err)
}

pub(super) fn parse_lock(s: &str) -> Result<LockKind, String> {
    LockKind::from_name(s)
        .ok_or_else(|| format!("bad lock '{s}' (qspinlock, ticket, ttas or pvqspinlock)"))
}

pub(super) fn parse_accel(s: &str) -> Result<String, String> {
    match s {
        "auto" | "tcg" | "kvm" => Ok(s.to_string()),
        _ => Err(format!("bad accelerator '{s}' (auto, tcg or kvm)")),
    }
}

/// `bench sweep` flags.
#[derive(Clone, Debug, clap::Args)]
pub struct SweepArgs {
    /// Testcases (comma-separated): statneg, statneg-distinct, statneg-deep, statpos, churn, statneg-owndir.
    #[arg(long, value_delimiter = ',', value_parser = parse_bench, default_value = "statneg")]
    pub testcases: Vec<Bench>,
    /// ENOENT designs (comma-separated) [default: every design of
    /// fs::dcache::design::DESIGNS, in its order].
    #[arg(long, value_delimiter = ',', value_parser = parse_design)]
    pub designs: Vec<Design>,
    /// Spinlock kinds (comma-separated): qspinlock, ticket, ttas, pvqspinlock. Each
    /// guest and host point runs once per kind (`lock=K`); rows of a kind
    /// other than the default (qspinlock, Linux's) carry it in their
    /// design, as `transient+ticket`.
    #[arg(long, value_delimiter = ',', value_parser = parse_lock, default_value = "qspinlock")]
    pub locks: Vec<LockKind>,
    /// CPU (task, vCPU) counts (comma-separated).
    #[arg(long, value_delimiter = ',', value_parser = parse_cpus, default_value = "1,2")]
    pub cpus: Vec<usize>,
    /// Warmup seconds of every run.
    #[arg(long, value_parser = parse_warmup, default_value = "2")]
    pub warmup: u32,
    /// Measured seconds of every run.
    #[arg(long, value_parser = parse_secs, default_value = "5")]
    pub secs: u32,
    /// Runs of every point (1 to 100), made in rounds over the whole plan;
    /// report.md then shows each point's median run and the spread.
    #[arg(long, value_parser = parse_repeat, default_value = "1")]
    pub repeat: u32,
    /// Sources (comma-separated).
    #[arg(
        long,
        value_delimiter = ',',
        value_enum,
        default_value = "guest,host,linux-host,linux-guest"
    )]
    pub sources: Vec<Source>,
    /// Results go to OUT/<timestamp>/.
    #[arg(long, default_value = "results")]
    pub out: PathBuf,
    /// Our kernel image [default: <target>/x86_64-unknown-none/release/kernel].
    #[arg(long)]
    pub kernel: Option<PathBuf>,
    /// The QEMU runner [default: <target>/release/qemu-run].
    #[arg(long)]
    pub runner: Option<PathBuf>,
    /// QEMU accelerator for guests: auto, tcg or kvm [default: $ACCEL, else auto].
    #[arg(long, value_parser = parse_accel)]
    pub accel: Option<String>,
    /// Build/cache directory of the Linux reference guest [default: the workspace's build/].
    #[arg(long)]
    pub build_dir: Option<PathBuf>,
    /// Which Linux release the linux-guest source boots: 6.12 (the seed's
    /// line, the default) or 7.3 (mainline's).
    #[arg(long, default_value = "6.12", value_name = "RELEASE")]
    pub linux_release: qemu::linuxref::Release,
    /// Kernels the linux-guest source boots (comma-separated): debian
    /// (Debian's 6.12.117 or 7.3.4), vanilla, negative, noalloc (our builds
    /// of the release, built when missing: `make linux-patched`), or full
    /// labels (7.3.4-noalloc). Rows are named `linux-FS` and
    /// `linux-VARIANT-FS` for 6.12, `linux-7.3-FS` and `linux-7.3-VARIANT-FS`
    /// for 7.3; each row's note names the exact kernel.
    #[arg(long, value_delimiter = ',', default_value = "debian", value_parser = parse_kernel_name)]
    pub linux_kernels: Vec<String>,
    /// Directories for host Linux's stat() reference (comma-separated).
    #[arg(long, value_delimiter = ',', default_value = "/dev/shm,/tmp")]
    pub linux_dirs: Vec<PathBuf>,
}

impl SweepArgs {
    /// The linux-guest kernels, each of `--linux-release` unless named by
    /// its full label. A variant the release lacks (`--kernels` names one
    /// only the other release has) is kept, and its rows say why it could
    /// not be built.
    pub fn kernels(&self) -> Vec<qemu::linuxref::Kernel> {
        use qemu::linuxref::Kernel;
        self.linux_kernels
            .iter()
            .map(|s| {
                Kernel::parse(s, self.linux_release)
                    .unwrap_or_else(|_| Kernel::Built(self.linux_release, s.clone()))
            })
            .collect()
    }
}

/// The workspace's cargo target directory ($CARGO_TARGET_DIR, else
/// `<workspace>/target`).
pub fn target_dir() -> PathBuf {
    std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            // bench/lab/ is two floors below the workspace root.
            Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("../..")
                .join("target")
        })
}

/// Default kernel image path.
pub fn default_kernel() -> PathBuf {
    target_dir()
        .join("x86_64-unknown-none")
        .join("release")
        .join("kernel")
}

/// Default runner path.
pub fn default_runner() -> PathBuf {
    target_dir().join("release").join("qemu-run")
}
