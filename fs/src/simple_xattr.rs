//! The in-memory attribute store (Linux `simple_xattr`) and what every
//! filesystem's xattr handlers share: the `setxattr` flags and the
//! resolution of a name against a handler's prefixes.
//!
//! tmpfs's handlers follow Linux's `mm/shmem.c` over `simple_xattr`:
//! `user.`, `trusted.` and `security.` names are kept in the inode
//! (everything runs as root here, so `trusted.` is always allowed and
//! listed). `system.posix_acl_access` / `_default` read as absent and
//! remove as a no-op, as on a tmpfs without ACLs; setting one is
//! EOPNOTSUPP (no ACLs here, where Linux would parse the value). Names are
//! listed in byte order. The `*xattr(2)` calls above them are
//! [`crate::xattr`].
//!
//! Touches: the attribute map it is given, under its lock; a stored
//! attribute asks memory admission ([`crate::mem`]) first.

use alloc::boxed::Box;
use alloc::collections::BTreeMap;
use alloc::vec::Vec;

use crate::errno::{Errno, KResult};
use crate::mem;
use crate::sync::spinlock::SpinLock;

/// `setxattr` flag: fail with EEXIST if the attribute exists.
pub const XATTR_CREATE: u32 = 1;
/// `setxattr` flag: fail with ENODATA if the attribute does not exist.
pub const XATTR_REPLACE: u32 = 2;

/// The `user.` namespace prefix.
pub const USER_PREFIX: &[u8] = b"user.";

/// One inode's attributes (tmpfs), by name.
pub type XattrMap = BTreeMap<Box<[u8]>, Box<[u8]>>;

/// The namespaces tmpfs stores.
const TMPFS_PREFIXES: [&[u8]; 3] = [USER_PREFIX, b"trusted.", b"security."];
/// The POSIX ACL names (their own handlers, whole names).
const ACL_NAMES: [&[u8]; 2] = [b"system.posix_acl_access", b"system.posix_acl_default"];

/// Step 4's resolution against a list of prefix handlers: `Ok(true)` for a
/// name under one of `prefixes`, EINVAL for a bare prefix, `Ok(false)` for
/// none of them.
pub fn under_prefix(name: &[u8], prefixes: &[&[u8]]) -> KResult<bool> {
    for p in prefixes {
        if let Some(rest) = name.strip_prefix(*p) {
            return if rest.is_empty() {
                Err(Errno::EINVAL)
            } else {
                Ok(true)
            };
        }
    }
    Ok(false)
}

/// What a tmpfs name resolves to.
enum TmpfsName {
    Stored,
    Acl,
}

fn tmpfs_resolve(symlink: bool, name: &[u8]) -> KResult<TmpfsName> {
    if under_prefix(name, &TMPFS_PREFIXES)? {
        return Ok(TmpfsName::Stored);
    }
    if ACL_NAMES.contains(&name) {
        // Linux's ACL handlers refuse symlinks.
        if symlink {
            return Err(Errno::EOPNOTSUPP);
        }
        return Ok(TmpfsName::Acl);
    }
    Err(Errno::EOPNOTSUPP)
}

/// tmpfs `listxattr`: every stored name, NUL-terminated, in byte order.
pub fn tmpfs_list(xattrs: &SpinLock<XattrMap>) -> KResult<Vec<u8>> {
    let map = xattrs.lock();
    let mut out = Vec::new();
    for k in map.keys() {
        out.extend_from_slice(k);
        out.push(0);
    }
    Ok(out)
}

/// tmpfs `getxattr` (`symlink`: is the inode a symlink?).
pub fn tmpfs_get(xattrs: &SpinLock<XattrMap>, symlink: bool, name: &[u8]) -> KResult<Vec<u8>> {
    match tmpfs_resolve(symlink, name)? {
        TmpfsName::Acl => Err(Errno::ENODATA),
        TmpfsName::Stored => xattrs
            .lock()
            .get(name)
            .map(|v| v.to_vec())
            .ok_or(Errno::ENODATA),
    }
}

/// tmpfs `setxattr` (`value` `None`: `removexattr`, which is
/// `XATTR_REPLACE` of nothing, as Linux's `simple_xattr_set`).
pub fn tmpfs_set(
    xattrs: &SpinLock<XattrMap>,
    symlink: bool,
    name: &[u8],
    value: Option<&[u8]>,
    flags: u32,
) -> KResult<()> {
    match tmpfs_resolve(symlink, name)? {
        TmpfsName::Acl if value.is_none() => return Ok(()),
        TmpfsName::Acl => return Err(Errno::EOPNOTSUPP),
        TmpfsName::Stored => {}
    }
    let mut map = xattrs.lock();
    let exists = map.contains_key(name);
    let Some(value) = value else {
        return map.remove(name).map(|_| ()).ok_or(Errno::ENODATA);
    };
    if exists && flags & XATTR_CREATE != 0 {
        return Err(Errno::EEXIST);
    }
    if !exists && flags & XATTR_REPLACE != 0 {
        return Err(Errno::ENODATA);
    }
    mem::admit(name.len() + value.len())?;
    map.insert(name.into(), value.into());
    Ok(())
}
