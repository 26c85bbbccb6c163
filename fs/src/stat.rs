//! `stat` the way a system call runs it (Linux `fs/stat.c`): the entry
//! the benchmarks' `frontend=stat` takes, so a lookup design is measured
//! with the rest of Linux's `newfstatat` around its walk.
//!
//! ```text
//! sys_newfstatat(dfd, filename, statbuf, flag)
//!   └ vfs_fstatat ── getname (names_cache object, strncpy_from_user)
//!        │         ├ vfs_statx ── flags checked
//!        │         │      ├ filename_lookup (path_init … terminate_walk)
//!        │         │      └ vfs_getattr on a hit: the kstat
//!        │         └ putname
//!   └ cp_new_stat: the kstat as x86-64 `struct stat`, copy_to_user
//! ```
//!
//! [`crate::vfs::Vfs::stat`] is the walk alone (`frontend=walk`): a path
//! already in kernel memory, an attribute struct returned by value. Once a
//! design keeps the walk in RCU mode, the rest of the call is most of its
//! cost on Linux (docs/linux-reference.md), so a comparison of designs
//! through the walk alone overstates every difference.
//!
//! What this does not pay, because a library cannot: the system call
//! instruction itself, its entry and exit work and the speculation
//! mitigations around them, and audit. The benchmarks pay those as a
//! measured cost beside this call (one real cheap system call per
//! operation on the host; see docs/bench/frontend.md).
//!
//! Differences from Linux, on purpose: on a hit Linux's `complete_walk`
//! takes a reference on the target (and `path_put` drops it) before
//! `vfs_getattr` reads the inode; here, as in [`crate::vfs::Vfs::stat`],
//! tmpfs attributes are read inside the RCU-walk and validated by `d_seq`
//! (difference (2) in [`crate::namei`]): two stores to the target's line
//! per hit that Linux makes and this does not. A miss, the statneg case,
//! takes the same steps as Linux's. A filesystem with a `getattr` step
//! (cifs) gets the reference, as in Linux. Only `AT_FDCWD` or an absolute
//! path: there is no file table, so any other `dfd` with a relative path
//! is `EBADF`.
//!
//! Touches: the walk (through [`crate::namei::filename_lookup`]), this
//! CPU's `names_cache` slot, the caller's buffers.

use alloc::sync::Arc;

use crate::errno::{Errno, KResult};
use crate::inode::{Inode, SuperBlock};
use crate::namei::getname::{getname, putname, Filename};
use crate::namei::{filename_lookup, LookupFlags, WalkErr};
use crate::types::FileType;
use crate::uaccess::{copy_to_user, UserPtr, UserPtrMut};
use crate::vfs::Vfs;

/// `dfd` meaning the current directory.
pub const AT_FDCWD: i32 = -100;
/// Do not follow a final symlink (`lstat`).
pub const AT_SYMLINK_NOFOLLOW: u32 = 0x100;
/// Do not trigger an automount (always set by `vfs_fstatat`).
pub const AT_NO_AUTOMOUNT: u32 = 0x800;
/// An empty path means `dfd` itself (accepted; with no file table an empty
/// path is still `ENOENT` here).
pub const AT_EMPTY_PATH: u32 = 0x1000;

/// `STATX_BASIC_STATS`: what `stat` asks for.
pub const STATX_BASIC_STATS: u32 = 0x7ff;

/// `S_IFMT` and the type bits `st_mode` carries.
pub const S_IFMT: u32 = 0o170000;
pub const S_IFREG: u32 = 0o100000;
pub const S_IFDIR: u32 = 0o040000;
pub const S_IFLNK: u32 = 0o120000;

/// Bytes of x86-64's `struct stat`.
pub const STAT_SIZE: usize = 144;

/// The attributes `vfs_getattr` gathers (Linux `struct kstat`, the fields
/// a tmpfs fills).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Kstat {
    /// Which `STATX_*` fields are filled.
    pub result_mask: u32,
    /// Type and permission bits.
    pub mode: u32,
    pub nlink: u32,
    pub blksize: u32,
    pub ino: u64,
    pub dev: u64,
    pub rdev: u64,
    pub uid: u32,
    pub gid: u32,
    pub size: u64,
    pub atime_ns: u64,
    pub mtime_ns: u64,
    pub ctime_ns: u64,
    /// 512-byte blocks.
    pub blocks: u64,
}

/// Linux `generic_fillattr`: the inode's attributes as a kstat.
fn generic_fillattr(inode: &Inode, dev: u64) -> Kstat {
    let st = inode.stat();
    let ftype = match st.kind {
        FileType::File => S_IFREG,
        FileType::Dir => S_IFDIR,
        FileType::Symlink => S_IFLNK,
    };
    Kstat {
        result_mask: STATX_BASIC_STATS,
        mode: ftype | (st.mode & 0o7777),
        nlink: st.nlink,
        blksize: 4096,
        ino: st.ino,
        dev,
        rdev: 0,
        uid: st.uid,
        gid: st.gid,
        size: st.size,
        atime_ns: st.mtime_ns,
        mtime_ns: st.mtime_ns,
        ctime_ns: st.mtime_ns,
        blocks: st.size.div_ceil(512),
    }
}

/// A superblock's device number for `st_dev`: its address, stable while
/// mounted (no device numbers are handed out here).
fn sb_dev(sb: &SuperBlock) -> u64 {
    sb as *const SuperBlock as usize as u64
}

