//! Allocation failures reach the caller as `ENOMEM`, never a panic, and
//! leave nothing half-done behind.
//!
//! Two ways to make the fs crate's allocations fail, both used here:
//! - fault injection ([`fs::fault::fail_every`], Linux's `failslab`):
//!   every N-th allocation the fs asks memory admission about is refused;
//! - a platform that refuses ([`Platform::may_alloc`]): this binary installs
//!   [`Tight`], the host platform plus a knob "refuse the next K asks", to
//!   drive the reclaim step (shrink the dcache, ask again).
//!
//! Checked per ENOENT design: with every allocation refused, a missing-name
//! `stat` (in the designs that allocate), create, mkdir, symlink, a write
//! that grows a file, a rename to a long name and a new mount all return
//! `ENOMEM`; afterwards none of them left a trace, everything works again,
//! the `enomem` counter and the injection count agree with the answers seen,
//! and dentries allocated minus freed is back at its baseline. Then 100,000
//! distinct missing names with every 7th allocation refused: every answer is
//! `ENOENT` or `ENOMEM`, exactly one in seven allocations failed, and the
//! noalloc design allocated (and so failed) nothing.
//!
//! Touches: the global fault knob, counters and LRU: tests run one at a time.
//! Host platform only (not built under `--cfg loom`).
#![cfg(not(loom))]

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, MutexGuard};

use fs::dcache;
use fs::fault;
use fs::platform::{self, Platform};
use fs::stats;
use fs::sync::host::HostPlatform;
use fs::sync::rcu::{rcu_barrier, Retired};
use fs::vfs::{FileType, OpenFlags, Vfs};
use fs::Errno;

use fs::dcache::design::{say_ran, DESIGNS};

/// Every registered design's name (the registry is the list).
fn names() -> Vec<&'static str> {
    DESIGNS.iter().map(|d| d.name()).collect()
}

/// The host platform, plus "refuse the next K allocations".
struct Tight {
    refuse: AtomicU64,
}

static TIGHT: Tight = Tight {
    refuse: AtomicU64::new(0),
};

impl Platform for Tight {
    fn cpu_id(&self) -> usize {
        HostPlatform::global().cpu_id()
    }
    fn cpu_count(&self) -> usize {
        HostPlatform::global().cpu_count()
    }
    fn now_ns(&self) -> u64 {
        HostPlatform::global().now_ns()
    }
    fn rcu_read_lock(&self) {
        HostPlatform::global().rcu_read_lock()
    }
    fn rcu_read_unlock(&self) {
        HostPlatform::global().rcu_read_unlock()
    }
    fn call_rcu(&self, obj: Retired) {
        HostPlatform::global().call_rcu(obj)
    }
    fn synchronize_rcu(&self) {
        HostPlatform::global().synchronize_rcu()
    }
    fn rcu_barrier(&self) {
        HostPlatform::global().rcu_barrier()
    }
    fn rcu_quiescent_state(&self) {
        HostPlatform::global().rcu_quiescent_state()
    }
    fn may_alloc(&self, _bytes: usize) -> bool {
        self.refuse
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |k| k.checked_sub(1))
            .is_err()
    }
}

static SERIAL: Mutex<()> = Mutex::new(());

/// One test at a time, on the [`Tight`] platform, injection off.
fn setup() -> MutexGuard<'static, ()> {
    let g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    platform::install(&TIGHT);
    assert!(
        std::ptr::addr_eq(platform::get(), &TIGHT),
        "the test platform must be installed before the fs is used"
    );
    fault::off();
    TIGHT.refuse.store(0, Ordering::Relaxed);
    g
}

/// Live dentries once grace periods have run and the counts stopped moving.
fn settled_live() -> i64 {
    dcache::shrink_all();
    // Wait until every RCU callback queued so far has run, the batch the
    // host reclaimer is freeing included (`rcu_barrier`; three quiet grace
    // periods are not enough: a batch taken off the list is in no list a
    // grace period sees). A freed dentry may queue its parent's free, so
    // repeat until a barrier changes nothing.
    let mut last = stats::snapshot();
    for _ in 0..100 {
        rcu_barrier();
        let now = stats::snapshot();
        if (now.dentry_alloc, now.dentry_free) == (last.dentry_alloc, last.dentry_free) {
            break;
        }
        last = now;
    }
    last.dentry_alloc as i64 - last.dentry_free as i64
}

fn opts(design: &str) -> String {
    format!("enoent={design}")
}

fn creat(vfs: &Vfs, path: &[u8]) -> Result<(), Errno> {
    vfs.open(path, OpenFlags::WRONLY | OpenFlags::CREAT, 0o644)
        .map(|_| ())
}

/// A 40-byte name: longer than the inline name, stored out of line.
const LONG: &[u8] = b"/d/a_name_longer_than_the_inline_32_bytes";

