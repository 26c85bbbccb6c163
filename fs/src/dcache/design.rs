//! The ENOENT designs: what the lookup path does when a name is not in the
//! dcache. One extension point, three answers:
//!
//! | design      | RCU-walk miss            | ref-walk miss (dir lock held)           | last `dput` of a negative |
//! |-------------|--------------------------|-----------------------------------------|---------------------------|
//! | `transient` | hand over to ref-walk    | allocate, in-lookup, ask fs, hash       | kill it (Linux 6.12 tmpfs) |
//! | `negative`  | hand over to ref-walk    | allocate, in-lookup, ask fs, hash       | keep it on the LRU (ext4) |
//! | `noalloc`   | ENOENT if the directory's child sequence and `rename_lock` did not move | ENOENT, nothing allocated | kill it |
//!
//! `noalloc` only applies where the dcache is complete (tmpfs); elsewhere it
//! behaves like `negative`.
//!
//! To add a fourth design: write a unit struct implementing
//! [`EnoentDesign`] and add it to [`DESIGNS`]. Its name becomes valid in
//! `enoent=` mount options, `design=` benchmark words and the sweep.

use crate::inode::SuperBlock;

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

/// One way of answering "no such file".
pub trait EnoentDesign: Sync {
    /// The name used in `enoent=`, `design=` and reports.
    fn name(&self) -> &'static str;
    /// One line for help texts.
    fn help(&self) -> &'static str;
    /// May an RCU-walk miss be answered ENOENT directly (after the caller
    /// validated the directory's child sequence and `rename_lock`)?
    fn rcu_miss_is_enoent(&self, sb: &SuperBlock) -> bool;
    /// What to do on a miss under the directory lock.
    fn slow_miss(&self, sb: &SuperBlock) -> SlowMiss;
    /// Keep an unused negative dentry cached (on the LRU)?
    fn retain_negative(&self, sb: &SuperBlock) -> bool;
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

impl EnoentDesign for Transient {
    fn name(&self) -> &'static str {
        "transient"
    }
    fn help(&self) -> &'static str {
        "Linux 6.12 tmpfs: allocate a dentry per miss under the parent's lock, then kill it"
    }
    fn rcu_miss_is_enoent(&self, _: &SuperBlock) -> bool {
        false
    }
    fn slow_miss(&self, _: &SuperBlock) -> SlowMiss {
        SlowMiss::AllocAndAsk
    }
    fn retain_negative(&self, _: &SuperBlock) -> bool {
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
    fn rcu_miss_is_enoent(&self, _: &SuperBlock) -> bool {
        false
    }
    fn slow_miss(&self, _: &SuperBlock) -> SlowMiss {
        SlowMiss::AllocAndAsk
    }
    fn retain_negative(&self, _: &SuperBlock) -> bool {
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
    fn rcu_miss_is_enoent(&self, sb: &SuperBlock) -> bool {
        sb.complete
    }
    fn slow_miss(&self, sb: &SuperBlock) -> SlowMiss {
        if sb.complete {
            SlowMiss::Enoent
        } else {
            SlowMiss::AllocAndAsk
        }
    }
    fn retain_negative(&self, sb: &SuperBlock) -> bool {
        !sb.complete
    }
    fn tmpfs_misses(&self) -> TmpfsMisses {
        TmpfsMisses {
            first: 0,
            repeat: 0,
        }
    }
}

/// Every design, in report order. Add new designs here.
pub static DESIGNS: &[&dyn EnoentDesign] = &[&Transient, &Negative, &NoAlloc];

/// Index of the design called `name`.
pub fn by_name(name: &str) -> Option<usize> {
    DESIGNS.iter().position(|d| d.name() == name)
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
