//! Inodes and superblocks: what a dentry names.
//!
//! An inode carries the attributes `stat` reports (as atomics, so an
//! RCU-walk can read them without locks and validate with the dentry's
//! `d_seq`), the directory's `i_rwsem`, and the file's bytes or the
//! symlink's target. A superblock is one mounted filesystem instance: its
//! ENOENT design, whether its dcache is complete (tmpfs) and its operations.
//!
//! This file and the dcache import each other, and that is the design, as
//! in Linux (`struct dentry` holds its `struct inode`, `super_operations`
//! and the filesystem's `->lookup` take dentries): a dentry names its
//! inode and superblock, and a superblock carries the ENOENT design the
//! dcache asks on every miss, with that design's words
//! ([`design::DesignState`]), and hands its filesystem the directory's
//! dentry to refresh.
//!
//! Touches: nothing global but the inode-number counter of its superblock
//! (and this CPU's `poison_seen` counter when a canary check fails);
//! creating an inode or growing a file asks memory admission
//! ([`crate::mem`]), which may run the dcache shrinker.

use alloc::boxed::Box;
use alloc::sync::Arc;
use alloc::vec::Vec;
use core::any::Any;
use core::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, AtomicUsize, Ordering};

use crate::dcache::design::{self, EnoentDesign};
use crate::errno::{Errno, KResult};
use crate::mem;
use crate::poison::{self, Canary, INODE_LIVE};
use crate::stats::{self, Event, LastWriter};
use crate::sync::seqcount::SeqCount;
use crate::sync::spinlock::{RwSem, SpinLock};
use crate::types::{FileType, Stat};

/// Bytes of one inode allocation (what [`Inode::new_arc`] asks for).
pub const INODE_BYTES: usize = mem::arc_size::<Inode>();

/// Most bytes a growing file reserves beyond what a write needs.
pub const MAX_GROWTH_SLACK: usize = 1 << 20;

/// One file, directory or symlink.
///
/// Laid out by who touches what, as `DentryInner` is: the first cache line
/// holds what a walk and `stat` read (the canary, the type, the symlink
/// body, the attributes and size), which changes only when the inode
/// itself does. The directory's `i_rwsem` and `i_dir_seq`, which every lookup that asks
/// the filesystem writes, start the second line with the file data's
/// lock: sharing the first, each of those writes cost the other CPUs'
/// walks through this directory a cache miss.
/// `inode_layout_keeps_the_walk_off_the_lock_line` checks it.
#[repr(C, align(64))]
pub struct Inode {
    /// Live while the inode is; RCU readers check it before reading the
    /// inode (see [`Inode::canary_ok`] and `crate::poison`).
    canary: Canary<INODE_LIVE>,
    pub ino: u64,
    mode: AtomicU32,
    nlink: AtomicU32,
    uid: AtomicU32,
    gid: AtomicU32,
    pub kind: FileType,
    /// Set when a directory is removed: nothing may be created in it.
    dead: AtomicBool,
    /// Symlink target (immutable after creation).
    link: Box<[u8]>,
    size: AtomicU64,
    /// The directory lock (`i_rwsem`): shared by lookups that ask the
    /// filesystem, exclusive for changes of the directory's entries.
    pub i_rwsem: RwSem,
    /// Linux `i_dir_seq`: bumped (as its own lock, see
    /// [`SeqCount::write_lock`]) each time a lookup holding `i_rwsem`
    /// shared hashes the answer of its in-lookup dentry here, so that
    /// another lookup whose dcache miss came before that answer knows to
    /// look again (see `dcache::d_alloc_parallel`).
    pub i_dir_seq: SeqCount,
    /// The last CPU to write `i_dir_seq` (for `transfers`).
    pub(crate) i_dir_seq_writer: LastWriter,
    /// Last modification, ns since the Unix epoch (0: not kept, as tmpfs
    /// here keeps no clock; cifs: the server's LastWriteTime).
    mtime_ns: AtomicU64,
    /// File contents (regular files).
    data: SpinLock<Vec<u8>>,
    /// The filesystem's own per-inode state (SMB: path, cache times).
    private: Option<Box<dyn Any + Send + Sync>>,
    /// Extended attributes kept in memory (tmpfs; see [`crate::simple_xattr`]).
    xattrs: SpinLock<crate::simple_xattr::XattrMap>,
}

