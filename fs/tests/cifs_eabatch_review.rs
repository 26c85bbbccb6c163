//! Review of the batched sibling EA queries (`fs::fstype::cifs::eacache`,
//! "Batched sibling queries") against a loopback Samba: a sibling's EA
//! list that a batch brought along is served to a later call as if it
//! were the server's answer then.
//!
//! Without batching, an EA list (one that has EAs) is never kept past the
//! call that asked for it, as Linux's cifs never keeps one: every
//! `getxattr` shows the server's current value. With batching, a
//! sibling's list is kept for its next call for the whole attribute
//! window (here 60 s), so a value changed on the server (another client,
//! the server's own side) in between is answered with the old one, an
//! answer the server would not give.
//!
//! The share: regular files `f0`..`f3`, each with `user.x` = `1` set on
//! the server's side before the mount (Samba's listing then shows EaSize
//! and proves the field, so only entries with EAs are asked about).

use std::net::{Ipv4Addr, SocketAddr};
use std::sync::Arc;

use fs::fstype::cifs;
use fs::inode::SuperBlock;
use fs::vfs::Vfs;
use qemu::samba::{set_xattr, Fixture, FixtureOpts};
use smb::{StdClock, TcpConnector};

fn fixture() -> Option<Fixture> {
    if let Err(why) = Fixture::available() {
        qemu::fixtures::skip("cifs_eabatch_review", "Samba", why);
        return None;
    }
    let fx = Fixture::start(&FixtureOpts {
        entries: 0,
        files: (0..4).map(|i| (format!("f{i}"), b"x".to_vec())).collect(),
        ..FixtureOpts::default()
    })
    .expect("samba fixture");
    for i in 0..4 {
        set_xattr(&fx.share_dir.join(format!("f{i}")), "user.x", b"1").unwrap();
    }
    Some(fx)
}

fn mount(fx: &Fixture, opts: &str) -> (Arc<Vfs>, Arc<SuperBlock>) {
    let v = Vfs::new_tmpfs("").unwrap();
    v.mkdir(b"/mnt", 0o755).unwrap();
    let o = format!("username={},password={},{opts}", fx.user, fx.password);
    let sb = cifs::mount(
        &v,
        &format!("//127.0.0.1/{}", fx.share),
        b"/mnt",
        &o,
        Box::new(TcpConnector {
            addr: SocketAddr::from((Ipv4Addr::LOCALHOST, fx.port)),
            timeout_ms: 5000,
        }),
        Box::new(StdClock::default()),
    )
    .unwrap_or_else(|e| panic!("mount {o}: {e}"));
    (Arc::new(v), sb)
}

/// One `getxattr(2)` with a buffer large enough (as most callers make
/// it): the value, as the client answers it.
fn get(v: &Vfs, path: &[u8]) -> Vec<u8> {
    let mut buf = [0u8; 256];
    let n = v.getxattr(path, b"user.x", &mut buf).unwrap();
    buf[..n].to_vec()
}

/// After `getxattr f1` (which, batched, asks about f2 and f3 too), the
/// server's side changes f2's `user.x`; `getxattr f2` must answer the new
/// value, as it does with `eacache_batch=1` and as Linux's cifs does.
#[test]
fn a_sibling_list_from_a_batch_is_not_served_after_a_server_change() {
    let Some(fx) = fixture() else { return };
    for opts in ["eacache_batch=1", "eacache_batch=128"] {
        set_xattr(&fx.share_dir.join("f2"), "user.x", b"1").unwrap();
        let (v, _sb) = mount(
            &fx,
            &format!("eacache=easize,acregmax=60,acdirmax=60,{opts}"),
        );
        v.readdir(b"/mnt").unwrap();
        // The tree connect's first EA query goes alone.
        assert_eq!(get(&v, b"/mnt/f0"), b"1");
        // Batched: f1's query takes f2's and f3's along.
        assert_eq!(get(&v, b"/mnt/f1"), b"1");
        set_xattr(&fx.share_dir.join("f2"), "user.x", b"2").unwrap();
        assert_eq!(
            get(&v, b"/mnt/f2"),
            b"2",
            "{opts}: the server's value of user.x after its change"
        );
    }
}

/// A `getfattr` of one file in a listed directory, the tree connect's
/// second EA query, on a share where nothing proves EaSize (no entry has
/// EAs): it asks about that file alone, as readahead grows a window only
/// for a sequential reader. Batched, it opens up to 31 of its siblings on
/// the server (CREATE with FILE_READ_EA: on Windows an open that breaks
/// other clients' batch oplocks and write-caching leases), for one answer
/// the caller wanted.
#[test]
fn one_getxattr_after_a_listing_opens_only_its_file() {
    if let Err(why) = Fixture::available() {
        qemu::fixtures::skip("cifs_eabatch_review", "Samba", why);
        return;
    }
    let fx = Fixture::start(&FixtureOpts {
        entries: 0,
        files: (0..40)
            .map(|i| (format!("f{i:02}"), b"x".to_vec()))
            .collect(),
        ..FixtureOpts::default()
    })
    .expect("samba fixture");
    let (v, sb) = mount(&fx, "eacache=easize,acregmax=60,acdirmax=60");
    v.readdir(b"/mnt").unwrap();
    let fs = sb.ops_as::<cifs::CifsFs>().unwrap();
    let q = || fs.ea_queries.load(std::sync::atomic::Ordering::Relaxed);
    // The tree connect's first EA query (it goes alone).
    assert!(v.xattr_names(b"/mnt/f00", true).unwrap().is_empty());
    let q0 = q();
    let mut buf = [0u8; 64];
    assert_eq!(
        v.getxattr(b"/mnt/f20", b"user.x", &mut buf),
        Err(fs::errno::Errno::ENODATA)
    );
    assert_eq!(q() - q0, 1, "EA queries sent for one getxattr of one file");
}
