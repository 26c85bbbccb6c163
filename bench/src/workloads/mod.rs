//! The workloads: what each task does once per iteration, and the setup it
//! needs. One file per workload; all are `no_std` and shared by the guest
//! kernel and host mode.
//!
//! - `statneg` ([`statneg::Statneg`]): every task stats the same missing
//!   name in the tmpfs root (the seed's will-it-scale testcase).
//! - `statneg-distinct` ([`statneg_distinct::StatnegDistinct`]): each task
//!   its own missing name.
//! - `statneg-deep` ([`statneg_deep::StatnegDeep`]): `/a/b/c/d/missing`.
//! - `statpos` ([`statpos::Statpos`]): an existing file.
//! - `churn` ([`churn::Churn`]): odd tasks create and unlink in one directory, even
//!   tasks run statneg in it (the price of the sequence retries).
//! - `statneg-owndir` ([`statneg_owndir::StatnegOwndir`]): each task a
//!   missing name in its own directory (nothing of the name's path shared).
//! - `statneg-many` ([`statneg_many::StatnegMany`]): each task cycles over
//!   `names=` distinct missing names in one directory (cache-size policies).
//! - `statmix` ([`statmix::Statmix`]): hits and misses alternating in one
//!   directory.
//!
//! A workload checks every answer: a wrong one makes `run_once` return
//! false, which the driver counts and reports. `run_once` must not allocate
//! (paths are built in `setup`), so the `allocs` figure is the fs crate's own.
//!
//! A workload stats through [`Sys::stat`], which enters the VFS as the
//! run's `frontend=` says ([`Frontend`]): the syscall-shaped
//! [`fs::stat::sys_newfstatat`] after the executor's system call cost, or
//! the walk alone. So every path a task stats is kept as the caller of a
//! system call keeps it, NUL-terminated (`CPATH` beside each `PATH`).
//!
//! Touches: the [`Vfs`] it is given, nothing else.

use fs::stat::{sys_newfstatat, UserStat, AT_FDCWD, STAT_SIZE};
use fs::uaccess::{UserPtr, UserPtrMut};
use fs::vfs::{FileType, Vfs};
use fs::KResult;

use crate::driver::Body;
pub use crate::params::Frontend;

pub mod churn;
pub mod statmix;
pub mod statneg;
pub mod statneg_deep;
pub mod statneg_distinct;
pub mod statneg_many;
pub mod statneg_owndir;
pub mod statpos;

/// A benchmark workload over a VFS.
pub trait Workload: Sync {
    /// The `testcase:` description (without the design).
    fn description(&self) -> &'static str;
    /// Create what the workload needs, for `tasks` tasks. Runs once, on one
    /// CPU, before any task starts.
    fn setup(&mut self, vfs: &Vfs, tasks: usize) -> KResult<()>;
    /// One operation of task `task`; false if the answer was wrong.
    fn run_once(&self, sys: &Sys<'_>, task: usize) -> bool;
    /// The right answer for task `task`, in words (for error lines).
    fn expected(&self, task: usize) -> &'static str;
}

/// A fresh workload of kind `b`, boxed (the line census drives one from
/// `bench predict`; the benchmark loop itself runs the concrete types).
pub fn boxed(b: crate::params::Bench) -> alloc::boxed::Box<dyn Workload> {
    use crate::params::Bench;
    use alloc::boxed::Box;
    match b {
        Bench::Statneg => Box::new(statneg::Statneg),
        Bench::StatnegDistinct => Box::new(statneg_distinct::StatnegDistinct::default()),
        Bench::StatnegDeep => Box::new(statneg_deep::StatnegDeep),
        Bench::Statpos => Box::new(statpos::Statpos::default()),
        Bench::Churn => Box::new(churn::Churn::default()),
        Bench::StatnegOwndir => Box::new(statneg_owndir::StatnegOwndir::default()),
        Bench::StatnegMany => {
            Box::new(statneg_many::StatnegMany::new(crate::params::DEFAULT_NAMES))
        }
        Bench::Statmix => Box::new(statmix::Statmix::new(crate::params::DEFAULT_NAMES)),
    }
}

/// Setup's check that every task's name (NUL-terminated) is really
/// missing (`EEXIST` if one is not).
pub(crate) fn all_missing(vfs: &Vfs, paths: &[alloc::vec::Vec<u8>]) -> KResult<()> {
    if paths.iter().all(|p| is_enoent(vfs.stat(bare(p)))) {
        Ok(())
    } else {
        Err(fs::Errno::EEXIST)
    }
}

/// Is this the answer of a stat of a missing name?
pub(crate) fn is_enoent<T>(r: KResult<T>) -> bool {
    matches!(r, Err(fs::Errno::ENOENT))
}

/// `path` without its terminating NUL (a path the way the VFS's own calls
/// take it).
pub const fn bare(cpath: &[u8]) -> &[u8] {
    match cpath.split_last() {
        Some((0, rest)) => rest,
        _ => cpath,
    }
}

/// What a stat found, from either frontend.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Found {
    pub ino: u64,
    /// `None`: a `st_mode` of no type this VFS has (a wrong answer).
    pub kind: Option<FileType>,
}

/// How a workload's tasks reach the VFS: the VFS, the frontend, and the
/// system call cost the stat frontend pays.
pub struct Sys<'a> {
    pub vfs: &'a Vfs,
    pub frontend: Frontend,
    syscall: &'a (dyn Fn() + Sync),
}

/// Pays nothing (the walk frontend, and callers with no executor).
fn no_syscall() {}

impl<'a> Sys<'a> {
    /// Stats through `frontend`, paying `syscall` before each stat of the
    /// stat frontend.
    pub fn new(vfs: &'a Vfs, frontend: Frontend, syscall: &'a (dyn Fn() + Sync)) -> Self {
        Sys {
            vfs,
            frontend,
            syscall,
        }
    }

    /// Stats through the walk alone (the line census, the steal model).
    pub fn walk(vfs: &'a Vfs) -> Self {
        Sys::new(vfs, Frontend::Walk, &no_syscall)
    }

    /// `stat(cpath)`, `cpath` NUL-terminated, through the frontend.
    #[inline]
    pub fn stat(&self, cpath: &[u8]) -> KResult<Found> {
        match self.frontend {
            Frontend::Walk => self.vfs.stat(bare(cpath)).map(|st| Found {
                ino: st.ino,
                kind: Some(st.kind),
            }),
            Frontend::Stat => {
                (self.syscall)();
                // The caller's `struct stat`, on its stack as glibc's is.
                let mut buf = [0u8; STAT_SIZE];
                sys_newfstatat(
                    self.vfs,
                    AT_FDCWD,
                    UserPtr::new(cpath),
                    &mut UserPtrMut::new(&mut buf),
                    0,
                )?;
                let st = UserStat::from_bytes(&buf);
                Ok(Found {
                    ino: st.ino,
                    kind: st.kind(),
                })
            }
        }
    }
}

/// A workload bound to its VFS: the driver's [`Body`].
pub struct VfsBody<'a, W: Workload> {
    pub workload: &'a W,
    pub sys: Sys<'a>,
}

impl<W: Workload> Body for VfsBody<'_, W> {
    #[inline]
    fn run_once(&self, task: usize) -> bool {
        self.workload.run_once(&self.sys, task)
    }
    fn quiescent(&self) {
        fs::platform::get().rcu_quiescent_state();
    }
    fn expected(&self, task: usize) -> &'static str {
        self.workload.expected(task)
    }
}
