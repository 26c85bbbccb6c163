//! RCU stress on host threads: create/unlink/rename churn over a shared
//! tmpfs tree while other threads look names up, for each ENOENT design,
//! with every answer checked against what was possible at the time.
//!
//! The oracle: every churned name has a version counter and a ring of the
//! states it went through. A writer, holding the (test-side) locks of the
//! names it changes, writes the predicted next state into the ring, makes
//! the version odd, runs the VFS operation, checks its result against the
//! prediction, and makes the version even. A reader samples the version
//! before and after its `stat`/`lstat`; the answer must equal one of the
//! states between the two samples (the state before an operation that was
//! in flight at the first sample through the state after one in flight at
//! the second). Names that are never created must always be ENOENT, and a
//! path through a churned name must fail like that name's state says.
//!
//! A file's state names its inode: `stat` is not atomic (on Linux either),
//! so it may return the inode the name held at the moment of the lookup
//! with a size that inode reached a little later, even after it was
//! renamed away, grown under its new name and unlinked. The oracle accepts
//! exactly that: the same inode, a size between the one it had in the
//! state and its bound after the call (files only grow).
//!
//! Poisoning: freed hash-chain nodes are poisoned by `fs::sync::rculist`
//! and a lookup that reaches one is counted (`poison_hits`, must be 0);
//! dropped dentries and inodes mark their canary freed, and an RCU-walk
//! that steps on one counts it (`poison_seen`, must be 0; see `fs::poison`).
//! Leaks: after removing everything, dropping the namespace, shrinking the
//! LRU and waiting for grace periods, dentries allocated minus freed and
//! the negative-dentry gauge return to their baselines.
//!
//! Duration: `FS_STRESS_SECS` seconds per design (default 3; the whole file
//! stays under ~15 s on 2 cores). Prints, per design, exactly
//! `violations=V lookups=N leaked=L`.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::SeqCst};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use fs::dcache;
use fs::stats;
use fs::sync::rcu::{call_rcu, rcu_barrier, synchronize_rcu, Retired};
use fs::sync::rculist::poison_hits;
use fs::vfs::{FileType, OpenFlags, Vfs};
use fs::Errno;

mod turns;
use turns::Turn;

/// Tests in this file share global counters and the LRU limit: one at a
/// time, each turn ending with its RCU callbacks run ([`turns`]).
static SERIAL: Mutex<()> = Mutex::new(());

fn serial() -> Turn {
    turns::take(&SERIAL)
}

const DIRS: usize = 4;
const NAMES: usize = 6;
const RING: u64 = 4096;
const WRITERS: usize = 2;
const READERS: usize = 2;

/// A name's state, encoded in a u64: 0 absent, 1 directory, else a file:
/// `2 + ((ino + 1) << 24 | size)`, with `ino` unknown (`None`) between a
/// create's prediction and its result.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum St {
    Absent,
    Dir,
    File { ino: Option<u64>, size: u64 },
}

const SIZE_BITS: u32 = 24;

impl St {
    fn enc(self) -> u64 {
        match self {
            St::Absent => 0,
            St::Dir => 1,
            St::File { ino, size } => {
                debug_assert!(size < 1 << SIZE_BITS);
                2 + ((ino.map_or(0, |i| i + 1) << SIZE_BITS) | size)
            }
        }
    }
    fn dec(v: u64) -> St {
        match v {
            0 => St::Absent,
            1 => St::Dir,
            n => {
                let f = n - 2;
                let ino = f >> SIZE_BITS;
                St::File {
                    ino: ino.checked_sub(1),
                    size: f & ((1 << SIZE_BITS) - 1),
                }
            }
        }
    }
    fn file(size: u64) -> St {
        St::File { ino: None, size }
    }
}

struct Name {
    path: Vec<u8>,
    /// 2k: k operations done; 2k+1: operation k+1 in flight.
    version: AtomicU64,
    /// `ring[k % RING]`: the state after k operations.
    ring: Vec<AtomicU64>,
    /// Writers' lock (test side only: serialises the oracle, not the VFS).
    lock: Mutex<()>,
}

impl Name {
    fn current(&self) -> St {
        let v = self.version.load(SeqCst);
        St::dec(self.ring[((v / 2) % RING) as usize].load(SeqCst))
    }
}

struct World {
    vfs: Vfs,
    names: Vec<Name>,
    stop: AtomicBool,
    violations: AtomicU64,
    lookups: AtomicU64,
    unchecked: AtomicU64,
    /// Every file inode's size bound: set before an operation that grows it.
    sizes: Mutex<HashMap<u64, u64>>,
}

