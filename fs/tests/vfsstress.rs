//! vfsstress: walks in every ENOENT design while the tree moves under
//! them (issue #47): directories are created, moved between parents,
//! renamed over and removed, files are created, moved between directories
//! and unlinked, tmpfs mounts come and go on directories that are
//! themselves moved and removed, and walkers look everything up all along.
//!
//! The oracle is a model of the namespace kept by the threads that change
//! it, with names that are never reused: a file or directory is known by
//! its name (`f17`, `d5`), so a path that resolves at all resolves to the
//! entity its last component names, whatever moved. Each entity has a
//! version (operations begun and ended on it: what moves it, removes it,
//! mounts on it); an answer is checked when every entity its path goes
//! through was quiet for the whole call, which makes the model's answer
//! the only right one:
//!
//! - a live file or directory on a quiet path must be found, with its
//!   inode; a miss there is `wrong` (every miss is a name that does not
//!   exist);
//! - a name that was never created, or was unlinked or removed, must miss
//!   on every path, quiet or not (`wrong` otherwise);
//! - a change's own answer must be one the model allows (ENOENT from a
//!   quiet path is `wrong`; the loser of a race between two changes gets
//!   Linux's errno);
//! - every few hundred milliseconds the writers stop and the whole tree
//!   is read back (`readdir` down from `/`, through the mounts): every
//!   file created and not unlinked, and every directory made and not
//!   removed, is reachable by exactly one name, where the model says
//!   (`lost` when it is reachable by none; `wrong` when elsewhere, twice,
//!   or when a name nobody has is there); every mount the model holds
//!   shows its marker file, and no mount hangs on an unlinked directory
//!   (`leaked_mounts`: `Vfs::leaked_mounts`, and the namespace's mount
//!   count against the model's).
//!
//! Who changes what: two file workers (each its own files: create, move,
//! unlink), one directory mover (every directory's place and life: `d`
//! directories that files and directories go into, `m` leaves that mounts
//! go on, `v` leaves that are renamed over each other) and one mounter
//! (mount, marker, umount on `m` directories). So the mover's and the
//! mounter's races on an `m` directory (point 2 of the issue) and the
//! file workers' moves into a directory the mover removes (point 1) run
//! for real, while readers walk stable names (`/sN/kM` always there,
//! `/sN/neverM` never) and random entities.
//!
//! Duration: `FS_VFSSTRESS_SECS` seconds per design (default 1.5, for
//! `make test`); `make vfsstress` runs minutes. `FS_VFSSTRESS_DESIGNS=a,b`
//! picks designs. Prints per design exactly
//! `vfsstress design=D secs=S ops=N lost=L wrong=W leaked_mounts=M`.

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::SeqCst};
use std::sync::{Arc, Mutex, RwLock};
use std::time::{Duration, Instant};

use fs::errno::Errno;
use fs::vfs::{FileType, OpenFlags, Vfs};

const STABLE_DIRS: u64 = 4;
const STABLE_FILES: u64 = 2;
const FILE_WORKERS: u64 = 2;
const READERS: u64 = 2;
/// Live files a file worker keeps about.
const FILES_EACH: usize = 16;
/// Live directories of each kind the mover keeps about.
const D_DIRS: usize = 10;
const M_DIRS: usize = 6;
const V_DIRS: usize = 4;
/// Between audits.
const AUDIT_EVERY: Duration = Duration::from_millis(250);

/// Operations begun and ended on an entity: quiet while they are equal.
#[derive(Default)]
struct Version {
    begun: AtomicU64,
    ended: AtomicU64,
}

