//! `cifs`: the SMB2/3 client as a filesystem type.
//!
//! The wire protocol and session state live in [`smb`]; this module
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
//! - `getattr` revalidates attributes older than the window; it asks for
//!   the WSL metadata EAs (`$LXUID` …) only for reparse points, as Linux
//!   does, and never for other entries;
//! - extended attributes ([`eas`]): the server's EAs are the `user.`
//!   namespace, as Linux's `fs/smb/client/xattr.c` maps them; whether a
//!   `listxattr`/`getxattr` asks the server or is answered from what the
//!   client knows is the EA-cache design's call ([`eacache`], `eacache=`);
//!   `nouser_xattr` answers EOPNOTSUPP without a round trip. A server that
//!   refuses the EA query class (STATUS_NOT_SUPPORTED,
//!   STATUS_INVALID_INFO_CLASS: impacket, some NAS) is counted in
//!   [`CifsFs::ea_refused`];
//! - data and changes: `read`/`write` go to the server in chunks within
//!   `rsize`/`wsize` and the negotiated MaxReadSize/MaxWriteSize; create,
//!   mkdir, unlink, rmdir, rename and truncate are one compound each
//!   ([`smb::ops`]); size and mtime afterwards are the server's, and
//!   a changed inode forgets what it knew of its EAs (it is asked again);
//! - inode numbers are the server's IndexNumber unless it is 0 or already
//!   names another path (servers that do not keep them): then a unique
//!   local number, as Linux's `iunique`.
//!
//! This file holds the mount and what it remembers ([`CifsFs`],
//! [`CifsInode`], the EA state) and [`mount`]; the VFS's calls into it, its
//! `FsOps`, are in `fsops.rs`.
//!
//! Touches: one connection (behind a spinlock: requests of one mount are
//! serialised), the dcache entries of its own superblock.

pub mod eacache;
mod eas;
pub mod errmap;
mod fsops;
pub mod options;

pub use options::{CifsOpts, OptError, OPTION_NAMES};

use errmap::SmbErrno;

use alloc::boxed::Box;
use alloc::format;
use alloc::string::{String, ToString};
use alloc::sync::Arc;
use core::fmt;
use core::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use crate::dcache;
use crate::errno::{Errno, KResult};
use crate::inode::{Inode, SuperBlock};
use crate::mount::Namespace;
use crate::sync::spinlock::SpinLock;
use crate::types::FileType;
use smb::wire::create::{CloseAttrs, FileTimes};
use smb::wire::dirinfo::DirInfo;
use smb::wire::info::FileStat;
use smb::wire::status;
use smb::{Clock, Config, Connection, Connector, SmbError};

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
    /// What the server said of its EAs, and the generation that guards it.
    ea: SpinLock<EaState>,
    /// FILE_ATTRIBUTE_REPARSE_POINT was set in its last attributes.
    reparse: AtomicBool,
    /// When its WSL metadata EAs were last read (reparse points; 0: never).
    wsl_ms: AtomicU64,
    /// The server's FileId (IndexNumber) of the file it stands for, even
    /// where the inode number is a local one: the key under which a local
    /// EA change reaches this file's other names ([`CifsFs::ea_linked`]).
    file_id: AtomicU64,
    /// The last listing of its directory that showed it, and its place
    /// there: whose EA queries may go with its own ([`eacache`],
    /// "Batched sibling queries").
    listed: SpinLock<Option<(Arc<Listing>, usize)>>,
}

/// One directory listing, in the server's order, as the EA batches see it.
pub(crate) struct Listing {
    entries: alloc::vec::Vec<alloc::sync::Weak<Inode>>,
    /// The places in `entries`, in name order (`ls` walks sorted).
    by_name: alloc::vec::Vec<usize>,
    /// Each entry's place in `by_name`.
    name_pos: alloc::vec::Vec<usize>,
    /// Entries the next batch may carry (doubles up to `eacache_batch=`).
    next_batch: core::sync::atomic::AtomicUsize,
    /// The place of the entry of the last EA question on this listing
    /// (`usize::MAX`: none yet) and when it came.
    last_at: core::sync::atomic::AtomicUsize,
    last_ms: AtomicU64,
}

