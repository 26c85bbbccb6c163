//! The VFS façade: path-based system calls over a mount tree.
//!
//! This is the API the rest of the project uses (vfsh, the benchmarks, the
//! kernel): every call takes an absolute path as bytes, resolves it with the
//! path walk in [`crate::namei`], and returns a Linux errno on failure.
//!
//! The operations that change names follow Linux's libfs/tmpfs (`simple_*`):
//! the parent's `i_rwsem` exclusively, the parent's `dir_seq` write section
//! around every change of its set of children (so a noalloc RCU-walk miss
//! racing with a create retries), and a pin (an extra count) on every
//! positive tmpfs dentry so that it never becomes unused.
//!
//! A remote filesystem (cifs, [`crate::inode::FsOps::remote`]) is asked
//! first for every change, under the same locks; only its success changes
//! the dcache, so the cache never claims what the server refused: a created
//! name replaces its negative dentry, a removed one leaves the hash, and a
//! renamed directory's cached children are dropped (looked up again under
//! the new name). Its dentries are a cache, never pinned. Names the dcache
//! does not know are looked up (asked of the server) before a change, as
//! Linux's `lookup_one` under the parent's lock. Reads and writes go to the
//! filesystem's `read`/`write`; tmpfs keeps the bytes in the inode.
//!
//! Touches: the dcache and mounts through `namei`; allocates only where the
//! operation creates something (or the ENOENT design says so), and asks
//! memory admission first: a refusal is `ENOMEM` with nothing changed.

mod namespace;
mod rename;

use alloc::sync::Arc;
use alloc::vec::Vec;
use core::sync::atomic::{AtomicU64, Ordering};

use crate::dcache::{self, d_hash, d_lookup, DRef, Dentry, D_MOUNTED};
use crate::errno::{Errno, KResult};
use crate::fault::{race_point, RacePoint};
use crate::fstype::tmpfs;
use crate::inode::{Inode, SuperBlock};
use crate::mount::{Mount, MountTable, Namespace};
use crate::namei::{
    self, filename_lookup, filename_parentat, LastType, LookupFlags, Parent, WalkErr,
};
/// The most a whole-file read ([`Vfs::read_chunks`]) holds at once: one
/// window of the file (8 MiB: a READ of the largest size Samba and Windows
/// offer, and the most a cifs read asks in one call).
pub const READ_WINDOW: usize = 8 << 20;

/// The types of this API's signatures, defined with what a filesystem
/// shares ([`crate::types`]).
pub use crate::types::{DirEntry, FileType, OpenFlags, Stat};

/// A mount namespace: the root mount and everything mounted below it.
/// Share `&Vfs` between threads freely.
pub struct Vfs {
    /// The root mount and the mount hash (what a path walk reads).
    pub(crate) mounts: MountTable,
}

impl Drop for Vfs {
    /// Unmount everything, newest first, and free the trees.
    fn drop(&mut self) {
        for m in self.mounts.all().iter().rev() {
            dcache::d_genocide(m.root_arc());
        }
    }
}

/// What opening finds: the superblock, the inode and the mount (counted,
/// `None` on the namespace root).
type Opened = (Arc<SuperBlock>, Arc<Inode>, Option<Arc<Mount>>);

/// An open file. Reads and writes go through the inode it was opened on,
/// whatever happens to its name afterwards.
pub struct File {
    inode: Arc<Inode>,
    sb: Arc<SuperBlock>,
    /// The mount it was opened through, counted (umount is EBUSY while
    /// the file is open); `None` on the namespace root.
    _mnt: Option<Arc<Mount>>,
    pos: AtomicU64,
    flags: OpenFlags,
}

fn access_mode(f: OpenFlags) -> u32 {
    f.0 & 3
}

impl Vfs {
    /// A fresh namespace with a tmpfs at `/`, mounted with `opts`
    /// (comma-separated, e.g. `"enoent=noalloc"`; empty for defaults).
    pub fn new_tmpfs(opts: &str) -> KResult<Vfs> {
        let root_dentry = tmpfs::new_root(opts)?;
        let root = Arc::new(Mount::new(root_dentry, None, None));
        Ok(Vfs {
            mounts: MountTable::new(root),
        })
    }

    /// The mount namespace a path walk reads (`namei`'s entry points take
    /// it, as Linux's walk reads the root and the mount hash).
    pub fn mnt_ns(&self) -> &MountTable {
        &self.mounts
    }

