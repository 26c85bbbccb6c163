//! Loom models of the lookup path's primitives and of the noalloc race.
//!
//! `make test` runs them through `make test-loom`, which is (release: loom
//! explores thousands of interleavings per model):
//!
//! ```text
//! RUSTFLAGS="--cfg loom" CARGO_TARGET_DIR=target/loom \
//!     cargo test -p fs --release --test loom
//! ```
//!
//! Each model checks one property over every interleaving (bounded by
//! `LOOM_MAX_PREEMPTIONS`, 3 unless set) and uses the crate's own code: under
//! `--cfg loom` `fs::sync` is built on loom's atomics and RCU runs on
//! `fs::sync::model`, whose grace periods are host mode's epoch machine
//! (`fs::sync::epoch`) and end only at an explicit `synchronize_rcu`. The
//! grace-period machines of the kernel's and host mode's RCU are also
//! modelled on their own in `fs/tests/loom_rcu.rs`.
//!
//! The dcache itself cannot run under loom (its global table is a process
//! static, and loom objects live for one execution), so the noalloc models
//! reproduce the dcache's protocol with the same primitives the dcache uses:
//! a directory `dir_seq` (`SeqCount`), a global `rename_seq`, RCU hash chains
//! (`RcuList`) whose nodes carry a `d_seq` and a name rewritten on rename,
//! and the reader steps of `namei::lookup_fast_rcu` + `dcache::d_lookup_rcu`
//! in the same order. The `*_without_*` models remove one check and must
//! fail: they show that the properties are not vacuous.
//!
//! Without `--cfg loom` this file is empty.
#![cfg(loom)]

use std::sync::Arc;

use fs::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use fs::sync::lockref::{LockRef, DEAD};
use fs::sync::rawlock::LockKind;
use fs::sync::rcu::{synchronize_rcu, RcuCell, RcuGuard};
use fs::sync::rculist::{RcuLink, RcuList, RcuNode};
use fs::sync::seqcount::SeqCount;
use fs::sync::spinlock::{RwSem, SpinLock};
use fs::sync::{pvqspinlock, qspinlock};
use loom::thread;

/// Run `f` under loom with a default preemption bound, on a fresh model
/// platform.
/// `bound: None` explores without a preemption bound (needed where the
/// interesting interleaving preempts a reader between two loads of one
/// walk: loom's partial-order reduction under a bound can miss it).
fn model<F: Fn() + Sync + Send + 'static>(bound: Option<usize>, f: F) {
    model_branches(bound, 5_000, f)
}

/// [`model`] with room for `branches` branches per execution (three CPUs
/// spinning on one lock take many).
fn model_branches<F: Fn() + Sync + Send + 'static>(bound: Option<usize>, branches: usize, f: F) {
    let mut b = loom::model::Builder::new();
    if b.preemption_bound.is_none() {
        b.preemption_bound = bound;
    }
    // Spin loops (locks, read_begin, synchronize_rcu) yield on every turn.
    b.max_branches = b.max_branches.max(branches);
    b.check(move || {
        fs::sync::model::init();
        f()
    });
}

// ---------------------------------------------------------------- seqcount

struct Pair {
    seq: SeqCount,
    a: AtomicU64,
    b: AtomicU64,
}

fn pair() -> Arc<Pair> {
    Arc::new(Pair {
        seq: SeqCount::new(),
        a: AtomicU64::new(0),
        b: AtomicU64::new(0),
    })
}

fn pair_writer(p: Arc<Pair>, sections: u64) -> thread::JoinHandle<()> {
    thread::spawn(move || {
        for v in 1..=sections {
            p.seq.write_begin();
            p.a.store(v, Ordering::Relaxed);
            p.b.store(v, Ordering::Relaxed);
            p.seq.write_end();
        }
    })
}

/// A reader that validates with `read_retry` never accepts a pair written
/// by two different write sections (or half of one), whether it waits for
/// an even count (`read_begin`) or samples it raw (`raw_begin`, the noalloc
/// reader).
#[test]
fn seqcount_reader_never_accepts_torn_pair() {
    model(Some(3), || {
        let p = pair();
        let w = pair_writer(p.clone(), 2);
        // raw_begin: one attempt, accepted only if validated.
        let s = p.seq.raw_begin();
        let (x, y) = (p.a.load(Ordering::Relaxed), p.b.load(Ordering::Relaxed));
        if !p.seq.read_retry(s) {
            assert_eq!(x, y, "raw_begin reader accepted a torn pair");
        }
        // read_begin: retry until validated.
        loop {
            let s = p.seq.read_begin();
            assert_eq!(s & 1, 0, "read_begin returned an odd count");
            let (x, y) = (p.a.load(Ordering::Relaxed), p.b.load(Ordering::Relaxed));
            if !p.seq.read_retry(s) {
                assert_eq!(x, y, "read_begin reader accepted a torn pair");
                break;
            }
        }
        w.join().unwrap();
        assert_eq!(p.seq.peek(), 4);
    });
}

