//! `cifs`: the SMB2/3 client as a filesystem type.
//!
//! The wire protocol and session state live in [`crate::smb`]; this module
//! is the VFS glue, shaped like Linux `fs/smb/client`:
//!
//! - mount options named as Linux's ([`CifsOpts::parse`]);
//! - `lookup` asks the server (CREATE+QUERY_INFO+CLOSE) and caches the
//!   answer in the dcache, negative answers included (they expire with the
//!   attribute window);
//! - `readdir` lists the server (QUERY_DIRECTORY) and primes the dcache
//!   with every entry and its attributes (Linux `cifs_prime_dcache`), so a
//!   `stat` inside acregmax/acdirmax costs no round trip; the listing itself
//!   is reused inside acdirmax;
//! - `getattr` revalidates attributes older than the window and asks for the
//!   WSL EAs when the WSL-EA design says so ([`wslea`]); a tree connect
//!   whose server refuses the EA query itself (STATUS_NOT_SUPPORTED,
//!   STATUS_INVALID_INFO_CLASS: impacket, some NAS) has "no EAs": the stat
//!   succeeds and probing stops until a reconnect (counted in
//!   [`CifsFs::ea_refused`]);
//! - data and changes: `read`/`write` go to the server in chunks within
//!   `rsize`/`wsize` and the negotiated MaxReadSize/MaxWriteSize; create,
//!   mkdir, unlink, rmdir, rename and truncate are one compound each
//!   ([`crate::smb::ops`]); size and mtime afterwards are the server's, and
//!   a changed inode forgets its WSL-EA state (it is asked again);
//! - inode numbers are the server's IndexNumber unless it is 0 or already
//!   names another path (servers that do not keep them): then a unique
//!   local number, as Linux's `iunique`.
//!
//! Touches: one connection (behind a spinlock: requests of one mount are
//! serialised), the dcache entries of its own superblock.

pub mod options;
pub mod wslea;

pub use options::{CifsOpts, OptError, OPTION_NAMES};

use alloc::boxed::Box;
use alloc::format;
use alloc::string::{String, ToString};
use alloc::sync::Arc;
use core::fmt;
use core::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};

use crate::dcache::{self, d_hash, DRef};
use crate::errno::{Errno, KResult};
use crate::inode::{FsOps, Inode, SuperBlock};
use crate::smb::wire::create::{CloseAttrs, FileTimes, FILE_CREATE};
use crate::smb::wire::dirinfo::DirInfo;
use crate::smb::wire::info::FileStat;
use crate::smb::wire::status;
use crate::smb::{Clock, Config, Connection, Connector, OpenKind, SmbError};
use crate::sync::spinlock::SpinLock;
use crate::vfs::{FileType, Vfs};
use wslea::ProbeCtx;

/// FILE_ATTRIBUTE_DIRECTORY
const ATTR_DIRECTORY: u32 = 0x10;
/// FILE_ATTRIBUTE_REPARSE_POINT
const ATTR_REPARSE: u32 = 0x400;

/// Per-inode SMB state.
pub struct CifsInode {
    /// Share-relative path (changes on rename).
    path: SpinLock<String>,
    attr_ms: AtomicU64,
    /// The directory listing was fetched at (directories).
    list_ms: AtomicU64,
    list_valid: AtomicBool,
    /// EaSize from the last listing; `u32::MAX`: unknown / reparse point.
    listing_ea_size: AtomicU32,
    /// When the server last answered a WSL-EA probe for it (0: never).
    answered_ms: AtomicU64,
}

impl CifsInode {
    fn new(path: String, now: u64) -> Self {
        CifsInode {
            path: SpinLock::new(path),
            attr_ms: AtomicU64::new(now),
            list_ms: AtomicU64::new(0),
            list_valid: AtomicBool::new(false),
            listing_ea_size: AtomicU32::new(u32::MAX),
            answered_ms: AtomicU64::new(0),
        }
    }

    /// The share-relative path now.
    pub fn path(&self) -> String {
        self.path.lock().clone()
    }

    /// The inode changed (written, truncated, renamed): what we knew of its
    /// WSL EAs (negcache answer, listing EaSize) no longer holds.
    fn forget_eas(&self) {
        self.answered_ms.store(0, Ordering::Relaxed);
        self.listing_ea_size.store(u32::MAX, Ordering::Relaxed);
    }
}

