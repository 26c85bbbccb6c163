//! The path walk, shaped and named like Linux `fs/namei.c`.
//!
//! A walk resolves a path one component at a time:
//!
//! ```text
//! filename_lookup ── path_lookupat(RCU) ──► ok / errno
//!        │                 │ Restart (a sequence check failed, could not unlazy)
//!        │                 ▼
//!        └────────── path_lookupat(REF) ──► ok / errno
//!
//! path_lookupat = path_init → link_path_walk → lookup_last → complete_walk
//! link_path_walk: for each component but the last → walk_component
//! walk_component: "." / ".." → handle_dots; else lookup_fast, or
//!                 try_to_unlazy + lookup_slow → step_into
//! step_into: cross mounts, follow symlinks (≤ 40), or move onto the child
//! ```
//!
//! **RCU-walk** holds no references and stores nothing shared: positions are
//! [`RcuRef`]s, each with the `d_seq` sampled when we stepped on it. Where
//! the locked walk would take a reference we sample a sequence; where it
//! would drop one we re-check it. So the lockless walk only ever decides
//! what the locked walk could have decided.
//!
//! **try_to_unlazy** turns the current position into a counted reference
//! (validating its `d_seq` and `mount_seq`) and continues in **ref-walk**;
//! if that fails the whole walk restarts in ref-walk. Each handover is
//! counted with its [`FallbackReason`].
//!
//! Differences from Linux, on purpose: (1) the RCU guard is held for the
//! whole walk, also in ref-walk (our tmpfs lookups never sleep; a remote
//! filesystem's lookup holds every grace period up for its round trip,
//! measured in docs/vfs-locking.md); (2) `stat`
//! reads the attributes inside the RCU-walk and validates them with `d_seq`
//! instead of taking a reference in `complete_walk` (Linux's statx always
//! ends with a reference on the target); (3) a noalloc miss can end the walk
//! in RCU mode with ENOENT (see `dcache::design`).
//!
//! Linux steps that have no namesake here, and why:
//! - no `terminate_walk`: the walk state's references (`DRef`, the mount)
//!   and the RCU guard are values that drop when the walk ends, on every
//!   path out, error or not; there is nothing left to release by hand.
//! - `lookup_fast` is two pieces: `Nd::lookup_fast_rcu` returns a
//!   position without a reference plus the `d_seq` to validate it later,
//!   the ref-walk half (in `walk_component`) returns a counted `DRef`.
//!   Linux keeps one function and branches on `LOOKUP_RCU`; here the two
//!   results have different types, so the borrow checker keeps an RCU
//!   position from outliving its guard.
//! - no `LOOKUP_REVAL` retry: Linux's `filename_lookup` runs a third walk
//!   when a filesystem says `ESTALE`. No filesystem here answers `ESTALE`
//!   from a lookup (tmpfs is never stale; an expired cifs negative dentry
//!   is dropped and asked again inside the walk, `FallbackReason::Revalidate`),
//!   so that pass could never run.
//!
//! **Canaries**: every dentry and inode the RCU-walk reaches without a
//! reference (chain entries, `..`, the child's inode) has its canary checked
//! before anything else is read of it ([`crate::poison`]; one load, no
//! store). A dead one means RCU freed it under us: it is counted and the walk
//! restarts in ref-walk. Linux has no such check; KASAN plays that part there.
//!
//! **Tracing**: each step is one [`crate::walk_event::WalkEvent`] (`walk_event!`),
//! which [`crate::trace`] renders as a text line, a `trace json` step, or both.
//!
//! Touches: dcache, mounts, inodes (read), the directory `i_rwsem` (shared,
//! in `lookup_slow`), counters and traces.

pub mod getname;

use alloc::sync::Arc;
use alloc::vec::Vec;
use core::ops::Deref;

use crate::dcache::{
    self, d_canary_ok, d_hash, d_lookup, d_lookup_rcu, design::SlowMiss, DRef, Dentry, Poisoned,
    D_MOUNTED,
};
use crate::errno::{Errno, KResult};
use crate::inode::Inode;
use crate::mount::{Mount, MountTable};
use crate::stats::{self, Event, FallbackReason};
use crate::sync::rcu::{RcuGuard, RcuRef};
use crate::walk_event;
use crate::walk_event::{SeqNote, UnlazyFail};

/// Longest path (bytes, without the NUL), as Linux `PATH_MAX - 1`.
pub const PATH_MAX: usize = 4096;
/// Longest component.
pub const NAME_MAX: usize = 255;
/// Most symlinks followed in one walk (Linux `MAXSYMLINKS`).
pub const MAXSYMLINKS: u32 = 40;

/// Why a walk step stopped: an answer for the caller, or "start over with
/// references" (Linux `-ECHILD`), which never escapes `filename_lookup`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WalkErr {
    Errno(Errno),
    Restart,
}

