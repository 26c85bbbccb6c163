//! Stress tests of the lookup path in the guest (`stress=rcu|mem|oom`).
//!
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
//! `stress=mem`: with the unused-dentry limit set to [`MEM_LIMIT`], every
//! CPU stats its share of 1,000,000 distinct missing names per design
//! (`/m/missNNNNNNN`); each must be ENOENT (ENOMEM is counted apart). The
//! negative design's LRU must stay at or under the limit (the shrinker):
//! its highest sampled `nr_unused` is printed.
//!
//! `stress=oom`: per design, on one CPU, create files of
//! [`OOM_FILE_BYTES`] in a fresh tmpfs until memory admission refuses
//! (the heap's free bytes reach its reserve, `mm::heap::reserve`), then
//! [`OOM_MORE`] more attempts. Checked: every refusal is ENOMEM (never a
//! panic, never another error); every file created before reads back
//! whole, the refused ones are absent or empty, missing names are still
//! ENOENT (the designs that allocate to answer a miss may answer ENOMEM
//! instead: counted as `lookup_enomem`; noalloc never may); after
//! unlinking everything and a grace period the file data is back in the
//! heap and as many files can be created again; live dentries return to
//! their baseline. Prints one `stress=oom design=D ...` line of figures
//! per design.
//!
//! Touches: the fs crate (a fresh tmpfs per design, dcache limit and
//! shrinker), `smp`, RCU, `mm::poison` (on for `stress=rcu`), `mm::heap`
//! (figures), the console. Safe code only.

use alloc::sync::{Arc, Weak};
use alloc::vec::Vec;
use core::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

use bench::params::Design;
use fs::inode::Inode;
use fs::namei::LookupFlags;
use fs::vfs::{FileType, OpenFlags, Vfs};
use fs::Errno;
use kernel::cmdline::Stress;

use crate::console::kprintln;
use crate::exit::{exit, ExitCode};
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
/// `stress=mem`: names per design.
pub const MEM_NAMES: usize = 1_000_000;
/// `stress=mem`: the unused-dentry limit.
pub const MEM_LIMIT: usize = 10_000;

/// `stress=oom`: bytes written to each file.
pub const OOM_FILE_BYTES: usize = 4096;
/// `stress=oom`: attempts after the first ENOMEM.
pub const OOM_MORE: usize = 256;
/// `stress=oom`: the first ENOMEM must come with at most this much more
/// than the reserve free (a slab refill of the largest class, rounded up):
/// admission lets the fs use the heap up to its watermark.
const OOM_NEAR_RESERVE: usize = 256 << 10;
/// `stress=oom`: missing names looked up while memory is short.
const OOM_MISSES: usize = 256;

static VIOLATIONS: AtomicU64 = AtomicU64::new(0);

fn violation(what: core::fmt::Arguments<'_>) {
    let n = VIOLATIONS.fetch_add(1, Ordering::Relaxed);
    if n < PRINT_MAX {
        kprintln!("stress: violation on cpu {}: {what}", smp::current_cpu());
    }
}

/// xorshift64*: each task's own generator.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