/// Two readers with one writer through `write(closure)`: a validated read
/// that follows the writer's completion (joined) sees its values.
#[test]
fn seqcount_write_closure_and_two_readers() {
    model(Some(2), || {
        let p = pair();
        let w = {
            let p = p.clone();
            thread::spawn(move || {
                p.seq.write(|| {
                    p.a.store(7, Ordering::Relaxed);
                    p.b.store(7, Ordering::Relaxed);
                })
            })
        };
        let r = {
            let p = p.clone();
            thread::spawn(move || {
                let s = p.seq.raw_begin();
                let (x, y) = (p.a.load(Ordering::Relaxed), p.b.load(Ordering::Relaxed));
                if !p.seq.read_retry(s) {
                    assert_eq!(x, y);
                }
            })
        };
        w.join().unwrap();
        r.join().unwrap();
        let s = p.seq.read_begin();
        let (x, y) = (p.a.load(Ordering::Relaxed), p.b.load(Ordering::Relaxed));
        assert!(!p.seq.read_retry(s));
        assert_eq!((x, y), (7, 7));
    });
}

// ---------------------------------------------------------------- lockref

/// `get`/`put_not_last` (cmpxchg fast path) racing with lock/inc/dec (slow
/// path, which also forces the fast path to fall back) keep the count
/// exact, and the locked data sees every update.
#[test]
fn lockref_count_stays_exact() {
    model(Some(2), || {
        let lr = Arc::new(LockRef::new(1, 0u32));
        let a = {
            let lr = lr.clone();
            thread::spawn(move || {
                lr.get();
                // We hold a reference besides the initial one: never last.
                // The fast path gives up only while the lock is held; then
                // we drop it under the lock, as dput does.
                if !lr.put_not_last() {
                    let mut g = lr.lock();
                    assert!(g.dec() >= 1, "dropped the last reference");
                }
            })
        };
        {
            let mut g = lr.lock();
            g.inc();
            *g += 1;
            assert!(g.dec() >= 1);
        }
        a.join().unwrap();
        assert_eq!(lr.count(), 1);
        assert_eq!(*lr.lock(), 1);
        // The last reference is never dropped by the fast path.
        assert!(!lr.put_not_last());
        assert!(lr.get_not_dead());
        assert!(lr.put_not_last());
        assert_eq!(lr.count(), 1);
    });
}

/// A killer that (like `dentry_kill`) marks the lockref dead only if the
/// count is its own single reference, racing with `get_not_dead`: a getter
/// that succeeds holds a live reference (never marked dead under it), and
/// one that fails saw a dead lockref.
#[test]
fn lockref_get_not_dead_never_succeeds_after_mark_dead() {
    model(Some(3), || {
        let lr = Arc::new(LockRef::new(1, ()));
        let killer = {
            let lr = lr.clone();
            thread::spawn(move || {
                let mut g = lr.lock();
                if g.count() == 1 {
                    g.mark_dead();
                    true
                } else {
                    // Someone took a reference: ours is not the last.
                    g.dec();
                    false
                }
            })
        };
        let got = lr.get_not_dead();
        let g = lr.lock();
        if got {
            assert!(g.count() >= 1, "got a reference, then it was killed");
        } else {
            assert_eq!(g.count(), DEAD, "get_not_dead failed on a live lockref");
        }
        drop(g);
        let killed = killer.join().unwrap();
        assert_eq!(killed, !got);
        assert_eq!(lr.count(), if got { 1 } else { DEAD });
        assert!(!lr.get_not_dead() || !killed);
    });
}

// ---------------------------------------------------------------- spinlock / rwsem

/// Mutual exclusion: a non-atomic read-modify-write of a relaxed counter
/// inside the lock never loses an update, and nobody else is inside.
#[test]
fn spinlock_mutual_exclusion() {
    model(Some(3), || {
        struct S {
            lock: SpinLock<u32>,
            inside: AtomicU32,
            n: AtomicU32,
        }
        let s = Arc::new(S {
            lock: SpinLock::new(0),
            inside: AtomicU32::new(0),
            n: AtomicU32::new(0),
        });
        let crit = |s: &S, mut g: fs::sync::spinlock::SpinGuard<'_, u32>| {
            assert_eq!(s.inside.fetch_add(1, Ordering::Relaxed), 0, "two inside");
            let v = s.n.load(Ordering::Relaxed);
            s.n.store(v + 1, Ordering::Relaxed);
            *g += 1;
            s.inside.fetch_sub(1, Ordering::Relaxed);
        };
        let t = {
            let s = s.clone();
            thread::spawn(move || {
                let g = s.lock.lock();
                crit(&s, g);
            })
        };
        // try_lock either fails or gives exclusive access.
        if let Some(g) = s.lock.try_lock() {
            crit(&s, g);
        } else {
            let g = s.lock.lock();
            crit(&s, g);
        }
        t.join().unwrap();
        assert_eq!(s.n.load(Ordering::Relaxed), 2);
        assert_eq!(*s.lock.lock(), 2);
    });
}

