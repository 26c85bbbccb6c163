//! The end of a dentry's use: `dput` drops a reference, and the last one
//! either parks the dentry on the LRU of unused dentries (when it is worth
//! caching: hashed, and positive or kept by the mount's ENOENT design) or
//! kills it (`dentry_kill`: unhash, unlink from the parent, free after a
//! grace period, then the parent's reference in turn). The shrinker takes
//! unused dentries off the LRU, oldest first, and kills them: when the LRU
//! is over its limit, when memory admission asks ([`shrink`]), or all of
//! them ([`shrink_all`]). Linux `fs/dcache.c`: `dput`, `retain_dentry`,
//! `dentry_kill`, `d_lru_add`, `shrink_dentry_list`.
//!
//! Touches: the dentries handed in, their parents, the global LRU and hash
//! table, the ENOENT design's state (through [`design::Release`]).

use alloc::sync::Arc;
use core::sync::atomic::Ordering;

use super::{dcache, design, unhash, DLocked, Dentry};
use crate::mem;
use crate::stats::{self, Event};
use crate::sync::lockref::LockRefGuard;

/// Should a dentry whose last reference is going away stay cached?
fn retain_dentry(d: &Dentry) -> bool {
    if !d.is_hashed() {
        return false;
    }
    if !d.is_negative() {
        return true;
    }
    d.sb.design().retain_negative(&design::Release {
        complete: d.sb.complete,
        sb_state: &d.sb.design_state,
        dentry: d,
    })
}

/// Drop a reference (Linux `dput`): the fast path is one cmpxchg; the last
/// reference either parks the dentry on the LRU or kills it, which drops
/// the reference it held on its parent, and so on up.
pub fn dput(d: Arc<Dentry>) {
    stats::inc(Event::SharedStore); // the Arc strong count
    let mut cur = d;
    loop {
        // Whatever happens below, this `Arc` is dropped on the way out.
        stats::census_arc(&cur);
        if cur.lockref.put_not_last() {
            return;
        }
        // Linux `fast_dput`'s locked tail: with `d_lock` held the count
        // can be trusted.
        let mut g = cur.lockref.lock();
        if g.count() > 1 {
            g.dec();
            return;
        }
        if g.count() <= 0 {
            // Dead or unbalanced: nothing to do but let go of the memory.
            return;
        }
        match dentry_kill(&cur, g, true) {
            Some(parent) => cur = parent,
            None => return,
        }
    }
}

/// The last reference to `d` goes away: `g` is its `d_lock`, held since
/// the count was seen to be 1 (ours), so nobody took another meanwhile.
/// With `honor_retain` a dentry worth caching is parked on the LRU (dput);
/// the shrinker passes `false`. Anything else is killed in Linux's order
/// since 6.8 (`__dentry_kill`, which 6.12 has):
///
/// 1. under its own `d_lock` alone it is marked dead and unhashed: from
///    here on no lookup finds it, and a concurrent `lockref_get_not_dead`
///    fails;
/// 2. only then the parent's `d_lock` (and the child's again, nested: the
///    documented order) to take it off the children list, and in the same
///    hold the child's pin on the parent is dropped.
///
/// So a transient dentry stops being visible *before* its killer queues on
/// the parent's lock: however contended that lock is, it does not keep the
/// name hashed (Linux until 6.7 took the parent's lock first, and so did
/// this function once). Returns the parent when that pin was its
/// last reference: the caller kills or parks it in turn.
fn dentry_kill(
    d: &Arc<Dentry>,
    mut g: LockRefGuard<'_, DLocked>,
    honor_retain: bool,
) -> Option<Arc<Dentry>> {
    if honor_retain && retain_dentry(d) {
        g.set_count(0);
        let over = lru_add(d);
        drop(g);
        crate::trace!("  dput: last reference, kept unused on the LRU");
        if let Some(v) = over {
            shrink_one(v);
        }
        return None;
    }
    crate::trace!("  dput: last reference, not worth caching -> dentry_kill (unhash under its own d_lock, then parent d_lock to unlink it, free after grace period)");
    g.mark_dead();
    d.d_seq.write(|| {
        unhash(d);
        d.inode.replace(None);
    });
    lru_del(d);
    drop(g);
    design::forget(&design::Release {
        complete: d.sb.complete,
        sb_state: &d.sb.design_state,
        dentry: d,
    });
    // Dead and unhashed, nothing can move it any more: a rename moves
    // only dentries its caller holds a reference to, and we held the only
    // one. So the parent pointer is stable without the parent's lock
    // (Linux: "now that it's negative, ->d_parent is stable").
    let parent = d.parent.get_arc()?;
    stats::census_arc(&parent);
    let mut pg = parent.lockref.lock();
    let cg = d.lockref.lock();
    drop(pg.children.remove(d));
    stats::census_untagged_store(&pg.children as *const _ as usize);
    drop(cg);
    if pg.count() > 1 {
        // Not the parent's last reference: dropped inside this hold (and
        // our `Arc` of it on the way out).
        pg.dec();
        drop(pg);
        stats::census_arc(&parent);
        return None;
    }
    drop(pg);
    Some(parent)
}