impl Version {
    /// One operation begun (its creation): what a new entity is
    /// published with, so that no reader takes it for gone for good.
    fn creating() -> Self {
        let v = Version::default();
        v.begin();
        v
    }
    fn begin(&self) {
        self.begun.fetch_add(1, SeqCst);
    }
    fn end(&self) {
        self.ended.fetch_add(1, SeqCst);
    }
    /// The count if nothing is in flight.
    fn quiet(&self) -> Option<u64> {
        let e = self.ended.load(SeqCst);
        let b = self.begun.load(SeqCst);
        (b == e).then_some(b)
    }
    fn still(&self, b: u64) -> bool {
        self.begun.load(SeqCst) == b
    }
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Kind {
    Root,
    Stable,
    /// Directories files and directories go into.
    D,
    /// Leaves that mounts go on.
    M,
    /// Leaves renamed over each other.
    V,
}

struct Dir {
    id: usize,
    name: String,
    kind: Kind,
    parent: AtomicU64,
    live: AtomicBool,
    ino: AtomicU64,
    /// Mount marker id (0: nothing mounted). `M` only.
    mounted: AtomicU64,
    ver: Version,
    /// Live directories in it (the mover's count: exact).
    subdirs: AtomicU64,
    /// Live files in it (the file workers' count: a hint).
    nfiles: AtomicU64,
}

struct File {
    name: String,
    dir: AtomicU64,
    live: AtomicBool,
    ino: AtomicU64,
    ver: Version,
}

struct World {
    vfs: Vfs,
    opts: String,
    dirs: RwLock<Vec<Arc<Dir>>>,
    files: RwLock<Vec<Arc<File>>>,
    /// Live `D` and stable directories (and the root): where things go.
    homes: Mutex<Vec<usize>>,
    /// Live `M` and `V` directories.
    leaves: [Mutex<Vec<usize>>; 2],
    next_name: AtomicU64,
    /// Writers and readers hold it shared per operation; the audit
    /// exclusively.
    gate: RwLock<()>,
    stop: AtomicBool,
    ops: AtomicU64,
    checked: AtomicU64,
    lost: AtomicU64,
    wrong: AtomicU64,
    leaked_mounts: AtomicU64,
    /// What was reported already (an audit sees a discrepancy again).
    reported: Mutex<HashSet<String>>,
    /// Outcomes by operation, for the `#` line (how often each race ran).
    tally: Mutex<HashMap<String, u64>>,
}

/// Snapshot of the versions along a path, to prove it quiet afterwards.
#[derive(Default)]
struct Quiet {
    dirs: Vec<(Arc<Dir>, u64)>,
    ok: bool,
}

impl Quiet {
    fn still(&self) -> bool {
        self.ok && self.dirs.iter().all(|(d, b)| d.ver.still(*b))
    }
}

impl World {
    fn dir(&self, id: usize) -> Arc<Dir> {
        self.dirs.read().unwrap()[id].clone()
    }

    fn name(&self, prefix: &str) -> String {
        format!("{prefix}{}", self.next_name.fetch_add(1, SeqCst))
    }

    /// The model's path of directory `id` and its versions (quiet only if
    /// every directory on the way was quiet when read).
    fn path_of(&self, id: usize) -> (String, Quiet) {
        let mut q = Quiet {
            dirs: Vec::new(),
            ok: true,
        };
        let mut names = Vec::new();
        let mut cur = self.dir(id);
        for _ in 0..64 {
            match cur.ver.quiet() {
                Some(b) => q.dirs.push((cur.clone(), b)),
                None => q.ok = false,
            }
            if cur.kind == Kind::Root {
                break;
            }
            names.push(cur.name.clone());
            let p = cur.parent.load(SeqCst) as usize;
            cur = self.dir(p);
        }
        names.reverse();
        (format!("/{}", names.join("/")), q)
    }

    fn bad(&self, counter: &AtomicU64, key: String, what: String) {
        if self.reported.lock().unwrap().insert(key) {
            let n = counter.fetch_add(1, SeqCst);
            if n < 20 {
                eprintln!("vfsstress {}: {what}", self.opts);
            }
        }
    }

    fn wrong(&self, what: String) {
        self.wrong.fetch_add(1, SeqCst);
        if self.wrong.load(SeqCst) < 20 {
            eprintln!("vfsstress {}: wrong: {what}", self.opts);
        }
    }

    fn count<T>(&self, op: &str, r: &Result<T, Errno>) {
        let k = match r {
            Ok(_) => format!("{op}:ok"),
            Err(e) => format!("{op}:{}", e.name()),
        };
        *self.tally.lock().unwrap().entry(k).or_default() += 1;
    }