impl From<Errno> for WalkErr {
    fn from(e: Errno) -> Self {
        WalkErr::Errno(e)
    }
}

type WResult<T> = Result<T, WalkErr>;

/// The kind of the last component (Linux `LAST_NORM` …).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LastType {
    Norm,
    Dot,
    DotDot,
    Root,
}

/// The last component of a path, not yet walked.
#[derive(Debug, Clone, Copy)]
pub struct Last<'p> {
    pub name: &'p [u8],
    pub kind: LastType,
    /// The path ended with `/` after this component.
    pub trailing: bool,
}

/// A walk position: borrowed under RCU, or counted.
pub enum Pos<'g> {
    Rcu(RcuRef<'g, Dentry>),
    Ref(DRef),
}

impl Deref for Pos<'_> {
    type Target = Dentry;
    fn deref(&self) -> &Dentry {
        match self {
            Pos::Rcu(r) => r.get(),
            Pos::Ref(r) => r,
        }
    }
}

/// Walk state (Linux `struct nameidata`).
pub struct Nd<'g> {
    g: &'g RcuGuard,
    /// The namespace walked: its root and its mount hash.
    ns: &'g MountTable,
    /// In RCU-walk?
    pub rcu: bool,
    mnt: &'g Arc<Mount>,
    /// In ref-walk, a count on `mnt` unless it is the namespace root (an
    /// umount of it is EBUSY while we stand in it; Linux's `path.mnt`
    /// reference). `None` in RCU-walk: `mount_seq` proves it instead.
    held: Option<Arc<Mount>>,
    d: Pos<'g>,
    /// `d_seq` of `d`, sampled when we stepped on it (RCU-walk).
    seq: u32,
    /// `mount_lock`'s count at the start (`mount_seq` in the trace).
    m_seq: u32,
    /// Symlinks followed so far.
    nlinks: u32,
}

impl<'g> Nd<'g> {
    /// Linux `path_init`: start at the namespace root (all our paths are
    /// absolute; a relative one is taken relative to the root too).
    fn path_init(g: &'g RcuGuard, ns: &'g MountTable, rcu: bool) -> Self {
        let mnt = ns.root();
        let m_seq = ns.mount_lock.raw_begin();
        let (d, seq) = if rcu {
            let r = RcuRef::from_arc(mnt.root_arc());
            (Pos::Rcu(r), r.d_seq.raw_begin())
        } else {
            (Pos::Ref(mnt.root.dget()), 0)
        };
        Nd {
            g,
            ns,
            rcu,
            mnt,
            held: None,
            d,
            seq,
            m_seq,
            nlinks: 0,
        }
    }

    /// `mount_seq` now against its sample at the start (for the trace).
    fn mount_seq(&self) -> SeqNote {
        SeqNote::check("mount_seq", self.m_seq, self.ns.mount_lock.peek())
    }

    /// Make `Pos` for a dentry found under our guard.
    fn pos(&self, d: RcuRef<'g, Dentry>) -> WResult<Pos<'g>> {
        if self.rcu {
            Ok(Pos::Rcu(d))
        } else {
            dcache::dget_not_dead(d)
                .map(Pos::Ref)
                .ok_or(WalkErr::Errno(Errno::ENOENT))
        }
    }

    /// The inode of the current position (a directory, or we would not be
    /// walking through it).
    fn inode(&self) -> Option<RcuRef<'g, Inode>> {
        self.d.inode.load(self.g)
    }

    /// Linux `try_to_unlazy`: leave RCU-walk, keeping the current position
    /// by taking a counted reference on it. On failure nothing may touch the
    /// walk state: the caller returns `Restart` and the walk starts over in
    /// ref-walk.
    fn try_to_unlazy(&mut self, why: FallbackReason) -> WResult<()> {
        debug_assert!(self.rcu, "try_to_unlazy outside RCU-walk");
        stats::fallback(why);
        walk_event!(Unlazy, d: &self.d, why);
        // Nothing was mounted or unmounted since we started: checked after
        // taking a count on our mount (`MountTable::hold`, Linux
        // `legitimize_mnt`), so an umount either sees the count or we see it.
        let Ok(held) = self.ns.hold(self.mnt, self.m_seq) else {
            walk_event!(UnlazyFailed, d: &self.d, how: UnlazyFail::MountSeq(self.mount_seq()));
            return Err(WalkErr::Restart);
        };
        let Pos::Rcu(r) = self.d else { return Ok(()) };
        let d_seq = || SeqNote::check("d_seq", self.seq, r.d_seq.peek());
        let Some(held_d) = dcache::dget_not_dead(r) else {
            stats::fallback(FallbackReason::Dead);
            walk_event!(UnlazyFailed, d: r.get(), how: UnlazyFail::Dead);
            return Err(WalkErr::Restart);
        };
        // The dentry we hold is still the one we walked onto: its name,
        // parent and inode did not change since we sampled d_seq.
        if r.d_seq.read_retry(self.seq) {
            walk_event!(UnlazyFailed, d: r.get(), how: UnlazyFail::DSeq(d_seq()));
            drop(held_d);
            return Err(WalkErr::Restart);
        }
        walk_event!(Unlazied, d: r.get(), seq: d_seq());
        self.d = Pos::Ref(held_d);
        self.held = held;
        self.rcu = false;
        Ok(())
    }