    /// `stat(2)`: follows a final symlink.
    pub fn stat(&self, path: &[u8]) -> KResult<Stat> {
        self.do_stat(path, true)
    }

    /// `lstat(2)`: does not follow a final symlink.
    pub fn lstat(&self, path: &[u8]) -> KResult<Stat> {
        self.do_stat(path, false)
    }

    fn do_stat(&self, path: &[u8], follow: bool) -> KResult<Stat> {
        let flags = LookupFlags {
            follow,
            directory: false,
        };
        // Attributes that are always current (tmpfs) are read inside the
        // walk; a filesystem with a getattr step gets the inode afterwards.
        let r = filename_lookup(&self.mounts, path, flags, &mut |r| match r.inode() {
            Some(i) if r.dentry().sb.ops.has_getattr() => {
                Ok(Err((r.dentry().sb.clone(), i.to_arc())))
            }
            Some(i) => Ok(Ok(i.stat())),
            None => Err(WalkErr::Errno(Errno::ENOENT)),
        })?;
        match r {
            Ok(st) => Ok(st),
            Err((sb, inode)) => {
                sb.ops.getattr(&sb, &inode)?;
                Ok(inode.stat())
            }
        }
    }

    /// `open(2)` with Linux flag semantics (O_CREAT, O_EXCL, O_TRUNC, O_DIRECTORY ...).
    pub fn open(&self, path: &[u8], flags: OpenFlags, mode: u32) -> KResult<File> {
        if !flags.contains(OpenFlags::CREAT) {
            let lf = LookupFlags {
                follow: !flags.contains(OpenFlags::NOFOLLOW),
                directory: flags.contains(OpenFlags::DIRECTORY),
            };
            let (sb, inode, mnt) = self.lookup_open(path, lf)?;
            return self.open_inode(sb, inode, mnt, flags);
        }
        // O_CREAT: follow a final symlink (unless O_EXCL) by re-walking
        // "<parent path>/<target>", at most MAXSYMLINKS times.
        let mut owned: Vec<u8>;
        let mut path = path;
        let mut followed = false;
        for _ in 0..=namei::MAXSYMLINKS {
            match self.open_creat(path, flags, mode, !followed)? {
                Ok(f) => return Ok(f),
                Err(body) => {
                    owned = if body.first() == Some(&b'/') {
                        body
                    } else {
                        let cut = path.iter().rposition(|&c| c == b'/').map_or(0, |i| i + 1);
                        let mut p = path[..cut].to_vec();
                        p.extend_from_slice(&body);
                        p
                    };
                    path = &owned;
                    followed = true;
                }
            }
        }
        Err(Errno::ELOOP)
    }

    /// One step of O_CREAT: `Ok(Err(body))` asks the caller to follow a
    /// final symlink.
    fn open_creat(
        &self,
        path: &[u8],
        flags: OpenFlags,
        mode: u32,
        user_path: bool,
    ) -> KResult<Result<File, Vec<u8>>> {
        let p = if user_path {
            filename_parentat(&self.mounts, path)?
        } else {
            namei::filename_parentat_unchecked(&self.mounts, path)?
        };
        if p.kind != LastType::Norm {
            // `/`, `.` and `..` exist: O_EXCL says so first.
            return Err(if flags.contains(OpenFlags::EXCL) {
                Errno::EEXIST
            } else {
                Errno::EISDIR
            });
        }
        if p.trailing {
            return Err(Errno::EISDIR);
        }
        let dir = p.dir.inode_arc().ok_or(Errno::ENOENT)?;
        let lk = dir.i_rwsem.write();
        namei::check_name(&p.last)?;
        let existing = Self::lookup_locked(&p, &dir)?;
        if let Some(d) = existing.as_ref() {
            if let Some(inode) = d.inode_arc() {
                if flags.contains(OpenFlags::EXCL) {
                    return Err(Errno::EEXIST);
                }
                if inode.is_dir() {
                    return Err(Errno::EISDIR);
                }
                if d.flags() & D_MOUNTED != 0 {
                    drop(lk);
                    // Opening a mountpoint by name opens what is mounted.
                    let lf = LookupFlags {
                        follow: true,
                        directory: false,
                    };
                    let (sb, inode, mnt) = self.lookup_open(path, lf)?;
                    return self.open_inode(sb, inode, mnt, flags).map(Ok);
                }
                if inode.is_symlink() {
                    if flags.contains(OpenFlags::NOFOLLOW) {
                        return Err(Errno::ELOOP);
                    }
                    return Ok(Err(inode.link_body().to_vec()));
                }
                drop(lk);
                let mnt = self.held(&p.mnt);
                return self.open_inode(p.dir.sb.clone(), inode, mnt, flags).map(Ok);
            }
        }
        if flags.contains(OpenFlags::DIRECTORY) {
            // Linux: O_CREAT|O_DIRECTORY on a missing name.
            return Err(Errno::EINVAL);
        }
        let inode =
            self.create_locked(&p, &dir, existing, crate::vfs::FileType::File, mode, b"")?;
        drop(lk);
        Ok(Ok(File {
            inode,
            sb: p.dir.sb.clone(),
            _mnt: self.held(&p.mnt),
            pos: AtomicU64::new(0),
            flags,
        }))
    }

