//! A Linux-shaped VFS lookup path as a `no_std + alloc` library: the dentry
//! cache, the path walk, the inode and mount tables and the filesystems
//! under them, with the locks they take. The same code runs inside the
//! research kernel and on host threads; the differences sit behind
//! [`platform::Platform`].
//!
//! # One walk, in reading order
//!
//! As Linux's `Documentation/filesystems/path-lookup.rst` does, follow one
//! `stat("/a/b/missing")` through the crate; each module is where the walk
//! meets it.
//!
//! 1. [`vfs`]: the system call. [`vfs::Vfs::stat`] takes the path as bytes,
//!    hands it to the walk and answers the inode's attributes or an errno
//!    ([`errno`]: Linux's numbers). Every other call (`open`, `mkdir`,
//!    `rename`, `mount`, the `*xattr` calls of [`xattr`]) starts the same way.
//! 2. [`namei`]: the walk itself, named as in `fs/namei.c`.
//!    `filename_lookup` runs `path_lookupat` in RCU-walk first (no
//!    references, no stores to shared lines): `path_init` takes the root,
//!    `link_path_walk` hands every component but the last to
//!    `walk_component`, `lookup_last` the last, `complete_walk` checks the
//!    end. A sequence check that fails hands the walk over to ref-walk
//!    (`try_to_unlazy`), or the whole walk runs again in ref-walk.
//! 3. [`dcache`]: `walk_component` asks the dentry cache first
//!    (`lookup_fast_rcu`: [`dcache::d_lookup_rcu`] in the hash of (parent,
//!    name), proved by the dentry's `d_seq`). A miss goes to `lookup_slow`
//!    under the directory's `i_rwsem`: `d_alloc_parallel` (the in-lookup
//!    table, `dcache/in_lookup.rs`) gives the name one in-lookup dentry,
//!    the filesystem is asked, [`dcache::d_add`] hashes its answer. What a miss
//!    for a missing name leaves behind (a negative dentry, nothing, or an
//!    ENOENT answered without leaving RCU-walk) is the ENOENT design,
//!    [`dcache::design`]: the research question of this crate.
//! 4. [`inode`]: what a dentry names: the attributes `stat` reads (atomics,
//!    validated with the dentry's `d_seq`), the directory's `i_rwsem`, and
//!    the superblock with its ENOENT design and whether its dcache is
//!    complete. The dcache and the inodes import each other as Linux's
//!    `struct dentry` and `struct inode` do; `inode.rs` says why.
//! 5. [`mount`]: `step_into` crosses onto whatever is mounted on the
//!    dentry: the mount hash keyed by (parent mount, mountpoint), proved
//!    afterwards by `mount_lock`'s count.
//! 6. [`fstype`]: the filesystems the walk asks on a miss and every change
//!    asks first: [`fstype::tmpfs`] (memory; its dcache is complete) and
//!    [`fstype::cifs`] (an SMB2/3 share over the `smb` protocol crate,
//!    `fs/smb/`). [`types`] is what they and the path API share (file type,
//!    `stat`, dirents, open flags); [`simple_xattr`] their attribute store.
//!
//! # What the walk stands on
//!
//! - [`sync`]: the seqcounts (`d_seq`, `rename_lock`, `mount_lock`), the
//!   lockref, the spinlocks, RCU pointers and lists; the only module with
//!   raw-pointer code.
//! - [`platform`]: the CPU id, the clock, RCU and memory admission, from
//!   the kernel or the host.
//! - [`mem`], [`fault`]: admission before each allocation that can fail
//!   (`ENOMEM` instead of an abort), and its fault injection.
//! - [`poison`]: canaries that let RCU readers notice freed memory.
//!
//! # What the walk tells
//!
//! - [`walk_event`]: each step of the walk as one typed event, emitted by
//!   `namei`; [`trace`] carries its text line (`trace on`, the guest's
//!   `demo=trace`), and with the `teaching` feature it is also a step
//!   (`trace json`, the step-through page).
//! - [`stats`]: per-CPU counters of the walk (RCU-walks, fallbacks and their
//!   reasons, cache-line transfers) and the line census of `bench predict`.
//!
//! The crate holds the VFS and nothing else. The `vfsh` shell and the
//! step-through page are the `fstools` crate (`fs/tools/`), which drives
//! this one through [`vfs::Vfs`] and the walk's events.
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
pub mod stat;
pub mod stats;
#[allow(unsafe_code)]
pub mod sync;
pub mod trace;
pub mod types;
pub mod uaccess;
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
