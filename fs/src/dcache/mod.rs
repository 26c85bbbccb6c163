//! The dentry cache: names → inodes, shaped like Linux `fs/dcache.c`.
//!
//! See `docs/lookup-path.md` for the walk-through; in short:
//!
//! | lock / counter            | guards                                                        |
//! |---------------------------|---------------------------------------------------------------|
//! | `d_lockref` (lock + count) | the dentry's children list, LRU membership, its count        |
//! | `d_seq` (seqcount)        | name, parent, hash and inode of the dentry, for RCU readers    |
//! | `dir_seq` (seqcount)      | "the set of children changed": bumped by create/unlink/rename in the directory (noalloc) |
//! | hash bucket spinlock      | one chain of the global hash table (writers only)             |
//! | in-lookup bucket spinlock | dentries whose filesystem lookup is in progress               |
//! | inode `i_dir_seq` (seqcount, its own lock) | "a lookup hashed an in-lookup answer here": `d_alloc_parallel` retries |
//! | `rename_lock` (seqlock: count + spinlock) | moves between chains and parents (readers retry) |
//! | LRU spinlock              | the unused-dentry list and the shrinker                        |
//! | inode `i_rwsem`           | a directory's entries: shared for lookups that ask the fs, exclusive for changes |
//!
//! Lock order: `rename_lock` → parents' `i_rwsem` (ancestor first) →
//! children's `i_rwsem` (a rename's source, then its target; rmdir's
//! victim; a mountpoint) → `mount_lock` → parent `d_lock` → child `d_lock`
//! → hash / in-lookup bucket → LRU. Each rule, where it is enforced and
//! the test that shows it: docs/vfs-locking.md.
//!
//! The invariant every RCU reader relies on: a dentry found in a chain
//! under an RCU guard stays allocated until the guard is dropped; whether it
//! still *means* what the reader thinks (same parent, same name, same inode)
//! is proved by re-checking its `d_seq`.
//!
//! Memory: each dentry is an `Arc`. The hash chain, the parent's children
//! list, each child's parent pointer, the LRU and every walk holding a
//! reference own one strong count each; counts reachable by RCU readers are
//! released through `call_rcu`. The lockref count is the Linux count: how
//! many users (walks, open files, children, the tmpfs pin) hold it; at zero
//! a dentry is either cached on the LRU or killed. `d_alloc` asks memory
//! admission first ([`crate::mem`]) and fails with `ENOMEM` when refused;
//! [`shrink`] is the reclaim admission runs before it gives up.
//!
//! This file holds the dentry, the hash table, lookup, `d_alloc`, `d_add`
//! and `d_move`. The end of a dentry's use (`dput`, the LRU, the shrinker,
//! `dentry_kill`) is in `dput.rs`; a directory's children and the subtree
//! below it (`shrink_dcache_parent`, `d_genocide`) in `children.rs`; the
//! in-lookup table in `in_lookup.rs`; the ENOENT policy in `design.rs`.
//!
//! This module and [`crate::inode`] import each other, as Linux's dcache
//! and inodes do: a dentry holds its inode and superblock (`d_inode`,
//! `d_sb` in `include/linux/dcache.h`), and a filesystem's operations take
//! dentries (`->lookup`; here `FsOps::refresh_dir`), with the superblock
//! carrying the ENOENT design's words. The circle stops there: the ENOENT
//! policy (`design.rs`) is handed the superblock's `complete` flag and
//! words by its caller and imports nothing of `inode`.

mod children;
pub mod design;
mod dput;
mod in_lookup;

pub use children::{
    all_children, children, d_genocide, has_positive_children, is_ancestor, shrink_dcache_parent,
};
use dput::shrink_one;
pub use dput::{dput, shrink, shrink_all, shrink_to_limit};
pub use in_lookup::{d_add_in_lookup, d_alloc_parallel, d_lookup_done, Parallel};
use in_lookup::{InLookupBucket, IN_LOOKUP_BUCKETS};