impl Inode {
    /// A new inode.
    pub fn new(ino: u64, kind: FileType, mode: u32, link: &[u8]) -> Self {
        Inode {
            canary: Canary::new(),
            ino,
            kind,
            mode: AtomicU32::new(mode & 0o7777),
            nlink: AtomicU32::new(if kind == FileType::Dir { 2 } else { 1 }),
            uid: AtomicU32::new(0),
            gid: AtomicU32::new(0),
            size: AtomicU64::new(if kind == FileType::Symlink {
                link.len() as u64
            } else {
                0
            }),
            mtime_ns: AtomicU64::new(0),
            dead: AtomicBool::new(false),
            i_rwsem: RwSem::new(),
            i_dir_seq: SeqCount::new(),
            i_dir_seq_writer: LastWriter::new(),
            data: SpinLock::new(Vec::new()),
            link: link.into(),
            private: None,
            xattrs: SpinLock::new(crate::simple_xattr::XattrMap::new()),
        }
    }

    /// A new inode behind an `Arc`, after asking memory admission for it
    /// and for its symlink target ([`crate::mem`]): `ENOMEM` when refused,
    /// and then nothing is allocated.
    pub fn new_arc(ino: u64, kind: FileType, mode: u32, link: &[u8]) -> KResult<Arc<Inode>> {
        mem::admit(INODE_BYTES)?;
        if !link.is_empty() {
            mem::admit(link.len())?;
        }
        Ok(Arc::new(Inode::new(ino, kind, mode, link)))
    }

    /// A new inode carrying filesystem-private state.
    pub fn with_private(
        ino: u64,
        kind: FileType,
        mode: u32,
        private: Box<dyn Any + Send + Sync>,
    ) -> Self {
        Inode {
            private: Some(private),
            ..Inode::new(ino, kind, mode, b"")
        }
    }

    /// Is the inode still alive? RCU readers that reached it through a
    /// dentry without a reference ask before reading it: one relaxed load
    /// and a compare. A dead one (freed or poisoned memory: an RCU bug) is
    /// counted in `stats::Counters::poison_seen`.
    #[inline(always)]
    pub fn canary_ok(&self) -> bool {
        if self.canary.is_live() {
            return true;
        }
        poison::seen();
        false
    }

    /// Address of the canary word, for tests that look at it once the inode
    /// is freed (the kernel's poisoning self-test).
    pub fn canary_addr(&self) -> usize {
        self.canary.addr()
    }

    /// The filesystem-private state, if it is a `T`.
    pub fn private<T: Any>(&self) -> Option<&T> {
        self.private.as_ref()?.downcast_ref::<T>()
    }

    /// The in-memory extended attributes (tmpfs's store).
    pub(crate) fn xattrs(&self) -> &SpinLock<crate::simple_xattr::XattrMap> {
        &self.xattrs
    }

    /// Is it a directory?
    #[inline]
    pub fn is_dir(&self) -> bool {
        self.kind == FileType::Dir
    }

    /// Is it a symlink?
    #[inline]
    pub fn is_symlink(&self) -> bool {
        self.kind == FileType::Symlink
    }

    /// The symlink target.
    pub fn link_body(&self) -> &[u8] {
        &self.link
    }

    /// Attributes for `stat` (lock-free reads).
    pub fn stat(&self) -> Stat {
        Stat {
            ino: self.ino,
            kind: self.kind,
            size: self.size.load(Ordering::Relaxed),
            mode: self.mode.load(Ordering::Relaxed),
            nlink: self.nlink.load(Ordering::Relaxed),
            uid: self.uid.load(Ordering::Relaxed),
            gid: self.gid.load(Ordering::Relaxed),
            mtime_ns: self.mtime_ns.load(Ordering::Relaxed),
        }
    }

    /// Set the modification time (filesystems that learn it from a server).
    pub fn set_mtime_ns(&self, t: u64) {
        self.mtime_ns.store(t, Ordering::Relaxed);
    }

