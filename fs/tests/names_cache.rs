//! `getname`'s `names_cache` (`fs::namei::getname`): a CPU's object comes
//! back to it, so a stat allocates nothing once warm. Alone in its test
//! binary: the refill count is global, and other tests' threads would add
//! theirs.

use fs::namei::getname::{getname, names_cache_refills, putname};
use fs::stat::{vfs_fstatat, AT_FDCWD};
use fs::uaccess::UserPtr;
use fs::vfs::Vfs;
use fs::Errno;

#[test]
fn a_warm_cpu_reuses_its_names_buffer() {
    let v = Vfs::new_tmpfs("").unwrap();
    let _ = vfs_fstatat(&v, AT_FDCWD, UserPtr::new(b"/x\0"), 0);
    let before = names_cache_refills();
    for _ in 0..1000 {
        assert_eq!(
            vfs_fstatat(&v, AT_FDCWD, UserPtr::new(b"/x\0"), 0),
            Err(Errno::ENOENT)
        );
        // Every error path gives it back too.
        assert_eq!(
            vfs_fstatat(&v, AT_FDCWD, UserPtr::bad(), 0),
            Err(Errno::EFAULT)
        );
    }
    assert_eq!(names_cache_refills(), before);
    // Two names alive at once: the second costs one allocation, and only
    // one object stays cached.
    let a = getname(UserPtr::new(b"/a\0")).unwrap();
    let b = getname(UserPtr::new(b"/b\0")).unwrap();
    assert_eq!((a.as_bytes(), b.as_bytes()), (&b"/a"[..], &b"/b"[..]));
    assert_eq!(names_cache_refills(), before + 1);
    putname(a);
    putname(b);
    let _c = getname(UserPtr::new(b"/c\0")).unwrap();
    assert_eq!(names_cache_refills(), before + 1);
}
