//! The `transfers` counter: stores to a shared line whose previous writer
//! was another CPU. Its own test binary (its own process), so that the
//! global counters see only this file's threads.

use std::sync::{Barrier, Mutex};

use fs::stats;
use fs::sync::rcu::rcu_barrier;
use fs::vfs::Vfs;
use fs::Errno;

mod turns;

/// The tests of this file take turns: the counters are global. Each turn
/// ends with its RCU callbacks run ([`turns`]).
static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

/// `threads` host threads (each its own CPU id) stat a missing name `n`
/// times each at once; the counter deltas over the whole run.
fn run(design: &str, threads: usize, n: u64) -> stats::Counters {
    let v = Vfs::new_tmpfs(&format!("enoent={design}")).unwrap();
    // Warm: negative creates its dentry here, and every thread's first
    // walk registers its CPU slot.
    assert_eq!(v.stat(b"/nonexistent"), Err(Errno::ENOENT));
    let ready = Barrier::new(threads + 1);
    let go = Barrier::new(threads + 1);
    let done = Barrier::new(threads + 1);
    std::thread::scope(|s| {
        for _ in 0..threads {
            s.spawn(|| {
                assert_eq!(v.stat(b"/nonexistent"), Err(Errno::ENOENT));
                ready.wait();
                go.wait();
                for _ in 0..n {
                    assert_eq!(v.stat(b"/nonexistent"), Err(Errno::ENOENT));
                }
                done.wait();
            });
        }
        ready.wait();
        // Callbacks queued by an earlier run of this process (another
        // test's transient dentries) free memory and store to shared lines:
        // wait until every one has run, so the deltas are this run's alone.
        rcu_barrier();
        let before = stats::snapshot();
        go.wait();
        done.wait();
        let after = stats::snapshot().delta(&before);
        rcu_barrier();
        after
    })
}

#[test]
fn transfers_only_where_lines_are_shared() {
    let _turn = turns::take(&ONE_AT_A_TIME);
    // The lock-free designs first: nothing else of this process stores to
    // shared lines while they run (the transient run's RCU callbacks would).
    for design in ["noalloc", "negative"] {
        for threads in [1, 2] {
            let d = run(design, threads, 20_000);
            assert!(d.enoent >= 20_000 * threads as u64, "{design}: {d:?}");
            assert_eq!(
                (d.transfers, d.shared_stores),
                (0, 0),
                "{design} at {threads} CPUs: no shared store, so no transfer and no extra store: {d:?}"
            );
        }
    }
    // Transient on one CPU: many shared stores, every one to a line this
    // CPU wrote last (or to a fresh one).
    let d1 = run("transient", 1, 20_000);
    assert!(d1.shared_stores >= 4 * 20_000, "{d1:?}");
    assert_eq!(d1.transfers, 0, "one CPU moves no line: {d1:?}");
    // On two, the parent's lockref, the directory's rwsem and the bucket
    // locks go back and forth. Two threads that merely run "at once" may
    // not overlap at all on a loaded 2-core host, so they take strict
    // turns: every stat runs on the other CPU than the one before it, and
    // each must move the parent's lines over.
    let n = 2_000;
    let d2 = run_alternating("transient", n);
    assert!(
        d2.transfers >= n,
        "at least one line moves per turn: {d2:?}"
    );
    assert!(
        d2.transfers <= d2.shared_stores,
        "a transfer is a kind of shared store: {d2:?}"
    );
    // The lock-free designs stay at 0 even then.
    for design in ["noalloc", "negative"] {
        let d = run_alternating(design, n);
        assert_eq!((d.transfers, d.shared_stores), (0, 0), "{design}: {d:?}");
    }
}

/// Two host threads (two CPU ids) stat a missing name `n` times in strict
/// alternation (a barrier between turns); the counter deltas of the turns.
fn run_alternating(design: &str, n: u64) -> stats::Counters {
    let v = Vfs::new_tmpfs(&format!("enoent={design}")).unwrap();
    assert_eq!(v.stat(b"/nonexistent"), Err(Errno::ENOENT));
    let turn = Barrier::new(3);
    let (before, after) = std::thread::scope(|s| {
        for me in 0..2u64 {
            let (v, turn) = (&v, &turn);
            s.spawn(move || {
                // Register this thread's CPU slot before counting starts.
                assert_eq!(v.stat(b"/nonexistent"), Err(Errno::ENOENT));
                turn.wait();
                for i in 0..n {
                    if i % 2 == me {
                        assert_eq!(v.stat(b"/nonexistent"), Err(Errno::ENOENT));
                    }
                    turn.wait();
                }
            });
        }
        rcu_barrier();
        let before = stats::snapshot();
        turn.wait();
        for _ in 0..n {
            turn.wait();
        }
        let after = stats::snapshot();
        (before, after)
    });
    rcu_barrier();
    after.delta(&before)
}

