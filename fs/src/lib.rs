//! A Linux-shaped VFS lookup path as a `no_std + alloc` library.
//!
//! The same code runs inside the research kernel and on host threads (tests,
//! benchmarks, `vfsh`); the differences sit behind [`platform::Platform`].
//!
//! - [`sync`]: seqcounts, lockref, RCU pointers and lists (the only module allowed raw-pointer code).
//! - [`vfs`]: the path-based API (stat, open, mkdir, rename, mount ...).
//! - [`types`]: what a filesystem and the path API share (file type, stat,
//!   dirents, open flags).
//! - [`fstype`]: the filesystem types, [`fstype::tmpfs`] and [`fstype::cifs`]
//!   (the latter over the `smb` protocol crate, `fs/smb/`).
//! - [`stats`], [`trace`]: per-CPU counters and the lookup trace.
//! - [`poison`]: canaries that let RCU readers notice freed memory.
//! - [`errno`]: Linux error numbers.
//! - [`mem`], [`fault`]: memory admission (`ENOMEM` instead of an abort) and
//!   allocation fault injection.
//! - [`tools`] (feature `std`): vfsh's engine and the step-through page,
//!   above the core and below the binaries.
#![cfg_attr(not(any(feature = "std", test)), no_std)]
// The unsafe fence: raw-pointer code only in `sync` (allowed below, where
// every block carries its SAFETY comment); everything else is safe Rust.
#![deny(unsafe_code)]

extern crate alloc;

pub mod dcache;
pub mod errno;
pub mod fault;
pub mod fstype;
pub mod inode;
pub mod mem;
pub mod mount;
pub mod namei;
pub mod platform;
pub mod poison;
pub mod simple_xattr;
pub mod stats;
#[allow(unsafe_code)]
pub mod sync;
pub mod trace;
pub mod types;
pub mod vfs;
pub mod walk_event;
pub mod xattr;

pub use errno::{Errno, KResult};

/// The platform used when none was installed ([`platform::get`]): with
/// `std`, the host platform (thread slots as CPUs, epoch-based RCU).
#[cfg(all(feature = "std", not(loom)))]
fn default_platform() -> &'static dyn platform::Platform {
    sync::host::HostPlatform::global()
}

/// Under `--cfg loom` the crate runs only inside loom models, on the model
/// platform (its state lives per loom execution).
#[cfg(loom)]
fn default_platform() -> &'static dyn platform::Platform {
    &sync::model::ModelPlatform
}
