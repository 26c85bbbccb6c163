//! The cifs client's EA state against a loopback Samba: what it remembers
//! never hides an EA that exists or one it has just set.
//!
//! - `negcache`'s per-tree-connect stop answers only for entries whose
//!   attributes said EaSize 0, never for "unknown" (what a setxattr leaves);
//! - a reply to a request sent before a setxattr records nothing (the EA
//!   generation): a listing's reply held until a setxattr has run, then
//!   applied, leaves the new EA visible, also when the file's inode was
//!   evicted in between and the reply makes a new one; the same with
//!   listings running beside a setxattr/getxattr loop;
//! - EaSize 0 is believed only on a tree connect whose server has shown
//!   that it fills the field; before that, only an inode's own answer is.
//!
//! - batched sibling queries keep only a sibling's NO_EAS: a sibling's EA
//!   list is never served to a later call (a value changed on the server
//!   in between shows), and one `getxattr` after a listing asks about its
//!   file alone (batches start on a visible walk).
//!
//! The share: directory `d000` with `user.proof` (the EaSize that proves
//! Samba fills the field, when listed) and regular files `f0`..`f3`.

mod cifsmount;

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;

use fs::errno::Errno;
use fs::fstype::cifs::{self, CifsFs};
use fs::inode::SuperBlock;
use fs::vfs::Vfs;
use qemu::samba::{entry_name, set_xattr, Fixture, FixtureOpts};

fn fixture(proof: bool) -> Option<Fixture> {
    if let Err(why) = Fixture::available() {
        qemu::fixtures::skip("cifs_ea_state", "Samba", why);
        return None;
    }
    let other_xattrs = if proof {
        vec![(entry_name(0), "user.proof".into(), b"1".to_vec())]
    } else {
        Vec::new()
    };
    Some(
        Fixture::start(&FixtureOpts {
            entries: 1,
            other_xattrs,
            files: (0..4).map(|i| (format!("f{i}"), b"x".to_vec())).collect(),
            ..FixtureOpts::default()
        })
        .expect("samba fixture"),
    )
}

fn mount(fx: &Fixture, opts: &str) -> (Arc<Vfs>, Arc<SuperBlock>) {
    let (v, sb) = cifsmount::mount_samba(fx, opts, 5000);
    (Arc::new(v), sb)
}

/// EA queries sent for the entries asked about (a batch's siblings are
/// not counted: their answers are what later calls find).
fn queries(sb: &SuperBlock) -> u64 {
    let fs = sb.ops_as::<CifsFs>().unwrap();
    fs.ea_queries.load(Ordering::Relaxed) - fs.ea_batched.load(Ordering::Relaxed)
}

/// EA queries sent in all (the opens: a batch's siblings included).
fn sent(sb: &SuperBlock) -> u64 {
    let fs = sb.ops_as::<CifsFs>().unwrap();
    fs.ea_queries.load(Ordering::Relaxed)
}

/// Issue 48, point 7: two NO_EAS answers stop the tree connect from
/// asking; a setxattr then leaves the file's EA state unknown, which the
/// stop must not read as "none".
#[test]
fn negcache_stop_never_reads_unknown_as_none() {
    let Some(fx) = fixture(false) else { return };
    let (v, _sb) = mount(&fx, "eacache=negcache,eacache_k=2,acregmax=60,acdirmax=60");
    assert_eq!(v.xattr_names(b"/mnt/f1", true), Ok(vec![]));
    assert_eq!(v.xattr_names(b"/mnt/f2", true), Ok(vec![]));
    v.setxattr(b"/mnt/f2", b"user.x", b"v", 0).unwrap();
    assert_eq!(
        v.xattr_value(b"/mnt/f2", b"user.x", true),
        Ok(b"v".to_vec())
    );
    assert_eq!(
        v.xattr_names(b"/mnt/f2", true),
        Ok(vec![b"user.x".to_vec()])
    );
}

/// Issue 48, points 6 and 2: a listing sent before a setxattr, its reply
/// applied after it (the reply is held at the client's hook while the
/// setxattr runs): the listing's EaSize 0 is older than the EA and must
/// not be recorded.
#[test]
fn a_listing_older_than_a_setxattr_records_nothing() {
    let Some(fx) = fixture(true) else { return };
    let (v, sb) = mount(&fx, "eacache=easize,acregmax=60,acdirmax=0");
    let fs = sb.ops_as::<CifsFs>().unwrap();
    v.readdir(b"/mnt").unwrap();
    // d000's EaSize proved that Samba fills the field: f2's 0 is believed.
    let q0 = queries(&sb);
    assert_eq!(v.xattr_names(b"/mnt/f2", true), Ok(vec![]));
    assert_eq!(queries(&sb), q0, "EaSize 0 on an honest tree connect");
    let set = v.clone();
    fs.on_next_listing_reply(move || {
        set.setxattr(b"/mnt/f2", b"user.x", b"1", 0).unwrap();
    });
    v.readdir(b"/mnt").unwrap();
    assert_eq!(
        v.xattr_value(b"/mnt/f2", b"user.x", true),
        Ok(b"1".to_vec()),
        "the EA set while the listing was in flight"
    );
}