impl CifsInode {
    fn new(path: String, now: u64, file_id: Option<u64>) -> Self {
        CifsInode {
            file_id: AtomicU64::new(file_id.unwrap_or(0)),
            path: SpinLock::new(path),
            attr_ms: AtomicU64::new(now),
            list_ms: AtomicU64::new(0),
            list_valid: AtomicBool::new(false),
            ea: SpinLock::new(EaState::default()),
            reparse: AtomicBool::new(false),
            wsl_ms: AtomicU64::new(0),
            listed: SpinLock::new(None),
        }
    }

    /// The share-relative path now.
    pub fn path(&self) -> String {
        self.path.lock().clone()
    }

    /// The inode changed (written, truncated, renamed, its EAs set): what
    /// we knew of its EAs (a NO_EAS answer, an EaSize, the WSL EAs) no
    /// longer holds, and a reply to a request sent before now must not
    /// teach it again: its generation moves past every sample taken so
    /// far (`clock` is the mount's [`CifsFs::ea_clock`]).
    fn forget_eas(&self, clock: &AtomicU64) -> u64 {
        let g = clock.fetch_add(1, Ordering::AcqRel) + 1;
        let mut e = self.ea.lock();
        e.generation = g;
        e.size = u32::MAX;
        e.no_eas_ms = 0;
        drop(e);
        self.wsl_ms.store(0, Ordering::Relaxed);
        g
    }

    /// What the server's attributes said of its EAs, from a request sent
    /// after `sample` was read from the EA clock: recorded only if nothing
    /// changed the inode's EAs since (else the EaSize is left unknown). A
    /// ChangeTime other than the last one seen forgets the inode's own
    /// NO_EAS answer (an EA change moves ctime, not mtime) and moves the
    /// generation past replies still in flight, and an EaSize that shows
    /// EAs forgets that answer too. Returns the EaSize recorded.
    fn set_ea_info(
        &self,
        attributes: u32,
        ea_size: Option<u32>,
        ctime: u64,
        sample: u64,
        clock: &AtomicU64,
    ) -> u32 {
        let reparse = attributes & ATTR_REPARSE != 0;
        self.reparse.store(reparse, Ordering::Relaxed);
        let size = if reparse { None } else { ea_size }.unwrap_or(u32::MAX);
        let mut e = self.ea.lock();
        if e.generation > sample {
            return u32::MAX;
        }
        if e.ctime != 0 && ctime != e.ctime {
            e.generation = clock.fetch_add(1, Ordering::AcqRel) + 1;
            e.no_eas_ms = 0;
        }
        if easize_is_proof(size) {
            e.no_eas_ms = 0;
        }
        e.ctime = ctime;
        e.size = size;
        e.size_sample = sample;
        size
    }

    /// The server answered NO_EAS to a query sent after `sample`: believed
    /// unless the inode's EAs changed since.
    fn record_no_eas(&self, now: u64, sample: u64) {
        let mut e = self.ea.lock();
        if e.generation <= sample {
            e.no_eas_ms = now.max(1);
            e.no_eas_sample = sample;
        }
    }
}

/// Per-inode EA state (see [`eacache`]'s module doc, "Lost updates").
struct EaState {
    /// EA clock value of the last local change or invalidation (0: none).
    generation: u64,
    /// EaSize the server sent with the attributes (listing or
    /// FileAllInformation), as old as `attr_ms`; `u32::MAX`: unknown or a
    /// reparse point (where a listing's field holds the tag).
    size: u32,
    /// When the server last said it has no EAs (0: not known).
    no_eas_ms: u64,
    /// ChangeTime of the last attributes recorded (FILETIME; 0: none).
    ctime: u64,
    /// EA clock samples of the requests that taught `size` and
    /// `no_eas_ms`: a local EA change through another name of the same
    /// file, later than the sample, makes them unknown.
    size_sample: u64,
    no_eas_sample: u64,
}

impl Default for EaState {
    fn default() -> Self {
        EaState {
            generation: 0,
            size: u32::MAX,
            no_eas_ms: 0,
            ctime: 0,
            size_sample: 0,
            no_eas_sample: 0,
        }
    }
}

