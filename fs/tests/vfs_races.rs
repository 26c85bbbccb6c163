//! Races between the operations that change the namespace (issue #47,
//! points 1 and 2): a rename into a directory being removed, a mount on a
//! directory being removed or renamed over. Each answer is Linux's: the
//! operation that comes second fails with the errno Linux gives it, and
//! nothing is lost or left hanging on a dead dentry.
//!
//! Deterministic where a race point ([`fs::fault::arm_race`]) can run the
//! other operation between one operation's lookups and its locks; a
//! bounded loop of two threads where the window is inside the other
//! operation's locks (rmdir between its `D_MOUNTED` check and its removal).
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

/// A mount count of 1 (the root) and no mount on an unlinked dentry.
fn no_mounts_left(v: &Vfs, o: &str) {
    assert_eq!(v.leaked_mounts(), 0, "{o}: a mount on a removed directory");
    assert_eq!(v.mount_count(), 1, "{o}: a mount was left attached");
}

/// Point 2: `mount` looked `/m` up; `rmdir("/m")` runs before the mount
/// holds it. Linux: the mount fails with ENOENT (`cant_mount` under the
/// inode lock, `d_set_mounted`'s `d_unlinked`), nothing is attached.
#[test]
fn mount_on_a_directory_removed_meanwhile_is_enoent() {
    each_design("vfs_races::mount_on_removed", |o| {
        let v = vfs(o);
        v.mkdir(b"/m", 0o755).unwrap();
        let rm = race(RacePoint::Mount, &v, |v| v.rmdir(b"/m"));
        let r = v.mount("tmpfs", b"/m", o);
        assert_eq!(fired(&rm), Ok(()), "{o}: rmdir /m");
        assert_eq!(r, Err(Errno::ENOENT), "{o}: mount on the removed /m");
        no_mounts_left(&v, o);
    });
}

/// Point 2 against rename: `rename("/x", "/t")` over the empty `/t` runs
/// inside a mount's window on `/t`. Linux: ENOENT (the old `/t` is dead).
#[test]
fn mount_on_a_directory_renamed_over_meanwhile_is_enoent() {
    each_design("vfs_races::mount_on_renamed_over", |o| {
        let v = vfs(o);
        v.mkdir(b"/x", 0o755).unwrap();
        v.mkdir(b"/t", 0o755).unwrap();
        let over = race(RacePoint::Mount, &v, |v| v.rename(b"/x", b"/t"));
        let r = v.mount("tmpfs", b"/t", o);
        assert_eq!(fired(&over), Ok(()), "{o}: rename /x /t");
        assert_eq!(r, Err(Errno::ENOENT), "{o}: mount on the dead /t");
        no_mounts_left(&v, o);
        // /t is the old /x, unmounted: what is created there stays there.
        v.write_file(b"/t/f", b"f").unwrap();
        assert_eq!(v.readdir(b"/t").unwrap().len(), 1, "{o}");
    });
}

/// The other order of point 2: the mount runs inside rmdir's (and
/// rename's) window, so the removal must see it: EBUSY, the mount stays.
#[test]
fn removing_a_directory_mounted_meanwhile_is_ebusy() {
    each_design("vfs_races::remove_mounted_meanwhile", |o| {
        let v = vfs(o);
        v.mkdir(b"/m", 0o755).unwrap();
        v.mkdir(b"/x", 0o755).unwrap();
        let opts = o.to_string();
        let mnt = race(RacePoint::Rmdir, &v, move |v| {
            v.mount("tmpfs", b"/m", &opts)
        });
        assert_eq!(v.rmdir(b"/m"), Err(Errno::EBUSY), "{o}: rmdir /m");
        assert_eq!(fired(&mnt), Ok(()), "{o}");
        // Renaming over it, or renaming it, is EBUSY too.
        assert_eq!(v.rename(b"/x", b"/m"), Err(Errno::EBUSY), "{o}");
        assert_eq!(v.rename(b"/m", b"/y"), Err(Errno::EBUSY), "{o}");
        v.mkdir(b"/n", 0o755).unwrap();
        let opts = o.to_string();
        let mnt = race(RacePoint::RenameLock, &v, move |v| {
            v.mount("tmpfs", b"/n", &opts)
        });
        assert_eq!(
            v.rename(b"/x", b"/n"),
            Err(Errno::EBUSY),
            "{o}: rename over /n"
        );
        assert_eq!(fired(&mnt), Ok(()), "{o}");
        assert_eq!(v.mount_count(), 3, "{o}");
    });
}

/// A mount whose mountpoint was moved (not removed) meanwhile goes where
/// the directory went, as in Linux (the mount is on the dentry, not on
/// the path): both succeed, and the mount is visible at the new name.
#[test]
fn mount_on_a_directory_moved_meanwhile_follows_it() {
    each_design("vfs_races::mount_on_moved", |o| {
        let v = vfs(o);
        v.mkdir(b"/x", 0o755).unwrap();
        let mv = race(RacePoint::Mount, &v, |v| v.rename(b"/x", b"/y"));
        assert_eq!(v.mount("tmpfs", b"/x", o), Ok(()), "{o}: mount /x");
        assert_eq!(fired(&mv), Ok(()), "{o}: rename /x /y");
        v.write_file(b"/y/inside", b"i").unwrap();
        assert_eq!(v.mount_count(), 2, "{o}");
        assert_eq!(v.rmdir(b"/y"), Err(Errno::EBUSY), "{o}");
    });
}

/// Where no race point reaches (rmdir between its `D_MOUNTED` check and
/// its removal, both under its locks): `tries` rounds of two threads
/// started together, one `mount`ing `/m`, one `rmdir`ing it. Exactly one
/// may win; the loser's errno is Linux's (ENOENT for the mount, EBUSY for
/// rmdir).
#[test]
fn mount_and_rmdir_of_one_directory_one_wins() {
    each_design("vfs_races::mount_rmdir_loop", |o| {
        let v = vfs(o);
        let tries = 400;
        let (mut mounted, mut removed) = (0, 0);
        for i in 0..tries {
            let m = format!("/m{i}");
            v.mkdir(m.as_bytes(), 0o755).unwrap();
            let b = Arc::new(Barrier::new(2));
            let (v2, b2, m2, o2) = (v.clone(), b.clone(), m.clone(), o.to_string());
            let t = std::thread::spawn(move || {
                b2.wait();
                v2.mount("tmpfs", m2.as_bytes(), &o2)
            });
            b.wait();
            let rm = v.rmdir(m.as_bytes());
            let mnt = t.join().unwrap();
            match (mnt, rm) {
                (Ok(()), Err(Errno::EBUSY)) => mounted += 1,
                (Err(Errno::ENOENT), Ok(())) => removed += 1,
                other => panic!("{o}: try {i}: mount, rmdir = {other:?}"),
            }
        }
        assert_eq!(v.leaked_mounts(), 0, "{o}");
        assert_eq!(v.mount_count(), 1 + mounted, "{o}");
        println!("{o}: mount won {mounted}, rmdir won {removed} of {tries}");
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
