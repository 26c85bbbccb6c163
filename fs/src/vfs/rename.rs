//! `rename(2)`, the one call that changes two directories at once: its
//! lock order (`rename_lock`, then both parents' `i_rwsem`s, ancestor
//! first, then the moved and the replaced directory's), its checks, and the
//! move in the dcache (the rules are `vfs.rs`'s opening and
//! docs/vfs-locking.md's).
//!
//! Touches: what `vfs.rs` touches for a change of names (the dcache, the
//! inodes' link counts, a remote filesystem's `rename`). Safe code only.

use super::*;
use crate::sync::seqcount::SeqLockGuard;

/// Take the `i_rwsem`s of two directories for a rename: ancestor first,
/// else by address (renames are serialised, so this cannot deadlock with
/// rmdir's parent-then-child order).
fn lock_two<'a>(
    a: &'a Arc<Dentry>,
    ia: &'a Inode,
    b: &'a Arc<Dentry>,
    ib: &'a Inode,
) -> (
    crate::sync::spinlock::RwWriteGuard<'a>,
    Option<crate::sync::spinlock::RwWriteGuard<'a>>,
) {
    if Arc::ptr_eq(a, b) {
        return (ia.i_rwsem.write(), None);
    }
    let a_first = if dcache::is_ancestor(a, b) {
        true
    } else if dcache::is_ancestor(b, a) {
        false
    } else {
        (Arc::as_ptr(a) as usize) < (Arc::as_ptr(b) as usize)
    };
    if a_first {
        let ga = ia.i_rwsem.write();
        (ga, Some(ib.i_rwsem.write()))
    } else {
        let gb = ib.i_rwsem.write();
        (ia.i_rwsem.write(), Some(gb))
    }
}

impl Vfs {
    /// `rename(2)`.
    pub fn rename(&self, old: &[u8], new: &[u8]) -> KResult<()> {
        let po = filename_parentat(&self.mounts, old)?;
        let pn = filename_parentat(&self.mounts, new)?;
        if !Arc::ptr_eq(&po.mnt, &pn.mnt) {
            return Err(Errno::EXDEV);
        }
        if po.kind != LastType::Norm || pn.kind != LastType::Norm {
            return Err(Errno::EBUSY);
        }
        let remote = po.dir.sb.ops.remote();
        if !remote && !po.dir.sb.ops.writable() {
            return Err(Errno::EROFS);
        }
        race_point(RacePoint::RenameLookup);
        let dc = dcache::dcache();
        let rename_lock = dc.rename_lock.lock();
        let odir = po.dir.inode_arc().ok_or(Errno::ENOENT)?;
        let ndir = pn.dir.inode_arc().ok_or(Errno::ENOENT)?;
        race_point(RacePoint::RenameLock);
        let _locks = lock_two(po.dir.arc(), &odir, pn.dir.arc(), &ndir);
        // Either directory may have been removed (rmdir, or a rename over
        // it) between our lookups and these locks: nothing may move into or
        // out of a dead directory (Linux: `IS_DEADDIR` in
        // `lookup_one_qstr_excl` and `may_create`). Their `i_rwsem`s, held
        // now, are what a removal marks them dead under.
        if odir.is_dead() || ndir.is_dead() {
            return Err(Errno::ENOENT);
        }
        let old_d = Self::lookup_victim(&po, &odir)?;
        let old_inode = old_d.inode_arc().ok_or(Errno::ENOENT)?;
        namei::check_name(&pn.last)?;
        // A long new name needs its own copy (d_move): ask before changing
        // anything.
        dcache::admit_long_name(&pn.last)?;
        let new_d = Self::lookup_locked(&pn, &ndir)?;
        let new_inode = new_d.as_ref().and_then(|d| d.inode_arc());
        let ends = Ends {
            po: &po,
            pn: &pn,
            odir: &odir,
            ndir: &ndir,
            remote,
        };
        let target = new_d.as_ref().zip(new_inode.as_ref());
        if ends.may_rename(&old_d, &old_inode, target)? == Verdict::SameFile {
            return Ok(());
        }
        // The children's i_rwsems, source first (Linux 6.12's vfs_rename
        // locks the source directory and the target): a mount holds its
        // mountpoint's from its check that the directory lives to its
        // attach, so the D_MOUNTED checks below and the target's death are
        // one step to it. (Linux locks a source directory only when it
        // changes parents; here always, so that a mount cannot slip
        // between the check and the move.)
        let _olk = old_inode.is_dir().then(|| old_inode.i_rwsem.write());
        if old_d.flags() & D_MOUNTED != 0 {
            return Err(Errno::EBUSY);
        }
        ends.replace_target(&old_inode, target)?;
        ends.move_in_dcache(
            &rename_lock,
            &old_d,
            &old_inode,
            new_d.as_ref(),
            target.is_some(),
        );
        Ok(())
    }
}

/// Whether a rename that passed its checks changes anything.
#[derive(PartialEq, Eq)]
enum Verdict {
    /// Both names are one file already (Linux `vfs_rename`: "If source and
    /// target are the same file, return success").
    SameFile,
    Move,
}

