//! Mounts: which filesystem is visible at which dentry.
//!
//! A mount joins a superblock's root dentry to a mountpoint dentry in a
//! parent mount. A namespace indexes its mounts by *where* they are, as
//! Linux's mount hash does: a chain of an RCU hash table keyed by the pair
//! (parent mount, mountpoint dentry), so a crossing costs one short chain
//! walk however many mounts exist, and a new mount links one node instead
//! of copying a table. Writers take `mount_lock` (a seqlock, as Linux's)
//! and publish inside its write section; a walk crosses mounts without
//! locks or stores (RCU-walk reads the chain, as it reads the dcache's) and
//! proves afterwards, by re-checking `mount_lock`'s count (`mount_seq` in
//! the trace), that nothing was mounted or unmounted meanwhile.
//!
//! A mount lives while anything counts it (an `Arc`): its hash entry, the
//! mounts on it, and whoever stands in it with references: a ref-walk, an
//! operation's parent, an open file. A walk that found it without a count
//! (RCU) takes one as Linux's `legitimize_mnt` does ([`MountTable::hold`]):
//! the count first, then proof that `mount_lock` did not move. `umount`
//! ([`MountTable::umount`]) opens `mount_lock`'s write section first and
//! counts afterwards: either it sees the walk's count (EBUSY, Linux's
//! `propagate_mount_busy`) or the walk sees the section (and lets go). A
//! walk without a count may borrow a mount for as long as its RCU guard
//! lives (the hash entry's count goes through `call_rcu`).
//!
//! A namespace holds at most [`MOUNT_MAX`] mounts, its root included
//! (Linux's `fs.mount-max` sysctl, same default); one more is ENOSPC.
//!
//! Touches: the mountpoint dentry's `D_MOUNTED` flag; an unmounted tree
//! (torn down with `d_genocide`).

use alloc::sync::Arc;
use alloc::vec::Vec;
use core::sync::atomic::{fence, AtomicBool, AtomicU64, AtomicUsize, Ordering};

use crate::dcache::{self, DRef, Dentry, D_MOUNTED};
use crate::errno::{Errno, KResult};
use crate::inode::SuperBlock;
use crate::sync::rcu::{RcuCell, RcuGuard};
use crate::sync::rculist::{RcuHashTable, RcuLink, RcuNode};
use crate::sync::seqcount::SeqLock;
use crate::sync::spinlock::SpinLock;

/// What a filesystem type that connects and mounts itself (`cifs::mount`)
/// needs of a mount namespace: to attach the root it built on a directory,
/// as Linux's `do_new_mount` attaches what `get_tree` returned.
/// [`crate::vfs::Vfs`] is the namespace; the filesystem types name only
/// this, not the path API.
pub trait Namespace {
    /// Mount `root` (a filesystem's root dentry) on directory `path`.
    fn mount_root(&self, path: &[u8], root: DRef) -> KResult<()>;
}

/// A shared or borrowed namespace is one too (callers hold `Arc<Vfs>`).
impl<N: Namespace + ?Sized> Namespace for Arc<N> {
    fn mount_root(&self, path: &[u8], root: DRef) -> KResult<()> {
        (**self).mount_root(path, root)
    }
}

impl<N: Namespace + ?Sized> Namespace for &N {
    fn mount_root(&self, path: &[u8], root: DRef) -> KResult<()> {
        (**self).mount_root(path, root)
    }
}

/// Most mounts in one namespace, the root included: Linux's default
/// `fs.mount-max` (`sysctl_mount_max`).
pub const MOUNT_MAX: usize = 100_000;

/// Chains in a namespace's mount hash (`1 << MOUNT_HASH_ORDER`): 4096,
/// 32 KiB of heads, about 24 mounts a chain at [`MOUNT_MAX`].
const MOUNT_HASH_ORDER: u32 = 12;

