//! Self-tests of the fs crate on this kernel (listed in `crate::selftest`):
//! the `Platform` this module installs (CPU ids, clock, RCU nesting,
//! deferred drops), tmpfs mkdir/stat/ENOENT and lookups from every CPU under
//! each dcache design, dentries coming back after grace periods, and a
//! refused allocation answered as ENOMEM.
//!
//! Safe code only; beside the platform they exercise. Touches: tmpfs
//! instances made and dropped here, the fs crate's fault injection (left
//! off), every CPU through `crate::smp`.

use alloc::format;
use alloc::string::String;
use alloc::sync::Arc;
use alloc::vec::Vec;
use core::sync::atomic::{AtomicUsize, Ordering};

use super::rcu;
use crate::ktest::{ensure, ncpus, DropFlag, TestResult};
use crate::smp::{self, CpuSet};

pub(crate) fn fs_platform() -> TestResult {
    let p = fs::platform::get();
    ensure!(
        p.cpu_count() == ncpus(),
        "platform says {} CPUs",
        p.cpu_count()
    );
    let r = smp::run_on_collect(&CpuSet::all(), |_| {
        let p = fs::platform::get();
        let t0 = p.now_ns();
        let g = fs::sync::rcu::RcuGuard::new();
        let inside = rcu::nesting();
        drop(g);
        (p.cpu_id(), inside, rcu::nesting(), p.now_ns() >= t0)
    });
    for (cpu, (id, inside, outside, mono)) in r {
        ensure!(id == cpu, "platform cpu_id {id} on cpu {cpu}");
        ensure!(
            inside == 1 && outside == 0,
            "cpu {cpu}: nesting {inside}/{outside}"
        );
        ensure!(mono, "cpu {cpu}: platform clock went back");
    }
    let dropped = Arc::new(AtomicUsize::new(0));
    fs::sync::rcu::defer_drop(Arc::new(DropFlag(dropped.clone())));
    fs::sync::rcu::synchronize_rcu();
    ensure!(
        dropped.load(Ordering::SeqCst) == 1,
        "fs::sync::rcu::defer_drop never ran"
    );
    Ok(())
}

/// Say which designs a per-design self-test ran (the registry's, in order;
/// scripts/design-check.sh looks for an added one in the serial log).
fn say_ran(test: &str) {
    crate::kprintln!(
        "designs ran by selftest {test}: {}",
        fs::dcache::design::Names
    );
}

fn tmpfs(design: bench::params::Design) -> Result<fs::vfs::Vfs, String> {
    fs::vfs::Vfs::new_tmpfs(&design.mount_opts()).map_err(|e| format!("tmpfs {design}: {e}"))
}

pub(crate) fn fs_mkdir_stat_enoent_per_design() -> TestResult {
    use bench::params::Design;
    use fs::vfs::FileType;
    use fs::Errno;
    for d in Design::all() {
        let vfs = tmpfs(d)?;
        vfs.mkdir(b"/a", 0o755)
            .map_err(|e| format!("{d}: mkdir /a: {e}"))?;
        vfs.mkdir(b"/a/b", 0o755)
            .map_err(|e| format!("{d}: mkdir /a/b: {e}"))?;
        ensure!(
            vfs.mkdir(b"/a/b", 0o755) == Err(Errno::EEXIST),
            "{d}: second mkdir /a/b"
        );
        let st = vfs
            .stat(b"/a/b")
            .map_err(|e| format!("{d}: stat /a/b: {e}"))?;
        ensure!(st.kind == FileType::Dir, "{d}: /a/b is {:?}", st.kind);
        // Counters are sums over CPUs; the other CPUs are idle here.
        let c0 = fs::stats::snapshot();
        let first = vfs.stat(b"/a/b/missing");
        let c1 = fs::stats::snapshot();
        let second = vfs.stat(b"/a/b/missing");
        let c2 = fs::stats::snapshot();
        ensure!(
            first == Err(Errno::ENOENT) && second == Err(Errno::ENOENT),
            "{d}: stat /a/b/missing: {first:?}, {second:?}"
        );
        let (a1, a2) = (c1.delta(&c0).dentry_alloc, c2.delta(&c1).dentry_alloc);
        // What the design itself declares for a tmpfs.
        let m = d.imp().tmpfs_misses();
        let expected = (m.first, m.repeat);
        ensure!(
            (a1, a2) == expected,
            "{d}: dentry allocations of two misses {a1}, {a2}, expected {expected:?}"
        );
        ensure!(
            vfs.stat(b"/a/b/missing/x") == Err(Errno::ENOENT),
            "{d}: missing/x"
        );
        vfs.write_file(b"/a/b/f", b"x")
            .map_err(|e| format!("{d}: create /a/b/f: {e}"))?;
        ensure!(
            vfs.stat(b"/a/b/f").map(|s| s.kind) == Ok(FileType::File),
            "{d}: /a/b/f after create"
        );
        ensure!(
            vfs.stat(b"/a/b/f/x") == Err(Errno::ENOTDIR),
            "{d}: f/x is not ENOTDIR"
        );
        vfs.unlink(b"/a/b/f")
            .map_err(|e| format!("{d}: unlink: {e}"))?;
        ensure!(
            vfs.stat(b"/a/b/f") == Err(Errno::ENOENT),
            "{d}: /a/b/f after unlink"
        );
    }
    crate::stress::drain(1000);
    say_ran("fs_mkdir_stat_enoent_per_design");
    Ok(())
}

