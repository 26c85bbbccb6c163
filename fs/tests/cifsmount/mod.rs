//! The cifs mount the Samba and impacket tests share: a fresh tmpfs
//! namespace with `//127.0.0.1/SHARE` mounted at `/mnt` through a given
//! connector (plain TCP from [`tcp`], or a test's own). Touches only the
//! namespace it makes and the server it connects to.
//!
//! Each test crate compiles this module on its own and uses part of it.
#![allow(dead_code)]

use std::net::{Ipv4Addr, SocketAddr};
use std::sync::Arc;

use fs::fstype::cifs::{self, MountError};
use fs::inode::SuperBlock;
use fs::vfs::Vfs;
use qemu::samba::Fixture;
use smb::transport::Connector;
use smb::{StdClock, TcpConnector};

/// A plain TCP connection to `addr`, each connect waiting `timeout_ms`.
pub fn tcp(addr: SocketAddr, timeout_ms: u64) -> Box<dyn Connector> {
    Box::new(TcpConnector { addr, timeout_ms })
}

/// A plain TCP connection to the Samba fixture on the loopback.
pub fn tcp_to(fx: &Fixture, timeout_ms: u64) -> Box<dyn Connector> {
    tcp(SocketAddr::from((Ipv4Addr::LOCALHOST, fx.port)), timeout_ms)
}

/// A fresh namespace with `/mnt` made, and the mount of
/// `//127.0.0.1/SHARE` there under the options `opts`, as it went.
pub fn try_mount(
    share: &str,
    opts: &str,
    connector: Box<dyn Connector>,
) -> (Vfs, Result<Arc<SuperBlock>, MountError>) {
    let v = Vfs::new_tmpfs("").unwrap();
    v.mkdir(b"/mnt", 0o755).unwrap();
    let sb = cifs::mount(
        &v,
        &format!("//127.0.0.1/{share}"),
        b"/mnt",
        opts,
        connector,
        Box::new(StdClock::default()),
    );
    (v, sb)
}

/// [`try_mount`], panicking with the options and the error if it failed.
pub fn mount(share: &str, opts: &str, connector: Box<dyn Connector>) -> (Vfs, Arc<SuperBlock>) {
    let (v, sb) = try_mount(share, opts, connector);
    (v, sb.unwrap_or_else(|e| panic!("mount {opts}: {e}")))
}

/// The Samba fixture's share mounted as its user, `opts` after the
/// credentials, over TCP with `timeout_ms` ([`mount`]).
///
/// smbd of the Samba fixture has, rarely and only under load, answered a
/// mount with STATUS_NO_MEMORY (0xc0000017) that no rerun reproduced:
/// that one answer gets its log tail printed and one more mount, so the
/// test judges the client and the log keeps the server's side; a second
/// such answer fails the test.
pub fn mount_samba(fx: &Fixture, opts: &str, timeout_ms: u64) -> (Vfs, Arc<SuperBlock>) {
    let o = format!("username={},password={},{opts}", fx.user, fx.password);
    let (v, sb) = try_mount(&fx.share, &o, tcp_to(fx, timeout_ms));
    match sb {
        Ok(sb) => (v, sb),
        Err(e) if e.to_string().contains("0xc0000017") => {
            eprintln!(
                "mount_samba: smbd answered STATUS_NO_MEMORY ({e}); mounting once more. smbd's log tail:\n{}",
                fx.log_tail(40)
            );
            mount(&fx.share, &o, tcp_to(fx, timeout_ms))
        }
        Err(e) => panic!("mount {o}: {e}"),
    }
}
