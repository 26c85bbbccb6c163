//! virtio-net over the virtio PCI transport (the `virtio-drivers` crate's
//! `VirtIONet`), exposed as a polled `smoltcp::phy::Device`: no interrupts,
//! the network stack polls the used rings from its blocking calls.
//!
//! Receive buffers ([`QUEUE_SIZE`] of [`BUF_LEN`] bytes) are posted at
//! start-up; each received frame is copied out and its buffer reposted at
//! once (so smoltcp's receive and reply tokens never share the device); a transmit
//! copies smoltcp's frame into a fresh buffer and waits for the device to
//! take it (QEMU completes transmits synchronously).
//!
//! Touches: the device's virtqueues (DMA memory from `crate::mm::dma`) and
//! its PCI configuration. Not thread-safe by itself: `crate::net` keeps the
//! device behind its stack lock.

use alloc::vec::Vec;
use smoltcp::phy::{self, DeviceCapabilities, Medium};
use smoltcp::time::Instant;
use virtio_drivers::device::net::VirtIONet;
use virtio_drivers::transport::pci::PciTransport;
use virtio_drivers::transport::DeviceType;

use crate::drivers::pci;
use crate::mm::dma::DmaHal;

/// Descriptors per virtqueue (and receive buffers posted).
pub const QUEUE_SIZE: usize = 64;
/// Bytes per receive buffer: virtio-net header + a 1514-byte frame.
pub const BUF_LEN: usize = 2048;
/// Ethernet MTU offered to smoltcp (frame without FCS).
const MTU: usize = 1514;

/// Frame counters, for the boot log and reports.
#[derive(Clone, Copy, Debug, Default)]
pub struct Counters {
    pub rx_frames: u64,
    pub tx_frames: u64,
    pub rx_errors: u64,
    pub tx_errors: u64,
}

/// A started virtio-net device.
pub struct VirtioNet {
    dev: VirtIONet<DmaHal, PciTransport, QUEUE_SIZE>,
    pub counters: Counters,
}

/// Why the device could not be started.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ProbeError {
    Pci(pci::PciError),
    Transport,
    Device,
}

impl core::fmt::Display for ProbeError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            ProbeError::Pci(e) => write!(f, "virtio-net: {e}"),
            ProbeError::Transport => write!(f, "virtio-net: PCI transport setup failed"),
            ProbeError::Device => write!(f, "virtio-net: device initialisation failed"),
        }
    }
}

impl VirtioNet {
    /// Find the first virtio-net function on PCI bus 0 and start it.
    pub fn probe() -> Result<VirtioNet, ProbeError> {
        let mut root = pci::root();
        let df = pci::find_virtio(&mut root, DeviceType::Network).map_err(ProbeError::Pci)?;
        let transport = PciTransport::new::<DmaHal, _>(&mut root, df).map_err(|e| {
            log::warn!("virtio-net: {e:?}");
            ProbeError::Transport
        })?;
        let dev = VirtIONet::new(transport, BUF_LEN).map_err(|e| {
            log::warn!("virtio-net: {e:?}");
            ProbeError::Device
        })?;
        Ok(VirtioNet {
            dev,
            counters: Counters::default(),
        })
    }

    /// The device's MAC address.
    pub fn mac(&self) -> [u8; 6] {
        self.dev.mac_address()
    }
}

/// A received frame, copied out of its receive buffer (which went back to
/// the device at once, so the transmit token may borrow the device).
pub struct RxToken {
    frame: Vec<u8>,
}

/// Permission to send one frame.
pub struct TxToken<'a> {
    net: &'a mut VirtioNet,
}

impl phy::RxToken for RxToken {
    fn consume<R, F>(self, f: F) -> R
    where
        F: FnOnce(&[u8]) -> R,
    {
        f(&self.frame)
    }
}

impl phy::TxToken for TxToken<'_> {
    fn consume<R, F>(self, len: usize, f: F) -> R
    where
        F: FnOnce(&mut [u8]) -> R,
    {
        let mut tx = self.net.dev.new_tx_buffer(len);
        let r = f(tx.packet_mut());
        match self.net.dev.send(tx) {
            Ok(()) => self.net.counters.tx_frames += 1,
            Err(_) => self.net.counters.tx_errors += 1,
        }
        r
    }
}

impl phy::Device for VirtioNet {
    type RxToken<'a> = RxToken;
    type TxToken<'a> = TxToken<'a>;

    fn receive(&mut self, _ts: Instant) -> Option<(RxToken, TxToken<'_>)> {
        if !self.dev.can_recv() {
            return None;
        }
        match self.dev.receive() {
            Ok(buf) => {
                self.counters.rx_frames += 1;
                let frame = buf.packet().to_vec();
                if self.dev.recycle_rx_buffer(buf).is_err() {
                    self.counters.rx_errors += 1;
                }
                Some((RxToken { frame }, TxToken { net: self }))
            }
            Err(_) => {
                self.counters.rx_errors += 1;
                None
            }
        }
    }

    fn transmit(&mut self, _ts: Instant) -> Option<TxToken<'_>> {
        if self.dev.can_send() {
            Some(TxToken { net: self })
        } else {
            None
        }
    }

    fn capabilities(&self) -> DeviceCapabilities {
        let mut caps = DeviceCapabilities::default();
        caps.medium = Medium::Ethernet;
        caps.max_transmission_unit = MTU;
        caps.max_burst_size = Some(QUEUE_SIZE / 2);
        caps
    }
}