/// Does this EaSize of a non-reparse entry prove that the server fills the
/// field? A length: not 0 (what a server that does not fill it sends) and
/// no larger than a whole EA list can be (64 KiB; a reparse tag, which
/// ksmbd writes there for special files, is far larger).
fn easize_is_proof(size: u32) -> bool {
    (1..=0x1_0000).contains(&size)
}

/// Whether a tree connect's EaSize is believed (see [`eacache`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
enum EaSizeTrust {
    /// Nothing shown yet: EaSize 0 proves nothing.
    #[default]
    Unknown,
    /// A non-reparse entry came with an EaSize that is a length.
    Honest,
    /// An EA was found where a fresh EaSize said 0: never believed again
    /// on this mount.
    Liar,
}

/// FILETIME (100 ns since 1601) to ns since the Unix epoch (0 before it).
fn filetime_to_unix_ns(ft: u64) -> u64 {
    const EPOCH_DIFF: u64 = 116_444_736_000_000_000;
    ft.saturating_sub(EPOCH_DIFF).saturating_mul(100)
}

/// Per-tree-connect EA state (the negcache rule, a refused query class),
/// reset by a reconnect.
#[derive(Default)]
struct TconEa {
    /// NO_EAS answers since the last reset.
    no_eas: u32,
    /// Some answer had EAs.
    positive: bool,
    /// When `no_eas` reached K.
    stop_ms: Option<u64>,
    /// The server refused the EA query class itself.
    refused: bool,
    /// Whether EaSize 0 means "no EAs" here.
    trust: EaSizeTrust,
    /// An EA query was refused with EACCES: EaSize cannot say which
    /// entries this user may read the EAs of.
    denied: bool,
    /// Some EA query was answered (not refused as a class): from then on
    /// queries may go in batches.
    answered: bool,
    /// A batch met a STATUS_PENDING interim reply (a CREATE parked on an
    /// oplock or lease break): no more batches on this tree connect, so
    /// another client's open cannot hold up questions about other files.
    parked: bool,
    /// The connection generation this state belongs to.
    generation: u64,
}

impl TconEa {
    /// Start over if the connection was re-established since.
    fn follow(&mut self, generation: u64) {
        if self.generation != generation {
            // A liar stays one: the server behind the name is the same.
            let trust = match self.trust {
                EaSizeTrust::Liar => EaSizeTrust::Liar,
                _ => EaSizeTrust::Unknown,
            };
            *self = TconEa {
                generation,
                trust,
                ..TconEa::default()
            };
        }
    }

    /// An entry's attributes showed `size` (as recorded): proof, if it is
    /// one, makes an unknown tree connect honest.
    fn saw_easize(&mut self, size: u32) {
        if easize_is_proof(size) && self.trust == EaSizeTrust::Unknown {
            self.trust = EaSizeTrust::Honest;
        }
    }

    fn trusts_easize(&self) -> bool {
        self.trust == EaSizeTrust::Honest && !self.denied
    }
}

/// One mounted share.
pub struct CifsFs {
    conn: SpinLock<Connection>,
    pub opts: CifsOpts,
    tcon: SpinLock<TconEa>,
    /// The EA clock: inodes' EA generations are values of it, and a
    /// request samples it before it is sent (see [`CifsInode::forget_eas`]).
    ea_clock: AtomicU64,
    /// Local EA changes by server FileId: the EA clock value of the last
    /// one and when it was made. A file with two names (a hard link) has
    /// two inodes here (the second name's number is a local one), so a
    /// setxattr through one name reaches the other through this map;
    /// entries older than the longest attribute window are dropped, as
    /// everything learned before them has expired by then.
    ea_linked: SpinLock<alloc::collections::BTreeMap<u64, (u64, u64)>>,
    /// Tests only: run once between the next listing's reply and its
    /// application ([`CifsFs::on_next_listing_reply`]).
    listing_hook: SpinLock<Option<ListingHook>>,
    /// EA queries sent for `listxattr`/`getxattr`/`removexattr`.
    pub ea_queries: AtomicU64,
    /// Those calls the EA-cache design answered without the server.
    pub ea_local: AtomicU64,
    /// Of `ea_queries`, those sent for a sibling of the entry asked about.
    pub ea_batched: AtomicU64,
    /// Batched round trips (each one send of one or more compounds).
    pub ea_batches: AtomicU64,
    /// WSL metadata EA queries sent (reparse points' `stat`).
    pub wsl_queries: AtomicU64,
    /// EA queries the server refused as a class (STATUS_NOT_SUPPORTED /
    /// STATUS_INVALID_INFO_CLASS).
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

/// What [`CifsFs::on_next_listing_reply`] runs.
type ListingHook = Box<dyn FnOnce() + Send>;

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
    pub fn with_stats<R>(&self, f: impl FnOnce(&smb::TconStats) -> R) -> R {
        f(self.conn.lock().stats())
    }