use alloc::sync::Arc;
use alloc::vec::Vec;
use core::ops::Deref;
use core::sync::atomic::{AtomicU32, AtomicU64, AtomicUsize, Ordering};

use crate::errno::KResult;
use crate::inode::{Inode, SuperBlock};
use crate::mem;
use crate::poison::{self, Canary, DENTRY_LIVE};
use crate::stats::{self, Event};
use crate::sync::ilist::{ChildList, LruList, Node};
use crate::sync::lockref::LockRef;
use crate::sync::rcu::{RcuCell, RcuGuard, RcuRef};
use crate::sync::rculist::{RcuHashTable, RcuLink, RcuNode};
use crate::sync::seqcount::{SeqCount, SeqLock, SeqLockGuard};
use crate::sync::spinlock::SpinLock;

/// A dentry: the value plus its intrusive list links.
pub type Dentry = Node<DentryInner>;

/// Names up to this many bytes live inside the dentry.
pub const DNAME_INLINE_LEN: usize = 32;
const WORDS: usize = DNAME_INLINE_LEN / 8;

/// The dentry's filesystem lookup is in progress (in the in-lookup table).
pub const D_PAR_LOOKUP: u32 = 1 << 0;
/// Something is mounted here.
pub const D_MOUNTED: u32 = 1 << 1;

/// A name stored so that RCU readers may read it while a rename rewrites it:
/// short names in atomic words, long ones behind an RCU pointer. A reader
/// may see a torn mix; its `d_seq` re-check throws such a read away.
pub struct DName {
    len: AtomicUsize,
    words: [AtomicU64; WORDS],
    ext: RcuCell<Vec<u8>>,
}

fn word(name: &[u8], i: usize) -> u64 {
    let mut b = [0u8; 8];
    let lo = (i * 8).min(name.len());
    let hi = (i * 8 + 8).min(name.len());
    b[..hi - lo].copy_from_slice(&name[lo..hi]);
    u64::from_le_bytes(b)
}

impl DName {
    fn new(name: &[u8]) -> Self {
        let n = DName {
            len: AtomicUsize::new(0),
            words: Default::default(),
            ext: RcuCell::new(None),
        };
        n.set(name);
        n
    }

    /// Rewrite (callers hold `d_seq` for writing).
    fn set(&self, name: &[u8]) {
        if name.len() <= DNAME_INLINE_LEN {
            for (i, w) in self.words.iter().enumerate() {
                w.store(word(name, i), Ordering::Relaxed);
            }
            if !self.ext.is_none() {
                self.ext.replace(None);
            }
        } else {
            self.ext.replace(Some(Arc::new(name.to_vec())));
        }
        self.len.store(name.len(), Ordering::Release);
    }

    /// Does it equal `name`? (A snapshot: validate with `d_seq`.)
    #[inline]
    pub fn matches(&self, name: &[u8], g: &RcuGuard) -> bool {
        if self.len.load(Ordering::Acquire) != name.len() {
            return false;
        }
        if name.len() <= DNAME_INLINE_LEN {
            (0..name.len().div_ceil(8))
                .all(|i| self.words[i].load(Ordering::Relaxed) == word(name, i))
        } else {
            self.ext.load(g).is_some_and(|e| e.as_slice() == name)
        }
    }

    /// A copy of the name.
    pub fn to_vec(&self) -> Vec<u8> {
        let len = self.len.load(Ordering::Acquire);
        if len <= DNAME_INLINE_LEN {
            let mut v = Vec::with_capacity(len);
            for w in &self.words {
                v.extend_from_slice(&w.load(Ordering::Relaxed).to_le_bytes());
            }
            v.truncate(len);
            v
        } else {
            self.ext.get_arc().map(|e| (*e).clone()).unwrap_or_default()
        }
    }
}

