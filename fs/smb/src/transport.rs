//! The transport seam: how the connection state machine moves whole SMB2
//! messages, plus the clock/entropy it is given.
//!
//! [`Transport`] sends one message (or compound chain) and receives one,
//! adding and removing the 4-byte direct-TCP framing itself; a
//! [`Connector`] makes a fresh transport for each (re)connect. Implementors:
//! [`TcpTransport`] over `std::net::TcpStream` (feature `std`), the smoltcp
//! socket in the kernel, and the test doubles here — [`FnTransport`], a
//! scripted fake server, and [`FaultInjector`], which wraps any transport to
//! drop the connection, swallow replies or corrupt bytes (the role smoltcp's
//! fault injector plays for devices).

use crate::wire::netbios::{self, FrameHeader};
use alloc::boxed::Box;
use alloc::sync::Arc;
use alloc::vec::Vec;
use core::fmt;
use core::sync::atomic::{AtomicBool, AtomicU32, AtomicUsize, Ordering};

/// Why a transport operation failed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TransportError {
    /// Nothing (or not a whole frame) arrived in time.
    Timeout,
    /// The peer closed the connection or it was reset.
    Closed,
    /// Could not connect.
    Connect,
    /// Bad framing or a frame over the size limit.
    Framing,
    /// Another I/O failure.
    Io,
}

impl fmt::Display for TransportError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let s = match self {
            TransportError::Timeout => "timed out",
            TransportError::Closed => "connection closed",
            TransportError::Connect => "connect failed",
            TransportError::Framing => "bad framing",
            TransportError::Io => "I/O error",
        };
        f.write_str(s)
    }
}

/// Largest message the client accepts (8 MiB reads plus headers).
pub const MAX_MESSAGE: usize = 8 * 1024 * 1024 + 4096;

/// A connected byte stream carrying SMB2 messages.
pub trait Transport: Send {
    /// Sends one message or compound chain (without framing).
    fn send(&mut self, msg: &[u8]) -> Result<(), TransportError>;
    /// Receives one message or chain, waiting at most `timeout_ms`.
    fn recv(&mut self, timeout_ms: u64) -> Result<Vec<u8>, TransportError>;
}

/// Makes a new connection to the server, for the first connect and every
/// reconnect.
pub trait Connector: Send {
    fn connect(&mut self) -> Result<Box<dyn Transport>, TransportError>;
}

/// Time and entropy, passed in explicitly (the state machine reads no
/// global clock).
pub trait Clock: Send {
    /// Monotonic milliseconds.
    fn now_ms(&self) -> u64;
    /// Wall time as a FILETIME (100 ns since 1601), for NTLMv2.
    fn filetime(&self) -> u64;
    /// Fills `buf` with unpredictable bytes (client challenge, preauth
    /// salt, ClientGuid, nonce salt): on 3.0.x a session's fresh keys rest
    /// on the client challenge alone, so this must be a cryptographic
    /// generator wherever signing or sealing is wanted.
    fn fill_random(&self, buf: &mut [u8]);
    /// Why [`Clock::fill_random`] is *not* a cryptographic generator here
    /// (`None`: it is). Once `Some`, it must stay `Some`: the handshake
    /// asks it again after its last draw, to see a source that failed
    /// during the draws. The cifs mount refuses `sign` and `seal`, and a
    /// session a server makes sign or seal, on a weak source unless the
    /// user opts in (`weakrandom`).
    fn weak_random(&self) -> Option<&'static str> {
        None
    }
}

/// A transport whose "server" is a function from each sent message to the
/// frames it answers with. Test double.
pub struct FnTransport<F: FnMut(&[u8]) -> Vec<Vec<u8>> + Send> {
    server: F,
    queue: alloc::collections::VecDeque<Vec<u8>>,
}

impl<F: FnMut(&[u8]) -> Vec<Vec<u8>> + Send> FnTransport<F> {
    pub fn new(server: F) -> Self {
        FnTransport {
            server,
            queue: Default::default(),
        }
    }
}