/// FILETIME (100 ns since 1601) to ns since the Unix epoch (0 before it).
fn filetime_to_unix_ns(ft: u64) -> u64 {
    const EPOCH_DIFF: u64 = 116_444_736_000_000_000;
    ft.saturating_sub(EPOCH_DIFF).saturating_mul(100)
}

/// Per-tree-connect WSL-EA state (the negcache rule).
#[derive(Default)]
struct TconEa {
    no_eas: u32,
    positive: bool,
    stop_ms: Option<u64>,
    /// The server refused the EA query class itself: this tree connect has
    /// no EAs, nothing is asked again until a reconnect (the connection
    /// generation it was refused on).
    refused: Option<u64>,
    conn_epoch: u64,
}

/// One mounted share.
pub struct CifsFs {
    conn: SpinLock<Connection>,
    pub opts: CifsOpts,
    tcon: SpinLock<TconEa>,
    /// Times WSL EAs were probed (for reports).
    pub probes: AtomicU64,
    /// Monotonic epoch of (re)connects seen.
    epoch: AtomicU64,
    /// EA queries the server refused as a class (STATUS_NOT_SUPPORTED /
    /// STATUS_INVALID_INFO_CLASS); each stops probing on its tree connect.
    pub ea_refused: AtomicU64,
    /// Server inode numbers handed out, and the path that has each: a 0 or
    /// a number seen on another path gets a unique local one instead.
    inos: SpinLock<alloc::collections::BTreeMap<u64, String>>,
    /// Inode numbers made up because the server's were 0 or duplicated.
    pub inos_made_up: AtomicU64,
    /// Listed names refused (`/`, NUL, empty, or `.`/`..` after the
    /// mount's character mapping): each failed its listing with EIO.
    pub bad_names: AtomicU64,
}

/// Local inode numbers (never a server's IndexNumber as long as servers
/// stay below 2^62, as Samba's and Windows' do).
const LOCAL_INO: u64 = 1 << 62;

/// Errno of a failed data or namespace operation: Linux's mapping of the
/// statuses these operations meet (`fs/smb/client/smb2maperror.c`), then
/// the common one.
fn data_errno(e: SmbError) -> Errno {
    match e.status() {
        Some(status::DIRECTORY_NOT_EMPTY) => Errno::ENOTEMPTY,
        Some(status::SHARING_VIOLATION) => Errno::EBUSY,
        Some(status::CANNOT_DELETE) => Errno::EACCES,
        Some(status::DISK_FULL) => Errno::ENOSPC,
        Some(status::DELETE_PENDING) => Errno::ENOENT,
        Some(status::MEDIA_WRITE_PROTECTED) => Errno::EROFS,
        Some(status::NOT_SAME_DEVICE) => Errno::EXDEV,
        Some(status::FILE_CLOSED) => Errno::EBADF,
        _ => e.errno(),
    }
}

impl CifsFs {
    fn now(&self) -> u64 {
        self.conn.lock().now_ms()
    }

    /// `/proc/fs/cifs/Stats`-style counters of this tree connect.
    pub fn render_stats(&self) -> String {
        self.conn.lock().render_stats()
    }

    /// Look at the per-tcon counters.
    pub fn with_stats<R>(&self, f: impl FnOnce(&crate::smb::TconStats) -> R) -> R {
        f(self.conn.lock().stats())
    }

    /// The smb3 trace events, one per line.
    pub fn dump_trace(&self) -> String {
        self.conn.lock().trace().dump()
    }

    /// Reset the per-tcon counters (benchmarks: count from the mount on).
    pub fn reset_stats(&self) {
        self.conn.lock().reset_stats();
    }

    fn map<T>(r: Result<T, SmbError>) -> KResult<T> {
        r.map_err(data_errno)
    }

    /// Largest READ chunk (`rsize=`; the negotiated MaxReadSize and the
    /// credits cut it further).
    fn rsize(&self) -> u32 {
        self.opts.rsize
    }

    /// Largest WRITE chunk (`wsize=`, likewise).
    fn wsize(&self) -> u32 {
        self.opts.wsize
    }