/// Fields of a dentry guarded by its `d_lock`.
pub struct DLocked {
    pub children: ChildList<DentryInner>,
}

/// Everything a dentry holds (see the module docs for what guards what).
///
/// Laid out as Linux lays out `struct dentry`, by who touches what. The
/// first two cache lines hold what a lockless walk reads (Linux's "RCU
/// lookup touched fields"): they change only when this dentry itself is
/// hashed, renamed, instantiated or killed. The lockref (the `d_lock` and
/// count word, with the children list head it guards) starts the third
/// line: every reference taken or dropped, and every child added or
/// removed, stores to it. Sharing a line with it, each of those stores
/// cost every other CPU's walk through this directory a cache miss. The
/// list links of the enclosing [`Node`] (written when a sibling comes or
/// goes) and the `Arc`'s counts sit in lines of their own after and before
/// it. `dentry_layout_keeps_the_walk_off_the_lockref_line` checks it.
#[repr(C, align(64))]
pub struct DentryInner {
    hash_link: RcuLink<Dentry>,
    /// Live while the dentry is; RCU readers check it before trusting any
    /// other field (see [`d_canary_ok`] and `crate::poison`).
    canary: Canary<DENTRY_LIVE>,
    hash: AtomicU64,
    pub d_seq: SeqCount,
    pub dir_seq: SeqCount,
    flags: AtomicU32,
    pub parent: RcuCell<Dentry>,
    pub inode: RcuCell<Inode>,
    pub name: DName,
    pub sb: Arc<SuperBlock>,
    /// When the filesystem last confirmed this dentry (platform ms): lets
    /// a filesystem whose dcache can go stale expire negatives (cifs).
    pub d_time: AtomicU64,
    pub lockref: LockRef<DLocked>,
    /// The ENOENT design's own words (see `design::DesignState`).
    pub design_state: design::DesignState,
}

impl RcuNode for Dentry {
    fn rcu_link(&self) -> &RcuLink<Self> {
        &self.hash_link
    }
}

impl Drop for DentryInner {
    fn drop(&mut self) {
        stats::inc(Event::DentryFree);
        // The references this dentry held on shared objects go now.
        stats::census_arc_ptr(self.parent.ptr());
        stats::census_arc(&self.sb);
    }
}

impl DentryInner {
    /// Flags snapshot.
    #[inline]
    pub fn flags(&self) -> u32 {
        self.flags.load(Ordering::Acquire)
    }
    pub(crate) fn set_flag(&self, f: u32) {
        self.flags.fetch_or(f, Ordering::AcqRel);
    }
    /// SeqCst: ends waits that may halt (`sync::spinwait::wake`).
    pub(crate) fn clear_flag(&self, f: u32) {
        self.flags.fetch_and(!f, Ordering::SeqCst);
    }
    /// The flags word's address: what halted waiters of `D_PAR_LOOKUP`
    /// wait on.
    pub(crate) fn flags_addr(&self) -> usize {
        &self.flags as *const _ as usize
    }
    /// The flags, with a sequentially consistent load (a halting wait's
    /// last look).
    pub(crate) fn flags_seqcst(&self) -> u32 {
        self.flags.load(Ordering::SeqCst)
    }
    /// The name hash.
    #[inline]
    pub fn hash(&self) -> u64 {
        self.hash.load(Ordering::Relaxed)
    }
    /// Is it in the hash table?
    #[inline]
    pub fn is_hashed(&self) -> bool {
        self.hash_link.is_linked()
    }
    /// Is it a root (no parent)?
    pub fn is_root(&self) -> bool {
        self.parent.is_none()
    }
    /// Negative (no inode)? Snapshot.
    pub fn is_negative(&self) -> bool {
        self.inode.is_none()
    }
    /// Owned inode reference.
    pub fn inode_arc(&self) -> Option<Arc<Inode>> {
        self.inode.get_arc()
    }
}