impl<F: FnMut(&[u8]) -> Vec<Vec<u8>> + Send> Transport for FnTransport<F> {
    fn send(&mut self, msg: &[u8]) -> Result<(), TransportError> {
        let replies = (self.server)(msg);
        self.queue.extend(replies);
        Ok(())
    }
    fn recv(&mut self, _timeout_ms: u64) -> Result<Vec<u8>, TransportError> {
        self.queue.pop_front().ok_or(TransportError::Timeout)
    }
}

/// Shared switches of a [`FaultInjector`]; flip them from a test while the
/// connection runs.
#[derive(Debug, Default)]
pub struct Faults {
    /// Fail the next send with `Closed` (the connection "drops").
    pub drop_next_send: AtomicBool,
    /// Discard every received frame (the server "goes silent").
    pub swallow: AtomicBool,
    /// XOR this byte (if nonzero) into the next received frame at
    /// `corrupt_at` (index taken modulo the frame length).
    pub corrupt_xor: AtomicU32,
    pub corrupt_at: AtomicUsize,
    /// Truncate the next received frame to this length (usize::MAX: off).
    pub truncate_to: AtomicUsize,
}

impl Faults {
    /// All switches off.
    pub fn new() -> Arc<Self> {
        let f = Faults::default();
        f.truncate_to.store(usize::MAX, Ordering::SeqCst);
        Arc::new(f)
    }
}

/// Wraps a transport and applies [`Faults`].
pub struct FaultInjector {
    inner: Box<dyn Transport>,
    faults: Arc<Faults>,
}

impl FaultInjector {
    pub fn new(inner: Box<dyn Transport>, faults: Arc<Faults>) -> Self {
        FaultInjector { inner, faults }
    }
}

impl Transport for FaultInjector {
    fn send(&mut self, msg: &[u8]) -> Result<(), TransportError> {
        if self.faults.drop_next_send.swap(false, Ordering::SeqCst) {
            return Err(TransportError::Closed);
        }
        self.inner.send(msg)
    }
    fn recv(&mut self, timeout_ms: u64) -> Result<Vec<u8>, TransportError> {
        let mut f = self.inner.recv(timeout_ms)?;
        if self.faults.swallow.load(Ordering::SeqCst) {
            return Err(TransportError::Timeout);
        }
        let x = self.faults.corrupt_xor.swap(0, Ordering::SeqCst) as u8;
        if x != 0 && !f.is_empty() {
            let i = self.faults.corrupt_at.load(Ordering::SeqCst) % f.len();
            f[i] ^= x;
        }
        let t = self.faults.truncate_to.swap(usize::MAX, Ordering::SeqCst);
        if t < f.len() {
            f.truncate(t);
        }
        Ok(f)
    }
}

/// Splits a received 4-byte frame header: `Ok(None)` for a keep-alive.
pub fn frame_len(h: [u8; 4]) -> Result<Option<usize>, TransportError> {
    match netbios::parse_header(h) {
        Ok(FrameHeader::Message(n)) if n <= MAX_MESSAGE => Ok(Some(n)),
        Ok(FrameHeader::Keepalive(0)) => Ok(None),
        _ => Err(TransportError::Framing),
    }
}

#[cfg(feature = "std")]
pub use self::tcp::{StdClock, TcpConnector, TcpTransport};

#[cfg(feature = "std")]
mod tcp {
    //! std TCP transport and clock for host use.
    use super::*;
    use std::io::{ErrorKind, Read, Write};
    use std::net::{SocketAddr, TcpStream};
    use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

    /// SMB2 over a `TcpStream` with direct-TCP framing.
    pub struct TcpTransport {
        stream: TcpStream,
    }

    fn io_err(e: std::io::Error) -> TransportError {
        match e.kind() {
            ErrorKind::WouldBlock | ErrorKind::TimedOut => TransportError::Timeout,
            ErrorKind::UnexpectedEof
            | ErrorKind::ConnectionReset
            | ErrorKind::ConnectionAborted
            | ErrorKind::BrokenPipe
            | ErrorKind::NotConnected => TransportError::Closed,
            _ => TransportError::Io,
        }
    }

