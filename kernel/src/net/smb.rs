//! The fs crate's SMB seams over the guest stack: [`SmbTransport`] (SMB2
//! messages with the 4-byte direct-TCP framing over a [`TcpStream`]),
//! [`SmbConnector`] (a fresh connection per connect or reconnect) and
//! [`KernelClock`] (monotonic ms from the TSC, a FILETIME, RDSEED/RDRAND
//! entropy, and whether it fell back to the TSC).
//!
//! Touches: `crate::net::tcp`, `crate::time`, `crate::arch::rand`.

use alloc::boxed::Box;
use alloc::vec::Vec;
use core::sync::atomic::{AtomicU64, Ordering};

use smb::transport::{frame_len, Clock, Connector, Transport, TransportError};
use smb::wire::netbios;

use super::tcp::TcpStream;
use super::{deadline, NetError};

/// Time spent waiting in [`SmbTransport::recv`] and bytes received, for
/// the report: how much of a listing is the link, how much the client.
pub static RECV_NS: AtomicU64 = AtomicU64::new(0);
/// Bytes of SMB messages received.
pub static RECV_BYTES: AtomicU64 = AtomicU64::new(0);

/// How long a send may wait for socket buffer space.
const SEND_TIMEOUT_MS: u64 = 30_000;

fn transport_err(e: NetError) -> TransportError {
    match e {
        NetError::Timeout => TransportError::Timeout,
        NetError::Closed => TransportError::Closed,
        NetError::ConnectFailed => TransportError::Connect,
        _ => TransportError::Io,
    }
}

/// One SMB connection over TCP.
pub struct SmbTransport {
    stream: TcpStream,
}

impl Transport for SmbTransport {
    fn send(&mut self, msg: &[u8]) -> Result<(), TransportError> {
        let h = netbios::emit_header(msg.len()).map_err(|_| TransportError::Framing)?;
        let mut v = Vec::with_capacity(4 + msg.len());
        v.extend_from_slice(&h);
        v.extend_from_slice(msg);
        self.stream
            .write_all(&v, SEND_TIMEOUT_MS)
            .map_err(transport_err)
    }

    fn recv(&mut self, timeout_ms: u64) -> Result<Vec<u8>, TransportError> {
        let end = deadline(timeout_ms.max(1));
        let t0 = crate::time::now_ns();
        let r = self.recv_by(end);
        RECV_NS.fetch_add(crate::time::now_ns() - t0, Ordering::Relaxed);
        if let Ok(v) = &r {
            RECV_BYTES.fetch_add(v.len() as u64, Ordering::Relaxed);
        }
        r
    }
}

impl SmbTransport {
    fn recv_by(&mut self, end: u64) -> Result<Vec<u8>, TransportError> {
        loop {
            let mut h = [0u8; 4];
            self.stream
                .read_exact_by(&mut h, end)
                .map_err(transport_err)?;
            let Some(n) = frame_len(h)? else { continue };
            // The server sizes this (up to 8 MiB): a heap that cannot take
            // it fails the exchange (EIO), never the kernel.
            let mut v = Vec::new();
            v.try_reserve_exact(n).map_err(|_| TransportError::Io)?;
            v.resize(n, 0);
            self.stream
                .read_exact_by(&mut v, end)
                .map_err(transport_err)?;
            return Ok(v);
        }
    }
}

/// Connects to one IPv4 address and port.
pub struct SmbConnector {
    pub addr: [u8; 4],
    pub port: u16,
    pub timeout_ms: u64,
}

impl Connector for SmbConnector {
    fn connect(&mut self) -> Result<Box<dyn Transport>, TransportError> {
        let stream = TcpStream::connect(self.addr, self.port, self.timeout_ms).map_err(|e| {
            log::warn!(
                "smb: connect {}.{}.{}.{}:{}: {e}",
                self.addr[0],
                self.addr[1],
                self.addr[2],
                self.addr[3],
                self.port
            );
            match e {
                NetError::Timeout | NetError::ConnectFailed | NetError::Closed => {
                    TransportError::Connect
                }
                e => transport_err(e),
            }
        })?;
        Ok(Box::new(SmbTransport { stream }))
    }
}

/// FILETIME of 2026-01-01T00:00:00Z: the guest has no wall clock, and
/// NTLMv2 only needs a plausible time near the server's.
const FILETIME_BASE: u64 = 134_116_992_000_000_000;

/// The kernel's clock and entropy for the SMB client.
pub struct KernelClock;

impl Clock for KernelClock {
    fn now_ms(&self) -> u64 {
        crate::time::now_ns() / 1_000_000
    }
    fn filetime(&self) -> u64 {
        FILETIME_BASE + crate::time::now_ns() / 100
    }
    fn fill_random(&self, buf: &mut [u8]) {
        crate::arch::rand::fill(buf);
    }
    fn weak_random(&self) -> Option<&'static str> {
        let s = crate::arch::rand::source();
        (!s.cryptographic()).then(|| s.name())
    }
}