/// One mounted filesystem in the tree.
pub struct Mount {
    pub id: u64,
    /// The mount we are mounted in (`None` for the namespace root).
    pub parent: Option<Arc<Mount>>,
    /// Where in `parent` (a counted reference keeps it alive).
    pub mountpoint: Option<DRef>,
    /// The root dentry of our superblock (counted).
    pub root: DRef,
    pub sb: Arc<SuperBlock>,
    /// Mounts alive whose `parent` is this one, attached or not: their
    /// references are in this mount's `Arc` count but are not users (an
    /// unmounted child keeps its parent until RCU frees it). Raised after
    /// the child holds the reference, lowered before it lets go of it, so
    /// that it never exceeds what the count holds for children.
    kids: AtomicUsize,
    /// Mounts attached on or inside this one (`mount_lock`): while any,
    /// umount is EBUSY (Linux's non-empty `mnt_mounts`).
    attached_kids: AtomicUsize,
    /// Unmounted (`mount_lock`): nothing may be attached to it any more.
    detached: AtomicBool,
}

/// A mount's entry on its mount-hash chain (Linux keeps `mnt_hash` in the
/// mount itself; a separate node lets a walk borrow the `Arc<Mount>`).
///
/// Mounts stacked on one directory (each on the root of the one before,
/// as `mount` on an already mounted path does) form a stack whose bottom
/// entry is at a real directory. The bottom entry also points at the
/// stack's top, so a crossing lands on the visible mount in one step
/// instead of one lookup per mount below it (N stacked mounts would cost
/// every walk through them N lookups: O(N^2) to build the stack).
struct HashEntry {
    link: RcuLink<HashEntry>,
    mnt: Arc<Mount>,
    /// Its own slot in `MountTable::entries`.
    slot: usize,
    /// The slot of this stack's bottom entry.
    bottom: usize,
    /// On a bottom entry with mounts stacked above it: the top one.
    top: RcuCell<HashEntry>,
}

impl RcuNode for HashEntry {
    fn rcu_link(&self) -> &RcuLink<Self> {
        &self.link
    }
}

static NEXT_MNT: AtomicU64 = AtomicU64::new(1);

impl Mount {
    /// A mount of `root` (no parent yet).
    pub fn new(root: DRef, parent: Option<Arc<Mount>>, mountpoint: Option<DRef>) -> Self {
        let sb = root.sb.clone();
        if let Some(p) = &parent {
            p.kids.fetch_add(1, Ordering::SeqCst);
        }
        Mount {
            id: NEXT_MNT.fetch_add(1, Ordering::Relaxed),
            parent,
            mountpoint,
            root,
            sb,
            kids: AtomicUsize::new(0),
            attached_kids: AtomicUsize::new(0),
            detached: AtomicBool::new(false),
        }
    }

    /// The root dentry's `Arc` (for RCU borrowing).
    pub fn root_arc(&self) -> &Arc<Dentry> {
        self.root.arc()
    }
}

impl Drop for Mount {
    /// Let go of the parent chain one mount at a time. Each mount holds its
    /// parent, so a stack of N mounts is a chain of N `Arc`s, and the drop
    /// glue alone would free it by recursion: one level of stack per mount
    /// whose last reference was its child's. That depth depends on the
    /// order the mount-hash entries' RCU callbacks happen to run in (the top
    /// mount's entry last means the whole stack), and 100,000 stacked mounts
    /// (`fs.mount-max`) overflowed the reclaimer thread's 2 MiB stack in CI
    /// (a guest's kernel stacks are smaller still). A parent someone else
    /// still holds ends the loop: it is theirs to drop.
    fn drop(&mut self) {
        let mut next = self.parent.take();
        while let Some(parent) = next {
            // No longer its kid, before the reference goes (see `kids`).
            parent.kids.fetch_sub(1, Ordering::SeqCst);
            // Dropping the unwrapped mount re-enters this `drop` with its
            // parent already taken: one level, never more.
            next = Arc::into_inner(parent).and_then(|mut m| m.parent.take());
        }
    }
}

/// The mount-hash key of a place: the parent mount and the mountpoint
/// dentry, by address (both live as long as the mounts on them).
fn place_hash(parent: &Mount, dentry: &Dentry) -> u64 {
    let a = parent as *const Mount as u64;
    let b = dentry as *const Dentry as u64;
    // Two multiplicative mixes (Knuth's and splitmix's constants), folded:
    // allocation addresses share their low bits, the product spreads them.
    let h = a.wrapping_mul(0x9e37_79b9_7f4a_7c15) ^ b.wrapping_mul(0xbf58_476d_1ce4_e5b9);
    h ^ (h >> 29)
}