fn p(s: alloc::string::String) -> Vec<u8> {
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
            t.dirs.push(p(alloc::format!("/s/d{k}")));
            for j in 0..NKEEP {
                t.keep.push(p(alloc::format!("/s/d{k}/keep{j}")));
            }
            for j in 0..NNEVER {
                t.never.push(p(alloc::format!("/s/d{k}/never{j}")));
            }
            for j in 0..NCHURN {
                t.files.push(p(alloc::format!("/s/d{k}/f{j}")));
                t.subdirs.push(p(alloc::format!("/s/d{k}/g{j}")));
                t.under_subdir.push(p(alloc::format!("/s/d{k}/g{j}/x")));
                t.under_file.push(p(alloc::format!("/s/d{k}/f{j}/x")));
                t.dotdot.push(p(alloc::format!("/s/d{k}/g{j}/..")));
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
    fn read_once(&self, vfs: &Vfs, rng: &mut Rng) {
        let i = rng.below(NDIRS * NCHURN);
        match rng.below(8) {
            0 => {
                let k = rng.below(self.keep.len());
                match vfs.stat(&self.keep[k]) {
                    Ok(st) if st.ino == self.keep_ino[k] && st.kind == FileType::File => {}
                    r => violation(format_args!("{}: {r:?}", show(&self.keep[k]))),
                }
            }
            1 => {
                let k = rng.below(self.never.len());
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
                let k = rng.below(NDIRS);
                match vfs.stat(&self.dirs[k]) {
                    Ok(st) if st.ino == self.dir_ino[k] && st.kind == FileType::Dir => {}
                    r => violation(format_args!("{}: {r:?}", show(&self.dirs[k]))),
                }
            }
        }
    }

    /// One checked change; samples created inodes into `born`.
    fn write_once(&self, vfs: &Vfs, rng: &mut Rng, born: &mut Vec<Weak<Inode>>, n: u64) {
        let i = rng.below(NDIRS * NCHURN);
        let j = rng.below(NDIRS * NCHURN);
        let (what, r, ok): (&[u8], fs::KResult<()>, bool) = match rng.below(6) {
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
    if let Ok((_mnt, d)) = fs::namei::resolve(vfs, path, flags) {
        if let Some(i) = d.inode_arc() {
            born.push(Arc::downgrade(&i));
        }
    }
}

fn show(path: &[u8]) -> &str {
    core::str::from_utf8(path).unwrap_or("?")
}

/// Live dentries by the fs counters.
fn live_dentries() -> i64 {
    let c = fs::stats::snapshot();
    c.dentry_alloc as i64 - c.dentry_free as i64
}

/// Shrink, then pass grace periods on every CPU until every queued RCU
/// callback has run and the live dentry count is `target` (or `timeout_ms`
/// passed). Returns the final live count.
pub fn settle(target: i64, timeout_ms: u64) -> i64 {
    settle_until(Some(target), timeout_ms)
}

/// Shrink and pass grace periods until no RCU callback is queued; returns
/// the live dentry count then (the baseline for a later [`settle`]).
pub fn drain(timeout_ms: u64) -> i64 {
    settle_until(None, timeout_ms)
}

fn settle_until(target: Option<i64>, timeout_ms: u64) -> i64 {
    let deadline = time::now_ns() + timeout_ms * 1_000_000;
    loop {
        fs::dcache::shrink_all();
        rcu::synchronize_rcu();
        smp::run_on(&CpuSet::all(), |_| rcu::quiescent_state());
        let pending: usize = (0..smp::cpu_count()).map(rcu::pending).sum();
        let live = live_dentries();
        if (pending == 0 && target.is_none_or(|t| live == t)) || time::now_ns() > deadline {
            return live;
        }
    }
}

fn designs(only: Option<Design>) -> Vec<Design> {
    match only {
        Some(d) => alloc::vec![d],
        None => Design::ALL.to_vec(),
    }
}

/// Reads of freed memory counted by the fs crate so far: dentry and inode
/// canaries that were not live, plus hash-chain links that read as poison.
fn reads_of_poison() -> u64 {
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
        let vfs = match Vfs::new_tmpfs(d.mount_opts()) {
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
            let mut rng = Rng(0x9e37_79b9_7f4a_7c15 ^ ((cpu as u64 + 1) << 32) ^ time::now_ns());
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

/// `/m/missNNNNNNN` into `buf`; returns the length.
fn miss_name(buf: &mut [u8; 16], mut i: usize) -> usize {
    buf[..7].copy_from_slice(b"/m/miss");
    for k in (7..14).rev() {
        buf[k] = b'0' + (i % 10) as u8;
        i /= 10;
    }
    14
}

/// `stress=mem`: true when every design kept its promises.
pub fn mem_stress(only: Option<Design>) -> bool {
    let n = smp::online_count();
    let mut ok = true;
    fs::dcache::set_max_unused(MEM_LIMIT);
    for d in designs(only) {
        let base = drain(2000);
        let vfs = match Vfs::new_tmpfs(d.mount_opts()) {
            Ok(v) => v,
            Err(e) => {
                kprintln!("stress=mem: tmpfs {}: {e}", d.mount_opts());
                return false;
            }
        };
        if let Err(e) = vfs.mkdir(b"/m", 0o755) {
            kprintln!("stress=mem: mkdir /m: {e}");
            return false;
        }
        let c0 = fs::stats::snapshot();
        let max_unused = AtomicUsize::new(0);
        let t0 = time::now_ns();
        let vfs_ref = &vfs;
        let results = smp::run_on_collect(&CpuSet::first(n), |cpu| {
            let (mut enoent, mut enomem, mut other) = (0u64, 0u64, 0u64);
            let mut buf = [0u8; 16];
            let mut k = 0u64;
            for i in (cpu..MEM_NAMES).step_by(n) {
                let len = miss_name(&mut buf, i);
                match vfs_ref.stat(&buf[..len]) {
                    Err(Errno::ENOENT) => enoent += 1,
                    Err(Errno::ENOMEM) => enomem += 1,
                    r => {
                        other += 1;
                        if other <= 3 {
                            kprintln!("stress=mem: {}: {r:?}", show(&buf[..len]));
                        }
                    }
                }
                k += 1;
                if k.is_multiple_of(64) {
                    rcu::quiescent_state();
                }
                if cpu == 0 && k.is_multiple_of(1024) {
                    max_unused.fetch_max(fs::dcache::nr_unused(), Ordering::Relaxed);
                }
            }
            (enoent, enomem, other)
        });
        let ms = (time::now_ns() - t0) / 1_000_000;
        max_unused.fetch_max(fs::dcache::nr_unused(), Ordering::Relaxed);
        let c = fs::stats::snapshot().delta(&c0);
        let (enoent, enomem, other) = results
            .iter()
            .fold((0, 0, 0), |a, (_, r)| (a.0 + r.0, a.1 + r.1, a.2 + r.2));
        let (used, _, _) = crate::benchrun::memory_figures();
        let (_, heap_size, _) = crate::mm::heap::stats();
        drop(vfs);
        let live = settle(base, 3000);
        let max = max_unused.load(Ordering::Relaxed);
        kprintln!(
            "stress=mem design={d} cpus={n} lookups={} enoent={enoent} enomem={enomem} wrong={other} ms={ms} dentry_allocs={} nr_unused_max={max} limit={MEM_LIMIT} shrunk={} heap_used_kib={} of {} dentries_live={base}->{live}",
            enoent + enomem + other,
            c.dentry_alloc,
            c.shrunk,
            used >> 10,
            heap_size >> 10
        );
        ok &= other == 0 && max <= MEM_LIMIT && live == base;
    }
    fs::dcache::set_max_unused(fs::dcache::DEFAULT_MAX_UNUSED);
    ok
}

/// `/o/fNNNNNNN` (`f` or another one-letter prefix) into `buf`; returns the
/// length.
fn oom_name(buf: &mut [u8; 16], prefix: u8, mut i: usize) -> usize {
    buf[..4].copy_from_slice(b"/o/f");
    buf[3] = prefix;
    for k in (4..11).rev() {
        buf[k] = b'0' + (i % 10) as u8;
        i /= 10;
    }
    11
}

/// What one fill of `/o` did.
struct Fill {
    /// Files created and written in full before the first ENOMEM.
    created: usize,
    /// Attempts answered ENOMEM (the first one included).
    enomem: u64,
    /// Attempts answered anything else: wrong.
    wrong: u64,
}

/// Create and write files `/o/{prefix}N` until the first ENOMEM, stopping
/// early after `max` files.
fn fill(vfs: &Vfs, prefix: u8, max: usize, data: &[u8]) -> Fill {
    let mut f = Fill {
        created: 0,
        enomem: 0,
        wrong: 0,
    };
    let mut buf = [0u8; 16];
    while f.created < max {
        let len = oom_name(&mut buf, prefix, f.created);
        match vfs.write_file(&buf[..len], data) {
            Ok(()) => f.created += 1,
            Err(Errno::ENOMEM) => {
                f.enomem += 1;
                break;
            }
            Err(e) => {
                f.wrong += 1;
                kprintln!("stress=oom: {}: {e}", show(&buf[..len]));
                break;
            }
        }
        if f.created.is_multiple_of(64) {
            rcu::quiescent_state();
        }
    }
    f
}

/// Unlink `/o/{prefix}0 .. /o/{prefix}{n-1}` (absent ones included: a
/// refused create leaves nothing). Returns the answers other than done
/// or ENOENT.
fn unlink_all(vfs: &Vfs, prefix: u8, n: usize) -> u64 {
    let mut buf = [0u8; 16];
    let mut wrong = 0;
    for i in 0..n {
        let len = oom_name(&mut buf, prefix, i);
        if !matches!(vfs.unlink(&buf[..len]), Ok(()) | Err(Errno::ENOENT)) {
            wrong += 1;
        }
        if i.is_multiple_of(64) {
            rcu::quiescent_state();
        }
    }
    wrong
}

/// `stress=oom` for one design: true when it kept its promises.
fn oom_design(d: Design) -> bool {
    use crate::mm::heap;
    let base = drain(2000);
    let free_start = heap::free();
    let vfs = match Vfs::new_tmpfs(d.mount_opts()) {
        Ok(v) => v,
        Err(e) => {
            kprintln!("stress=oom: tmpfs {}: {e}", d.mount_opts());
            return false;
        }
    };
    if let Err(e) = vfs.mkdir(b"/o", 0o755) {
        kprintln!("stress=oom: mkdir /o: {e}");
        return false;
    }
    let c0 = fs::stats::snapshot();
    let data = [0x5au8; OOM_FILE_BYTES];
    let first = fill(&vfs, b'f', usize::MAX, &data);
    let free_at_enomem = heap::free();
    let (mut enomem, mut wrong) = (first.enomem, first.wrong);
    // Keep asking: a create or a write may still squeeze in (memory the
    // shrinker or a grace period gave back), or be refused; nothing else.
    let mut buf = [0u8; 16];
    let mut late = 0u64;
    let tail = first.created + 1;
    for i in tail..tail + OOM_MORE {
        let len = oom_name(&mut buf, b'f', i);
        match vfs.write_file(&buf[..len], &data) {
            Ok(()) => late += 1,
            Err(Errno::ENOMEM) => enomem += 1,
            Err(e) => {
                wrong += 1;
                kprintln!("stress=oom: late {}: {e}", show(&buf[..len]));
            }
        }
    }
    // Lookups while memory is short: the files are whole, a refused file
    // is absent or empty (its create passed, its write was refused).
    let mut read = [0u8; OOM_FILE_BYTES];
    // A design that allocates to answer a miss may run out doing so.
    let miss_allocates = d != Design::Noalloc;
    let mut lookup_enomem = 0u64;
    for i in 0..tail + OOM_MORE {
        let len = oom_name(&mut buf, b'f', i);
        let ok = match vfs.stat(&buf[..len]) {
            // Created before the first ENOMEM, or squeezed in later:
            // whole (reading allocates nothing).
            Ok(st) if st.kind == FileType::File && st.size == OOM_FILE_BYTES as u64 => {
                (i < first.created || i >= tail)
                    && vfs
                        .open(&buf[..len], OpenFlags::RDONLY, 0)
                        .and_then(|f| f.read(&mut read))
                        .is_ok_and(|n| n == OOM_FILE_BYTES && read == data)
            }
            Ok(st) if st.kind == FileType::File && st.size == 0 => i >= first.created,
            Err(Errno::ENOENT) => i >= first.created,
            Err(Errno::ENOMEM) if miss_allocates && i >= first.created => {
                lookup_enomem += 1;
                true
            }
            _ => false,
        };
        if !ok && wrong < 3 {
            kprintln!(
                "stress=oom: after ENOMEM, {}: wrong answer",
                show(&buf[..len])
            );
        }
        wrong += !ok as u64;
    }
    for i in 0..OOM_MISSES {
        let len = oom_name(&mut buf, b'm', i);
        match vfs.stat(&buf[..len]) {
            Err(Errno::ENOENT) => {}
            Err(Errno::ENOMEM) if miss_allocates => lookup_enomem += 1,
            r => {
                wrong += 1;
                kprintln!("stress=oom: miss {}: {r:?}", show(&buf[..len]));
            }
        }
    }
    // Give it all back, then fill again: the data returned to the heap.
    wrong += unlink_all(&vfs, b'f', tail + OOM_MORE);
    drain(2000);
    let free_after_unlink = heap::free();
    let second = fill(&vfs, b'g', first.created, &data);
    wrong += second.wrong + unlink_all(&vfs, b'g', second.created + 1);
    let c = fs::stats::snapshot().delta(&c0);
    drop(vfs);
    let live = settle(base, 3000);
    let free_end = heap::free();
    let (_, heap_size, _) = heap::stats();
    let data_bytes = first.created * OOM_FILE_BYTES;
    let returned = free_after_unlink.saturating_sub(free_at_enomem);
    kprintln!(
        "stress=oom design={d} file_bytes={OOM_FILE_BYTES} files_before_enomem={} enomem={enomem} late_ok={late} lookup_enomem={lookup_enomem} wrong={wrong} fs_enomem={} shrunk={} refill={} of {} heap_kib={} reserve_kib={} free_kib: start={} at_enomem={} after_unlink={} end={} dentries_live={base}->{live}",
        first.created,
        c.enomem,
        c.shrunk,
        second.created,
        first.created,
        heap_size >> 10,
        heap::reserve() >> 10,
        free_start >> 10,
        free_at_enomem >> 10,
        free_after_unlink >> 10,
        free_end >> 10,
    );
    // The data came back (90%: the heap also serves RCU queues and the
    // like meanwhile), and 90% of the files could be created again.
    let ok = wrong == 0
        && first.created > 0
        && enomem >= 1
        && c.enomem >= enomem
        && free_at_enomem < heap::reserve() + OOM_NEAR_RESERVE
        && returned >= data_bytes / 10 * 9
        && second.created >= first.created / 10 * 9
        && live == base;
    if !ok {
        kprintln!(
            "stress=oom design={d}: FAILED (wrong={wrong}, ENOMEM seen {enomem} / counted {}, data {data_bytes} B, returned {returned} B, refill {} of {}, dentries {base}->{live})",
            c.enomem,
            second.created,
            first.created
        );
    }
    ok
}

/// `stress=oom`: true when every design kept its promises.
pub fn oom_stress(only: Option<Design>) -> bool {
    let mut ok = true;
    for d in designs(only) {
        ok &= oom_design(d);
    }
    ok
}

/// Run the stress test `which` and exit with its verdict. `poisoning`:
/// `stress=rcu` with memory poisoning (the default; `poison=0` turns it off,
/// to measure what the checks cost).
pub fn run(which: Stress, secs: Option<u32>, design: Option<Design>, poisoning: bool) -> ! {
    match which {
        Stress::Rcu => {
            let secs = secs.unwrap_or(10);
            log::info!(
                "stress=rcu: {secs} s on {} CPUs (odd CPUs change the tree, even CPUs look up), poisoning {}",
                smp::online_count(),
                if poisoning { "on" } else { "off (poison=0)" }
            );
            let (p0, r0, t0) = (poison::totals(), reads_of_poison(), time::now_ns());
            let (mut v, lookups, leaked) = rcu_stress(secs, design, poisoning);
            let p = poison::totals().delta(&p0);
            kprintln!(
                "poison: freed_objects_checked={} writes_after_free={} reads_of_poison={} freed_objects_poisoned={} large_frees_poisoned={} ms={}",
                p.checked,
                p.violations,
                reads_of_poison() - r0,
                p.filled,
                p.large_filled,
                (time::now_ns() - t0) / 1_000_000
            );
            if poisoning && p.checked == 0 {
                // Poisoning was on and dentries were freed and reused: a
                // checker that checked nothing did not run.
                kprintln!("poison: no freed object was checked on reuse: the checker did not run");
                v += 1;
            }
            kprintln!("violations={v} lookups={lookups} leaked={leaked}");
            exit(if v == 0 && leaked == 0 {
                ExitCode::Success
            } else {
                ExitCode::TestsFailed
            })
        }
        Stress::Mem => {
            let ok = mem_stress(design);
            kprintln!("stress=mem: {}", if ok { "ok" } else { "FAILED" });
            exit(if ok {
                ExitCode::Success
            } else {
                ExitCode::TestsFailed
            })
        }
        Stress::Oom => {
            let ok = oom_stress(design);
            kprintln!("stress=oom: {}", if ok { "ok" } else { "FAILED" });
            exit(if ok {
                ExitCode::Success
            } else {
                ExitCode::TestsFailed
            })
        }
    }
}
