//! The xattr calls on tmpfs, each rule checked against what Linux 6.18's
//! tmpfs answered on the host (see the module doc for the order).

use super::*;
use crate::errno::Errno::*;

fn vfs() -> Vfs {
    let v = Vfs::new_tmpfs("").unwrap();
    v.write_file(b"/f", b"data").unwrap();
    v.mkdir(b"/d", 0o755).unwrap();
    v.symlink(b"f", b"/l").unwrap();
    v.symlink(b"nothere", b"/dl").unwrap();
    v
}

#[test]
fn set_get_list_remove() {
    let v = vfs();
    assert_eq!(v.xattr_names(b"/f", true).unwrap(), Vec::<Vec<u8>>::new());
    v.setxattr(b"/f", b"user.b", b"2", 0).unwrap();
    v.setxattr(b"/f", b"user.a", b"1", 0).unwrap();
    v.setxattr(b"/f", b"trusted.t", b"", 0).unwrap();
    v.setxattr(b"/f", b"security.s", b"x", 0).unwrap();
    v.setxattr(b"/d", b"user.d", b"dir", 0).unwrap();
    let names = v.xattr_names(b"/f", true).unwrap();
    assert_eq!(
        names,
        [&b"security.s"[..], b"trusted.t", b"user.a", b"user.b"].map(|n| n.to_vec())
    );
    assert_eq!(v.xattr_value(b"/f", b"user.a", true).unwrap(), b"1");
    assert_eq!(v.xattr_value(b"/f", b"trusted.t", true).unwrap(), b"");
    assert_eq!(v.xattr_value(b"/d", b"user.d", true).unwrap(), b"dir");
    // Through the symlink, and not.
    assert_eq!(v.xattr_value(b"/l", b"user.a", true).unwrap(), b"1");
    assert_eq!(v.xattr_names(b"/l", false).unwrap(), Vec::<Vec<u8>>::new());
    v.removexattr(b"/f", b"user.a").unwrap();
    assert_eq!(v.removexattr(b"/f", b"user.a"), Err(ENODATA));
    assert_eq!(v.getxattr(b"/f", b"user.a", &mut []), Err(ENODATA));
}

#[test]
fn size_protocol() {
    let v = vfs();
    v.setxattr(b"/f", b"user.a", b"hello", 0).unwrap();
    v.setxattr(b"/f", b"user.b", b"", 0).unwrap();
    assert_eq!(v.listxattr(b"/f", &mut []), Ok(14), "user.a\\0user.b\\0");
    let mut small = [0u8; 13];
    assert_eq!(v.listxattr(b"/f", &mut small), Err(ERANGE));
    let mut buf = [0u8; 152];
    assert_eq!(v.listxattr(b"/f", &mut buf), Ok(14));
    assert_eq!(&buf[..14], b"user.a\0user.b\0");
    assert_eq!(v.getxattr(b"/f", b"user.a", &mut []), Ok(5));
    assert_eq!(v.getxattr(b"/f", b"user.a", &mut [0u8; 4]), Err(ERANGE));
    let mut b5 = [0u8; 5];
    assert_eq!(v.getxattr(b"/f", b"user.a", &mut b5), Ok(5));
    assert_eq!(&b5, b"hello");
    assert_eq!(v.getxattr(b"/f", b"user.b", &mut [0u8; 8]), Ok(0));
}

#[test]
fn flags_and_limits() {
    let v = vfs();
    v.setxattr(b"/f", b"user.e", b"", 0).unwrap();
    assert_eq!(
        v.setxattr(b"/f", b"user.e", b"x", XATTR_CREATE),
        Err(EEXIST)
    );
    assert_eq!(
        v.setxattr(b"/f", b"user.q", b"x", XATTR_REPLACE),
        Err(ENODATA)
    );
    assert_eq!(v.setxattr(b"/f", b"user.q", b"x", 3), Err(ENODATA));
    assert_eq!(v.setxattr(b"/f", b"user.q", b"x", 4), Err(EINVAL));
    v.setxattr(b"/f", b"user.e", b"y", XATTR_REPLACE).unwrap();
    let long = [b"user.".as_slice(), &[b'x'; 250]].concat();
    v.setxattr(b"/f", &long, b"x", 0).unwrap();
    let over = [b"user.".as_slice(), &[b'x'; 251]].concat();
    assert_eq!(v.setxattr(b"/f", &over, b"x", 0), Err(ERANGE));
    assert_eq!(v.getxattr(b"/f", &over, &mut []), Err(ERANGE));
    assert_eq!(v.setxattr(b"/f", b"", b"x", 0), Err(ERANGE));
    v.setxattr(b"/f", b"user.big", &[7u8; XATTR_SIZE_MAX], 0)
        .unwrap();
    assert_eq!(
        v.setxattr(b"/f", b"user.big2", &[7u8; XATTR_SIZE_MAX + 1], 0),
        Err(E2BIG)
    );
    assert_eq!(v.getxattr(b"/f", b"user.big", &mut []), Ok(XATTR_SIZE_MAX));
}

#[test]
fn namespaces() {
    let v = vfs();
    assert_eq!(v.setxattr(b"/f", b"foo.x", b"1", 0), Err(EOPNOTSUPP));
    assert_eq!(v.setxattr(b"/f", b"user", b"1", 0), Err(EOPNOTSUPP));
    assert_eq!(v.setxattr(b"/f", b"user.", b"1", 0), Err(EINVAL));
    assert_eq!(v.getxattr(b"/f", b"security.", &mut []), Err(EINVAL));
    assert_eq!(v.getxattr(b"/f", b"system.", &mut []), Err(EOPNOTSUPP));
    assert_eq!(v.setxattr(b"/f", b"system.foo", b"1", 0), Err(EOPNOTSUPP));
    assert_eq!(
        v.getxattr(b"/f", b"system.posix_acl_access", &mut []),
        Err(ENODATA)
    );
    assert_eq!(v.removexattr(b"/f", b"system.posix_acl_default"), Ok(()));
    assert_eq!(v.removexattr(b"/f", b"foo.x"), Err(EOPNOTSUPP));
}

