//! vfsh on a cifs mount against a real loopback Samba: the `mount cifs`
//! and `cksum` commands, `stats` with the client's Stats lines, and a
//! random differential: the same create/write/read/rename/unlink/mkdir/
//! rmdir/stat/ls sequence run on the mount and on a tmpfs directory must
//! print the same results, and the share's final tree and bytes (read on
//! the server's disk) must equal the tmpfs tree.

use std::collections::BTreeMap;
use std::path::Path;

use fstools::shell::Shell;
use qemu::samba::{Fixture, FixtureOpts};

fn fixture() -> Option<Fixture> {
    if let Err(why) = Fixture::available() {
        qemu::fixtures::skip("cifs_vfsh", "Samba", why);
        return None;
    }
    Some(
        Fixture::start(&FixtureOpts {
            entries: 0,
            files: vec![("hello".into(), b"hello, world\n".to_vec())],
            ..FixtureOpts::default()
        })
        .expect("samba fixture"),
    )
}

fn one(sh: &mut Shell, line: &str) -> String {
    let out = sh.exec(line);
    out.last().cloned().unwrap_or_default()
}

fn mount_line(fx: &Fixture) -> String {
    format!(
        "mount cifs //127.0.0.1:{}/{} /mnt username={},password={},vers=3.1.1",
        fx.port, fx.share, fx.user, fx.password
    )
}

#[test]
fn mount_cksum_stats() {
    let Some(fx) = fixture() else { return };
    let mut sh = Shell::new("");
    assert_eq!(one(&mut sh, "mkdir /mnt"), "ok");
    let bad = format!(
        "mount cifs //127.0.0.1:{}/{} /mnt username={},password=wrong",
        fx.port, fx.share, fx.user
    );
    let out = sh.exec(&bad);
    assert_eq!(out.last().unwrap(), "err EACCES", "{out:?}");
    assert!(out[0].starts_with("# "), "{out:?}");
    assert_eq!(
        one(&mut sh, "mount cifs //127.0.0.1/share /mnt frob=1"),
        "err EINVAL"
    );
    assert_eq!(one(&mut sh, "mount cifs //127.0.0.1 /mnt x"), "err EINVAL");
    assert_eq!(one(&mut sh, &mount_line(&fx)), "ok");
    // sha256("hello, world\n")
    assert_eq!(
        one(&mut sh, "cksum /mnt/hello"),
        "ok 853ff93762a06ddbf722c4ebe9ddd66d8f63ddaea97f521c3ecc20da7c976020 13"
    );
    assert_eq!(one(&mut sh, "read /mnt/hello"), "ok hello, world\\n");
    assert_eq!(one(&mut sh, "cksum /mnt/nope"), "err ENOENT");
    assert_eq!(one(&mut sh, "write /mnt/w two words"), "ok");
    assert_eq!(std::fs::read(fx.share_dir.join("w")).unwrap(), b"two words");
    let out = sh.exec("stats");
    assert_eq!(out.last().unwrap(), "ok");
    assert!(
        out.iter().any(|l| l == "# Writes: 1 total 0 failed"),
        "{out:?}"
    );
    assert!(out.iter().any(|l| l == "# Bytes read: 26"), "{out:?}");
    assert!(out.iter().any(|l| l.starts_with("# lookups ")), "{out:?}");
}

const NAMES: [&str; 9] = ["a", "b", "c", "d", "a/x", "a/y", "d/x", "d/e", "d/e/z"];

/// One random command over `ROOT` (replaced by /mnt and /loc), or `None`
/// for a rename that Linux and SMB servers legitimately answer differently
/// (a directory over an existing directory).
fn command(r: &mut fastrand::Rng, sh: &mut Shell) -> Option<String> {
    let p = NAMES[r.usize(..NAMES.len())];
    let q = NAMES[r.usize(..NAMES.len())];
    let text = ["", "1", "hello world", "\\x00\\xffbin", "0123456789abcdef"][r.usize(..5)];
    Some(match r.u32(..11) {
        0 => format!("create ROOT/{p}"),
        1 | 2 => format!("write ROOT/{p} {text}"),
        3 => format!("read ROOT/{p}"),
        4 => format!("mkdir ROOT/{p}"),
        5 => format!("rmdir ROOT/{p}"),
        6 => format!("unlink ROOT/{p}"),
        7 => {
            let src_dir = one(sh, &format!("stat /loc/{p}")) == "ok dir";
            let dst_exists = one(sh, &format!("stat /loc/{q}")).starts_with("ok");
            if src_dir && dst_exists {
                return None;
            }
            format!("rename ROOT/{p} ROOT/{q}")
        }
        8 => format!("stat ROOT/{p}"),
        9 => format!("ls ROOT/{}", ["", "/a", "/d", "/d/e"][r.usize(..4)]),
        _ => format!("cksum ROOT/{p}"),
    })
}

