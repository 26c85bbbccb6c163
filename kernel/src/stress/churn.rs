//! `stress=rcu secs=S`: for each ENOENT design (or only `design=D`), a
//! tmpfs tree `/s/d0..d3`; on every CPU a task runs for S/3 seconds (S per
//! design with `design=`): odd tasks churn (create/unlink files `fJ`,
//! mkdir/rmdir directories `gJ`, rename files onto file names and
//! directories onto directory names, across the four directories), even
//! tasks look up and check every answer against what was possible:
//!
//! | path                 | possible answers                                    |
//! |----------------------|-----------------------------------------------------|
//! | `/s/dK`, `/s/dK/keepJ` | found, that exact inode and kind (never churned)  |
//! | `/s/dK/neverJ`       | ENOENT (never created)                              |
//! | `/s/dK/fJ`           | ENOENT, or a *file* created during the run          |
//! | `/s/dK/gJ`           | ENOENT, or a *directory* created during the run     |
//! | `/s/dK/gJ/x`         | ENOENT (churned directories stay empty)             |
//! | `/s/dK/fJ/x`         | ENOENT or ENOTDIR                                   |
//! | `/s/dK/gJ/..`        | ENOENT, or one of the four `dK` directories         |
//!
//! Writers check their own answers too (e.g. unlink: done or ENOENT). At
//! the end the tree is removed, the VFS dropped, the shrinker and grace
//! periods run, and the live dentry count (fs counters: allocated - freed)
//! must be back at its baseline; a sample of the inodes created (one in 8,
//! held through `Weak`) must all be freed.
//!
//! Freed memory is poisoned for the whole run (`mm::poison`): every object
//! the allocator takes back is filled with 0x6b and checked when reused (a
//! changed byte is a write after free), and every dentry and inode an
//! RCU-walk steps on has its canary checked (`fs::poison`: reading the fill
//! or a dropped canary is a read of freed memory, as is a hash-chain link
//! that reads as poison, `rculist::poison_hits`). Dentries are freed only
//! after their grace period, so any of these is an RCU bug, and each counts
//! as a violation. Before the verdict it prints
//! `poison: freed_objects_checked=N writes_after_free=W reads_of_poison=R ...`;
//! N must be above 0 (proof that the checker ran). `poison=0` runs without
//! the allocator's fill and check (the canaries stay), to measure their
//! cost. Then
//! `violations=V lookups=N leaked=L`; exit 0 only when V and L are 0.
//!
//! Touches: the fs crate (a fresh tmpfs per design), `smp`, RCU, `mm::poison`
//! (turned on here unless `poison=0`), the console. Safe code only.

use alloc::sync::{Arc, Weak};
use alloc::vec::Vec;
use core::sync::atomic::{AtomicU64, Ordering};

use bench::params::Design;
use fs::inode::Inode;
use fs::namei::LookupFlags;
use fs::vfs::{FileType, OpenFlags, Vfs};
use fs::Errno;

use super::{designs, drain, settle, show};
use crate::console::kprintln;
use crate::mm::poison;
use crate::smp::{self, CpuSet};
use crate::sync::rcu;
use crate::time;

/// Directories under `/s`.
const NDIRS: usize = 4;
/// Never-churned files per directory.
const NKEEP: usize = 3;
/// Never-created names per directory.
const NNEVER: usize = 3;
/// Churned file names and directory names per directory.
const NCHURN: usize = 4;
/// Violations printed in full (the rest are only counted).
const PRINT_MAX: u64 = 10;

static VIOLATIONS: AtomicU64 = AtomicU64::new(0);

fn violation(what: core::fmt::Arguments<'_>) {
    let n = VIOLATIONS.fetch_add(1, Ordering::Relaxed);
    if n < PRINT_MAX {
        kprintln!("stress: violation on cpu {}: {what}", smp::current_cpu());
    }
}

/// A formatted path as the bytes the VFS takes.
fn path_bytes(s: alloc::string::String) -> Vec<u8> {
    s.into_bytes()
}

/// Every path of the tree, built before the run (no formatting in the loop).
struct Tree {
    dirs: Vec<Vec<u8>>,
    keep: Vec<Vec<u8>>,
    never: Vec<Vec<u8>>,
    files: Vec<Vec<u8>>,
    subdirs: Vec<Vec<u8>>,
    under_subdir: Vec<Vec<u8>>,
    under_file: Vec<Vec<u8>>,
    dotdot: Vec<Vec<u8>>,
    dir_ino: Vec<u64>,
    keep_ino: Vec<u64>,
    /// Inodes numbered above this were created during the run.
    setup_max_ino: u64,
}

