//! A share with `ea support = no` and 600 entries: coreutils 9.7's `ls -la`
//! (`stat` + `llistxattr` of every name) succeeds under every EA-cache
//! design, and when the server refuses the EA query as a class
//! (STATUS_NOT_SUPPORTED / STATUS_INVALID_INFO_CLASS, as impacket's
//! smbserver and some NAS do) every `llistxattr` is EOPNOTSUPP: `always`
//! (Linux) asks each time, `negcache` and `easize` stop after the first
//! refusal, which is counted: the server's answer, never a local empty
//! list in its place (`easize` does not believe EaSize 0 here: nothing on
//! this share proves that the server fills the field). Samba 4.17 itself answers
//! NO_EAS_ON_FILE even with `ea support = no`, so the refusal is made by a
//! transport that rewrites that status in QUERY_INFO replies (vers=3.0.2,
//! unsigned, so the rewrite is not a forgery the client would catch).

mod cifsmount;

use std::net::{Ipv4Addr, SocketAddr};

use fs::errno::Errno;
use fs::fstype::cifs::eacache::{EaCacheDesign, EaSends};
use fs::fstype::cifs::{eacache, CifsFs};
use qemu::samba::{entry_name, Fixture, FixtureOpts};
use smb::transport::{Connector, Transport, TransportError};
use smb::wire::{cmd, status};
use smb::TcpTransport;

const ENTRIES: usize = 600;

/// Rewrites NO_EAS_ON_FILE in QUERY_INFO replies to `to` (0: leave it).
struct Rewrite {
    inner: TcpTransport,
    to: u32,
}

impl Transport for Rewrite {
    fn send(&mut self, msg: &[u8]) -> Result<(), TransportError> {
        self.inner.send(msg)
    }
    fn recv(&mut self, timeout_ms: u64) -> Result<Vec<u8>, TransportError> {
        let mut f = self.inner.recv(timeout_ms)?;
        let mut off = 0usize;
        while self.to != 0 && off + 64 <= f.len() {
            let st = u32::from_le_bytes(f[off + 8..off + 12].try_into().unwrap());
            let c = u16::from_le_bytes(f[off + 12..off + 14].try_into().unwrap());
            if c == cmd::QUERY_INFO && st == status::NO_EAS_ON_FILE {
                f[off + 8..off + 12].copy_from_slice(&self.to.to_le_bytes());
            }
            let next = u32::from_le_bytes(f[off + 20..off + 24].try_into().unwrap()) as usize;
            if next == 0 {
                break;
            }
            off += next;
        }
        Ok(f)
    }
}

struct RewriteConnector {
    addr: SocketAddr,
    to: u32,
}

impl Connector for RewriteConnector {
    fn connect(&mut self) -> Result<Box<dyn Transport>, TransportError> {
        Ok(Box::new(Rewrite {
            inner: TcpTransport::connect(self.addr, 10_000)?,
            to: self.to,
        }))
    }
}

/// (QUERY_INFO sent, EA queries, refusals) of one cold `ls -la`.
fn ls_la(fx: &Fixture, d: &dyn EaCacheDesign, to: u32) -> (u64, u64, u64) {
    let design = d.name();
    let o = format!(
        "username={},password={},vers=3.0.2,acregmax=60,acdirmax=60,eacache={design},eacache_k=4",
        fx.user, fx.password
    );
    let (v, sb) = cifsmount::mount(
        &fx.share,
        &o,
        Box::new(RewriteConnector {
            addr: SocketAddr::from((Ipv4Addr::LOCALHOST, fx.port)),
            to,
        }),
    );
    let fs = sb.ops_as::<CifsFs>().unwrap();
    let q0 = fs.with_stats(|s| s.get(cmd::QUERY_INFO).total);
    let l = bench::coreutils::ls_la(&v, b"/mnt")
        .unwrap_or_else(|e| panic!("{design}, refusal {to:#x}: ls -la: {e}"));
    assert_eq!(l.entries.len(), ENTRIES);
    for (i, e) in l.entries.iter().enumerate() {
        assert_eq!(e.name, entry_name(i).as_bytes());
        assert_eq!(e.stat.kind, fs::vfs::FileType::Dir);
        // The server's answer: a refusal is EOPNOTSUPP under every design.
        let want = if to != 0 || d.sends() == EaSends::Never {
            Err(Errno::EOPNOTSUPP)
        } else {
            Ok(Vec::new())
        };
        assert_eq!(e.xattrs, want, "{design}, refusal {to:#x}: {i}");
    }
    let q = fs.with_stats(|s| s.get(cmd::QUERY_INFO).total) - q0;
    let refused = fs.ea_refused.load(std::sync::atomic::Ordering::Relaxed);
    let asked = fs.ea_queries.load(std::sync::atomic::Ordering::Relaxed);
    eprintln!(
        "eacache={design} refusal={to:#x}: {q} QUERY_INFO, {asked} EA queries, {refused} refused"
    );
    (q, asked, refused)
}

#[test]
fn ea_support_no_every_design() {
    if let Err(why) = Fixture::available() {
        qemu::fixtures::skip("cifs_eas", "Samba", why);
        return;
    }
    let fx = Fixture::start(&FixtureOpts {
        entries: ENTRIES,
        ea_support: false,
        ..FixtureOpts::default()
    })
    .expect("samba fixture");
    // `ls -la /mnt` asks about /mnt, `.` (the same inode) and every entry.
    let names = ENTRIES as u64 + 2;
    let mut ran = Vec::new();
    for &d in eacache::EACACHE_DESIGNS {
        let design = d.name();
        ran.push(design);
        // Samba's own answer (NO_EAS_ON_FILE): every name lists nothing.
        let (q, _, refused) = ls_la(&fx, d, 0);
        assert_eq!(refused, 0);
        match d.sends() {
            EaSends::EveryCall => assert_eq!(q, names, "{design} asks for every name"),
            EaSends::PerInodeAndTcon => assert_eq!(q, 4, "{design} stops after K=4 NO_EAS"),
            EaSends::TrustsEaSize => assert_eq!(
                q,
                names - 1,
                "{design}: EaSize 0 unproven: each inode asked once (/mnt and . are one)"
            ),
            EaSends::Never => assert_eq!(q, 0, "{design}: nothing sent"),
        }
        for to in [status::NOT_SUPPORTED, status::INVALID_INFO_CLASS] {
            let (q, asked, refused) = ls_la(&fx, d, to);
            match d.sends() {
                EaSends::EveryCall => {
                    assert_eq!(
                        (q, asked, refused),
                        (names, names, names),
                        "{design}: Linux asks again"
                    );
                }
                EaSends::PerInodeAndTcon | EaSends::TrustsEaSize => {
                    assert_eq!(
                        (q, asked, refused),
                        (1, 1, 1),
                        "{design}: one refusal, then none asked"
                    );
                }
                EaSends::Never => assert_eq!((q, refused), (0, 0), "{design} never asks"),
            }
        }
    }
    fs::dcache::design::say_ran("cifs_eas::ea_support_no_every_design", &ran);
}