/// The mounts of one namespace.
pub struct MountTable {
    /// Every mount but the root, chained by (parent, mountpoint).
    hash: RcuHashTable<HashEntry>,
    /// The namespace's root mount.
    root: Arc<Mount>,
    /// Every entry of `hash` (writers and teardown only).
    entries: SpinLock<Slots>,
    /// Mounts in the namespace, the root included.
    count: AtomicUsize,
    /// The limit on `count` (`fs.mount-max`).
    max: AtomicUsize,
    /// Linux `mount_lock`: writers (attach) hold it; readers re-check its
    /// count to prove no mount changed.
    pub mount_lock: SeqLock,
}

impl MountTable {
    /// A table holding just the root mount.
    pub fn new(root: Arc<Mount>) -> Self {
        MountTable {
            hash: RcuHashTable::new(MOUNT_HASH_ORDER),
            root,
            entries: SpinLock::new(Slots {
                slots: Vec::new(),
                free: Vec::new(),
            }),
            count: AtomicUsize::new(1),
            max: AtomicUsize::new(MOUNT_MAX),
            mount_lock: SeqLock::new(),
        }
    }

    /// The namespace's root mount, where every walk starts (Linux reads it
    /// from `fs_struct`; all our paths are absolute).
    pub fn root(&self) -> &Arc<Mount> {
        &self.root
    }

