//! `churn`: odd-numbered tasks create and unlink their own file in
//! `/churn` (one create+unlink is one operation); even-numbered tasks stat
//! the missing `/churn/nonexistent`. The creators keep changing the
//! directory, so lockless lookups in it see sequence changes and retry:
//! this measures the price of those retries. With one task there is no
//! creator and it is plain statneg one level down.

use alloc::vec::Vec;

use fs::vfs::{OpenFlags, Vfs};
use fs::KResult;

use super::{bare, is_enoent, Sys, Workload};

/// The directory both halves work in.
pub const DIR: &[u8] = b"/churn";
/// The missing name the readers stat.
pub const MISSING: &[u8] = bare(CMISSING);
/// The same, NUL-terminated as a caller passes it.
pub const CMISSING: &[u8] = b"/churn/nonexistent\0";

#[derive(Default)]
pub struct Churn {
    /// One file path per task (used by the creators only).
    paths: Vec<Vec<u8>>,
}

impl Churn {
    /// Does task `task` create and unlink (true) or stat (false)?
    pub fn is_creator(task: usize) -> bool {
        task % 2 == 1
    }
}

impl Workload for Churn {
    fn description(&self) -> &'static str {
        "create+unlink beside non-existent file stat, one directory"
    }
    fn setup(&mut self, vfs: &Vfs, tasks: usize) -> KResult<()> {
        vfs.mkdir(DIR, 0o755)?;
        self.paths = (0..tasks)
            .map(|t| alloc::format!("/churn/f{t}").into_bytes())
            .collect();
        if !is_enoent(vfs.stat(MISSING)) {
            return Err(fs::Errno::EEXIST);
        }
        Ok(())
    }
    #[inline]
    fn run_once(&self, sys: &Sys<'_>, task: usize) -> bool {
        let vfs = sys.vfs;
        if Self::is_creator(task) {
            let p = &self.paths[task];
            let created = vfs
                .open(
                    p,
                    OpenFlags::WRONLY | OpenFlags::CREAT | OpenFlags::EXCL,
                    0o644,
                )
                .is_ok();
            // Unlink even if the create failed, so one failure does not
            // turn every later iteration into EEXIST.
            let unlinked = vfs.unlink(p).is_ok();
            created && unlinked
        } else {
            is_enoent(sys.stat(CMISSING))
        }
    }
    fn expected(&self, task: usize) -> &'static str {
        if Self::is_creator(task) {
            "create (O_CREAT|O_EXCL) then unlink of /churn/fTASK to succeed"
        } else {
            "ENOENT from stat(/churn/nonexistent)"
        }
    }
}