    /// A sequence check failed in RCU-walk: count it and restart.
    fn restart(&self, why: FallbackReason) -> WalkErr {
        stats::fallback(why);
        walk_event!(Restart, d: &self.d, why);
        WalkErr::Restart
    }

    /// Linux `handle_dots`: `.` stays, `..` goes up (across mount roots,
    /// never above the namespace root).
    fn handle_dots(&mut self, kind: LastType) -> WResult<()> {
        if kind != LastType::DotDot {
            return Ok(());
        }
        loop {
            let mnt: &'g Arc<Mount> = self.mnt;
            let at_mnt_root = core::ptr::eq(&*self.d, &**mnt.root_arc());
            if !at_mnt_root {
                break;
            }
            match (&mnt.parent, &mnt.mountpoint) {
                (Some(parent_mnt), Some(mp)) => {
                    // Up to the mountpoint in the parent mount (which the
                    // child mount keeps alive).
                    let mp_arc = mp.arc();
                    self.d = if self.rcu {
                        let r = RcuRef::from_arc(mp_arc);
                        self.seq = r.d_seq.raw_begin();
                        Pos::Rcu(r)
                    } else {
                        Pos::Ref(mp.dget())
                    };
                    self.mnt = parent_mnt;
                    if !self.rcu {
                        // Safe to count without `hold`: the mount we
                        // leave, which we count, counts its parent.
                        self.held = (!self.ns.is_root(parent_mnt)).then(|| parent_mnt.clone());
                    }
                    walk_event!(DotDotMount, d: &self.d, rcu: self.rcu, mount: parent_mnt.id);
                }
                _ => return Ok(()), // the namespace root: `..` stays
            }
        }
        let Some(parent) = self.d.parent.load(self.g) else {
            return Ok(());
        };
        if self.rcu {
            // The parent pointer was read without a reference: the parent
            // must still be alive (its child's reference is released only
            // through call_rcu).
            if !d_canary_ok(&parent) {
                return Err(self.restart(FallbackReason::Poisoned));
            }
            let pseq = parent.d_seq.raw_begin();
            // The child still had this parent when we read it.
            if self.d.d_seq.read_retry(self.seq) {
                return Err(self.restart(FallbackReason::DentrySeq));
            }
            self.d = Pos::Rcu(parent);
            self.seq = pseq;
        } else {
            self.d = self.pos(parent)?;
        }
        walk_event!(DotDot, d: &self.d, rcu: self.rcu, seq: self.seq);
        Ok(())
    }