/// The three lock kinds of [`SpinLock`] each exclude: the same critical
/// section as above, two threads, every kind.
#[test]
fn spinlock_every_kind_excludes() {
    for kind in LockKind::ALL {
        model(Some(2), move || {
            let s = Arc::new((SpinLock::with_kind(kind, 0u32), AtomicU32::new(0)));
            let t = {
                let s = s.clone();
                thread::spawn(move || {
                    let mut g = s.0.lock();
                    assert_eq!(s.1.fetch_add(1, Ordering::Relaxed), 0, "two inside");
                    *g += 1;
                    s.1.fetch_sub(1, Ordering::Relaxed);
                })
            };
            {
                let mut g = s.0.lock();
                assert_eq!(s.1.fetch_add(1, Ordering::Relaxed), 0, "two inside");
                *g += 1;
                s.1.fetch_sub(1, Ordering::Relaxed);
            }
            t.join().unwrap();
            assert_eq!(*s.0.lock(), 2);
        });
    }
}

/// Three CPUs on one queued spinlock: with one holding it, one becomes the
/// pending waiter and one queues on its MCS node, so every step of
/// `qspinlock.c` (fast path, pending, queue head, hand-over, dissolving the
/// queue) runs. Nobody is ever inside with another, the count is exact, and
/// the word ends free with no tail left.
///
/// `bound`: the correct lock is explored with one preemption (at two the
/// model runs longer than `make test` can afford: over 15 minutes here);
/// the broken one needs two to show its bug, and loom stops at the first.
fn qspinlock_three_cpus(bound: usize, lock: fn(&AtomicU32)) {
    three_cpus(bound, lock, qspinlock::unlock);
}

/// [`qspinlock_three_cpus`]'s model for any lock and unlock.
fn three_cpus(bound: usize, lock: fn(&AtomicU32), unlock: fn(&AtomicU32)) {
    model_branches(Some(bound), 100_000, move || {
        struct S {
            word: AtomicU32,
            inside: AtomicU32,
            n: AtomicU32,
        }
        let s = Arc::new(S {
            word: AtomicU32::new(0),
            inside: AtomicU32::new(0),
            n: AtomicU32::new(0),
        });
        let crit = move |s: &S| {
            lock(&s.word);
            assert_eq!(
                s.inside.fetch_add(1, Ordering::Relaxed),
                0,
                "two inside: mutual exclusion broken"
            );
            let v = s.n.load(Ordering::Relaxed);
            s.n.store(v + 1, Ordering::Relaxed);
            s.inside.fetch_sub(1, Ordering::Relaxed);
            unlock(&s.word);
        };
        let ts: Vec<_> = (0..2)
            .map(|_| {
                let s = s.clone();
                thread::spawn(move || crit(&s))
            })
            .collect();
        crit(&s);
        for t in ts {
            t.join().unwrap();
        }
        // A holder that entered without synchronising with the previous
        // release may read a stale count even when the two never overlap.
        assert_eq!(
            s.n.load(Ordering::Relaxed),
            3,
            "lost update: mutual exclusion broken"
        );
        assert_eq!(s.word.load(Ordering::Relaxed), 0, "lock word left dirty");
    });
}

#[test]
fn qspinlock_pending_and_queue_exclude() {
    qspinlock_three_cpus(1, qspinlock::lock);
}

/// The queue head no longer waits for the pending waiter to take the lock:
/// both see the locked byte clear and both go in. Loom must find it.
#[test]
#[should_panic(expected = "mutual exclusion broken")]
fn qspinlock_without_pending_wait_fails() {
    qspinlock_three_cpus(2, qspinlock::lock_without_pending_wait);
}

/// The paravirt queued lock on three CPUs, halting after one spin turn:
/// the second CPU becomes the queue head (no pending bit), marks the lock
/// SLOW and halts; the third queues behind it and halts on its node. Every
/// halt must end in a kick (the model has no tick: a lost kick is a
/// deadlock), nobody is ever inside with another, the count is exact, and
/// the word ends free.
#[test]
fn pvqspinlock_halts_are_always_kicked() {
    three_cpus(1, pvqspinlock::lock, pvqspinlock::unlock);
}

/// The queued waiter reads its node before it says it is halting: the
/// predecessor can hand it the head in between, find it running and not
/// kick, and the waiter then halts for good (the classic check-then-halt
/// race). Loom must find the lost kick.
#[test]
#[should_panic(expected = "deadlock")]
fn pvqspinlock_without_recheck_loses_a_kick() {
    three_cpus(2, pvqspinlock::lock_without_recheck, |w| {
        pvqspinlock::unlock(w)
    });
}

