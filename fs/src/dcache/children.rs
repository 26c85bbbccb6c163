//! A directory's children and what lies below it: the lists readdir and
//! the step-through page take ([`children`], [`all_children`]), pruning a
//! directory being removed ([`shrink_dcache_parent`]), tearing a whole
//! mount's tree down ([`d_genocide`]), and ancestry ([`is_ancestor`]).
//! Linux `fs/dcache.c`'s `d_walk` users: `shrink_dcache_parent`,
//! `d_genocide`, `is_subdir`.
//!
//! Touches: the children lists (under each parent's `d_lock`), the LRU and
//! hash table through the kill path, RCU callback room.

use alloc::sync::Arc;
use alloc::vec::Vec;

use super::{d_delete, d_drop, dcache, dput, shrink_one, Dentry};
use crate::mem;

/// Owned references to the positive children of `dir` (readdir).
pub fn children(dir: &Dentry) -> Vec<Arc<Dentry>> {
    let g = dir.lockref.lock();
    g.children
        .to_vec()
        .into_iter()
        .filter(|c| c.is_hashed() && !c.is_negative())
        .collect()
}

/// Owned references to every child of `dir` still linked to it: positive,
/// negative and in-lookup, hashed or not (the step-through page draws them;
/// nothing on the lookup path calls this).
pub fn all_children(dir: &Dentry) -> Vec<Arc<Dentry>> {
    let g = dir.lockref.lock();
    g.children.to_vec()
}

/// Drop what a directory being removed still has cached (Linux
/// `shrink_dcache_parent`, which `vfs_rmdir` and `vfs_rename` call on the
/// victim): every child is unhashed, and the unused ones on the LRU are
/// killed now. Otherwise the negatives a design caches there stayed hashed
/// under a dead dentry, pinning it from the LRU until the shrinker came.
/// A child someone still holds is killed when they let go (unhashed, it
/// is not worth caching); an unused one is left to the shrinker when the
/// RCU callback queue has no room for its kill (as [`shrink`](super::shrink) stops).
/// Allocates nothing: a batch of children at a time on the stack, as
/// [`d_genocide`] takes them. Caller holds `dir`'s `i_rwsem` exclusively
/// (so no lookup adds a child meanwhile: `lookup_slow` answers ENOENT in a
/// dead directory) and has marked its inode dead.
pub fn shrink_dcache_parent(dir: &Dentry) {
    let p = crate::platform::get();
    // Children seen that stay on the list (in use, or left to the
    // shrinker): the next batch starts after them.
    let mut skip = 0;
    loop {
        let mut batch: [Option<Arc<Dentry>>; GENOCIDE_BATCH] = [const { None }; GENOCIDE_BATCH];
        let n = dir.lockref.lock().children.fill_from(skip, &mut batch);
        if n == 0 {
            return;
        }
        // The directory's set of children changes (R2), although only
        // misses become misses of another kind.
        dir.dir_seq.write(|| {
            for c in batch.iter().flatten() {
                d_drop(c);
            }
        });
        for c in batch.into_iter().flatten() {
            if c.on_lru() && p.call_rcu_room(mem::RCU_PER_KILL) {
                let taken = dcache().lru.lock().remove(&c);
                if let Some(v) = taken {
                    shrink_one(v);
                }
            }
            if c.on_sibling_list() {
                skip += 1;
            }
        }
    }
}

/// Does `dir` have positive children? (rmdir's emptiness test)
pub fn has_positive_children(dir: &Dentry) -> bool {
    let g = dir.lockref.lock();
    let any = g.children.iter().any(|c| c.is_hashed() && !c.is_negative());
    drop(g);
    any
}

/// Tear down the tree below `root` of a filesystem that is going away
/// (Linux `d_genocide` + `shrink_dcache_for_umount`): unpin every positive
/// dentry of a filesystem that pins them (tmpfs) and drop the unused ones,
/// so that the last mount reference frees everything. No one else may use
/// the filesystem any more. Like Linux's umount it may wait for grace
/// periods (when the RCU callback queue has no room for the next batch of
/// kills, their segments must come from what earlier kills give back), so
/// call it with no lock held and outside any read-side section.
pub fn d_genocide(root: &Arc<Dentry>) {
    // Depth first, children before parents, a batch of children at a time
    // in an array on the stack: the tree may hold most of memory (tens of
    // thousands of cached negatives in one directory), and tearing it down
    // must not need memory a full heap no longer has. The stack holds one
    // directory per level and how many of its first children survive
    // (pinned by someone: skipped, not retried).
    let mut stack: Vec<(Arc<Dentry>, usize)> = Vec::new();
    if stack.try_reserve(8).is_err() {
        return;
    }
    stack.push((root.clone(), 0));
    while let Some((dir, skip)) = stack.last() {
        let p = crate::platform::get();
        for _ in 0..GENOCIDE_WAITS {
            if p.call_rcu_room(GENOCIDE_BATCH * mem::RCU_PER_KILL) {
                break;
            }
            p.synchronize_rcu();
        }
        let mut batch: [Option<Arc<Dentry>>; GENOCIDE_BATCH] = [const { None }; GENOCIDE_BATCH];
        let n = dir.lockref.lock().children.fill_from(*skip, &mut batch);
        if n == 0 {
            let (d, _) = stack.pop().expect("non-empty stack");
            if let Some((_, parent_skip)) = stack.last_mut() {
                if genocide_one(&d) {
                    *parent_skip += 1;
                }
            }
            continue;
        }
        let mut survivors = 0;
        let mut descend = None;
        for c in batch.into_iter().flatten() {
            // A directory with children goes first (if the stack can grow;
            // else it is left, pinned by them, and skipped).
            if descend.is_none()
                && !c.lockref.lock().children.is_empty()
                && stack.try_reserve(1).is_ok()
            {
                descend = Some(c);
                continue;
            }
            if descend.is_some() {
                // Looked at again after the subtree.
                continue;
            }
            if genocide_one(&c) {
                survivors += 1;
            }
        }
        if let Some((_, skip)) = stack.last_mut() {
            *skip += survivors;
        }
        if let Some(c) = descend {
            stack.push((c, 0));
        }
    }
}

/// Children copied per step of [`d_genocide`].
const GENOCIDE_BATCH: usize = 64;
/// Grace periods [`d_genocide`] waits at most, per step, for callback room
/// (then it goes on: a callback that finds no room is leaked and counted
/// by the platform, never a panic).
const GENOCIDE_WAITS: usize = 8;

/// Unpin `d` if its filesystem pins positives (tmpfs), and drop it if
/// unused; its children are gone already. Returns whether it survived on
/// its parent's children list (someone else holds it).
fn genocide_one(d: &Arc<Dentry>) -> bool {
    if d.sb.complete && d.is_hashed() && !d.is_negative() {
        d_delete(d);
        dput(d.clone());
    }
    if d.on_lru() {
        let taken = dcache().lru.lock().remove(d);
        if let Some(v) = taken {
            shrink_one(v);
        }
    }
    d.on_sibling_list()
}

/// Is `a` an ancestor of (or equal to) `b`, within one filesystem? Stable
/// under `rename_lock`.
pub fn is_ancestor(a: &Dentry, b: &Arc<Dentry>) -> bool {
    let mut cur = Some(b.clone());
    while let Some(c) = cur {
        if core::ptr::eq(&*c, a) {
            return true;
        }
        cur = c.parent.get_arc();
    }
    false
}