    /// Linux `lookup_fast` in RCU mode. `Ok(Some)`: found (dentry + seq).
    /// `Ok(None)`: not in the dcache (and not an authoritative miss).
    fn lookup_fast_rcu(
        &mut self,
        name: &[u8],
        hash: u64,
    ) -> WResult<Option<(RcuRef<'g, Dentry>, u32)>> {
        let Pos::Rcu(parent) = self.d else {
            unreachable!("lookup_fast_rcu in ref-walk")
        };
        // Sample before searching: if the directory's children or any
        // chain change meanwhile, a miss proves nothing.
        let dir_seq = parent.dir_seq.raw_begin();
        let rename_seq = dcache::dcache().rename_lock.raw_begin();
        let found = match d_lookup_rcu(&parent, name, hash, self.g) {
            Ok(found) => found,
            // The chain led onto a freed dentry (counted): nothing this walk
            // read there can be believed; start over with references.
            Err(Poisoned) => return Err(self.restart(FallbackReason::Poisoned)),
        };
        if let Some((child, cseq)) = found {
            walk_event!(FastHit, name, hash, d: child.get(), seq: cseq);
            // The parent did not change since we stepped on it: the
            // ref-walk would be holding it here.
            if parent.d_seq.read_retry(self.seq) {
                return Err(self.restart(FallbackReason::DentrySeq));
            }
            return Ok(Some((child, cseq)));
        }
        let (sb, dir) = (&parent.sb, parent.get());
        let design = sb.design();
        let enoent = design.rcu_miss_is_enoent(&dcache::design::Miss {
            complete: sb.complete,
            sb_state: &sb.design_state,
            dir,
            name,
        });
        walk_event!(FastMiss, name, hash, dir, dir_seq, design: design.name(), enoent);
        if !enoent {
            self.try_to_unlazy(FallbackReason::CacheMiss)?;
            return Ok(None);
        }
        // Check 1 of 3 before a miss may answer ENOENT: no name was
        // added to or removed from this directory since before the
        // search (a create racing with us bumps `dir_seq`, so a miss
        // sampled before it would be stale).
        walk_event!(MissCheck, name, dir,
            seq: SeqNote::check("dir_seq", dir_seq, dir.dir_seq.peek()));
        if parent.dir_seq.read_retry(dir_seq) {
            self.try_to_unlazy(FallbackReason::DirSeq)?;
            return Ok(None);
        }
        // Check 2 of 3: no rename anywhere. A rename moves a dentry onto
        // another hash chain while we may be walking it, so the search
        // can miss a name that was there all along (why Linux's
        // `d_lookup` retries under `rename_lock`).
        walk_event!(MissCheck, name, dir,
            seq: SeqNote::check("rename_seq", rename_seq, dcache::dcache().rename_lock.peek()));
        if dcache::dcache().rename_lock.read_retry(rename_seq) {
            self.try_to_unlazy(FallbackReason::GlobalSeq)?;
            return Ok(None);
        }
        // Check 3 of 3: the parent itself is still the dentry we stepped
        // on (not killed, moved or mounted over); otherwise the miss is
        // about a directory that is no longer on this path.
        if parent.d_seq.read_retry(self.seq) {
            return Err(self.restart(FallbackReason::DentrySeq));
        }
        // What the filesystem's lookup would have said first.
        check_name(name)?;
        walk_event!(FastEnoent, name, hash, dir, dir_seq, rename_seq, design: design.name());
        Err(WalkErr::Errno(Errno::ENOENT))
    }

    /// Linux `lookup_slow`: ask the filesystem with the directory lock held
    /// shared; the design decides whether a miss allocates.
    fn lookup_slow(&mut self, name: &[u8], hash: u64) -> WResult<DRef> {
        let Pos::Ref(parent) = &self.d else {
            unreachable!("lookup_slow in RCU-walk")
        };
        let dir = parent.inode_arc().ok_or(Errno::ENOENT)?;
        // The clone and, at the end, the drop of `dir` write its `Arc`
        // count: a line every CPU's misses in this directory share.
        stats::census_arc(&dir);
        let _dir_drop = stats::CensusArcDrop(&dir);
        crate::fault::race_point(crate::fault::RacePoint::LookupSlow);
        let _shared = dir.i_rwsem.read();
        // Removed since we stepped on it (rmdir, or a rename over it, marks
        // it dead under the lock we now hold): nothing may be looked up,
        // let alone hashed, in it (Linux `__lookup_slow`'s `IS_DEADDIR`).
        if dir.is_dead() {
            return Err(WalkErr::Errno(Errno::ENOENT));
        }
        walk_event!(Slow, name, dir: parent);
        // Borrowed, not cloned: the superblock outlives the parent we hold,
        // and a clone would write its reference count, a line every CPU's
        // lookups then fight over (Linux's `d_sb` is a plain pointer).
        let sb = &parent.sb;
        match sb.design().slow_miss(&dcache::design::Miss {
            complete: sb.complete,
            sb_state: &sb.design_state,
            dir: parent,
            name,
        }) {
            SlowMiss::Enoent => {
                // Look again under the lock: a create may have finished.
                if let Some(d) = d_lookup(parent, name, hash) {
                    walk_event!(SlowFound, name, d: &d);
                    return Ok(d);
                }
                // Like tmpfs's `simple_lookup`, only a name that reaches
                // the filesystem is checked for length.
                check_name(name)?;
                walk_event!(SlowEnoent, name, dir: parent);
                Err(WalkErr::Errno(Errno::ENOENT))
            }
            // As Linux's `__lookup_slow`: allocate first, then look (inside
            // d_alloc_parallel), so a lookup that loses a race still paid
            // for its dentry. A refused allocation ends the walk with ENOMEM.
            SlowMiss::AllocAndAsk => {
                match dcache::d_alloc_parallel(parent.arc(), &dir, name, hash)? {
                    dcache::Parallel::Found(d) => {
                        walk_event!(ParallelFound, name, d: &d);
                        Ok(d)
                    }
                    dcache::Parallel::InLookup(d) => {
                        walk_event!(ParallelAlloc, name, d: &d);
                        let r = check_name(name).and_then(|()| sb.ops.lookup(sb, &dir, name));
                        let res = match r {
                            Ok(inode) => {
                                d.d_time
                                    .store(now_ms(), core::sync::atomic::Ordering::Relaxed);
                                let positive = inode.is_some();
                                dcache::d_add_in_lookup(d.arc(), &dir, inode);
                                walk_event!(DAdd, name, d: &d, fs: sb.ops.fs_type(), positive);
                                Ok(())
                            }
                            Err(e) => Err(e),
                        };
                        dcache::d_lookup_done(&d);
                        res?;
                        Ok(d)
                    }
                }
            }
        }
    }

