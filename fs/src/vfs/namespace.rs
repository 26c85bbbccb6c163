//! The mount table's half of [`Vfs`](super::Vfs): mount, umount and
//! remount (the rules they keep are `vfs.rs`'s opening and
//! docs/vfs-locking.md's), and the [`Namespace`] face the filesystems that
//! mount their own roots (cifs) see.
//!
//! Touches: what `vfs.rs` touches for these calls (the mount table, the
//! dcache's mount flags). Safe code only.

use super::*;

impl Vfs {
    /// Mount a new filesystem of type `fstype` ("tmpfs") on directory `path`.
    pub fn mount(&self, fstype: &str, path: &[u8], opts: &str) -> KResult<()> {
        if fstype != "tmpfs" {
            return Err(Errno::ENODEV);
        }
        let root = tmpfs::new_root(opts)?;
        self.mount_root(path, root)
    }

    /// Mount an already built filesystem root (any type) on directory `path`.
    pub fn mount_root(&self, path: &[u8], root: DRef) -> KResult<()> {
        let lf = LookupFlags {
            follow: true,
            directory: true,
        };
        let (mut mnt, mut mp) = namei::resolve(&self.mounts, path, lf)?;
        loop {
            let inode = mp.inode_arc().ok_or(Errno::ENOENT)?;
            race_point(RacePoint::Mount);
            // Linux `lock_mount`: the mountpoint's inode lock, held from the
            // check that it lives to the attach. rmdir and a rename over it
            // check D_MOUNTED and mark it dead under the same lock, so
            // exactly one of them wins.
            let _lk = inode.i_rwsem.write();
            // Removed (rmdir, or renamed over) since we looked it up:
            // Linux's `cant_mount`, and `d_set_mounted`'s `d_unlinked`.
            if inode.is_dead() || mp.is_negative() || (!mp.is_root() && !mp.is_hashed()) {
                return Err(Errno::ENOENT);
            }
            // Something was mounted here since we looked (mounts here hold
            // this lock too, so nothing more can come now): go on top of it,
            // as `do_lock_mount` does.
            if mp.flags() & D_MOUNTED != 0 {
                if let Some(top) = self.mounts.top_at(&mnt, &mp) {
                    mp = top.root.dget();
                    mnt = top;
                    continue;
                }
            }
            let m = Arc::new(Mount::new(root, Some(mnt), Some(mp)));
            // On ENOSPC the new root goes with `m`, never visible to anyone.
            return self.mounts.attach(m);
        }
    }

    /// `umount(2)` without flags: unmount the filesystem mounted at `path`
    /// (the top one, when mounts are stacked there). As Linux: ENOENT if
    /// `path` does not exist, EINVAL if it is not the root of a mount,
    /// EBUSY while anything stands in the mount (an open file, a walk or
    /// an operation holding a place in it, another mount on or inside it)
    /// and for the namespace root. The unmounted tree is torn down; the
    /// directory below shows again.
    pub fn umount(&self, path: &[u8]) -> KResult<()> {
        let lf = LookupFlags {
            follow: true,
            directory: false,
        };
        let (mnt, d) = namei::resolve(&self.mounts, path, lf)?;
        if !Arc::ptr_eq(d.arc(), mnt.root_arc()) {
            return Err(Errno::EINVAL);
        }
        drop(d);
        race_point(RacePoint::Umount);
        // Our own count (`mnt`) is the caller's, as Linux's path reference.
        self.mounts.umount(&mnt, 1)
    }

    /// Mounts in this namespace, the root included.
    pub fn mount_count(&self) -> usize {
        self.mounts.count()
    }

    /// Mounts attached to a directory that was removed (invisible, never
    /// to be unmounted): 0 unless a mount raced a removal and both won.
    pub fn leaked_mounts(&self) -> usize {
        self.mounts.on_unlinked()
    }

    /// `sysctl fs.mount-max=N` for this namespace (default
    /// [`crate::mount::MOUNT_MAX`], 100,000): a mount beyond it is ENOSPC.
    pub fn set_mount_max(&self, max: usize) {
        self.mounts.set_max(max);
    }

    /// Change the options of the mount whose root is at `path`
    /// (e.g. `enoent=negative`). Unused dentries are pruned so that the new
    /// design starts from a clean cache.
    pub fn remount(&self, path: &[u8], opts: &str) -> KResult<()> {
        let lf = LookupFlags {
            follow: true,
            directory: true,
        };
        let (mnt, d) = namei::resolve(&self.mounts, path, lf)?;
        if !Arc::ptr_eq(d.arc(), mnt.root_arc()) {
            return Err(Errno::EINVAL);
        }
        let o = tmpfs::parse_opts(opts)?;
        if let Some(design) = o.design {
            mnt.sb.set_design(design);
        }
        drop(d);
        dcache::shrink_all();
        Ok(())
    }
}

impl Namespace for Vfs {
    fn mount_root(&self, path: &[u8], root: DRef) -> KResult<()> {
        Vfs::mount_root(self, path, root)
    }
}
