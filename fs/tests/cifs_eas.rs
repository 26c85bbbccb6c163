//! A share with `ea support = no` and 600 entries: `stat` of every entry
//! succeeds under every WSL-EA design, and when the server refuses the EA
//! query as a class (STATUS_NOT_SUPPORTED / STATUS_INVALID_INFO_CLASS, as
//! impacket's smbserver and some NAS do) probe and negcache stop asking
//! after the first refusal, which is counted. Samba 4.17 itself answers
//! NO_EAS_ON_FILE even with `ea support = no`, so the refusal is made by a
//! transport that rewrites that status in QUERY_INFO replies (vers=3.0.2,
//! unsigned, so the rewrite is not a forgery the client would catch).

use std::net::{Ipv4Addr, SocketAddr};

use fs::cifs::{self, CifsFs};
use fs::smb::transport::{Connector, Transport, TransportError};
use fs::smb::wire::{cmd, status};
use fs::smb::{StdClock, TcpTransport};
use fs::vfs::Vfs;
use qemu::samba::{entry_name, Fixture, FixtureOpts};

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

fn ls_la(fx: &Fixture, design: &str, to: u32) -> (u64, u64, u64) {
    let v = Vfs::new_tmpfs("").unwrap();
    v.mkdir(b"/mnt", 0o755).unwrap();
    let o = format!(
        "username={},password={},vers=3.0.2,acregmax=60,acdirmax=60,wslea={design},wslea_k=4",
        fx.user, fx.password
    );
    let sb = cifs::mount(
        &v,
        &format!("//127.0.0.1/{}", fx.share),
        b"/mnt",
        &o,
        Box::new(RewriteConnector {
            addr: SocketAddr::from((Ipv4Addr::LOCALHOST, fx.port)),
            to,
        }),
        Box::new(StdClock::default()),
    )
    .unwrap_or_else(|e| panic!("mount {o}: {e}"));
    let fs = sb.ops_as::<CifsFs>().unwrap();
    let names = v.readdir(b"/mnt").unwrap();
    assert_eq!(names.len(), ENTRIES);
    let q0 = fs.with_stats(|s| s.get(cmd::QUERY_INFO).total);
    for i in 0..ENTRIES {
        let p = format!("/mnt/{}", entry_name(i));
        let st = v
            .lstat(p.as_bytes())
            .unwrap_or_else(|e| panic!("{design}, refusal {to:#x}: lstat {p}: {e}"));
        assert_eq!(st.kind, fs::vfs::FileType::Dir);
    }
    let q = fs.with_stats(|s| s.get(cmd::QUERY_INFO).total) - q0;
    let refused = fs.ea_refused.load(std::sync::atomic::Ordering::Relaxed);
    let probes = fs.probes.load(std::sync::atomic::Ordering::Relaxed);
    eprintln!("wslea={design} refusal={to:#x}: {q} QUERY_INFO, {probes} probes, {refused} refused");
    (q, probes, refused)
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
    for design in ["probe", "negcache", "easize", "off"] {
        // Samba's own answer (NO_EAS_ON_FILE): every stat succeeds.
        let (q, _, refused) = ls_la(&fx, design, 0);
        assert_eq!(refused, 0);
        match design {
            "probe" => assert_eq!(q, ENTRIES as u64, "probe asks every entry"),
            "negcache" => assert_eq!(q, 4, "negcache stops after K=4 NO_EAS"),
            _ => assert_eq!(q, 0, "{design}: the listing says no EAs"),
        }
        for to in [status::NOT_SUPPORTED, status::INVALID_INFO_CLASS] {
            let (q, probes, refused) = ls_la(&fx, design, to);
            match design {
                "probe" | "negcache" => {
                    assert_eq!(refused, 1, "{design}: one refusal, counted");
                    assert_eq!(probes, 1, "{design}: no probe after the refusal");
                    assert_eq!(q, 1, "{design}: one QUERY_INFO in all");
                }
                _ => assert_eq!((q, refused), (0, 0), "{design} never asks"),
            }
        }
    }
}
