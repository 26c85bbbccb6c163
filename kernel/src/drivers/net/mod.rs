//! Network device drivers. Today one: [`virtio`], virtio-net over the PCI
//! transport, exposed as a `smoltcp` device for `crate::net`.

pub mod virtio;