/// The global dcache state.
pub struct Dcache {
    table: RcuHashTable<Dentry>,
    hasher: ahash::RandomState,
    in_lookup: Vec<InLookupBucket>,
    /// Linux `rename_lock`: held by a rename from its lookups to `d_move`
    /// (so it also stands for Linux's `s_vfs_rename_mutex`); readers
    /// re-check its count (`rename_seq` in the trace) to learn whether a
    /// rename moved any dentry between chains meanwhile.
    pub rename_lock: SeqLock,
    lru: SpinLock<LruList<DentryInner>>,
    max_unused: AtomicUsize,
}

static DCACHE: spin::Once<Dcache> = spin::Once::new();

/// Default limit on unused (LRU) dentries before the shrinker runs.
pub const DEFAULT_MAX_UNUSED: usize = 1 << 20;

/// The dcache (created on first use, hash seed from the platform clock).
pub fn dcache() -> &'static Dcache {
    DCACHE.call_once(|| {
        mem::register_shrinker(shrink);
        let t = crate::platform::get().now_ns();
        Dcache {
            table: RcuHashTable::new(16),
            hasher: ahash::RandomState::with_seeds(
                t ^ 0x243f_6a88_85a3_08d3,
                t.rotate_left(17) ^ 0x1319_8a2e_0370_7344,
                0xa409_3822_299f_31d0,
                0x082e_fa98_ec4e_6c89,
            ),
            in_lookup: (0..IN_LOOKUP_BUCKETS)
                .map(|_| InLookupBucket(SpinLock::new(Vec::new())))
                .collect(),
            rename_lock: SeqLock::new(),
            lru: SpinLock::new(LruList::new()),
            max_unused: AtomicUsize::new(DEFAULT_MAX_UNUSED),
        }
    })
}

impl Dcache {
    /// The spinlock kind of the dcache's own locks (LRU, in-lookup and hash
    /// buckets), fixed when it was created (see `sync::rawlock`).
    pub fn lock_kind(&self) -> crate::sync::rawlock::LockKind {
        self.lru.kind()
    }
}

/// Set the unused-dentry limit (the shrinker keeps the LRU at or below it).
pub fn set_max_unused(n: usize) {
    dcache().max_unused.store(n, Ordering::Relaxed);
    shrink_to_limit();
}

/// Number of dentries on the LRU.
pub fn nr_unused() -> usize {
    dcache().lru.lock().len()
}

/// Hash of `name` under `parent` (Linux `full_name_hash` salted by parent).
#[inline]
pub fn d_hash(parent: &Dentry, name: &[u8]) -> u64 {
    dcache()
        .hasher
        .hash_one((parent as *const Dentry as usize, name))
}

/// An owned reference: one lockref count plus the `Arc` that keeps the
/// memory. Dropping it is `dput`.
pub struct DRef {
    d: Option<Arc<Dentry>>,
}

impl DRef {
    /// Adopt an `Arc` whose lockref count the caller already took.
    fn adopt(d: Arc<Dentry>) -> DRef {
        DRef { d: Some(d) }
    }

    /// The `Arc` (for pointer comparisons and long-lived links).
    pub fn arc(&self) -> &Arc<Dentry> {
        self.d.as_ref().expect("DRef used after drop")
    }

    /// `dget`: another counted reference.
    pub fn dget(&self) -> DRef {
        dget(self.arc())
    }
}

impl Deref for DRef {
    type Target = Dentry;
    fn deref(&self) -> &Dentry {
        self.arc()
    }
}

impl Drop for DRef {
    fn drop(&mut self) {
        if let Some(d) = self.d.take() {
            dput(d);
        }
    }
}

/// Take a counted reference to a dentry we already know is alive.
pub fn dget(d: &Arc<Dentry>) -> DRef {
    d.lockref.get();
    stats::inc(Event::SharedStore); // the Arc strong count
    stats::census_arc(d);
    DRef::adopt(d.clone())
}