    /// Linux `walk_component` for a normal name. Returns a symlink body to
    /// follow, or `None` once we stand on the child.
    fn walk_component(&mut self, name: &'g [u8], follow: bool) -> WResult<Option<&'g [u8]>> {
        let hash = d_hash(&self.d, name);
        let child = if self.rcu {
            match self.lookup_fast_rcu(name, hash)? {
                Some((child, cseq)) if !stale_negative(&child) => {
                    return self.step_into(name, Pos::Rcu(child), cseq, follow);
                }
                Some((child, _)) => {
                    // An expired negative (Linux `d_revalidate` failing):
                    // drop it with references held and ask again.
                    self.try_to_unlazy(FallbackReason::Revalidate)?;
                    if let Some(c) = dcache::dget_not_dead(child) {
                        dcache::d_drop(&c);
                    }
                    self.lookup_slow(name, hash)?
                }
                // Missed and unlazied: straight to the filesystem, as Linux.
                None => self.lookup_slow(name, hash)?,
            }
        } else {
            // Ref-walk from the start (Linux `lookup_fast` without RCU).
            match d_lookup(&self.d, name, hash) {
                Some(d) if stale_negative(&d) => {
                    dcache::d_drop(&d);
                    drop(d);
                    self.lookup_slow(name, hash)?
                }
                Some(d) => {
                    walk_event!(RefHit, name, d: &d);
                    d
                }
                None => self.lookup_slow(name, hash)?,
            }
        };
        self.step_into(name, Pos::Ref(child), 0, follow)
    }

    /// Linux `step_into`: cross mounts on the child, then follow a symlink
    /// or move onto it. Negative → ENOENT.
    fn step_into(
        &mut self,
        name: &[u8],
        mut child: Pos<'g>,
        mut cseq: u32,
        follow: bool,
    ) -> WResult<Option<&'g [u8]>> {
        walk_event!(StepInto, name, d: &child, rcu: self.rcu);
        let mut mnt = self.mnt;
        // In ref-walk, the count on each mount crossed into (the last one
        // replaces `self.held`).
        let mut held: Option<Option<Arc<Mount>>> = None;
        while child.flags() & D_MOUNTED != 0 {
            let m = if self.rcu {
                self.ns.lookup(mnt, &child, self.g)
            } else {
                // Linux `lookup_mnt`: look and count until `mount_lock`
                // says no umount ran in between.
                loop {
                    let seq = self.ns.mount_lock.read_begin();
                    let Some(m) = self.ns.lookup(mnt, &child, self.g) else {
                        break None;
                    };
                    if let Ok(h) = self.ns.hold(m, seq) {
                        held = Some(h);
                        break Some(m);
                    }
                }
            };
            let Some(m) = m else {
                break;
            };
            walk_event!(MountHere, name, d: &child, mount: m.id, fs: m.sb.ops.fs_type(),
                seq: self.rcu.then(|| self.mount_seq()));
            // As Linux `__follow_mount_rcu`: crossing a mount without
            // references is only sound while no mount changed since the
            // walk began (a mount we did not see, or one being taken down).
            if self.rcu && self.ns.mount_lock.read_retry(self.m_seq) {
                return Err(self.restart(FallbackReason::GlobalSeq));
            }
            mnt = m;
            child = if self.rcu {
                let r = RcuRef::from_arc(m.root_arc());
                cseq = r.d_seq.raw_begin();
                Pos::Rcu(r)
            } else {
                Pos::Ref(m.root.dget())
            };
            walk_event!(MountRoot, name, root: &child, rcu: self.rcu, seq: cseq);
        }
        let inode = child.inode.load(self.g);
        // What we read of the child (inode, mount flag) belongs to the name
        // we matched: nothing renamed or instantiated it meanwhile.
        if self.rcu {
            walk_event!(ChildCheck, name, d: &child,
                seq: SeqNote::check("d_seq", cseq, child.d_seq.peek()));
            if child.d_seq.read_retry(cseq) {
                return Err(self.restart(FallbackReason::DentrySeq));
            }
        }
        let Some(inode) = inode else {
            walk_event!(Negative, name, d: &child, rcu: self.rcu);
            return Err(Errno::ENOENT.into());
        };
        // The inode was reached without a reference: it must still be alive
        // (the dentry's reference on it is released only through call_rcu).
        if self.rcu && !inode.canary_ok() {
            return Err(self.restart(FallbackReason::Poisoned));
        }
        if inode.is_symlink() && follow {
            self.nlinks += 1;
            if self.nlinks > MAXSYMLINKS {
                return Err(Errno::ELOOP.into());
            }
            let body: &'g [u8] = inode.get().link_body();
            walk_event!(Symlink, name, d: &child, rcu: self.rcu, body, nlinks: self.nlinks);
            if body.is_empty() {
                return Err(Errno::ENOENT.into());
            }
            return Ok(Some(body));
        }
        walk_event!(Onto, name, d: &child, rcu: self.rcu);
        self.mnt = mnt;
        if let Some(h) = held {
            self.held = h;
        }
        self.d = child;
        self.seq = cseq;
        Ok(None)
    }