/// The two ends of a rename, both directories locked (`lock_two`) and
/// alive.
struct Ends<'a> {
    po: &'a Parent,
    pn: &'a Parent,
    odir: &'a Arc<Inode>,
    ndir: &'a Arc<Inode>,
    remote: bool,
}

impl Ends<'_> {
    /// The checks that need both ends looked up and nothing yet changed:
    /// trailing slashes, ancestry (Linux `lock_rename`'s trap), the same
    /// file, and directory against non-directory (`may_delete`).
    fn may_rename(
        &self,
        old_d: &DRef,
        old_inode: &Arc<Inode>,
        target: Option<(&DRef, &Arc<Inode>)>,
    ) -> KResult<Verdict> {
        if !old_inode.is_dir() && (self.po.trailing || self.pn.trailing) {
            return Err(Errno::ENOTDIR);
        }
        // Source should not be an ancestor of the target's directory.
        if dcache::is_ancestor(old_d, self.pn.dir.arc()) {
            return Err(Errno::EINVAL);
        }
        let Some((nd, ni)) = target else {
            return Ok(Verdict::Move);
        };
        // Target should not be an ancestor of the source's directory.
        if dcache::is_ancestor(nd, self.po.dir.arc()) {
            return Err(Errno::ENOTEMPTY);
        }
        if Arc::ptr_eq(nd.arc(), old_d.arc()) || Arc::ptr_eq(ni, old_inode) {
            return Ok(Verdict::SameFile);
        }
        if old_inode.is_dir() {
            if !ni.is_dir() {
                return Err(Errno::ENOTDIR);
            }
        } else if ni.is_dir() {
            return Err(Errno::EISDIR);
        }
        Ok(Verdict::Move)
    }

    /// A remote filesystem's rename, and what the replaced target (if any)
    /// loses: its name's link, or, for a directory, its life (marked dead
    /// under its own `i_rwsem`, its cached negatives dropped). Nothing
    /// changes in the dcache when the filesystem refuses.
    fn replace_target(
        &self,
        old_inode: &Arc<Inode>,
        target: Option<(&DRef, &Arc<Inode>)>,
    ) -> KResult<()> {
        let on_fs = || {
            if !self.remote {
                return Ok(());
            }
            let (po, pn) = (self.po, self.pn);
            po.dir
                .sb
                .ops
                .rename(self.odir, &po.last, old_inode, self.ndir, &pn.last)
        };
        let Some((nd, ni)) = target else {
            return on_fs();
        };
        let _vlk = ni.is_dir().then(|| ni.i_rwsem.write());
        if nd.flags() & D_MOUNTED != 0 {
            return Err(Errno::EBUSY);
        }
        if ni.is_dir() {
            if !self.remote && dcache::has_positive_children(nd) {
                return Err(Errno::ENOTEMPTY);
            }
            on_fs()?;
            ni.mark_dead();
            // Its cached negatives go with it (Linux `vfs_rename`).
            dcache::shrink_dcache_parent(nd);
            self.ndir.dec_nlink();
        } else {
            on_fs()?;
            ni.dec_nlink();
        }
        Ok(())
    }

    /// The move itself, once the filesystem has agreed: `d_move` inside
    /// both parents' `dir_seq` write sections (over `new_d`, the new name's
    /// dentry, negative or the `replaced` target), the replaced tmpfs
    /// target's pin dropped, the parents' link counts moved with a
    /// directory.
    fn move_in_dcache(
        &self,
        rename_lock: &SeqLockGuard<'_>,
        old_d: &DRef,
        old_inode: &Arc<Inode>,
        new_d: Option<&DRef>,
        replaced: bool,
    ) {
        let (po, pn) = (self.po, self.pn);
        if self.remote && old_inode.is_dir() {
            // Its children were looked up under the old path: drop them
            // from the cache; the next walk asks again under the new one
            // (its i_rwsem is held: the caller's `_olk`).
            for c in dcache::children(old_d) {
                old_d.dir_seq.write(|| dcache::d_drop(&c));
            }
        }
        // Both directories' child sets change: open both sections.
        po.dir.dir_seq.write_begin();
        let two = !Arc::ptr_eq(po.dir.arc(), pn.dir.arc());
        if two {
            pn.dir.dir_seq.write_begin();
        }
        // The target only loses its name (dropped inside d_move): a walk
        // already holding it still sees the inode it had, as the name
        // existed at every instant.
        let target = new_d.map(|d| &**d);
        dcache::d_move(rename_lock, old_d.arc(), pn.dir.arc(), &pn.last, target);
        if let (Some(nd), true, false) = (new_d, replaced, self.remote) {
            dcache::dput(nd.arc().clone()); // its pin
        }
        if two && old_inode.is_dir() {
            self.odir.dec_nlink();
            self.ndir.inc_nlink();
        }
        if two {
            pn.dir.dir_seq.write_end();
        }
        po.dir.dir_seq.write_end();
    }
}
