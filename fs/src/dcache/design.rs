//! The ENOENT policy: what the lookup path does when a name is not in the
//! dcache, and whether a negative dentry stays cached. Each way of deciding
//! is an *ENOENT design*, chosen per mount (`enoent=`). One extension point
//! ([`EnoentDesign`]), one registry ([`DESIGNS`]): every parser, help text,
//! report and per-design test reads the registry, so a design is a type
//! implementing the trait plus one entry there (docs/designs.md, "How to
//! add a design").
//!
//! | design      | RCU-walk miss            | ref-walk miss (dir lock held)           | last `dput` of a negative |
//! |-------------|--------------------------|-----------------------------------------|---------------------------|
//! | `transient` | hand over to ref-walk    | allocate, in-lookup, ask fs, hash       | kill it (Linux 6.12 tmpfs) |
//! | `negative`  | hand over to ref-walk    | allocate, in-lookup, ask fs, hash       | keep it on the LRU (ext4) |
//! | `noalloc`   | ENOENT if the directory's child sequence and `rename_lock` did not move | ENOENT, nothing allocated | kill it |
//! | `negbound`  | hand over to ref-walk    | allocate, in-lookup, ask fs, hash       | keep it while its directory keeps fewer than 64 |
//!
//! `noalloc` only applies where the dcache is complete (tmpfs); elsewhere it
//! behaves like `negative`.
//!
//! What a design may touch: its own [`DesignState`] words on dentries and
//! superblocks (zero when their owner is allocated, freed with it), through
//! atomics, and nothing else; each method's doc says which locks its caller
//! holds. Safe code only.

use core::sync::atomic::{AtomicU64, Ordering};

use alloc::sync::Arc;

use crate::dcache::Dentry;

/// What `lookup_slow` does when the name is absent from the dcache.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SlowMiss {
    /// Allocate a dentry, publish it in the in-lookup table, ask the
    /// filesystem and hash the answer (Linux `d_alloc_parallel` +
    /// `->lookup` + `d_add`).
    AllocAndAsk,
    /// The miss is the answer: ENOENT without allocating.
    Enoent,
}

/// Words a design owns on every dentry (for a directory: state about its
/// children, e.g. a tally) and on every superblock. Zero when the owner is
/// allocated, freed with it; no other code reads or writes them. Atomics,
/// so the design picks the ordering it needs; RCU-walk methods may only
/// load them.
#[derive(Default)]
pub struct DesignState {
    pub words: [AtomicU64; 2],
}

/// A miss: the name was not found among `dir`'s children in the dcache.
/// The caller copies in what a design may know of the superblock (its
/// `complete` flag and its [`DesignState`]), so this policy needs nothing
/// of `inode`.
pub struct Miss<'a> {
    /// The superblock's dcache is complete (tmpfs): every child of a
    /// directory is in the dcache, so a miss is the answer.
    pub complete: bool,
    /// The design's words on the superblock.
    pub sb_state: &'a DesignState,
    /// The directory searched (the parent the new dentry would have).
    pub dir: &'a Dentry,
    /// The name looked up (a single component).
    pub name: &'a [u8],
}

/// A dentry the design is asked to let go of: its last reference going
/// away ([`EnoentDesign::retain_negative`]: keep it cached?), or its
/// leaving the design's care ([`EnoentDesign::forget`]: killed, or a
/// negative instantiated). The other decision point, a name not found, is
/// a [`Miss`].
pub struct Release<'a> {
    /// The superblock's dcache is complete (as in [`Miss`]).
    pub complete: bool,
    /// The design's words on the superblock.
    pub sb_state: &'a DesignState,
    pub dentry: &'a Dentry,
}

impl Release<'_> {
    /// The parent directory's dentry (`None` for a root). Stable here: the
    /// dentry's only reference is the caller's, and a rename moves only
    /// dentries its caller holds. Takes a reference (one atomic add), so
    /// designs that do not need the parent should not ask.
    pub fn parent(&self) -> Option<Arc<Dentry>> {
        self.dentry.parent.get_arc()
    }

    /// The dentry's name (copied: a concurrent rename may rewrite it).
    pub fn name(&self) -> alloc::vec::Vec<u8> {
        self.dentry.name.to_vec()
    }
}

