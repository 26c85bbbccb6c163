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
//! Touches: the [`Vfs`] it is given, nothing else.

use fs::vfs::Vfs;
use fs::KResult;

use crate::driver::Body;

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
    fn run_once(&self, vfs: &Vfs, task: usize) -> bool;
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

/// Setup's check that every task's name is really missing (`EEXIST` if
/// one is not).
pub(crate) fn all_missing(vfs: &Vfs, paths: &[alloc::vec::Vec<u8>]) -> KResult<()> {
    if paths.iter().all(|p| is_enoent(vfs.stat(p))) {
        Ok(())
    } else {
        Err(fs::Errno::EEXIST)
    }
}

/// Is this the answer of a stat of a missing name?
pub(crate) fn is_enoent<T>(r: KResult<T>) -> bool {
    matches!(r, Err(fs::Errno::ENOENT))
}

/// A workload bound to its VFS: the driver's [`Body`].
pub struct VfsBody<'a, W: Workload> {
    pub workload: &'a W,
    pub vfs: &'a Vfs,
}

impl<W: Workload> Body for VfsBody<'_, W> {
    #[inline]
    fn run_once(&self, task: usize) -> bool {
        self.workload.run_once(self.vfs, task)
    }
    fn quiescent(&self) {
        fs::platform::get().rcu_quiescent_state();
    }
    fn expected(&self, task: usize) -> &'static str {
        self.workload.expected(task)
    }
}