    /// Jump to the namespace root (an absolute symlink body).
    fn jump_root(&mut self) {
        let mnt = self.ns.root();
        self.mnt = mnt;
        self.held = None;
        if self.rcu {
            let r = RcuRef::from_arc(mnt.root_arc());
            self.seq = r.d_seq.raw_begin();
            self.d = Pos::Rcu(r);
        } else {
            self.d = Pos::Ref(mnt.root.dget());
        }
    }

    /// The current position must be a directory to walk through it (Linux's
    /// `may_lookup` is the MAY_EXEC permission check; there are no
    /// permissions here, only this "is a directory" check, which Linux makes
    /// in `link_path_walk` via `d_can_lookup`).
    ///
    /// In RCU-walk this reads the inode afresh, after `step_into` validated
    /// it: a failure proves something only while `d_seq` still holds. (The
    /// dentry may have been killed since: its inode cleared, the stress
    /// test saw `file/x` answer ENOENT instead of ENOTDIR.) Success needs
    /// no check here: the next lookup validates the parent's `d_seq`.
    fn must_be_dir(&self) -> WResult<()> {
        let e = match self.inode() {
            Some(i) if i.is_dir() => return Ok(()),
            Some(_) => Errno::ENOTDIR,
            None => Errno::ENOENT,
        };
        if self.rcu && self.d.d_seq.read_retry(self.seq) {
            return Err(self.restart(FallbackReason::DentrySeq));
        }
        Err(e.into())
    }

