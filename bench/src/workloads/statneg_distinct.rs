//! `statneg-distinct`: each task stats its own missing name in the root
//! (`/nonexistent-<task>`), so only the parent directory is shared.

use alloc::vec::Vec;

use fs::vfs::Vfs;
use fs::KResult;

use super::{all_missing, is_enoent, Sys, Workload};

#[derive(Default)]
pub struct StatnegDistinct {
    /// One path per task (NUL-terminated), built in setup so the loop
    /// does not allocate.
    paths: Vec<Vec<u8>>,
}

impl StatnegDistinct {
    /// Task `task`'s missing name, NUL-terminated.
    pub fn path(task: usize) -> Vec<u8> {
        alloc::format!("/nonexistent-{task}\0").into_bytes()
    }
}

impl Workload for StatnegDistinct {
    fn description(&self) -> &'static str {
        "non-existent file stat, one name per task"
    }
    fn setup(&mut self, vfs: &Vfs, tasks: usize) -> KResult<()> {
        self.paths = (0..tasks).map(Self::path).collect();
        all_missing(vfs, &self.paths)
    }
    #[inline]
    fn run_once(&self, sys: &Sys<'_>, task: usize) -> bool {
        is_enoent(sys.stat(&self.paths[task]))
    }
    fn expected(&self, _task: usize) -> &'static str {
        "ENOENT from stat(/nonexistent-TASK)"
    }
}