#[test]
fn every_operation_returns_enomem_when_every_allocation_fails() {
    let _g = setup();
    for d in DESIGNS {
        let design = d.name();
        // What the design declares a tmpfs miss costs.
        let misses = d.tmpfs_misses();
        let base = settled_live();
        let (c0, inj0) = (stats::snapshot(), fault::injected());
        let vfs = Vfs::new_tmpfs(&opts(design)).unwrap();
        vfs.mkdir(b"/d", 0o755).unwrap();
        vfs.write_file(b"/d/f", b"hello").unwrap();
        assert_eq!(vfs.stat(b"/d/cached-miss"), Err(Errno::ENOENT));
        let appender = vfs
            .open(b"/d/f", OpenFlags::WRONLY | OpenFlags::APPEND, 0)
            .unwrap();

        fault::fail_every(1);
        let mut seen = 0u64;
        let mut expect_enomem = |what: &str, r: Result<(), Errno>| {
            assert_eq!(r, Err(Errno::ENOMEM), "{design}: {what}");
            seen += 1;
        };
        // A miss allocates a dentry unless the design answers without one.
        let miss = vfs.stat(b"/d/missing").map(|_| ());
        if !misses.allocates() {
            assert_eq!(miss, Err(Errno::ENOENT), "{design} allocated for a miss");
            assert_eq!(vfs.stat(LONG).map(|_| ()), Err(Errno::ENOENT));
        } else {
            expect_enomem("stat of a missing name", miss);
            expect_enomem("stat of a missing long name", vfs.stat(LONG).map(|_| ()));
        }
        // The negative design answers a cached miss without allocating.
        let cached = vfs.stat(b"/d/cached-miss").map(|_| ());
        if misses.repeat > 0 {
            expect_enomem("stat of a missing name again", cached);
        } else {
            assert_eq!(
                cached,
                Err(Errno::ENOENT),
                "{design}: cached miss allocated"
            );
        }
        // Existing names need nothing.
        assert_eq!(vfs.stat(b"/d/f").map(|s| s.size), Ok(5), "{design}");
        expect_enomem("create", creat(&vfs, b"/d/new"));
        expect_enomem("create through write_file", vfs.write_file(b"/d/w", b"x"));
        expect_enomem("mkdir", vfs.mkdir(b"/d/sub", 0o755));
        expect_enomem("symlink", vfs.symlink(b"/d/f", b"/d/ln"));
        expect_enomem("write that grows", appender.write(&[7; 100]).map(|_| ()));
        expect_enomem("rename to a long name", vfs.rename(b"/d/f", LONG));
        expect_enomem("new namespace", Vfs::new_tmpfs(&opts(design)).map(|_| ()));
        expect_enomem("mount", vfs.mount("tmpfs", b"/d", ""));
        fault::off();

        // Nothing half-done.
        for p in [&b"/d/new"[..], b"/d/w", b"/d/sub", b"/d/ln", LONG] {
            assert_eq!(vfs.lstat(p).map(|_| ()), Err(Errno::ENOENT), "{design}");
        }
        assert_eq!(vfs.read_file(b"/d/f").unwrap(), b"hello", "{design}");
        let mut names: Vec<_> = vfs
            .readdir(b"/d")
            .unwrap()
            .into_iter()
            .map(|e| e.name)
            .collect();
        names.sort();
        assert_eq!(names, [b"f".to_vec()], "{design}");
        let c1 = stats::snapshot().delta(&c0);
        assert_eq!(c1.enomem, seen, "{design}: enomem counter");
        assert_eq!(fault::injected() - inj0, seen, "{design}: injected");

        // Everything works again.
        creat(&vfs, b"/d/new").unwrap();
        vfs.mkdir(b"/d/sub", 0o755).unwrap();
        vfs.symlink(b"/d/f", b"/d/ln").unwrap();
        appender.write(b" world").unwrap();
        assert_eq!(vfs.read_file(b"/d/ln").unwrap(), b"hello world");
        vfs.rename(b"/d/new", LONG).unwrap();
        assert_eq!(vfs.stat(LONG).map(|s| s.kind), Ok(FileType::File));
        assert_eq!(vfs.stat(b"/d/missing"), Err(Errno::ENOENT));
        vfs.mount("tmpfs", b"/d/sub", "").unwrap();
        vfs.write_file(b"/d/sub/x", b"in the new mount").unwrap();
        drop(appender);
        drop(vfs);
        assert_eq!(settled_live(), base, "{design}: dentries leaked");
    }
    say_ran(
        "enomem::every_operation_returns_enomem_when_every_allocation_fails",
        &names(),
    );
}

