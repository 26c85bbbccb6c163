//! PCI enumeration: walks bus 0 (where QEMU's q35 puts `-device` cards on
//! the root complex) through the configuration mechanism in
//! `crate::arch::pci`, lists functions, and finds virtio devices
//! by type. The firmware that ran before the PVH entry (SeaBIOS) already
//! assigned BARs; this module enables memory decoding and bus mastering on
//! the device it hands out and refuses devices whose memory BARs lie above
//! the kernel's 4 GiB identity map.
//!
//! Touches: PCI configuration space only (no locks beyond arch's port lock).

use alloc::vec::Vec;

use virtio_drivers::transport::pci::bus::{
    BarInfo, Command, DeviceFunction, DeviceFunctionInfo, PciRoot,
};
use virtio_drivers::transport::pci::virtio_device_type;
use virtio_drivers::transport::DeviceType;

use crate::arch::pci::PortCam;

/// The configuration-space accessor used for the root bus.
pub type Root = PciRoot<PortCam>;

/// A root complex handle (bus 0).
pub fn root() -> Root {
    PciRoot::new(PortCam)
}

/// Every function on bus 0.
pub fn devices(root: &Root) -> Vec<(DeviceFunction, DeviceFunctionInfo)> {
    root.enumerate_bus(0).collect()
}

/// Why a device cannot be used.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PciError {
    /// No function of the wanted kind on bus 0.
    NotFound,
    /// A memory BAR is unassigned or lies outside the identity map.
    BadBar(u8, u64),
    /// The BARs could not be read.
    BarRead,
}

impl core::fmt::Display for PciError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            PciError::NotFound => write!(f, "no such PCI device on bus 0"),
            PciError::BadBar(i, a) => {
                write!(f, "BAR{i} at {a:#x} is unassigned or above 4 GiB")
            }
            PciError::BarRead => write!(f, "cannot read the device's BARs"),
        }
    }
}

/// The first virtio function of type `kind` on bus 0, with memory decoding
/// and bus mastering enabled and its memory BARs checked.
pub fn find_virtio(root: &mut Root, kind: DeviceType) -> Result<DeviceFunction, PciError> {
    let (df, info) = devices(root)
        .into_iter()
        .find(|(_, info)| virtio_device_type(info) == Some(kind))
        .ok_or(PciError::NotFound)?;
    log::info!("pci: {df} {info}");
    check_bars(root, df)?;
    root.set_command(
        df,
        Command::IO_SPACE | Command::MEMORY_SPACE | Command::BUS_MASTER,
    );
    Ok(df)
}

fn check_bars(root: &mut Root, df: DeviceFunction) -> Result<(), PciError> {
    let bars = root.bars(df).map_err(|_| PciError::BarRead)?;
    for (i, bar) in bars.iter().enumerate() {
        if let Some(BarInfo::Memory { address, size, .. }) = bar {
            if *size == 0 {
                continue;
            }
            if *address == 0 || !crate::mm::dma::identity_mapped(*address, *size as usize) {
                return Err(PciError::BadBar(i as u8, *address));
            }
            log::debug!("pci: {df} BAR{i} memory {address:#x}+{size:#x}");
        }
    }
    Ok(())
}