    /// What an open file keeps of the mount it was opened through.
    fn held(&self, m: &Arc<Mount>) -> Option<Arc<Mount>> {
        (!self.mounts.is_root(m)).then(|| m.clone())
    }

    /// The superblock, inode and (counted) mount of the file at `path`.
    fn lookup_open(&self, path: &[u8], lf: LookupFlags) -> KResult<Opened> {
        filename_lookup(&self.mounts, path, lf, &mut |r| {
            let inode = r.inode().ok_or(WalkErr::Errno(Errno::ENOENT))?.to_arc();
            let mnt = r.mount_held()?;
            Ok((r.dentry().sb.clone(), inode, mnt))
        })
    }

    fn open_inode(
        &self,
        sb: Arc<SuperBlock>,
        inode: Arc<Inode>,
        mnt: Option<Arc<Mount>>,
        flags: OpenFlags,
    ) -> KResult<File> {
        if inode.is_dir() && access_mode(flags) != 0 {
            return Err(Errno::EISDIR);
        }
        if flags.contains(OpenFlags::DIRECTORY) && !inode.is_dir() {
            return Err(Errno::ENOTDIR);
        }
        if flags.contains(OpenFlags::TRUNC)
            && access_mode(flags) != 0
            && inode.kind == FileType::File
        {
            sb.ops.truncate(&inode, 0)?;
        }
        Ok(File {
            inode,
            sb,
            _mnt: mnt,
            pos: AtomicU64::new(0),
            flags,
        })
    }

    /// The dentry of `p.last` in its locked parent (`i_rwsem` exclusive),
    /// positive or negative, or `None` if nothing is known. On a filesystem
    /// whose dcache is not complete a miss (or an expired negative) asks the
    /// filesystem, and a positive answer is added to the dcache (Linux
    /// `lookup_one` under the parent's lock); tmpfs only looks in the cache.
    fn lookup_locked(p: &Parent, dir: &Inode) -> KResult<Option<DRef>> {
        namei::check_name(&p.last)?;
        // Removed (rmdir, or a rename over it) between the caller's lookup
        // and its lock: nothing is in it, and a remote filesystem must not
        // be asked (cifs asks by the path the dead directory still carries,
        // which may name a new one). Linux `lookup_one_qstr_excl`'s
        // `IS_DEADDIR`.
        if dir.is_dead() {
            return Err(Errno::ENOENT);
        }
        let hash = d_hash(&p.dir, &p.last);
        let existing = d_lookup(&p.dir, &p.last, hash);
        let sb = &p.dir.sb;
        if sb.complete {
            return Ok(existing);
        }
        if let Some(d) = existing.as_ref() {
            if !d.is_negative() || sb.ops.negative_valid(d.d_time.load(Ordering::Relaxed)) {
                return Ok(existing);
            }
        }
        let found = sb.ops.lookup(sb, dir, &p.last)?;
        let d = match existing {
            Some(d) => d,
            None => match found {
                None => return Ok(None),
                Some(_) => dcache::d_alloc(p.dir.arc(), &p.last, hash)?,
            },
        };
        d.d_time.store(namei::now_ms(), Ordering::Relaxed);
        p.dir.dir_seq.write(|| dcache::d_add(d.arc(), found));
        Ok(Some(d))
    }

