//! `statmix names=N`: hits and misses in one directory. Setup creates N files
//! `/mix/f0-<i>`; each task cycles over 2N operations, alternating a stat of
//! an existing file (a hit) and of a missing name `/mix/m0-<i>` (a miss; the
//! N missing names are shared by all tasks). A design that caches misses
//! grows the directory's dcache to 2N entries; one that bounds it keeps
//! hits cached and pays for the misses past its bound. Touches: the
//! [`Vfs`] it is given.

use alloc::vec::Vec;

use fs::vfs::{FileType, Vfs};
use fs::KResult;

use super::statneg_many::{path_in, step, Cursor, PATH_BUF};
use super::{is_enoent, Sys, Workload};

/// The directory holding every name.
pub const DIR: &[u8] = b"/mix";

pub struct Statmix {
    names: u32,
    cursors: Vec<Cursor>,
}

impl Statmix {
    /// A workload over `names` existing and `names` missing names.
    pub fn new(names: u32) -> Self {
        Statmix {
            names: names.max(1),
            cursors: Vec::new(),
        }
    }
}

impl Workload for Statmix {
    fn description(&self) -> &'static str {
        "stat of names= existing files and names= missing names, alternating, in one directory"
    }
    fn setup(&mut self, vfs: &Vfs, tasks: usize) -> KResult<()> {
        vfs.mkdir(DIR, 0o755)?;
        let mut buf = [0u8; PATH_BUF];
        for i in 0..self.names as u64 {
            let n = path_in(&mut buf, DIR, b'f', 0, i);
            vfs.write_file(&buf[..n], b"")?;
        }
        self.cursors = (0..tasks).map(|_| Cursor::default()).collect();
        Ok(())
    }
    #[inline]
    fn run_once(&self, sys: &Sys<'_>, task: usize) -> bool {
        let i = step(&self.cursors, task, 2 * self.names);
        let mut buf = [0u8; PATH_BUF];
        if i.is_multiple_of(2) {
            let n = path_in(&mut buf, DIR, b'f', 0, (i / 2) as u64);
            matches!(sys.stat(&buf[..=n]), Ok(st) if st.kind == Some(FileType::File))
        } else {
            let n = path_in(&mut buf, DIR, b'm', 0, (i / 2) as u64);
            is_enoent(sys.stat(&buf[..=n]))
        }
    }
    fn expected(&self, _task: usize) -> &'static str {
        "a file from stat(/mix/f0-I), ENOENT from stat(/mix/m0-I)"
    }
}