/// RwSem: a writer excludes readers (and other writers); updates made
/// under the write lock are visible to the next holder.
#[test]
fn rwsem_writers_exclude_everyone() {
    model(Some(2), || {
        struct S {
            sem: RwSem,
            readers: AtomicU32,
            writers: AtomicU32,
            n: AtomicU32,
        }
        let s = Arc::new(S {
            sem: RwSem::new(),
            readers: AtomicU32::new(0),
            writers: AtomicU32::new(0),
            n: AtomicU32::new(0),
        });
        let w = {
            let s = s.clone();
            thread::spawn(move || {
                let _w = s.sem.write();
                assert_eq!(s.writers.fetch_add(1, Ordering::Relaxed), 0, "two writers");
                assert_eq!(s.readers.load(Ordering::Relaxed), 0, "reader with writer");
                let v = s.n.load(Ordering::Relaxed);
                s.n.store(v + 1, Ordering::Relaxed);
                s.writers.fetch_sub(1, Ordering::Relaxed);
            })
        };
        // The main thread is a second writer if the semaphore is free right
        // now, else a reader.
        if let Some(g) = s.sem.try_write() {
            assert_eq!(s.writers.fetch_add(1, Ordering::Relaxed), 0, "two writers");
            let v = s.n.load(Ordering::Relaxed);
            s.n.store(v + 1, Ordering::Relaxed);
            s.writers.fetch_sub(1, Ordering::Relaxed);
            drop(g);
            w.join().unwrap();
            assert_eq!(s.n.load(Ordering::Relaxed), 2);
        } else {
            let r = s.sem.read();
            s.readers.fetch_add(1, Ordering::Relaxed);
            assert_eq!(s.writers.load(Ordering::Relaxed), 0, "writer with reader");
            s.readers.fetch_sub(1, Ordering::Relaxed);
            drop(r);
            w.join().unwrap();
            assert_eq!(s.n.load(Ordering::Relaxed), 1);
        };
    });
}

// ---------------------------------------------------------------- RCU objects

/// Per-model "freed" flags: an object's destructor sets its flag; a reader
/// asserts the flag of everything it reaches is still clear.
struct Freed(Vec<AtomicBool>);

impl Freed {
    fn new(n: usize) -> Arc<Freed> {
        Arc::new(Freed((0..n).map(|_| AtomicBool::new(false)).collect()))
    }
    fn check(&self, id: usize, what: &str) {
        assert!(
            !self.0[id].load(Ordering::Acquire),
            "{what}: reader reached object {id} after it was reclaimed"
        );
    }
    fn all_freed(&self) -> bool {
        self.0.iter().all(|f| f.load(Ordering::Acquire))
    }
}

struct Obj {
    id: usize,
    freed: Arc<Freed>,
}

impl Drop for Obj {
    fn drop(&mut self) {
        self.freed.0[self.id].store(true, Ordering::Release);
    }
}

/// RcuCell + Retired + call_rcu + synchronize_rcu: a writer replaces the
/// value twice and waits for grace periods (the old values are reclaimed
/// by then); a reader holding one guard across both replacements never
/// reaches a reclaimed object, and everything is reclaimed at the end.
#[test]
fn rcucell_reader_never_sees_reclaimed_object() {
    model(Some(3), || {
        let freed = Freed::new(3);
        let obj = |id| {
            Some(std::sync::Arc::new(Obj {
                id,
                freed: freed.clone(),
            }))
        };
        let cell = Arc::new(RcuCell::new(obj(0)));
        let w = {
            let cell = cell.clone();
            let (o1, o2) = (obj(1), obj(2));
            thread::spawn(move || {
                cell.replace(o1);
                synchronize_rcu();
                cell.replace(o2);
                synchronize_rcu();
                assert_eq!(fs::sync::model::pending(), 0);
            })
        };
        {
            let g = RcuGuard::new();
            let first = cell.load(&g).expect("never None");
            freed.check(first.id, "rcucell first load");
            let second = cell.load(&g).expect("never None");
            freed.check(second.id, "rcucell second load");
            // Still valid at the end of the section.
            freed.check(first.id, "rcucell first, end of section");
            assert!(second.id >= first.id);
        }
        w.join().unwrap();
        assert!(freed.0[0].load(Ordering::Acquire) && freed.0[1].load(Ordering::Acquire));
        assert!(!freed.0[2].load(Ordering::Acquire), "current value freed");
        drop(Arc::try_unwrap(cell).ok().expect("sole owner"));
        synchronize_rcu();
        assert!(freed.all_freed(), "leak: not every object was reclaimed");
    });
}

