//! The cifs mount against impacket's smbserver.py (SMB 2.0.2 only, no EA
//! query, FileId 0 for every entry): mount, list, stat with unique inode
//! numbers, read with the right bytes, and `stat` and `llistxattr`
//! (EOPNOTSUPP, or an empty list where the design never asks) under every
//! EA-cache design although the EA query is refused.

mod cifsmount;

use std::collections::BTreeSet;

use fs::fstype::cifs::CifsFs;
use fs::vfs::FileType;
use qemu::impacket::Server;

fn data(n: usize) -> Vec<u8> {
    (0..n).map(|i| (i * 31 % 251) as u8).collect()
}

#[test]
fn mount_list_stat_read() {
    if let Err(why) = Server::available() {
        qemu::fixtures::skip("cifs_impacket", "impacket", why);
        return;
    }
    let big = data(300_000);
    let files: [(&str, &[u8]); 3] = [("hello", b"hello\n"), ("empty", b""), ("big", &big)];
    let srv = Server::start(&files, 5).expect("smbserver.py");
    let mut ran = Vec::new();
    for &d in fs::fstype::cifs::eacache::EACACHE_DESIGNS {
        let design = d.name();
        ran.push(design);
        let o = format!(
            "username={},password={},vers=2.0,eacache={design}",
            srv.user, srv.password
        );
        let (v, sb) = cifsmount::try_mount(&srv.share, &o, cifsmount::tcp(srv.addr(), 10_000));
        let sb = sb.unwrap_or_else(|e| panic!("mount {o}: {e}\n{}", srv.log_tail(3000)));
        let fs = sb.ops_as::<CifsFs>().unwrap();
        let mut names: Vec<String> = v
            .readdir(b"/mnt")
            .unwrap()
            .into_iter()
            .map(|e| String::from_utf8(e.name).unwrap())
            .collect();
        names.sort();
        assert_eq!(
            names,
            ["big", "d000", "d001", "d002", "d003", "d004", "empty", "hello"],
            "{design}"
        );
        let mut inos = BTreeSet::new();
        for n in &names {
            let st = v
                .lstat(format!("/mnt/{n}").as_bytes())
                .unwrap_or_else(|e| panic!("{design}: lstat {n}: {e}"));
            assert_eq!(st.kind == FileType::Dir, n.starts_with('d'), "{n}");
            assert_ne!(st.ino, 0, "{design}: {n} has inode number 0");
            inos.insert(st.ino);
            // impacket refuses FileFullEaInformation: EOPNOTSUPP, or an
            // empty list where the design never asks.
            let x = v.llistxattr(format!("/mnt/{n}").as_bytes(), &mut [0; 152]);
            assert!(
                matches!(x, Ok(0) | Err(fs::Errno::EOPNOTSUPP)),
                "{design}: llistxattr {n}: {x:?}"
            );
        }
        assert_eq!(inos.len(), names.len(), "{design}: inode numbers unique");
        assert_eq!(v.read_file(b"/mnt/hello").unwrap(), b"hello\n");
        assert_eq!(v.read_file(b"/mnt/empty").unwrap(), b"");
        assert!(v.read_file(b"/mnt/big").unwrap() == big, "{design}: big");
        assert_eq!(v.stat(b"/mnt/big").unwrap().size, big.len() as u64);
        let refused = fs.ea_refused.load(std::sync::atomic::Ordering::Relaxed);
        if d.sends() != fs::fstype::cifs::eacache::EaSends::EveryCall {
            assert!(refused <= 1, "{design}: asked again after a refusal");
        }
        eprintln!(
            "eacache={design}: ea_refused={refused} inos_made_up={}",
            fs.inos_made_up.load(std::sync::atomic::Ordering::Relaxed)
        );
    }
    fs::dcache::design::say_ran("cifs_impacket::mount_list_stat_read", &ran);
}