/// The cifs series' v2 review, its bug: the same interleaving, and the
/// file's inode is evicted after the setxattr, before the listing's reply
/// is applied, so the reply makes a new inode (generation 0, older than
/// any sample). The setxattr's generation must still make the reply
/// stale: here through the server FileId it was recorded under (the
/// series gives a new inode the clock's value instead).
#[test]
fn a_listing_older_than_a_setxattr_records_nothing_on_a_new_inode() {
    let Some(fx) = fixture(true) else { return };
    let (v, sb) = mount(&fx, "eacache=easize,acregmax=60,acdirmax=0");
    let fs = sb.ops_as::<CifsFs>().unwrap();
    v.readdir(b"/mnt").unwrap();
    assert_eq!(v.xattr_names(b"/mnt/f2", true), Ok(vec![]));
    let set = v.clone();
    fs.on_next_listing_reply(move || {
        set.setxattr(b"/mnt/f2", b"user.x", b"1", 0).unwrap();
        // f2's dentry is unused now: dropping it drops its inode.
        fs::dcache::shrink_all();
    });
    v.readdir(b"/mnt").unwrap();
    assert_eq!(
        v.xattr_value(b"/mnt/f2", b"user.x", true),
        Ok(b"1".to_vec()),
        "the EA set while the listing was in flight, its inode evicted since"
    );
}

/// The same race without a hook: listings (and, for `negcache`, a
/// listxattr) run beside a loop of setxattr, getxattr, removexattr on one
/// file; every getxattr right after a successful setxattr must find the
/// EA.
#[test]
fn getxattr_after_setxattr_beside_listings() {
    let Some(fx) = fixture(true) else { return };
    const ROUNDS: usize = 3000;
    for design in ["easize", "negcache"] {
        let (v, _sb) = mount(
            &fx,
            &format!("eacache={design},eacache_k=2,acregmax=60,acdirmax=0"),
        );
        v.readdir(b"/mnt").unwrap();
        let stop = AtomicBool::new(false);
        let listings = AtomicU64::new(0);
        let stale = std::thread::scope(|s| {
            s.spawn(|| {
                while !stop.load(Ordering::Relaxed) {
                    let _ = v.readdir(b"/mnt");
                    let _ = v.xattr_names(b"/mnt/f3", true);
                    listings.fetch_add(1, Ordering::Relaxed);
                }
            });
            let mut stale = 0;
            for i in 0..ROUNDS {
                let val = format!("{i}");
                v.setxattr(b"/mnt/f3", b"user.x", val.as_bytes(), 0)
                    .unwrap();
                match v.xattr_value(b"/mnt/f3", b"user.x", true) {
                    Ok(got) => assert_eq!(got, val.as_bytes(), "{design}: round {i}"),
                    Err(Errno::ENODATA) => stale += 1,
                    Err(e) => panic!("{design}: round {i}: getxattr: {e}"),
                }
                // Back to no EAs (EaSize 0 in the next listings); a stale
                // "none" may make this ENODATA too: not what is counted.
                let _ = v.removexattr(b"/mnt/f3", b"user.x");
            }
            stop.store(true, Ordering::Relaxed);
            stale
        });
        eprintln!(
            "eacache={design}: {stale} of {ROUNDS} getxattr after setxattr answered ENODATA \
             ({} listings beside)",
            listings.load(Ordering::Relaxed)
        );
        assert_eq!(stale, 0, "{design}: stale_after_set");
    }
}

/// What-to-build, first bullet: on a tree connect whose server has shown
/// no EaSize other than 0, EaSize 0 is not believed: what is remembered is
/// the inode's own answer, and an EA that the server gained after the
/// listing (as ksmbd's listings show 0 for every file with EAs) is found.
#[test]
fn easize_zero_is_believed_only_where_proven() {
    let Some(fx) = fixture(false) else { return };
    let (v, sb) = mount(&fx, "eacache=easize,acregmax=60,acdirmax=60");
    v.readdir(b"/mnt").unwrap();
    set_xattr(&fx.share_dir.join("f1"), "user.late", b"y").unwrap();
    let (q0, s0) = (queries(&sb), sent(&sb));
    // f0's own NO_EAS answer is remembered for the window.
    assert_eq!(v.xattr_names(b"/mnt/f0", true), Ok(vec![]));
    assert_eq!(v.xattr_names(b"/mnt/f0", true), Ok(vec![]));
    assert_eq!(queries(&sb), q0 + 1, "its own answer, once");
    assert_eq!(
        v.xattr_names(b"/mnt/f1", true),
        Ok(vec![b"user.late".to_vec()]),
        "EaSize 0 from a tree connect that never proved it fills the field"
    );
    // The size call and the fetch each ask (EAs found are not kept).
    assert_eq!(queries(&sb), q0 + 3);
    // f1 after f0 is a walk by name: its size call takes the siblings
    // after it along (f2, f3); its fetch goes alone (the same entry again
    // is no walk).
    assert_eq!(sent(&sb), s0 + 5, "opens sent: f0, f1 + f2 + f3, f1");
}