/// What a resolved walk hands `vfs_getattr`: the kstat read under the walk,
/// or (a filesystem with a `getattr` step) the inode to ask first.
enum Getattr {
    Filled(Kstat),
    Ask(Arc<SuperBlock>, Arc<Inode>),
}

/// Linux `vfs_statx`: look `name` up and gather its attributes.
fn vfs_statx(vfs: &Vfs, dfd: i32, name: &Filename, flags: u32) -> KResult<Kstat> {
    if flags & !(AT_SYMLINK_NOFOLLOW | AT_NO_AUTOMOUNT | AT_EMPTY_PATH) != 0 {
        return Err(Errno::EINVAL);
    }
    let path = name.as_bytes();
    if dfd != AT_FDCWD && path.first() != Some(&b'/') {
        return Err(Errno::EBADF);
    }
    let lookup = LookupFlags {
        follow: flags & AT_SYMLINK_NOFOLLOW == 0,
        directory: false,
    };
    // filename_lookup: set_nameidata and path_init, the RCU-walk (and the
    // ref-walk on a restart), terminate_walk as the walk state drops. On a
    // hit, vfs_getattr reads the attributes before the walk ends (see the
    // module docs).
    let got = filename_lookup(vfs.mnt_ns(), path, lookup, &mut |r| {
        let sb = &r.dentry().sb;
        match r.inode() {
            Some(i) if sb.ops.has_getattr() => Ok(Getattr::Ask(sb.clone(), i.to_arc())),
            Some(i) => Ok(Getattr::Filled(generic_fillattr(&i, sb_dev(sb)))),
            None => Err(WalkErr::Errno(Errno::ENOENT)),
        }
    })?;
    match got {
        Getattr::Filled(k) => Ok(k),
        Getattr::Ask(sb, inode) => {
            sb.ops.getattr(&sb, &inode)?;
            Ok(generic_fillattr(&inode, sb_dev(&sb)))
        }
    }
}

/// Linux `vfs_fstatat`: copy the name in, stat it, give the name back.
pub fn vfs_fstatat(vfs: &Vfs, dfd: i32, filename: UserPtr<'_>, flags: u32) -> KResult<Kstat> {
    let name = getname(filename)?;
    let r = vfs_statx(vfs, dfd, &name, flags | AT_NO_AUTOMOUNT);
    putname(name);
    r
}

/// Linux `cp_new_stat`: the kstat as x86-64's `struct stat` (padding
/// zeroed), copied to the caller.
pub fn cp_new_stat(k: &Kstat, statbuf: &mut UserPtrMut<'_>) -> KResult<()> {
    let mut tmp = [0u8; STAT_SIZE];
    let mut put = |at: usize, bytes: &[u8]| tmp[at..at + bytes.len()].copy_from_slice(bytes);
    let ns = 1_000_000_000;
    put(0, &k.dev.to_ne_bytes());
    put(8, &k.ino.to_ne_bytes());
    put(16, &u64::from(k.nlink).to_ne_bytes());
    put(24, &k.mode.to_ne_bytes());
    put(28, &k.uid.to_ne_bytes());
    put(32, &k.gid.to_ne_bytes());
    put(40, &k.rdev.to_ne_bytes());
    put(48, &k.size.to_ne_bytes());
    put(56, &u64::from(k.blksize).to_ne_bytes());
    put(64, &k.blocks.to_ne_bytes());
    for (at, t) in [(72, k.atime_ns), (88, k.mtime_ns), (104, k.ctime_ns)] {
        put(at, &(t / ns).to_ne_bytes());
        put(at + 8, &(t % ns).to_ne_bytes());
    }
    copy_to_user(statbuf, &tmp)
}

/// Linux `newfstatat(2)` past the system call instruction: stat the
/// NUL-terminated path at `filename` and write `struct stat` to `statbuf`.
pub fn sys_newfstatat(
    vfs: &Vfs,
    dfd: i32,
    filename: UserPtr<'_>,
    statbuf: &mut UserPtrMut<'_>,
    flag: u32,
) -> KResult<()> {
    let k = vfs_fstatat(vfs, dfd, filename, flag)?;
    cp_new_stat(&k, statbuf)
}

/// The fields of a `struct stat` a caller reads back (x86-64 layout).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct UserStat {
    pub dev: u64,
    pub ino: u64,
    pub nlink: u64,
    pub mode: u32,
    pub size: u64,
}

impl UserStat {
    /// Read a `struct stat` as `cp_new_stat` wrote it.
    pub fn from_bytes(b: &[u8; STAT_SIZE]) -> UserStat {
        let u64_at = |at: usize| {
            let mut w = [0u8; 8];
            w.copy_from_slice(&b[at..at + 8]);
            u64::from_ne_bytes(w)
        };
        let mut m = [0u8; 4];
        m.copy_from_slice(&b[24..28]);
        UserStat {
            dev: u64_at(0),
            ino: u64_at(8),
            nlink: u64_at(16),
            mode: u32::from_ne_bytes(m),
            size: u64_at(48),
        }
    }

    /// The file type `st_mode` names, if a known one.
    pub fn kind(&self) -> Option<FileType> {
        match self.mode & S_IFMT {
            S_IFREG => Some(FileType::File),
            S_IFDIR => Some(FileType::Dir),
            S_IFLNK => Some(FileType::Symlink),
            _ => None,
        }
    }
}