/// Every file and directory below `root` on the host's disk.
fn disk_tree(root: &Path, rel: &str, out: &mut BTreeMap<String, Option<Vec<u8>>>) {
    let mut names: Vec<_> = std::fs::read_dir(root.join(rel))
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    names.sort();
    for n in names {
        let r = if rel.is_empty() {
            n.clone()
        } else {
            format!("{rel}/{n}")
        };
        let p = root.join(&r);
        if p.is_dir() {
            out.insert(r.clone(), None);
            disk_tree(root, &r, out);
        } else {
            out.insert(r, Some(std::fs::read(&p).unwrap()));
        }
    }
}

/// The same tree as seen through vfsh's tmpfs.
fn vfs_tree(sh: &mut Shell, rel: &str, out: &mut BTreeMap<String, Option<Vec<u8>>>) {
    let path = if rel.is_empty() {
        "/loc".to_string()
    } else {
        format!("/loc/{rel}")
    };
    for name in sh.vfs().readdir(path.as_bytes()).unwrap() {
        let n = String::from_utf8(name.name).unwrap();
        let r = if rel.is_empty() {
            n.clone()
        } else {
            format!("{rel}/{n}")
        };
        let p = format!("/loc/{r}");
        if sh.vfs().stat(p.as_bytes()).unwrap().kind == fs::vfs::FileType::Dir {
            out.insert(r.clone(), None);
            vfs_tree(sh, &r, out);
        } else {
            out.insert(r, Some(sh.vfs().read_file(p.as_bytes()).unwrap()));
        }
    }
}

#[test]
fn random_differential_against_tmpfs() {
    let Some(fx) = fixture() else { return };
    std::fs::remove_file(fx.share_dir.join("hello")).unwrap();
    let mut sh = Shell::new("");
    assert_eq!(one(&mut sh, "mkdir /mnt"), "ok");
    assert_eq!(one(&mut sh, "mkdir /loc"), "ok");
    assert_eq!(one(&mut sh, &mount_line(&fx)), "ok");
    let mut ran = 0;
    let mut oks = 0;
    for seed in [1u64, 2, 3] {
        let mut r = fastrand::Rng::with_seed(seed);
        for step in 0..150 {
            let Some(c) = command(&mut r, &mut sh) else {
                continue;
            };
            let on_mnt = one(&mut sh, &c.replace("ROOT", "/mnt"));
            let on_loc = one(&mut sh, &c.replace("ROOT", "/loc"));
            assert_eq!(on_mnt, on_loc, "seed {seed} step {step}: `{c}`");
            ran += 1;
            oks += on_mnt.starts_with("ok") as usize;
        }
        let mut disk = BTreeMap::new();
        disk_tree(&fx.share_dir, "", &mut disk);
        let mut local = BTreeMap::new();
        vfs_tree(&mut sh, "", &mut local);
        assert_eq!(disk, local, "seed {seed}: the share's tree and bytes");
    }
    eprintln!("{ran} commands agreed, {oks} of them succeeded");
    // The sequence must do things, not only fail on missing names.
    assert!(oks * 4 > ran, "{oks} of {ran} succeeded");
}

/// The session shown in docs/host-mode.md, line for line.
#[test]
fn readme_session() {
    let Some(fx) = fixture() else { return };
    let mut sh = Shell::new("");
    let session = [
        ("mkdir /mnt", "ok".to_string()),
        (mount_line(&fx).as_str(), "ok".to_string()),
        (
            "cksum /mnt/hello",
            "ok 853ff93762a06ddbf722c4ebe9ddd66d8f63ddaea97f521c3ecc20da7c976020 13".into(),
        ),
        ("write /mnt/notes two words", "ok".into()),
        ("mkdir /mnt/d", "ok".into()),
        ("rename /mnt/notes /mnt/d/notes", "ok".into()),
        ("ls /mnt", "ok d hello".into()),
        ("rmdir /mnt/d", "err ENOTEMPTY".into()),
        ("stat /mnt/d/notes", "ok file size=9".into()),
    ]
    .map(|(a, b)| (a.to_string(), b));
    for (cmd, want) in &session {
        assert_eq!(&one(&mut sh, cmd), want, "{cmd}");
    }
}