/// Take a counted reference unless the dentry is dead (`lockref_get_not_dead`).
pub fn dget_not_dead(d: RcuRef<'_, Dentry>) -> Option<DRef> {
    if d.lockref.get_not_dead() {
        stats::inc(Event::SharedStore);
        let a = d.to_arc();
        stats::census_arc(&a);
        Some(DRef::adopt(a))
    } else {
        None
    }
}

/// Bytes of one dentry allocation (what `d_alloc` asks [`mem::admit`] for).
pub const DENTRY_BYTES: usize = mem::arc_size::<Dentry>();

/// Ask for the memory of a dentry named `name`: the dentry, and for a name
/// longer than [`DNAME_INLINE_LEN`] its out-of-line copy (an `Arc<Vec>`
/// and the bytes). `ENOMEM` when either is refused.
fn admit_dentry(name: &[u8]) -> KResult<()> {
    mem::admit(DENTRY_BYTES)?;
    admit_long_name(name)
}

/// Ask for the out-of-line copy of a long name (nothing for a short one).
pub fn admit_long_name(name: &[u8]) -> KResult<()> {
    if name.len() > DNAME_INLINE_LEN {
        mem::admit(mem::arc_size::<Vec<u8>>())?;
        mem::admit(name.len())?;
    }
    Ok(())
}

/// Allocate a dentry for `name` under `parent` (Linux `d_alloc`): count 1,
/// on the parent's children list, pinning the parent. Not hashed.
/// `ENOMEM` when memory admission refuses it (nothing is allocated then).
pub fn d_alloc(parent: &Arc<Dentry>, name: &[u8], hash: u64) -> KResult<DRef> {
    admit_dentry(name)?;
    stats::census_arc(parent);
    stats::census_arc(&parent.sb);
    let d = Arc::new(Node::new(DentryInner {
        hash_link: RcuLink::new(),
        canary: Canary::new(),
        hash: AtomicU64::new(hash),
        name: DName::new(name),
        d_seq: SeqCount::new(),
        dir_seq: SeqCount::new(),
        lockref: LockRef::new(
            1,
            DLocked {
                children: ChildList::new(),
            },
        ),
        parent: RcuCell::new(Some(parent.clone())),
        inode: RcuCell::new(None),
        flags: AtomicU32::new(0),
        d_time: AtomicU64::new(0),
        design_state: design::DesignState::default(),
        sb: parent.sb.clone(),
    }));
    stats::inc(Event::DentryAlloc);
    crate::trace!("  d_alloc: new dentry; parent d_lock to link it and pin the parent");
    // The contended step of the transient design: the parent's d_lock,
    // to add the child and take the child's reference on the parent.
    let mut pg = parent.lockref.lock();
    pg.inc();
    pg.children.push_back(d.clone());
    stats::census_untagged_store(&pg.children as *const _ as usize);
    drop(pg);
    Ok(DRef::adopt(d))
}

/// A root dentry for a new superblock, count 1 (the mount's reference).
pub fn d_alloc_root(sb: Arc<SuperBlock>, inode: Arc<Inode>) -> DRef {
    let d = Arc::new(Node::new(DentryInner {
        hash_link: RcuLink::new(),
        canary: Canary::new(),
        hash: AtomicU64::new(0),
        name: DName::new(b"/"),
        d_seq: SeqCount::new(),
        dir_seq: SeqCount::new(),
        lockref: LockRef::new(
            1,
            DLocked {
                children: ChildList::new(),
            },
        ),
        parent: RcuCell::new(None),
        inode: RcuCell::new(Some(inode)),
        flags: AtomicU32::new(0),
        d_time: AtomicU64::new(0),
        design_state: design::DesignState::default(),
        sb,
    }));
    stats::inc(Event::DentryAlloc);
    DRef::adopt(d)
}