    /// Create a new inode under `p` (parent's `i_rwsem` held exclusively):
    /// reuse a negative dentry or allocate one, instantiate it inside the
    /// parent's `dir_seq` write section, and pin it. Both allocations come
    /// before any change, so `ENOMEM` leaves the directory as it was.
    fn create_locked(
        &self,
        p: &Parent,
        dir: &Inode,
        existing: Option<DRef>,
        kind: FileType,
        mode: u32,
        link: &[u8],
    ) -> KResult<Arc<Inode>> {
        let remote = p.dir.sb.ops.remote();
        if !remote && !p.dir.sb.ops.writable() {
            return Err(Errno::EROFS);
        }
        if dir.is_dead() {
            return Err(Errno::ENOENT);
        }
        let hash = d_hash(&p.dir, &p.last);
        let d = match existing {
            Some(d) => d,
            None => dcache::d_alloc(p.dir.arc(), &p.last, hash)?,
        };
        if remote {
            if !link.is_empty() || kind == FileType::Symlink {
                return Err(Errno::EOPNOTSUPP);
            }
            // The server first; the dcache learns only what it accepted.
            let inode = p.dir.sb.ops.create(&p.dir.sb, dir, &p.last, kind, mode)?;
            d.d_time.store(namei::now_ms(), Ordering::Relaxed);
            p.dir
                .dir_seq
                .write(|| dcache::d_instantiate(d.arc(), inode.clone()));
            return Ok(inode);
        }
        // On ENOMEM here a fresh `d` is dropped unhashed: dput kills it.
        let inode = Inode::new_arc(p.dir.sb.alloc_ino(), kind, mode, link)?;
        p.dir
            .dir_seq
            .write(|| dcache::d_instantiate(d.arc(), inode.clone()));
        if kind == FileType::Dir {
            dir.inc_nlink();
        }
        // The tmpfs pin: a positive dentry is never unused.
        d.lockref.get();
        Ok(inode)
    }

    /// Common start of mkdir/symlink: the parent, its lock, and the check
    /// that the name is free.
    fn create_node(&self, path: &[u8], kind: FileType, mode: u32, link: &[u8]) -> KResult<()> {
        let p = filename_parentat(&self.mounts, path)?;
        if p.kind != LastType::Norm {
            return Err(Errno::EEXIST);
        }
        let dir = p.dir.inode_arc().ok_or(Errno::ENOENT)?;
        let _lk = dir.i_rwsem.write();
        let existing = Self::lookup_locked(&p, &dir)?;
        if existing.as_ref().is_some_and(|d| !d.is_negative()) {
            return Err(Errno::EEXIST);
        }
        if p.trailing && kind != FileType::Dir {
            return Err(Errno::ENOENT);
        }
        self.create_locked(&p, &dir, existing, kind, mode, link)
            .map(|_| ())
    }

    /// `mkdir(2)`.
    pub fn mkdir(&self, path: &[u8], mode: u32) -> KResult<()> {
        self.create_node(path, FileType::Dir, mode, b"")
    }

    /// `symlink(2)`: create `path` pointing at `target`.
    pub fn symlink(&self, target: &[u8], path: &[u8]) -> KResult<()> {
        if target.is_empty() {
            return Err(Errno::ENOENT);
        }
        if target.len() >= namei::PATH_MAX {
            return Err(Errno::ENAMETOOLONG);
        }
        self.create_node(path, FileType::Symlink, 0o777, target)
    }

    /// Find the positive dentry `p.last` in a locked parent (asking a
    /// remote filesystem when the cache does not know it).
    fn lookup_victim(p: &Parent, dir: &Inode) -> KResult<DRef> {
        match Self::lookup_locked(p, dir)? {
            Some(d) if !d.is_negative() => Ok(d),
            _ => Err(Errno::ENOENT),
        }
    }

    /// Remove a positive dentry from its (locked) parent: negative and
    /// unhashed inside the parent's `dir_seq` section, pin dropped (remote
    /// filesystems pin nothing).
    fn remove_locked(dir: &Dentry, victim: &DRef) {
        dir.dir_seq.write(|| dcache::d_delete(victim));
        if !dir.sb.ops.remote() {
            dcache::dput(victim.arc().clone());
        }
    }

