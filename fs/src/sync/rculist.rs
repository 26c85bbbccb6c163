//! RCU hash chains: readers walk them without locks or stores; writers hold
//! the chain's spinlock.
//!
//! Each node embeds an [`RcuLink`] (its `next` pointer and a "linked" flag)
//! and is owned by the chain through one `Arc` strong count while linked.
//! Removing a node unlinks it from its predecessor but leaves its own `next`
//! intact, so a reader standing on it can still walk on; the chain's `Arc`
//! is then released through `call_rcu`, after every such reader has left.
//!
//! One caveat, as in Linux's `hlist_bl`: a node that is removed and
//! re-inserted into another chain (a rename that changes the hash) can carry
//! a reader that stood on it into the other chain, so that reader may miss
//! entries of the chain it started in. A miss found by walking a chain is
//! therefore only authoritative if the caller also checked that no such move
//! happened (the dcache checks `rename_lock`).
//!
//! Freed nodes are poisoned: their link's `next` is overwritten when they
//! are dropped, and a reader that reaches the poison counts a
//! [`poison_hits`] (the stress tests assert none). A `next` that reads as
//! the guest allocator's free fill ([`crate::poison::FREE_WORD`], when
//! memory poisoning is on) is caught the same way: it is not a canonical
//! address, so following it would fault instead of being counted.

use alloc::boxed::Box;
use alloc::sync::Arc;
use alloc::vec::Vec;
use core::ptr;

use super::atomic::{AtomicBool, AtomicPtr, Ordering};
use super::rawlock::{default_kind, LockKind};
use super::rcu::{defer_drop, RcuGuard, RcuRef};
use super::spinlock::{SpinGuard, SpinLock};

/// The link a node embeds to be on one chain at a time.
pub struct RcuLink<T> {
    next: AtomicPtr<T>,
    linked: AtomicBool,
}

impl<T> Default for RcuLink<T> {
    fn default() -> Self {
        Self::new()
    }
}

impl<T> RcuLink<T> {
    const_unless_loom! {
        /// An unlinked link.
        pub fn new() -> Self {
            RcuLink {
                next: AtomicPtr::new(ptr::null_mut()),
                linked: AtomicBool::new(false),
            }
        }
    }

    /// Is the node on a chain right now? (racy unless the chain lock is held)
    pub fn is_linked(&self) -> bool {
        self.linked.load(Ordering::Acquire)
    }
}

impl<T> Drop for RcuLink<T> {
    /// Poison the link of a node being freed (after its grace period): a
    /// reader that still stands on it would read `POISON` as its next
    /// pointer, which [`RcuIter`] detects and counts (best effort: until the
    /// allocator reuses the memory).
    fn drop(&mut self) {
        self.next.store(poison(), Ordering::Relaxed);
    }
}

/// The `next` value of a freed node; never a real node address.
#[inline]
fn poison<T>() -> *mut T {
    ptr::without_provenance_mut(0xdead_0000_0bad_0000)
}

/// Readers that found a poisoned (freed) node while walking a chain.
static POISON_HITS: core::sync::atomic::AtomicU64 = core::sync::atomic::AtomicU64::new(0);

/// How many times a chain walk reached a node that had already been
/// freed (must stay 0: stress tests assert it).
pub fn poison_hits() -> u64 {
    POISON_HITS.load(core::sync::atomic::Ordering::Relaxed)
}

/// A type that can be put on an RCU chain.
pub trait RcuNode: Send + Sync + Sized + 'static {
    /// The embedded link.
    fn rcu_link(&self) -> &RcuLink<Self>;
}

/// One chain: a head pointer and the writers' lock.
pub struct RcuList<T: RcuNode> {
    head: AtomicPtr<T>,
    lock: SpinLock<()>,
}

impl<T: RcuNode> Default for RcuList<T> {
    fn default() -> Self {
        Self::new()
    }
}

impl<T: RcuNode> RcuList<T> {
    /// An empty chain whose bucket lock is of the default kind.
    pub fn new() -> Self {
        Self::with_kind(default_kind())
    }

    const_unless_loom! {
        /// An empty chain whose bucket lock is of kind `kind`.
        pub fn with_kind(kind: LockKind) -> Self {
            RcuList {
                head: AtomicPtr::new(ptr::null_mut()),
                lock: SpinLock::with_kind(kind, ()),
            }
        }
    }

    /// Walk the chain under a read-side section.
    #[inline]
    pub fn iter<'g>(&self, _g: &'g RcuGuard) -> RcuIter<'g, T> {
        RcuIter {
            cur: self.head.load(Ordering::Acquire),
            _g: core::marker::PhantomData,
        }
    }

    /// Take the writers' lock.
    pub fn lock(&self) -> RcuListWriter<'_, T> {
        RcuListWriter {
            list: self,
            _g: self.lock.lock(),
        }
    }
}

impl<T: RcuNode> Drop for RcuList<T> {
    fn drop(&mut self) {
        // `&mut self`: no other thread can touch the head (a plain load;
        // loom's atomics have no `get_mut`).
        let mut p = self.head.load(Ordering::Relaxed);
        while !p.is_null() {
            // SAFETY: every linked pointer came from Arc::into_raw in
            // push_front and is released once, here or in remove.
            let a = unsafe { Arc::from_raw(p as *const T) };
            p = a.rcu_link().next.load(Ordering::Relaxed);
            a.rcu_link().linked.store(false, Ordering::Release);
            defer_drop(a);
        }
    }
}