/// A dentry an RCU reader reached was not alive: its canary read as
/// freed or poisoned memory (counted in `stats::Counters::poison_seen`).
/// An RCU bug, never a normal outcome; the walk that sees it stops
/// trusting what it found and starts over with references.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Poisoned;

/// Is `d` still alive? RCU readers ask before they read anything else of a
/// dentry reached without a reference: one relaxed load and a compare, no
/// store. A dead one is counted (`crate::poison::seen`).
#[inline(always)]
pub fn d_canary_ok(d: &Dentry) -> bool {
    if d.canary.is_live() {
        return true;
    }
    poison::seen();
    false
}

/// Find `name` under `parent` in the hash table, RCU mode (Linux
/// `__d_lookup_rcu`): no stores. Returns the dentry and the `d_seq` sampled
/// *before* its parent and name were compared, so that a later
/// `read_retry` proves the match was real. A miss is not authoritative on
/// its own (see `rculist` on renames); callers check `rename_lock`.
/// `Err(Poisoned)`: the chain led onto a freed dentry (an RCU bug, counted);
/// the walk stops there, since none of that dentry's fields, its chain link
/// included, can be believed.
#[inline]
pub fn d_lookup_rcu<'g>(
    parent: &Dentry,
    name: &[u8],
    hash: u64,
    g: &'g RcuGuard,
) -> Result<Option<(RcuRef<'g, Dentry>, u32)>, Poisoned> {
    for d in dcache().table.bucket(hash).iter(g) {
        // Before any other field: the chain kept it alive for our guard
        // (the rculist invariant), unless RCU is broken.
        if !d_canary_ok(&d) {
            return Err(Poisoned);
        }
        if d.hash() != hash {
            continue;
        }
        let seq = d.d_seq.raw_begin();
        if !d.parent.load(g).is_some_and(|p| RcuRef::ptr_eq(p, parent)) {
            continue;
        }
        if !d.is_hashed() || !d.name.matches(name, g) {
            continue;
        }
        return Ok(Some((d, seq)));
    }
    Ok(None)
}

/// Find and reference `name` under `parent` (Linux `d_lookup`): retries
/// while renames move dentries between chains, so a miss is a real miss
/// at some instant. A chain that leads onto a freed dentry (counted, see
/// [`Poisoned`]) ends the search as a miss: retrying would walk into the
/// same freed memory.
pub fn d_lookup(parent: &Dentry, name: &[u8], hash: u64) -> Option<DRef> {
    loop {
        let rs = dcache().rename_lock.read_begin();
        let g = RcuGuard::new();
        match d_lookup_rcu(parent, name, hash, &g) {
            Ok(Some((d, seq))) => {
                if let Some(r) = dget_not_dead(d) {
                    if !d.d_seq.read_retry(seq) {
                        return Some(r);
                    }
                    // It changed under us: retry from the top.
                    drop(r);
                    continue;
                }
            }
            Ok(None) => {}
            Err(Poisoned) => return None,
        }
        if !dcache().rename_lock.read_retry(rs) {
            return None;
        }
    }
}

fn hash_insert(d: &Arc<Dentry>) {
    let mut bucket = dcache().table.bucket(d.hash()).lock();
    bucket.push_front(d.clone());
    // Under the bucket's lock, here and in `unhash`: the census then sees
    // one name's hashes and unhashes in the order the bucket does (a kill
    // unhashes under the dentry's own lock alone, and another CPU may hash
    // the name again as soon as the bucket lets go).
    stats::census_hashed(Arc::as_ptr(d) as usize, d.hash());
}

/// Take `d` out of the hash table (caller holds its `d_lock`). A hashed
/// negative dentry stops being a cached negative here, whatever the path
/// (kill, drop, rename over it).
fn unhash(d: &Dentry) {
    if d.is_hashed() {
        let negative = d.is_negative();
        let mut bucket = dcache().table.bucket(d.hash()).lock();
        let removed = bucket.remove(d);
        stats::census_unhashed(d as *const Dentry as usize);
        drop(bucket);
        if removed && negative {
            stats::inc(Event::NegativeDestroyed);
        }
    }
}