#[test]
fn order_of_checks_and_symlinks() {
    let v = vfs();
    // Arguments before the path.
    assert_eq!(v.getxattr(b"/nx", b"", &mut []), Err(ERANGE));
    assert_eq!(v.setxattr(b"/nx", b"user.a", &[0; 65537], 0), Err(E2BIG));
    assert_eq!(v.setxattr(b"/nx", b"user.a", b"1", 8), Err(EINVAL));
    // The path before the namespace.
    assert_eq!(v.getxattr(b"/nx", b"foo.x", &mut []), Err(ENOENT));
    assert_eq!(v.removexattr(b"/nx", b"foo.x"), Err(ENOENT));
    // `user.` on a symlink: EPERM to change, ENODATA to read, before the
    // namespace is resolved.
    assert_eq!(v.lsetxattr(b"/l", b"user.q", b"x", 0), Err(EPERM));
    assert_eq!(v.lsetxattr(b"/l", b"user.", b"x", 0), Err(EPERM));
    assert_eq!(v.lgetxattr(b"/l", b"user.q", &mut []), Err(ENODATA));
    assert_eq!(v.lremovexattr(b"/l", b"user.q"), Err(EPERM));
    assert_eq!(v.lgetxattr(b"/dl", b"user.q", &mut []), Err(ENODATA));
    assert_eq!(v.getxattr(b"/dl", b"user.q", &mut []), Err(ENOENT));
    assert_eq!(v.lgetxattr(b"/dl", b"foo.q", &mut []), Err(EOPNOTSUPP));
    // Other namespaces work on symlinks; ACLs do not exist there.
    v.lsetxattr(b"/l", b"trusted.q", b"x", 0).unwrap();
    v.lsetxattr(b"/l", b"security.q", b"y", 0).unwrap();
    assert_eq!(
        v.xattr_names(b"/l", false).unwrap(),
        vec![b"security.q".to_vec(), b"trusted.q".to_vec()]
    );
    assert_eq!(v.lgetxattr(b"/l", b"trusted.q", &mut [0; 4]), Ok(1));
    assert_eq!(
        v.lgetxattr(b"/l", b"system.posix_acl_access", &mut []),
        Err(EOPNOTSUPP)
    );
    // Nothing leaked onto the target.
    assert_eq!(v.xattr_names(b"/f", true).unwrap(), Vec::<Vec<u8>>::new());
}

/// A filesystem whose one inode gains an attribute at every `listxattr`
/// (another process adding names between a caller's size call and its
/// fetch), up to `cap` names.
struct GrowingList {
    calls: core::sync::atomic::AtomicUsize,
    cap: usize,
}

impl crate::inode::FsOps for GrowingList {
    fn fs_type(&self) -> &'static str {
        "growing"
    }
    fn as_any(&self) -> &dyn core::any::Any {
        self
    }
    fn lookup(
        &self,
        _sb: &crate::inode::SuperBlock,
        _dir: &Inode,
        _name: &[u8],
    ) -> KResult<Option<Arc<Inode>>> {
        Ok(None)
    }
    fn writable(&self) -> bool {
        false
    }
    fn listxattr(&self, _inode: &Arc<Inode>) -> KResult<Vec<u8>> {
        let n = self
            .calls
            .fetch_add(1, core::sync::atomic::Ordering::Relaxed)
            .min(self.cap);
        let mut out = Vec::new();
        for i in 0..n {
            out.extend_from_slice(alloc::format!("user.{i}\0").as_bytes());
        }
        Ok(out)
    }
}

fn growing(cap: usize) -> Vfs {
    let v = Vfs::new_tmpfs("").unwrap();
    v.mkdir(b"/g", 0o755).unwrap();
    let fs = GrowingList {
        calls: core::sync::atomic::AtomicUsize::new(0),
        cap,
    };
    let design = crate::dcache::design::by_name("negative").unwrap();
    let sb = Arc::new(crate::inode::SuperBlock::new(
        design,
        false,
        alloc::boxed::Box::new(fs),
    ));
    let root = Arc::new(Inode::new(1, FileType::Dir, 0o755, b""));
    v.mount_root(b"/g", crate::dcache::d_alloc_root(sb, root))
        .unwrap();
    v
}

/// A list that grows between the size call and the fetch: the fetch is
/// ERANGE (or, from a size of 0, the list was empty when asked), and
/// `xattr_names` asks again as Linux's callers do; never a panic.
#[test]
fn names_of_a_growing_list() {
    // Size call: 0 names; fetch: 1. An empty list is the answer of the
    // moment it was asked (as getfattr takes a size of 0).
    let v = growing(usize::MAX);
    assert_eq!(v.xattr_names(b"/g", true), Ok(Vec::new()));
    // Size call: 1 name (8 bytes); fetch: 2 names (ERANGE), then the
    // retry's size call sees 3 and its fetch 4 (ERANGE) ... until the cap
    // holds the list still.
    let v = growing(5);
    let _ = v.listxattr(b"/g", &mut []);
    let names = v.xattr_names(b"/g", true).unwrap();
    assert_eq!(names.len(), 5, "{names:?}");
    // A list that never stops growing: ERANGE after a bounded number of
    // tries, as a caller that gives up would report it.
    let v = growing(usize::MAX);
    let _ = v.listxattr(b"/g", &mut []);
    assert_eq!(v.xattr_names(b"/g", true), Err(ERANGE));
}
