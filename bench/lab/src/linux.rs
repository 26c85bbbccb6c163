//! Host Linux's own `stat()` of a missing name, on N threads, through the
//! same driver and output format as the workloads: the native reference
//! (the seed's statneg, on tmpfs `/dev/shm` and on `/tmp`).
//!
//! No fs counters exist for it, so its output has no `per-op` line.
//!
//! Touches: `stat()` of one missing path; reads /proc/self/mounts.

use std::path::{Path, PathBuf};

use bench::driver::{self, Body, Executor, RunConfig, RunError, Summary};

/// A task body that stats a missing path with `std::fs::metadata`.
pub struct LinuxStat {
    path: PathBuf,
}

impl LinuxStat {
    /// Stat `dir/nonexistent`; errors if it exists or `dir` is not a directory.
    pub fn new(dir: &Path) -> Result<Self, String> {
        if !dir.is_dir() {
            return Err(format!("{} is not a directory", dir.display()));
        }
        let path = dir.join("nonexistent");
        match std::fs::symlink_metadata(&path) {
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(LinuxStat { path }),
            Err(e) => Err(format!("stat {}: {e}", path.display())),
            Ok(_) => Err(format!(
                "{} exists; the reference needs a missing name",
                path.display()
            )),
        }
    }

    /// The path stated.
    pub fn path(&self) -> &Path {
        &self.path
    }
}

impl Body for LinuxStat {
    #[inline]
    fn run_once(&self, _task: usize) -> bool {
        matches!(std::fs::metadata(&self.path), Err(e) if e.kind() == std::io::ErrorKind::NotFound)
    }
    fn expected(&self, _task: usize) -> &'static str {
        "ENOENT from stat(DIR/nonexistent)"
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
    tasks: usize,
    warmup: u32,
    secs: u32,
    out: &mut W,
) -> Result<Summary, String> {
    let body = LinuxStat::new(dir)?;
    let description = format!(
        "non-existent file stat (linux {} {})",
        fs_type(dir).unwrap_or_else(|| "unknown".to_string()),
        body.path().display()
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
