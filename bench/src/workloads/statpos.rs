//! `statpos`: every task stats the same existing regular file, the positive
//! counterpart of statneg (the cost of a hit).

use fs::vfs::{FileType, Vfs};
use fs::KResult;

use super::{bare, Sys, Workload};

/// The file setup creates and every task stats.
pub const PATH: &[u8] = bare(CPATH);
/// The same, NUL-terminated as a caller passes it.
pub const CPATH: &[u8] = b"/existing\0";

#[derive(Default)]
pub struct Statpos {
    ino: u64,
}

impl Workload for Statpos {
    fn description(&self) -> &'static str {
        "existing file stat"
    }
    fn setup(&mut self, vfs: &Vfs, _tasks: usize) -> KResult<()> {
        vfs.write_file(PATH, b"statpos\n")?;
        let st = vfs.stat(PATH)?;
        if st.kind != FileType::File {
            return Err(fs::Errno::EISDIR);
        }
        self.ino = st.ino;
        Ok(())
    }
    #[inline]
    fn run_once(&self, sys: &Sys<'_>, _task: usize) -> bool {
        matches!(sys.stat(CPATH), Ok(st) if st.ino == self.ino && st.kind == Some(FileType::File))
    }
    fn expected(&self, _task: usize) -> &'static str {
        "the file's stat from stat(/existing)"
    }
}
