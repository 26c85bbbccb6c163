//! Extended attributes: the `*xattr(2)` calls with Linux's semantics.
//!
//! The VFS half follows Linux `fs/xattr.c`, in its order:
//! 1. the arguments, before any path is walked: flags other than
//!    `XATTR_CREATE`/`XATTR_REPLACE` are EINVAL, an empty name or one over
//!    [`XATTR_NAME_MAX`] is ERANGE, a value over [`XATTR_SIZE_MAX`] is E2BIG;
//! 2. the path (the `l` forms do not follow a final symlink);
//! 3. `xattr_permission`: in `user.`, only regular files and directories
//!    have attributes (EPERM to change one elsewhere, ENODATA to read);
//! 4. the filesystem's handlers ([`FsOps::listxattr`], [`FsOps::getxattr`],
//!    [`FsOps::setxattr`]), which resolve the namespace: a prefix no handler
//!    knows is EOPNOTSUPP, a bare prefix (`user.`) EINVAL;
//! 5. the buffer: a size-0 call returns the size needed, a short buffer is
//!    ERANGE (for a list at [`XATTR_LIST_MAX`] or more, E2BIG).
//!
//! [`Vfs::xattr_names`] and [`Vfs::xattr_value`] are the callers' side:
//! size call, fetch, and on ERANGE (the list grew in between) ask again,
//! as getfattr and coreutils do.
//!
//! tmpfs's store and handlers, and the flag and prefix words every
//! filesystem's handlers share, are [`crate::simple_xattr`] (below the
//! core, which keeps the store in each inode); they are re-exported here.
//! Linux promises no order of names (the host's 6.18 tmpfs lists them in
//! neither byte nor insertion order), so vfsh sorts.
//!
//! Touches: the inode `path` names (its filesystem's handlers).

use alloc::sync::Arc;
use alloc::vec::Vec;

use crate::errno::{Errno, KResult};
use crate::inode::Inode;
use crate::namei::{self, LookupFlags};
pub use crate::simple_xattr::{under_prefix, XattrMap, USER_PREFIX, XATTR_CREATE, XATTR_REPLACE};
use crate::types::FileType;
use crate::vfs::Vfs;

/// Longest attribute name (`XATTR_NAME_MAX`).
pub const XATTR_NAME_MAX: usize = 255;
/// Largest attribute value (`XATTR_SIZE_MAX`).
pub const XATTR_SIZE_MAX: usize = 65536;
/// Largest name list `listxattr` returns (`XATTR_LIST_MAX`).
pub const XATTR_LIST_MAX: usize = 65536;

/// Step 1 for a name: ERANGE if empty or too long.
fn check_name(name: &[u8]) -> KResult<()> {
    if name.is_empty() || name.len() > XATTR_NAME_MAX || name.contains(&0) {
        return Err(Errno::ERANGE);
    }
    Ok(())
}

/// Step 3: `xattr_permission` (everything runs as root, so only the
/// `user.` rule can refuse).
fn permission(inode: &Inode, name: &[u8], write: bool) -> KResult<()> {
    if name.starts_with(USER_PREFIX) && !matches!(inode.kind, FileType::File | FileType::Dir) {
        return Err(if write { Errno::EPERM } else { Errno::ENODATA });
    }
    Ok(())
}

/// Step 5: copy `data` into `buf`, or say how big it is.
fn fill(data: &[u8], buf: &mut [u8], list: bool) -> KResult<usize> {
    if buf.is_empty() {
        return Ok(data.len());
    }
    if data.len() > buf.len() {
        let cap = if list { XATTR_LIST_MAX } else { XATTR_SIZE_MAX };
        return Err(if list && buf.len() >= cap {
            Errno::E2BIG
        } else {
            Errno::ERANGE
        });
    }
    buf[..data.len()].copy_from_slice(data);
    Ok(data.len())
}

// ---------------------------------------------------------------------------
// The system calls

impl Vfs {
    /// The inode `path` names (`follow`: through a final symlink).
    fn xattr_inode(
        &self,
        path: &[u8],
        follow: bool,
    ) -> KResult<(Arc<crate::inode::SuperBlock>, Arc<Inode>)> {
        let lf = LookupFlags {
            follow,
            directory: false,
        };
        let (_mnt, d) = namei::resolve(&self.mounts, path, lf)?;
        let inode = d.inode_arc().ok_or(Errno::ENOENT)?;
        Ok((d.sb.clone(), inode))
    }

    fn do_listxattr(&self, path: &[u8], follow: bool, buf: &mut [u8]) -> KResult<usize> {
        let (sb, inode) = self.xattr_inode(path, follow)?;
        let list = sb.ops.listxattr(&inode)?;
        let n = buf.len().min(XATTR_LIST_MAX);
        fill(&list, &mut buf[..n], true)
    }

    fn do_getxattr(
        &self,
        path: &[u8],
        name: &[u8],
        follow: bool,
        buf: &mut [u8],
    ) -> KResult<usize> {
        check_name(name)?;
        let (sb, inode) = self.xattr_inode(path, follow)?;
        permission(&inode, name, false)?;
        let v = sb.ops.getxattr(&inode, name)?;
        let n = buf.len().min(XATTR_SIZE_MAX);
        fill(&v, &mut buf[..n], false)
    }