/// Nested guards: leaving an inner section does not end the outer one, so
/// an object read under the outer guard stays unreclaimed until it ends.
/// Then `Retired::from_box` through `call_rcu`: reclaimed at the next
/// grace period, not before.
#[test]
fn rcu_nested_guard_and_retired_box() {
    use fs::sync::rcu::{call_rcu, Retired};
    model(Some(3), || {
        let freed = Freed::new(3);
        let obj = |id| {
            Some(std::sync::Arc::new(Obj {
                id,
                freed: freed.clone(),
            }))
        };
        let cell = Arc::new(RcuCell::new(obj(0)));
        let w = {
            let cell = cell.clone();
            let o1 = obj(1);
            thread::spawn(move || {
                cell.replace(o1);
                synchronize_rcu();
            })
        };
        {
            let outer = RcuGuard::new();
            let r = cell.load(&outer).expect("never None");
            {
                let _inner = RcuGuard::new();
            }
            freed.check(r.id, "after the inner guard was dropped");
            let _inner2 = RcuGuard::new();
            freed.check(r.id, "under a second inner guard");
        }
        w.join().unwrap();
        assert!(freed.0[0].load(Ordering::Acquire));
        call_rcu(Retired::from_box(Box::new(Obj {
            id: 2,
            freed: freed.clone(),
        })));
        assert!(
            !freed.0[2].load(Ordering::Acquire),
            "freed before a grace period"
        );
        assert_eq!(fs::sync::model::pending(), 1);
        synchronize_rcu();
        assert!(
            freed.0[2].load(Ordering::Acquire),
            "not freed after a grace period"
        );
        drop(Arc::try_unwrap(cell).ok().expect("sole owner"));
        synchronize_rcu();
        assert!(freed.all_freed(), "leak");
    });
}

// ---------------------------------------------------------------- rculist

struct Node {
    link: RcuLink<Node>,
    id: usize,
    /// The dentry name stand-in (rewritten by a modelled rename).
    name: AtomicU32,
    /// The dentry `d_seq` stand-in.
    d_seq: SeqCount,
    freed: Arc<Freed>,
}

impl RcuNode for Node {
    fn rcu_link(&self) -> &RcuLink<Self> {
        &self.link
    }
}

impl Drop for Node {
    fn drop(&mut self) {
        self.freed.0[self.id].store(true, Ordering::Release);
    }
}

fn node(id: usize, name: u32, freed: &Arc<Freed>) -> std::sync::Arc<Node> {
    std::sync::Arc::new(Node {
        link: RcuLink::new(),
        id,
        name: AtomicU32::new(name),
        d_seq: SeqCount::new(),
        freed: freed.clone(),
    })
}

/// A reader walks the chain B → A while a writer removes B (the node the
/// reader may be standing on), pushes C at the head and waits for a grace
/// period (reclaiming B): the reader never reaches a reclaimed node, always
/// finds A (present throughout), and every node is reclaimed at the end.
#[test]
fn rculist_reader_vs_push_remove() {
    model(Some(3), || {
        const A: usize = 0;
        const B: usize = 1;
        const C: usize = 2;
        let freed = Freed::new(3);
        let list = Arc::new(RcuList::<Node>::new());
        let b = node(B, 2, &freed);
        {
            let mut w = list.lock();
            w.push_front(node(A, 1, &freed));
            w.push_front(b.clone());
        }
        let c = node(C, 3, &freed);
        let writer = {
            let list = list.clone();
            thread::spawn(move || {
                let mut w = list.lock();
                assert!(w.remove(&b));
                assert!(!b.link.is_linked());
                drop(b);
                w.push_front(c);
                drop(w);
                synchronize_rcu();
            })
        };
        {
            let g = RcuGuard::new();
            let mut seen_a = false;
            for n in list.iter(&g) {
                freed.check(n.id, "rculist walk");
                assert_eq!(n.name.load(Ordering::Relaxed) as usize, n.id + 1);
                seen_a |= n.id == A;
            }
            assert!(seen_a, "node present throughout was missed");
        }
        writer.join().unwrap();
        assert!(
            freed.0[B].load(Ordering::Acquire),
            "removed node not reclaimed"
        );
        {
            let g = RcuGuard::new();
            let ids: Vec<usize> = list.iter(&g).map(|n| n.id).collect();
            assert_eq!(ids, vec![C, A]);
        }
        drop(Arc::try_unwrap(list).ok().expect("sole owner"));
        synchronize_rcu();
        assert!(freed.all_freed(), "leak");
    });
}

/// A node that a rename moves to another chain (`d_move`: `remove`, then
/// `push_front` on the new hash's chain) carries a reader standing on it
/// into that chain, where the reader's next step is whatever
/// `push_front` stored in the moved node's `next`: here a node the writer
/// has just created. That step must see the new node as its creator left
/// it. Its `name` is initialised with a Relaxed store after construction,
/// the way a dentry's plain fields (`sb`, the lockref's kind) are written
/// before it is hashed: only the `next` store's Release orders it for a
/// reader that did not come through a chain head. With `next` stored
/// Relaxed, loom lets the reader see the name's first value.
#[test]
fn rculist_reader_on_a_moved_node_sees_its_new_successor_whole() {
    model(Some(3), || {
        const X: usize = 0;
        const H: usize = 1;
        let freed = Freed::new(2);
        let old_chain = Arc::new(RcuList::<Node>::new());
        let new_chain = Arc::new(RcuList::<Node>::new());
        let x = node(X, 1, &freed);
        old_chain.lock().push_front(x.clone());
        let writer = {
            let (old_chain, new_chain, freed) =
                (old_chain.clone(), new_chain.clone(), freed.clone());
            thread::spawn(move || {
                assert!(old_chain.lock().remove(&x));
                let h = node(H, 0, &freed);
                h.name.store(H as u32 + 1, Ordering::Relaxed);
                let mut w = new_chain.lock();
                w.push_front(h);
                w.push_front(x);
                drop(w);
                synchronize_rcu();
            })
        };
        {
            let g = RcuGuard::new();
            for n in old_chain.iter(&g) {
                freed.check(n.id, "walk of a moved node");
                assert_eq!(
                    n.name.load(Ordering::Relaxed) as usize,
                    n.id + 1,
                    "reader reached node {} before its fields were visible",
                    n.id
                );
            }
        }
        writer.join().unwrap();
        drop(Arc::try_unwrap(old_chain).ok().expect("sole owner"));
        drop(Arc::try_unwrap(new_chain).ok().expect("sole owner"));
        synchronize_rcu();
        assert!(freed.all_freed(), "leak");
    });
}

