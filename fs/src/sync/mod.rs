//! Synchronisation primitives of the lookup path, and the only unsafe code of
//! the fs crate.
//!
//! - [`seqcount`]: sequence counters (`d_seq`) and seqlocks, a count with
//!   its writers' lock (`rename_lock`, `mount_lock`).
//! - [`lockref`]: a spinlock and a reference count in one atomic word, with a
//!   lock-free cmpxchg fast path for get/put (Linux `lib/lockref.c`).
//! - [`lockword`]: the 32-bit lock word every spinlock algorithm works on
//!   (a whole `AtomicU32`, or the upper half of the lockref's word).
//! - [`rawlock`]: the three spinlock algorithms ([`rawlock::LockKind`]:
//!   queued, ticket, test-and-test-and-set) on a 32-bit lock word.
//! - [`qspinlock`]: Linux's queued spinlock (MCS queue, pending bit, locked
//!   byte), the default kind.
//! - [`pvqspinlock`]: the queued spinlock with Linux's paravirt waits: a
//!   long wait halts the CPU until it is kicked (guests on fewer cores).
//! - [`spinlock`]: a spinlock owning its data (of any kind), and `RwSem`.
//! - [`spinwait`]: how every waiter spins, and why after a long wait a
//!   host thread gives its CPU away (the paravirt spinlock's idea).
//! - [`rcu`]: read-side guards, RCU-protected pointers, retired objects.
//! - [`qsbr`]: the grace-period machine of the kernel's QSBR RCU (counters,
//!   quiescent-state reports, completion), shared with the loom models.
//! - [`rculist`]: hash chains that readers walk without locks while writers
//!   hold a per-bucket lock.
//! - [`epoch`]: the epoch machine of host mode's RCU (reader slots,
//!   advances), shared with the loom models.
//! - [`host`] (feature `std`): the host [`crate::platform::Platform`]: thread
//!   slots as CPUs and an epoch-based RCU.
//! - [`budget`] (feature `std`): host mode's memory budget, a counting
//!   global allocator that the host platform's admission answers from.
//! - [`residue`] (feature `std`): a test allocator that looks in every
//!   block freed for a byte pattern (a password left behind unzeroed).
//! - [`model`] (`--cfg loom` only): the platform loom models run on, whose
//!   RCU is [`epoch`]'s machine over loom atomics.
//!
//! Every module here but `budget` and `residue` (plain counters around
//! the system allocator) and `host`'s thread and `membarrier` plumbing is modelled
//! with loom (`RUSTFLAGS="--cfg loom"`), see `fs/tests/loom.rs` and
//! `fs/tests/loom_rcu.rs`. Nothing here knows about dentries.

/// A constructor that is `const` in normal builds and a plain `fn` under
/// `--cfg loom`, whose model-checked atomics have no const constructors.
macro_rules! const_unless_loom {
    ($(#[$m:meta])* $vis:vis fn $name:ident($($arg:ident: $ty:ty),*) -> $ret:ty $body:block) => {
        #[cfg(not(loom))]
        $(#[$m])* $vis const fn $name($($arg: $ty),*) -> $ret $body
        #[cfg(loom)]
        $(#[$m])* $vis fn $name($($arg: $ty),*) -> $ret $body
    };
}

pub mod atomic;
#[cfg(all(feature = "std", not(loom)))]
pub mod budget;
pub mod epoch;
#[cfg(all(feature = "std", not(loom)))]
pub mod host;
pub mod ilist;
pub mod lockref;
pub mod lockword;
#[cfg(loom)]
pub mod model;
pub mod pvqspinlock;
pub mod qsbr;
pub mod qspinlock;
pub mod rawlock;
pub mod rcu;
pub mod rculist;
#[cfg(all(feature = "std", not(loom)))]
pub mod residue;
pub mod seqcount;
pub mod spinlock;
pub mod spinwait;
