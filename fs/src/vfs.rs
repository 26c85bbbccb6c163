//! The VFS façade: path-based system calls over a mount tree.
//!
//! This is the API the rest of the project uses (vfsh, the benchmarks, the
//! kernel): every call takes an absolute path as bytes, resolves it with the
//! path walk in [`crate::namei`], and returns a Linux errno on failure.
//!
//! Touches: the dcache and mounts through `namei`; allocates only where the
//! operation creates something (or the ENOENT design says so).

use alloc::vec::Vec;

use crate::errno::KResult;

/// File type as `stat` reports it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FileType {
    File,
    Dir,
    Symlink,
}

/// What `stat`/`lstat` return.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Stat {
    pub ino: u64,
    pub kind: FileType,
    pub size: u64,
    /// Permission bits (0o7777).
    pub mode: u32,
    pub nlink: u32,
    pub uid: u32,
    pub gid: u32,
}

/// One `readdir` entry (never `.` or `..`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DirEntry {
    pub name: Vec<u8>,
    pub ino: u64,
    pub kind: FileType,
}

/// `open` flags (Linux values).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct OpenFlags(pub u32);

impl OpenFlags {
    pub const RDONLY: OpenFlags = OpenFlags(0);
    pub const WRONLY: OpenFlags = OpenFlags(0o1);
    pub const RDWR: OpenFlags = OpenFlags(0o2);
    pub const CREAT: OpenFlags = OpenFlags(0o100);
    pub const EXCL: OpenFlags = OpenFlags(0o200);
    pub const TRUNC: OpenFlags = OpenFlags(0o1000);
    pub const APPEND: OpenFlags = OpenFlags(0o2000);
    pub const DIRECTORY: OpenFlags = OpenFlags(0o200000);
    pub const NOFOLLOW: OpenFlags = OpenFlags(0o400000);

    /// Are all bits of `o` set?
    pub fn contains(self, o: OpenFlags) -> bool {
        self.0 & o.0 == o.0
    }
}

impl core::ops::BitOr for OpenFlags {
    type Output = OpenFlags;
    fn bitor(self, o: OpenFlags) -> OpenFlags {
        OpenFlags(self.0 | o.0)
    }
}

/// A mount namespace: the root mount and everything mounted below it.
/// Cheap to share between threads (`&Vfs` is all an operation needs).
pub struct Vfs {
    _private: (),
}

/// An open file. Reads and writes go through the inode it was opened on,
/// whatever happens to its name afterwards.
pub struct File {
    _private: (),
}

impl Vfs {
    /// A fresh namespace with a tmpfs at `/`, mounted with `opts`
    /// (comma-separated, e.g. `"enoent=noalloc"`; empty for defaults).
    pub fn new_tmpfs(opts: &str) -> KResult<Vfs> {
        let _ = opts;
        todo!("lead is implementing")
    }
    /// `stat(2)`: follows a final symlink.
    pub fn stat(&self, path: &[u8]) -> KResult<Stat> {
        let _ = path;
        todo!()
    }
    /// `lstat(2)`: does not follow a final symlink.
    pub fn lstat(&self, path: &[u8]) -> KResult<Stat> {
        let _ = path;
        todo!()
    }
    /// `open(2)` with Linux flag semantics (O_CREAT, O_EXCL, O_TRUNC, O_DIRECTORY ...).
    pub fn open(&self, path: &[u8], flags: OpenFlags, mode: u32) -> KResult<File> {
        let _ = (path, flags, mode);
        todo!()
    }
    /// `mkdir(2)`.
    pub fn mkdir(&self, path: &[u8], mode: u32) -> KResult<()> {
        let _ = (path, mode);
        todo!()
    }
    /// `unlink(2)`.
    pub fn unlink(&self, path: &[u8]) -> KResult<()> {
        let _ = path;
        todo!()
    }
    /// `rmdir(2)`.
    pub fn rmdir(&self, path: &[u8]) -> KResult<()> {
        let _ = path;
        todo!()
    }
    /// `rename(2)`.
    pub fn rename(&self, old: &[u8], new: &[u8]) -> KResult<()> {
        let _ = (old, new);
        todo!()
    }
    /// `symlink(2)`: create `path` pointing at `target`.
    pub fn symlink(&self, target: &[u8], path: &[u8]) -> KResult<()> {
        let _ = (target, path);
        todo!()
    }
    /// `readlink(2)`.
    pub fn readlink(&self, path: &[u8]) -> KResult<Vec<u8>> {
        let _ = path;
        todo!()
    }
    /// All entries of a directory except `.` and `..`, in no particular order.
    pub fn readdir(&self, path: &[u8]) -> KResult<Vec<DirEntry>> {
        let _ = path;
        todo!()
    }
    /// Mount a new filesystem of type `fstype` ("tmpfs") on directory `path`.
    pub fn mount(&self, fstype: &str, path: &[u8], opts: &str) -> KResult<()> {
        let _ = (fstype, path, opts);
        todo!()
    }
    /// Change the options of the mount at `path` (e.g. `enoent=negative`).
    pub fn remount(&self, path: &[u8], opts: &str) -> KResult<()> {
        let _ = (path, opts);
        todo!()
    }
    /// Convenience: open with O_WRONLY|O_CREAT|O_TRUNC and write `data`.
    pub fn write_file(&self, path: &[u8], data: &[u8]) -> KResult<()> {
        let f = self.open(path, OpenFlags::WRONLY | OpenFlags::CREAT | OpenFlags::TRUNC, 0o644)?;
        f.write(data)?;
        Ok(())
    }
    /// Convenience: open read-only and read everything.
    pub fn read_file(&self, path: &[u8]) -> KResult<Vec<u8>> {
        let f = self.open(path, OpenFlags::RDONLY, 0)?;
        let mut out = Vec::new();
        let mut buf = [0u8; 4096];
        loop {
            let n = f.read(&mut buf)?;
            if n == 0 {
                return Ok(out);
            }
            out.extend_from_slice(&buf[..n]);
        }
    }
}

impl File {
    /// Read from the current position; 0 at end of file. EISDIR on a directory.
    pub fn read(&self, buf: &mut [u8]) -> KResult<usize> {
        let _ = buf;
        todo!()
    }
    /// Write at the current position (or the end with O_APPEND). EBADF if not
    /// opened for writing.
    pub fn write(&self, data: &[u8]) -> KResult<usize> {
        let _ = data;
        todo!()
    }
}
