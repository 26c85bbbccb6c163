//! The `cifs` filesystem type against a real loopback Samba: coreutils
//! 9.7's `ls -la` (lstat + llistxattr of every name, `bench::coreutils`) under
//! each EA-cache design, cold and warm, counting what the client sent and
//! checking that entries with EAs list them under every design.

mod cifsmount;

use std::net::{Ipv4Addr, SocketAddr};

use bench::coreutils::{ls_la, LsListing};
use fs::errno::Errno;
use fs::fstype::cifs::eacache::{EaCacheDesign, EaSends};
use fs::fstype::cifs::{eacache, CifsFs};
use fs::vfs::Vfs;
use qemu::samba::{entry_name, Fixture, FixtureOpts};
use smb::wire::cmd;

const ENTRIES: usize = 40;
/// The first entries carry the four WSL EAs.
const WSL: usize = 3;
/// The last entries carry `user.x` = `1` (as `setfattr -n user.x -v 1`).
const WITH_X: usize = 5;

struct Listing {
    frames: u64,
    query_info: u64,
    l: LsListing,
}

fn list(v: &Vfs, fs: &CifsFs) -> Listing {
    let (f0, q0) = fs.with_stats(|s| (s.frames, s.cmds[cmd::QUERY_INFO as usize].total));
    let l = ls_la(v, b"/mnt").unwrap();
    let (f1, q1) = fs.with_stats(|s| (s.frames, s.cmds[cmd::QUERY_INFO as usize].total));
    Listing {
        frames: f1 - f0,
        query_info: q1 - q0,
        l,
    }
}

fn mount(fx: &Fixture, opts: &str) -> (Vfs, std::sync::Arc<fs::inode::SuperBlock>) {
    cifsmount::mount_samba(fx, &format!("acregmax=60,acdirmax=60,{opts}"), 5000)
}

/// What `llistxattr` must show for entry `i` of the share.
fn expected(i: usize) -> Vec<Vec<u8>> {
    let mut names: Vec<Vec<u8>> = Vec::new();
    if i < WSL {
        for n in ["user.$LXUID", "user.$LXGID", "user.$LXMOD", "user.$LXDEV"] {
            names.push(n.into());
        }
    }
    if i >= ENTRIES - WITH_X {
        names.push(b"user.x".to_vec());
    }
    names.sort();
    names
}

fn check_names(l: &LsListing, d: &dyn EaCacheDesign) {
    let design = d.name();
    assert_eq!(l.entries.len(), ENTRIES, "{design}: every entry listed");
    for (i, e) in l.entries.iter().enumerate() {
        assert_eq!(e.name, entry_name(i).as_bytes());
        if d.sends() == EaSends::Never {
            assert_eq!(e.xattrs, Err(Errno::EOPNOTSUPP), "{design}: {i}");
            continue;
        }
        let mut got = e
            .xattrs
            .clone()
            .unwrap_or_else(|e| panic!("{design}: {i}: {e}"));
        got.sort();
        assert_eq!(got, expected(i), "{design}: entry {i}");
    }
}

