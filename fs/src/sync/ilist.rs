//! Intrusive lists for the dcache: each dentry sits on its parent's children
//! list and, while unused, on an LRU, without a separate allocation.
//!
//! The lists are `intrusive-collections` doubly linked lists of `Arc<Node<T>>`.
//! Removing a given element from such a list needs `cursor_mut_from_ptr`,
//! which is unsafe because the element must really be on *that* list. This
//! module makes it safe by recording, in the node, the id of the list that
//! holds it; `remove` checks the id first. Callers keep each list behind a
//! lock (the parent dentry's lockref, the LRU spinlock), so the ids are read
//! and written only under the lock of the list concerned.
//!
//! A list takes its id on its first `push_back`, not when it is made: every
//! dentry has a children list and most never hold a child (every transient
//! dentry of a missed lookup), and the ids come from one global counter,
//! whose line a `fetch_add` per allocation moved between every CPU that
//! allocated dentries. Id 0 means "never held anything": such a list owns
//! no node, and a node whose owner is 0 is on no list, so the two never
//! match.

use alloc::sync::Arc;
use core::ops::Deref;

use intrusive_collections::linked_list::AtomicLink;
use intrusive_collections::{intrusive_adapter, LinkedList};

use super::atomic::{AtomicUsize, Ordering};

/// A value with the two list links the dcache needs.
///
/// The value comes first and the links after it (`repr(C)`): a list
/// operation writes the links of a node's neighbours, so for a value that
/// starts on a cache line and fills whole lines (a dentry), the links sit
/// on a line of their own, away from what lockless readers of the value
/// read.
#[repr(C)]
pub struct Node<T> {
    value: T,
    sibling: AtomicLink,
    lru: AtomicLink,
    sibling_owner: AtomicUsize,
    lru_owner: AtomicUsize,
}

impl<T> Node<T> {
    /// Wrap a value; on no list yet.
    pub fn new(value: T) -> Self {
        Node {
            value,
            sibling: AtomicLink::new(),
            lru: AtomicLink::new(),
            sibling_owner: AtomicUsize::new(0),
            lru_owner: AtomicUsize::new(0),
        }
    }

    /// Is it on an LRU list? (exact under that list's lock)
    pub fn on_lru(&self) -> bool {
        self.lru_owner.load(Ordering::Relaxed) != 0
    }

    /// Is it on a children list? (exact under that list's lock)
    pub fn on_sibling_list(&self) -> bool {
        self.sibling_owner.load(Ordering::Relaxed) != 0
    }
}

impl<T> Deref for Node<T> {
    type Target = T;
    #[inline]
    fn deref(&self) -> &T {
        &self.value
    }
}

intrusive_adapter!(SiblingAdapter<T> = Arc<Node<T>>: Node<T> { sibling => AtomicLink });
intrusive_adapter!(LruAdapter<T> = Arc<Node<T>>: Node<T> { lru => AtomicLink });

/// List ids only need to be unique, not ordered with anything, so the
/// counter is a plain core atomic even under loom (whose atomics cannot be
/// statics). Taken once per list that ever holds an element.
static NEXT_ID: core::sync::atomic::AtomicUsize = core::sync::atomic::AtomicUsize::new(1);

fn new_id() -> usize {
    NEXT_ID.fetch_add(1, core::sync::atomic::Ordering::Relaxed)
}