/// Give `d` its inode (or none: negative) and hash it (Linux `d_add`).
/// Caller holds the parent's `i_rwsem` exclusively; the answer of an
/// in-lookup dentry goes through [`d_add_in_lookup`] instead.
///
/// A cached negative that turns positive here (a filesystem whose
/// negatives expire, asked again under the parent's lock: the VFS's
/// `lookup_locked`) stops being a cached negative: counted so, and out of
/// the ENOENT design's care (`forget`). Otherwise negbound kept counting
/// it in its directory's tally, and once it was moved and killed took
/// one from its new directory's (issue 47, point 5).
pub fn d_add(d: &Arc<Dentry>, inode: Option<Arc<Inode>>) {
    debug_assert!(
        d.flags() & D_PAR_LOOKUP == 0,
        "an in-lookup dentry is hashed by d_add_in_lookup"
    );
    d_add_locked(d, inode);
}

fn d_add_locked(d: &Arc<Dentry>, inode: Option<Arc<Inode>>) {
    let g = d.lockref.lock();
    let negative = inode.is_none();
    let was_negative_hashed = d.is_hashed() && d.is_negative();
    d.d_seq.write(|| {
        d.inode.replace(inode);
        if !d.is_hashed() {
            hash_insert(d);
        }
    });
    drop(g);
    match (was_negative_hashed, negative) {
        // Confirmed negative again: the same cached negative.
        (true, true) => {}
        (false, true) => stats::inc(Event::NegativeCreated),
        (true, false) => {
            stats::inc(Event::NegativeDestroyed);
            design::forget(&design::Release {
                complete: d.sb.complete,
                sb_state: &d.sb.design_state,
                dentry: d,
            });
        }
        (false, false) => {}
    }
}

/// Turn `d` (negative or fresh) into a positive dentry for `inode` and make
/// sure it is hashed ([`d_add`] with an inode: a cached negative it was
/// leaves the counts and the design's care there). Caller holds the
/// parent's `i_rwsem` exclusively and has opened the parent's `dir_seq`
/// write section.
pub fn d_instantiate(d: &Arc<Dentry>, inode: Arc<Inode>) {
    d_add(d, Some(inode));
}

/// Make `d` unreachable by lookups (Linux `d_drop`). Caller holds the
/// parent's `i_rwsem` exclusively (and its `dir_seq` write section).
pub fn d_drop(d: &Dentry) {
    let g = d.lockref.lock();
    d.d_seq.write(|| unhash(d));
    drop(g);
}

/// Mark `d` negative and unhashed after an unlink/rmdir (Linux
/// `d_delete` + `d_drop`). Caller as for [`d_drop`].
pub fn d_delete(d: &Dentry) {
    let g = d.lockref.lock();
    d.d_seq.write(|| {
        unhash(d);
        d.inode.replace(None);
    });
    drop(g);
}