    /// Linux `link_path_walk`: walk every component but the last one of the
    /// outermost path; returns that last one.
    fn link_path_walk(&mut self, path: &'g [u8]) -> WResult<Last<'g>> {
        let mut stack: Vec<&'g [u8]> = Vec::new();
        let mut rest = path;
        loop {
            while rest.first() == Some(&b'/') {
                rest = &rest[1..];
            }
            if rest.is_empty() {
                match stack.pop() {
                    Some(s) => {
                        rest = s;
                        continue;
                    }
                    None => {
                        return Ok(Last {
                            name: b"/",
                            kind: LastType::Root,
                            trailing: false,
                        })
                    }
                }
            }
            let end = rest.iter().position(|&c| c == b'/').unwrap_or(rest.len());
            let (comp, mut after) = rest.split_at(end);
            let trailing = !after.is_empty();
            while after.first() == Some(&b'/') {
                after = &after[1..];
            }
            let kind = match comp {
                b"." => LastType::Dot,
                b".." => LastType::DotDot,
                _ => LastType::Norm,
            };
            if after.is_empty() && stack.is_empty() {
                return Ok(Last {
                    name: comp,
                    kind,
                    trailing,
                });
            }
            self.must_be_dir()?;
            if kind != LastType::Norm {
                self.handle_dots(kind)?;
            } else if let Some(body) = self.walk_component(comp, true)? {
                if !after.is_empty() {
                    stack.push(after);
                }
                if body.first() == Some(&b'/') {
                    self.jump_root();
                }
                rest = body;
                continue;
            }
            rest = after;
        }
    }

    /// Linux `lookup_last` + the trailing-symlink loop of `path_lookupat`:
    /// resolve the final component.
    /// Returns whether the name finally resolved had a trailing slash
    /// (its own, or one of a symlink body on the way): it must be a
    /// directory then.
    fn lookup_last(&mut self, mut last: Last<'g>, follow: bool) -> WResult<bool> {
        loop {
            match last.kind {
                LastType::Root => return Ok(last.trailing),
                LastType::Dot | LastType::DotDot => {
                    self.must_be_dir()?;
                    self.handle_dots(last.kind)?;
                    return Ok(last.trailing);
                }
                LastType::Norm => {
                    self.must_be_dir()?;
                    match self.walk_component(last.name, follow || last.trailing)? {
                        None => return Ok(last.trailing),
                        Some(body) => {
                            let trailing = last.trailing;
                            if body.first() == Some(&b'/') {
                                self.jump_root();
                            }
                            last = self.link_path_walk(body)?;
                            last.trailing |= trailing;
                        }
                    }
                }
            }
        }
    }

    /// Linux `complete_walk` for RCU-walk: everything we decided still
    /// holds (the final dentry's `d_seq` and `mount_seq` did not move).
    fn complete_walk(&self) -> WResult<()> {
        if self.rcu {
            let d = &*self.d;
            walk_event!(CompleteWalk, d, seq: SeqNote::check("d_seq", self.seq, d.d_seq.peek()));
            if self.d.d_seq.read_retry(self.seq) {
                return Err(self.restart(FallbackReason::DentrySeq));
            }
            walk_event!(CompleteWalk, d, seq: self.mount_seq());
            if self.ns.mount_lock.read_retry(self.m_seq) {
                return Err(self.restart(FallbackReason::GlobalSeq));
            }
        }
        Ok(())
    }

    /// A counted reference to the current position (leaves RCU-walk).
    fn take_ref(&mut self) -> WResult<(Arc<Mount>, DRef)> {
        if self.rcu {
            self.try_to_unlazy(FallbackReason::Other)?;
        }
        let Pos::Ref(d) = &self.d else { unreachable!() };
        Ok((self.mnt.clone(), d.dget()))
    }
}

/// How to treat the final component.
#[derive(Clone, Copy, Debug, Default)]
pub struct LookupFlags {
    /// Follow a final symlink (`stat`, not `lstat`).
    pub follow: bool,
    /// The result must be a directory.
    pub directory: bool,
}

/// What a resolved walk hands to its `finish` step: the final dentry and
/// its inode, readable under the walk's guard.
pub struct Resolved<'a, 'g> {
    nd: &'a mut Nd<'g>,
}

impl<'g> Resolved<'_, 'g> {
    /// The final dentry.
    pub fn dentry(&self) -> &Dentry {
        &self.nd.d
    }
    /// Its inode (`None` cannot happen after a successful walk, but a
    /// filesystem might race; callers map it to ENOENT).
    pub fn inode(&self) -> Option<RcuRef<'g, Inode>> {
        self.nd.inode()
    }
    /// Leave RCU-walk and return counted references (Linux
    /// `complete_walk` + `path_get`).
    pub fn take_ref(&mut self) -> WResult<(Arc<Mount>, DRef)> {
        self.nd.take_ref()
    }
    /// A count on the final dentry's mount for what outlives the walk (an
    /// open file: umount is EBUSY while it is open), without leaving
    /// RCU-walk; `None` for the namespace root, which is never unmounted.
    pub fn mount_held(&mut self) -> WResult<Option<Arc<Mount>>> {
        let nd = &mut *self.nd;
        if !nd.rcu {
            return Ok(nd.held.clone());
        }
        if nd.ns.is_root(nd.mnt) {
            // Nothing to count; `complete_walk` checks `mount_seq`.
            return Ok(None);
        }
        nd.ns
            .hold(nd.mnt, nd.m_seq)
            .map_err(|()| nd.restart(FallbackReason::GlobalSeq))
    }
}

/// Linux `filename_lookup`: RCU-walk first, then ref-walk on `Restart`.
/// `finish` runs at the end of a successful walk; in RCU-walk its result
/// counts only if the final `d_seq` still validates afterwards.
pub fn filename_lookup<T>(
    ns: &MountTable,
    path: &[u8],
    flags: LookupFlags,
    finish: &mut dyn FnMut(&mut Resolved<'_, '_>) -> WResult<T>,
) -> KResult<T> {
    stats::inc(Event::Lookup);
    if path.is_empty() {
        return Err(Errno::ENOENT);
    }
    if path.len() >= PATH_MAX {
        return Err(Errno::ENAMETOOLONG);
    }
    let mut rcu = true;
    let mut r = path_lookupat(ns, path, flags, &mut rcu, finish);
    if matches!(r, Err(WalkErr::Restart)) {
        rcu = false;
        r = path_lookupat(ns, path, flags, &mut rcu, finish);
    }
    stats::census_walk_done();
    if rcu {
        stats::inc(Event::RcuWalk);
    }
    walk_event!(Result, path, rcu, result: result_name(&r));
    match r {
        Ok(v) => Ok(v),
        Err(WalkErr::Errno(e)) => {
            if e == Errno::ENOENT {
                stats::inc(Event::Enoent);
            }
            Err(e)
        }
        Err(WalkErr::Restart) => {
            // Only RCU-walk restarts; a ref-walk never returns it.
            debug_assert!(false, "ref-walk returned Restart");
            Err(Errno::EIO)
        }
    }
}

/// How a walk ended, in the trace's words.
fn result_name<T>(r: &WResult<T>) -> &'static str {
    match r {
        Ok(_) => "ok",
        Err(WalkErr::Errno(e)) => e.name(),
        Err(WalkErr::Restart) => "EIO",
    }
}