impl World {
    fn max_size(&self, ino: u64) -> u64 {
        *self.sizes.lock().unwrap().get(&ino).unwrap_or(&0)
    }

    fn violation(&self, what: String) {
        let n = self.violations.fetch_add(1, SeqCst);
        if n < 20 {
            eprintln!("VIOLATION: {what}");
        }
    }
}

fn name_path(d: usize, n: usize) -> Vec<u8> {
    format!("/d{d}/n{n}").into_bytes()
}

#[derive(Clone, Copy, Debug)]
enum Op {
    Create,
    Grow,
    Unlink,
    Mkdir,
    Rmdir,
    Rename(usize),
}

/// What the VFS must answer, and the states afterwards (source, target).
fn predict(op: Op, a: St, b: St) -> (Result<(), Errno>, St, St) {
    use St::*;
    match op {
        Op::Create => match a {
            Absent => (Ok(()), St::file(0), b),
            _ => (Err(Errno::EEXIST), a, b),
        },
        Op::Grow => match a {
            File { ino, size } => (
                Ok(()),
                File {
                    ino,
                    size: size + 1,
                },
                b,
            ),
            Dir => (Err(Errno::EISDIR), a, b),
            Absent => (Err(Errno::ENOENT), a, b),
        },
        Op::Unlink => match a {
            File { .. } => (Ok(()), Absent, b),
            Dir => (Err(Errno::EISDIR), a, b),
            Absent => (Err(Errno::ENOENT), a, b),
        },
        Op::Mkdir => match a {
            Absent => (Ok(()), Dir, b),
            _ => (Err(Errno::EEXIST), a, b),
        },
        Op::Rmdir => match a {
            Dir => (Ok(()), Absent, b),
            File { .. } => (Err(Errno::ENOTDIR), a, b),
            Absent => (Err(Errno::ENOENT), a, b),
        },
        Op::Rename(_) => match (a, b) {
            (Absent, _) => (Err(Errno::ENOENT), a, b),
            (File { .. }, Dir) => (Err(Errno::EISDIR), a, b),
            (Dir, File { .. }) => (Err(Errno::ENOTDIR), a, b),
            // Churned directories never have children: always empty.
            _ => (Ok(()), Absent, a),
        },
    }
}

fn run_op(v: &Vfs, op: Op, a: &[u8], b: &[u8]) -> Result<(), Errno> {
    match op {
        Op::Create => v
            .open(
                a,
                OpenFlags::CREAT | OpenFlags::EXCL | OpenFlags::WRONLY,
                0o644,
            )
            .map(drop),
        Op::Grow => v
            .open(a, OpenFlags::WRONLY | OpenFlags::APPEND, 0)
            .and_then(|f| f.write(b"x"))
            .map(drop),
        Op::Unlink => v.unlink(a),
        Op::Mkdir => v.mkdir(a, 0o755),
        Op::Rmdir => v.rmdir(a),
        Op::Rename(_) => v.rename(a, b),
    }
}

