//! The `cifs` filesystem type against a real loopback Samba: `ls -la`
//! (readdir, then lstat of every entry) under each WSL-EA design, cold and
//! warm, counting what the client sent.

use std::net::{Ipv4Addr, SocketAddr};

use fs::cifs::{self, CifsFs};
use fs::smb::wire::cmd;
use fs::smb::{StdClock, TcpConnector};
use fs::vfs::Vfs;
use qemu::samba::{entry_name, Fixture, FixtureOpts};

const ENTRIES: usize = 40;
const WSL: usize = 3;

struct Listing {
    frames: u64,
    query_info: u64,
    uids: Vec<(String, u32, u32, u32)>,
}

fn ls_la(v: &Vfs, fs: &CifsFs) -> Listing {
    let (f0, q0) = fs.with_stats(|s| (s.frames, s.cmds[cmd::QUERY_INFO as usize].total));
    let mut names: Vec<String> = v
        .readdir(b"/mnt")
        .unwrap()
        .into_iter()
        .map(|e| String::from_utf8(e.name).unwrap())
        .collect();
    names.sort();
    let mut uids = Vec::new();
    for n in &names {
        let st = v.lstat(format!("/mnt/{n}").as_bytes()).unwrap();
        uids.push((n.clone(), st.uid, st.gid, st.mode));
    }
    let (f1, q1) = fs.with_stats(|s| (s.frames, s.cmds[cmd::QUERY_INFO as usize].total));
    Listing {
        frames: f1 - f0,
        query_info: q1 - q0,
        uids,
    }
}

fn mount(fx: &Fixture, opts: &str) -> (Vfs, std::sync::Arc<fs::inode::SuperBlock>) {
    let v = Vfs::new_tmpfs("").unwrap();
    v.mkdir(b"/mnt", 0o755).unwrap();
    let addr = SocketAddr::from((Ipv4Addr::LOCALHOST, fx.port));
    let o = format!(
        "username={},password={},acregmax=60,acdirmax=60,{opts}",
        fx.user, fx.password
    );
    let sb = cifs::mount(
        &v,
        &format!("//127.0.0.1/{}", fx.share),
        b"/mnt",
        &o,
        Box::new(TcpConnector {
            addr,
            timeout_ms: 5000,
        }),
        Box::new(StdClock::default()),
    )
    .unwrap_or_else(|e| panic!("mount {o}: {e}"));
    (v, sb)
}

#[test]
fn ls_la_per_wslea_design() {
    if let Err(why) = Fixture::available() {
        qemu::fixtures::skip("cifs_samba", "Samba", why);
        return;
    }
    let fx = Fixture::start(
        &FixtureOpts {
            entries: ENTRIES,
            ..FixtureOpts::default()
        }
        .with_wsl_eas(WSL),
    )
    .expect("samba fixture");
    for design in ["probe", "negcache", "easize", "off"] {
        let (v, sb) = mount(&fx, &format!("wslea={design},wslea_k=4"));
        let fs = sb.ops_as::<CifsFs>().unwrap();
        let cold = ls_la(&v, fs);
        let warm = ls_la(&v, fs);
        eprintln!(
            "wslea={design}: cold frames={} query_info={}; warm frames={} query_info={}",
            cold.frames, cold.query_info, warm.frames, warm.query_info
        );
        assert_eq!(cold.uids.len(), ENTRIES, "{design}: every entry listed");
        let wsl_uid = |l: &Listing, i: usize| {
            l.uids
                .iter()
                .find(|u| u.0 == entry_name(i))
                .map(|u| (u.1, u.2))
        };
        match design {
            "probe" => {
                assert!(
                    cold.query_info >= ENTRIES as u64,
                    "probe asks for every entry: {}",
                    cold.query_info
                );
                assert!(
                    warm.query_info >= ENTRIES as u64,
                    "and again warm: {}",
                    warm.query_info
                );
            }
            "negcache" => {
                // WSL entries come first, so the tcon saw positives and
                // keeps probing; inodes answered NO_EAS are not re-probed.
                assert_eq!(warm.query_info, 0, "warm: per-inode negative cache");
                assert_eq!(warm.frames, 0, "warm: listing and attributes cached");
                assert_eq!(wsl_uid(&cold, 0), Some((1000, 2000)));
            }
            "easize" => {
                assert_eq!(
                    cold.query_info, WSL as u64,
                    "only entries whose EaSize is non-zero"
                );
                assert!(
                    cold.frames <= 6 + WSL as u64,
                    "listing + WSL probes: {}",
                    cold.frames
                );
                assert_eq!(warm.frames, 0);
                assert_eq!(wsl_uid(&cold, 1), Some((1001, 2001)));
                assert_eq!(wsl_uid(&cold, 2), Some((1002, 2002)));
            }
            "off" => {
                assert_eq!(cold.query_info, 0);
                assert!(cold.frames <= 6, "listing only: {}", cold.frames);
                assert_eq!(warm.frames, 0);
                assert_eq!(wsl_uid(&cold, 0), Some((0, 0)), "defaults, EAs not read");
            }
            _ => unreachable!(),
        }
    }
    // No WSL EAs anywhere: negcache stops after K answers.
    drop(fx);
    let fx = Fixture::start(&FixtureOpts {
        entries: ENTRIES,
        ..FixtureOpts::default()
    })
    .expect("samba fixture");
    let (v, sb) = mount(&fx, "wslea=negcache,wslea_k=4");
    let fs = sb.ops_as::<CifsFs>().unwrap();
    let cold = ls_la(&v, fs);
    let warm = ls_la(&v, fs);
    eprintln!(
        "negcache, no EAs: cold frames={} qi={}, warm frames={}",
        cold.frames, cold.query_info, warm.frames
    );
    assert_eq!(cold.query_info, 4, "K probes, then the tree connect stops");
    assert!(cold.frames <= 6 + 4);
    assert_eq!(warm.frames, 0);
}

#[test]
fn bad_password_and_bad_options_fail_the_mount() {
    let v = Vfs::new_tmpfs("").unwrap();
    v.mkdir(b"/mnt", 0o755).unwrap();
    let r = cifs::mount(
        &v,
        "//127.0.0.1/x",
        b"/mnt",
        "bogus=1",
        Box::new(TcpConnector {
            addr: SocketAddr::from((Ipv4Addr::LOCALHOST, 1)),
            timeout_ms: 100,
        }),
        Box::new(StdClock::default()),
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
    let addr = SocketAddr::from((Ipv4Addr::LOCALHOST, fx.port));
    let r = cifs::mount(
        &v,
        &format!("//127.0.0.1/{}", fx.share),
        b"/mnt",
        &format!("username={},password=wrong", fx.user),
        Box::new(TcpConnector {
            addr,
            timeout_ms: 5000,
        }),
        Box::new(StdClock::default()),
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
    let (v, sb) = mount(&fx, "acregmax=1,acdirmax=1,wslea=off");
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
