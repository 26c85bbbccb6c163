//! The guest's TCP/IP stack: one `smoltcp` interface on the virtio-net
//! device, a static IPv4 address on QEMU's user network (10.0.2.15/24,
//! gateway 10.0.2.2: what QEMU's DHCP server would hand out), polled — no
//! interrupts: every blocking call in [`tcp`] polls the interface until its
//! condition holds or its deadline passes.
//!
//! Layout: this file owns the stack (device + interface + socket set behind
//! one spinlock, taken only by the CPU that does network I/O — today the
//! boot CPU); [`tcp`] is the blocking socket API with timeouts for kernel
//! clients; [`smb`] implements the fs crate's SMB `Transport`, `Connector`
//! and `Clock` over it.
//!
//! Touches: the virtio-net device (through `crate::drivers`), the heap,
//! `crate::time`; never sleeps, spins with `pause` while waiting.

pub mod smb;
pub mod tcp;

use alloc::vec::Vec;
use core::fmt;

use smoltcp::iface::{Config, Interface, SocketSet};
use smoltcp::time::Instant;
use smoltcp::wire::{EthernetAddress, HardwareAddress, IpAddress, IpCidr, Ipv4Address};
use spin::Mutex;

use crate::drivers::net::virtio::{ProbeError, VirtioNet};

/// The guest's address on QEMU's user network.
pub const GUEST_ADDR: [u8; 4] = [10, 0, 2, 15];
/// Prefix length of that network.
pub const PREFIX_LEN: u8 = 24;
/// QEMU's user-network gateway.
pub const GATEWAY: [u8; 4] = [10, 0, 2, 2];

/// Why a network operation failed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NetError {
    /// `net::init` has not run or failed.
    NotUp,
    /// No virtio-net device, or it would not start.
    Device(ProbeError),
    /// The deadline passed.
    Timeout,
    /// The peer refused or the connection attempt failed.
    ConnectFailed,
    /// The peer closed the connection (or reset it).
    Closed,
    /// smoltcp rejected the request (no free port, bad state).
    Socket,
}

impl fmt::Display for NetError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            NetError::NotUp => write!(f, "network not initialised"),
            NetError::Device(e) => write!(f, "{e}"),
            NetError::Timeout => write!(f, "timed out"),
            NetError::ConnectFailed => write!(f, "connection refused or failed"),
            NetError::Closed => write!(f, "connection closed by peer"),
            NetError::Socket => write!(f, "socket error"),
        }
    }
}

/// Device, interface and sockets: everything behind the stack lock.
pub(crate) struct Stack {
    pub(crate) dev: VirtioNet,
    pub(crate) iface: Interface,
    pub(crate) sockets: SocketSet<'static>,
    pub(crate) next_port: u16,
}

impl Stack {
    /// Move frames both ways and run smoltcp's timers.
    pub(crate) fn poll(&mut self) {
        self.iface.poll(now(), &mut self.dev, &mut self.sockets);
    }
}

static STACK: Mutex<Option<Stack>> = Mutex::new(None);

/// smoltcp's clock: microseconds since boot.
pub(crate) fn now() -> Instant {
    Instant::from_micros((crate::time::now_ns() / 1000) as i64)
}

/// Start the first virtio-net device and configure the interface.
/// Returns the MAC address. Calling it again is a no-op.
pub fn init() -> Result<[u8; 6], NetError> {
    let mut guard = STACK.lock();
    if let Some(s) = guard.as_ref() {
        return Ok(s.dev.mac());
    }
    let mut dev = VirtioNet::probe().map_err(NetError::Device)?;
    let mac = dev.mac();
    let mut config = Config::new(HardwareAddress::Ethernet(EthernetAddress(mac)));
    config.random_seed = crate::arch::rand::u64();
    let mut iface = Interface::new(config, &mut dev, now());
    let [a, b, c, d] = GUEST_ADDR;
    iface.update_ip_addrs(|addrs| {
        // A fresh interface has room for its first address.
        let _ = addrs.push(IpCidr::new(IpAddress::v4(a, b, c, d), PREFIX_LEN));
    });
    let [a, b, c, d] = GATEWAY;
    iface
        .routes_mut()
        .add_default_ipv4_route(Ipv4Address::new(a, b, c, d))
        .map_err(|_| NetError::Socket)?;
    let next_port = 49152 + (crate::arch::rand::u64() % 8192) as u16;
    *guard = Some(Stack {
        dev,
        iface,
        sockets: SocketSet::new(Vec::new()),
        next_port,
    });
    log::info!(
        "net: virtio-net {:02x}:{:02x}:{:02x}:{:02x}:{:02x}:{:02x}, {}.{}.{}.{}/{PREFIX_LEN} via {}.{}.{}.{}",
        mac[0], mac[1], mac[2], mac[3], mac[4], mac[5],
        GUEST_ADDR[0], GUEST_ADDR[1], GUEST_ADDR[2], GUEST_ADDR[3],
        GATEWAY[0], GATEWAY[1], GATEWAY[2], GATEWAY[3]
    );
    Ok(mac)
}

/// Run `f` on the stack (after a poll). `NotUp` before [`init`].
pub(crate) fn with_stack<R>(f: impl FnOnce(&mut Stack) -> R) -> Result<R, NetError> {
    let mut guard = STACK.lock();
    let s = guard.as_mut().ok_or(NetError::NotUp)?;
    s.poll();
    Ok(f(s))
}

/// Poll until `f` answers or `deadline_ns` (of `time::now_ns`) passes.
pub(crate) fn wait_until<T>(
    deadline_ns: u64,
    mut f: impl FnMut(&mut Stack) -> Option<Result<T, NetError>>,
) -> Result<T, NetError> {
    loop {
        if let Some(r) = with_stack(&mut f)? {
            return r;
        }
        if crate::time::now_ns() >= deadline_ns {
            return Err(NetError::Timeout);
        }
        for _ in 0..64 {
            crate::arch::processor::pause();
        }
    }
}

/// Frame counters of the device (for reports).
pub fn counters() -> Option<crate::drivers::net::virtio::Counters> {
    STACK.lock().as_ref().map(|s| s.dev.counters)
}

/// A deadline `timeout_ms` from now.
pub fn deadline(timeout_ms: u64) -> u64 {
    crate::time::now_ns().saturating_add(timeout_ms.saturating_mul(1_000_000))
}
