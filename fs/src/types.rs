//! The types a filesystem and the path API share: the file type, what
//! `stat` returns, a `readdir` entry, `open` flags (Linux's values), as
//! Linux's uapi headers (`stat.h`, `fcntl.h`) give them to both sides.
//!
//! A leaf: plain data, depends on nothing of the crate. The VFS core
//! (`inode`, `dcache`, `namei`, `mount`) and the filesystem types take
//! them from here; `vfs` re-exports the ones its API returns.

use alloc::vec::Vec;

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
    /// Last modification, ns since the Unix epoch (0 where not kept).
    pub mtime_ns: u64,
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