    /// The inode number for the server's `id` of `path` (see
    /// [`CifsFs::inos`]).
    fn ino_for(&self, sb: &SuperBlock, path: &str, id: Option<u64>) -> u64 {
        let id = if self.opts.noserverino { None } else { id };
        if let Some(id) = id.filter(|&i| i != 0 && i < LOCAL_INO) {
            let mut m = self.inos.lock();
            match m.get(&id) {
                Some(p) if p != path => {}
                Some(_) => return id,
                None => {
                    m.insert(id, path.to_string());
                    return id;
                }
            }
            drop(m);
            self.inos_made_up.fetch_add(1, Ordering::Relaxed);
        } else if id.is_some() {
            self.inos_made_up.fetch_add(1, Ordering::Relaxed);
        }
        sb.alloc_ino() | LOCAL_INO
    }

    /// Size and mtime as the server reported them after a change.
    fn apply_close(inode: &Inode, a: &CloseAttrs) {
        inode.set_size(a.end_of_file);
        Self::apply_times(inode, &a.times);
    }

    fn apply_times(inode: &Inode, t: &FileTimes) {
        inode.set_mtime_ns(filetime_to_unix_ns(t.last_write));
    }

    /// After a change: the server's attributes (from the CLOSE, or a
    /// stat when the server sent none), fresh for the attribute window, and
    /// the WSL-EA state dropped.
    fn changed(&self, inode: &Inode, attrs: Option<CloseAttrs>) -> KResult<()> {
        let Some(ci) = inode.private::<CifsInode>() else {
            return Ok(());
        };
        ci.forget_eas();
        match attrs {
            Some(a) => Self::apply_close(inode, &a),
            None => {
                let st = Self::map(self.conn.lock().stat(&ci.path()))?;
                Self::apply_stat(inode, &st);
            }
        }
        ci.attr_ms.store(self.now(), Ordering::Relaxed);
        Ok(())
    }

    fn inode_path(inode: &Inode) -> KResult<String> {
        inode
            .private::<CifsInode>()
            .map(|c| c.path())
            .ok_or(Errno::EOPNOTSUPP)
    }

    fn make_inode(
        &self,
        sb: &SuperBlock,
        path: String,
        dir: bool,
        size: u64,
        id: Option<u64>,
        now: u64,
    ) -> Arc<Inode> {
        let ino = self.ino_for(sb, &path, id);
        let (kind, mode) = if dir {
            (FileType::Dir, self.opts.dir_mode)
        } else {
            (FileType::File, self.opts.file_mode)
        };
        let i = Inode::with_private(ino, kind, mode, Box::new(CifsInode::new(path, now)));
        i.set_owner(self.opts.uid, self.opts.gid, mode);
        i.set_size(size);
        Arc::new(i)
    }

    /// The share-relative wire path of `name` in `dir`, the name's reserved
    /// characters mapped as the mount says (`mapposix`, `mapchars`).
    fn child_path(dir: &Inode, name: &[u8], remap: options::Remap) -> KResult<String> {
        let name = core::str::from_utf8(name).map_err(|_| Errno::EINVAL)?;
        let name = crate::smb::remap::to_wire(name, remap);
        let base = dir
            .private::<CifsInode>()
            .map(|c| c.path())
            .unwrap_or_default();
        Ok(if base.is_empty() {
            name.to_string()
        } else {
            format!("{base}/{name}")
        })
    }

    fn apply_stat(inode: &Inode, st: &FileStat) {
        inode.set_size(st.end_of_file);
        Self::apply_times(inode, &st.times);
    }

    fn apply_listing(inode: &Inode, e: &DirInfo, now: u64) {
        inode.set_size(e.end_of_file);
        inode.set_mtime_ns(filetime_to_unix_ns(e.times.last_write));
        if let Some(c) = inode.private::<CifsInode>() {
            c.attr_ms.store(now, Ordering::Relaxed);
            let ea = if e.attributes & ATTR_REPARSE != 0 {
                None
            } else {
                e.ea_size
            };
            c.listing_ea_size
                .store(ea.unwrap_or(u32::MAX), Ordering::Relaxed);
        }
    }
}