#[test]
fn the_census_names_the_hottest_line() {
    let _turn = turns::take(&ONE_AT_A_TIME);
    // Lines of a 1-CPU transient run, with lock hold times: the hottest is
    // stored to at least once per lookup (it is shared by every lookup of
    // the directory), and some lock was held for a measurable time.
    let v = Vfs::new_tmpfs("enoent=transient").unwrap();
    let n = 5_000u64;
    std::thread::scope(|s| {
        s.spawn(|| {
            assert_eq!(v.stat(b"/nonexistent"), Err(Errno::ENOENT));
            stats::census_begin();
            for _ in 0..n {
                assert_eq!(v.stat(b"/nonexistent"), Err(Errno::ENOENT));
            }
            let (lines, _overflow) = stats::census_end();
            // Every miss handed over to ref-walk and hashed its transient
            // dentry until its kill: both windows were timed once per op.
            let w = stats::census_windows();
            assert_eq!((w.slow, w.hashed), (n, n), "{w:?}");
            assert!(w.hashed_ns > 0 && w.hashed_ns < w.slow_ns, "{w:?}");
            assert!(!lines.is_empty());
            assert!(lines[0].stores >= n, "{:?}", &lines[..3.min(lines.len())]);
            assert!(lines.windows(2).all(|w| w[0].stores >= w[1].stores));
            assert!(lines.iter().any(|l| l.holds >= n && l.hold_ns > 0));
            assert_eq!(lines[0].addr % 64, 0);
        });
    });
}

/// What the census books per line for the scaling model: visits (runs of
/// stores to one line), lockref fast paths among them, stores made while
/// holding the line's own lock, the lines visited while the op's dentry
/// is hashed, and which task stored: two tasks' ops taking turns on one
/// thread tell the parent's line (both) from each name's own hash bucket
/// (one each).
#[test]
fn the_census_books_visits_holds_windows_and_writers() {
    let _turn = turns::take(&ONE_AT_A_TIME);
    let v = Vfs::new_tmpfs("enoent=transient").unwrap();
    let names: [&[u8]; 2] = [b"/missing-a", b"/missing-b"];
    let n = 4_000u64;
    std::thread::scope(|s| {
        s.spawn(|| {
            for name in names {
                assert_eq!(v.stat(name), Err(Errno::ENOENT));
            }
            stats::census_begin();
            for _ in 0..n {
                for (t, name) in names.iter().enumerate() {
                    stats::census_task(Some(t));
                    assert_eq!(v.stat(name), Err(Errno::ENOENT));
                }
            }
            let (lines, _overflow) = stats::census_end();
            // The two tasks miss different names: no hash insert found the
            // other task's last name the same.
            assert_eq!(stats::census_windows().common, 0);
            stats::census_task(None);
            let ops = 2 * n;
            let per_op = |x: u64| x as f64 / ops as f64;
            // The parent's lockref line: stored to by both tasks, locked
            // twice per miss (d_alloc, the kill), its count and list head
            // and release stored inside those holds, taken lock-free by the
            // walk's reference and put. Not touched inside the hashed
            // window: the kill unhashes under the dentry's own lock and
            // only then takes the parent's (Linux 6.8+ `__dentry_kill`), so
            // a queue on the parent's lock cannot keep the name hashed.
            let parent = lines
                .iter()
                .find(|l| l.writers() == 2 && l.holds >= ops)
                .unwrap_or_else(|| panic!("no shared lock line: {:?}", &lines[..4]));
            assert!((per_op(parent.holds) - 2.0).abs() < 0.01, "{parent:?}");
            assert!(per_op(parent.in_hold) >= 4.0, "{parent:?}");
            assert!(per_op(parent.fast) >= 2.0, "{parent:?}");
            assert!(parent.visits > parent.fast, "{parent:?}");
            assert!(parent.visits + parent.in_hold <= parent.stores);
            assert_eq!(
                (parent.win_visits, parent.win_in_hold),
                (0, 0),
                "{parent:?}"
            );
            // The parent's `Arc` count: shared, no transfer tag.
            assert!(
                lines
                    .iter()
                    .any(|l| l.writers() == 2 && l.untagged == l.stores && per_op(l.stores) >= 4.0),
                "no shared untagged line"
            );
            // Each name's hash bucket: locked twice per op of its own task
            // only (insert, unhash), inside the window for the unhash.
            let own: Vec<_> = lines
                .iter()
                .filter(|l| l.writers() == 1 && l.holds >= n && l.win_in_hold > 0)
                .collect();
            assert!(own.len() >= 2, "{:?}", &lines[..8.min(lines.len())]);
        });
    });
}

