//! The in-lookup table: dentries whose filesystem lookup is in progress
//! (Linux `d_alloc_parallel`, `d_lookup_done` and `__d_add` with
//! `start_dir_add`, in `fs/dcache.c`).
//!
//! A lookup that misses in the dcache and must ask the filesystem first
//! publishes a fresh dentry here, so that a second lookup of the same
//! (parent, name) waits for the first one's answer instead of asking the
//! filesystem again and hashing a second dentry for the name. Each bucket
//! is a spinlock over a short list; a directory's `i_dir_seq` closes the
//! window between a lookup's dcache search and its search here.
//!
//! Touches: the dcache's in-lookup buckets, the parent inode's `i_dir_seq`
//! (and its writer tag), the new dentry's flags; the census and counters.
//!
//! It imports [`crate::inode`], which imports the dcache back: the
//! sequence lives on the parent's inode, as Linux's `i_dir_seq` does on
//! `struct inode` (the one circle the dcache keeps; see the module's
//! opening).

use alloc::sync::Arc;
use alloc::vec::Vec;

use super::{d_add_locked, d_alloc, d_lookup, dcache, DRef, Dentry, D_PAR_LOOKUP};
use crate::errno::KResult;
use crate::inode::Inode;
use crate::stats::{self, Event};
use crate::sync::rcu::RcuGuard;
use crate::sync::seqcount::SeqCount;
use crate::sync::spinlock::SpinLock;

/// Buckets of the in-lookup table (Linux has 1 << `IN_LOOKUP_SHIFT`).
pub(super) const IN_LOOKUP_BUCKETS: usize = 256;

/// One bucket of the in-lookup table, alone on its pair of cache lines.
///
/// Linux packs its in-lookup heads eight to a line. Two lookups of
/// unrelated names whose buckets share a line then move it between their
/// CPUs at every lock and unlock: the bucket is theirs alone, the line is
/// not. Which names meet so depends on the hash seed (a new one each
/// boot), so packed buckets would make one run of `statneg-owndir` or
/// `statneg-distinct` share a lock line and the next not: `bench
/// predict`'s census saw it in CI, two lock holds per op on a line both
/// tasks stored to. Packed two to a line, as these 256 were before, two
/// names met on a line in one seed of 128. Padded, they meet only when
/// they share the bucket itself (one seed in 256), and then they share the
/// lock too. 256 buckets × 128 bytes: 32 KiB.
#[repr(align(128))]
pub(super) struct InLookupBucket(pub(super) SpinLock<Vec<Arc<Dentry>>>);

/// Hash the filesystem's answer for the in-lookup dentry `d` under `dir`
/// (whose `i_rwsem` the caller holds shared), inside a write section of
/// `dir`'s `i_dir_seq` (Linux `__d_add` with `start_dir_add`): another
/// lookup of the same name that missed in the dcache before this and
/// searches the in-lookup table after [`d_lookup_done`] sees the count
/// move and looks again, instead of hashing a second dentry for the name.
/// Then call [`d_lookup_done`].
pub fn d_add_in_lookup(d: &Arc<Dentry>, dir: &Inode, inode: Option<Arc<Inode>>) {
    let line = &dir.i_dir_seq as *const SeqCount as usize;
    let start = dir.i_dir_seq.write_lock();
    stats::inc(Event::SharedStore);
    dir.i_dir_seq_writer.note(line);
    d_add_locked(d, inode);
    dir.i_dir_seq.write_unlock(start);
    stats::inc(Event::SharedStore);
    stats::census_line_store(line);
}

/// The outcome of [`d_alloc_parallel`].
pub enum Parallel {
    /// Someone else had it (or finished looking it up meanwhile).
    Found(DRef),
    /// A fresh dentry in the in-lookup table: ask the filesystem, then
    /// `d_add` and [`d_lookup_done`].
    InLookup(DRef),
}

fn in_lookup_bucket(hash: u64) -> &'static SpinLock<Vec<Arc<Dentry>>> {
    let b = &dcache().in_lookup;
    &b[(hash as usize ^ (hash >> 40) as usize) % b.len()].0
}