impl Tree {
    fn new() -> Tree {
        let mut t = Tree {
            dirs: Vec::new(),
            keep: Vec::new(),
            never: Vec::new(),
            files: Vec::new(),
            subdirs: Vec::new(),
            under_subdir: Vec::new(),
            under_file: Vec::new(),
            dotdot: Vec::new(),
            dir_ino: Vec::new(),
            keep_ino: Vec::new(),
            setup_max_ino: 0,
        };
        for k in 0..NDIRS {
            t.dirs.push(path_bytes(alloc::format!("/s/d{k}")));
            for j in 0..NKEEP {
                t.keep.push(path_bytes(alloc::format!("/s/d{k}/keep{j}")));
            }
            for j in 0..NNEVER {
                t.never.push(path_bytes(alloc::format!("/s/d{k}/never{j}")));
            }
            for j in 0..NCHURN {
                t.files.push(path_bytes(alloc::format!("/s/d{k}/f{j}")));
                t.subdirs.push(path_bytes(alloc::format!("/s/d{k}/g{j}")));
                t.under_subdir
                    .push(path_bytes(alloc::format!("/s/d{k}/g{j}/x")));
                t.under_file
                    .push(path_bytes(alloc::format!("/s/d{k}/f{j}/x")));
                t.dotdot.push(path_bytes(alloc::format!("/s/d{k}/g{j}/..")));
            }
        }
        t
    }

    fn setup(&mut self, vfs: &Vfs) -> fs::KResult<()> {
        vfs.mkdir(b"/s", 0o755)?;
        for d in &self.dirs {
            vfs.mkdir(d, 0o755)?;
            self.dir_ino.push(vfs.stat(d)?.ino);
        }
        for k in &self.keep {
            vfs.write_file(k, b"keep")?;
            self.keep_ino.push(vfs.stat(k)?.ino);
        }
        self.setup_max_ino = self
            .dir_ino
            .iter()
            .chain(&self.keep_ino)
            .copied()
            .max()
            .unwrap_or(0);
        Ok(())
    }

    /// Remove everything `setup` and the churn made.
    fn teardown(&self, vfs: &Vfs) -> u64 {
        let mut bad = 0;
        for f in &self.files {
            bad += !matches!(vfs.unlink(f), Ok(()) | Err(Errno::ENOENT)) as u64;
        }
        for g in &self.subdirs {
            bad += !matches!(vfs.rmdir(g), Ok(()) | Err(Errno::ENOENT)) as u64;
        }
        for k in &self.keep {
            bad += vfs.unlink(k).is_err() as u64;
        }
        for d in &self.dirs {
            bad += vfs.rmdir(d).is_err() as u64;
        }
        bad += vfs.rmdir(b"/s").is_err() as u64;
        bad
    }

    /// One checked lookup.
    fn read_once(&self, vfs: &Vfs, rng: &mut fastrand::Rng) {
        let i = rng.usize(..NDIRS * NCHURN);
        match rng.usize(..8) {
            0 => {
                let k = rng.usize(..self.keep.len());
                match vfs.stat(&self.keep[k]) {
                    Ok(st) if st.ino == self.keep_ino[k] && st.kind == FileType::File => {}
                    r => violation(format_args!("{}: {r:?}", show(&self.keep[k]))),
                }
            }
            1 => {
                let k = rng.usize(..self.never.len());
                let r = vfs.stat(&self.never[k]);
                if r != Err(Errno::ENOENT) {
                    violation(format_args!("{}: {r:?}", show(&self.never[k])));
                }
            }
            2 => match vfs.stat(&self.files[i]) {
                Err(Errno::ENOENT) => {}
                Ok(st) if st.kind == FileType::File && st.ino > self.setup_max_ino => {}
                r => violation(format_args!("{}: {r:?}", show(&self.files[i]))),
            },
            3 => match vfs.stat(&self.subdirs[i]) {
                Err(Errno::ENOENT) => {}
                Ok(st) if st.kind == FileType::Dir && st.ino > self.setup_max_ino => {}
                r => violation(format_args!("{}: {r:?}", show(&self.subdirs[i]))),
            },
            4 => {
                let r = vfs.stat(&self.under_subdir[i]);
                if r != Err(Errno::ENOENT) {
                    violation(format_args!("{}: {r:?}", show(&self.under_subdir[i])));
                }
            }
            5 => match vfs.stat(&self.under_file[i]) {
                Err(Errno::ENOENT) | Err(Errno::ENOTDIR) => {}
                r => violation(format_args!("{}: {r:?}", show(&self.under_file[i]))),
            },
            6 => match vfs.stat(&self.dotdot[i]) {
                Err(Errno::ENOENT) => {}
                Ok(st) if st.kind == FileType::Dir && self.dir_ino.contains(&st.ino) => {}
                r => violation(format_args!("{}: {r:?}", show(&self.dotdot[i]))),
            },
            _ => {
                let k = rng.usize(..NDIRS);
                match vfs.stat(&self.dirs[k]) {
                    Ok(st) if st.ino == self.dir_ino[k] && st.kind == FileType::Dir => {}
                    r => violation(format_args!("{}: {r:?}", show(&self.dirs[k]))),
                }
            }
        }
    }