#[test]
fn ls_la_per_eacache_design() {
    if let Err(why) = Fixture::available() {
        qemu::fixtures::skip("cifs_samba", "Samba", why);
        return;
    }
    let mut opts = FixtureOpts {
        entries: ENTRIES,
        ..FixtureOpts::default()
    }
    .with_wsl_eas(WSL);
    for i in ENTRIES - WITH_X..ENTRIES {
        opts.other_xattrs
            .push((entry_name(i), "user.x".into(), b"1".to_vec()));
    }
    let fx = Fixture::start(&opts).expect("samba fixture");
    let with_eas = (WSL + WITH_X) as u64;
    // The names of `ls -la /mnt` on the share: /mnt and `.` (the mount's
    // root, one inode) and the entries; `..` is the tmpfs above.
    let names = ENTRIES as u64 + 2;
    let mut ran = Vec::new();
    for &d in eacache::EACACHE_DESIGNS {
        let design = d.name();
        ran.push(design);
        let (v, sb) = mount(&fx, &format!("eacache={design},eacache_k=4"));
        let fs = sb.ops_as::<CifsFs>().unwrap();
        let cold = list(&v, fs);
        let warm = list(&v, fs);
        eprintln!(
            "eacache={design}: cold frames={} query_info={}; warm frames={} query_info={}",
            cold.frames, cold.query_info, warm.frames, warm.query_info
        );
        check_names(&cold.l, d);
        check_names(&warm.l, d);
        assert!(
            warm.query_info <= cold.query_info,
            "{design}: warm asks no more than cold"
        );
        assert_eq!(
            v.xattr_value(
                format!("/mnt/{}", entry_name(ENTRIES - 1)).as_bytes(),
                b"user.x",
                false
            ),
            if d.sends() == EaSends::Never {
                Err(Errno::EOPNOTSUPP)
            } else {
                Ok(b"1".to_vec())
            },
            "{design}: getxattr"
        );
        // WSL metadata is read for reparse points only (as Linux): these
        // directories keep the mount's owner.
        let d0 = &cold.l.entries[0].stat;
        assert_eq!((d0.uid, d0.gid), (0, 0), "{design}: no WSL EAs on stat");
        assert_eq!(fs.wsl_queries.load(std::sync::atomic::Ordering::Relaxed), 0);
        match d.sends() {
            EaSends::EveryCall => {
                assert_eq!(cold.query_info, names, "Linux: one query per name");
                assert_eq!(warm.query_info, names, "and again warm");
            }
            EaSends::PerInodeAndTcon => {
                // /mnt answers NO_EAS, `.` is the same inode; the WSL
                // entries come first, so the tcon saw EAs and keeps asking.
                assert_eq!(cold.query_info, names - 1, "{design}");
                assert_eq!(
                    warm.query_info, with_eas,
                    "{design} warm: only entries with EAs"
                );
            }
            EaSends::TrustsEaSize => {
                // `ls` asks about /mnt before it lists: nothing has proved
                // yet that Samba fills EaSize, so /mnt is asked once; the
                // listing's WSL entries prove it, and then only entries
                // with EaSize != 0 are asked.
                assert_eq!(cold.query_info, with_eas + 1, "{design}: only EaSize != 0");
                assert_eq!(warm.query_info, with_eas, "{design}");
                assert_eq!(warm.frames, with_eas, "{design}");
            }
            EaSends::Never => {
                assert_eq!((cold.query_info, warm.query_info, warm.frames), (0, 0, 0));
                assert!(cold.frames <= 6, "{design}, listing only: {}", cold.frames);
            }
        }
    }
    // No EAs anywhere: a per-tcon stop ends after K answers, `easize`
    // (nothing proves that EaSize is filled) asks each inode once and
    // keeps its answer, and `nouser_xattr` sends nothing whatever the
    // design.
    drop(fx);
    let fx = Fixture::start(&FixtureOpts {
        entries: ENTRIES,
        ..FixtureOpts::default()
    })
    .expect("samba fixture");
    for &d in eacache::EACACHE_DESIGNS {
        let design = d.name();
        let (cold_qi, warm_qi) = match d.sends() {
            EaSends::EveryCall => (names, names),
            EaSends::PerInodeAndTcon => (4, 0),
            EaSends::TrustsEaSize => (names - 1, 0),
            EaSends::Never => (0, 0),
        };
        for (opts, cold_qi, warm_qi) in [
            (format!("eacache={design},eacache_k=4"), cold_qi, warm_qi),
            (format!("eacache={design},nouser_xattr"), 0, 0),
        ] {
            let (v, sb) = mount(&fx, &opts);
            let fs = sb.ops_as::<CifsFs>().unwrap();
            let cold = list(&v, fs);
            let warm = list(&v, fs);
            eprintln!(
                "{opts}, no EAs: cold frames={} qi={}, warm frames={} qi={}",
                cold.frames, cold.query_info, warm.frames, warm.query_info
            );
            assert_eq!(cold.query_info, cold_qi, "{opts}");
            assert!(cold.frames <= 6 + cold_qi, "{opts}: {}", cold.frames);
            assert_eq!(warm.query_info, warm_qi, "{opts}: warm");
            assert!(warm.frames <= warm_qi, "{opts}: warm {}", warm.frames);
        }
    }
    fs::dcache::design::say_ran("cifs_samba::ls_la_per_eacache_design", &ran);
}

#[test]
fn bad_password_and_bad_options_fail_the_mount() {
    let (_, r) = cifsmount::try_mount(
        "x",
        "bogus=1",
        cifsmount::tcp(SocketAddr::from((Ipv4Addr::LOCALHOST, 1)), 100),
    );
    let e = r.err().expect("unknown option refused").to_string();
    assert!(e.contains("cifs: Unknown parameter 'bogus'"), "{e}");
    if let Err(why) = Fixture::available() {
        qemu::fixtures::skip("cifs_samba", "Samba", why);
        return;
    }
    let fx = Fixture::start(&FixtureOpts {
        entries: 2,
        ..FixtureOpts::default()
    })
    .unwrap();
    let (_, r) = cifsmount::try_mount(
        &fx.share,
        &format!("username={},password=wrong", fx.user),
        cifsmount::tcp_to(&fx, 5000),
    );
    assert!(r.is_err(), "wrong password must fail the mount");
}

/// A missing name is asked once, believed for acdirmax, then asked again.
#[test]
fn negative_dentries_expire_after_acdirmax() {
    if let Err(why) = Fixture::available() {
        qemu::fixtures::skip("cifs_samba", "Samba", why);
        return;
    }
    let fx = Fixture::start(&FixtureOpts {
        entries: 2,
        ..FixtureOpts::default()
    })
    .expect("samba fixture");
    // Later options override the helper's 60 s windows.
    let (v, sb) = mount(&fx, "acregmax=1,acdirmax=1,eacache=off");
    let fs = sb.ops_as::<CifsFs>().unwrap();
    let frames = || fs.with_stats(|s| s.frames);
    let f0 = frames();
    assert_eq!(v.stat(b"/mnt/nope"), Err(fs::Errno::ENOENT));
    let f1 = frames();
    assert_eq!(f1 - f0, 1, "the first miss asks the server once");
    assert_eq!(v.stat(b"/mnt/nope"), Err(fs::Errno::ENOENT));
    assert_eq!(frames(), f1, "the negative dentry answers inside acdirmax");
    std::thread::sleep(std::time::Duration::from_millis(1100));
    assert_eq!(v.stat(b"/mnt/nope"), Err(fs::Errno::ENOENT));
    assert_eq!(frames() - f1, 1, "after acdirmax the server is asked again");
    // A name the server gains is seen once its negative has expired.
    assert_eq!(v.stat(b"/mnt/late"), Err(fs::Errno::ENOENT));
    std::fs::create_dir(fx.share_dir.join("late")).unwrap();
    std::thread::sleep(std::time::Duration::from_millis(1100));
    assert!(
        v.stat(b"/mnt/late").is_ok(),
        "expired negative, fresh answer"
    );
}
