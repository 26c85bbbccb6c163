//! `umount` with Linux's answers (issue #47): ENOENT for a missing path,
//! EINVAL for a path that is not a mount's root, EBUSY while anything
//! stands in the mount (an open file, an operation holding a place in it,
//! a mount on or inside it) and for the namespace root; otherwise the
//! mount goes, its tree is torn down and the directory below shows again.
//! A walk that found the mount without a count either makes umount EBUSY
//! or sees it gone (`MountTable::hold`).
//!
//! Every test runs every ENOENT design. Touches only the fs crate's public
//! API.

use std::cell::RefCell;
use std::rc::Rc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;

use fs::dcache::design;
use fs::errno::Errno;
use fs::fault::{arm_race, disarm_race, RacePoint};
use fs::vfs::{OpenFlags, Vfs};
use fs::KResult;

fn each_design(test: &str, f: impl Fn(&str)) {
    let opts = design::mount_opts();
    for o in &opts {
        f(o);
    }
    design::say_ran(test, &opts);
}

#[test]
fn umount_answers_as_linux() {
    each_design("umount::answers", |o| {
        let v = Vfs::new_tmpfs(o).unwrap();
        v.mkdir(b"/m", 0o755).unwrap();
        v.write_file(b"/m/below", b"b").unwrap();
        assert_eq!(v.umount(b"/nothing"), Err(Errno::ENOENT), "{o}");
        assert_eq!(v.umount(b"/m"), Err(Errno::EINVAL), "{o}: not mounted");
        assert_eq!(v.umount(b"/m/below"), Err(Errno::EINVAL), "{o}: a file");
        assert_eq!(v.umount(b"/"), Err(Errno::EBUSY), "{o}: the root");
        v.mount("tmpfs", b"/m", o).unwrap();
        v.mkdir(b"/m/d", 0o755).unwrap();
        v.write_file(b"/m/d/f", b"f").unwrap();
        assert_eq!(v.stat(b"/m/below").err(), Some(Errno::ENOENT), "{o}");
        assert_eq!(v.umount(b"/m/d"), Err(Errno::EINVAL), "{o}: inside");
        assert_eq!(v.rmdir(b"/m"), Err(Errno::EBUSY), "{o}");
        assert_eq!(v.umount(b"/m"), Ok(()), "{o}");
        assert_eq!(v.mount_count(), 1, "{o}");
        assert_eq!(v.stat(b"/m/d/f").err(), Some(Errno::ENOENT), "{o}");
        assert_eq!(v.read_file(b"/m/below").as_deref(), Ok(&b"b"[..]), "{o}");
        assert_eq!(v.umount(b"/m"), Err(Errno::EINVAL), "{o}: twice");
        v.unlink(b"/m/below").unwrap();
        v.rmdir(b"/m").unwrap();
        assert_eq!(v.leaked_mounts(), 0, "{o}");
    });
}

#[test]
fn umount_is_ebusy_while_something_stands_in_the_mount() {
    each_design("umount::busy", |o| {
        let v = Vfs::new_tmpfs(o).unwrap();
        v.mkdir(b"/m", 0o755).unwrap();
        v.mount("tmpfs", b"/m", o).unwrap();
        // An open file.
        v.write_file(b"/m/f", b"f").unwrap();
        let f = v.open(b"/m/f", OpenFlags::RDONLY, 0).unwrap();
        assert_eq!(v.umount(b"/m"), Err(Errno::EBUSY), "{o}: open file");
        drop(f);
        // A file created and still open.
        let f = v
            .open(b"/m/g", OpenFlags::WRONLY | OpenFlags::CREAT, 0o644)
            .unwrap();
        assert_eq!(v.umount(b"/m"), Err(Errno::EBUSY), "{o}: created file");
        drop(f);
        // A mount inside it, and one stacked on it.
        v.mkdir(b"/m/sub", 0o755).unwrap();
        v.mount("tmpfs", b"/m/sub", o).unwrap();
        assert_eq!(v.umount(b"/m"), Err(Errno::EBUSY), "{o}: a mount inside");
        v.umount(b"/m/sub").unwrap();
        v.write_file(b"/m/level0", b"0").unwrap();
        v.mount("tmpfs", b"/m", o).unwrap();
        v.write_file(b"/m/level1", b"1").unwrap();
        assert_eq!(v.mount_count(), 3, "{o}");
        // The top of the stack goes; the one below shows, then goes too.
        v.umount(b"/m").unwrap();
        assert_eq!(v.stat(b"/m/level1").err(), Some(Errno::ENOENT), "{o}");
        assert_eq!(v.read_file(b"/m/level0").as_deref(), Ok(&b"0"[..]), "{o}");
        // A stack again on what is left, then both off, top first.
        v.mount("tmpfs", b"/m", o).unwrap();
        v.write_file(b"/m/level1b", b"1").unwrap();
        assert!(v.stat(b"/m/level0").is_err(), "{o}");
        v.umount(b"/m").unwrap();
        assert!(v.stat(b"/m/level0").is_ok(), "{o}");
        v.umount(b"/m").unwrap();
        assert_eq!(v.mount_count(), 1, "{o}");
        assert!(v.readdir(b"/m").unwrap().is_empty(), "{o}");
        v.rmdir(b"/m").unwrap();
    });
}

