//! Host Linux's own stat of a missing name, on N threads, through the
//! same driver and output format as the workloads: the native reference
//! (the seed's statneg, on tmpfs `/dev/shm` and on `/tmp`). Each stat is
//! `newfstatat(AT_FDCWD, path, &st, 0)`, the system call Linux's `stat(2)`
//! is on x86-64, made directly (rustix's raw system call, so neither the C
//! library nor `std` can pick `statx`), and its answer checked.
//!
//! The path is `DIR/nonexistent` ([`PathShape::Absolute`], the sweep's) or,
//! with [`PathShape::InDir`], the one component `nonexistent` relative to
//! the working directory, made `DIR` first: the prototype's statneg shape
//! (one missing name looked up in one directory, no other component, no
//! mount crossed), which `bench fidelity`'s host pairs use.
//!
//! No fs counters exist for it, so its output has no `per-op` line.
//!
//! Touches: `newfstatat` of one missing path; the process's working
//! directory ([`PathShape::InDir`]); reads /proc/self/mounts.

use std::ffi::CString;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use bench::driver::{self, Body, Executor, RunConfig, RunError, Summary};

/// Which path a [`LinuxStat`] stats.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PathShape {
    /// `DIR/nonexistent`, walked from the root.
    Absolute,
    /// `nonexistent`, relative to the working directory, which is `DIR`.
    InDir,
}

/// A task body that stats a missing path with `newfstatat`.
pub struct LinuxStat {
    /// What is passed to `newfstatat`.
    path: CString,
    /// What it names, for reports.
    shown: PathBuf,
}

/// The missing name both shapes end in.
pub const MISSING: &str = "nonexistent";

/// `newfstatat(AT_FDCWD, path, &st, 0)`.
fn newfstatat(path: &CString) -> rustix::io::Result<rustix::fs::Stat> {
    rustix::fs::statat(
        rustix::fs::CWD,
        path.as_c_str(),
        rustix::fs::AtFlags::empty(),
    )
}

impl LinuxStat {
    /// Stat `dir/nonexistent` in `shape` ([`PathShape::InDir`] makes `dir`
    /// the process's working directory); errors if the name exists, `dir`
    /// is not a directory or cannot be entered.
    pub fn new(dir: &Path, shape: PathShape) -> Result<Self, String> {
        if !dir.is_dir() {
            return Err(format!("{} is not a directory", dir.display()));
        }
        let shown = dir.join(MISSING);
        let path = match shape {
            PathShape::Absolute => shown.as_os_str().as_bytes().to_vec(),
            PathShape::InDir => {
                std::env::set_current_dir(dir)
                    .map_err(|e| format!("chdir {}: {e}", dir.display()))?;
                MISSING.as_bytes().to_vec()
            }
        };
        let path = CString::new(path).map_err(|_| format!("{} holds a NUL byte", dir.display()))?;
        match newfstatat(&path) {
            Err(rustix::io::Errno::NOENT) => Ok(LinuxStat { path, shown }),
            Err(e) => Err(format!("newfstatat {}: {e}", shown.display())),
            Ok(_) => Err(format!(
                "{} exists; the reference needs a missing name",
                shown.display()
            )),
        }
    }

    /// The missing name, as a path from the root.
    pub fn path(&self) -> &Path {
        &self.shown
    }

    /// What each stat passes to `newfstatat`.
    pub fn arg(&self) -> &str {
        self.path.to_str().unwrap_or("?")
    }
}

impl Body for LinuxStat {
    #[inline]
    fn run_once(&self, _task: usize) -> bool {
        matches!(newfstatat(&self.path), Err(rustix::io::Errno::NOENT))
    }
    fn expected(&self, _task: usize) -> &'static str {
        "ENOENT from newfstatat(AT_FDCWD, PATH, &st, 0)"
    }
}

/// The filesystem type holding `dir` (longest mount point prefix in
/// /proc/self/mounts), e.g. "tmpfs" or "ext4".
pub fn fs_type(dir: &Path) -> Option<String> {
    let dir = std::fs::canonicalize(dir).ok()?;
    let mounts = std::fs::read_to_string("/proc/self/mounts").ok()?;
    let mut best: Option<(usize, String)> = None;
    for l in mounts.lines() {
        let mut f = l.split(' ');
        let (_, mnt, ty) = (f.next()?, f.next()?, f.next()?);
        let mnt = mnt.replace("\\040", " ");
        if dir.starts_with(&mnt) && best.as_ref().is_none_or(|(len, _)| mnt.len() >= *len) {
            best = Some((mnt.len(), ty.to_string()));
        }
    }
    best.map(|(_, t)| t)
}

/// The design-column label of a reference on `dir`: `linux-<fstype>`.
pub fn label(dir: &Path) -> String {
    format!(
        "linux-{}",
        fs_type(dir).unwrap_or_else(|| "unknown".to_string())
    )
}

/// Run the reference and print will-it-scale's format to `out`.
pub fn run<E: Executor + ?Sized, W: std::fmt::Write + Send>(
    exec: &E,
    dir: &Path,
    shape: PathShape,
    tasks: usize,
    warmup: u32,
    secs: u32,
    out: &mut W,
) -> Result<Summary, String> {
    let fstype = fs_type(dir).unwrap_or_else(|| "unknown".to_string());
    let body = LinuxStat::new(dir, shape)?;
    let description = format!(
        "non-existent file stat (linux {fstype} {} newfstatat {:?})",
        body.path().display(),
        body.arg()
    );
    let cfg = RunConfig {
        description: &description,
        tasks,
        warmup,
        secs,
        counters: None,
        pause: 0,
    };
    driver::run(exec, &cfg, &body, out).map_err(|e: RunError| e.to_string())
}
