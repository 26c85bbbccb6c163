//! Basic VFS semantics and the per-design costs of an ENOENT lookup, on
//! host threads.

use fs::stats;
use fs::vfs::{FileType, OpenFlags, Vfs};
use fs::Errno;

#[test]
fn create_stat_rename_unlink() {
    let v = Vfs::new_tmpfs("enoent=noalloc").unwrap();
    v.mkdir(b"/a", 0o755).unwrap();
    v.mkdir(b"/a/b", 0o755).unwrap();
    assert_eq!(v.mkdir(b"/a", 0o755), Err(Errno::EEXIST));
    v.write_file(b"/a/b/f", b"hello").unwrap();
    let st = v.stat(b"/a/b/f").unwrap();
    assert_eq!((st.kind, st.size), (FileType::File, 5));
    assert_eq!(v.read_file(b"/a/b/f").unwrap(), b"hello");
    assert_eq!(v.stat(b"/a/b/missing"), Err(Errno::ENOENT));
    assert_eq!(v.stat(b"/a/b/f/x"), Err(Errno::ENOTDIR));
    assert_eq!(v.stat(b"/a/b/f/"), Err(Errno::ENOTDIR));
    assert_eq!(v.stat(b"/a/./b/../b/f").unwrap().size, 5);
    assert_eq!(v.stat(b"/../../a").unwrap().kind, FileType::Dir);
    v.symlink(b"b/f", b"/a/l").unwrap();
    assert_eq!(v.stat(b"/a/l").unwrap().size, 5);
    assert_eq!(v.lstat(b"/a/l").unwrap().kind, FileType::Symlink);
    assert_eq!(v.readlink(b"/a/l").unwrap(), b"b/f");
    v.rename(b"/a/b/f", b"/a/g").unwrap();
    assert_eq!(v.stat(b"/a/b/f"), Err(Errno::ENOENT));
    assert_eq!(v.stat(b"/a/l"), Err(Errno::ENOENT), "dangling now");
    assert_eq!(v.read_file(b"/a/g").unwrap(), b"hello");
    assert_eq!(v.rename(b"/a", b"/a/b/c"), Err(Errno::EINVAL));
    assert_eq!(v.rmdir(b"/a"), Err(Errno::ENOTEMPTY));
    assert_eq!(v.unlink(b"/a/b"), Err(Errno::EISDIR));
    v.unlink(b"/a/g").unwrap();
    v.unlink(b"/a/l").unwrap();
    v.rmdir(b"/a/b").unwrap();
    let mut names: Vec<_> = v
        .readdir(b"/a")
        .unwrap()
        .into_iter()
        .map(|e| e.name)
        .collect();
    names.sort();
    assert!(names.is_empty());
    assert_eq!(v.rmdir(b"/"), Err(Errno::EBUSY));
    assert_eq!(v.rmdir(b"/a/."), Err(Errno::EINVAL));
    v.rmdir(b"/a").unwrap();
    assert!(v
        .open(
            b"/x",
            OpenFlags::CREAT | OpenFlags::EXCL | OpenFlags::WRONLY,
            0o644
        )
        .is_ok());
    assert_eq!(
        v.open(
            b"/x",
            OpenFlags::CREAT | OpenFlags::EXCL | OpenFlags::WRONLY,
            0o644
        )
        .err(),
        Some(Errno::EEXIST)
    );
}

#[test]
fn symlink_loops_and_long_names() {
    let v = Vfs::new_tmpfs("").unwrap();
    v.symlink(b"/l2", b"/l1").unwrap();
    v.symlink(b"/l1", b"/l2").unwrap();
    assert_eq!(v.stat(b"/l1"), Err(Errno::ELOOP));
    let long = vec![b'a'; 256];
    let mut p = b"/".to_vec();
    p.extend_from_slice(&long);
    assert_eq!(v.stat(&p), Err(Errno::ENAMETOOLONG));
    let p = vec![b'/'; 4096];
    assert_eq!(v.stat(&p), Err(Errno::ENAMETOOLONG));
    assert_eq!(v.stat(b""), Err(Errno::ENOENT));
}

#[test]
fn mounts_cross_and_refuse() {
    let v = Vfs::new_tmpfs("").unwrap();
    v.mkdir(b"/mnt", 0o755).unwrap();
    v.write_file(b"/hidden", b"x").unwrap();
    v.mount("tmpfs", b"/mnt", "enoent=negative").unwrap();
    v.write_file(b"/mnt/inner", b"abc").unwrap();
    assert_eq!(v.stat(b"/mnt/inner").unwrap().size, 3);
    assert_eq!(v.stat(b"/mnt/../hidden").unwrap().size, 1);
    assert_eq!(v.rename(b"/mnt/inner", b"/outer"), Err(Errno::EXDEV));
    assert_eq!(v.rmdir(b"/mnt"), Err(Errno::EBUSY));
    assert_eq!(v.stat(b"/mnt/nope"), Err(Errno::ENOENT));
}

/// One thread's cost of one ENOENT lookup per design, from the counters.
#[test]
fn enoent_costs_per_design() {
    for (design, allocs, min_stores) in [("transient", 1, 4), ("negative", 0, 0), ("noalloc", 0, 0)]
    {
        let v = Vfs::new_tmpfs(&format!("enoent={design}")).unwrap();
        assert_eq!(v.stat(b"/nonexistent"), Err(Errno::ENOENT)); // warm (negative: creates)
        let n = 1000;
        std::thread::scope(|s| {
            s.spawn(|| {
                let before = stats::snapshot();
                for _ in 0..n {
                    assert_eq!(v.stat(b"/nonexistent"), Err(Errno::ENOENT));
                }
                let d = stats::snapshot().delta(&before);
                // Other tests run concurrently in this process: only check
                // lower bounds for transient, and that negative/noalloc
                // spend nothing on this thread... counters are global, so
                // check exact zero only for allocations of our design.
                if allocs > 0 {
                    assert!(d.dentry_alloc >= n, "{design}: {d:?}");
                    assert!(d.shared_stores >= min_stores * n, "{design}: {d:?}");
                }
                assert!(d.enoent >= n);
            });
        });
    }
}