/// An operation that looked its parent up inside the mount holds it: an
/// umount in its window is EBUSY, and the operation completes there.
#[test]
fn umount_in_an_operations_window_is_ebusy() {
    each_design("umount::in_window", |o| {
        let v = Arc::new(Vfs::new_tmpfs(o).unwrap());
        v.mkdir(b"/m", 0o755).unwrap();
        v.mount("tmpfs", b"/m", o).unwrap();
        v.write_file(b"/m/a", b"a").unwrap();
        let out: Rc<RefCell<Option<KResult<()>>>> = Rc::default();
        let (o2, v2) = (out.clone(), v.clone());
        arm_race(RacePoint::RenameLookup, move || {
            *o2.borrow_mut() = Some(v2.umount(b"/m"))
        });
        assert_eq!(v.rename(b"/m/a", b"/m/b"), Ok(()), "{o}");
        assert!(!disarm_race(), "{o}: not reached");
        assert_eq!(*out.borrow(), Some(Err(Errno::EBUSY)), "{o}");
        assert!(v.stat(b"/m/b").is_ok(), "{o}");
        // And the other way: an operation inside umount's window (after
        // its lookup, before its lock) holds the mount only while it runs.
        let (o2, v2) = (out.clone(), v.clone());
        arm_race(RacePoint::Umount, move || {
            *o2.borrow_mut() = Some(v2.write_file(b"/m/c", b"c"))
        });
        assert_eq!(v.umount(b"/m"), Ok(()), "{o}");
        assert!(!disarm_race(), "{o}: not reached");
        assert_eq!(*out.borrow(), Some(Ok(())), "{o}");
        assert_eq!(v.stat(b"/m/c").err(), Some(Errno::ENOENT), "{o}");
        assert_eq!(v.mount_count(), 1, "{o}");
    });
}

/// Walkers in and through a mount while it is mounted and unmounted over
/// and over: every answer is one the namespace had (a file of the mount
/// while it is there, the empty directory below otherwise), and nothing
/// is left mounted or leaked.
#[test]
fn walks_through_a_mount_coming_and_going() {
    each_design("umount::walks", |o| {
        let v = Arc::new(Vfs::new_tmpfs(o).unwrap());
        v.mkdir(b"/m", 0o755).unwrap();
        let stop = Arc::new(AtomicBool::new(false));
        // Set by the unmounter after many EBUSYs in a row: the walkers
        // hold still until it got its umount (each open file counts the
        // mount, and two walkers on two CPUs can keep it busy for seconds).
        let pause = Arc::new(AtomicBool::new(false));
        let wrong = Arc::new(AtomicU64::new(0));
        // Rounds whose umount has returned.
        let gone = Arc::new(AtomicU64::new(0));
        let mut hs = Vec::new();
        for t in 0..2 {
            let (v, stop, wrong) = (v.clone(), stop.clone(), wrong.clone());
            let (pause, gone) = (pause.clone(), gone.clone());
            hs.push(std::thread::spawn(move || {
                let mut n = 0u64;
                while !stop.load(Ordering::Relaxed) {
                    while pause.load(Ordering::Relaxed) {
                        std::thread::yield_now();
                    }
                    n += 1;
                    // The mount's file: its content names its mount round
                    // (empty between its create and its write), never one
                    // whose umount returned before this read began.
                    let g = gone.load(Ordering::SeqCst);
                    let round = |b: &[u8]| -> Option<u64> {
                        std::str::from_utf8(b.strip_prefix(b"round")?)
                            .ok()?
                            .parse()
                            .ok()
                    };
                    match v.read_file(b"/m/f") {
                        Ok(b) if b.is_empty() => {}
                        Ok(b) if round(&b).is_some_and(|k| k >= g) => {}
                        Err(Errno::ENOENT) => {}
                        other => {
                            eprintln!("thread {t}: /m/f: {other:?}");
                            wrong.fetch_add(1, Ordering::Relaxed);
                        }
                    }
                    // Up and out through `..`, from inside the mount.
                    match v.stat(b"/m/d/../../m") {
                        Ok(_) | Err(Errno::ENOENT) => {}
                        Err(e) => {
                            eprintln!("thread {t}: /m/d/../../m: {e:?}");
                            wrong.fetch_add(1, Ordering::Relaxed);
                        }
                    }
                    if n.is_multiple_of(64) {
                        fs::platform::get().rcu_quiescent_state();
                    }
                }
            }));
        }
        let (mut rounds, mut busy) = (0u64, 0u64);
        let t0 = std::time::Instant::now();
        while t0.elapsed().as_millis() < 300 {
            v.mount("tmpfs", b"/m", o).unwrap();
            v.mkdir(b"/m/d", 0o755).unwrap();
            v.write_file(b"/m/f", format!("round{rounds}").as_bytes())
                .unwrap();
            let mut in_a_row = 0;
            loop {
                match v.umount(b"/m") {
                    Ok(()) => break,
                    Err(Errno::EBUSY) => busy += 1,
                    Err(e) => panic!("{o}: umount: {e:?}"),
                }
                in_a_row += 1;
                if in_a_row == 50 {
                    pause.store(true, Ordering::Relaxed);
                }
                std::thread::yield_now();
            }
            pause.store(false, Ordering::Relaxed);
            rounds += 1;
            gone.store(rounds, Ordering::SeqCst);
        }
        stop.store(true, Ordering::Relaxed);
        for h in hs {
            h.join().unwrap();
        }
        println!("{o}: {rounds} mount rounds, umount busy {busy} times");
        assert_eq!(wrong.load(Ordering::Relaxed), 0, "{o}");
        assert_eq!(v.mount_count(), 1, "{o}");
        assert_eq!(v.leaked_mounts(), 0, "{o}");
        // Nothing reached the directory below.
        assert!(v.readdir(b"/m").unwrap().is_empty(), "{o}");
        assert!(rounds > 0);
    });
}