impl FsOps for CifsFs {
    fn fs_type(&self) -> &'static str {
        "cifs"
    }

    fn as_any(&self) -> &dyn core::any::Any {
        self
    }

    fn lookup(&self, sb: &SuperBlock, dir: &Inode, name: &[u8]) -> KResult<Option<Arc<Inode>>> {
        let path = Self::child_path(dir, name, self.opts.remap)?;
        let r = self.conn.lock().stat(&path);
        match r {
            Ok(st) => {
                let now = self.now();
                let i = self.make_inode(sb, path, st.directory, st.end_of_file, st.file_id, now);
                Self::apply_times(&i, &st.times);
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
        let window = if inode.is_dir() {
            self.opts.acdirmax_ms
        } else {
            self.opts.acregmax_ms
        };
        if now.saturating_sub(ci.attr_ms.load(Ordering::Relaxed)) >= window {
            let st = Self::map(self.conn.lock().stat(&ci.path()))?;
            Self::apply_stat(inode, &st);
            ci.attr_ms.store(now, Ordering::Relaxed);
        }
        let design = self.opts.effective_wslea();
        let ctx = {
            let t = self.tcon.lock();
            if t.refused.is_some() && t.refused == Some(self.conn.lock().generation()) {
                // The server has no EA query at all on this tree connect.
                return Ok(());
            }
            let no_eas = ci.answered_ms.load(Ordering::Relaxed);
            let listing = ci.listing_ea_size.load(Ordering::Relaxed);
            ProbeCtx {
                since_answer_ms: (no_eas != 0).then(|| now.saturating_sub(no_eas)),
                listing_ea_size: (listing != u32::MAX).then_some(listing),
                tcon_no_eas: t.no_eas,
                tcon_positive: t.positive,
                since_tcon_stop_ms: t.stop_ms.map(|s| now.saturating_sub(s)),
                window_ms: self.opts.acregmax_ms,
                k: self.opts.wslea_k,
            }
        };
        if !design.should_probe(&ctx) {
            return Ok(());
        }
        self.probes.fetch_add(1, Ordering::Relaxed);
        let r = self.conn.lock().query_wsl_eas(&ci.path());
        let r = match r {
            Err(SmbError::Status(status::NOT_SUPPORTED | status::INVALID_INFO_CLASS)) => {
                // Not "this file has none" but "this server has no EA
                // query": no EAs on this tree connect, stop asking.
                self.ea_refused.fetch_add(1, Ordering::Relaxed);
                let gen = self.conn.lock().generation();
                self.tcon.lock().refused = Some(gen);
                return Ok(());
            }
            r => Self::map(r)?,
        };
        let mut t = self.tcon.lock();
        // A reconnect resets what the tree connect taught us.
        let epoch = self.epoch.load(Ordering::Relaxed);
        if t.conn_epoch != epoch {
            *t = TconEa {
                conn_epoch: epoch,
                ..TconEa::default()
            };
        }
        match r {
            None => {
                ci.answered_ms.store(now.max(1), Ordering::Relaxed);
                t.no_eas += 1;
                if t.no_eas == self.opts.wslea_k {
                    t.stop_ms = Some(now);
                }
                if t.stop_ms
                    .is_some_and(|s| now.saturating_sub(s) >= self.opts.acregmax_ms)
                {
                    // The window expired: start counting again.
                    t.no_eas = 1;
                    t.stop_ms = None;
                }
            }
            Some(w) => {
                t.positive = true;
                ci.answered_ms.store(now.max(1), Ordering::Relaxed);
                let st = inode.stat();
                let uid = if self.opts.forceuid {
                    st.uid
                } else {
                    w.uid.unwrap_or(st.uid)
                };
                let gid = if self.opts.forcegid {
                    st.gid
                } else {
                    w.gid.unwrap_or(st.gid)
                };
                let forced_mode = if inode.is_dir() {
                    self.opts.dir_mode_set
                } else {
                    self.opts.file_mode_set
                };
                let mode = if forced_mode {
                    st.mode
                } else {
                    w.mode.map_or(st.mode, |m| m & 0o7777)
                };
                inode.set_owner(uid, gid, mode);
            }
        }
        Ok(())
    }

    fn remote(&self) -> bool {
        true
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
            ci.listing_ea_size.store(0, Ordering::Relaxed);
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
            ci.forget_eas();
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
        let entries = Self::map(self.conn.lock().list_dir(&ci.path()))?;
        // Names as the VFS shows them (the wire's mapped characters back),
        // every one checked before anything reaches the dcache.
        let local: alloc::vec::Vec<String> = entries
            .iter()
            .map(|e| crate::smb::remap::from_wire(&e.name, self.opts.remap))
            .collect();
        if let Some(bad) = local.iter().find(|n| !valid_dirent_name(n)) {
            self.bad_names.fetch_add(1, Ordering::Relaxed);
            crate::trace!("  cifs: listed name {bad:?} refused -> EIO");
            return Err(Errno::EIO);
        }
        let _excl = inode.i_rwsem.write();
        let mut seen: alloc::collections::BTreeSet<&[u8]> = alloc::collections::BTreeSet::new();
        for (e, name) in entries.iter().zip(&local) {
            let name = name.as_bytes();
            seen.insert(name);
            let hash = d_hash(dir, name);
            let existing = dcache::d_lookup(dir, name, hash);
            let is_dir = e.attributes & ATTR_DIRECTORY != 0;
            match existing.as_ref().and_then(|d| d.inode_arc()) {
                Some(i) if i.is_dir() == is_dir => Self::apply_listing(&i, e, now),
                _ => {
                    if let Some(old) = existing.as_ref() {
                        dir.dir_seq.write(|| dcache::d_delete(old));
                    }
                    let path = Self::child_path(&inode, name, self.opts.remap)?;
                    let child = self.make_inode(sb, path, is_dir, e.end_of_file, e.file_id, now);
                    Self::apply_listing(&child, e, now);
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

/// Why a mount failed.
#[derive(Debug)]
pub enum MountError {
    Opts(OptError),
    Smb(SmbError),
    Vfs(Errno),
}

impl fmt::Display for MountError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            MountError::Opts(e) => write!(f, "{e}"),
            MountError::Smb(e) => write!(f, "cifs: mount failed: {}", e.linux_message()),
            MountError::Vfs(e) => write!(f, "cifs: mount point: {e}"),
        }
    }
}

/// Mount `//server/share` (`source`) on `path` of `vfs`. Connects and
/// authenticates now, so a bad password fails the mount.
pub fn mount(
    vfs: &Vfs,
    source: &str,
    path: &[u8],
    opts: &str,
    connector: Box<dyn Connector>,
    clock: Box<dyn Clock>,
) -> Result<Arc<SuperBlock>, MountError> {
    let o = CifsOpts::parse(opts).map_err(MountError::Opts)?;
    let unc = source.trim_start_matches(['/', '\\']);
    let (server, share) = unc.split_once(['/', '\\']).ok_or_else(|| {
        MountError::Opts(OptError(format!(
            "cifs: source must be //server/share, got {source:?}"
        )))
    })?;
    let mut cfg = Config::new(server, share, &o.username, &o.password);
    cfg.creds.domain = o.domain.clone();
    cfg.dialects = o.vers.clone();
    cfg.soft = o.soft;
    if o.sign {
        cfg.signing = crate::smb::Signing::On;
    }
    cfg.seal = o.seal;
    cfg.allow_guest = o.null_session;
    if o.unix {
        // Linux: "Server does not support mounting with posix SMB3.11
        // extensions"; this client never asks for them.
        return Err(MountError::Opts(OptError(
            "cifs: mount failed: Operation not supported (unix: the SMB 3.1.1 POSIX extensions are not spoken here; mount with nounix)".into(),
        )));
    }
    let mut conn = Connection::new(cfg, connector, clock);
    conn.connect().map_err(MountError::Smb)?;
    let root_stat = conn.stat("").map_err(MountError::Smb)?;
    let now = conn.now_ms();
    let fs = CifsFs {
        conn: SpinLock::new(conn),
        opts: o,
        tcon: SpinLock::new(TconEa::default()),
        probes: AtomicU64::new(0),
        epoch: AtomicU64::new(0),
        ea_refused: AtomicU64::new(0),
        inos: SpinLock::new(alloc::collections::BTreeMap::new()),
        inos_made_up: AtomicU64::new(0),
        bad_names: AtomicU64::new(0),
    };
    // Non-complete dcache: misses ask the server; negatives are cached.
    let design = crate::dcache::design::by_name("negative").expect("negative exists");
    let sb = Arc::new(SuperBlock::new(design, false, Box::new(fs)));
    let root_inode = {
        let fs = sb.ops_as::<CifsFs>().expect("cifs sb");
        fs.make_inode(
            &sb,
            String::new(),
            true,
            root_stat.end_of_file,
            root_stat.file_id,
            now,
        )
    };
    let root = dcache::d_alloc_root(sb.clone(), root_inode);
    vfs.mount_root(path, root).map_err(MountError::Vfs)?;
    Ok(sb)
}