macro_rules! owned_list {
    ($(#[$doc:meta])* $name:ident, $adapter:ident, $owner:ident) => {
        $(#[$doc])*
        pub struct $name<T> {
            id: usize,
            len: usize,
            list: LinkedList<$adapter<T>>,
        }

        impl<T> Default for $name<T> {
            fn default() -> Self {
                Self::new()
            }
        }

        impl<T> $name<T> {
            /// An empty list, without an id until it holds something.
            pub fn new() -> Self {
                $name { id: 0, len: 0, list: LinkedList::new($adapter::new()) }
            }

            /// Number of elements.
            pub fn len(&self) -> usize {
                self.len
            }

            /// Is it empty?
            pub fn is_empty(&self) -> bool {
                self.len == 0
            }

            /// Append `n`. Returns `false` (and does nothing) if `n` is
            /// already on a list of this kind.
            pub fn push_back(&mut self, n: Arc<Node<T>>) -> bool {
                if n.$owner.load(Ordering::Relaxed) != 0 {
                    return false;
                }
                if self.id == 0 {
                    self.id = new_id();
                }
                n.$owner.store(self.id, Ordering::Relaxed);
                self.list.push_back(n);
                self.len += 1;
                true
            }

            /// Remove `n` if it is on this list.
            pub fn remove(&mut self, n: &Node<T>) -> Option<Arc<Node<T>>> {
                // A list without an id never held anything (and a node
                // on no list has owner 0 too: they must not match).
                if self.id == 0 || n.$owner.load(Ordering::Relaxed) != self.id {
                    return None;
                }
                // SAFETY: the owner id says `n` is linked into this very
                // list (ids are unique and nonzero, and only set/cleared
                // here, under the lock that guards this list).
                let mut c = unsafe { self.list.cursor_mut_from_ptr(n) };
                let r = c.remove();
                if r.is_some() {
                    n.$owner.store(0, Ordering::Relaxed);
                    self.len -= 1;
                }
                r
            }

            /// Remove and return the first element.
            pub fn pop_front(&mut self) -> Option<Arc<Node<T>>> {
                let r = self.list.pop_front();
                if let Some(n) = &r {
                    n.$owner.store(0, Ordering::Relaxed);
                    self.len -= 1;
                }
                r
            }

            /// Owned references to every element, in order.
            pub fn to_vec(&self) -> alloc::vec::Vec<Arc<Node<T>>> {
                let mut v = alloc::vec::Vec::with_capacity(self.len);
                let mut c = self.list.front();
                while let Some(p) = c.clone_pointer() {
                    v.push(p);
                    c.move_next();
                }
                v
            }

            /// Owned references to the elements after the first `skip`,
            /// into `out` (as many as fit), in order; returns how many.
            /// Allocates nothing, for long lists when memory is short.
            pub fn fill_from(&self, skip: usize, out: &mut [Option<Arc<Node<T>>>]) -> usize {
                let mut c = self.list.front();
                let (mut i, mut n) = (0, 0);
                while let Some(p) = c.clone_pointer() {
                    if n == out.len() {
                        break;
                    }
                    if i >= skip {
                        out[n] = Some(p);
                        n += 1;
                    }
                    i += 1;
                    c.move_next();
                }
                n
            }

            /// Iterate (borrowing the list, i.e. under its lock).
            pub fn iter(&self) -> impl Iterator<Item = &Node<T>> {
                self.list.iter()
            }
        }
    };
}

owned_list!(
    /// A directory's children (Linux `d_children`).
    ChildList,
    SiblingAdapter,
    sibling_owner
);
owned_list!(
    /// Unused dentries, oldest first (Linux `s_dentry_lru`).
    LruList,
    LruAdapter,
    lru_owner
);

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn remove_checks_membership() {
        let mut a: ChildList<u32> = ChildList::new();
        let mut b: ChildList<u32> = ChildList::new();
        let n = Arc::new(Node::new(7));
        assert!(a.push_back(n.clone()));
        assert!(!b.push_back(n.clone()), "already on a list");
        assert!(b.remove(&n).is_none(), "not on b");
        assert_eq!(a.len(), 1);
        let back = a.remove(&n).unwrap();
        assert_eq!(**back, 7);
        assert!(a.is_empty());
        assert!(b.push_back(n.clone()));
        let mut l: LruList<u32> = LruList::new();
        assert!(l.push_back(n.clone()), "lru link is independent");
        assert_eq!(l.pop_front().map(|x| **x), Some(7));
        assert!(!n.on_lru());
        assert!(n.on_sibling_list());
    }

    /// A list that never held anything has no id yet, and a node on no
    /// list has owner 0: removing one from the other must find nothing
    /// (not unlink a node that is not linked).
    #[test]
    fn a_fresh_list_owns_no_free_node() {
        let mut fresh: ChildList<u32> = ChildList::new();
        let free = Arc::new(Node::new(1));
        assert!(fresh.remove(&free).is_none());
        assert!(fresh.is_empty() && !free.on_sibling_list());
        // Its id comes with its first element, and is its own.
        let mut other: ChildList<u32> = ChildList::new();
        let a = Arc::new(Node::new(2));
        let b = Arc::new(Node::new(3));
        assert!(fresh.push_back(a.clone()) && other.push_back(b.clone()));
        assert!(other.remove(&a).is_none() && fresh.remove(&b).is_none());
        assert_eq!(fresh.remove(&a).map(|x| **x), Some(2));
        assert_eq!(other.remove(&b).map(|x| **x), Some(3));
    }
}