    fn pick_home(&self, rng: &mut fastrand::Rng) -> usize {
        let h = self.homes.lock().unwrap();
        h[rng.usize(..h.len())]
    }
}

/// A file worker: creates, moves and unlinks its own files.
fn file_worker(w: &World, seed: u64) -> u64 {
    let mut rng = fastrand::Rng::with_seed(seed);
    let mut mine: Vec<Arc<File>> = Vec::new();
    let mut ops = 0;
    while !w.stop.load(SeqCst) {
        let _g = w.gate.read().unwrap();
        ops += 1;
        let r = rng.u32(..10);
        if mine.len() < FILES_EACH / 2 || (r < 3 && mine.len() < FILES_EACH) {
            // Create a new file in a home directory.
            let d = w.pick_home(&mut rng);
            let f = Arc::new(File {
                name: w.name("f"),
                dir: AtomicU64::new(d as u64),
                live: AtomicBool::new(false),
                ino: AtomicU64::new(0),
                ver: Version::creating(),
            });
            w.files.write().unwrap().push(f.clone());
            let (dp, q) = w.path_of(d);
            let path = format!("{dp}/{}", f.name);
            let flags = OpenFlags::WRONLY | OpenFlags::CREAT | OpenFlags::EXCL;
            let r = w.vfs.open(path.as_bytes(), flags, 0o644);
            w.count("create", &r);
            match r {
                Ok(file) => {
                    f.ino.store(file.stat().ino, SeqCst);
                    f.live.store(true, SeqCst);
                    w.dir(d).nfiles.fetch_add(1, SeqCst);
                    mine.push(f.clone());
                }
                Err(Errno::ENOENT) if !q.still() || !w.dir(d).live.load(SeqCst) => {}
                Err(e) => w.wrong(format!("create {path}: {e:?} on a quiet path")),
            }
            f.ver.end();
        } else if r < 8 {
            // Move one of ours to another home.
            let f = mine[rng.usize(..mine.len())].clone();
            let to = w.pick_home(&mut rng);
            f.ver.begin();
            let from = f.dir.load(SeqCst) as usize;
            let (fp, q1) = w.path_of(from);
            let (tp, q2) = w.path_of(to);
            let (a, b) = (format!("{fp}/{}", f.name), format!("{tp}/{}", f.name));
            let r = w.vfs.rename(a.as_bytes(), b.as_bytes());
            w.count("mv_file", &r);
            match r {
                Ok(()) => {
                    f.dir.store(to as u64, SeqCst);
                    w.dir(from).nfiles.fetch_sub(1, SeqCst);
                    w.dir(to).nfiles.fetch_add(1, SeqCst);
                }
                Err(Errno::ENOENT)
                    if !q1.still()
                        || !q2.still()
                        || !w.dir(from).live.load(SeqCst)
                        || !w.dir(to).live.load(SeqCst) => {}
                Err(e) => w.wrong(format!("rename {a} {b}: {e:?} on quiet paths")),
            }
            f.ver.end();
        } else {
            // Unlink one of ours (it may be unreachable meanwhile: the
            // mover moved its directory; it is then tried again later).
            let i = rng.usize(..mine.len());
            let f = mine[i].clone();
            f.ver.begin();
            let d = f.dir.load(SeqCst) as usize;
            let (dp, q) = w.path_of(d);
            let path = format!("{dp}/{}", f.name);
            let r = w.vfs.unlink(path.as_bytes());
            w.count("unlink", &r);
            match r {
                Ok(()) => {
                    f.live.store(false, SeqCst);
                    w.dir(d).nfiles.fetch_sub(1, SeqCst);
                    mine.swap_remove(i);
                }
                Err(Errno::ENOENT) if !q.still() || !w.dir(d).live.load(SeqCst) => {}
                Err(e) => w.wrong(format!("unlink {path}: {e:?} on a quiet path")),
            }
            f.ver.end();
        }
    }
    ops
}

/// The live list of `kind` (`D`: the homes, stable ones included).
fn list_of(w: &World, kind: Kind) -> &Mutex<Vec<usize>> {
    match kind {
        Kind::M => &w.leaves[0],
        Kind::V => &w.leaves[1],
        _ => &w.homes,
    }
}

/// Live directories of `kind`.
fn live_of(w: &World, kind: Kind) -> Vec<Arc<Dir>> {
    let ids = list_of(w, kind).lock().unwrap().clone();
    ids.into_iter()
        .map(|i| w.dir(i))
        .filter(|d| d.kind == kind && d.live.load(SeqCst))
        .collect()
}

/// Is `a` the directory `b` or one of its ancestors (by the model)?
fn is_ancestor(w: &World, a: usize, b: usize) -> bool {
    let mut cur = b;
    for _ in 0..64 {
        if cur == a {
            return true;
        }
        let d = w.dir(cur);
        if d.kind == Kind::Root {
            return false;
        }
        cur = d.parent.load(SeqCst) as usize;
    }
    false
}

/// Does the model have a live directory in `id`?
fn has_child_dirs(w: &World, id: usize) -> bool {
    w.dir(id).subdirs.load(SeqCst) != 0
}

/// Does the model (probably) have a live file in directory `id`?
fn has_files(w: &World, id: usize) -> bool {
    w.dir(id).nfiles.load(SeqCst) != 0
}

fn new_dir(w: &World, kind: Kind, parent: usize) -> Arc<Dir> {
    let prefix = match kind {
        Kind::D => "d",
        Kind::M => "m",
        _ => "v",
    };
    let mut dirs = w.dirs.write().unwrap();
    let d = Arc::new(Dir {
        id: dirs.len(),
        name: w.name(prefix),
        kind,
        parent: AtomicU64::new(parent as u64),
        live: AtomicBool::new(false),
        ino: AtomicU64::new(0),
        mounted: AtomicU64::new(0),
        ver: Version::creating(),
        subdirs: AtomicU64::new(0),
        nfiles: AtomicU64::new(0),
    });
    dirs.push(d.clone());
    d
}

/// The directory mover: every directory's place and life.
fn mover(w: &World, seed: u64) -> u64 {
    let mut rng = fastrand::Rng::with_seed(seed);
    let mut ops = 0;
    while !w.stop.load(SeqCst) {
        let _g = w.gate.read().unwrap();
        ops += 1;
        // Mostly `d` directories: their removal beside the file workers'
        // moves into them is point 1's race.
        let kind = [
            Kind::D,
            Kind::D,
            Kind::D,
            Kind::D,
            Kind::M,
            Kind::M,
            Kind::V,
        ][rng.usize(..7)];
        let live = live_of(w, kind);
        let want = match kind {
            Kind::D => D_DIRS,
            Kind::M => M_DIRS,
            _ => V_DIRS,
        };
        let r = rng.u32(..10);
        if live.len() < want / 2 || (r < 3 && live.len() < want) {
            // mkdir in a home.
            let p = w.pick_home(&mut rng);
            let d = new_dir(w, kind, p);
            let (pp, q) = w.path_of(p);
            let path = format!("{pp}/{}", d.name);
            let r = w.vfs.mkdir(path.as_bytes(), 0o755);
            w.count(&format!("mkdir_{kind:?}"), &r);
            match r {
                Ok(()) => {
                    d.ino
                        .store(w.vfs.lstat(path.as_bytes()).map_or(0, |s| s.ino), SeqCst);
                    d.live.store(true, SeqCst);
                    w.dir(p).subdirs.fetch_add(1, SeqCst);
                    list_of(w, kind).lock().unwrap().push(d.id);
                }
                Err(Errno::ENOENT) if !q.still() => {}
                Err(e) => w.wrong(format!("mkdir {path}: {e:?}")),
            }
            d.ver.end();
        } else if r < 7 && kind != Kind::V {
            // Move a D or M directory into another home.
            let d = live[rng.usize(..live.len())].clone();
            let to = w.pick_home(&mut rng);
            let loop_ = is_ancestor(w, d.id, to);
            d.ver.begin();
            let (from, q1) = w.path_of(d.id);
            let (tp, q2) = w.path_of(to);
            let dest = format!("{tp}/{}", d.name);
            let mounted = kind == Kind::M;
            let r = w.vfs.rename(from.as_bytes(), dest.as_bytes());
            w.count(&format!("mv_{kind:?}"), &r);
            match r {
                Ok(()) if !loop_ => {
                    let from = d.parent.swap(to as u64, SeqCst) as usize;
                    w.dir(from).subdirs.fetch_sub(1, SeqCst);
                    w.dir(to).subdirs.fetch_add(1, SeqCst);
                }
                Err(Errno::EINVAL) if loop_ => {}
                // An `m` directory the mounter mounts on meanwhile.
                Err(Errno::EBUSY) if mounted => {}
                Err(Errno::ENOENT) if !q1.still() || !q2.still() => {}
                r => w.wrong(format!(
                    "rename {from} {dest}: {r:?} (into itself: {loop_})"
                )),
            }
            d.ver.end();
        } else if kind == Kind::V && r < 7 && live.len() >= 2 {
            // Rename one `v` over another: the first name goes, the second
            // names the first's directory now.
            let a = live[rng.usize(..live.len())].clone();
            let b = live[rng.usize(..live.len())].clone();
            if a.id == b.id {
                continue;
            }
            a.ver.begin();
            b.ver.begin();
            let (pa, _) = w.path_of(a.id);
            let (pb, _) = w.path_of(b.id);
            let r = w.vfs.rename(pa.as_bytes(), pb.as_bytes());
            w.count("mv_V_over", &r);
            match r {
                Ok(()) => {
                    b.ino.store(a.ino.load(SeqCst), SeqCst);
                    a.live.store(false, SeqCst);
                    w.dir(a.parent.load(SeqCst) as usize)
                        .subdirs
                        .fetch_sub(1, SeqCst);
                    list_of(w, Kind::V).lock().unwrap().retain(|&i| i != a.id);
                }
                r => w.wrong(format!("rename {pa} over {pb}: {r:?}")),
            }
            b.ver.end();
            a.ver.end();
        } else if !live.is_empty() {
            // Remove one (a `d` with directories in it is not tried; with
            // files in it, ENOTEMPTY; an `m` mounted meanwhile, EBUSY). A
            // `d` the model holds no file in, if there is one: a file
            // worker may be moving one in right now.
            let empty: Vec<&Arc<Dir>> = live
                .iter()
                .filter(|d| kind != Kind::D || !has_files(w, d.id))
                .collect();
            let d = if empty.is_empty() {
                live[rng.usize(..live.len())].clone()
            } else {
                empty[rng.usize(..empty.len())].clone()
            };
            if has_child_dirs(w, d.id) {
                continue;
            }
            // No new homes in it from here on.
            list_of(w, kind).lock().unwrap().retain(|&h| h != d.id);
            d.ver.begin();
            let (path, _) = w.path_of(d.id);
            let r = w.vfs.rmdir(path.as_bytes());
            w.count(&format!("rmdir_{kind:?}"), &r);
            match r {
                Ok(()) => {
                    d.live.store(false, SeqCst);
                    w.dir(d.parent.load(SeqCst) as usize)
                        .subdirs
                        .fetch_sub(1, SeqCst);
                }
                Err(Errno::ENOTEMPTY) if kind == Kind::D => {}
                Err(Errno::EBUSY) if kind == Kind::M => {}
                r => w.wrong(format!("rmdir {path}: {r:?}")),
            }
            if d.live.load(SeqCst) {
                list_of(w, kind).lock().unwrap().push(d.id);
            }
            d.ver.end();
        }
    }
    ops
}

/// The mounter: tmpfs mounts (with a marker file) on `m` directories, and
/// their umounts.
fn mounter(w: &World, seed: u64) -> u64 {
    let mut rng = fastrand::Rng::with_seed(seed);
    let mut ops = 0;
    while !w.stop.load(SeqCst) {
        let _g = w.gate.read().unwrap();
        let live = live_of(w, Kind::M);
        if live.is_empty() {
            drop(_g);
            std::thread::yield_now();
            continue;
        }
        ops += 1;
        let m = live[rng.usize(..live.len())].clone();
        m.ver.begin();
        let (path, q) = w.path_of(m.id);
        if m.mounted.load(SeqCst) == 0 {
            let r = w.vfs.mount("tmpfs", path.as_bytes(), &w.opts);
            w.count("mount", &r);
            match r {
                Ok(()) => {
                    // The marker, inside the mount (the mount goes where
                    // its directory went, and the directory may move:
                    // look for it again until the mover has said where).
                    let id = w.next_name.fetch_add(1, SeqCst);
                    let mut made = false;
                    for _ in 0..100_000 {
                        let (p, _) = w.path_of(m.id);
                        if w.vfs
                            .write_file(format!("{p}/mk{id}").as_bytes(), b"")
                            .is_ok()
                        {
                            made = true;
                            break;
                        }
                        std::thread::yield_now();
                    }
                    if !made {
                        w.wrong(format!("marker mk{id} in the mount on {}", m.name));
                    }
                    m.mounted.store(id, SeqCst);
                }
                Err(Errno::ENOENT) if !q.still() => {}
                Err(e) => w.wrong(format!("mount {path}: {e:?}")),
            }
        } else {
            let r = w.vfs.umount(path.as_bytes());
            w.count("umount", &r);
            match r {
                Ok(()) => m.mounted.store(0, SeqCst),
                // A walker standing in it.
                Err(Errno::EBUSY) => {}
                Err(Errno::ENOENT) if !q.still() => {}
                Err(e) => w.wrong(format!("umount {path}: {e:?}")),
            }
        }
        m.ver.end();
        drop(_g);
        // A mount costs little: without a pause the mounter takes most of
        // the CPU from the mover, whose races with it are the point.
        std::thread::sleep(Duration::from_micros(20));
    }
    ops
}

/// A reader: stable names, then random files and directories, each
/// checked when its path was quiet (or its name gone for good).
fn reader(w: &World, seed: u64) {
    let mut rng = fastrand::Rng::with_seed(seed);
    let mut n = 0u64;
    while !w.stop.load(SeqCst) {
        let _g = w.gate.read().unwrap();
        n += 1;
        if n.is_multiple_of(64) {
            fs::platform::get().rcu_quiescent_state();
        }
        match rng.u32(..8) {
            0 => {
                let (s, k) = (rng.u64(..STABLE_DIRS), rng.u64(..STABLE_FILES));
                let p = format!("/s{s}/k{k}");
                if !w
                    .vfs
                    .stat(p.as_bytes())
                    .is_ok_and(|st| st.kind == FileType::File)
                {
                    w.wrong(format!("stat {p}: {:?}", w.vfs.stat(p.as_bytes())));
                }
                let p = format!("/s{s}/never{k}");
                if w.vfs.stat(p.as_bytes()) != Err(Errno::ENOENT) {
                    w.wrong(format!("stat {p}: {:?}", w.vfs.stat(p.as_bytes())));
                }
                w.checked.fetch_add(2, SeqCst);
            }
            1..=4 => {
                let f = {
                    let fs = w.files.read().unwrap();
                    if fs.is_empty() {
                        continue;
                    }
                    // Half the time among the newest (mostly live).
                    let n = if rng.bool() {
                        fs.len().min(256)
                    } else {
                        fs.len()
                    };
                    fs[fs.len() - 1 - rng.usize(..n)].clone()
                };
                let Some(fb) = f.ver.quiet() else { continue };
                let live = f.live.load(SeqCst);
                let d = f.dir.load(SeqCst) as usize;
                let (dp, q) = w.path_of(d);
                let path = format!("{dp}/{}", f.name);
                let r = w.vfs.lstat(path.as_bytes());
                let quiet = q.still() && f.ver.still(fb);
                match (&r, live) {
                    (Ok(st), true) if st.ino == f.ino.load(SeqCst) => {}
                    (Err(Errno::ENOENT), false) => {}
                    _ if !quiet && live => continue,
                    _ => w.wrong(format!("lstat {path}: {r:?} (live {live}, quiet {quiet})")),
                }
                w.checked.fetch_add(1, SeqCst);
            }
            _ => {
                let d = {
                    let ds = w.dirs.read().unwrap();
                    let n = if rng.bool() {
                        (ds.len() - 1).min(64)
                    } else {
                        ds.len() - 1
                    };
                    ds[ds.len() - 1 - rng.usize(..n)].clone()
                };
                let Some(db) = d.ver.quiet() else { continue };
                let live = d.live.load(SeqCst);
                let mounted = d.mounted.load(SeqCst);
                let ino = d.ino.load(SeqCst);
                let (path, q) = w.path_of(d.id);
                let r = w.vfs.lstat(path.as_bytes());
                let marker =
                    (mounted != 0).then(|| w.vfs.lstat(format!("{path}/mk{mounted}").as_bytes()));
                let quiet = q.still() && d.ver.still(db);
                if !live {
                    if r != Err(Errno::ENOENT) {
                        w.wrong(format!("lstat {path}: {r:?}, removed"));
                    }
                } else if !quiet {
                    continue;
                } else if !r.as_ref().is_ok_and(|st| st.kind == FileType::Dir)
                    || (mounted == 0 && d.kind != Kind::Stable && r.as_ref().unwrap().ino != ino)
                {
                    w.wrong(format!("lstat {path}: {r:?} (ino {ino})"));
                } else if let Some(Err(e)) = marker {
                    w.wrong(format!("{path}/mk{mounted}: {e:?}"));
                }
                w.checked.fetch_add(1, SeqCst);
            }
        }
    }
}

/// One entry found by the audit.
struct Found {
    parent: String,
    ino: u64,
    kind: FileType,
}

/// Stop the world and read the tree back.
fn audit(w: &World) {
    let _all = w.gate.write().unwrap();
    let mut found: HashMap<String, Vec<Found>> = HashMap::new();
    // Breadth first from `/`: (path, its own name).
    let mut queue = vec![("/".to_string(), String::new())];
    while let Some((path, pname)) = queue.pop() {
        let entries = match w.vfs.readdir(path.as_bytes()) {
            Ok(e) => e,
            Err(e) => {
                w.wrong(format!("audit: readdir {path}: {e:?}"));
                continue;
            }
        };
        for e in entries {
            let name = String::from_utf8(e.name).unwrap();
            let child = if path == "/" {
                format!("/{name}")
            } else {
                format!("{path}/{name}")
            };
            if e.kind == FileType::Dir {
                queue.push((child, name.clone()));
            }
            found.entry(name).or_default().push(Found {
                parent: pname.clone(),
                ino: e.ino,
                kind: e.kind,
            });
        }
    }
    let mut expected: HashSet<String> = HashSet::new();
    for s in 0..STABLE_DIRS {
        expected.insert(format!("s{s}"));
        for k in 0..STABLE_FILES {
            expected.insert(format!("k{k}"));
        }
    }
    let dirs = w.dirs.read().unwrap().clone();
    let name_of = |id: u64| dirs[id as usize].name.clone();
    for f in w.files.read().unwrap().iter() {
        if !f.live.load(SeqCst) {
            continue;
        }
        expected.insert(f.name.clone());
        let want = name_of(f.dir.load(SeqCst));
        match found.get(&f.name).map(Vec::as_slice) {
            None | Some([]) => w.bad(
                &w.lost,
                f.name.clone(),
                format!("lost: file {} (in {want}) is reachable by no name", f.name),
            ),
            Some([x])
                if x.parent == want && x.kind == FileType::File && x.ino == f.ino.load(SeqCst) => {}
            Some(xs) => w.bad(
                &w.wrong,
                f.name.clone(),
                format!(
                    "wrong: file {} (in {want}) found {} times, under {:?}",
                    f.name,
                    xs.len(),
                    xs.iter().map(|x| x.parent.as_str()).collect::<Vec<_>>()
                ),
            ),
        }
    }
    let mut mounted = 0;
    for d in dirs
        .iter()
        .filter(|d| matches!(d.kind, Kind::D | Kind::M | Kind::V))
    {
        if !d.live.load(SeqCst) {
            continue;
        }
        expected.insert(d.name.clone());
        let want = name_of(d.parent.load(SeqCst));
        match found.get(&d.name).map(Vec::as_slice) {
            None | Some([]) => w.bad(
                &w.lost,
                d.name.clone(),
                format!(
                    "lost: directory {} (in {want}) is reachable by no name",
                    d.name
                ),
            ),
            Some([x]) if x.parent == want && x.kind == FileType::Dir => {}
            Some(xs) => w.bad(
                &w.wrong,
                d.name.clone(),
                format!(
                    "wrong: directory {} (in {want}) found {} times",
                    d.name,
                    xs.len()
                ),
            ),
        }
        let mk = d.mounted.load(SeqCst);
        if mk != 0 {
            mounted += 1;
            let name = format!("mk{mk}");
            expected.insert(name.clone());
            if !found
                .get(&name)
                .is_some_and(|xs| xs.len() == 1 && xs[0].parent == d.name)
            {
                w.bad(
                    &w.wrong,
                    name.clone(),
                    format!(
                        "wrong: the mount on {} does not show its marker {name}",
                        d.name
                    ),
                );
            }
        }
    }
    for (name, xs) in &found {
        if !expected.contains(name) {
            w.bad(
                &w.wrong,
                format!("found {name}"),
                format!(
                    "wrong: {name} is reachable (under {:?}) but was never made or is gone",
                    xs.iter().map(|x| x.parent.as_str()).collect::<Vec<_>>()
                ),
            );
        }
    }
    let leaked = w.vfs.leaked_mounts() as u64;
    let extra = (w.vfs.mount_count() as u64).saturating_sub(1 + mounted);
    let n = leaked.max(extra);
    let before = w.leaked_mounts.load(SeqCst);
    if n > before {
        eprintln!(
            "vfsstress {}: leaked mounts: {leaked} on unlinked directories, {} mounts for {mounted} in the model",
            w.opts,
            w.vfs.mount_count() - 1
        );
        w.leaked_mounts.store(n, SeqCst);
    }
}

fn secs() -> f64 {
    std::env::var("FS_VFSSTRESS_SECS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(1.5)
}

struct Report {
    ops: u64,
    lost: u64,
    wrong: u64,
    leaked_mounts: u64,
}

fn run(design: &str) -> Report {
    let opts = format!("enoent={design}");
    let vfs = Vfs::new_tmpfs(&opts).unwrap();
    let root = Arc::new(Dir {
        id: 0,
        name: String::new(),
        kind: Kind::Root,
        parent: AtomicU64::new(0),
        live: AtomicBool::new(true),
        ino: AtomicU64::new(vfs.stat(b"/").unwrap().ino),
        mounted: AtomicU64::new(0),
        ver: Version::default(),
        subdirs: AtomicU64::new(STABLE_DIRS),
        nfiles: AtomicU64::new(0),
    });
    let mut dirs = vec![root];
    let mut homes = vec![0];
    for s in 0..STABLE_DIRS {
        let p = format!("/s{s}");
        vfs.mkdir(p.as_bytes(), 0o755).unwrap();
        for k in 0..STABLE_FILES {
            vfs.write_file(format!("{p}/k{k}").as_bytes(), b"k")
                .unwrap();
        }
        homes.push(dirs.len());
        dirs.push(Arc::new(Dir {
            id: dirs.len(),
            name: format!("s{s}"),
            kind: Kind::Stable,
            parent: AtomicU64::new(0),
            live: AtomicBool::new(true),
            ino: AtomicU64::new(vfs.stat(p.as_bytes()).unwrap().ino),
            mounted: AtomicU64::new(0),
            ver: Version::default(),
            subdirs: AtomicU64::new(0),
            nfiles: AtomicU64::new(0),
        }));
    }
    let w = Arc::new(World {
        vfs,
        opts,
        dirs: RwLock::new(dirs),
        files: RwLock::new(Vec::new()),
        homes: Mutex::new(homes),
        leaves: [Mutex::new(Vec::new()), Mutex::new(Vec::new())],
        next_name: AtomicU64::new(1),
        gate: RwLock::new(()),
        stop: AtomicBool::new(false),
        ops: AtomicU64::new(0),
        checked: AtomicU64::new(0),
        lost: AtomicU64::new(0),
        wrong: AtomicU64::new(0),
        leaked_mounts: AtomicU64::new(0),
        reported: Mutex::new(HashSet::new()),
        tally: Mutex::new(HashMap::new()),
    });
    let poison0 = fs::sync::rculist::poison_hits();
    let seen0 = fs::stats::snapshot().poison_seen;
    let t0 = Instant::now();
    let mut writers = Vec::new();
    for i in 0..FILE_WORKERS {
        let w = w.clone();
        writers.push(std::thread::spawn(move || file_worker(&w, 0x5eed + i)));
    }
    {
        let w = w.clone();
        writers.push(std::thread::spawn(move || mover(&w, 0xd1e5)));
    }
    {
        let w = w.clone();
        writers.push(std::thread::spawn(move || mounter(&w, 0x3047)));
    }
    let mut readers = Vec::new();
    for i in 0..READERS {
        let w = w.clone();
        readers.push(std::thread::spawn(move || reader(&w, 0x7ead + i)));
    }
    let end = t0 + Duration::from_secs_f64(secs());
    while Instant::now() < end {
        std::thread::sleep(AUDIT_EVERY.min(end.saturating_duration_since(Instant::now())));
        audit(&w);
    }
    w.stop.store(true, SeqCst);
    let ops: u64 = writers.into_iter().map(|h| h.join().unwrap()).sum();
    for h in readers {
        h.join().unwrap();
    }
    w.ops.store(ops, SeqCst);
    let elapsed = t0.elapsed().as_secs_f64();
    audit(&w);
    // Take every mount down: nothing stands in them now.
    for d in live_of(&w, Kind::M) {
        if d.mounted.load(SeqCst) != 0 {
            let (p, _) = w.path_of(d.id);
            if let Err(e) = w.vfs.umount(p.as_bytes()) {
                w.wrong(format!("final umount {p}: {e:?}"));
            }
        }
    }
    if w.vfs.mount_count() != 1 {
        let n = w.vfs.mount_count() as u64 - 1;
        w.leaked_mounts.fetch_max(n, SeqCst);
    }
    let poisoned = fs::sync::rculist::poison_hits() - poison0;
    let seen = fs::stats::snapshot().poison_seen - seen0;
    if poisoned + seen != 0 {
        w.wrong(format!("poison: {poisoned} chain hits, {seen} canaries"));
    }
    let mut t: Vec<_> = w
        .tally
        .lock()
        .unwrap()
        .iter()
        .map(|(k, v)| format!("{k}={v}"))
        .collect();
    t.sort();
    println!("# design={design} outcomes: {}", t.join(" "));
    let files = w.files.read().unwrap().len();
    let dirs = w.dirs.read().unwrap().len();
    println!(
        "# design={design} files_made={files} dirs_made={dirs} checked={} writers={} readers={READERS}",
        w.checked.load(SeqCst),
        FILE_WORKERS + 2
    );
    let r = Report {
        ops,
        lost: w.lost.load(SeqCst),
        wrong: w.wrong.load(SeqCst),
        leaked_mounts: w.leaked_mounts.load(SeqCst),
    };
    println!(
        "vfsstress design={design} secs={elapsed:.1} ops={} lost={} wrong={} leaked_mounts={}",
        r.ops, r.lost, r.wrong, r.leaked_mounts
    );
    assert!(w.checked.load(SeqCst) > 0, "readers checked nothing");
    r
}

/// Every design of the registry (or `FS_VFSSTRESS_DESIGNS`).
#[test]
fn vfsstress_all_designs() {
    let designs: Vec<String> = match std::env::var("FS_VFSSTRESS_DESIGNS") {
        Ok(v) => v.split(',').map(str::to_string).collect(),
        Err(_) => fs::dcache::design::DESIGNS
            .iter()
            .map(|d| d.name().to_string())
            .collect(),
    };
    let mut bad = Vec::new();
    for d in &designs {
        let r = run(d);
        assert!(r.ops > 0, "{d}: the writers made no progress");
        if r.lost + r.wrong + r.leaked_mounts != 0 {
            bad.push(format!(
                "{d}: lost={} wrong={} leaked_mounts={}",
                r.lost, r.wrong, r.leaked_mounts
            ));
        }
    }
    fs::dcache::design::say_ran("vfsstress::vfsstress_all_designs", &designs);
    assert!(bad.is_empty(), "vfsstress: {bad:?}");
}
