//! The VFS's calls into a cifs mount: [`CifsFs`]'s [`FsOps`], shaped as
//! Linux's `cifs_lookup`, `cifs_getattr`, `cifs_readdir` (with
//! `cifs_prime_dcache`), the xattr handlers and the data and namespace
//! operations. Each turns into requests on the mount's connection and
//! brings the inode and the dcache up to date with the answer; the state
//! they keep is [`CifsFs`]'s and [`CifsInode`]'s (in `mod.rs`).
//!
//! Touches: the mount's connection and EA state, the dcache entries of its
//! own superblock.

use alloc::string::String;
use alloc::sync::Arc;
use core::sync::atomic::Ordering;

use super::errmap::SmbErrno;
use super::{data_errno, CifsFs, CifsInode, ATTR_DIRECTORY};
use crate::dcache::{self, d_hash, DRef};
use crate::errno::{Errno, KResult};
use crate::inode::{FsOps, Inode, SuperBlock};
use crate::types::FileType;
use smb::wire::create::FILE_CREATE;
use smb::OpenKind;

impl FsOps for CifsFs {
    fn fs_type(&self) -> &'static str {
        "cifs"
    }

    fn as_any(&self) -> &dyn core::any::Any {
        self
    }

    fn lookup(&self, sb: &SuperBlock, dir: &Inode, name: &[u8]) -> KResult<Option<Arc<Inode>>> {
        let path = Self::child_path(dir, name, self.opts.remap)?;
        let sample = self.ea_sample();
        let r = self.conn.lock().stat(&path);
        match r {
            Ok(st) => {
                let now = self.now();
                let i = self.make_inode(sb, path, st.directory, st.end_of_file, st.file_id, now);
                self.apply_stat(&i, &st, sample);
                Ok(Some(i))
            }
            Err(e) if e.errno() == Errno::ENOENT => Ok(None),
            Err(e) => Err(data_errno(e)),
        }
    }

    fn writable(&self) -> bool {
        false
    }

    fn has_getattr(&self) -> bool {
        true
    }

    /// Negative answers are believed for the directory attribute window
    /// (acdirmax), like Linux's cifs negative dentry timeout.
    fn negative_valid(&self, d_time_ms: u64) -> bool {
        crate::namei::now_ms().saturating_sub(d_time_ms) < self.opts.acdirmax_ms
    }

    fn getattr(&self, _sb: &SuperBlock, inode: &Arc<Inode>) -> KResult<()> {
        let Some(ci) = inode.private::<CifsInode>() else {
            return Ok(());
        };
        let now = self.now();
        if now.saturating_sub(ci.attr_ms.load(Ordering::Relaxed)) >= self.attr_window(inode) {
            let sample = self.ea_sample();
            let st = Self::map(self.conn.lock().stat(&ci.path()))?;
            self.apply_stat(inode, &st, sample);
            ci.attr_ms.store(now, Ordering::Relaxed);
        }
        self.wsl_refresh(inode, ci, now)
    }

    fn remote(&self) -> bool {
        true
    }

    fn listxattr(&self, inode: &Arc<Inode>) -> KResult<alloc::vec::Vec<u8>> {
        self.ea_list(inode)
    }

    fn getxattr(&self, inode: &Arc<Inode>, name: &[u8]) -> KResult<alloc::vec::Vec<u8>> {
        self.ea_get(inode, name)
    }

    /// Linux's cifs passes no `XATTR_CREATE`/`XATTR_REPLACE` to the server:
    /// the flags are ignored, as there.
    fn setxattr(
        &self,
        inode: &Arc<Inode>,
        name: &[u8],
        value: Option<&[u8]>,
        _flags: u32,
    ) -> KResult<()> {
        self.ea_set(inode, name, value)
    }

    fn read(&self, inode: &Arc<Inode>, off: u64, buf: &mut [u8]) -> KResult<usize> {
        let path = Self::inode_path(inode)?;
        let (data, size) = Self::map(self.conn.lock().read_at(
            &path,
            off,
            buf.len(),
            self.rsize(),
        ))?;
        // Never more than asked, never past the size the same exchange
        // reported (read_at already refused a reply longer than its READ).
        let left = size.saturating_sub(off);
        let n = data
            .len()
            .min(buf.len())
            .min(usize::try_from(left).unwrap_or(usize::MAX));
        buf[..n].copy_from_slice(&data[..n]);
        // The open told us the server's size: keep stat coherent with it.
        inode.set_size(size);
        Ok(n)
    }

    fn write(&self, inode: &Arc<Inode>, off: u64, data: &[u8]) -> KResult<usize> {
        let path = Self::inode_path(inode)?;
        let w = Self::map(self.conn.lock().write_at(&path, off, data, self.wsize()))?;
        self.changed(inode, w.attrs)?;
        Ok(w.bytes as usize)
    }

    fn truncate(&self, inode: &Arc<Inode>, size: u64) -> KResult<()> {
        let path = Self::inode_path(inode)?;
        let attrs = Self::map(self.conn.lock().set_size(&path, size))?;
        self.changed(inode, attrs)
    }

    fn create(
        &self,
        sb: &SuperBlock,
        dir: &Inode,
        name: &[u8],
        kind: FileType,
        _mode: u32,
    ) -> KResult<Arc<Inode>> {
        let path = Self::child_path(dir, name, self.opts.remap)?;
        let ok = match kind {
            FileType::Dir => OpenKind::Directory,
            FileType::File => OpenKind::File,
            FileType::Symlink => return Err(Errno::EOPNOTSUPP),
        };
        let c = Self::map(self.conn.lock().create(&path, ok, FILE_CREATE))?;
        let now = self.now();
        let st = c.stat;
        let i = self.make_inode(
            sb,
            path,
            kind == FileType::Dir,
            st.end_of_file,
            st.file_id,
            now,
        );
        Self::apply_times(&i, &st.times);
        if let Some(ci) = i.private::<CifsInode>() {
            // A new object has no EAs (and an empty listing).
            let sample = self.ea_sample();
            let mut e = ci.ea.lock();
            e.size = 0;
            e.size_sample = sample;
            drop(e);
            if kind == FileType::Dir {
                ci.list_ms.store(now, Ordering::Relaxed);
                ci.list_valid.store(true, Ordering::Relaxed);
            }
        }
        Ok(i)
    }

    fn remove(&self, _dir: &Inode, _name: &[u8], inode: &Inode) -> KResult<()> {
        let path = Self::inode_path(inode)?;
        let kind = if inode.is_dir() {
            OpenKind::Directory
        } else {
            OpenKind::File
        };
        Self::map(self.conn.lock().delete(&path, kind))?;
        // The server may give the number to a new file (ext4 reuses them).
        let mut m = self.inos.lock();
        if m.get(&inode.ino).is_some_and(|p| *p == path) {
            m.remove(&inode.ino);
        }
        Ok(())
    }

    fn rename(
        &self,
        _odir: &Inode,
        _oname: &[u8],
        inode: &Inode,
        ndir: &Inode,
        nname: &[u8],
    ) -> KResult<()> {
        let old = Self::inode_path(inode)?;
        let new = Self::child_path(ndir, nname, self.opts.remap)?;
        Self::map(self.conn.lock().rename(&old, &new))?;
        if let Some(ci) = inode.private::<CifsInode>() {
            *ci.path.lock() = new.clone();
            ci.forget_eas(&self.ea_clock);
            ci.list_valid.store(false, Ordering::Relaxed);
        }
        let mut m = self.inos.lock();
        if m.get(&inode.ino).is_some_and(|p| *p == old) {
            m.insert(inode.ino, new);
        }
        Ok(())
    }

    fn refresh_dir(&self, sb: &SuperBlock, dir: &DRef) -> KResult<()> {
        let inode = dir.inode_arc().ok_or(Errno::ENOENT)?;
        let Some(ci) = inode.private::<CifsInode>() else {
            return Ok(());
        };
        let now = self.now();
        if ci.list_valid.load(Ordering::Relaxed)
            && now.saturating_sub(ci.list_ms.load(Ordering::Relaxed)) < self.opts.acdirmax_ms
        {
            return Ok(());
        }
        let sample = self.ea_sample();
        let entries = Self::map(self.conn.lock().list_dir(&ci.path()))?;
        // Tests: the reply is in, not applied yet (the window of a racing
        // setxattr).
        let hook = self.listing_hook.lock().take();
        if let Some(f) = hook {
            f();
        }
        // Names as the VFS shows them (the wire's mapped characters back),
        // every one checked before anything reaches the dcache.
        let local: alloc::vec::Vec<String> = entries
            .iter()
            .map(|e| smb::remap::from_wire(&e.name, self.opts.remap))
            .collect();
        if let Some(bad) = local.iter().find(|n| !valid_dirent_name(n)) {
            self.bad_names.fetch_add(1, Ordering::Relaxed);
            crate::trace!("  cifs: listed name {bad:?} refused -> EIO");
            return Err(Errno::EIO);
        }
        let _excl = inode.i_rwsem.write();
        let mut seen: alloc::collections::BTreeSet<&[u8]> = alloc::collections::BTreeSet::new();
        let mut order = alloc::vec::Vec::with_capacity(entries.len());
        for (e, name) in entries.iter().zip(&local) {
            let name = name.as_bytes();
            seen.insert(name);
            let hash = d_hash(dir, name);
            let existing = dcache::d_lookup(dir, name, hash);
            let is_dir = e.attributes & ATTR_DIRECTORY != 0;
            match existing.as_ref().and_then(|d| d.inode_arc()) {
                Some(i) if i.is_dir() == is_dir => {
                    self.apply_listing(&i, e, now, sample);
                    order.push(i);
                }
                _ => {
                    if let Some(old) = existing.as_ref() {
                        dir.dir_seq.write(|| dcache::d_delete(old));
                    }
                    let path = Self::child_path(&inode, name, self.opts.remap)?;
                    let child = self.make_inode(sb, path, is_dir, e.end_of_file, e.file_id, now);
                    self.apply_listing(&child, e, now, sample);
                    order.push(child.clone());
                    let d = dcache::d_alloc(dir.arc(), name, hash)?;
                    dir.dir_seq.write(|| dcache::d_add(d.arc(), Some(child)));
                }
            }
        }
        // Entries the server no longer has.
        for c in dcache::children(dir) {
            if !seen.contains(c.name.to_vec().as_slice()) {
                dir.dir_seq.write(|| dcache::d_delete(&c));
            }
        }
        self.remember_listing(&order);
        ci.list_ms.store(now, Ordering::Relaxed);
        ci.list_valid.store(true, Ordering::Relaxed);
        Ok(())
    }
}

/// May a name from a listing become a dentry? Linux's `verify_dirent_name`
/// refuses an empty name or one with `/` (EIO from getdents); a NUL would
/// cut the name short, and `.` or `..` made by the character mapping (the
/// wire's own `.` and `..` were left out already) would alias the directory
/// or its parent; a name over NAME_MAX bytes could never be looked up. Any
/// of them fails the listing before a dentry is made.
fn valid_dirent_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= crate::namei::NAME_MAX
        && name != "."
        && name != ".."
        && !name.contains(['/', '\0'])
}