// ---------------------------------------------------------------- noalloc

/// The noalloc protocol's shared state: one directory's child sequence,
/// the global rename sequence, two hash chains, the directory lock.
struct Dir {
    dir_seq: SeqCount,
    rename_seq: SeqCount,
    chains: [RcuList<Node>; 2],
    i_rwsem: RwSem,
    /// Set (Release) once the writer's change is complete.
    done: AtomicBool,
    freed: Arc<Freed>,
}

fn dir(nodes: usize) -> Arc<Dir> {
    Arc::new(Dir {
        dir_seq: SeqCount::new(),
        rename_seq: SeqCount::new(),
        chains: [RcuList::new(), RcuList::new()],
        i_rwsem: RwSem::new(),
        done: AtomicBool::new(false),
        freed: Freed::new(nodes),
    })
}

#[derive(Debug, PartialEq, Eq)]
enum Answer {
    Found(usize),
    Enoent,
    /// A sequence moved: the real walk falls back to ref-walk.
    Retry,
}

#[derive(Clone, Copy)]
struct Checks {
    dir_seq: bool,
    rename_seq: bool,
}

const ALL_CHECKS: Checks = Checks {
    dir_seq: true,
    rename_seq: true,
};

/// The RCU-walk lookup of `name` in chain `chain`, in the order of
/// `namei::lookup_fast_rcu` + `dcache::d_lookup_rcu`: sample the
/// directory's `dir_seq` and `rename_seq`, walk the chain (per node: sample
/// `d_seq`, compare the name, check it is hashed), validate a hit with its
/// `d_seq`, and answer ENOENT on a miss only if neither sequence moved.
fn rcu_lookup(d: &Dir, chain: usize, name: u32, checks: Checks) -> Answer {
    rcu_lookup_paused(d, chain, name, checks, false)
}

/// `pause`: yield to the other threads right after reading the chain head,
/// i.e. before stepping from the first node to its successor. Loom's
/// partial-order reduction tracks only the last access to each atomic, and
/// the writer reads a node's `next` itself before rewriting it, so loom
/// alone never schedules "reader reads the head, writer moves that node,
/// reader reads its `next`"; the pause pins that preemption point and loom
/// still explores everything around it.
fn rcu_lookup_paused(d: &Dir, chain: usize, name: u32, checks: Checks, pause: bool) -> Answer {
    let g = RcuGuard::new();
    let dseq = d.dir_seq.raw_begin();
    let rseq = d.rename_seq.raw_begin();
    let walk = d.chains[chain].iter(&g);
    if pause {
        thread::yield_now();
    }
    for n in walk {
        d.freed.check(n.id, "noalloc lookup");
        let seq = n.d_seq.raw_begin();
        if n.name.load(Ordering::Relaxed) != name || !n.link.is_linked() {
            continue;
        }
        if n.d_seq.read_retry(seq) {
            return Answer::Retry;
        }
        return Answer::Found(n.id);
    }
    if checks.dir_seq && d.dir_seq.read_retry(dseq) {
        return Answer::Retry;
    }
    if checks.rename_seq && d.rename_seq.read_retry(rseq) {
        return Answer::Retry;
    }
    Answer::Enoent
}

/// Create vs lookup: the writer creates "1" (i_rwsem, dir_seq write
/// section, publish in the chain) while the reader looks it up. A lookup
/// that starts after the create completed (it saw `done`) never answers
/// ENOENT; one racing with it may answer either way, but if it answers
/// ENOENT the create had not completed when the lookup started. A second
/// lookup after joining always finds it.
#[test]
fn noalloc_create_vs_lookup() {
    model(Some(3), || {
        let d = dir(2);
        {
            let mut w = d.chains[0].lock();
            w.push_front(node(0, 9, &d.freed));
        }
        let n1 = node(1, 1, &d.freed);
        let writer = {
            let d = d.clone();
            thread::spawn(move || {
                let _l = d.i_rwsem.write();
                d.dir_seq.write_begin();
                d.chains[0].lock().push_front(n1);
                d.dir_seq.write_end();
                d.done.store(true, Ordering::Release);
            })
        };
        let started_after = d.done.load(Ordering::Acquire);
        let a = rcu_lookup(&d, 0, 1, ALL_CHECKS);
        if started_after {
            assert_eq!(
                a,
                Answer::Found(1),
                "ENOENT for a name created before the lookup"
            );
        }
        writer.join().unwrap();
        assert_eq!(rcu_lookup(&d, 0, 1, ALL_CHECKS), Answer::Found(1));
        assert_eq!(rcu_lookup(&d, 0, 2, ALL_CHECKS), Answer::Enoent);
    });
}