pub(crate) fn fs_lookups_all_cpus_per_design() -> TestResult {
    use bench::params::Design;
    use fs::Errno;
    for d in Design::all() {
        let vfs = tmpfs(d)?;
        vfs.mkdir(b"/dir", 0o755)
            .map_err(|e| format!("{d}: mkdir: {e}"))?;
        let ino = vfs.stat(b"/dir").map_err(|e| format!("{d}: {e}"))?.ino;
        let vfs_ref = &vfs;
        let r = smp::run_on_collect(&CpuSet::all(), |_| {
            let mut wrong = 0u32;
            for _ in 0..200 {
                wrong += (vfs_ref.stat(b"/dir/missing") != Err(Errno::ENOENT)) as u32;
                wrong += !matches!(vfs_ref.stat(b"/dir"), Ok(s) if s.ino == ino) as u32;
            }
            rcu::quiescent_state();
            wrong
        });
        for (cpu, wrong) in r {
            ensure!(wrong == 0, "{d}: cpu {cpu}: {wrong} wrong answers");
        }
    }
    crate::stress::drain(1000);
    say_ran("fs_lookups_all_cpus_per_design");
    Ok(())
}

pub(crate) fn fs_rcu_grace_period_reclaims_dentries() -> TestResult {
    use bench::params::Design;
    let base = crate::stress::drain(1000);
    for d in Design::all() {
        let vfs = tmpfs(d)?;
        vfs.mkdir(b"/a", 0o755).map_err(|e| format!("{d}: {e}"))?;
        let names: Vec<Vec<u8>> = (0..100).map(|i| format!("/a/m{i}").into_bytes()).collect();
        let before = fs::stats::snapshot();
        for n in &names {
            ensure!(vfs.stat(n) == Err(fs::Errno::ENOENT), "{d}: stat hit");
        }
        let made = fs::stats::snapshot().delta(&before).dentry_alloc;
        let expected = 100 * d.imp().tmpfs_misses().first;
        ensure!(made == expected, "{d}: {made} dentries for 100 misses");
        // Transient dentries are freed by RCU callbacks; negative ones by
        // the shrinker and then RCU: both must be back after grace periods.
        drop(vfs);
        let live = crate::stress::settle(base, 2000);
        ensure!(
            live == base,
            "{d}: {live} live dentries after grace periods, baseline {base}"
        );
    }
    say_ran("fs_rcu_grace_period_reclaims_dentries");
    Ok(())
}

/// Memory admission: the heap's answer follows its watermark, and a
/// refused fs allocation (fault injection, as `failslab=1`) is ENOMEM for
/// the caller, leaves nothing behind, and stops when injection stops.
pub(crate) fn fs_enomem_is_an_answer() -> TestResult {
    use crate::mm::{allocator, heap};
    use bench::params::Design;
    use fs::Errno;
    let (_, size, _) = heap::stats();
    ensure!(allocator::may_alloc(64), "a 64-byte allocation refused");
    ensure!(allocator::may_alloc(4096), "a 4 KiB allocation refused");
    ensure!(!allocator::may_alloc(size), "the whole heap admitted");
    let into_reserve = heap::free().saturating_sub(heap::reserve() / 2);
    ensure!(
        !allocator::may_alloc(into_reserve),
        "{into_reserve} bytes admitted: that eats half the reserve ({})",
        heap::reserve()
    );
    let prev = fs::fault::interval();
    let base = crate::stress::drain(1000);
    for d in Design::all() {
        let vfs = tmpfs(d)?;
        vfs.mkdir(b"/a", 0o755).map_err(|e| format!("{d}: {e}"))?;
        let c0 = fs::stats::snapshot();
        fs::fault::fail_every(1);
        let miss = vfs.stat(b"/a/missing");
        let mkdir = vfs.mkdir(b"/a/b", 0o755);
        let write = vfs.write_file(b"/a/f", b"x");
        fs::fault::fail_every(prev);
        let allocates = d.imp().tmpfs_misses().allocates();
        let want_miss = if allocates {
            Errno::ENOMEM
        } else {
            Errno::ENOENT
        };
        ensure!(miss == Err(want_miss), "{d}: stat /a/missing: {miss:?}");
        ensure!(mkdir == Err(Errno::ENOMEM), "{d}: mkdir: {mkdir:?}");
        ensure!(write == Err(Errno::ENOMEM), "{d}: write_file: {write:?}");
        let counted = fs::stats::snapshot().delta(&c0).enomem;
        let seen = 2 + allocates as u64;
        ensure!(
            counted == seen,
            "{d}: enomem counter {counted}, {seen} seen"
        );
        ensure!(
            vfs.stat(b"/a/b") == Err(Errno::ENOENT),
            "{d}: a refused mkdir left /a/b"
        );
        vfs.mkdir(b"/a/b", 0o755)
            .map_err(|e| format!("{d}: mkdir after injection: {e}"))?;
    }
    let live = crate::stress::settle(base, 2000);
    ensure!(
        live == base,
        "{live} live dentries after grace periods, baseline {base}"
    );
    say_ran("fs_enomem_is_an_answer");
    Ok(())
}