fn path_lookupat<T>(
    ns: &MountTable,
    path: &[u8],
    flags: LookupFlags,
    rcu: &mut bool,
    finish: &mut dyn FnMut(&mut Resolved<'_, '_>) -> WResult<T>,
) -> WResult<T> {
    let g = RcuGuard::new();
    let mut nd = Nd::path_init(&g, ns, *rcu);
    let r = walk_and_finish(&mut nd, path, flags, finish);
    // Report whether the walk stayed lockless to the end.
    *rcu = nd.rcu;
    r
}

fn walk_and_finish<'g, T>(
    nd: &mut Nd<'g>,
    path: &'g [u8],
    flags: LookupFlags,
    finish: &mut dyn FnMut(&mut Resolved<'_, '_>) -> WResult<T>,
) -> WResult<T> {
    walk_event!(PathInit, path, root: &nd.d, rcu: nd.rcu, seq: nd.seq, parent: false);
    let last = nd.link_path_walk(path)?;
    let trailing = nd.lookup_last(last, flags.follow)?;
    if flags.directory || trailing {
        // Must be a directory: the same check (and validation) as walking
        // through it.
        nd.must_be_dir()?;
    }
    let v = finish(&mut Resolved { nd });
    // Validate before trusting the answer, an error included: in RCU-walk
    // `finish` re-reads the inode, which a concurrent kill may have
    // cleared after step_into validated it.
    nd.complete_walk()?;
    let v = v?;
    walk_event!(Done, rcu: nd.rcu);
    Ok(v)
}

/// The parent of a path's last component, referenced, for operations that
/// create or remove names (Linux `filename_parentat`).
pub struct Parent {
    pub mnt: Arc<Mount>,
    pub dir: DRef,
    pub last: Vec<u8>,
    pub kind: LastType,
    pub trailing: bool,
}

/// Linux `filename_parentat`.
pub fn filename_parentat(ns: &MountTable, path: &[u8]) -> KResult<Parent> {
    if path.len() >= PATH_MAX {
        return Err(Errno::ENAMETOOLONG);
    }
    filename_parentat_unchecked(ns, path)
}

/// `filename_parentat` for a path we built ourselves (a symlink body
/// joined to its directory): PATH_MAX applies to what the caller passed,
/// not to this.
pub fn filename_parentat_unchecked(ns: &MountTable, path: &[u8]) -> KResult<Parent> {
    stats::inc(Event::Lookup);
    if path.is_empty() {
        return Err(Errno::ENOENT);
    }
    let mut r = parentat(ns, path, true);
    if r.as_ref().err() == Some(&WalkErr::Restart) {
        r = parentat(ns, path, false);
    }
    match r {
        Ok(p) => Ok(p),
        Err(WalkErr::Errno(e)) => Err(e),
        Err(WalkErr::Restart) => {
            // Only RCU-walk restarts; a ref-walk never returns it.
            debug_assert!(false, "ref-walk returned Restart");
            Err(Errno::EIO)
        }
    }
}

fn parentat(ns: &MountTable, path: &[u8], rcu: bool) -> WResult<Parent> {
    let g = RcuGuard::new();
    let mut nd = Nd::path_init(&g, ns, rcu);
    walk_event!(PathInit, path, root: &nd.d, rcu: nd.rcu, seq: nd.seq, parent: true);
    let last = nd.link_path_walk(path)?;
    nd.must_be_dir()?;
    let (mnt, dir) = nd.take_ref()?;
    Ok(Parent {
        mnt,
        dir,
        last: last.name.to_vec(),
        kind: last.kind,
        trailing: last.trailing,
    })
}

/// The platform clock in milliseconds (dentry confirmation times).
pub fn now_ms() -> u64 {
    crate::platform::get().now_ns() / 1_000_000
}

/// Is `d` a negative dentry its filesystem no longer vouches for? Never for
/// complete filesystems (tmpfs): no call, no store on their hot path.
fn stale_negative(d: &Dentry) -> bool {
    !d.sb.complete
        && d.is_negative()
        && !d
            .sb
            .ops
            .negative_valid(d.d_time.load(core::sync::atomic::Ordering::Relaxed))
}

/// ENAMETOOLONG for a component the filesystem would refuse.
pub fn check_name(name: &[u8]) -> Result<(), Errno> {
    if name.len() > NAME_MAX {
        Err(Errno::ENAMETOOLONG)
    } else {
        Ok(())
    }
}

/// Resolve `path` fully and return counted references to the result.
pub fn resolve(ns: &MountTable, path: &[u8], flags: LookupFlags) -> KResult<(Arc<Mount>, DRef)> {
    filename_lookup(ns, path, flags, &mut |r| r.take_ref())
}
