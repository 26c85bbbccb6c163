//! The platform boundary: the few things the fs crate needs from whoever hosts it.
//!
//! The same VFS code runs inside the guest kernel and on ordinary host threads
//! (tests, benchmarks, `vfsh`). Everything that differs between the two lives
//! behind [`Platform`]: which CPU we are on, the clock, RCU, and whether
//! memory may still be allocated (see [`crate::mem`]). The kernel
//! implements it in `kernel/src/sync/rcu.rs` (QSBR, quiescent states from the
//! tick); the host implementation is [`crate::sync::host::HostPlatform`]
//! (thread slots as CPUs, epoch-based RCU), built with the `std` feature.
//! Under `--cfg loom` it is [`crate::sync::model::ModelPlatform`] instead.
//!
//! Hot fixed-size objects (dentries, inodes) are allocated with `Arc::new`
//! through the global allocator. On the kernel that allocator is a per-CPU slab
//! with magazines (`kernel/src/mm/slab.rs`), so no global lock sits on the
//! lookup path; on the host it is the C library's per-thread caches. The fs
//! asks [`Platform::may_alloc`] before each of those allocations on a path
//! that can fail, so that running out becomes `ENOMEM` instead of an abort.
//!
//! It sits below everything else in the crate, `sync` included: the
//! default host platform is chosen by the crate root (`lib.rs`).
//!
//! This module touches nothing but one write-once global.

use alloc::boxed::Box;
use alloc::sync::Arc;

/// An object whose destructor must wait for a grace period
/// ([`Platform::call_rcu`]).
///
/// Two words, no allocation: one strong reference of an `Arc` whose type is
/// erased to its drop (a fat pointer; `None` only once reclaimed; the
/// kernel sizes its callback segments by it). Dropping a `Retired` without
/// [`Retired::reclaim`] leaks it rather than freeing it early: leaking is
/// safe, freeing under a reader is not.
pub struct Retired(Option<Arc<dyn Send + Sync>>);

const _: () = assert!(core::mem::size_of::<Retired>() == 2 * core::mem::size_of::<usize>());

impl Retired {
    /// Retire one strong reference of an `Arc`.
    pub fn from_arc<T: Send + Sync + 'static>(a: Arc<T>) -> Self {
        Retired(Some(a))
    }

    /// Retire a `Box` (moved into an `Arc`: one allocation; the fs itself
    /// retires only `Arc`s).
    pub fn from_box<T: Send + Sync + 'static>(b: Box<T>) -> Self {
        Retired::from_arc(Arc::<T>::from(b))
    }

    /// Run the destructor now. The caller (an RCU implementation) promises a
    /// grace period has elapsed since the object was unpublished.
    pub fn reclaim(mut self) {
        drop(self.0.take())
    }
}

impl Drop for Retired {
    /// Leaks what was not reclaimed.
    fn drop(&mut self) {
        core::mem::forget(self.0.take());
    }
}

/// Upper bound on CPU ids (guest vCPUs or registered host threads).
pub const MAX_CPUS: usize = 256;

/// What the fs crate needs from its host. All methods must be callable from
/// any CPU concurrently; none may sleep except [`Platform::synchronize_rcu`].
pub trait Platform: Sync {
    /// Id of the CPU running the caller, `< cpu_count() <= MAX_CPUS`. Stable
    /// for the duration of a call into the fs crate (no migration inside it).
    fn cpu_id(&self) -> usize;
    /// Number of CPU ids in use (highest id + 1).
    fn cpu_count(&self) -> usize;
    /// Monotonic nanoseconds since boot (or since the platform was created).
    fn now_ns(&self) -> u64;