#[test]
fn a_later_allocation_failing_undoes_the_earlier_ones() {
    let _g = setup();
    for d in DESIGNS {
        let design = d.name();
        let base = settled_live();
        let vfs = Vfs::new_tmpfs(&opts(design)).unwrap();
        vfs.mkdir(b"/d", 0o755).unwrap();
        // Create: the dentry is admitted (1st ask), the inode refused (2nd).
        fault::fail_every(2);
        assert_eq!(creat(&vfs, b"/d/a"), Err(Errno::ENOMEM), "{design}");
        // Long name: the dentry is admitted, its name's copy refused.
        fault::fail_every(2);
        assert_eq!(creat(&vfs, LONG), Err(Errno::ENOMEM), "{design}");
        // Symlink: dentry and inode admitted, the target's copy refused.
        fault::fail_every(3);
        assert_eq!(vfs.symlink(b"/d", b"/d/l"), Err(Errno::ENOMEM), "{design}");
        fault::off();
        for p in [&b"/d/a"[..], LONG, b"/d/l"] {
            assert_eq!(vfs.lstat(p).map(|_| ()), Err(Errno::ENOENT), "{design}");
        }
        assert!(vfs.readdir(b"/d").unwrap().is_empty(), "{design}");
        creat(&vfs, b"/d/a").unwrap();
        creat(&vfs, LONG).unwrap();
        vfs.symlink(b"/d", b"/d/l").unwrap();
        assert_eq!(vfs.stat(b"/d/l").map(|s| s.kind), Ok(FileType::Dir));
        drop(vfs);
        assert_eq!(settled_live(), base, "{design}: dentries leaked");
    }
    say_ran(
        "enomem::a_later_allocation_failing_undoes_the_earlier_ones",
        &names(),
    );
}

#[test]
fn missing_names_with_every_7th_allocation_failing() {
    const N: u64 = 100_000;
    let _g = setup();
    for d in DESIGNS {
        let design = d.name();
        // What the design declares a tmpfs miss costs.
        let misses = d.tmpfs_misses();
        let base = settled_live();
        let vfs = Vfs::new_tmpfs(&opts(design)).unwrap();
        vfs.mkdir(b"/m", 0o755).unwrap();
        let (c0, inj0) = (stats::snapshot(), fault::injected());
        fault::fail_every(7);
        let (mut enoent, mut enomem) = (0u64, 0u64);
        for i in 0..N {
            match vfs.stat(format!("/m/miss{i:07}").as_bytes()) {
                Err(Errno::ENOENT) => enoent += 1,
                Err(Errno::ENOMEM) => enomem += 1,
                r => panic!("{design}: miss{i:07}: {r:?}"),
            }
        }
        fault::off();
        let c = stats::snapshot().delta(&c0);
        println!(
            "{design}: {N} missing names, every 7th allocation failing: enoent={enoent} enomem={enomem} dentry_alloc={}",
            c.dentry_alloc
        );
        assert_eq!(enoent + enomem, N);
        // One allocation per miss in the allocating designs, none in noalloc.
        let expected = if misses.allocates() { N / 7 } else { 0 };
        assert_eq!(enomem, expected, "{design}");
        assert_eq!(c.enomem, enomem, "{design}: enomem counter");
        assert_eq!(fault::injected() - inj0, enomem, "{design}: injected");
        let allocated = if misses.allocates() { N - enomem } else { 0 };
        assert_eq!(c.dentry_alloc, allocated, "{design}: dentries allocated");
        drop(vfs);
        assert_eq!(settled_live(), base, "{design}: dentries leaked");
    }
    say_ran(
        "enomem::missing_names_with_every_7th_allocation_failing",
        &names(),
    );
}

#[test]
fn a_refusal_reclaims_unused_dentries_before_giving_up() {
    let _g = setup();
    let base = settled_live();
    let vfs = Vfs::new_tmpfs("enoent=negative").unwrap();
    vfs.mkdir(b"/d", 0o755).unwrap();
    dcache::shrink_all();
    for i in 0..100 {
        assert_eq!(vfs.stat(format!("/d/n{i}").as_bytes()), Err(Errno::ENOENT));
    }
    assert!(dcache::nr_unused() >= 100, "negatives are cached");
    let c0 = stats::snapshot();
    // Refused once: the shrinker frees the cached negatives, the second
    // ask is admitted, the mkdir succeeds.
    TIGHT.refuse.store(1, Ordering::Relaxed);
    vfs.mkdir(b"/d/sub", 0o755).unwrap();
    let c = stats::snapshot().delta(&c0);
    assert!(c.shrunk >= 100, "shrunk {}", c.shrunk);
    assert_eq!(c.enomem, 0);
    assert_eq!(dcache::nr_unused(), 0);
    // Refused with nothing left to reclaim: ENOMEM.
    TIGHT.refuse.store(1, Ordering::Relaxed);
    assert_eq!(vfs.mkdir(b"/d/sub2", 0o755), Err(Errno::ENOMEM));
    // Refused twice: reclaim found something but the second ask is refused
    // too.
    assert_eq!(vfs.stat(b"/d/again"), Err(Errno::ENOENT));
    TIGHT.refuse.store(2, Ordering::Relaxed);
    assert_eq!(creat(&vfs, b"/d/f"), Err(Errno::ENOMEM));
    assert_eq!(stats::snapshot().delta(&c0).enomem, 2);
    assert_eq!(TIGHT.refuse.load(Ordering::Relaxed), 0);
    assert_eq!(vfs.lstat(b"/d/sub2"), Err(Errno::ENOENT));
    assert_eq!(vfs.lstat(b"/d/f"), Err(Errno::ENOENT));
    drop(vfs);
    assert_eq!(settled_live(), base, "dentries leaked");
}

