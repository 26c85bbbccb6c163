//! Host-side launchers and fixtures: everything that starts QEMU or a
//! process the guest talks to.
//!
//! - [`runner`]: builds and runs the QEMU command line for our kernel.
//! - [`samba`]: a loopback-only Samba server started for a test or benchmark.
//! - [`impacket`]: impacket's smbserver.py (SMB 2.0.2 only) as a second server for tests.
//! - [`relay`]: the latency relay (one-way delay, SMB2 command counting, faults).
//! - [`linuxref`]: the Linux reference guest (Debian kernel + busybox + statneg).

pub mod impacket;
pub mod linuxref;
pub mod relay;
pub mod runner;
pub mod samba;