/// rename(a, b) over an existing b, as `vfs::rename` does it: inside the
/// directory's `dir_seq` write section the old b is unhashed (`d_delete`)
/// and *then* a is moved onto b (`d_move`: rename_seq section, unhash,
/// new name, rehash). Between the two steps no node is named b, yet b
/// exists at every instant. `check` decides which reader checks run.
fn rename_over_target(checks: Checks) {
    model(Some(3), move || {
        const NAME_A: u32 = 1;
        const NAME_B: u32 = 2;
        let d = dir(2);
        let a = node(0, NAME_A, &d.freed);
        let b = node(1, NAME_B, &d.freed);
        {
            let mut w = d.chains[0].lock();
            w.push_front(a.clone());
            w.push_front(b.clone());
        }
        let writer = {
            let d = d.clone();
            thread::spawn(move || {
                let l = d.i_rwsem.write();
                d.dir_seq.write_begin();
                // d_delete(b)
                b.d_seq.write(|| assert!(d.chains[0].lock().remove(&b)));
                drop(b);
                // d_move(a -> b)
                d.rename_seq.write_begin();
                a.d_seq.write(|| {
                    assert!(d.chains[0].lock().remove(&a));
                    a.name.store(NAME_B, Ordering::Relaxed);
                    d.chains[0].lock().push_front(a.clone());
                });
                d.rename_seq.write_end();
                d.dir_seq.write_end();
                drop(l);
                synchronize_rcu();
            })
        };
        let ans = rcu_lookup(&d, 0, NAME_B, checks);
        assert_ne!(ans, Answer::Enoent, "false ENOENT: b existed throughout");
        writer.join().unwrap();
        assert_eq!(rcu_lookup(&d, 0, NAME_B, checks), Answer::Found(0));
        assert!(d.freed.0[1].load(Ordering::Acquire), "old b not reclaimed");
    });
}

#[test]
fn noalloc_rename_over_existing_target_never_enoent() {
    rename_over_target(ALL_CHECKS);
}

/// The same race with the reader's `dir_seq` check removed: loom must find
/// the false ENOENT, which shows the model exercises the window.
#[test]
#[should_panic(expected = "false ENOENT")]
fn noalloc_rename_over_target_without_dir_seq_fails() {
    rename_over_target(Checks {
        dir_seq: false,
        rename_seq: false,
    });
}

/// A rename elsewhere moves node M (another directory's entry) from chain 0
/// to chain 1 while the reader may stand on it: the reader is carried into
/// chain 1 and misses T, which sits behind M in chain 0 and exists
/// throughout. The directory's `dir_seq` does not move (M is not its
/// child); only `rename_seq` reveals the move.
fn rename_moves_chain(checks: Checks) {
    model(Some(3), move || {
        const T: usize = 0;
        const M: usize = 1;
        let d = dir(2);
        let m = node(M, 5, &d.freed);
        {
            let mut w = d.chains[0].lock();
            w.push_front(node(T, 1, &d.freed));
            w.push_front(m.clone());
        }
        let writer = {
            let d = d.clone();
            thread::spawn(move || {
                // The other directory's locks and dir_seq are not modelled:
                // they are not ours, so the reader never samples them.
                d.rename_seq.write_begin();
                m.d_seq.write(|| {
                    assert!(d.chains[0].lock().remove(&m));
                    m.name.store(6, Ordering::Relaxed);
                    d.chains[1].lock().push_front(m.clone());
                });
                d.rename_seq.write_end();
            })
        };
        let ans = rcu_lookup_paused(&d, 0, 1, checks, true);
        assert_ne!(ans, Answer::Enoent, "false ENOENT: carried off by a rename");
        writer.join().unwrap();
        assert_eq!(rcu_lookup(&d, 0, 1, checks), Answer::Found(T));
    });
}

#[test]
fn noalloc_rename_moving_chains_never_enoent() {
    rename_moves_chain(ALL_CHECKS);
}

/// Without the `rename_seq` check loom must find the reader that was
/// carried into the other chain.
#[test]
#[should_panic(expected = "false ENOENT")]
fn noalloc_rename_moving_chains_without_rename_seq_fails() {
    rename_moves_chain(Checks {
        dir_seq: true,
        rename_seq: false,
    });
}