/// Two names of one file (a hard link made on the server): a setxattr
/// through one name must not leave the other's "no EAs" standing, whether
/// that "none" was the inode's own answer or a trusted EaSize 0. Linux
/// (serverino) gives both names one inode; this client gives the second
/// name an inode of its own, so the change must reach it by FileId.
#[test]
fn a_setxattr_through_one_hard_link_reaches_the_other() {
    let Some(fx) = fixture(true) else { return };
    for f in ["f0", "f1", "f2", "f3"] {
        let h = f.replace('f', "h");
        std::fs::hard_link(fx.share_dir.join(f), fx.share_dir.join(h)).unwrap();
    }
    // serverino (the second name's number made up here) and noserverino
    // (every number made up): the FileId is the file's identity in both.
    for (extra, [a, b]) in [("", ["1", "2"]), (",noserverino", ["0", "3"])] {
        let opts = format!("eacache=easize,acregmax=60,acdirmax=60{extra}");
        let path = |p: &str, n: &str| format!("/mnt/{p}{n}").into_bytes();
        // Trusted EaSize 0 (d000 proved the field) for both names.
        let (v, _sb) = mount(&fx, &opts);
        v.readdir(b"/mnt").unwrap();
        assert_eq!(v.xattr_names(&path("h", a), true), Ok(vec![]));
        v.setxattr(&path("f", a), b"user.x", b"v", 0).unwrap();
        assert_eq!(
            v.xattr_value(&path("h", a), b"user.x", true),
            Ok(b"v".to_vec()),
            "{opts}: set through f{a}, read through h{a} (EaSize 0 listed before the set)"
        );
        // The inode's own NO_EAS answer, then a set through the other name.
        let (v, _sb) = mount(&fx, &opts);
        assert_eq!(v.xattr_names(&path("h", b), true), Ok(vec![]));
        assert_eq!(v.xattr_names(&path("f", b), true), Ok(vec![]));
        v.setxattr(&path("f", b), b"user.y", b"w", 0).unwrap();
        assert_eq!(
            v.xattr_value(&path("h", b), b"user.y", true),
            Ok(b"w".to_vec()),
            "{opts}: set through f{b}, read through h{b} (its own NO_EAS answered before the set)"
        );
    }
}

/// A directory renamed through this client: an EA set on a file under
/// it by its new path lands on that file, and is read back there (the
/// file's server path follows its parent's rename, as Linux's cifs builds
/// every path from the dentry).
#[test]
fn a_setxattr_under_a_renamed_directory_reaches_its_file() {
    let Some(fx) = fixture(true) else { return };
    std::fs::create_dir(fx.share_dir.join("rd")).unwrap();
    std::fs::write(fx.share_dir.join("rd/g"), b"x").unwrap();
    let (v, _sb) = mount(&fx, "eacache=easize,acregmax=60,acdirmax=60");
    v.readdir(b"/mnt/rd").unwrap();
    assert_eq!(v.xattr_names(b"/mnt/rd/g", true), Ok(vec![]));
    v.rename(b"/mnt/rd", b"/mnt/rn").unwrap();
    assert_eq!(
        v.setxattr(b"/mnt/rn/g", b"user.z", b"1", 0),
        Ok(()),
        "setxattr under the renamed directory"
    );
    assert_eq!(
        v.xattr_value(b"/mnt/rn/g", b"user.z", true),
        Ok(b"1".to_vec())
    );
}

/// An EA another client (here: the server's side) adds after a listing
/// said EaSize 0 is no proof that the server does not fill EaSize: the
/// server's own attributes for that file now show the EA. Such a change
/// must not make an honest server a liar for the rest of the mount, or
/// EaSize 0 is never believed there again (every entry asked, each
/// window, as on ksmbd).
#[test]
fn an_ea_added_elsewhere_does_not_make_an_honest_server_a_liar() {
    let Some(fx) = fixture(false) else { return };
    let (v, sb) = mount(&fx, "eacache=easize,acregmax=60,acdirmax=0");
    v.readdir(b"/mnt").unwrap();
    set_xattr(&fx.share_dir.join("f1"), "user.late", b"y").unwrap();
    assert_eq!(
        v.xattr_names(b"/mnt/f1", true),
        Ok(vec![b"user.late".to_vec()])
    );
    // The next listing shows f1's EaSize (Samba fills it): EaSize 0 of
    // the others is believed from then on.
    v.readdir(b"/mnt").unwrap();
    let q0 = queries(&sb);
    assert_eq!(v.xattr_names(b"/mnt/f2", true), Ok(vec![]));
    assert_eq!(
        queries(&sb),
        q0,
        "EaSize 0 on a tree connect whose server showed that it fills the field"
    );
}

/// The batch tests' share: regular files `f0`..`f3`, each with `user.x` =
/// `1` set on the server's side before the mount (Samba's listing then
/// shows EaSize and proves the field).
fn batch_fixture() -> Option<Fixture> {
    if let Err(why) = Fixture::available() {
        qemu::fixtures::skip("cifs_ea_state", "Samba", why);
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
    let Some(fx) = batch_fixture() else { return };
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
        qemu::fixtures::skip("cifs_ea_state", "Samba", why);
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