/// Two tasks missing the same name: the census sees that every hash insert
/// is of the name the other task hashed last (the tasks can share each
/// other's dentry), and the time from each miss to `d_alloc_parallel`'s
/// look in the dcache.
#[test]
fn the_census_sees_a_common_name_and_the_parallel_lookup() {
    let _turn = turns::take(&ONE_AT_A_TIME);
    let v = Vfs::new_tmpfs("enoent=transient").unwrap();
    let n = 4_000u64;
    std::thread::scope(|s| {
        s.spawn(|| {
            assert_eq!(v.stat(b"/same"), Err(Errno::ENOENT));
            stats::census_begin();
            for i in 0..n {
                for t in 0..2 {
                    stats::census_task(Some(t));
                    assert_eq!(v.stat(b"/same"), Err(Errno::ENOENT));
                }
                if i % 32 == 0 {
                    fs::platform::get().rcu_quiescent_state();
                }
            }
            let (lines, _overflow) = stats::census_end();
            let w = stats::census_windows();
            stats::census_task(None);
            assert_eq!(w.hashed, 2 * n, "{w:?}");
            assert!(w.common >= 2 * n - 1, "{w:?}");
            assert_eq!(w.lookup, 2 * n, "{w:?}");
            assert!(w.lookup_ns > 0 && w.lookup_ns < w.slow_ns, "{w:?}");
            // On one thread each miss hashes a dentry of its own, after its
            // look in the dcache and before its walk ends.
            assert_eq!(w.own_hash, 2 * n, "{w:?}");
            assert!(
                w.lookup_ns < w.own_hash_ns && w.own_hash_ns < w.slow_ns,
                "{w:?}"
            );
            // The parent's lock line is shared by both tasks.
            assert!(
                lines.iter().any(|l| l.writers() == 2 && l.holds >= 2 * n),
                "{:?}",
                &lines[..4.min(lines.len())]
            );
        });
    });
}

/// The windows alone, timed while two threads miss the same name at once
/// (`census_windows_begin`: no line is booked). Every miss either hashes a
/// dentry of its own or finds the other thread's in `d_alloc_parallel`,
/// and every dentry hashed is unhashed again and timed, also when the
/// other thread's drop is the last (its unhash finds the hasher's slot).
#[test]
fn the_windows_alone_are_timed_per_cpu_at_two_cpus() {
    let _turn = turns::take(&ONE_AT_A_TIME);
    let v = Vfs::new_tmpfs("enoent=transient").unwrap();
    let n = 20_000u64;
    assert_eq!(v.stat(b"/same"), Err(Errno::ENOENT));
    rcu_barrier();
    let go = Barrier::new(2);
    let before = stats::snapshot();
    stats::census_windows_begin();
    std::thread::scope(|s| {
        for _ in 0..2 {
            s.spawn(|| {
                go.wait();
                for i in 0..n {
                    assert_eq!(v.stat(b"/same"), Err(Errno::ENOENT));
                    if i % 32 == 0 {
                        fs::platform::get().rcu_quiescent_state();
                    }
                }
            });
        }
    });
    let w = stats::census_windows();
    let (lines, overflow) = stats::census_end();
    let d = stats::snapshot().delta(&before);
    assert!(lines.is_empty() && overflow == 0, "the line census was on");
    // Each walk that left RCU-walk for the name opened one slow part: a
    // miss, or a restart on the other thread's dentry being killed (which
    // may also have failed its handover: `Dead` counts beside it).
    let left = d.fallbacks_by_reason[0] + d.fallbacks_by_reason[1];
    assert!(
        w.slow <= left && w.slow >= d.fallbacks_by_reason[0],
        "{w:?} {d:?}"
    );
    // Every allocation hashed its own dentry or found the other's, every
    // dentry hashed was hashed by a slow walk and was unhashed and timed.
    assert_eq!(w.own_hash + d.parallel_found, d.dentry_alloc, "{w:?} {d:?}");
    assert_eq!(w.hashed, w.own_hash, "{w:?}");
    // Whether any walk hits the other thread's transient dentry depends on
    // the two threads overlapping, which a loaded host does not promise
    // (every walk missed in one CI run): only the bounds are asserted.
    assert!(w.slow > 0 && w.slow <= 2 * n, "{w:?}");
    assert!(w.hashed_ns > 0 && w.own_hash_ns < w.slow_ns, "{w:?}");
}