    /// One checked change; samples created inodes into `born`.
    fn write_once(&self, vfs: &Vfs, rng: &mut fastrand::Rng, born: &mut Vec<Weak<Inode>>, n: u64) {
        let i = rng.usize(..NDIRS * NCHURN);
        let j = rng.usize(..NDIRS * NCHURN);
        let (what, r, ok): (&[u8], fs::KResult<()>, bool) = match rng.usize(..6) {
            0 => {
                let r = vfs
                    .open(
                        &self.files[i],
                        OpenFlags::WRONLY | OpenFlags::CREAT | OpenFlags::EXCL,
                        0o644,
                    )
                    .map(|_| ());
                if r.is_ok() && n.is_multiple_of(8) {
                    sample_inode(vfs, &self.files[i], born);
                }
                (&self.files[i], r, matches!(r, Ok(()) | Err(Errno::EEXIST)))
            }
            1 => {
                let r = vfs.unlink(&self.files[i]);
                (&self.files[i], r, matches!(r, Ok(()) | Err(Errno::ENOENT)))
            }
            2 => {
                let r = vfs.mkdir(&self.subdirs[i], 0o755);
                if r.is_ok() && n.is_multiple_of(8) {
                    sample_inode(vfs, &self.subdirs[i], born);
                }
                (
                    &self.subdirs[i],
                    r,
                    matches!(r, Ok(()) | Err(Errno::EEXIST)),
                )
            }
            3 => {
                let r = vfs.rmdir(&self.subdirs[i]);
                (
                    &self.subdirs[i],
                    r,
                    matches!(r, Ok(()) | Err(Errno::ENOENT)),
                )
            }
            4 => {
                let r = vfs.rename(&self.files[i], &self.files[j]);
                (&self.files[i], r, matches!(r, Ok(()) | Err(Errno::ENOENT)))
            }
            _ => {
                let r = vfs.rename(&self.subdirs[i], &self.subdirs[j]);
                (
                    &self.subdirs[i],
                    r,
                    matches!(r, Ok(()) | Err(Errno::ENOENT)),
                )
            }
        };
        if !ok {
            violation(format_args!("change of {}: {r:?}", show(what)));
        }
    }
}

/// Keep a `Weak` to the inode now at `path` (if it is still there).
fn sample_inode(vfs: &Vfs, path: &[u8], born: &mut Vec<Weak<Inode>>) {
    let flags = LookupFlags {
        follow: false,
        directory: false,
    };
    if let Ok((_mnt, d)) = fs::namei::resolve(vfs.mnt_ns(), path, flags) {
        if let Some(i) = d.inode_arc() {
            born.push(Arc::downgrade(&i));
        }
    }
}

/// Reads of freed memory counted by the fs crate so far: dentry and inode
/// canaries that were not live, plus hash-chain links that read as poison.
pub(super) fn reads_of_poison() -> u64 {
    fs::stats::snapshot().poison_seen + fs::sync::rculist::poison_hits()
}