    /// Enter an RCU read-side section. Nests. Must not store to memory shared
    /// with other CPUs (per-CPU state only): this is on the lock-free path.
    fn rcu_read_lock(&self);
    /// Leave an RCU read-side section.
    fn rcu_read_unlock(&self);
    /// Run `obj`'s destructor after every read-side section that might hold a
    /// reference to it has ended. Must not allocate on the fast path (queues
    /// are per CPU and amortised).
    fn call_rcu(&self, obj: Retired);
    /// Can this CPU queue `n` more callbacks now without an allocation
    /// that could fail? The platform may allocate (fallibly) to make it
    /// so. `false` when memory is too short for the queue itself: the
    /// shrinker then stops retiring dentries and memory admission answers
    /// `ENOMEM` (back-pressure; see [`crate::mem`]). Must not sleep or run
    /// callbacks; callable with locks held. The default (a platform whose
    /// queues cannot run short) says yes.
    fn call_rcu_room(&self, n: usize) -> bool {
        let _ = n;
        true
    }
    /// Wait for a full grace period, then run due callbacks of this CPU.
    fn synchronize_rcu(&self);
    /// Wait until every callback queued before the call has run (Linux's
    /// `rcu_barrier()`), not just for a grace period: for tests and
    /// teardown that count what was freed. The default suits a platform
    /// whose `synchronize_rcu` itself runs every due callback.
    fn rcu_barrier(&self) {
        self.synchronize_rcu()
    }
    /// Report that this CPU holds no RCU references right now (outside any
    /// read-side section). Long loops call it; QSBR relies on it. The
    /// caller holds no lock of the fs: the platform may run this CPU's due
    /// callbacks here (the kernel and the host platform both do, as Linux
    /// runs them on the CPU that queued them).
    fn rcu_quiescent_state(&self);

    /// Halt this CPU until another CPU kicks it ([`Platform::kick`]) or an
    /// interrupt arrives, if `still()` holds when looked at with nothing
    /// able to slip in between the look and the halt: a kick sent after
    /// `still()` turned false must end the halt, not precede it (on x86:
    /// `cli`, the look, `sti; hlt`). May return at any time for any reason;
    /// callers look again. The paravirt lock's `pv_wait`
    /// (`crate::sync::pvqspinlock`). The default returns at once: the
    /// caller keeps spinning.
    fn halt_while(&self, still: &dyn Fn() -> bool) {
        let _ = still;
    }
    /// Does [`Platform::halt_while`] halt (rather than return at once)?
    /// Waits other than the paravirt lock's only halt where it does. The
    /// default: no.
    fn halts(&self) -> bool {
        false
    }
    /// Wake `cpu` from [`Platform::halt_while`] (Linux's `pv_kick`); a CPU
    /// that is not halted must come to no harm. The default does nothing.
    fn kick(&self, cpu: usize) {
        let _ = cpu;
    }

    /// May the fs allocate `bytes` (one allocation) now? `false` makes the
    /// operation that wanted it fail with `ENOMEM` (after the fs tried to
    /// reclaim unused dentries and asked again). A platform answers from
    /// its allocator's free memory, keeping a reserve for allocations that
    /// cannot fail. Called on allocating paths only, possibly with locks
    /// held: must not sleep or allocate. The default admits everything.
    fn may_alloc(&self, bytes: usize) -> bool {
        let _ = bytes;
        true
    }
}

static PLATFORM: spin::Once<&'static dyn Platform> = spin::Once::new();

/// Install the platform. The first call wins; later calls are ignored and
/// return `false`.
pub fn install(p: &'static dyn Platform) -> bool {
    let mut first = false;
    PLATFORM.call_once(|| {
        first = true;
        p
    });
    first
}

/// The installed platform. With the `std` feature the host platform is
/// installed on first use; without it, using the crate before
/// [`install`] is a bug and panics with a clear message.
#[inline]
pub fn get() -> &'static dyn Platform {
    if let Some(p) = PLATFORM.get() {
        return *p;
    }
    default_platform()
}

#[cfg(any(feature = "std", loom))]
#[cold]
fn default_platform() -> &'static dyn Platform {
    *PLATFORM.call_once(crate::default_platform)
}

#[cfg(not(any(feature = "std", loom)))]
#[cold]
fn default_platform() -> &'static dyn Platform {
    panic!("fs::platform::install() was not called before using the fs crate")
}
