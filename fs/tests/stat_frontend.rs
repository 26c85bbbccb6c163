//! The syscall-shaped stat (`fs::stat`, the benchmarks' `frontend=stat`):
//! the answers Linux's `newfstatat` gives, for long names, names past
//! `PATH_MAX`, bad caller buffers, hits and misses.

use fs::namei::getname::EMBEDDED_NAME_MAX;
use fs::namei::PATH_MAX;
use fs::stat::{
    sys_newfstatat, vfs_fstatat, UserStat, AT_FDCWD, AT_SYMLINK_NOFOLLOW, STAT_SIZE, S_IFDIR,
    S_IFLNK, S_IFREG,
};
use fs::uaccess::{UserPtr, UserPtrMut};
use fs::vfs::{FileType, Vfs};
use fs::Errno;

/// `path` with its NUL, as a caller passes it.
fn c(path: &[u8]) -> Vec<u8> {
    let mut v = path.to_vec();
    v.push(0);
    v
}

fn fstatat(v: &Vfs, path: &[u8]) -> Result<fs::stat::Kstat, Errno> {
    vfs_fstatat(v, AT_FDCWD, UserPtr::new(&c(path)), 0)
}

/// A tmpfs holding `/d/f` (5 bytes) and `/d/l -> f`.
fn tree() -> Vfs {
    let v = Vfs::new_tmpfs("").unwrap();
    v.mkdir(b"/d", 0o755).unwrap();
    v.write_file(b"/d/f", b"hello").unwrap();
    v.symlink(b"f", b"/d/l").unwrap();
    v
}

#[test]
fn a_hit_fills_the_kstat_and_the_callers_struct_stat() {
    let v = tree();
    let walk = v.stat(b"/d/f").unwrap();
    let k = fstatat(&v, b"/d/f").unwrap();
    assert_eq!(k.ino, walk.ino);
    assert_eq!(k.mode, S_IFREG | walk.mode);
    assert_eq!((k.size, k.nlink, k.blocks), (5, 1, 1));
    assert_eq!(fstatat(&v, b"/d").unwrap().mode & S_IFDIR, S_IFDIR);
    // stat follows the final symlink, AT_SYMLINK_NOFOLLOW does not.
    assert_eq!(fstatat(&v, b"/d/l").unwrap().ino, walk.ino);
    let l = vfs_fstatat(&v, AT_FDCWD, UserPtr::new(&c(b"/d/l")), AT_SYMLINK_NOFOLLOW).unwrap();
    assert_eq!(l.mode & fs::stat::S_IFMT, S_IFLNK);

    let mut buf = [0xa5u8; STAT_SIZE];
    sys_newfstatat(
        &v,
        AT_FDCWD,
        UserPtr::new(&c(b"/d/f")),
        &mut UserPtrMut::new(&mut buf),
        0,
    )
    .unwrap();
    let us = UserStat::from_bytes(&buf);
    assert_eq!((us.ino, us.size, us.nlink), (walk.ino, 5, 1));
    assert_eq!(us.kind(), Some(FileType::File));
    assert_eq!(us.dev, k.dev);
    // The padding is zeroed, not left as the caller's bytes.
    assert_eq!(&buf[120..], &[0u8; 24]);
}

#[test]
fn a_miss_is_enoent_and_so_is_the_empty_name() {
    let v = tree();
    assert_eq!(fstatat(&v, b"/d/missing"), Err(Errno::ENOENT));
    assert_eq!(fstatat(&v, b"/missing/x"), Err(Errno::ENOENT));
    assert_eq!(fstatat(&v, b"/d/f/x"), Err(Errno::ENOTDIR));
    assert_eq!(fstatat(&v, b""), Err(Errno::ENOENT));
    // A miss writes nothing to the caller's buffer.
    let mut buf = [0xa5u8; STAT_SIZE];
    let r = sys_newfstatat(
        &v,
        AT_FDCWD,
        UserPtr::new(&c(b"/nope")),
        &mut UserPtrMut::new(&mut buf),
        0,
    );
    assert_eq!(r, Err(Errno::ENOENT));
    assert_eq!(buf, [0xa5u8; STAT_SIZE]);
}