/// Iterator over a chain; yields references valid for the guard's life.
pub struct RcuIter<'g, T> {
    cur: *mut T,
    _g: core::marker::PhantomData<&'g RcuGuard>,
}

impl<'g, T: RcuNode> Iterator for RcuIter<'g, T> {
    type Item = RcuRef<'g, T>;
    #[inline]
    fn next(&mut self) -> Option<RcuRef<'g, T>> {
        if self.cur.is_null() {
            return None;
        }
        // SAFETY: `cur` was published by push_front with Release and read
        // with Acquire; the node's Arc is released only through call_rcu
        // after it was unlinked, which cannot complete while our guard 'g
        // is held, so the node outlives 'g.
        let r = unsafe { RcuRef::from_raw(self.cur) };
        let next = r.get().rcu_link().next.load(Ordering::Acquire);
        if next == poison() || next.addr() as u64 == crate::poison::FREE_WORD {
            // We stood on a node whose grace period had already ended:
            // an RCU bug. Count it for the tests and stop walking.
            POISON_HITS.fetch_add(1, core::sync::atomic::Ordering::Relaxed);
            self.cur = ptr::null_mut();
        } else {
            self.cur = next;
        }
        Some(r)
    }
}

/// The writers' view of a chain (holds its lock).
pub struct RcuListWriter<'a, T: RcuNode> {
    list: &'a RcuList<T>,
    _g: SpinGuard<'a, ()>,
}

impl<T: RcuNode> RcuListWriter<'_, T> {
    /// Publish `node` at the head of the chain.
    ///
    /// # Panics
    /// If the node is already on a chain (a dcache bug, caught here because
    /// a doubly-linked node would corrupt two chains).
    pub fn push_front(&mut self, node: Arc<T>) {
        let link = node.rcu_link();
        assert!(
            !link.linked.swap(true, Ordering::AcqRel),
            "rculist: node already linked"
        );
        // Release, like the head store below: a reader standing on this
        // node (a rename moved it here from another chain) steps to the
        // successor through this pointer alone, and must see that node's
        // fields, written by whoever created it (ordered before us by the
        // chain lock), as the head's readers do. Linux's
        // `hlist_bl_add_head_rcu` stores `n->next` plainly and leans on the
        // reader's address dependency (`rcu_dereference`), which Rust's
        // memory model does not have; `fs/tests/loom.rs` shows the race.
        link.next
            .store(self.list.head.load(Ordering::Relaxed), Ordering::Release);
        // Release: the node's fields and `next` are visible before it is.
        self.list
            .head
            .store(Arc::into_raw(node) as *mut T, Ordering::Release);
    }

    /// Unlink `node` if it is on this chain; its chain reference is released
    /// after a grace period. Returns whether it was found.
    pub fn remove(&mut self, node: &T) -> bool {
        let target = node as *const T as *mut T;
        let mut prev: &AtomicPtr<T> = &self.list.head;
        loop {
            let cur = prev.load(Ordering::Relaxed);
            if cur.is_null() {
                return false;
            }
            // SAFETY: nodes reachable from the head under the lock are
            // linked, hence owned by this chain and alive.
            let cur_ref: &T = unsafe { &*cur };
            if cur == target {
                let next = cur_ref.rcu_link().next.load(Ordering::Relaxed);
                prev.store(next, Ordering::Release);
                cur_ref.rcu_link().linked.store(false, Ordering::Release);
                // SAFETY: this pointer came from Arc::into_raw in push_front
                // and has just been unlinked, so it is released exactly once.
                let a = unsafe { Arc::from_raw(cur as *const T) };
                defer_drop(a);
                return true;
            }
            // Re-borrow through the node: it stays alive while linked and we
            // hold the lock.
            prev = &cur_ref.rcu_link().next;
        }
    }

    /// Owned references to every node (for writers that must look around).
    pub fn to_vec(&self) -> Vec<Arc<T>> {
        let g = RcuGuard::new();
        self.list.iter(&g).map(RcuRef::to_arc).collect()
    }
}

/// A fixed-size table of chains, indexed by the low bits of a hash.
pub struct RcuHashTable<T: RcuNode> {
    buckets: Box<[RcuList<T>]>,
    mask: usize,
}

impl<T: RcuNode> RcuHashTable<T> {
    /// A table with `1 << order` chains.
    pub fn new(order: u32) -> Self {
        let n = 1usize << order;
        let buckets: Vec<RcuList<T>> = (0..n).map(|_| RcuList::new()).collect();
        RcuHashTable {
            buckets: buckets.into_boxed_slice(),
            mask: n - 1,
        }
    }

    /// The chain for `hash`.
    #[inline]
    pub fn bucket(&self, hash: u64) -> &RcuList<T> {
        // Fold the high bits in: ahash's low bits are good, but be robust.
        let h = (hash ^ (hash >> 32)) as usize;
        &self.buckets[h & self.mask]
    }
}