    /// Set owner, group and mode (filesystems that learn them late).
    pub fn set_owner(&self, uid: u32, gid: u32, mode: u32) {
        self.uid.store(uid, Ordering::Relaxed);
        self.gid.store(gid, Ordering::Relaxed);
        self.mode.store(mode & 0o7777, Ordering::Relaxed);
    }

    /// Set the size attribute (filesystems whose data lives elsewhere).
    pub fn set_size(&self, size: u64) {
        self.size.store(size, Ordering::Relaxed);
    }

    pub(crate) fn inc_nlink(&self) {
        self.nlink.fetch_add(1, Ordering::Relaxed);
    }

    pub(crate) fn dec_nlink(&self) {
        let _ = self
            .nlink
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |n| n.checked_sub(1));
    }

    pub(crate) fn is_dead(&self) -> bool {
        self.dead.load(Ordering::Acquire)
    }

    pub(crate) fn mark_dead(&self) {
        self.dead.store(true, Ordering::Release);
    }

    /// Read file bytes at `off`.
    pub fn read_at(&self, off: u64, buf: &mut [u8]) -> usize {
        let d = self.data.lock();
        let off = off.min(d.len() as u64) as usize;
        let n = buf.len().min(d.len() - off);
        buf[..n].copy_from_slice(&d[off..off + n]);
        n
    }

    /// Write file bytes at `off` (extending with zeros). Growth asks memory
    /// admission first and then allocates fallibly (`try_reserve_exact`):
    /// either refusal is `ENOMEM` and leaves the file as it was.
    pub fn write_at(&self, off: u64, data: &[u8]) -> KResult<usize> {
        let mut d = self.data.lock();
        let off = usize::try_from(off).map_err(|_| Errno::EINVAL)?;
        let end = off.checked_add(data.len()).ok_or(Errno::EINVAL)?;
        if d.capacity() < end {
            // Amortised doubling, as `Vec` would do, but with the slack
            // capped so that a big file near the watermark asks for what
            // it needs rather than twice its size.
            let doubled = d.capacity().saturating_mul(2);
            let want = end.max(doubled.min(end.saturating_add(MAX_GROWTH_SLACK)));
            mem::admit(want)?;
            let len = d.len();
            if d.try_reserve_exact(want - len).is_err() {
                // Admitted, but the allocator had no block that large
                // (fragmentation, or the host itself ran out).
                stats::inc(Event::Enomem);
                return Err(Errno::ENOMEM);
            }
        }
        if d.len() < end {
            d.resize(end, 0);
        }
        d[off..end].copy_from_slice(data);
        self.size.store(d.len() as u64, Ordering::Relaxed);
        Ok(data.len())
    }

    /// Truncate to zero length.
    pub fn truncate(&self) {
        let mut d = self.data.lock();
        d.clear();
        self.size.store(0, Ordering::Relaxed);
    }

    /// Set the length to `size`: cut, or extend with zeros (asking memory
    /// admission as a write does).
    pub fn set_len(&self, size: u64) -> KResult<()> {
        let cur = self.size();
        if size == 0 {
            self.truncate();
        } else if size < cur {
            let mut d = self.data.lock();
            d.truncate(size as usize);
            self.size.store(size, Ordering::Relaxed);
        } else if size > cur {
            let pad = usize::try_from(size - cur).map_err(|_| Errno::EINVAL)?;
            mem::admit(pad)?;
            let zeros = alloc::vec![0u8; pad];
            self.write_at(cur, &zeros)?;
        }
        Ok(())
    }

    /// Current size.
    pub fn size(&self) -> u64 {
        self.size.load(Ordering::Relaxed)
    }
}

