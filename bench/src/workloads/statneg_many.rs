//! `statneg-many names=N`: each task cycles over N distinct missing names of
//! its own (`/many/t<task>-<i>`), all in one directory, so that a design's
//! cache-size policy shows: an unbounded negative cache holds every name
//! after one round, a bounded one (negbound) keeps only its bound and pays
//! an allocation for the rest, transient allocates for each, noalloc none.
//!
//! The path is written into a stack buffer each operation (no allocation;
//! the same small cost under every design). Each task's cursor is its own
//! cache line. Touches: the [`Vfs`] it is given.

use alloc::vec::Vec;
use core::sync::atomic::{AtomicU32, Ordering};

use fs::vfs::Vfs;
use fs::KResult;

use super::{is_enoent, Sys, Workload};

/// The directory holding every name.
pub const DIR: &[u8] = b"/many";

/// Bytes of a name buffer: the directory, the tag, two 20-digit numbers,
/// the dash and the NUL fit.
pub(crate) const PATH_BUF: usize = 64;

/// One task's position in its cycle, alone on its cache line.
#[repr(align(128))]
#[derive(Default)]
pub(crate) struct Cursor(pub(crate) AtomicU32);

pub struct StatnegMany {
    names: u32,
    cursors: Vec<Cursor>,
}

impl StatnegMany {
    /// A workload cycling over `names` missing names per task.
    pub fn new(names: u32) -> Self {
        StatnegMany {
            names: names.max(1),
            cursors: Vec::new(),
        }
    }
}

/// `DIR/<tag><a>-<b>` in `buf`, NUL-terminated; returns its length
/// without the NUL.
pub(crate) fn path_in(buf: &mut [u8; PATH_BUF], dir: &[u8], tag: u8, a: u64, b: u64) -> usize {
    let mut n = 0;
    let mut put = |s: &[u8], n: &mut usize| {
        buf[*n..*n + s.len()].copy_from_slice(s);
        *n += s.len();
    };
    put(dir, &mut n);
    put(&[b'/', tag], &mut n);
    for (i, v) in [a, b].into_iter().enumerate() {
        if i == 1 {
            put(b"-", &mut n);
        }
        let mut digits = [0u8; 20];
        let mut k = digits.len();
        let mut v = v;
        loop {
            k -= 1;
            digits[k] = b'0' + (v % 10) as u8;
            v /= 10;
            if v == 0 {
                break;
            }
        }
        put(&digits[k..], &mut n);
    }
    buf[n] = 0;
    n
}

/// Advance task `task`'s cursor modulo `len`; returns the old position.
/// Only the task itself writes its cursor.
pub(crate) fn step(cursors: &[Cursor], task: usize, len: u32) -> u32 {
    let c = &cursors[task].0;
    let i = c.load(Ordering::Relaxed);
    c.store(if i + 1 >= len { 0 } else { i + 1 }, Ordering::Relaxed);
    i
}

impl Workload for StatnegMany {
    fn description(&self) -> &'static str {
        "non-existent file stat, each task cycling over names= distinct names in one directory"
    }
    fn setup(&mut self, vfs: &Vfs, tasks: usize) -> KResult<()> {
        vfs.mkdir(DIR, 0o755)?;
        self.cursors = (0..tasks).map(|_| Cursor::default()).collect();
        let mut buf = [0u8; PATH_BUF];
        for t in 0..tasks {
            let n = path_in(&mut buf, DIR, b't', t as u64, 0);
            if !is_enoent(vfs.stat(&buf[..n])) {
                return Err(fs::Errno::EEXIST);
            }
        }
        Ok(())
    }
    #[inline]
    fn run_once(&self, sys: &Sys<'_>, task: usize) -> bool {
        let i = step(&self.cursors, task, self.names);
        let mut buf = [0u8; PATH_BUF];
        let n = path_in(&mut buf, DIR, b't', task as u64, i as u64);
        is_enoent(sys.stat(&buf[..=n]))
    }
    fn expected(&self, _task: usize) -> &'static str {
        "ENOENT from stat(/many/tTASK-I)"
    }
}
