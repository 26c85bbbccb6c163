//! `statneg`: every task stats the same missing name, `/nonexistent`, in the
//! tmpfs root — the seed's will-it-scale testcase, where Linux allocates a
//! dentry per miss and every CPU fights for the root's lock.

use fs::vfs::Vfs;
use fs::KResult;

use super::{bare, is_enoent, Sys, Workload};

/// The missing name every task stats, NUL-terminated as a caller passes it.
pub const CPATH: &[u8] = b"/nonexistent\0";
/// The missing name every task stats.
pub const PATH: &[u8] = bare(CPATH);

#[derive(Default)]
pub struct Statneg;

impl Workload for Statneg {
    fn description(&self) -> &'static str {
        "non-existent file stat"
    }
    fn setup(&mut self, vfs: &Vfs, _tasks: usize) -> KResult<()> {
        // The name must really be missing.
        match vfs.stat(PATH) {
            Err(fs::Errno::ENOENT) => Ok(()),
            Err(e) => Err(e),
            Ok(_) => Err(fs::Errno::EEXIST),
        }
    }
    #[inline]
    fn run_once(&self, sys: &Sys<'_>, _task: usize) -> bool {
        is_enoent(sys.stat(CPATH))
    }
    fn expected(&self, _task: usize) -> &'static str {
        "ENOENT from stat(/nonexistent)"
    }
}