/// What a filesystem type provides to the VFS.
pub trait FsOps: Send + Sync {
    /// Name of the type ("tmpfs", "cifs").
    fn fs_type(&self) -> &'static str;
    /// For downcasting to the concrete filesystem (its statistics).
    fn as_any(&self) -> &dyn Any;
    /// Ask the filesystem for `name` in directory `dir` (the dcache had no
    /// entry). `Ok(None)` means it does not exist. Called with `dir`'s
    /// `i_rwsem` held shared.
    fn lookup(&self, sb: &SuperBlock, dir: &Inode, name: &[u8]) -> KResult<Option<Arc<Inode>>>;
    /// Can entries be created or removed by the VFS in this filesystem?
    fn writable(&self) -> bool;
    /// Does `stat` need [`FsOps::getattr`] (attributes that may be stale)?
    fn has_getattr(&self) -> bool {
        false
    }
    /// Bring `inode`'s attributes up to date (may talk to a server). Called
    /// after the walk, outside any lock.
    fn getattr(&self, _sb: &SuperBlock, _inode: &Arc<Inode>) -> KResult<()> {
        Ok(())
    }
    /// May a negative dentry confirmed at `d_time_ms` (platform clock) still
    /// be believed? Only asked for filesystems whose dcache is not
    /// complete; `false` makes the walk drop it and ask again.
    fn negative_valid(&self, _d_time_ms: u64) -> bool {
        true
    }
    /// Bring the dcache's view of directory `dir` up to date before
    /// `readdir` lists it (network filesystems list the server here).
    fn refresh_dir(&self, _sb: &SuperBlock, _dir: &crate::dcache::DRef) -> KResult<()> {
        Ok(())
    }

    // Data and namespace changes. The defaults are tmpfs's: the inode holds
    // the bytes and the dcache is the truth. A remote filesystem
    // ([`FsOps::remote`]) answers each change itself, and the VFS then
    // brings the dcache in line with the answer.

    /// Does the filesystem keep names and data itself (a network
    /// filesystem)? Then the VFS asks [`FsOps::create`], [`FsOps::remove`]
    /// and [`FsOps::rename`] before changing the dcache, and its dentries
    /// are a cache (never pinned).
    fn remote(&self) -> bool {
        false
    }
    /// Read at `off` of a regular file; 0 at end of file.
    fn read(&self, inode: &Arc<Inode>, off: u64, buf: &mut [u8]) -> KResult<usize> {
        Ok(inode.read_at(off, buf))
    }
    /// Write at `off` of a regular file.
    fn write(&self, inode: &Arc<Inode>, off: u64, data: &[u8]) -> KResult<usize> {
        inode.write_at(off, data)
    }
    /// Set a regular file's length (O_TRUNC, `truncate(2)`).
    fn truncate(&self, inode: &Arc<Inode>, size: u64) -> KResult<()> {
        inode.set_len(size)
    }
    /// Remote filesystems: create `name` in `dir` (a file or a directory)
    /// and return its inode. EEXIST if it exists.
    fn create(
        &self,
        _sb: &SuperBlock,
        _dir: &Inode,
        _name: &[u8],
        _kind: crate::types::FileType,
        _mode: u32,
    ) -> KResult<Arc<Inode>> {
        Err(Errno::EOPNOTSUPP)
    }

    // Extended attributes (see `crate::xattr`: the VFS has checked the
    // name's length and `user.`'s file types; these resolve the namespace).
    // The defaults are tmpfs's store.

    /// Every attribute name of `inode`, each followed by a NUL.
    fn listxattr(&self, inode: &Arc<Inode>) -> KResult<Vec<u8>> {
        crate::simple_xattr::tmpfs_list(inode.xattrs())
    }
    /// The value of attribute `name`; ENODATA if it has none.
    fn getxattr(&self, inode: &Arc<Inode>, name: &[u8]) -> KResult<Vec<u8>> {
        crate::simple_xattr::tmpfs_get(inode.xattrs(), inode.is_symlink(), name)
    }
    /// Set attribute `name` (`value` `None`: remove it) with `setxattr`'s
    /// `flags`.
    fn setxattr(
        &self,
        inode: &Arc<Inode>,
        name: &[u8],
        value: Option<&[u8]>,
        flags: u32,
    ) -> KResult<()> {
        crate::simple_xattr::tmpfs_set(inode.xattrs(), inode.is_symlink(), name, value, flags)
    }
    /// Remote filesystems: remove `name` (whose inode is `inode`) from
    /// `dir`; a directory must be empty.
    fn remove(&self, _dir: &Inode, _name: &[u8], _inode: &Inode) -> KResult<()> {
        Err(Errno::EOPNOTSUPP)
    }
    /// Remote filesystems: rename `inode` from `odir/oname` to
    /// `ndir/nname`, replacing what `nname` named.
    fn rename(
        &self,
        _odir: &Inode,
        _oname: &[u8],
        _inode: &Inode,
        _ndir: &Inode,
        _nname: &[u8],
    ) -> KResult<()> {
        Err(Errno::EOPNOTSUPP)
    }
}

