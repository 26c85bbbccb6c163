//! Device drivers: PCI enumeration ([`pci`]) and network devices
//! ([`net`]). Drivers are safe code; configuration-space and MMIO access go
//! through `crate::arch`, DMA memory through `crate::mm::dma`.

pub mod net;
pub mod pci;
