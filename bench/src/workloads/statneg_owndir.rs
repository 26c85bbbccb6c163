//! `statneg-owndir`: each task stats a missing name in a directory of its
//! own (`/own-<task>/missing`), so no dentry, inode or directory lock is
//! shared between tasks: only the root (walked read-only), the superblock
//! and the global tables. It is the ceiling a design's `statneg` could
//! reach if nothing about the name were shared, and it shows what the
//! rest of the lookup path (allocator, RCU, the superblock) costs across
//! CPUs.

use alloc::vec::Vec;

use fs::vfs::Vfs;
use fs::KResult;

use super::{all_missing, is_enoent, Sys, Workload};

#[derive(Default)]
pub struct StatnegOwndir {
    /// One path per task (NUL-terminated), built in setup so the loop
    /// does not allocate.
    paths: Vec<Vec<u8>>,
}

impl StatnegOwndir {
    /// Task `task`'s directory.
    pub fn dir(task: usize) -> Vec<u8> {
        alloc::format!("/own-{task}").into_bytes()
    }
    /// The missing name task `task` stats, NUL-terminated.
    pub fn path(task: usize) -> Vec<u8> {
        alloc::format!("/own-{task}/missing\0").into_bytes()
    }
}

impl Workload for StatnegOwndir {
    fn description(&self) -> &'static str {
        "non-existent file stat, one directory per task"
    }
    fn setup(&mut self, vfs: &Vfs, tasks: usize) -> KResult<()> {
        for t in 0..tasks {
            vfs.mkdir(&Self::dir(t), 0o755)?;
        }
        self.paths = (0..tasks).map(Self::path).collect();
        all_missing(vfs, &self.paths)
    }
    #[inline]
    fn run_once(&self, sys: &Sys<'_>, task: usize) -> bool {
        is_enoent(sys.stat(&self.paths[task]))
    }
    fn expected(&self, _task: usize) -> &'static str {
        "ENOENT from stat(/own-TASK/missing)"
    }
}
