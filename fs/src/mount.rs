//! Mounts: which filesystem is visible at which dentry.
//!
//! A mount joins a superblock's root dentry to a mountpoint dentry in a
//! parent mount. The table of a namespace is a copy-on-write vector behind
//! an RCU pointer, changed under `mount_mutex` inside a `mount_seq` write
//! section, so a walk can cross mounts without locks and prove afterwards
//! (by re-checking `mount_seq`) that nothing was mounted meanwhile. Mounts
//! are never freed while their namespace lives (there is no umount yet), so
//! a walk may borrow them for its whole duration.
//!
//! Touches: the mountpoint dentry's `D_MOUNTED` flag.

use alloc::sync::Arc;
use alloc::vec::Vec;
use core::sync::atomic::{AtomicU64, Ordering};

use crate::dcache::{DRef, Dentry, D_MOUNTED};
use crate::inode::SuperBlock;
use crate::sync::rcu::{RcuCell, RcuGuard, RcuRef};
use crate::sync::seqcount::SeqCount;
use crate::sync::spinlock::SpinLock;

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
}

static NEXT_MNT: AtomicU64 = AtomicU64::new(1);

impl Mount {
    /// A mount of `root` (no parent yet).
    pub fn new(root: DRef, parent: Option<Arc<Mount>>, mountpoint: Option<DRef>) -> Self {
        let sb = root.sb.clone();
        Mount {
            id: NEXT_MNT.fetch_add(1, Ordering::Relaxed),
            parent,
            mountpoint,
            root,
            sb,
        }
    }

    /// The root dentry's `Arc` (for RCU borrowing).
    pub fn root_arc(&self) -> &Arc<Dentry> {
        self.root.arc()
    }
}

/// The mounts of one namespace.
pub struct MountTable {
    list: RcuCell<Vec<Arc<Mount>>>,
    /// `mount_lock`: readers re-check it to prove no mount changed.
    pub seq: SeqCount,
    mutex: SpinLock<()>,
}

impl MountTable {
    /// A table holding just the root mount.
    pub fn new(root: Arc<Mount>) -> Self {
        MountTable {
            list: RcuCell::new(Some(Arc::new(alloc::vec![root]))),
            seq: SeqCount::new(),
            mutex: SpinLock::new(()),
        }
    }

    /// The mount attached at `dentry` in `parent`, if any (Linux
    /// `__lookup_mnt`); the latest one wins when mounts are stacked.
    pub fn lookup<'g>(
        &self,
        parent: &Mount,
        dentry: &Dentry,
        g: &'g RcuGuard,
    ) -> Option<&'g Arc<Mount>> {
        let list: RcuRef<'g, Vec<Arc<Mount>>> = self.list.load(g)?;
        list.get().iter().rev().find(|m| {
            m.parent
                .as_ref()
                .is_some_and(|p| core::ptr::eq(&**p, parent))
                && m.mountpoint
                    .as_ref()
                    .is_some_and(|mp| core::ptr::eq(&**mp, dentry))
        })
    }

    /// Every mount, oldest first (owned references).
    pub fn all(&self) -> Vec<Arc<Mount>> {
        self.list
            .get_arc()
            .map(|l| (*l).clone())
            .unwrap_or_default()
    }

    /// Attach `m` (its parent and mountpoint are set).
    pub fn attach(&self, m: Arc<Mount>) {
        let _g = self.mutex.lock();
        let mut v: Vec<Arc<Mount>> = self
            .list
            .get_arc()
            .map(|l| (*l).clone())
            .unwrap_or_default();
        if let Some(mp) = &m.mountpoint {
            mp.set_flag(D_MOUNTED);
        }
        v.push(m);
        self.seq.write(|| self.list.replace(Some(Arc::new(v))));
    }
}
