//! Blocking TCP for kernel clients, with timeouts: [`TcpStream::connect`],
//! [`TcpStream::write_all`], [`TcpStream::read`] and
//! [`TcpStream::read_exact`], each polling the stack until done or until
//! its deadline. Nagle and delayed ACKs are off (request/response traffic
//! such as SMB wants each message on the wire at once).
//!
//! Touches: the stack lock of `crate::net` (taken and released around each
//! poll, never held while waiting).

use alloc::vec;

use smoltcp::iface::SocketHandle;
use smoltcp::socket::tcp::{Socket, SocketBuffer, State};
use smoltcp::wire::IpAddress;

use super::{deadline, wait_until, with_stack, NetError};

/// Receive and send buffer size per socket (window scaling beyond 64 KiB).
const BUF_SIZE: usize = 256 * 1024;

/// A connected TCP stream. Dropping it aborts the connection.
pub struct TcpStream {
    handle: SocketHandle,
}

impl TcpStream {
    /// Connect to `addr:port`, waiting at most `timeout_ms`.
    pub fn connect(addr: [u8; 4], port: u16, timeout_ms: u64) -> Result<TcpStream, NetError> {
        let end = deadline(timeout_ms);
        let handle = with_stack(|s| {
            let mut sock = Socket::new(
                SocketBuffer::new(vec![0u8; BUF_SIZE]),
                SocketBuffer::new(vec![0u8; BUF_SIZE]),
            );
            sock.set_nagle_enabled(false);
            sock.set_ack_delay(None);
            let local = s.next_port;
            s.next_port = if s.next_port >= 65000 {
                49152
            } else {
                s.next_port + 1
            };
            let [a, b, c, d] = addr;
            sock.connect(s.iface.context(), (IpAddress::v4(a, b, c, d), port), local)
                .map_err(|_| NetError::Socket)?;
            Ok(s.sockets.add(sock))
        })??;
        let stream = TcpStream { handle };
        wait_until(end, |s| {
            let sock = s.sockets.get::<Socket>(handle);
            match sock.state() {
                State::Established => Some(Ok(())),
                State::Closed | State::TimeWait | State::Closing | State::CloseWait => {
                    Some(Err(NetError::ConnectFailed))
                }
                _ => None,
            }
        })?;
        Ok(stream)
    }

    /// Send all of `data`, waiting at most `timeout_ms` for buffer space.
    pub fn write_all(&mut self, data: &[u8], timeout_ms: u64) -> Result<(), NetError> {
        let end = deadline(timeout_ms);
        let h = self.handle;
        let mut sent = 0;
        wait_until(end, |s| {
            let sock = s.sockets.get_mut::<Socket>(h);
            if !sock.may_send() {
                return Some(Err(NetError::Closed));
            }
            if sock.can_send() {
                match sock.send_slice(&data[sent..]) {
                    Ok(n) => sent += n,
                    Err(_) => return Some(Err(NetError::Closed)),
                }
            }
            if sent == data.len() {
                // Push it out now rather than at the next poll.
                s.poll();
                Some(Ok(()))
            } else {
                None
            }
        })
    }

    /// Read what has arrived (at least one byte), waiting at most
    /// `timeout_ms`; `Ok(0)` when the peer closed and nothing is left.
    #[allow(dead_code)] // API for kernel clients; the SMB transport reads whole frames.
    pub fn read(&mut self, buf: &mut [u8], timeout_ms: u64) -> Result<usize, NetError> {
        self.read_by(buf, deadline(timeout_ms))
    }

    fn read_by(&mut self, buf: &mut [u8], end: u64) -> Result<usize, NetError> {
        let h = self.handle;
        if buf.is_empty() {
            return Ok(0);
        }
        wait_until(end, |s| {
            let sock = s.sockets.get_mut::<Socket>(h);
            if sock.can_recv() {
                return Some(sock.recv_slice(buf).map_err(|_| NetError::Closed));
            }
            if !sock.may_recv() {
                return Some(Ok(0));
            }
            None
        })
    }

    /// Fill `buf` completely before the deadline (`time::now_ns` value).
    pub fn read_exact_by(&mut self, buf: &mut [u8], end: u64) -> Result<(), NetError> {
        let mut got = 0;
        while got < buf.len() {
            match self.read_by(&mut buf[got..], end)? {
                0 => return Err(NetError::Closed),
                n => got += n,
            }
        }
        Ok(())
    }
}

impl Drop for TcpStream {
    fn drop(&mut self) {
        let h = self.handle;
        // Not up means nothing to clean; the error needs no report.
        let _ = with_stack(|s| {
            s.sockets.get_mut::<Socket>(h).abort();
            s.poll();
            s.sockets.remove(h);
        });
    }
}
