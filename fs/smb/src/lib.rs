//! SMB2/3 client protocol layer for the `cifs`-like filesystem.
//!
//! Layers, as smoltcp separates wire from sockets:
//! - [`wire`]: byte layouts, a parse/emit form per message; stateless.
//! - [`ntlm`], [`crypto`]: NTLMv2 authentication, signing, key derivation.
//! - [`transport`]: the transport trait (std TCP here, smoltcp in the
//!   guest), a clock/entropy trait, and fault-injecting test doubles.
//! - [`conn`]: the connection/session/tree state machine — credits, message
//!   ids, signing, interim (STATUS_PENDING) replies, reconnect, timeouts.
//! - [`ops`]: what the filesystem layer calls: list a directory, stat,
//!   query the WSL EAs, read a file.
//! - [`counters`]: per-tcon counters (`/proc/fs/cifs/Stats` layout) and the
//!   smb3 trace ring.
//! - [`error`]: what an operation fails with, below every layer that
//!   fails.
//!
//! This file only names the modules and hands their main names on, so
//! that every arrow between the layers runs down.
//!
//! Errors are [`SmbError`] ([`error`]), which keeps the NT status; the cifs
//! filesystem type maps it to a Linux errno at the VFS boundary (this layer
//! knows no errno). Memory admission is the caller's: [`Config::admit`]. Safe code
//! only; allocation only; no global state.
//!
//! A crate of its own (`no_std + alloc`; feature `std` adds the TCP
//! transport and the host clock): it depends on nothing of the VFS.
#![cfg_attr(not(any(feature = "std", test)), no_std)]
#![forbid(unsafe_code)]

extern crate alloc;

pub mod conn;
pub mod counters;
pub mod crypto;
pub mod error;
pub mod ntlm;
pub mod ops;
pub mod remap;
pub mod secret;
pub mod transport;
pub mod wire;

pub use conn::{Config, Connection, Signing};
pub use counters::{TconStats, TraceEvent, TraceKind, TraceRing};
pub use ops::OpenKind;
pub use secret::Secret;
pub use transport::{Clock, Connector, FaultInjector, Faults, Transport, TransportError};
#[cfg(feature = "std")]
pub use transport::{StdClock, TcpConnector, TcpTransport};
pub use wire::dirinfo::DirInfo;
pub use wire::ea::WslEas;
pub use wire::info::FileStat;
pub use wire::WireError;

pub use error::{SmbError, SmbResult, DIALECTS};
