//! A cifs mount whose connection counts its round trips, for the tests
//! that measure what a listing costs (`eacache_check.rs`, `cifs_eabatch.rs`).
//! A round trip is a send after a receive: the frames of one send (the
//! compounds of a batched EA query) are one. Touches only the mount it
//! makes and the server it connects to.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use fs::fstype::cifs::{self, MountError};
use fs::inode::SuperBlock;
use fs::vfs::Vfs;
use smb::transport::{Connector, Transport, TransportError};
use smb::{StdClock, TcpTransport};

struct Counting {
    inner: TcpTransport,
    trips: Arc<AtomicU64>,
    received: bool,
}

impl Transport for Counting {
    fn send(&mut self, msg: &[u8]) -> Result<(), TransportError> {
        if std::mem::take(&mut self.received) {
            self.trips.fetch_add(1, Ordering::Relaxed);
        }
        self.inner.send(msg)
    }
    fn recv(&mut self, timeout_ms: u64) -> Result<Vec<u8>, TransportError> {
        self.received = true;
        self.inner.recv(timeout_ms)
    }
}

struct CountingConnector {
    addr: SocketAddr,
    trips: Arc<AtomicU64>,
}

impl Connector for CountingConnector {
    fn connect(&mut self) -> Result<Box<dyn Transport>, TransportError> {
        Ok(Box::new(Counting {
            inner: TcpTransport::connect(self.addr, 10_000)?,
            trips: self.trips.clone(),
            received: true,
        }))
    }
}

/// A fresh tmpfs root with `//127.0.0.1/share` (at `addr`) mounted on
/// `/mnt` with `opts`; the counter of its round trips, across reconnects.
pub fn mount(
    addr: SocketAddr,
    share: &str,
    opts: &str,
) -> Result<(Vfs, Arc<SuperBlock>, Arc<AtomicU64>), MountError> {
    let v = Vfs::new_tmpfs("").unwrap();
    v.mkdir(b"/mnt", 0o755).unwrap();
    let trips = Arc::new(AtomicU64::new(0));
    let sb = cifs::mount(
        &v,
        &format!("//127.0.0.1/{share}"),
        b"/mnt",
        opts,
        Box::new(CountingConnector {
            addr,
            trips: trips.clone(),
        }),
        Box::new(StdClock::default()),
    )?;
    Ok((v, sb, trips))
}