#[test]
fn only_stats_flags_and_no_file_table() {
    let v = tree();
    let p = c(b"/d/f");
    assert_eq!(
        vfs_fstatat(&v, AT_FDCWD, UserPtr::new(&p), 0x4000),
        Err(Errno::EINVAL)
    );
    // An absolute path ignores dfd; a relative one needs a file table.
    assert!(vfs_fstatat(&v, 3, UserPtr::new(&p), 0).is_ok());
    assert_eq!(
        vfs_fstatat(&v, 3, UserPtr::new(&c(b"d/f")), 0),
        Err(Errno::EBADF)
    );
}

#[test]
fn bad_caller_buffers_are_efault() {
    let v = tree();
    assert_eq!(
        vfs_fstatat(&v, AT_FDCWD, UserPtr::bad(), 0),
        Err(Errno::EFAULT)
    );
    // A name that runs to the end of its mapping without a NUL.
    assert_eq!(
        vfs_fstatat(&v, AT_FDCWD, UserPtr::new(b"/d/f"), 0),
        Err(Errno::EFAULT)
    );
    // A NUL inside the mapping ends the name: what follows is not read.
    assert!(vfs_fstatat(&v, AT_FDCWD, UserPtr::new(b"/d/f\0garbage"), 0).is_ok());
    // A good name but no room for the answer.
    let p = c(b"/d/f");
    assert_eq!(
        sys_newfstatat(&v, AT_FDCWD, UserPtr::new(&p), &mut UserPtrMut::bad(), 0),
        Err(Errno::EFAULT)
    );
    let mut short = [0u8; STAT_SIZE - 1];
    assert_eq!(
        sys_newfstatat(
            &v,
            AT_FDCWD,
            UserPtr::new(&p),
            &mut UserPtrMut::new(&mut short),
            0
        ),
        Err(Errno::EFAULT)
    );
}

/// Directories of 200-byte names under `/`, then a file, so the whole
/// path is `len` bytes (without NUL); returns the path.
fn long_path(v: &Vfs, len: usize) -> Vec<u8> {
    let mut path = Vec::new();
    let mut i = 0u8;
    while len - path.len() > 255 + 1 {
        path.push(b'/');
        path.extend(std::iter::repeat_n(b'a' + i % 26, 200));
        v.mkdir(&path, 0o755).unwrap();
        i += 1;
    }
    path.push(b'/');
    let rest = len - path.len();
    path.extend(std::iter::repeat_n(b'z', rest));
    v.write_file(&path, b"long").unwrap();
    assert_eq!(path.len(), len);
    path
}

#[test]
fn long_names_stat_up_to_path_max() {
    // Short enough to sit behind the filename header (one copy), and the
    // longest there is (a second copy over the whole buffer).
    for len in [EMBEDDED_NAME_MAX - 1, EMBEDDED_NAME_MAX, PATH_MAX - 1] {
        let v = Vfs::new_tmpfs("").unwrap();
        let p = long_path(&v, len);
        let k = fstatat(&v, &p).unwrap_or_else(|e| panic!("{len}: {e:?}"));
        assert_eq!(k.size, 4, "{len}");
        assert_eq!(k.ino, v.stat(&p).unwrap().ino);
    }
}

#[test]
fn names_past_path_max_are_enametoolong() {
    let v = tree();
    // PATH_MAX bytes before the NUL: one too many (PATH_MAX counts it).
    let mut p = vec![b'/'; PATH_MAX];
    p.push(0);
    assert_eq!(
        vfs_fstatat(&v, AT_FDCWD, UserPtr::new(&p), 0),
        Err(Errno::ENAMETOOLONG)
    );
    // No NUL at all within PATH_MAX bytes, the mapping going on past it:
    // too long, not a fault (the copy stops at PATH_MAX).
    let p = vec![b'/'; PATH_MAX + 100];
    assert_eq!(
        vfs_fstatat(&v, AT_FDCWD, UserPtr::new(&p), 0),
        Err(Errno::ENAMETOOLONG)
    );
    // One byte shorter is a name (of slashes: the root).
    let mut p = vec![b'/'; PATH_MAX - 1];
    p.push(0);
    assert_eq!(
        vfs_fstatat(&v, AT_FDCWD, UserPtr::new(&p), 0).unwrap().mode & S_IFDIR,
        S_IFDIR
    );
}