/// One way of answering "no such file".
pub trait EnoentDesign: Sync {
    /// The name used in `enoent=`, `design=` and reports.
    fn name(&self) -> &'static str;
    /// One line for help texts.
    fn help(&self) -> &'static str;
    /// May an RCU-walk miss be answered ENOENT directly (after the caller
    /// validated the directory's child sequence and `rename_lock`)?
    ///
    /// Runs in RCU-walk: no lock held, no reference on `m.dir`. Must be
    /// read-only and fence-free: plain loads of `m.dir` and of the
    /// [`DesignState`] words (`Relaxed`), no stores, no allocation.
    fn rcu_miss_is_enoent(&self, m: &Miss<'_>) -> bool;
    /// What to do on a miss in ref-walk. Runs with a reference on `m.dir`
    /// and its inode's `i_rwsem` held shared (other lookups in the same
    /// directory run at once). May update design state with atomics.
    fn slow_miss(&self, m: &Miss<'_>) -> SlowMiss;
    /// Keep an unused negative dentry cached (on the LRU)? Runs in `dput`
    /// with the dentry's `d_lock` held and its count at 1 (the caller's),
    /// only for a hashed negative dentry. May update design state with
    /// atomics; must not take a lock (the parent's `d_lock` nests outside).
    fn retain_negative(&self, d: &Release<'_>) -> bool;
    /// The dentry leaves the design's care: it is being killed (dead,
    /// unhashed, no lock held) or a negative just became positive
    /// (`d_instantiate`, the parent's `i_rwsem` held exclusively). Undo
    /// what [`retain_negative`](Self::retain_negative) counted. Called on
    /// every design, not only the mount's current one ([`forget`]: a
    /// remount may have changed the design since this one counted the
    /// dentry), so it must do nothing, cheaply (no store), for a dentry it
    /// did not count, and may be called more than once for one dentry: be
    /// idempotent. Default: nothing.
    fn forget(&self, _d: &Release<'_>) {}
    /// What this design promises on a tmpfs (a complete dcache), which the
    /// kernel selftest and the host tests check against the allocation
    /// counters. Declared by the design, so a new design brings its own.
    fn tmpfs_misses(&self) -> TmpfsMisses;
}

/// Dentries allocated by misses in a tmpfs directory under one design.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TmpfsMisses {
    /// By the first lookup of a missing name.
    pub first: u64,
    /// By a repeated lookup of the same missing name right after.
    pub repeat: u64,
}

impl TmpfsMisses {
    /// Does a miss allocate at all (so that refused memory is ENOMEM)?
    pub fn allocates(self) -> bool {
        self.first > 0
    }
}

/// Linux 6.12 tmpfs: a transient dentry per miss.
pub struct Transient;
/// ext4-like: negative dentries cached and reclaimed by the shrinker.
pub struct Negative;
/// Zero allocations, zero shared stores: a complete directory's miss is
/// the answer.
pub struct NoAlloc;
/// Negative dentries cached, at most [`NEGBOUND_LIMIT`] per directory (the
/// shape of the per-directory negative-dentry limits proposed for Linux):
/// a directory that misses many distinct names stops growing the cache and
/// pays transient's allocation for the names over the bound.
pub struct NegBound;

/// Most negative dentries [`NegBound`] keeps per directory.
pub const NEGBOUND_LIMIT: u64 = 64;

impl EnoentDesign for Transient {
    fn name(&self) -> &'static str {
        "transient"
    }
    fn help(&self) -> &'static str {
        "Linux 6.12 tmpfs: allocate a dentry per miss under the parent's lock, then kill it"
    }
    fn rcu_miss_is_enoent(&self, _: &Miss<'_>) -> bool {
        false
    }
    fn slow_miss(&self, _: &Miss<'_>) -> SlowMiss {
        SlowMiss::AllocAndAsk
    }
    fn retain_negative(&self, _: &Release<'_>) -> bool {
        false
    }
    fn tmpfs_misses(&self) -> TmpfsMisses {
        TmpfsMisses {
            first: 1,
            repeat: 1,
        }
    }
}

impl EnoentDesign for Negative {
    fn name(&self) -> &'static str {
        "negative"
    }
    fn help(&self) -> &'static str {
        "ext4-like: keep negative dentries hashed and on the LRU; the shrinker reclaims them"
    }
    fn rcu_miss_is_enoent(&self, _: &Miss<'_>) -> bool {
        false
    }
    fn slow_miss(&self, _: &Miss<'_>) -> SlowMiss {
        SlowMiss::AllocAndAsk
    }
    fn retain_negative(&self, _: &Release<'_>) -> bool {
        true
    }
    fn tmpfs_misses(&self) -> TmpfsMisses {
        TmpfsMisses {
            first: 1,
            repeat: 0,
        }
    }
}

