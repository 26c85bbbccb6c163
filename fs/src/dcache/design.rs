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
    fn rcu_miss_is_enoent(&self, sb: &SuperBlock) -> bool {
        Negative.rcu_miss_is_enoent(sb)
    }
    fn slow_miss(&self, sb: &SuperBlock) -> SlowMiss {
        Negative.slow_miss(sb)
    }
    fn retain_negative(&self, sb: &SuperBlock) -> bool {
        Negative.retain_negative(sb)
    }
    fn tmpfs_misses(&self) -> TmpfsMisses {
        Negative.tmpfs_misses()
    }
}

/// Every design, in report order; the first is the baseline the report
/// divides by (Linux's behaviour). Add new designs here: this is the only
/// list (every parser, help text, report and per-design test reads it).
pub static DESIGNS: &[&dyn EnoentDesign] = &[
    &Transient,
    &Negative,
    &NoAlloc,
    #[cfg(feature = "test-design")]
    &Probe,
];

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