    /// The entry at exactly (`parent`, `dentry`), newest first.
    fn entry_at<'g>(
        &self,
        parent: &Mount,
        dentry: &Dentry,
        g: &'g RcuGuard,
    ) -> Option<&'g HashEntry> {
        self.hash
            .bucket(place_hash(parent, dentry))
            .iter(g)
            .map(|e| e.get())
            .find(|e| {
                e.mnt
                    .parent
                    .as_ref()
                    .is_some_and(|p| core::ptr::eq(&**p, parent))
                    && e.mnt
                        .mountpoint
                        .as_ref()
                        .is_some_and(|mp| core::ptr::eq(&**mp, dentry))
            })
    }

    /// The mount visible at `dentry` in `parent`, if any (Linux
    /// `__lookup_mnt` followed up a stack): the latest one wins when mounts
    /// are stacked. Lock-free: one chain read under the caller's RCU
    /// read-side section, plus the stack's top pointer.
    pub fn lookup<'g>(
        &self,
        parent: &Mount,
        dentry: &Dentry,
        g: &'g RcuGuard,
    ) -> Option<&'g Arc<Mount>> {
        let e = self.entry_at(parent, dentry, g)?;
        Some(match e.top.load(g) {
            Some(t) => &t.get().mnt,
            None => &e.mnt,
        })
    }

    /// The mount visible at `dentry` in `parent` (the top of its stack),
    /// counted: under `mount_lock`, so that no umount runs meanwhile.
    pub fn top_at(&self, parent: &Mount, dentry: &Dentry) -> Option<Arc<Mount>> {
        let _lock = self.mount_lock.lock();
        let g = RcuGuard::new();
        self.lookup(parent, dentry, &g).cloned()
    }

    /// Mounts attached to a dentry that is no longer linked: its inode
    /// removed or gone, or (not a filesystem root) out of the hash. Each
    /// such mount is invisible and leaked; rmdir, rename and mount keep
    /// this 0 (the oracle of `fs/tests/vfsstress.rs`).
    pub fn on_unlinked(&self) -> usize {
        let entries = self.entries.lock();
        entries
            .iter()
            .filter(|e| {
                e.mnt.mountpoint.as_ref().is_some_and(|mp| {
                    mp.inode_arc().is_none_or(|i| i.is_dead()) || (!mp.is_root() && !mp.is_hashed())
                })
            })
            .count()
    }

    /// Every mount, oldest first (owned references).
    pub fn all(&self) -> Vec<Arc<Mount>> {
        let entries = self.entries.lock();
        core::iter::once(self.root.clone())
            .chain(entries.iter().map(|e| e.mnt.clone()))
            .collect()
    }

    /// Mounts in the namespace, the root included.
    pub fn count(&self) -> usize {
        self.count.load(Ordering::Relaxed)
    }

    /// The most mounts the namespace may hold (`fs.mount-max`).
    pub fn max(&self) -> usize {
        self.max.load(Ordering::Relaxed)
    }

    /// Set the limit (as `sysctl fs.mount-max=N`; at least 1). Mounts
    /// already there stay; new ones are refused while `count >= max`.
    pub fn set_max(&self, max: usize) {
        self.max.store(max.max(1), Ordering::Relaxed);
    }

    /// Attach `m` (its parent and mountpoint are set). ENOSPC when the
    /// namespace already holds `max` mounts.
    pub fn attach(&self, m: Arc<Mount>) -> Result<(), Errno> {
        let lock = self.mount_lock.lock();
        if self.count() >= self.max() {
            return Err(Errno::ENOSPC);
        }
        let (Some(parent), Some(mp)) = (&m.parent, &m.mountpoint) else {
            return Err(Errno::EINVAL);
        };
        // Unmounted since the caller looked its mountpoint up (Linux
        // `do_lock_mount`'s `!is_mounted`).
        if parent.detached.load(Ordering::Relaxed) {
            return Err(Errno::ENOENT);
        }
        let mut entries = self.entries.lock();
        let idx = entries.reserve()?;
        // On the root of a mount that is itself mounted somewhere: one more
        // on that stack, whose bottom entry learns its new top.
        let bottom = if core::ptr::eq(&**mp, &**parent.root_arc()) {
            let g = RcuGuard::new();
            match (&parent.parent, &parent.mountpoint) {
                (Some(pp), Some(pmp)) => self.entry_at(pp, pmp, &g).map(|e| e.bottom),
                _ => None,
            }
        } else {
            None
        };
        let entry = Arc::new(HashEntry {
            link: RcuLink::new(),
            mnt: m.clone(),
            slot: idx,
            bottom: bottom.unwrap_or(idx),
            top: RcuCell::new(None),
        });
        let chain = self.hash.bucket(place_hash(parent, mp));
        mp.set_flag(D_MOUNTED);
        lock.write(|| {
            chain.lock().push_front(entry.clone());
            if let Some(b) = bottom {
                entries.at(b).top.replace(Some(entry.clone()));
            }
        });
        entries.put(idx, entry);
        parent.attached_kids.fetch_add(1, Ordering::Relaxed);
        self.count.fetch_add(1, Ordering::Relaxed);
        Ok(())
    }

    /// Is `m` the namespace's root mount (never unmounted, so a walk
    /// standing in it needs no count on it)?
    #[inline]
    pub fn is_root(&self, m: &Mount) -> bool {
        core::ptr::eq(m, &*self.root)
    }

    /// A counted reference to `m`, found under RCU while `mount_lock`
    /// read `seq` (Linux `legitimize_mnt`): take the count, then prove that
    /// no writer opened `mount_lock` since. `Err(())`: one did (an umount
    /// may have counted without us and be tearing `m` down); let go and
    /// look again. The namespace root needs no count (`Ok(None)`), only
    /// the check.
    #[inline]
    #[allow(clippy::result_unit_err)]
    pub fn hold(&self, m: &Arc<Mount>, seq: u32) -> Result<Option<Arc<Mount>>, ()> {
        let held = if self.is_root(m) {
            None
        } else {
            let h = m.clone();
            // The count before the check, against umount's section before
            // its count (Linux's smp_mb in __legitimize_mnt and do_umount).
            fence(Ordering::SeqCst);
            Some(h)
        };
        if self.mount_lock.read_retry(seq) {
            return Err(());
        }
        Ok(held)
    }

    /// Unmount `m` (Linux `do_umount` without `MNT_DETACH`): EBUSY while
    /// anything but its hash entry and `callers` references counts it
    /// (Linux's `propagate_mount_busy(mnt, 2)`: an open file, a walk or an
    /// operation standing in it, a mount on it or inside it) and for the
    /// namespace root; else it leaves the hash (a walk that crossed into
    /// it without a count sees `mount_lock` move and starts over), its
    /// mountpoint is no longer `D_MOUNTED` (unless another mount is there)
    /// and its tree is torn down (`d_genocide`: what RCU readers still see
    /// is freed after a grace period). Call with no lock held.
    pub fn umount(&self, m: &Arc<Mount>, callers: usize) -> Result<(), Errno> {
        let (Some(parent), Some(mp)) = (&m.parent, &m.mountpoint) else {
            return Err(Errno::EBUSY);
        };
        let lock = self.mount_lock.lock();
        // The section first, then the count (see `hold`).
        lock.write_begin();
        fence(Ordering::SeqCst);
        let g = RcuGuard::new();
        let chain = self.hash.bucket(place_hash(parent, mp));
        let entry = chain.iter(&g).find(|e| Arc::ptr_eq(&e.get().mnt, m));
        let Some(entry) = entry.map(|e| e.to_arc()) else {
            // Unmounted already (by a racing umount).
            lock.write_end();
            return Err(Errno::EINVAL);
        };
        // Users: the count less the hash entry's, the callers' and the
        // mounts that name it their parent (read after the count: a kid
        // lowers `kids` before it lets go, so this never undercounts), or
        // a mount attached on or inside it.
        let strong = Arc::strong_count(m);
        fence(Ordering::SeqCst);
        let kids = m.kids.load(Ordering::SeqCst);
        if m.attached_kids.load(Ordering::Relaxed) != 0 || strong.saturating_sub(kids) > 1 + callers
        {
            lock.write_end();
            return Err(Errno::EBUSY);
        }
        let mut entries = self.entries.lock();
        // The top of a stack: its bottom entry's top is now the mount
        // below (or nothing, when that is the bottom itself).
        if entry.bottom != entry.slot {
            let below = match (&parent.parent, &parent.mountpoint) {
                (Some(pp), Some(pmp)) => self.entry_at(pp, pmp, &g).map(|e| e.slot),
                _ => None,
            };
            let new_top = below
                .filter(|&b| b != entry.bottom)
                .and_then(|b| entries.slots[b].clone());
            entries.at(entry.bottom).top.replace(new_top);
        }
        chain.lock().remove(&entry);
        entries.take(entry.slot);
        drop(entries);
        if !chain.iter(&g).any(|e| {
            let e = e.get();
            e.mnt
                .parent
                .as_ref()
                .is_some_and(|p| Arc::ptr_eq(p, parent))
                && e.mnt
                    .mountpoint
                    .as_ref()
                    .is_some_and(|d| core::ptr::eq(&**d, &**mp))
        }) {
            mp.clear_flag(D_MOUNTED);
        }
        m.detached.store(true, Ordering::Relaxed);
        parent.attached_kids.fetch_sub(1, Ordering::Relaxed);
        self.count.fetch_sub(1, Ordering::Relaxed);
        lock.write_end();
        drop(lock);
        drop(g);
        drop(entry);
        dcache::d_genocide(m.root_arc());
        Ok(())
    }
}