    /// `unlink(2)`.
    pub fn unlink(&self, path: &[u8]) -> KResult<()> {
        let p = filename_parentat(&self.mounts, path)?;
        if p.kind != LastType::Norm {
            return Err(Errno::EISDIR);
        }
        let dir = p.dir.inode_arc().ok_or(Errno::ENOENT)?;
        let _lk = dir.i_rwsem.write();
        let victim = Self::lookup_victim(&p, &dir)?;
        let inode = victim.inode_arc().ok_or(Errno::ENOENT)?;
        if inode.is_dir() {
            return Err(Errno::EISDIR);
        }
        if p.trailing {
            return Err(Errno::ENOTDIR);
        }
        let remote = p.dir.sb.ops.remote();
        if !remote && !p.dir.sb.ops.writable() {
            return Err(Errno::EROFS);
        }
        if victim.flags() & D_MOUNTED != 0 {
            return Err(Errno::EBUSY);
        }
        if remote {
            p.dir.sb.ops.remove(&dir, &p.last, &inode)?;
        }
        inode.dec_nlink();
        Self::remove_locked(&p.dir, &victim);
        Ok(())
    }

    /// `rmdir(2)`.
    pub fn rmdir(&self, path: &[u8]) -> KResult<()> {
        let p = filename_parentat(&self.mounts, path)?;
        match p.kind {
            LastType::Dot => return Err(Errno::EINVAL),
            LastType::DotDot => return Err(Errno::ENOTEMPTY),
            LastType::Root => return Err(Errno::EBUSY),
            LastType::Norm => {}
        }
        race_point(RacePoint::Rmdir);
        let dir = p.dir.inode_arc().ok_or(Errno::ENOENT)?;
        let _lk = dir.i_rwsem.write();
        let victim = Self::lookup_victim(&p, &dir)?;
        let inode = victim.inode_arc().ok_or(Errno::ENOENT)?;
        if !inode.is_dir() {
            return Err(Errno::ENOTDIR);
        }
        let remote = p.dir.sb.ops.remote();
        if !remote && !p.dir.sb.ops.writable() {
            return Err(Errno::EROFS);
        }
        // The victim's own i_rwsem: a mount holds it from its check that
        // the directory lives to its attach, so D_MOUNTED read here and
        // the death marked below are one step to it (Linux's vfs_rmdir
        // checks is_local_mountpoint and sets S_DEAD and dont_mount under
        // the same inode lock lock_mount takes).
        let _vlk = inode.i_rwsem.write();
        if victim.flags() & D_MOUNTED != 0 {
            return Err(Errno::EBUSY);
        }
        if remote {
            // The server knows whether it is empty; the cache may not.
            p.dir.sb.ops.remove(&dir, &p.last, &inode)?;
        } else if dcache::has_positive_children(&victim) {
            return Err(Errno::ENOTEMPTY);
        }
        inode.mark_dead();
        // Its cached negatives go with it (Linux `vfs_rmdir`).
        dcache::shrink_dcache_parent(&victim);
        dir.dec_nlink();
        Self::remove_locked(&p.dir, &victim);
        Ok(())
    }

    /// `readlink(2)`.
    pub fn readlink(&self, path: &[u8]) -> KResult<Vec<u8>> {
        let lf = LookupFlags {
            follow: false,
            directory: false,
        };
        filename_lookup(&self.mounts, path, lf, &mut |r| match r.inode() {
            Some(i) if i.is_symlink() => Ok(i.link_body().to_vec()),
            Some(_) => Err(WalkErr::Errno(Errno::EINVAL)),
            None => Err(WalkErr::Errno(Errno::ENOENT)),
        })
    }

    /// All entries of a directory except `.` and `..`, in no particular order.
    pub fn readdir(&self, path: &[u8]) -> KResult<Vec<DirEntry>> {
        let lf = LookupFlags {
            follow: true,
            directory: true,
        };
        let (_mnt, d) = namei::resolve(&self.mounts, path, lf)?;
        let inode = d.inode_arc().ok_or(Errno::ENOENT)?;
        if !inode.is_dir() {
            return Err(Errno::ENOTDIR);
        }
        d.sb.ops.refresh_dir(&d.sb, &d)?;
        let _shared = inode.i_rwsem.read();
        Ok(dcache::children(&d)
            .into_iter()
            .filter_map(|c| {
                let i = c.inode_arc()?;
                Some(DirEntry {
                    name: c.name.to_vec(),
                    ino: i.ino,
                    kind: i.kind,
                })
            })
            .collect())
    }