impl EnoentDesign for NoAlloc {
    fn name(&self) -> &'static str {
        "noalloc"
    }
    fn help(&self) -> &'static str {
        "complete directories: an RCU-walk miss validated by the directory's sequence is ENOENT, nothing allocated"
    }
    fn rcu_miss_is_enoent(&self, m: &Miss<'_>) -> bool {
        m.complete
    }
    fn slow_miss(&self, m: &Miss<'_>) -> SlowMiss {
        if m.complete {
            SlowMiss::Enoent
        } else {
            SlowMiss::AllocAndAsk
        }
    }
    fn retain_negative(&self, d: &Release<'_>) -> bool {
        !d.complete
    }
    fn tmpfs_misses(&self) -> TmpfsMisses {
        TmpfsMisses {
            first: 0,
            repeat: 0,
        }
    }
}

/// [`NegBound`]'s words: on a directory, how many of its children it keeps
/// negative; on a dentry, 1 while it is one of them.
const TALLY: usize = 0;
const COUNTED: usize = 0;

impl EnoentDesign for NegBound {
    fn name(&self) -> &'static str {
        "negbound"
    }
    fn help(&self) -> &'static str {
        "negative dentries, at most 64 per directory; misses past the bound cost what transient's do"
    }
    fn rcu_miss_is_enoent(&self, _: &Miss<'_>) -> bool {
        false
    }
    fn slow_miss(&self, _: &Miss<'_>) -> SlowMiss {
        SlowMiss::AllocAndAsk
    }
    fn retain_negative(&self, d: &Release<'_>) -> bool {
        let counted = &d.dentry.design_state.words[COUNTED];
        // Parked before, looked up again and released: already counted.
        if counted.load(Ordering::Relaxed) == 1 {
            return true;
        }
        let Some(dir) = d.parent() else {
            return false;
        };
        let tally = &dir.design_state.words[TALLY];
        let room = tally
            .fetch_update(Ordering::AcqRel, Ordering::Relaxed, |n| {
                (n < NEGBOUND_LIMIT).then_some(n + 1)
            })
            .is_ok();
        if room {
            counted.store(1, Ordering::Release);
        }
        room
    }
    fn forget(&self, d: &Release<'_>) {
        let counted = &d.dentry.design_state.words[COUNTED];
        // Every kill asks every design: no store unless we counted it.
        if counted.load(Ordering::Relaxed) == 1 && counted.swap(0, Ordering::AcqRel) == 1 {
            if let Some(dir) = d.parent() {
                dir.design_state.words[TALLY].fetch_sub(1, Ordering::AcqRel);
            }
        }
    }
    fn tmpfs_misses(&self) -> TmpfsMisses {
        TmpfsMisses {
            first: 1,
            repeat: 0,
        }
    }
}

/// A design added only by the `test-design` feature, exactly as
/// docs/designs.md tells a user to add one (a type implementing the trait,
/// copied from an existing design under a new name, and one entry in
/// [`DESIGNS`]): scripts/design-check.sh proves that every surface and
/// every per-design test takes it with no other edit.
#[cfg(feature = "test-design")]
pub struct Probe;