impl Drop for MountTable {
    /// A bottom entry's `top` holds the top entry: let go of them all so
    /// the chains' references are the last ones.
    fn drop(&mut self) {
        for e in self.entries.lock().iter() {
            e.top.replace(None);
        }
    }
}

/// The table's entries by slot. A slot is freed by umount and reused by
/// the next mount (a bottom entry's slot is named by the entries stacked
/// on it, so slots do not move; a stack's bottom is never unmounted while
/// something is stacked on it: that mount counts it, EBUSY).
struct Slots {
    slots: Vec<Option<Arc<HashEntry>>>,
    free: Vec<usize>,
}

impl Slots {
    /// A slot for one more entry (ENOMEM when the table cannot grow).
    fn reserve(&mut self) -> Result<usize, Errno> {
        if let Some(&i) = self.free.last() {
            return Ok(i);
        }
        self.slots.try_reserve(1).map_err(|_| Errno::ENOMEM)?;
        // Room to free it again without allocating (umount must not fail
        // for memory).
        self.free
            .try_reserve(self.slots.len() + 1 - self.free.len())
            .map_err(|_| Errno::ENOMEM)?;
        Ok(self.slots.len())
    }

    /// Fill slot `i`, which [`Slots::reserve`] returned.
    fn put(&mut self, i: usize, e: Arc<HashEntry>) {
        if i == self.slots.len() {
            self.slots.push(Some(e));
        } else {
            let f = self.free.pop();
            debug_assert_eq!(f, Some(i));
            self.slots[i] = Some(e);
        }
    }