/// unlink(b) and create(b) in sequence by the writer while the reader
/// looks b up: b is absent between the two, so ENOENT is possible, but a
/// lookup that starts after the create completed finds the new node, and
/// the unlinked node is never reached after its grace period.
#[test]
fn noalloc_unlink_then_create() {
    model(Some(3), || {
        let d = dir(2);
        let old = node(0, 2, &d.freed);
        d.chains[0].lock().push_front(old.clone());
        let new = node(1, 2, &d.freed);
        let writer = {
            let d = d.clone();
            thread::spawn(move || {
                {
                    let _l = d.i_rwsem.write();
                    d.dir_seq
                        .write(|| old.d_seq.write(|| assert!(d.chains[0].lock().remove(&old))));
                }
                drop(old);
                synchronize_rcu();
                {
                    let _l = d.i_rwsem.write();
                    d.dir_seq.write(|| d.chains[0].lock().push_front(new));
                }
                d.done.store(true, Ordering::Release);
            })
        };
        let started_after = d.done.load(Ordering::Acquire);
        let a = rcu_lookup(&d, 0, 2, ALL_CHECKS);
        if started_after {
            assert_eq!(a, Answer::Found(1));
        }
        writer.join().unwrap();
        assert!(d.freed.0[0].load(Ordering::Acquire));
        assert_eq!(rcu_lookup(&d, 0, 2, ALL_CHECKS), Answer::Found(1));
    });
}

// ---------------------------------------------------------------- d_alloc_parallel

/// The shared state of two lookups of one missing name under the directory
/// lock held shared (Linux `d_alloc_parallel`, ours in `dcache`): the
/// directory inode's `i_dir_seq`, the name's hash chain and the in-lookup
/// table (a spinlocked list of the ids whose filesystem lookup is running).
struct Par {
    i_dir_seq: SeqCount,
    chain: RcuList<Node>,
    in_lookup: SpinLock<Vec<usize>>,
    freed: Arc<Freed>,
}

const NAME_X: u32 = 7;

/// One lookup of `NAME_X` in the order of `dcache::d_alloc_parallel`,
/// `namei::lookup_slow` and `dcache::d_add_in_lookup` / `d_lookup_done`:
/// sample `i_dir_seq`, search the chain, lock the in-lookup table, check
/// the sample (`check_seq`), then wait for a lookup already in flight or
/// join the table, ask the filesystem (it has nothing: negative), hash the
/// answer inside an `i_dir_seq` section and leave the table. Returns the id
/// of the dentry the lookup ends on.
fn parallel_lookup(p: &Par, id: usize, check_seq: bool) -> usize {
    let new = node(id, NAME_X, &p.freed);
    loop {
        let seq = p.i_dir_seq.read_begin();
        {
            let g = RcuGuard::new();
            for n in p.chain.iter(&g) {
                if n.name.load(Ordering::Relaxed) == NAME_X && n.link.is_linked() {
                    return n.id;
                }
            }
        }
        let mut table = p.in_lookup.lock();
        if check_seq && p.i_dir_seq.read_retry(seq) {
            drop(table);
            continue;
        }
        if !table.is_empty() {
            // Another lookup of the name is asking the filesystem: wait
            // until it leaves the table, then look again.
            drop(table);
            while !p.in_lookup.lock().is_empty() {
                thread::yield_now();
            }
            continue;
        }
        table.push(id);
        drop(table);
        let start = p.i_dir_seq.write_lock();
        p.chain.lock().push_front(new);
        p.i_dir_seq.write_unlock(start);
        p.in_lookup.lock().retain(|&i| i != id);
        return id;
    }
}

/// Two lookups of one missing name race (the negative design's
/// `lookup_slow`): however they interleave, they end on the same dentry
/// and the chain holds exactly one dentry for the name. A second hashed
/// dentry would outlive a later create of the name and answer ENOENT for
/// a name that exists (what the churn stress test caught).
fn parallel_lookups(check_seq: bool) {
    model(Some(3), move || {
        let p = Arc::new(Par {
            i_dir_seq: SeqCount::new(),
            chain: RcuList::new(),
            in_lookup: SpinLock::new(Vec::new()),
            freed: Freed::new(2),
        });
        let other = {
            let p = p.clone();
            thread::spawn(move || parallel_lookup(&p, 1, check_seq))
        };
        let mine = parallel_lookup(&p, 0, check_seq);
        let theirs = other.join().unwrap();
        let g = RcuGuard::new();
        let hashed = p
            .chain
            .iter(&g)
            .filter(|n| n.name.load(Ordering::Relaxed) == NAME_X)
            .count();
        assert_eq!(hashed, 1, "two dentries hashed for one name");
        assert_eq!(mine, theirs, "the lookups ended on different dentries");
    });
}

#[test]
fn d_alloc_parallel_hashes_one_dentry_per_name() {
    parallel_lookups(true);
}

/// Without the `i_dir_seq` check loom must find the lookup that missed in
/// the chain before the other hashed its answer and searched the table
/// after the other left it.
#[test]
#[should_panic(expected = "two dentries hashed")]
fn d_alloc_parallel_without_i_dir_seq_fails() {
    parallel_lookups(false);
}