fn writer(w: &World, seed: u64) -> u64 {
    let mut rng = fastrand::Rng::with_seed(seed);
    let mut ops = 0;
    while !w.stop.load(SeqCst) {
        let i = rng.usize(..w.names.len());
        let op = match rng.usize(..10) {
            0 | 1 => Op::Create,
            2 => Op::Grow,
            3 => Op::Unlink,
            4 => Op::Mkdir,
            5 => Op::Rmdir,
            _ => Op::Rename(rng.usize(..w.names.len())),
        };
        let j = match op {
            Op::Rename(j) if j != i => Some(j),
            Op::Rename(_) => continue,
            _ => None,
        };
        // Oracle locks in index order.
        let (lo, hi) = match j {
            Some(j) => (i.min(j), Some(i.max(j))),
            None => (i, None),
        };
        let _g1 = w.names[lo].lock.lock().unwrap();
        let _g2 = hi.map(|h| w.names[h].lock.lock().unwrap());
        let na = &w.names[i];
        let nb = j.map(|j| &w.names[j]);
        let sa = na.current();
        let sb = nb.map_or(St::Absent, Name::current);
        let (want, ta, tb) = predict(op, sa, sb);
        // Publish the outcome, then open the window.
        let mut touched: Vec<(&Name, St)> = vec![(na, ta)];
        if let Some(nb) = nb {
            touched.push((nb, tb));
        }
        for (n, t) in &touched {
            let v = n.version.load(SeqCst);
            n.ring[((v / 2 + 1) % RING) as usize].store(t.enc(), SeqCst);
            n.version.store(v + 1, SeqCst);
        }
        if let (Op::Grow, St::File { ino: Some(i), size }) = (op, ta) {
            w.sizes.lock().unwrap().insert(i, size);
        }
        let got = run_op(&w.vfs, op, &na.path, nb.map_or(&[][..], |n| &n.path));
        if let (Op::Create, Ok(())) = (op, got) {
            // Learn the new inode while the name is still ours, and record
            // it in the state the create published.
            match w.vfs.lstat(&na.path) {
                Ok(st) => {
                    w.sizes.lock().unwrap().insert(st.ino, 0);
                    let v = na.version.load(SeqCst);
                    let known = St::File {
                        ino: Some(st.ino),
                        size: 0,
                    };
                    na.ring[((v / 2 + 1) % RING) as usize].store(known.enc(), SeqCst);
                }
                Err(e) => w.violation(format!(
                    "lstat {} right after creating it: {e:?}",
                    String::from_utf8_lossy(&na.path)
                )),
            }
        }
        if got != want {
            w.violation(format!(
                "{op:?} {} {} from ({sa:?},{sb:?}): got {got:?}, want {want:?}",
                String::from_utf8_lossy(&na.path),
                nb.map_or(String::new(), |n| String::from_utf8_lossy(&n.path).into()),
            ));
        }
        for (n, _) in &touched {
            let v = n.version.load(SeqCst);
            n.version.store(v + 1, SeqCst);
        }
        ops += 1;
    }
    ops
}

/// Is `ans` what a `stat`/`lstat` of a name in state `s` may answer?
///
/// `stat` is not atomic, on Linux as here: the walk resolves the name to an
/// inode at one instant, and the attributes are read from that inode a
/// little later. So a file's answer must be an inode that the name held
/// (`ino`), with a size it had then or grew to before the answer (files
/// only grow; `max_size` is the inode's size bound after the call; it
/// may have been renamed away, grown elsewhere and unlinked meanwhile).
fn matches(ans: &Result<fs::vfs::Stat, Errno>, s: St, max_size: &dyn Fn(u64) -> u64) -> bool {
    match (ans, s) {
        (Err(Errno::ENOENT), St::Absent) => true,
        (Ok(st), St::Dir) => st.kind == FileType::Dir,
        (Ok(st), St::File { ino, size }) => {
            st.kind == FileType::File
                && match ino {
                    Some(i) => st.ino == i && size <= st.size && st.size <= max_size(i),
                    // A create in flight: its inode is not known yet.
                    None => st.size <= max_size(st.ino),
                }
        }
        _ => false,
    }
}

/// A path through the name: `<name>/x` (x never exists).
fn matches_below(ans: &Result<fs::vfs::Stat, Errno>, s: St) -> bool {
    matches!(
        (ans, s),
        (Err(Errno::ENOENT), St::Absent | St::Dir) | (Err(Errno::ENOTDIR), St::File { .. })
    )
}

fn reader(w: &World, seed: u64) {
    let mut rng = fastrand::Rng::with_seed(seed);
    while !w.stop.load(SeqCst) {
        let kind = rng.usize(..8);
        if kind == 0 {
            // A name that never exists: always ENOENT.
            let p = format!("/d{}/m{}", rng.usize(..DIRS), rng.usize(..64));
            let r = w.vfs.stat(p.as_bytes());
            w.lookups.fetch_add(1, SeqCst);
            if r != Err(Errno::ENOENT) {
                w.violation(format!("stat {p}: {r:?} for a name never created"));
            }
            continue;
        }
        let n = &w.names[rng.usize(..w.names.len())];
        let below = kind == 1;
        let mut path = n.path.clone();
        if below {
            path.extend_from_slice(b"/x");
        }
        let v1 = n.version.load(SeqCst);
        let r = if kind.is_multiple_of(2) {
            w.vfs.stat(&path)
        } else {
            w.vfs.lstat(&path)
        };
        let v2 = n.version.load(SeqCst);
        w.lookups.fetch_add(1, SeqCst);
        let (lo, hi) = (v1 / 2, v2.div_ceil(2));
        if hi - lo >= RING - 2 {
            w.unchecked.fetch_add(1, SeqCst);
            continue;
        }
        let allowed: Vec<St> = (lo..=hi)
            .map(|k| St::dec(n.ring[(k % RING) as usize].load(SeqCst)))
            .collect();
        // The ring may have wrapped while we copied it.
        if n.version.load(SeqCst).div_ceil(2) - lo >= RING - 2 {
            w.unchecked.fetch_add(1, SeqCst);
            continue;
        }
        let ok = allowed.iter().any(|&s| {
            if below {
                matches_below(&r, s)
            } else {
                matches(&r, s, &|i| w.max_size(i))
            }
        });
        if !ok {
            w.violation(format!(
                "{} {}: {r:?}, possible states {allowed:?} (versions {v1}..{v2})",
                if kind.is_multiple_of(2) {
                    "stat"
                } else {
                    "lstat"
                },
                String::from_utf8_lossy(&path),
            ));
        }
    }
}

