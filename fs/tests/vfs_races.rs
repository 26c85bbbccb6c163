//! Races between the operations that change the namespace (issue #47,
//! point 1): a rename into a directory being removed. Each answer is Linux's: the
//! operation that comes second fails with the errno Linux gives it, and
//! nothing is lost or left hanging on a dead dentry.
//!
//! Deterministic where a race point ([`fs::fault::arm_race`]) can run the
//! other operation between one operation's lookups and its locks; a
//! bounded loop of two threads beside them.
//!
//! Every test runs every ENOENT design of the registry (each mounts its
//! root with that design). Touches only the fs crate's public API.

use std::cell::RefCell;
use std::rc::Rc;
use std::sync::{Arc, Barrier};

use fs::dcache::design;
use fs::errno::Errno;
use fs::fault::{arm_race, disarm_race, RacePoint};
use fs::vfs::Vfs;
use fs::KResult;

fn each_design(test: &str, f: impl Fn(&str)) {
    let opts = design::mount_opts();
    for o in &opts {
        f(o);
    }
    design::say_ran(test, &opts);
}

fn vfs(opts: &str) -> Arc<Vfs> {
    Arc::new(Vfs::new_tmpfs(opts).unwrap())
}

/// Arm `point` on this thread with `op` on `v`; returns where its result
/// will be.
fn race(
    point: RacePoint,
    v: &Arc<Vfs>,
    op: impl FnOnce(&Vfs) -> KResult<()> + 'static,
) -> Rc<RefCell<Option<KResult<()>>>> {
    let out = Rc::new(RefCell::new(None));
    let (o, v) = (out.clone(), v.clone());
    arm_race(point, move || *o.borrow_mut() = Some(op(&v)));
    out
}

fn fired(out: &Rc<RefCell<Option<KResult<()>>>>) -> KResult<()> {
    assert!(!disarm_race(), "the race point was not reached");
    out.borrow().expect("the racing operation ran")
}

/// Point 1: `rename("/a/f", "/d/f")` looked `/d` up; `rmdir("/d")` runs
/// before the rename locks it. Linux: ENOENT (`IS_DEADDIR`), `/a/f` stays.
#[test]
fn rename_into_a_directory_removed_meanwhile_is_enoent() {
    each_design("vfs_races::rename_into_removed", |o| {
        let v = vfs(o);
        v.mkdir(b"/a", 0o755).unwrap();
        v.write_file(b"/a/f", b"f").unwrap();
        v.mkdir(b"/d", 0o755).unwrap();
        let rm = race(RacePoint::RenameLock, &v, |v| v.rmdir(b"/d"));
        let r = v.rename(b"/a/f", b"/d/f");
        assert_eq!(fired(&rm), Ok(()), "{o}: rmdir /d");
        assert_eq!(r, Err(Errno::ENOENT), "{o}: rename into the removed /d");
        assert_eq!(v.read_file(b"/a/f").as_deref(), Ok(&b"f"[..]), "{o}: /a/f");
        assert_eq!(v.stat(b"/d").err(), Some(Errno::ENOENT), "{o}");
    });
}

/// Point 1's variant: `rename("/x", "/t")` over the empty `/t` runs inside
/// `rename("/a/f", "/t/f")`'s window. The first kills the old `/t`; the
/// second must not move `/a/f` into it.
#[test]
fn rename_into_a_directory_renamed_over_meanwhile_is_enoent() {
    each_design("vfs_races::rename_into_renamed_over", |o| {
        let v = vfs(o);
        v.mkdir(b"/a", 0o755).unwrap();
        v.write_file(b"/a/f", b"f").unwrap();
        v.mkdir(b"/x", 0o755).unwrap();
        v.mkdir(b"/t", 0o755).unwrap();
        let ino_x = v.stat(b"/x").unwrap().ino;
        let over = race(RacePoint::RenameLookup, &v, |v| v.rename(b"/x", b"/t"));
        let r = v.rename(b"/a/f", b"/t/f");
        assert_eq!(fired(&over), Ok(()), "{o}: rename /x /t");
        assert_eq!(r, Err(Errno::ENOENT), "{o}: rename into the dead /t");
        assert_eq!(v.read_file(b"/a/f").as_deref(), Ok(&b"f"[..]), "{o}: /a/f");
        assert_eq!(v.stat(b"/t").unwrap().ino, ino_x, "{o}: /t is the old /x");
        assert!(v.readdir(b"/t").unwrap().is_empty(), "{o}");
    });
}

/// Point 1 as a loop of two threads: `rename("/aI/f", "/dI/f")` against
/// `rmdir("/dI")`. Either the file moved and rmdir says ENOTEMPTY, or the
/// directory went and the rename says ENOENT; the file is always found.
#[test]
fn rename_into_and_rmdir_of_one_directory_one_wins() {
    each_design("vfs_races::rename_rmdir_loop", |o| {
        let v = vfs(o);
        let tries = 1500;
        for i in 0..tries {
            let (a, d) = (format!("/a{i}"), format!("/d{i}"));
            v.mkdir(a.as_bytes(), 0o755).unwrap();
            v.mkdir(d.as_bytes(), 0o755).unwrap();
            let (af, df) = (format!("{a}/f"), format!("{d}/f"));
            v.write_file(af.as_bytes(), b"f").unwrap();
            let b = Arc::new(Barrier::new(2));
            let (v2, b2, d2) = (v.clone(), b.clone(), d.clone());
            let t = std::thread::spawn(move || {
                b2.wait();
                v2.rmdir(d2.as_bytes())
            });
            b.wait();
            let mv = v.rename(af.as_bytes(), df.as_bytes());
            let rm = t.join().unwrap();
            match (mv, rm) {
                (Ok(()), Err(Errno::ENOTEMPTY)) => {
                    assert!(v.stat(df.as_bytes()).is_ok(), "{o}: try {i}: {df}")
                }
                (Err(Errno::ENOENT), Ok(())) => {
                    assert!(v.stat(af.as_bytes()).is_ok(), "{o}: try {i}: {af}")
                }
                other => panic!("{o}: try {i}: rename, rmdir = {other:?}"),
            }
        }
    });
}
