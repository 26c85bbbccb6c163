//! Extended attributes through the cifs client against a loopback Samba:
//! the server's EAs are `user.*` (set, get, list, remove reach the
//! server's files), other namespaces are EOPNOTSUPP, `nouser_xattr` sends
//! nothing, and an EA added on the server after a listing shows once the
//! attribute window has passed under every design.

mod cifsmount;

use std::sync::atomic::Ordering;
use std::time::Duration;

use fs::errno::Errno;
use fs::fstype::cifs::eacache::EaSends;
use fs::fstype::cifs::{eacache, CifsFs};
use fs::vfs::Vfs;
use qemu::samba::{entry_name, get_xattr, set_xattr, Fixture, FixtureOpts};

/// The share's entries: one per design for the late-EA test, at least 4,
/// and the last one carries `user.x`.
fn entries() -> usize {
    eacache::EACACHE_DESIGNS.len().max(3) + 1
}

fn fixture() -> Option<Fixture> {
    if let Err(why) = Fixture::available() {
        qemu::fixtures::skip("cifs_xattr", "Samba", why);
        return None;
    }
    Some(
        Fixture::start(&FixtureOpts {
            entries: entries(),
            other_xattrs: vec![(entry_name(entries() - 1), "user.x".into(), b"1".to_vec())],
            ..FixtureOpts::default()
        })
        .expect("samba fixture"),
    )
}

fn mount(fx: &Fixture, opts: &str) -> (Vfs, std::sync::Arc<fs::inode::SuperBlock>) {
    cifsmount::mount_samba(fx, opts, 5000)
}

#[test]
fn set_get_list_remove_reach_the_server() {
    let Some(fx) = fixture() else { return };
    let (v, sb) = mount(&fx, "eacache=easize");
    let fs = sb.ops_as::<CifsFs>().unwrap();
    let p = b"/mnt/d001";
    let on_server = fx.share_dir.join(entry_name(1));
    assert_eq!(v.xattr_names(p, false).unwrap(), Vec::<Vec<u8>>::new());
    v.setxattr(p, b"user.y", b"hello", 0).unwrap();
    assert_eq!(get_xattr(&on_server, "user.y").unwrap(), b"hello");
    assert_eq!(v.xattr_value(p, b"user.y", false).unwrap(), b"hello");
    assert_eq!(v.xattr_names(p, false).unwrap(), vec![b"user.y".to_vec()]);
    let mut small = [0u8; 3];
    assert_eq!(v.getxattr(p, b"user.y", &mut small), Err(Errno::ERANGE));
    assert_eq!(v.getxattr(p, b"user.zz", &mut []), Err(Errno::ENODATA));
    v.removexattr(p, b"user.y").unwrap();
    assert!(
        get_xattr(&on_server, "user.y").is_err(),
        "removed on the server"
    );
    assert_eq!(v.removexattr(p, b"user.y"), Err(Errno::ENODATA));
    assert_eq!(v.xattr_names(p, false).unwrap(), Vec::<Vec<u8>>::new());
    // Only `user.` exists on cifs.
    assert_eq!(v.setxattr(p, b"trusted.t", b"1", 0), Err(Errno::EOPNOTSUPP));
    assert_eq!(
        v.getxattr(p, b"security.s", &mut []),
        Err(Errno::EOPNOTSUPP)
    );
    assert_eq!(v.setxattr(p, b"user.", b"1", 0), Err(Errno::EINVAL));
    assert_eq!(v.getxattr(p, b"", &mut []), Err(Errno::ERANGE));
    eprintln!(
        "ea_queries={} ea_local={}",
        fs.ea_queries.load(Ordering::Relaxed),
        fs.ea_local.load(Ordering::Relaxed)
    );
}

#[test]
fn nouser_xattr_sends_nothing() {
    let Some(fx) = fixture() else { return };
    let (v, sb) = mount(&fx, "eacache=always,nouser_xattr");
    let fs = sb.ops_as::<CifsFs>().unwrap();
    v.readdir(b"/mnt").unwrap();
    let frames = || fs.with_stats(|s| s.frames);
    let f0 = frames();
    for i in 0..4 {
        let p = format!("/mnt/{}", entry_name(i));
        let p = p.as_bytes();
        assert_eq!(v.llistxattr(p, &mut [0; 152]), Err(Errno::EOPNOTSUPP));
        assert_eq!(v.getxattr(p, b"user.x", &mut []), Err(Errno::EOPNOTSUPP));
        assert_eq!(v.setxattr(p, b"user.x", b"2", 0), Err(Errno::EOPNOTSUPP));
        assert_eq!(v.removexattr(p, b"user.x"), Err(Errno::EOPNOTSUPP));
    }
    assert_eq!(frames(), f0, "nouser_xattr: no round trip");
    assert_eq!(fs.ea_queries.load(Ordering::Relaxed), 0);
}

/// An EA the server gains after a listing: `always` sees it at once; the
/// caching designs do not inside the attribute window (1 s here), and do
/// once it has passed and the `stat` that `ls` makes first has refreshed
/// the attributes. Each design on an entry of its own.
#[test]
fn an_ea_added_on_the_server_shows_after_the_window() {
    let Some(fx) = fixture() else { return };
    let mut ran = Vec::new();
    for (i, d) in eacache::EACACHE_DESIGNS.iter().enumerate() {
        let design = d.name();
        ran.push(design);
        if d.sends() == EaSends::Never {
            // Nothing to see: every call is EOPNOTSUPP.
            let p = format!("/mnt/{}", entry_name(i));
            let (v, _sb) = mount(&fx, &format!("eacache={design}"));
            assert_eq!(v.xattr_names(p.as_bytes(), false), Err(Errno::EOPNOTSUPP));
            continue;
        }
        let (v, _sb) = mount(&fx, &format!("eacache={design},acregmax=1,acdirmax=1"));
        let p = format!("/mnt/{}", entry_name(i));
        let p = p.as_bytes();
        let names = |v: &Vfs| {
            v.lstat(p).unwrap();
            let n = v.xattr_names(p, false).unwrap();
            n.iter()
                .map(|n| String::from_utf8_lossy(n).into_owned())
                .collect::<Vec<_>>()
        };
        bench::coreutils::ls_la(&v, b"/mnt").unwrap();
        let before = names(&v);
        set_xattr(&fx.share_dir.join(entry_name(i)), "user.late", b"1").unwrap();
        let soon = names(&v);
        std::thread::sleep(Duration::from_millis(1100));
        let after = names(&v);
        eprintln!("{design}: before {before:?} soon {soon:?} after {after:?}");
        let late = vec!["user.late".to_string()];
        assert_eq!(before, Vec::<String>::new(), "{design}");
        if d.sends() == EaSends::EveryCall {
            assert_eq!(soon, late, "{design}: at once");
        } else {
            assert_eq!(soon, Vec::<String>::new(), "{design}: cached in the window");
        }
        assert_eq!(after, late, "{design}: after the window");
        // The entry given `user.x` at the start lists it under every design.
        let x = v
            .xattr_value(
                format!("/mnt/{}", entry_name(entries() - 1)).as_bytes(),
                b"user.x",
                false,
            )
            .unwrap();
        assert_eq!(x, b"1", "{design}");
    }
    fs::dcache::design::say_ran(
        "cifs_xattr::an_ea_added_on_the_server_shows_after_the_window",
        &ran,
    );
}