    /// Convenience: open with O_WRONLY|O_CREAT|O_TRUNC and write `data`.
    pub fn write_file(&self, path: &[u8], data: &[u8]) -> KResult<()> {
        let f = self.open(
            path,
            OpenFlags::WRONLY | OpenFlags::CREAT | OpenFlags::TRUNC,
            0o644,
        )?;
        f.write(data)?;
        Ok(())
    }

    /// Convenience: open read-only and read everything (see
    /// [`Vfs::read_chunks`]). The bytes are kept only while memory
    /// admission and the allocator say yes: a remote file that keeps
    /// growing ends in `ENOMEM` at the memory budget, never past it.
    pub fn read_file(&self, path: &[u8]) -> KResult<Vec<u8>> {
        let mut out = Vec::new();
        self.read_chunks(path, &mut |chunk| {
            let need = out.len().saturating_add(chunk.len());
            if need > out.capacity() {
                // The new buffer is allocated while the old one still
                // lives: admit all of it.
                let cap = need.max(out.capacity().saturating_mul(2));
                crate::mem::admit(cap)?;
                out.try_reserve_exact(cap - out.len())
                    .map_err(|_| Errno::ENOMEM)?;
            }
            out.extend_from_slice(chunk);
            Ok(())
        })?;
        Ok(out)
    }

    /// Open read-only and hand the file to `f` chunk by chunk, in one
    /// window of at most [`READ_WINDOW`] bytes (sized by what `stat` last
    /// reported, at least 4 KiB, so a small network file comes in one
    /// call): however long the file, and whatever its server claims, the
    /// reader holds no more than the window. A short read of a regular
    /// file is its end. Returns the bytes read; stops at `f`'s first error.
    pub fn read_chunks(
        &self,
        path: &[u8],
        f: &mut dyn FnMut(&[u8]) -> KResult<()>,
    ) -> KResult<u64> {
        let file = self.open(path, OpenFlags::RDONLY, 0)?;
        let want = (file.inode.size() as usize).saturating_add(1);
        let mut buf = alloc::vec![0u8; want.clamp(4096, READ_WINDOW)];
        let mut total = 0u64;
        loop {
            let n = file.read(&mut buf)?;
            if n > 0 {
                f(&buf[..n])?;
                total += n as u64;
            }
            if n == 0 || (n < buf.len() && file.inode.kind == FileType::File) {
                return Ok(total);
            }
        }
    }

    /// `truncate(2)`: set the length of the regular file at `path`.
    pub fn truncate(&self, path: &[u8], size: u64) -> KResult<()> {
        let f = self.open(path, OpenFlags::WRONLY, 0)?;
        if f.inode.is_dir() {
            return Err(Errno::EISDIR);
        }
        f.sb.ops.truncate(&f.inode, size)
    }
}

impl File {
    /// Read from the current position; 0 at end of file. EISDIR on a directory.
    pub fn read(&self, buf: &mut [u8]) -> KResult<usize> {
        if self.inode.is_dir() {
            return Err(Errno::EISDIR);
        }
        if access_mode(self.flags) == 1 {
            return Err(Errno::EBADF);
        }
        let pos = self.pos.load(Ordering::Relaxed);
        if buf.is_empty() {
            return Ok(0);
        }
        let n = self.sb.ops.read(&self.inode, pos, buf)?;
        self.pos.store(pos + n as u64, Ordering::Relaxed);
        Ok(n)
    }

    /// Write at the current position (or the end with O_APPEND). EBADF if not
    /// opened for writing.
    pub fn write(&self, data: &[u8]) -> KResult<usize> {
        if access_mode(self.flags) == 0 {
            return Err(Errno::EBADF);
        }
        if self.inode.is_dir() {
            return Err(Errno::EISDIR);
        }
        let pos = if self.flags.contains(OpenFlags::APPEND) {
            self.inode.size()
        } else {
            self.pos.load(Ordering::Relaxed)
        };
        let n = self.sb.ops.write(&self.inode, pos, data)?;
        self.pos.store(pos + n as u64, Ordering::Relaxed);
        Ok(n)
    }

    /// The inode's attributes.
    pub fn stat(&self) -> Stat {
        self.inode.stat()
    }
}