    impl TcpTransport {
        /// Connects with a timeout and TCP_NODELAY.
        pub fn connect(addr: SocketAddr, timeout_ms: u64) -> Result<Self, TransportError> {
            let stream =
                TcpStream::connect_timeout(&addr, Duration::from_millis(timeout_ms.max(1)))
                    .map_err(|_| TransportError::Connect)?;
            stream.set_nodelay(true).map_err(io_err)?;
            Ok(TcpTransport { stream })
        }

        fn read_full(&mut self, buf: &mut [u8], deadline: Instant) -> Result<(), TransportError> {
            let mut got = 0;
            while got < buf.len() {
                let now = Instant::now();
                if now >= deadline {
                    return Err(TransportError::Timeout);
                }
                self.stream
                    .set_read_timeout(Some(deadline - now))
                    .map_err(io_err)?;
                match self.stream.read(&mut buf[got..]) {
                    Ok(0) => return Err(TransportError::Closed),
                    Ok(n) => got += n,
                    Err(e) if e.kind() == ErrorKind::Interrupted => {}
                    Err(e) => return Err(io_err(e)),
                }
            }
            Ok(())
        }
    }

    impl Transport for TcpTransport {
        fn send(&mut self, msg: &[u8]) -> Result<(), TransportError> {
            let h = netbios::emit_header(msg.len()).map_err(|_| TransportError::Framing)?;
            let mut v = Vec::with_capacity(4 + msg.len());
            v.extend_from_slice(&h);
            v.extend_from_slice(msg);
            self.stream.write_all(&v).map_err(io_err)
        }

        fn recv(&mut self, timeout_ms: u64) -> Result<Vec<u8>, TransportError> {
            let deadline = Instant::now() + Duration::from_millis(timeout_ms.max(1));
            loop {
                let mut h = [0u8; 4];
                self.read_full(&mut h, deadline)?;
                let Some(n) = frame_len(h)? else { continue };
                let mut v = vec![0u8; n];
                self.read_full(&mut v, deadline)?;
                return Ok(v);
            }
        }
    }

    /// Connects to one address.
    pub struct TcpConnector {
        pub addr: SocketAddr,
        pub timeout_ms: u64,
    }

    impl Connector for TcpConnector {
        fn connect(&mut self) -> Result<Box<dyn Transport>, TransportError> {
            Ok(Box::new(TcpTransport::connect(self.addr, self.timeout_ms)?))
        }
    }

    /// The host clock; entropy from std's randomly keyed hasher.
    pub struct StdClock {
        start: Instant,
    }

    impl Default for StdClock {
        fn default() -> Self {
            StdClock {
                start: Instant::now(),
            }
        }
    }

    impl Clock for StdClock {
        fn now_ms(&self) -> u64 {
            self.start.elapsed().as_millis() as u64
        }
        fn filetime(&self) -> u64 {
            let d = SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .unwrap_or_default();
            116_444_736_000_000_000u64 + (d.as_nanos() / 100) as u64
        }
        /// The OS's CSPRNG (`getrandom`: getrandom(2) on Linux). Should it
        /// fail (no such syscall, a seccomp filter), std's per-process
        /// SipHash keys, which the OS seeded, stretched over a counter:
        /// unpredictable to the network, but said so by
        /// [`Clock::weak_random`].
        fn fill_random(&self, buf: &mut [u8]) {
            if getrandom::fill(buf).is_ok() {
                return;
            }
            use std::collections::hash_map::RandomState;
            use std::hash::{BuildHasher, Hasher};
            for (i, chunk) in buf.chunks_mut(8).enumerate() {
                let mut h = RandomState::new().build_hasher();
                h.write_usize(i);
                h.write_u128(Instant::now().elapsed().as_nanos());
                let v = h.finish().to_le_bytes();
                chunk.copy_from_slice(&v[..chunk.len()]);
            }
        }
        fn weak_random(&self) -> Option<&'static str> {
            let mut probe = [0u8; 1];
            getrandom::fill(&mut probe)
                .err()
                .map(|_| "getrandom failed: std's SipHash keys over a counter")
        }
    }
}