    /// The smb3 trace events, one per line.
    pub fn dump_trace(&self) -> String {
        self.conn.lock().trace().dump(errmap::trace_rc)
    }

    /// Reset the per-tcon counters (benchmarks: count from the mount on).
    pub fn reset_stats(&self) {
        self.conn.lock().reset_stats();
    }

    /// Tests: run `f` once, on the thread of the next directory listing,
    /// after its reply has arrived and before anything in it is applied
    /// (a deterministic place for an operation that races the listing).
    pub fn on_next_listing_reply(&self, f: impl FnOnce() + Send + 'static) {
        *self.listing_hook.lock() = Some(Box::new(f));
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
    /// what was known of its EAs dropped.
    fn changed(&self, inode: &Inode, attrs: Option<CloseAttrs>) -> KResult<()> {
        let Some(ci) = inode.private::<CifsInode>() else {
            return Ok(());
        };
        ci.forget_eas(&self.ea_clock);
        match attrs {
            Some(a) => Self::apply_close(inode, &a),
            None => {
                let sample = self.ea_sample();
                let st = Self::map(self.conn.lock().stat(&ci.path()))?;
                self.apply_stat(inode, &st, sample);
            }
        }
        ci.attr_ms.store(self.now(), Ordering::Relaxed);
        Ok(())
    }

    /// How long `inode`'s attributes are believed (acdirmax for
    /// directories, acregmax for the rest).
    fn attr_window(&self, inode: &Inode) -> u64 {
        if inode.is_dir() {
            self.opts.acdirmax_ms
        } else {
            self.opts.acregmax_ms
        }
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
        let id = id.filter(|&i| i != 0);
        let i = Inode::with_private(ino, kind, mode, Box::new(CifsInode::new(path, now, id)));
        i.set_owner(self.opts.uid, self.opts.gid, mode);
        i.set_size(size);
        Arc::new(i)
    }

    /// The share-relative wire path of `name` in `dir`, the name's reserved
    /// characters mapped as the mount says (`mapposix`, `mapchars`).
    fn child_path(dir: &Inode, name: &[u8], remap: options::Remap) -> KResult<String> {
        let name = core::str::from_utf8(name).map_err(|_| Errno::EINVAL)?;
        let name = smb::remap::to_wire(name, remap);
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

    /// The EA clock now: read before a request is sent, so that its reply
    /// records nothing on an inode whose EAs changed meanwhile.
    fn ea_sample(&self) -> u64 {
        self.ea_clock.load(Ordering::Acquire)
    }

    /// A local EA change to `ci` (generation `g`, from
    /// [`CifsInode::forget_eas`]): every other name of the same server
    /// file forgets what it learned before `g`.
    fn ea_changed_here(&self, ci: &CifsInode, g: u64) {
        let id = ci.file_id.load(Ordering::Relaxed);
        if id == 0 {
            return;
        }
        let now = self.now();
        let keep = self.opts.acregmax_ms.max(self.opts.acdirmax_ms);
        let mut m = self.ea_linked.lock();
        m.retain(|_, &mut (_, at)| now.saturating_sub(at) < keep);
        m.insert(id, (g, now));
    }

    /// The generation of the last local EA change to the server file `ci`
    /// stands for, through any of its names (0: none in the window).
    fn ea_linked_generation(&self, ci: &CifsInode) -> u64 {
        let id = ci.file_id.load(Ordering::Relaxed);
        if id == 0 {
            return 0;
        }
        self.ea_linked.lock().get(&id).map_or(0, |&(g, _)| g)
    }

    /// An entry's attributes showed EaSize `size`: the tree connect learns
    /// whether its server fills the field.
    fn saw_easize(&self, size: u32) {
        if easize_is_proof(size) {
            let generation = self.conn.lock().generation();
            let mut t = self.tcon.lock();
            t.follow(generation);
            t.saw_easize(size);
        }
    }

    /// FileAllInformation's attributes, from a request sent after `sample`.
    fn apply_stat(&self, inode: &Inode, st: &FileStat, sample: u64) {
        inode.set_size(st.end_of_file);
        Self::apply_times(inode, &st.times);
        if let Some(c) = inode.private::<CifsInode>() {
            if let Some(id) = st.file_id.filter(|&i| i != 0) {
                c.file_id.store(id, Ordering::Relaxed);
            }
            let size = c.set_ea_info(
                st.attributes,
                st.ea_size,
                st.times.change,
                sample,
                &self.ea_clock,
            );
            self.saw_easize(size);
        }
    }

    /// One listed entry's attributes, from a listing sent after `sample`.
    fn apply_listing(&self, inode: &Inode, e: &DirInfo, now: u64, sample: u64) {
        inode.set_size(e.end_of_file);
        inode.set_mtime_ns(filetime_to_unix_ns(e.times.last_write));
        if let Some(c) = inode.private::<CifsInode>() {
            c.attr_ms.store(now, Ordering::Relaxed);
            if let Some(id) = e.file_id.filter(|&i| i != 0) {
                c.file_id.store(id, Ordering::Relaxed);
            }
            let size = c.set_ea_info(
                e.attributes,
                e.ea_size,
                e.times.change,
                sample,
                &self.ea_clock,
            );
            self.saw_easize(size);
        }
    }
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

/// Mount `//server/share` (`source`) on `path` of `vfs` (a
/// [`crate::vfs::Vfs`]). Connects and
/// authenticates now, so a bad password fails the mount.
pub fn mount(
    vfs: &dyn Namespace,
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
    cfg.admit = |bytes| crate::mem::admit(bytes).is_ok();
    cfg.creds.domain = o.domain.clone();
    cfg.dialects = o.vers.clone();
    cfg.soft = o.soft;
    if o.sign {
        cfg.signing = smb::Signing::On;
    }
    cfg.seal = o.seal;
    cfg.allow_guest = o.null_session;
    cfg.accept_weak_random = o.weakrandom;
    if o.unix {
        // Linux: "Server does not support mounting with posix SMB3.11
        // extensions"; this client never asks for them.
        return Err(MountError::Opts(OptError(
            "cifs: mount failed: Operation not supported (unix: the SMB 3.1.1 POSIX extensions are not spoken here; mount with nounix)".into(),
        )));
    }
    if let Some(why) = clock
        .weak_random()
        .filter(|_| (o.sign || o.seal) && !o.weakrandom)
    {
        // Their keys and nonces would rest on a guessable source.
        return Err(MountError::Opts(OptError(format!(
            "cifs: {} needs a cryptographic random source and this machine has none ({why}); mount with weakrandom to accept it",
            if o.seal { "seal" } else { "sign" }
        ))));
    }
    let mut conn = Connection::new(cfg, connector, clock);
    conn.connect().map_err(MountError::Smb)?;
    let root_stat = conn.stat("").map_err(MountError::Smb)?;
    let now = conn.now_ms();
    let fs = CifsFs {
        conn: SpinLock::new(conn),
        opts: o,
        tcon: SpinLock::new(TconEa::default()),
        ea_clock: AtomicU64::new(0),
        ea_linked: SpinLock::new(alloc::collections::BTreeMap::new()),
        listing_hook: SpinLock::new(None),
        ea_queries: AtomicU64::new(0),
        ea_local: AtomicU64::new(0),
        ea_batched: AtomicU64::new(0),
        ea_batches: AtomicU64::new(0),
        wsl_queries: AtomicU64::new(0),
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
        let root = fs.make_inode(
            &sb,
            String::new(),
            true,
            root_stat.end_of_file,
            root_stat.file_id,
            now,
        );
        fs.apply_stat(&root, &root_stat, 0);
        root
    };
    let root = dcache::d_alloc_root(sb.clone(), root_inode);
    vfs.mount_root(path, root).map_err(MountError::Vfs)?;
    Ok(sb)
}