/// One mounted filesystem instance.
///
/// Aligned to two cache lines so that, inside its `Arc`, the fields start
/// on a line of their own: every walk reads them (`design`, `ops`), while
/// the `Arc`'s reference count in front of them is written each time a
/// dentry is allocated or freed (a dentry holds its superblock). Sharing
/// one line, each of those writes cost the other CPUs' walks a cache miss.
#[repr(align(128))]
pub struct SuperBlock {
    pub id: u64,
    design: AtomicUsize,
    /// The dcache holds every entry of every directory (tmpfs): a miss is
    /// the truth, no need to ask the filesystem.
    pub complete: bool,
    next_ino: AtomicU64,
    pub ops: Box<dyn FsOps>,
    /// The ENOENT design's own words (see `design::DesignState`).
    pub design_state: design::DesignState,
}

static NEXT_SB: AtomicU64 = AtomicU64::new(1);

impl SuperBlock {
    /// A superblock with the given design index and operations.
    pub fn new(design: usize, complete: bool, ops: Box<dyn FsOps>) -> Self {
        SuperBlock {
            id: NEXT_SB.fetch_add(1, Ordering::Relaxed),
            design: AtomicUsize::new(design),
            complete,
            next_ino: AtomicU64::new(1),
            ops,
            design_state: design::DesignState::default(),
        }
    }

    /// The ENOENT design of this mount.
    #[inline]
    pub fn design(&self) -> &'static dyn EnoentDesign {
        design::DESIGNS[self.design.load(Ordering::Relaxed)]
    }

    /// Switch the ENOENT design (remount).
    pub fn set_design(&self, idx: usize) {
        self.design.store(idx, Ordering::Relaxed);
    }

    /// The operations as their concrete type.
    pub fn ops_as<T: Any>(&self) -> Option<&T> {
        self.ops.as_any().downcast_ref::<T>()
    }

    /// A fresh inode number.
    pub fn alloc_ino(&self) -> u64 {
        self.next_ino.fetch_add(1, Ordering::Relaxed)
    }
}

#[cfg(test)]
mod layout_tests {
    use super::*;
    use core::mem::{align_of, offset_of, size_of};

    /// What a walk and `stat` read of an inode sits on its first cache
    /// line; the directory locks every slow lookup writes (`i_rwsem`,
    /// `i_dir_seq`) start the second (see [`Inode`]).
    #[test]
    fn inode_layout_keeps_the_walk_off_the_lock_line() {
        assert_eq!(
            align_of::<Inode>(),
            64,
            "the Arc's counts get a line of their own"
        );
        let end = |off: usize, len: usize| off + len;
        for last in [
            end(offset_of!(Inode, canary), size_of::<Canary<INODE_LIVE>>()),
            end(offset_of!(Inode, mode), 4),
            end(offset_of!(Inode, nlink), 4),
            end(offset_of!(Inode, uid), 4),
            end(offset_of!(Inode, gid), 4),
            end(offset_of!(Inode, kind), size_of::<FileType>()),
            end(offset_of!(Inode, dead), 1),
            end(offset_of!(Inode, link), size_of::<Box<[u8]>>()),
            end(offset_of!(Inode, size), 8),
        ] {
            assert!(last <= 64, "a field the walk reads ends at byte {last}");
        }
        for first in [
            offset_of!(Inode, i_rwsem),
            offset_of!(Inode, i_dir_seq),
            offset_of!(Inode, i_dir_seq_writer),
            offset_of!(Inode, data),
        ] {
            assert!(first >= 64, "a lock field starts at byte {first}");
        }
    }
}