#[test]
fn negative_lru_never_exceeds_its_limit_while_threads_miss() {
    const LIMIT: usize = 64;
    const PER_THREAD: usize = 50_000;
    let _g = setup();
    let base = settled_live();
    let vfs = Vfs::new_tmpfs("enoent=negative").unwrap();
    vfs.mkdir(b"/m", 0o755).unwrap();
    dcache::set_max_unused(LIMIT);
    let done = std::sync::atomic::AtomicBool::new(false);
    let max_seen = std::thread::scope(|s| {
        // A sampler looks at the LRU as often as it can while two threads
        // park negatives on it: parking and shrinking must never show it
        // over the limit, not even between the two.
        let sampler = s.spawn(|| {
            let mut max = 0;
            while !done.load(Ordering::Relaxed) {
                max = max.max(dcache::nr_unused());
            }
            max
        });
        let workers: Vec<_> = (0..2)
            .map(|t| {
                let vfs = &vfs;
                s.spawn(move || {
                    for i in 0..PER_THREAD {
                        let p = format!("/m/t{t}-{i}");
                        assert_eq!(vfs.stat(p.as_bytes()), Err(Errno::ENOENT));
                    }
                })
            })
            .collect();
        for w in workers {
            w.join().unwrap();
        }
        done.store(true, Ordering::Relaxed);
        sampler.join().unwrap()
    });
    dcache::set_max_unused(dcache::DEFAULT_MAX_UNUSED);
    println!("negative design, 2 threads, limit {LIMIT}: highest nr_unused seen {max_seen}");
    assert!(max_seen <= LIMIT, "nr_unused reached {max_seen} > {LIMIT}");
    assert!(max_seen > 0, "the sampler saw no negative dentry at all");
    drop(vfs);
    assert_eq!(settled_live(), base, "dentries leaked");
}

/// The cifs client asks the same admission before it keeps what a server
/// sends (`smb::Config::admit`, which `cifs::mount` fills with
/// `fs::mem::admit`): with every allocation refused, a read of an open
/// file larger than one READ is ENOMEM (the protocol crate alone admits everything: without the
/// hook this read succeeds), and so is a listing; both work again once
/// allocations may succeed.
#[test]
fn cifs_reads_and_listings_ask_memory_admission() {
    use qemu::hostile::{self, Case, Server};
    let _g = setup();
    let srv = Server::new(Case::Honest, &[("hello.txt", b"hello\n")], &["d0"]);
    let l = hostile::serve_tcp(srv).expect("hostile server");
    let v = Vfs::new_tmpfs("").expect("tmpfs");
    v.mkdir(b"/mnt", 0o755).expect("mkdir /mnt");
    fs::fstype::cifs::mount(
        &v,
        "//127.0.0.1/share",
        b"/mnt",
        "username=u,password=p",
        Box::new(smb::TcpConnector {
            addr: l.addr,
            timeout_ms: 10_000,
        }),
        Box::new(smb::StdClock::default()),
    )
    .expect("mount cifs");
    let names = |v: &Vfs| -> Result<Vec<Vec<u8>>, Errno> {
        let mut n: Vec<Vec<u8>> = v.readdir(b"/mnt")?.into_iter().map(|e| e.name).collect();
        n.sort();
        Ok(n)
    };
    let f = v
        .open(b"/mnt/hello.txt", OpenFlags::RDONLY, 0)
        .expect("open");
    // More than one READ can carry: the chunked read, which keeps each
    // reply's bytes only when admitted.
    let mut buf = vec![0u8; 16 << 20];
    fault::fail_every(1);
    let read = f.read(&mut buf);
    let ls = names(&v);
    fault::off();
    assert_eq!((read, ls), (Err(Errno::ENOMEM), Err(Errno::ENOMEM)));
    assert_eq!(f.read(&mut buf), Ok(6));
    assert_eq!(&buf[..6], b"hello\n");
    assert_eq!(names(&v), Ok(vec![b"d0".to_vec(), b"hello.txt".to_vec()]));
    // The other tests count live dentries: free this namespace's first.
    drop((f, v));
    settled_live();
}
