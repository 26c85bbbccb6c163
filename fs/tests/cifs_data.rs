//! Data through the `cifs` mount against a real loopback Samba: reads and
//! writes of sizes around the chunk edges (0, 1, 4095, 65535, 65536, 65537
//! bytes and 3 MB) compared with the server's own copy on disk, against the
//! defaults and a server with `smb2 max read/write/trans = 16384`; create,
//! mkdir, unlink, rmdir, rename and truncate with Linux's errnos and a
//! coherent dcache; a random differential of the same operations through
//! vfsh on the mount and on tmpfs; and a share with `ea support = no`.

use std::net::{Ipv4Addr, SocketAddr};
use std::sync::Arc;

use fs::cifs::{self, CifsFs};
use fs::inode::SuperBlock;
use fs::smb::wire::cmd;
use fs::smb::{StdClock, TcpConnector};
use fs::vfs::Vfs;
use qemu::samba::{Fixture, FixtureOpts};

const SIZES: [usize; 7] = [0, 1, 4095, 65535, 65536, 65537, 3_000_000];

/// Deterministic, non-repeating-looking bytes of length `n`.
fn pattern(n: usize, seed: u64) -> Vec<u8> {
    let mut x = seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
    (0..n)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x as u8
        })
        .collect()
}

fn mount(fx: &Fixture, opts: &str) -> (Vfs, Arc<SuperBlock>) {
    let v = Vfs::new_tmpfs("").unwrap();
    v.mkdir(b"/mnt", 0o755).unwrap();
    let addr = SocketAddr::from((Ipv4Addr::LOCALHOST, fx.port));
    let o = format!("username={},password={},{opts}", fx.user, fx.password);
    let sb = cifs::mount(
        &v,
        &format!("//127.0.0.1/{}", fx.share),
        b"/mnt",
        &o,
        Box::new(TcpConnector {
            addr,
            timeout_ms: 10_000,
        }),
        Box::new(StdClock::default()),
    )
    .unwrap_or_else(|e| panic!("mount {o}: {e}"));
    (v, sb)
}

fn fixture(extra_global: &[&str]) -> Option<Fixture> {
    if let Err(why) = Fixture::available() {
        eprintln!("SKIP cifs_data: {why}");
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
    let (v, sb) = mount(&fx, "");
    let fs = sb.ops_as::<CifsFs>().unwrap();
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