/// `stress=rcu`: (violations, lookups, leaked). Turns memory poisoning on
/// (and leaves it on) if `poisoning`; poison findings count as violations.
pub fn rcu_stress(secs: u32, only: Option<Design>, poisoning: bool) -> (u64, u64, u64) {
    if poisoning {
        poison::enable();
    }
    let ds = designs(only);
    let per_design_ns = secs as u64 * 1_000_000_000 / ds.len() as u64;
    let n = smp::online_count();
    let (mut lookups, mut leaked) = (0u64, 0u64);
    VIOLATIONS.store(0, Ordering::Relaxed);
    for d in ds {
        let base = drain(2000);
        let v0 = VIOLATIONS.load(Ordering::Relaxed);
        let c0 = fs::stats::snapshot();
        let (p0, r0) = (poison::totals(), reads_of_poison());
        let mut tree = Tree::new();
        let vfs = match Vfs::new_tmpfs(&d.mount_opts()) {
            Ok(v) => v,
            Err(e) => {
                violation(format_args!("tmpfs {}: {e}", d.mount_opts()));
                continue;
            }
        };
        if let Err(e) = tree.setup(&vfs) {
            violation(format_args!("setup: {e}"));
            continue;
        }
        let end = time::now_ns() + per_design_ns;
        let (tree_ref, vfs_ref) = (&tree, &vfs);
        let results = smp::run_on_collect(&CpuSet::first(n), |cpu| {
            let mut rng = fastrand::Rng::with_seed(
                0x9e37_79b9_7f4a_7c15 ^ ((cpu as u64 + 1) << 32) ^ time::now_ns(),
            );
            let mut born = Vec::new();
            // One CPU: alternate; otherwise odd CPUs write, even CPUs read.
            let role = |k: u64| if n == 1 { k % 2 == 1 } else { cpu % 2 == 1 };
            let (mut reads, mut writes) = (0u64, 0u64);
            let mut k = 0u64;
            loop {
                if role(k) {
                    tree_ref.write_once(vfs_ref, &mut rng, &mut born, writes);
                    writes += 1;
                } else {
                    tree_ref.read_once(vfs_ref, &mut rng);
                    reads += 1;
                }
                k += 1;
                if k.is_multiple_of(16) {
                    rcu::quiescent_state();
                    if time::now_ns() >= end {
                        break;
                    }
                }
            }
            (reads, writes, born)
        });
        let mut born: Vec<Weak<Inode>> = Vec::new();
        let (mut reads, mut writes) = (0, 0);
        for (_, (r, w, b)) in results {
            reads += r;
            writes += w;
            born.extend(b);
        }
        let bad_teardown = tree.teardown(&vfs);
        if bad_teardown > 0 {
            violation(format_args!("teardown: {bad_teardown} operations failed"));
        }
        drop(vfs);
        let live = settle(base, 3000);
        let leaked_dentries = (live - base).unsigned_abs();
        let leaked_inodes = born.iter().filter(|w| w.strong_count() > 0).count() as u64;
        let sampled = born.len();
        drop(born);
        // Writes after free found by the allocator and reads of freed memory
        // found by lookups: RCU bugs, so violations too.
        let pd = poison::totals().delta(&p0);
        let poison_reads = reads_of_poison() - r0;
        if pd.violations + poison_reads > 0 {
            violation(format_args!(
                "{d}: {} writes after free, {poison_reads} reads of freed memory",
                pd.violations
            ));
            VIOLATIONS.fetch_add(pd.violations + poison_reads - 1, Ordering::Relaxed);
        }
        let v = VIOLATIONS.load(Ordering::Relaxed) - v0;
        kprintln!(
            "stress=rcu design={d} cpus={n} secs={}.{:03} lookups={reads} changes={writes} violations={v} dentries_live={base}->{live} inodes_sampled={sampled} inodes_leaked={leaked_inodes} poison_checked={} writes_after_free={} reads_of_poison={poison_reads}",
            per_design_ns / 1_000_000_000,
            per_design_ns / 1_000_000 % 1000,
            pd.checked,
            pd.violations,
        );
        if leaked_dentries > 0 {
            let c = fs::stats::snapshot().delta(&c0);
            kprintln!(
                "stress=rcu design={d}: {leaked_dentries} dentries not freed: nr_unused={} negative created={} destroyed={} shrunk={} rcu callbacks queued={}",
                fs::dcache::nr_unused(),
                c.negative_created,
                c.negative_destroyed,
                c.shrunk,
                (0..smp::cpu_count()).map(rcu::pending).sum::<usize>()
            );
        }
        lookups += reads;
        leaked += leaked_dentries + leaked_inodes;
    }
    (VIOLATIONS.load(Ordering::Relaxed), lookups, leaked)
}
