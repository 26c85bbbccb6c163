//! PCI configuration space through the legacy I/O ports (configuration
//! mechanism #1: address to 0xCF8, data at 0xCFC), wrapped as the
//! `virtio-drivers` crate's [`ConfigurationAccess`] so the generic PCI code
//! in `crate::drivers::pci` can enumerate buses and read BARs and
//! capabilities. QEMU's q35 (and i440fx) answer it for buses 0..=255, the
//! first 256 bytes of each function.
//!
//! Touches: I/O ports 0xCF8/0xCFC only, under one spinlock (an address
//! write and its data access must not interleave with another CPU's).

use ::x86_64::instructions::port::Port;
use spin::Mutex;
use virtio_drivers::transport::pci::bus::{ConfigurationAccess, DeviceFunction};

const CONFIG_ADDRESS: u16 = 0xcf8;
const CONFIG_DATA: u16 = 0xcfc;

/// Serialises address/data pairs across CPUs.
static PORT_LOCK: Mutex<()> = Mutex::new(());

/// Configuration mechanism #1 over I/O ports.
#[derive(Debug, Default)]
pub struct PortCam;

fn address(df: DeviceFunction, offset: u8) -> u32 {
    0x8000_0000
        | (df.bus as u32) << 16
        | ((df.device as u32) & 0x1f) << 11
        | ((df.function as u32) & 0x7) << 8
        | (offset as u32 & 0xfc)
}

impl ConfigurationAccess for PortCam {
    fn read_word(&self, df: DeviceFunction, register_offset: u8) -> u32 {
        let _g = PORT_LOCK.lock();
        // SAFETY: 0xCF8/0xCFC are the PCI configuration ports; selecting a
        // register and reading it touches no kernel memory, and the lock
        // keeps the address/data pair atomic.
        unsafe {
            Port::<u32>::new(CONFIG_ADDRESS).write(address(df, register_offset));
            Port::<u32>::new(CONFIG_DATA).read()
        }
    }

    fn write_word(&mut self, df: DeviceFunction, register_offset: u8, data: u32) {
        let _g = PORT_LOCK.lock();
        // SAFETY: as in `read_word`; the caller (generic PCI code) writes
        // only the command register and BARs of devices it drives, which
        // cannot make the device write kernel memory before a driver hands
        // it DMA addresses.
        unsafe {
            Port::<u32>::new(CONFIG_ADDRESS).write(address(df, register_offset));
            Port::<u32>::new(CONFIG_DATA).write(data);
        }
    }

    unsafe fn unsafe_clone(&self) -> Self {
        PortCam
    }
}