    /// Empty slot `i` for reuse.
    fn take(&mut self, i: usize) -> Option<Arc<HashEntry>> {
        let e = self.slots.get_mut(i)?.take();
        if e.is_some() {
            self.free.push(i);
        }
        e
    }

    fn at(&self, i: usize) -> &HashEntry {
        self.slots[i].as_ref().expect("a stack's bottom entry")
    }

    fn iter(&self) -> impl Iterator<Item = &Arc<HashEntry>> {
        self.slots.iter().flatten()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `hold`'s contract with `umount` (Linux `legitimize_mnt` against
    /// `do_umount`): a count taken and proved before an umount makes it
    /// EBUSY; a lookup made before an umount cannot be proved after it.
    #[test]
    fn a_hold_and_an_umount_see_each_other() {
        let v = crate::vfs::Vfs::new_tmpfs("").unwrap();
        v.mkdir(b"/m", 0o755).unwrap();
        v.mount("tmpfs", b"/m", "").unwrap();
        let ns = v.mnt_ns();
        let root = ns.root().root.dget();
        let mp = crate::dcache::d_lookup(&root, b"m", crate::dcache::d_hash(&root, b"m")).unwrap();
        let found = |seq: u32| {
            let g = RcuGuard::new();
            let m = ns.lookup(ns.root(), &mp, &g).expect("mounted");
            (m.clone(), ns.hold(m, seq).map(|h| h.is_some()))
        };
        // Held: umount is EBUSY (the caller's reference is `m`).
        let seq = ns.mount_lock.read_begin();
        let g = RcuGuard::new();
        let held = ns.hold(ns.lookup(ns.root(), &mp, &g).unwrap(), seq);
        drop(g);
        let held = held.expect("nothing moved").expect("counted");
        let (m, _) = found(seq);
        assert_eq!(ns.umount(&m, 1), Err(Errno::EBUSY));
        drop(held);
        // Looked up before the umount, proved after it: refused.
        let seq = ns.mount_lock.read_begin();
        let g = RcuGuard::new();
        let borrowed = ns.lookup(ns.root(), &mp, &g).unwrap();
        assert_eq!(ns.umount(&m, 1), Ok(()));
        assert!(ns.hold(borrowed, seq).is_err(), "a hold across an umount");
        drop(g);
        assert!(ns.lookup(ns.root(), &mp, &RcuGuard::new()).is_none());
    }

    /// A stack deeper than `fs.mount-max`, freed in the worst order (every
    /// mount below the top already let go of by all but its child), on a
    /// thread whose stack holds a few thousand levels of drop glue at most:
    /// without the iterative `Drop` the recursion overflows it.
    #[test]
    fn a_deep_mount_stack_drops_without_recursion() {
        std::thread::Builder::new()
            .stack_size(256 * 1024)
            .spawn(|| {
                let root = crate::fstype::tmpfs::new_root("").unwrap();
                let mut top: Option<Arc<Mount>> = None;
                for _ in 0..2 * MOUNT_MAX {
                    let m = Mount::new(root.dget(), top.take(), Some(root.dget()));
                    top = Some(Arc::new(m));
                }
                let top = top.unwrap();
                let mut depth = 0;
                let mut m = Some(&top);
                while let Some(x) = m {
                    depth += 1;
                    m = x.parent.as_ref();
                }
                assert_eq!(depth, 2 * MOUNT_MAX);
                drop(top);
            })
            .unwrap()
            .join()
            .unwrap();
    }
}
