//! Host-side launchers and fixtures: everything that starts QEMU or a
//! process the guest talks to.
//!
//! - [`runner`]: builds and runs the QEMU command line for our kernel.
//! - [`samba`]: a loopback-only Samba server started for a test or benchmark.
//! - [`impacket`]: impacket's smbserver.py (SMB 2.0.2 only) as a second server for tests.
//! - [`ksmbd`]: Linux's in-kernel SMB server (ksmbd) in a QEMU Linux guest, on a
//!   forwarded loopback port.
//! - [`process`]: the guard the servers run under (spawn, wait for the
//!   port, SIGTERM and reap on drop).
//! - [`hostile`]: a hostile SMB2 server scriptable per reply, and a
//!   man in the middle that strikes dialects from NEGOTIATE.
//! - [`relay`]: the latency relay (one-way delay, SMB2 command counting, faults).
//! - [`linuxref`]: the Linux reference guest (Debian kernel + busybox + statneg).
//! - [`eashare`]: the share and the line of `make eacache-check`, for
//!   our client's lines and the Linux client's.
//! - [`fixtures`]: what a test does when its fixture is missing
//!   (`REQUIRE_FIXTURES=1`: fail; otherwise skip, and count the skips).
#![deny(unsafe_code)]

extern crate alloc;

pub mod eashare;
pub mod fixtures;
pub mod hostile;
pub mod impacket;
pub mod ksmbd;
pub mod linuxref;
pub mod process;
pub mod relay;
pub mod runner;
pub mod samba;