#[cfg(feature = "test-design")]
impl EnoentDesign for Probe {
    fn name(&self) -> &'static str {
        "probe"
    }
    fn help(&self) -> &'static str {
        "test only: a copy of negative under another name"
    }
    fn rcu_miss_is_enoent(&self, m: &Miss<'_>) -> bool {
        Negative.rcu_miss_is_enoent(m)
    }
    fn slow_miss(&self, m: &Miss<'_>) -> SlowMiss {
        Negative.slow_miss(m)
    }
    fn retain_negative(&self, d: &Release<'_>) -> bool {
        Negative.retain_negative(d)
    }
    fn tmpfs_misses(&self) -> TmpfsMisses {
        Negative.tmpfs_misses()
    }
}

/// `d` leaves the care of whichever design counted it (killed, or a
/// negative made positive): every design's [`EnoentDesign::forget`], since
/// the mount's design now need not be the one it had when the dentry was
/// retained (a remount changes it, and prunes unused dentries after).
pub fn forget(d: &Release<'_>) {
    for design in DESIGNS {
        design.forget(d);
    }
}

/// Every design, in report order; the first is the baseline the report
/// divides by (Linux's behaviour). Add new designs here: this is the only
/// list (every parser, help text, report and per-design test reads it).
pub static DESIGNS: &[&dyn EnoentDesign] = &[
    &Transient,
    &Negative,
    &NoAlloc,
    &NegBound,
    #[cfg(feature = "test-design")]
    &Probe,
];

/// Index of the design called `name`.
pub fn by_name(name: &str) -> Option<usize> {
    DESIGNS.iter().position(|d| d.name() == name)
}

/// The width of a column of these names: the longest, and at least `min`.
pub fn width_of<'a>(names: impl IntoIterator<Item = &'a str>, min: usize) -> usize {
    names.into_iter().map(str::len).fold(min, usize::max)
}

/// The width of a column of the registry's names: its longest name, and
/// at least `min` (a header's width, or the width a table has always had).
pub fn name_width(min: usize) -> usize {
    width_of(DESIGNS.iter().map(|d| d.name()), min)
}

/// The valid names, `|`-separated (for error messages).
pub fn names() -> alloc::string::String {
    let v: alloc::vec::Vec<&str> = DESIGNS.iter().map(|d| d.name()).collect();
    v.join("|")
}

/// The valid names, `|`-separated, written without allocating (the kernel
/// prints parse errors before its heap exists).
pub struct Names;

impl core::fmt::Display for Names {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        for (i, d) in DESIGNS.iter().enumerate() {
            if i > 0 {
                f.write_str("|")?;
            }
            f.write_str(d.name())?;
        }
        Ok(())
    }
}

/// Every design's `enoent=` mount option, in registry order (what the
/// per-design tests mount).
pub fn mount_opts() -> alloc::vec::Vec<alloc::string::String> {
    DESIGNS
        .iter()
        .map(|d| alloc::format!("enoent={}", d.name()))
        .collect()
}

/// A per-design test says which designs it ran: one line
/// `designs ran by TEST: a b c` written straight to stderr (not through
/// `eprintln!`, so a passing `cargo test` shows it too), and appended to
/// the file `$FS_DESIGNS_RAN_LOG` when set (scripts/design-check.sh reads
/// it to prove that every per-design test ran an added design).
#[cfg(feature = "std")]
pub fn say_ran<S: AsRef<str>>(test: &str, ran: &[S]) {
    use std::io::Write;
    let mut line = alloc::format!("designs ran by {test}:");
    for d in ran {
        line.push(' ');
        line.push_str(d.as_ref().trim_start_matches("enoent="));
    }
    line.push('\n');
    let _ = std::io::stderr().write_all(line.as_bytes());
    if let Some(path) = std::env::var_os("FS_DESIGNS_RAN_LOG") {
        if let Ok(mut f) = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)
        {
            let _ = f.write_all(line.as_bytes());
        }
    }
}
