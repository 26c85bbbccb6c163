//! The system calls of coreutils 9.7's `ls -la DIR`, made on a [`Vfs`]:
//! the workload behind the cifs seed, shared by the host benchmark and the
//! kernel's `smb=` run.
//!
//! Measured with `strace -f` on Debian 13's `ls` (coreutils 9.7): it
//! `statx`es DIR without following (`AT_SYMLINK_NOFOLLOW`) and calls
//! `llistxattr(DIR, buf, 152)`; reads the directory; then, for every entry
//! including `.` and `..`, `statx` (no follow) and `llistxattr(path, buf,
//! 152)` (its ACL check: gnulib's `file_has_aclinfo` looks for ACL names
//! in the list), and `readlink` for a symlink. A list longer than the
//! buffer (ERANGE) is fetched again as a program does: the size-0 call,
//! then a buffer of that size. coreutils 9.1 (Debian 12) made no
//! `listxattr` call: it asked `lgetxattr security.selinux` and
//! `getxattr system.posix_acl_*`, which never reach an SMB server.
//!
//! Touches nothing but the [`Vfs`] it is given.

use alloc::vec;
use alloc::vec::Vec;

use fs::errno::{Errno, KResult};
use fs::types::{FileType, Stat};
use fs::vfs::Vfs;
use fs::xattr::split_list;

/// The buffer 9.7's `ls` gives its first `llistxattr` of each name.
pub const LS_XATTR_BUF: usize = 152;

/// One line of `ls -la`.
#[derive(Clone, Debug)]
pub struct LsEntry {
    /// The name as listed (`.`, `..`, or the entry's name; DIR itself for
    /// the argument).
    pub name: Vec<u8>,
    pub stat: Stat,
    /// The attribute names, or the errno `llistxattr` gave (EOPNOTSUPP
    /// under `nouser_xattr`; `ls` shows no ACL mark either way).
    pub xattrs: Result<Vec<Vec<u8>>, Errno>,
    /// A symlink's target.
    pub link: Option<Vec<u8>>,
}

/// What `ls -la DIR` looked at: DIR itself, `.`, `..` and the entries
/// (sorted by name, as `ls` prints them).
#[derive(Clone, Debug)]
pub struct LsListing {
    pub dir: LsEntry,
    pub dot: LsEntry,
    pub dotdot: LsEntry,
    pub entries: Vec<LsEntry>,
}

/// `llistxattr` as `ls` calls it: into a [`LS_XATTR_BUF`]-byte buffer; on
/// ERANGE the size-0 call and a buffer of that size.
fn ls_listxattr(v: &Vfs, path: &[u8]) -> Result<Vec<Vec<u8>>, Errno> {
    let mut buf = vec![0u8; LS_XATTR_BUF];
    match v.llistxattr(path, &mut buf) {
        Ok(n) => Ok(split_list(&buf[..n])),
        Err(Errno::ERANGE) => {
            let need = v.llistxattr(path, &mut [])?;
            let mut big = vec![0u8; need];
            let n = v.llistxattr(path, &mut big)?;
            Ok(split_list(&big[..n]))
        }
        Err(e) => Err(e),
    }
}

/// `statx` (no follow) + `llistxattr` (+ `readlink`) of one name.
fn ls_one(v: &Vfs, path: &[u8], name: &[u8]) -> KResult<LsEntry> {
    let stat = v.lstat(path)?;
    let xattrs = ls_listxattr(v, path);
    let link = if stat.kind == FileType::Symlink {
        Some(v.readlink(path)?)
    } else {
        None
    };
    Ok(LsEntry {
        name: name.to_vec(),
        stat,
        xattrs,
        link,
    })
}

/// `ls -la DIR` (DIR absolute, without a trailing slash).
pub fn ls_la(v: &Vfs, dir: &[u8]) -> KResult<LsListing> {
    let top = ls_one(v, dir, dir)?;
    let mut names: Vec<Vec<u8>> = v.readdir(dir)?.into_iter().map(|e| e.name).collect();
    names.sort();
    let join = |n: &[u8]| [dir, b"/", n].concat();
    let dot = ls_one(v, &join(b"."), b".")?;
    let dotdot = ls_one(v, &join(b".."), b"..")?;
    let mut entries = Vec::with_capacity(names.len());
    for n in &names {
        entries.push(ls_one(v, &join(n), n)?);
    }
    Ok(LsListing {
        dir: top,
        dot,
        dotdot,
        entries,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ls_la_sees_what_ls_sees() {
        let v = Vfs::new_tmpfs("").unwrap();
        v.mkdir(b"/d", 0o755).unwrap();
        v.write_file(b"/d/f", b"x").unwrap();
        v.symlink(b"f", b"/d/l").unwrap();
        v.setxattr(b"/d/f", b"user.a", b"1", 0).unwrap();
        // Longer than ls's first buffer: the ERANGE path.
        for i in 0..12 {
            let n = alloc::format!("user.long-name-{i:02}");
            v.setxattr(b"/d", n.as_bytes(), b"", 0).unwrap();
        }
        let l = ls_la(&v, b"/d").unwrap();
        assert_eq!(l.dir.xattrs.as_ref().unwrap().len(), 12);
        assert_eq!(l.dot.xattrs.as_ref().unwrap().len(), 12);
        assert_eq!(l.dotdot.stat.kind, FileType::Dir);
        let names: Vec<&[u8]> = l.entries.iter().map(|e| e.name.as_slice()).collect();
        assert_eq!(names, [&b"f"[..], b"l"]);
        assert_eq!(l.entries[0].xattrs, Ok(vec![b"user.a".to_vec()]));
        assert_eq!(l.entries[1].link.as_deref(), Some(&b"f"[..]));
        assert_eq!(l.entries[1].xattrs, Ok(Vec::new()));
    }
}