/// Move `d` to `new_parent` under `new_name` (Linux `d_move`), dropping
/// `target` (the dentry that had that name) from the hash. Caller holds
/// `rename_lock` (the guard proves it) and both parents' `i_rwsem`
/// exclusively.
pub fn d_move(
    rename_lock: &SeqLockGuard<'_>,
    d: &Arc<Dentry>,
    new_parent: &Arc<Dentry>,
    new_name: &[u8],
    target: Option<&Dentry>,
) {
    let old_parent = d.parent.get_arc().expect("d_move of a root");
    let new_hash = d_hash(new_parent, new_name);
    rename_lock.write_begin();
    // The target leaves the hash inside the same rename_lock section as the
    // move brings `d` in: a `d_lookup` that misses the name in between
    // retries (Linux drops the target inside `__d_move` too).
    if let Some(t) = target {
        d_drop(t);
    }
    // Parents' locks in address order (both are stable under
    // `rename_lock`), then the dentry's.
    let same = Arc::ptr_eq(&old_parent, new_parent);
    let (mut g1, mut g2) = if same {
        (old_parent.lockref.lock(), None)
    } else if (Arc::as_ptr(&old_parent) as usize) < (Arc::as_ptr(new_parent) as usize) {
        let a = old_parent.lockref.lock();
        let b = new_parent.lockref.lock();
        (a, Some(b))
    } else {
        let b = new_parent.lockref.lock();
        let a = old_parent.lockref.lock();
        (a, Some(b))
    };
    let dg = d.lockref.lock();
    d.d_seq.write(|| {
        unhash(d);
        d.name.set(new_name);
        d.hash.store(new_hash, Ordering::Relaxed);
        if !same {
            let child = g1
                .children
                .remove(d)
                .expect("d_move: not on old parent's list");
            g1.dec();
            let g2 = g2.as_mut().expect("two parents");
            g2.inc();
            g2.children.push_back(child);
            d.parent.replace(Some(new_parent.clone()));
        }
        hash_insert(d);
    });
    drop(dg);
    drop(g2);
    drop(g1);
    rename_lock.write_end();
}

#[cfg(test)]
mod tests {
    use super::*;
    use core::mem::{align_of, offset_of, size_of};

    /// The cache lines (counted from the dentry's start) that bytes
    /// `off..off + len` of a [`DentryInner`] fall on.
    fn lines(off: usize, len: usize) -> core::ops::RangeInclusive<usize> {
        off / 64..=(off + len - 1) / 64
    }

    /// What a lockless walk reads of a dentry sits on its first two cache
    /// lines; the lockref (written by every reference and child change),
    /// the list links (written when a sibling comes or goes) and the
    /// `Arc`'s counts (in front of a line-aligned value) on none of them.
    /// docs/lookup-path.md ("Where the fields sit") gives what this saves a
    /// hit beside misses in the same directory.
    #[test]
    fn dentry_layout_keeps_the_walk_off_the_lockref_line() {
        assert_eq!(align_of::<DentryInner>(), 64);
        assert_eq!(
            align_of::<Dentry>(),
            64,
            "the Arc's counts get a line of their own"
        );
        let read = [
            lines(
                offset_of!(DentryInner, hash_link),
                size_of::<RcuLink<Dentry>>(),
            ),
            lines(
                offset_of!(DentryInner, canary),
                size_of::<Canary<DENTRY_LIVE>>(),
            ),
            lines(offset_of!(DentryInner, hash), 8),
            lines(offset_of!(DentryInner, d_seq), size_of::<SeqCount>()),
            lines(offset_of!(DentryInner, dir_seq), size_of::<SeqCount>()),
            lines(offset_of!(DentryInner, flags), 4),
            lines(
                offset_of!(DentryInner, parent),
                size_of::<RcuCell<Dentry>>(),
            ),
            lines(offset_of!(DentryInner, inode), size_of::<RcuCell<Inode>>()),
            lines(offset_of!(DentryInner, name), size_of::<DName>()),
            lines(offset_of!(DentryInner, sb), size_of::<Arc<SuperBlock>>()),
        ];
        for r in &read {
            assert!(
                *r.end() <= 1,
                "a field the walk reads is past line 1: {read:?}"
            );
        }
        let lockref = lines(
            offset_of!(DentryInner, lockref),
            size_of::<LockRef<DLocked>>(),
        );
        assert!(*lockref.start() >= 2, "{lockref:?}");
        // The links follow the value (`Node` is `repr(C)`, value first).
        assert_eq!(size_of::<DentryInner>() % 64, 0);
        assert_eq!(size_of::<Dentry>(), size_of::<DentryInner>() + 64);
    }
}
