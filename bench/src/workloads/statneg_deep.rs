//! `statneg-deep`: every task stats `/a/b/c/d/missing`: four directories
//! walked (shared, read-only) before the miss.

use fs::vfs::Vfs;
use fs::KResult;

use super::{bare, is_enoent, Sys, Workload};

/// The directories created by setup, in order.
pub const DIRS: [&[u8]; 4] = [b"/a", b"/a/b", b"/a/b/c", b"/a/b/c/d"];
/// The missing name every task stats.
pub const PATH: &[u8] = bare(CPATH);
/// The same, NUL-terminated as a caller passes it.
pub const CPATH: &[u8] = b"/a/b/c/d/missing\0";

#[derive(Default)]
pub struct StatnegDeep;

impl Workload for StatnegDeep {
    fn description(&self) -> &'static str {
        "non-existent file stat, 4 directories deep"
    }
    fn setup(&mut self, vfs: &Vfs, _tasks: usize) -> KResult<()> {
        for d in DIRS {
            vfs.mkdir(d, 0o755)?;
        }
        if !is_enoent(vfs.stat(PATH)) {
            return Err(fs::Errno::EEXIST);
        }
        Ok(())
    }
    #[inline]
    fn run_once(&self, sys: &Sys<'_>, _task: usize) -> bool {
        is_enoent(sys.stat(CPATH))
    }
    fn expected(&self, _task: usize) -> &'static str {
        "ENOENT from stat(/a/b/c/d/missing)"
    }
}
