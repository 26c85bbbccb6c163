//! Synchronisation primitives of the lookup path, and the only unsafe code of
//! the fs crate.
//!
//! - [`seqcount`]: sequence counters (`d_seq`, `rename_lock`, `mount_lock`).
//! - [`lockref`]: a spinlock and a reference count in one atomic word, with a
//!   lock-free cmpxchg fast path for get/put (Linux `lib/lockref.c`).
//! - [`rcu`]: read-side guards, RCU-protected pointers, retired objects.
//! - [`rculist`]: hash chains that readers walk without locks while writers
//!   hold a per-bucket lock.
//! - [`host`] (feature `std`): the host [`crate::platform::Platform`]: thread
//!   slots as CPUs and an epoch-based RCU.
//!
//! Every module here is modelled with loom (`RUSTFLAGS="--cfg loom"`), see
//! `fs/tests/loom.rs`. Nothing here knows about dentries.

pub mod atomic;
#[cfg(feature = "std")]
pub mod host;
pub mod ilist;
pub mod lockref;
pub mod rcu;
pub mod rculist;
pub mod seqcount;
pub mod spinlock;