fn secs() -> f64 {
    std::env::var("FS_STRESS_SECS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(3.0)
}

/// Wait until every RCU callback queued so far has run, and the callbacks
/// those queued (`rcu_barrier`), then read the counters. Waiting for grace
/// periods until the counts stop moving was not enough (issue 13 item 9:
/// 4 failures in ~390 loaded runs, "leaked" 2 to 676 dentries): the host
/// reclaimer takes a batch off the pending list and frees it afterwards,
/// and while it is preempted in between, its batch is in no list that
/// `synchronize_rcu` sees, so three quiet grace periods could pass with
/// hundreds of dentries still to be freed. Nothing leaked; the test read
/// too early.
fn settle() -> stats::Counters {
    rcu_barrier();
    stats::snapshot()
}

struct Report {
    violations: u64,
    lookups: u64,
    leaked: i64,
}

fn stress_design(design: &str) -> Report {
    dcache::shrink_all();
    let base = settle();
    let base_live = base.dentry_alloc as i64 - base.dentry_free as i64;
    let base_neg = base.negative_created as i64 - base.negative_destroyed as i64;
    let poison0 = poison_hits();

    let vfs = Vfs::new_tmpfs(&format!("enoent={design}")).unwrap();
    for d in 0..DIRS {
        vfs.mkdir(format!("/d{d}").as_bytes(), 0o755).unwrap();
    }
    let names = (0..DIRS * NAMES)
        .map(|i| Name {
            path: name_path(i / NAMES, i % NAMES),
            version: AtomicU64::new(0),
            ring: (0..RING).map(|_| AtomicU64::new(0)).collect(),
            lock: Mutex::new(()),
        })
        .collect();
    let w = Arc::new(World {
        vfs,
        names,
        stop: AtomicBool::new(false),
        violations: AtomicU64::new(0),
        lookups: AtomicU64::new(0),
        unchecked: AtomicU64::new(0),
        sizes: Mutex::new(HashMap::new()),
    });
    let t0 = Instant::now();
    let mut hs = Vec::new();
    for i in 0..WRITERS {
        let w = w.clone();
        hs.push(std::thread::spawn(move || {
            writer(&w, 0x9e37_79b9 + i as u64)
        }));
    }
    for i in 0..READERS {
        let w = w.clone();
        hs.push(std::thread::spawn(move || {
            reader(&w, 0x7f4a_7c15 + i as u64);
            0
        }));
    }
    std::thread::sleep(Duration::from_secs_f64(secs()));
    w.stop.store(true, SeqCst);
    let ops: u64 = hs.into_iter().map(|h| h.join().unwrap()).sum();
    let elapsed = t0.elapsed().as_secs_f64();

    // Quiescent: every name must be exactly in its recorded state; then
    // remove everything.
    for n in &w.names {
        let s = n.current();
        let r = w.vfs.lstat(&n.path);
        if !matches(&r, s, &|i| w.max_size(i)) {
            w.violation(format!(
                "final lstat {}: {r:?}, recorded {s:?}",
                String::from_utf8_lossy(&n.path)
            ));
        }
        let res = match s {
            St::Absent => Ok(()),
            St::Dir => w.vfs.rmdir(&n.path),
            St::File { .. } => w.vfs.unlink(&n.path),
        };
        if res.is_err() {
            w.violation(format!(
                "cleanup of {}: {res:?}",
                String::from_utf8_lossy(&n.path)
            ));
        }
    }
    for d in 0..DIRS {
        if let Err(e) = w.vfs.rmdir(format!("/d{d}").as_bytes()) {
            w.violation(format!("rmdir /d{d}: {e:?}"));
        }
    }
    if !w.vfs.readdir(b"/").unwrap().is_empty() {
        w.violation("root not empty after cleanup".into());
    }
    let w = Arc::try_unwrap(w).ok().expect("threads joined");
    let (violations, lookups, unchecked) = (
        w.violations.load(SeqCst),
        w.lookups.load(SeqCst),
        w.unchecked.load(SeqCst),
    );
    drop(w);
    dcache::shrink_all();
    let end = settle();
    let leaked = end.dentry_alloc as i64 - end.dentry_free as i64 - base_live;
    let neg = end.negative_created as i64 - end.negative_destroyed as i64 - base_neg;
    let poisoned = poison_hits() - poison0;
    let canaries = end.poison_seen - base.poison_seen;
    let violations = violations + poisoned + canaries + u64::from(neg != 0);
    println!(
        "# design={design} secs={elapsed:.1} writers={WRITERS} readers={READERS} ops={ops} \
         unchecked={unchecked} poison_hits={poisoned} poison_seen={canaries} negative_gauge={neg} nr_unused={}",
        dcache::nr_unused()
    );
    println!("violations={violations} lookups={lookups} leaked={leaked}");
    assert!(ops > 0, "writers made no progress");
    assert!(lookups > 0, "readers made no progress");
    assert!(
        unchecked * 10 <= lookups,
        "too many unchecked answers: {unchecked}"
    );
    Report {
        violations,
        lookups,
        leaked,
    }
}

/// The churn run of every design (`FS_STRESS_DESIGNS=a,b` picks some,
/// `FS_STRESS_SECS` sets the seconds per design). It needs the counters it
/// balances to itself: the tests of this file run one at a time.
///
/// It found, each now fixed with its own test or check: a false ENOENT
/// when `finish` re-read an inode a concurrent kill had cleared; a false
/// ENOENT during a rename over an existing name; the negative-dentry gauge
/// drifting; `dentry_kill` racing a rename; and `file/x` answering ENOENT
/// instead of ENOTDIR when `must_be_dir` re-read the inode of a dentry
/// killed after `step_into` validated it (RCU-walk must validate `d_seq`
/// before an error counts); and, under the negative design, a false ENOENT
/// for an existing name once in ~300 s: two lookups that missed the name
/// at once had hashed two negative dentries, and a create instantiated
/// only one (`d_alloc_parallel` now checks the directory's `i_dir_seq`;
/// see `simultaneous_misses_of_one_name_hash_one_dentry`).
#[test]
fn rcu_stress_all_designs() {
    let _s = serial();
    let mut bad = Vec::new();
    // Every design of the registry unless FS_STRESS_DESIGNS picks some.
    let designs: Vec<String> = match std::env::var("FS_STRESS_DESIGNS") {
        Ok(v) => v.split(',').map(str::to_string).collect(),
        Err(_) => fs::dcache::design::DESIGNS
            .iter()
            .map(|d| d.name().to_string())
            .collect(),
    };
    for design in &designs {
        let r = stress_design(design);
        if r.violations != 0 || r.leaked != 0 {
            bad.push(format!(
                "{design}: violations={} lookups={} leaked={}",
                r.violations, r.lookups, r.leaked
            ));
        }
    }
    fs::dcache::design::say_ran("stress::rcu_stress_all_designs", &designs);
    assert!(bad.is_empty(), "stress failed: {bad:?}");
}

/// Memory pressure: 100,000 distinct missing names (two threads) under the
/// negative design with an LRU limit of 1000 keep the unused list within
/// the limit
/// (the shrinker runs), and the negative dentries are really created and
/// reclaimed.
/// `rcu_barrier` returns only after every callback queued before it has
/// run, including a batch the background reclaimer has taken and is still
/// running (slow destructors here, a preempted reclaimer under load), and
/// the callbacks those destructors queued.
#[test]
fn rcu_barrier_waits_for_the_reclaimer() {
    let _s = serial();
    static DONE: AtomicU64 = AtomicU64::new(0);
    static CHAINED: AtomicU64 = AtomicU64::new(0);
    struct Chained;
    impl Drop for Chained {
        fn drop(&mut self) {
            CHAINED.fetch_add(1, SeqCst);
        }
    }
    struct Slow;
    impl Drop for Slow {
        fn drop(&mut self) {
            std::thread::sleep(Duration::from_millis(2));
            DONE.fetch_add(1, SeqCst);
            // A destructor that retires another object, as dput does.
            call_rcu(Retired::from_box(Box::new(Chained)));
        }
    }
    const N: u64 = 300;
    let (d0, c0) = (DONE.load(SeqCst), CHAINED.load(SeqCst));
    // Retired on a thread that then exits: its queue goes to the pending
    // list, where the reclaimer thread picks it up.
    std::thread::spawn(|| {
        for _ in 0..N {
            call_rcu(Retired::from_box(Box::new(Slow)));
        }
    })
    .join()
    .unwrap();
    // Let the reclaimer take the batch (it wakes on the hand-over).
    std::thread::sleep(Duration::from_millis(20));
    let after_gp = {
        synchronize_rcu();
        DONE.load(SeqCst) - d0
    };
    rcu_barrier();
    let (done, chained) = (DONE.load(SeqCst) - d0, CHAINED.load(SeqCst) - c0);
    println!("# rcu_barrier: after synchronize_rcu {after_gp}/{N} run; after rcu_barrier {done}/{N}, chained {chained}/{N}");
    assert_eq!((done, chained), (N, N));
}

/// A thread that reports quiescent states runs its own callbacks there, as
/// Linux runs them on the CPU that queued them: what it frees is what it
/// allocated, so the allocator stays thread-local. The reclaimer only
/// advances the epoch for it. A thread that never reports them hands its
/// callbacks over, and the reclaimer runs them.
#[test]
fn callbacks_run_on_the_thread_that_reports_quiescent_states() {
    let _s = serial();
    use std::thread::ThreadId;
    static RAN_ON: Mutex<Vec<ThreadId>> = Mutex::new(Vec::new());
    struct Note;
    impl Drop for Note {
        fn drop(&mut self) {
            RAN_ON.lock().unwrap().push(std::thread::current().id());
        }
    }
    const N: usize = 500;
    let ran_on = |t: ThreadId| RAN_ON.lock().unwrap().iter().filter(|&&r| r == t).count();
    RAN_ON.lock().unwrap().clear();
    let p = fs::platform::get();
    let (me, mine) = std::thread::spawn(move || {
        let me = std::thread::current().id();
        p.rcu_quiescent_state(); // this thread reports quiescent states
        for _ in 0..N {
            call_rcu(Retired::from_box(Box::new(Note)));
        }
        let deadline = Instant::now() + Duration::from_secs(10);
        while ran_on(me) < N && Instant::now() < deadline {
            p.rcu_quiescent_state();
            std::thread::sleep(Duration::from_micros(200));
        }
        (me, ran_on(me))
    })
    .join()
    .unwrap();
    // A thread that queues and never reports: the reclaimer runs them.
    let other = std::thread::spawn(move || {
        for _ in 0..N {
            call_rcu(Retired::from_box(Box::new(Note)));
        }
        std::thread::current().id()
    })
    .join()
    .unwrap();
    rcu_barrier();
    let total = RAN_ON.lock().unwrap().len();
    let by_other = ran_on(other);
    println!("# own callbacks: {mine}/{N} run by the reporting thread; {by_other}/{N} of the other's run by itself");
    assert_eq!(mine, N, "callbacks of a reporting thread ran elsewhere");
    assert_eq!(ran_on(me), N);
    assert_eq!(by_other, 0, "a thread that never reports ran callbacks");
    assert_eq!(total, 2 * N);
}

#[test]
fn negative_dentries_stay_under_lru_limit() {
    let _s = serial();
    const LIMIT: usize = 1000;
    const N: usize = 100_000;
    dcache::shrink_all();
    let base = settle();
    let vfs = Vfs::new_tmpfs("enoent=negative").unwrap();
    vfs.mkdir(b"/dir", 0o755).unwrap();
    dcache::set_max_unused(LIMIT);
    // Two threads park negative dentries at once: the limit must hold
    // even when both find the LRU full at the same moment.
    let max_seen = std::thread::scope(|s| {
        let hs: Vec<_> = (0..2)
            .map(|t| {
                let vfs = &vfs;
                s.spawn(move || {
                    let mut max_seen = 0;
                    for i in (t..N).step_by(2) {
                        let p = format!("/dir/missing-{i}");
                        assert_eq!(vfs.stat(p.as_bytes()), Err(Errno::ENOENT));
                        max_seen = max_seen.max(dcache::nr_unused());
                    }
                    max_seen
                })
            })
            .collect();
        hs.into_iter().map(|h| h.join().unwrap()).max().unwrap()
    });
    let after = stats::snapshot().delta(&base);
    dcache::set_max_unused(dcache::DEFAULT_MAX_UNUSED);
    println!(
        "# memory pressure: names={N} limit={LIMIT} max_nr_unused={max_seen} \
         negative_created={} shrunk={}",
        after.negative_created, after.shrunk
    );
    assert!(max_seen <= LIMIT, "nr_unused reached {max_seen} > {LIMIT}");
    assert!(
        after.negative_created >= N as u64,
        "negative dentries were not created ({})",
        after.negative_created
    );
    assert!(
        after.shrunk >= (N - LIMIT) as u64,
        "shrinker reclaimed only {}",
        after.shrunk
    );
    // And they all go away: no leaks.
    vfs.rmdir(b"/dir").unwrap();
    drop(vfs);
    dcache::shrink_all();
    let end = settle();
    let leaked =
        (end.dentry_alloc - base.dentry_alloc) as i64 - (end.dentry_free - base.dentry_free) as i64;
    let neg = (end.negative_created - base.negative_created) as i64
        - (end.negative_destroyed - base.negative_destroyed) as i64;
    assert_eq!((leaked, neg), (0, 0), "leaked dentries / negative gauge");
}

/// Reproducer (deterministic) of the false ENOENTs the stress test finds
/// during `rename(a, b)` over an existing `b`: a ref-walk that found `b`
/// (`lookup_fast` → `d_lookup`, holding a reference) just before the
/// rename reads the target's inode afterwards (`step_into`, `finish`). The
/// name `b` never stopped existing, so that reader must see an inode (the
/// old one, as on Linux, where the renamed-over target stays positive and
/// is only unhashed); a negative target makes it answer ENOENT.
#[test]
fn ref_walk_holding_rename_target_still_sees_an_inode() {
    let _s = serial();
    use fs::namei::{resolve, LookupFlags};
    let vfs = Vfs::new_tmpfs("enoent=noalloc").unwrap();
    vfs.mkdir(b"/d", 0o755).unwrap();
    vfs.write_file(b"/d/a", b"new").unwrap();
    vfs.write_file(b"/d/b", b"old!").unwrap();
    let dirflags = LookupFlags {
        follow: true,
        directory: true,
    };
    let (_mnt, dir) = resolve(vfs.mnt_ns(), b"/d", dirflags).unwrap();
    let held = dcache::d_lookup(&dir, b"b", dcache::d_hash(&dir, b"b")).expect("b exists");
    assert!(held.inode_arc().is_some());
    vfs.rename(b"/d/a", b"/d/b").unwrap();
    assert_eq!(vfs.stat(b"/d/b").unwrap().size, 3);
    assert!(
        held.inode_arc().is_some(),
        "a walk holding the old /d/b now sees a negative dentry: it answers ENOENT \
         for a name that existed at every instant of rename(/d/a, /d/b)"
    );
}

/// `negbound` keeps at most `NEGBOUND_LIMIT` negative dentries per
/// directory: past the bound a repeated miss allocates again (transient's
/// cost), below it none; a kept name that is created gives its slot back,
/// and so does one the shrinker takes; another directory has its own bound.
#[test]
fn negbound_keeps_at_most_its_bound_per_directory() {
    use fs::dcache::design::NEGBOUND_LIMIT;
    let _s = serial();
    dcache::shrink_all();
    let vfs = Vfs::new_tmpfs("enoent=negbound").unwrap();
    vfs.mkdir(b"/d", 0o755).unwrap();
    vfs.mkdir(b"/e", 0o755).unwrap();
    let n = 3 * NEGBOUND_LIMIT;
    let allocs = |dir: &str, range: std::ops::Range<u64>| {
        let c0 = stats::snapshot();
        for i in range {
            let p = format!("{dir}/m{i}");
            assert_eq!(vfs.stat(p.as_bytes()), Err(Errno::ENOENT), "{p}");
        }
        stats::snapshot().delta(&c0).dentry_alloc
    };
    assert_eq!(allocs("/d", 0..n), n, "every first miss allocates");
    assert_eq!(
        allocs("/d", 0..NEGBOUND_LIMIT),
        0,
        "the first {NEGBOUND_LIMIT} are kept"
    );
    assert_eq!(
        allocs("/d", NEGBOUND_LIMIT..n),
        n - NEGBOUND_LIMIT,
        "past the bound nothing is kept"
    );
    // Another directory: a bound of its own.
    assert_eq!(allocs("/e", 0..2), 2);
    assert_eq!(allocs("/e", 0..2), 0);
    // A kept name created: its slot goes to the next miss.
    vfs.write_file(b"/d/m0", b"x").unwrap();
    assert_eq!(allocs("/d", n..n + 1), 1);
    assert_eq!(
        allocs("/d", n..n + 1),
        0,
        "the freed slot keeps the new miss"
    );
    assert_eq!(allocs("/d", n + 1..n + 2), 1);
    assert_eq!(allocs("/d", n + 1..n + 2), 1, "full again");
    // The shrinker empties the directory's tally.
    dcache::shrink_all();
    assert_eq!(allocs("/d", 1..NEGBOUND_LIMIT + 1), NEGBOUND_LIMIT);
    assert_eq!(
        allocs("/d", 1..NEGBOUND_LIMIT + 1),
        0,
        "kept again after the shrinker"
    );
}

/// Reproducer (deterministic) of the negative-dentry gauge drift the
/// stress test reports: a negative dentry that is the target of a rename
/// is dropped (`d_drop`) and later killed as unhashed, so it is never
/// counted in `negative_destroyed`.
#[test]
fn negative_gauge_returns_to_zero_after_rename_over_negative() {
    let _s = serial();
    dcache::shrink_all();
    let base = settle();
    {
        let vfs = Vfs::new_tmpfs("enoent=negative").unwrap();
        assert_eq!(vfs.stat(b"/b"), Err(Errno::ENOENT)); // a negative dentry for /b
        vfs.write_file(b"/a", b"x").unwrap();
        vfs.rename(b"/a", b"/b").unwrap(); // over the negative dentry
        vfs.unlink(b"/b").unwrap();
    }
    dcache::shrink_all();
    let end = settle();
    let d = end.delta(&base);
    assert_eq!(d.dentry_alloc, d.dentry_free, "dentries leaked");
    assert_eq!(
        d.negative_created as i64 - d.negative_destroyed as i64,
        0,
        "negative gauge drifted: created {} destroyed {}",
        d.negative_created,
        d.negative_destroyed
    );
}

/// Threads that miss the same name at the same moment (the negative
/// design keeps what `lookup_slow` hashes) end with exactly one hashed
/// dentry for it. Between `d_alloc_parallel`'s dcache search and its
/// in-lookup search another lookup may hash its answer and leave the
/// in-lookup table; without the directory's `i_dir_seq` check the late one
/// hashed a second negative dentry, which then outlived a create of the
/// name (the churn test's false ENOENT, about one per 300 s of it). Before
/// the fix 5 of 5 runs of 100 000 names hashed 6 to 29 names twice; after
/// it, 0 in 8. `FS_PAR_ROUNDS` sets the number of names. The loom model
/// `d_alloc_parallel_without_i_dir_seq_fails` shows the window
/// deterministically; this is the real dcache on host threads.
#[test]
fn simultaneous_misses_of_one_name_hash_one_dentry() {
    let _s = serial();
    use fs::namei::{resolve, LookupFlags};
    const THREADS: usize = 4;
    let rounds: usize = std::env::var("FS_PAR_ROUNDS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(100_000);
    let vfs = Vfs::new_tmpfs("enoent=negative").unwrap();
    vfs.mkdir(b"/d", 0o755).unwrap();
    let start = std::sync::Barrier::new(THREADS);
    std::thread::scope(|s| {
        for _ in 0..THREADS {
            s.spawn(|| {
                for r in 0..rounds {
                    let p = format!("/d/m{r}");
                    start.wait();
                    assert_eq!(vfs.stat(p.as_bytes()), Err(Errno::ENOENT));
                }
            });
        }
    });
    let dirflags = LookupFlags {
        follow: true,
        directory: true,
    };
    let (_mnt, dir) = resolve(vfs.mnt_ns(), b"/d", dirflags).unwrap();
    let mut per_name: HashMap<Vec<u8>, usize> = HashMap::new();
    for c in dcache::all_children(&dir) {
        if c.is_hashed() {
            *per_name.entry(c.name.to_vec()).or_default() += 1;
        }
    }
    drop(dir);
    let hashed: usize = per_name.values().sum();
    let doubled = per_name.values().filter(|&&n| n > 1).count();
    println!(
        "# simultaneous misses: names={rounds} threads={THREADS} hashed={hashed} \
         names_hashed_twice={doubled}"
    );
    assert_eq!(doubled, 0, "names with more than one hashed dentry");
    assert_eq!(
        per_name.len(),
        rounds,
        "every missed name keeps its negative"
    );
    vfs.rmdir(b"/d").unwrap();
    drop(vfs);
    dcache::shrink_all();
}
