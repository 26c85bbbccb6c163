//! The in-lookup counters: `parallel_found` (a miss allocated, then found
//! the name hashed by another lookup when `d_alloc_parallel` looked again)
//! and `in_lookup_waits` (it found another lookup of the name in progress
//! and waited for it); and when a transient dentry stops being findable
//! (its kill unhashes it before waiting for the parent's lock). Its own
//! test binary (its own process), so that the global counters see only
//! this file's threads.
//!
//! Touches: a fresh tmpfs per test, the global counters.

use std::sync::{Barrier, Mutex};
use std::time::{Duration, Instant};

use fs::dcache::{self, Parallel};
use fs::namei::{resolve, LookupFlags};
use fs::stats;
use fs::vfs::Vfs;
use fs::Errno;

mod turns;

/// The tests of this file take turns: the counters are global. Each turn
/// ends with its RCU callbacks run ([`turns`]).
static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

const DIR: LookupFlags = LookupFlags {
    follow: true,
    directory: true,
};

/// A second lookup of a name whose first lookup is still asking the
/// filesystem waits for it (one `in_lookup_waits`), then finds the first
/// one's answer hashed and takes that dentry (one `parallel_found`), having
/// allocated its own for nothing (two `dentry_alloc` in all). Driven step
/// by step: the first lookup finishes only once the second is counted as
/// waiting.
#[test]
fn a_second_miss_waits_for_the_first_and_takes_its_answer() {
    let _turn = turns::take(&ONE_AT_A_TIME);
    let vfs = Vfs::new_tmpfs("enoent=negative").unwrap();
    vfs.mkdir(b"/d", 0o755).unwrap();
    let (_mnt, dir) = resolve(vfs.mnt_ns(), b"/d", DIR).unwrap();
    let inode = dir.inode_arc().unwrap();
    let name = b"missing";
    let hash = dcache::d_hash(dir.arc(), name);
    let before = stats::snapshot();
    let _shared = inode.i_rwsem.read();
    let Parallel::InLookup(first) =
        dcache::d_alloc_parallel(dir.arc(), &inode, name, hash).unwrap()
    else {
        panic!("nobody else looks this name up")
    };
    std::thread::scope(|s| {
        let second = s.spawn(|| {
            let _shared = inode.i_rwsem.read();
            dcache::d_alloc_parallel(dir.arc(), &inode, name, hash).unwrap()
        });
        let t0 = Instant::now();
        while stats::snapshot().delta(&before).in_lookup_waits == 0 {
            assert!(
                t0.elapsed() < Duration::from_secs(20),
                "the second lookup never waited"
            );
            std::thread::yield_now();
        }
        // The filesystem's answer: a negative dentry, hashed.
        dcache::d_add_in_lookup(first.arc(), &inode, None);
        dcache::d_lookup_done(&first);
        match second.join().unwrap() {
            Parallel::Found(d) => assert!(
                std::sync::Arc::ptr_eq(d.arc(), first.arc()),
                "the second lookup takes the first one's dentry"
            ),
            Parallel::InLookup(_) => panic!("a second in-lookup dentry for one name"),
        }
    });
    let d = stats::snapshot().delta(&before);
    assert_eq!(
        (d.in_lookup_waits, d.parallel_found, d.dentry_alloc),
        (1, 1, 2),
        "{d:?}"
    );
}

/// Threads that miss the same names at the same moment: in the negative
/// design one lookup per name asks the filesystem and hashes its answer;
/// every other miss that reached `d_alloc_parallel` found that answer
/// there. So the allocations are exactly the names plus `parallel_found`,
/// and every wait ended in a find. One thread alone finds nothing there.
#[test]
fn every_allocation_beyond_one_per_name_is_a_find() {
    let _turn = turns::take(&ONE_AT_A_TIME);
    for threads in [1usize, 4] {
        let names: u64 = 20_000;
        let vfs = Vfs::new_tmpfs("enoent=negative").unwrap();
        vfs.mkdir(b"/d", 0o755).unwrap();
        let start = Barrier::new(threads);
        let before = stats::snapshot();
        std::thread::scope(|s| {
            for _ in 0..threads {
                s.spawn(|| {
                    for r in 0..names {
                        let p = format!("/d/m{r}");
                        start.wait();
                        assert_eq!(vfs.stat(p.as_bytes()), Err(Errno::ENOENT));
                    }
                });
            }
        });
        let d = stats::snapshot().delta(&before);
        println!(
            "# {threads} threads, {names} names: dentry_alloc={} parallel_found={} \
             in_lookup_waits={}",
            d.dentry_alloc, d.parallel_found, d.in_lookup_waits
        );
        assert_eq!(d.dentry_alloc, names + d.parallel_found, "{d:?}");
        assert!(d.in_lookup_waits <= d.parallel_found, "{d:?}");
        if threads == 1 {
            assert_eq!((d.parallel_found, d.in_lookup_waits), (0, 0), "{d:?}");
        }
        drop(vfs);
        dcache::shrink_all();
    }
}

/// The last `dput` of a transient dentry unhashes it before it queues on
/// the parent's lock (Linux 6.8+ `__dentry_kill`): with the parent's
/// `d_lock` held by someone else, the name is already gone from the hash
/// (no lookup finds it, its lockref is dead) while the kill still waits to
/// take it off the parent's children. A contended parent lock therefore
/// does not keep the name hashed for other CPUs to share. (A kill that
/// takes the parent's lock first, as Linux's did before 6.7, makes this
/// test time out waiting for the unhash.)
#[test]
fn a_kill_unhashes_before_it_waits_for_the_parents_lock() {
    let _turn = turns::take(&ONE_AT_A_TIME);
    let vfs = Vfs::new_tmpfs("enoent=transient").unwrap();
    vfs.mkdir(b"/d", 0o755).unwrap();
    let (_mnt, dir) = resolve(vfs.mnt_ns(), b"/d", DIR).unwrap();
    let inode = dir.inode_arc().unwrap();
    let name = b"missing";
    let hash = dcache::d_hash(dir.arc(), name);
    let child = {
        let _shared = inode.i_rwsem.read();
        let Parallel::InLookup(d) =
            dcache::d_alloc_parallel(dir.arc(), &inode, name, hash).unwrap()
        else {
            panic!("nobody else looks this name up")
        };
        dcache::d_add_in_lookup(d.arc(), &inode, None);
        dcache::d_lookup_done(&d);
        d
    };
    let weak = std::sync::Arc::downgrade(child.arc());
    assert!(dcache::d_lookup(dir.arc(), name, hash).is_some());
    let held = dir.arc().lockref.lock();
    std::thread::scope(|s| {
        let killer = s.spawn(move || drop(child));
        let d = weak.upgrade().expect("still linked to its parent");
        let t0 = Instant::now();
        while d.is_hashed() {
            assert!(
                t0.elapsed() < Duration::from_secs(20),
                "the kill did not unhash while the parent's lock was held"
            );
            std::thread::yield_now();
        }
        assert!(d.lockref.is_dead());
        assert!(dcache::d_lookup(dir.arc(), name, hash).is_none());
        // Still on the parent's list: unlinking it needs the lock we hold.
        std::thread::sleep(Duration::from_millis(20));
        assert!(
            !killer.is_finished(),
            "the kill did not wait for the parent"
        );
        assert!(d.on_sibling_list());
        drop(held);
        killer.join().unwrap();
        assert!(
            !d.on_sibling_list(),
            "unlinked once the parent's lock was free"
        );
    });
}
