//! RCU read-side API: guards, RCU-protected pointers, and retired objects.
//!
//! Mental model: a reader enters a read-side section ([`RcuGuard`]) and may
//! then follow RCU-protected pointers ([`RcuCell`]) without taking any lock or
//! storing to shared memory. A writer replaces a pointer and hands the old
//! object to [`crate::platform::Platform::call_rcu`] as a [`Retired`]; its
//! destructor runs only after every reader that might still see it has left
//! its section (a grace period). So a reference obtained under a guard stays
//! valid for the guard's lifetime — that is the one fact this module encodes
//! in lifetimes, so that the dcache above it can be safe code.
//!
//! Objects reachable by readers are always held by an `Arc` that is dropped
//! only through `call_rcu`. Hence a reader may turn its borrowed
//! [`RcuRef`] into an owned `Arc` (the strong count cannot be zero while a
//! grace period protects the object): that is how an RCU-walk hands over to a
//! ref-walk.
//!
//! Touches: the platform (read-lock nesting, call_rcu). Unsafe code lives here
//! and in the sibling primitives only.

use alloc::sync::Arc;
use core::marker::PhantomData;
use core::ops::Deref;
use core::ptr;

use super::atomic::{AtomicPtr, Ordering};
use crate::platform;

pub use crate::platform::Retired;

/// Retire an object: its destructor runs after a grace period.
pub fn call_rcu(obj: Retired) {
    platform::get().call_rcu(obj)
}

/// Retire one `Arc` reference after a grace period.
pub fn defer_drop<T: Send + Sync + 'static>(a: Arc<T>) {
    call_rcu(Retired::from_arc(a))
}

/// Wait for a grace period.
pub fn synchronize_rcu() {
    platform::get().synchronize_rcu()
}

/// Wait until every callback queued so far has run (Linux's `rcu_barrier`).
pub fn rcu_barrier() {
    platform::get().rcu_barrier()
}

/// A read-side critical section. References handed out under it live no
/// longer than `'_` of the guard. Not `Send`: the section belongs to a CPU.
pub struct RcuGuard {
    _not_send: PhantomData<*mut ()>,
}

impl RcuGuard {
    /// Enter a read-side section.
    #[inline]
    pub fn new() -> Self {
        platform::get().rcu_read_lock();
        RcuGuard {
            _not_send: PhantomData,
        }
    }
}

impl Default for RcuGuard {
    fn default() -> Self {
        Self::new()
    }
}

impl Drop for RcuGuard {
    #[inline]
    fn drop(&mut self) {
        platform::get().rcu_read_unlock();
    }
}

/// A reference to an RCU-published object, valid while guard `'g` lives.
///
/// Only RCU structures create these, which is what makes [`RcuRef::to_arc`]
/// sound: such objects are owned by an `Arc` whose last reference is dropped
/// through `call_rcu`.
pub struct RcuRef<'g, T> {
    ptr: &'g T,
}

impl<T> Clone for RcuRef<'_, T> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<T> Copy for RcuRef<'_, T> {}

impl<'g, T> RcuRef<'g, T> {
    /// # Safety
    /// `p` must point into an `Arc<T>` allocation that is kept alive (one
    /// strong count at least) until a grace period after `'g` ends.
    pub(crate) unsafe fn from_raw(p: *const T) -> Self {
        // SAFETY: guaranteed by the caller.
        RcuRef {
            ptr: unsafe { &*p },
        }
    }

    /// Borrow an object held by an `Arc` that outlives `'g` (for example a
    /// mount's root dentry) as if it had been found under RCU.
    pub fn from_arc(a: &'g Arc<T>) -> Self {
        RcuRef { ptr: a }
    }

    /// The plain reference.
    #[inline]
    pub fn get(self) -> &'g T {
        self.ptr
    }

    /// Take an owned reference. Always succeeds: see the type's docs.
    pub fn to_arc(self) -> Arc<T> {
        let p = self.ptr as *const T;
        // SAFETY: (1) `p` points into a live `Arc<T>` allocation (the
        // invariant of RcuRef). (2) Its strong count is at least one until a
        // grace period after our guard ends, because the RCU-reachable owner
        // drops its Arc through call_rcu; so incrementing cannot resurrect a
        // dying object.
        unsafe {
            Arc::increment_strong_count(p);
            Arc::from_raw(p)
        }
    }

    /// Pointer identity.
    #[inline]
    pub fn ptr_eq(a: Self, b: &T) -> bool {
        ptr::eq(a.ptr, b)
    }

    /// The raw address, for tracing and identity comparisons.
    #[inline]
    pub fn as_ptr(self) -> *const T {
        self.ptr
    }
}

impl<T> Deref for RcuRef<'_, T> {
    type Target = T;
    #[inline]
    fn deref(&self) -> &T {
        self.ptr
    }
}

/// An RCU-protected `Option<Arc<T>>`: readers load it under a guard with no
/// stores; writers (serialised by the caller's lock) replace it and the old
/// value is retired through `call_rcu`.
pub struct RcuCell<T: Send + Sync + 'static> {
    ptr: AtomicPtr<T>,
}

impl<T: Send + Sync + 'static> RcuCell<T> {
    /// A cell holding `v`.
    pub fn new(v: Option<Arc<T>>) -> Self {
        RcuCell {
            ptr: AtomicPtr::new(into_raw(v)),
        }
    }

    /// Read under a guard (acquire: the pointee's initialisation is visible).
    #[inline]
    pub fn load<'g>(&self, _g: &'g RcuGuard) -> Option<RcuRef<'g, T>> {
        let p = self.ptr.load(Ordering::Acquire);
        if p.is_null() {
            None
        } else {
            // SAFETY: non-null pointers stored here come from Arc::into_raw,
            // and the Arc is only released through call_rcu (in `replace`
            // and Drop), so it outlives the guard `'g`.
            Some(unsafe { RcuRef::from_raw(p) })
        }
    }

    /// An owned copy of the current value (for holders of the writer lock or
    /// anyone who wants a reference that outlives a guard).
    pub fn get_arc(&self) -> Option<Arc<T>> {
        let g = RcuGuard::new();
        self.load(&g).map(RcuRef::to_arc)
    }

    /// Is it `None`? (A racy snapshot; no guard needed.)
    #[inline]
    pub fn is_none(&self) -> bool {
        self.ptr.load(Ordering::Acquire).is_null()
    }

    /// Raw pointer identity of the current value, for comparisons only.
    #[inline]
    pub fn ptr(&self) -> *const T {
        self.ptr.load(Ordering::Acquire)
    }

    /// Publish `v` (release) and retire the previous value after a grace
    /// period. Callers serialise writers with their own lock.
    pub fn replace(&self, v: Option<Arc<T>>) {
        let old = self.ptr.swap(into_raw(v), Ordering::AcqRel);
        retire_raw(old);
    }
}

impl<T: Send + Sync + 'static> Drop for RcuCell<T> {
    fn drop(&mut self) {
        // The cell itself may be read by RCU readers until the grace period
        // that frees its owner; its value is retired the same way.
        retire_raw(self.ptr.load(Ordering::Acquire));
    }
}

fn into_raw<T>(v: Option<Arc<T>>) -> *mut T {
    v.map_or(ptr::null_mut(), |a| Arc::into_raw(a) as *mut T)
}

fn retire_raw<T: Send + Sync + 'static>(p: *mut T) {
    if !p.is_null() {
        // SAFETY: non-null pointers in an RcuCell come from Arc::into_raw
        // and are released exactly once (the swap/drop that removed them).
        let a = unsafe { Arc::from_raw(p as *const T) };
        defer_drop(a);
    }
}