    fn do_setxattr(
        &self,
        path: &[u8],
        name: &[u8],
        value: Option<&[u8]>,
        flags: u32,
        follow: bool,
    ) -> KResult<()> {
        if flags & !(XATTR_CREATE | XATTR_REPLACE) != 0 {
            return Err(Errno::EINVAL);
        }
        check_name(name)?;
        if value.is_some_and(|v| v.len() > XATTR_SIZE_MAX) {
            return Err(Errno::E2BIG);
        }
        let (sb, inode) = self.xattr_inode(path, follow)?;
        permission(&inode, name, true)?;
        sb.ops.setxattr(&inode, name, value, flags)
    }

    /// `listxattr(2)`: the names of `path`'s attributes, each followed by a
    /// NUL, into `buf`; with an empty `buf`, the size needed.
    pub fn listxattr(&self, path: &[u8], buf: &mut [u8]) -> KResult<usize> {
        self.do_listxattr(path, true, buf)
    }

    /// `llistxattr(2)`: [`Vfs::listxattr`] of a final symlink itself.
    pub fn llistxattr(&self, path: &[u8], buf: &mut [u8]) -> KResult<usize> {
        self.do_listxattr(path, false, buf)
    }

    /// `getxattr(2)`: the value of `name` into `buf`; with an empty `buf`,
    /// its size.
    pub fn getxattr(&self, path: &[u8], name: &[u8], buf: &mut [u8]) -> KResult<usize> {
        self.do_getxattr(path, name, true, buf)
    }

    /// `lgetxattr(2)`.
    pub fn lgetxattr(&self, path: &[u8], name: &[u8], buf: &mut [u8]) -> KResult<usize> {
        self.do_getxattr(path, name, false, buf)
    }

    /// `setxattr(2)` with `flags` 0, [`XATTR_CREATE`] or [`XATTR_REPLACE`].
    pub fn setxattr(&self, path: &[u8], name: &[u8], value: &[u8], flags: u32) -> KResult<()> {
        self.do_setxattr(path, name, Some(value), flags, true)
    }

    /// `lsetxattr(2)`.
    pub fn lsetxattr(&self, path: &[u8], name: &[u8], value: &[u8], flags: u32) -> KResult<()> {
        self.do_setxattr(path, name, Some(value), flags, false)
    }

    /// `removexattr(2)`.
    pub fn removexattr(&self, path: &[u8], name: &[u8]) -> KResult<()> {
        self.do_setxattr(path, name, None, 0, true)
    }

    /// `lremovexattr(2)`.
    pub fn lremovexattr(&self, path: &[u8], name: &[u8]) -> KResult<()> {
        self.do_setxattr(path, name, None, 0, false)
    }

    /// The attribute names of `path` as a list, asked as a caller of
    /// `listxattr(2)` asks (getfattr, coreutils): the size-0 call, then the
    /// call with that size. The list may change in between: a size of 0 is
    /// an empty list (the answer of the moment it was asked; an empty
    /// buffer would be another size query), and a fetch that finds the list
    /// grown is ERANGE, after which the caller asks again, up to
    /// [`XATTR_RETRIES`] times (then ERANGE).
    pub fn xattr_names(&self, path: &[u8], follow: bool) -> KResult<Vec<Vec<u8>>> {
        let buf = retry_erange(|buf| self.do_listxattr(path, follow, buf))?;
        Ok(split_list(&buf))
    }

    /// The value of `name` (the size-0 call, then the call with that size,
    /// asked again as [`Vfs::xattr_names`] does if the value grew).
    pub fn xattr_value(&self, path: &[u8], name: &[u8], follow: bool) -> KResult<Vec<u8>> {
        retry_erange(|buf| self.do_getxattr(path, name, follow, buf))
    }
}

/// How many times [`Vfs::xattr_names`] and [`Vfs::xattr_value`] ask again
/// after a fetch found the list or value grown since its size call.
pub const XATTR_RETRIES: usize = 8;

/// A caller's size-then-fetch loop over `call` (a size-0 buffer: the size
/// needed; else the bytes copied, ERANGE if they do not fit).
fn retry_erange(mut call: impl FnMut(&mut [u8]) -> KResult<usize>) -> KResult<Vec<u8>> {
    for _ in 0..XATTR_RETRIES {
        let need = call(&mut [])?;
        if need == 0 {
            return Ok(Vec::new());
        }
        let mut buf = alloc::vec![0u8; need];
        match call(&mut buf) {
            Ok(n) => {
                // `fill` never reports more than the buffer held.
                buf.truncate(n.min(need));
                return Ok(buf);
            }
            Err(Errno::ERANGE) => continue,
            Err(e) => return Err(e),
        }
    }
    Err(Errno::ERANGE)
}

/// The names of a `listxattr` buffer (NUL-terminated names).
pub fn split_list(buf: &[u8]) -> Vec<Vec<u8>> {
    buf.split(|&b| b == 0)
        .filter(|n| !n.is_empty())
        .map(<[u8]>::to_vec)
        .collect()
}

#[cfg(test)]
mod tests;