/// Allocate a dentry for a lookup that must ask the filesystem, making sure
/// only one such lookup per (parent, name) is in flight (Linux
/// `d_alloc_parallel`). Caller holds the `i_rwsem` of `dir` (the parent's
/// inode) shared. Like Linux it allocates first, so a refused allocation
/// is `ENOMEM` even when another lookup has just added the name.
///
/// The name is looked for in two places: the dcache, then the in-lookup
/// table. Between the two, another lookup may finish: hash its answer and
/// leave the in-lookup table. Both searches would then miss it, and this
/// lookup would hash a second dentry for the same name (with the negative
/// design a negative one that outlives a later create of the name: the
/// stress test's false ENOENT). `dir`'s `i_dir_seq`, sampled before the
/// dcache search and checked under the in-lookup bucket lock, catches
/// exactly that window: [`d_add_in_lookup`] bumps it before the other
/// lookup's [`d_lookup_done`] takes the same lock.
pub fn d_alloc_parallel(
    parent: &Arc<Dentry>,
    dir: &Inode,
    name: &[u8],
    hash: u64,
) -> KResult<Parallel> {
    let new = d_alloc(parent, name, hash)?;
    stats::census_parallel_lookup();
    loop {
        let seq = dir.i_dir_seq.read_begin();
        if let Some(d) = d_lookup(parent, name, hash) {
            stats::inc(Event::ParallelFound);
            return Ok(Parallel::Found(d));
        }
        let mut b = in_lookup_bucket(hash).lock();
        // Did another lookup hash an answer in this directory since our
        // dcache search began? Its dentry may have left the in-lookup
        // table already: search the dcache again.
        if dir.i_dir_seq.read_retry(seq) {
            drop(b);
            continue;
        }
        let g = RcuGuard::new();
        let other = b
            .iter()
            .find(|o| {
                o.hash() == hash
                    && o.parent
                        .load(&g)
                        .is_some_and(|p| core::ptr::eq(p.get(), &**parent))
                    && o.name.matches(name, &g)
            })
            .cloned();
        drop(g);
        match other {
            Some(o) => {
                drop(b);
                // Wait for the other lookup to finish, then look again
                // (Linux sleeps in `d_wait_lookup`; we spin, giving the CPU
                // away if it takes long: see `sync::spinwait`).
                stats::inc(Event::InLookupWait);
                let mut wait = crate::sync::spinwait::SpinWait::new();
                while o.flags() & D_PAR_LOOKUP != 0 {
                    wait.turn_on(o.flags_addr(), &|| o.flags_seqcst() & D_PAR_LOOKUP != 0);
                }
            }
            None => {
                new.set_flag(D_PAR_LOOKUP);
                b.push(new.arc().clone());
                stats::census_untagged_store(b.as_ptr() as usize);
                return Ok(Parallel::InLookup(new));
            }
        }
    }
}

/// The filesystem lookup of an in-lookup dentry is over (Linux
/// `d_lookup_done`).
pub fn d_lookup_done(d: &Dentry) {
    let mut b = in_lookup_bucket(d.hash()).lock();
    if let Some(i) = b.iter().position(|o| core::ptr::eq(&***o, &**d)) {
        b.swap_remove(i);
        stats::census_untagged_store(b.as_ptr() as usize);
    }
    d.clear_flag(D_PAR_LOOKUP);
    // Waiters in d_alloc_parallel may have halted (`sync::spinwait`).
    crate::sync::spinwait::wake(d.flags_addr());
}

#[cfg(test)]
mod tests {
    use super::*;

    /// No two in-lookup buckets share a cache line, and none spans two
    /// (see [`InLookupBucket`]).
    #[test]
    fn in_lookup_buckets_have_a_line_each() {
        let lines: Vec<(usize, usize)> = dcache()
            .in_lookup
            .iter()
            .map(|b| {
                let start = &b.0 as *const SpinLock<_> as usize;
                let end = start + core::mem::size_of_val(&b.0) - 1;
                (start / 64, end / 64)
            })
            .collect();
        assert!(lines.iter().all(|(a, b)| a == b), "{lines:?}");
        let mut firsts: Vec<usize> = lines.iter().map(|l| l.0).collect();
        firsts.dedup();
        assert_eq!(firsts.len(), IN_LOOKUP_BUCKETS);
    }
}