/// Put an unused dentry on the LRU (caller holds its `d_lock`). If that
/// takes the LRU over its limit, the oldest entry comes off in the same
/// critical section and is returned: the caller hands it to
/// [`shrink_one`] once it holds no lock. So [`nr_unused`](super::nr_unused) never exceeds
/// the limit, not even for the moment between parking and shrinking.
#[must_use]
fn lru_add(d: &Arc<Dentry>) -> Option<Arc<Dentry>> {
    if d.on_lru() {
        return None;
    }
    let dc = dcache();
    let mut lru = dc.lru.lock();
    lru.push_back(d.clone());
    if lru.len() > dc.max_unused.load(Ordering::Relaxed) {
        lru.pop_front()
    } else {
        None
    }
}

/// Take a dentry off the LRU (caller holds its `d_lock`).
fn lru_del(d: &Dentry) {
    if d.on_lru() {
        drop(dcache().lru.lock().remove(d));
    }
}

/// Reclaim up to `n` unused dentries, oldest first (the shrinker asked by
/// memory admission, [`crate::mem`]). Returns how many it took off the
/// LRU. Their memory comes back after a grace period. Stops early when
/// the platform's RCU callback queue has no room for another kill
/// ([`crate::platform::Platform::call_rcu_room`]): reclaim must not be
/// what exhausts memory.
pub fn shrink(n: usize) -> usize {
    let mut taken = 0;
    while taken < n {
        if !crate::platform::get().call_rcu_room(mem::RCU_PER_KILL) {
            crate::trace!("  shrink: no room for RCU callbacks, stopping after {taken}");
            break;
        }
        let victim = dcache().lru.lock().pop_front();
        let Some(v) = victim else { break };
        shrink_one(v);
        taken += 1;
    }
    taken
}

/// Run the shrinker until the LRU is within its limit.
pub fn shrink_to_limit() {
    let dc = dcache();
    let max = dc.max_unused.load(Ordering::Relaxed);
    loop {
        let victim = {
            let mut lru = dc.lru.lock();
            if lru.len() <= max {
                return;
            }
            lru.pop_front()
        };
        let Some(v) = victim else { return };
        shrink_one(v);
    }
}

/// Drop every unused dentry (tests, remount).
pub fn shrink_all() {
    loop {
        let victim = dcache().lru.lock().pop_front();
        let Some(v) = victim else { return };
        shrink_one(v);
    }
}

pub(super) fn shrink_one(v: Arc<Dentry>) {
    // It is off the LRU now. If unused, revive it to count 1 and kill it
    // through the normal path; if someone uses it, just leave it (the last
    // dput will park it again).
    let mut g = v.lockref.lock();
    if g.count() != 0 {
        return;
    }
    g.set_count(1);
    stats::inc(Event::Shrunk);
    // Kill it directly: the retain policy would keep it (the shrinker's
    // decision overrides it).
    if let Some(parent) = dentry_kill(&v, g, false) {
        dput(parent);
    }
}
