//! A removed directory keeps no cached names: what rmdir (or a rename
//! over a directory) leaves of it is a dead, unhashed dentry that nothing
//! can reach by a path, and nothing may be hashed under it afterwards.
//! Linux: `vfs_rmdir` and `vfs_rename` call `shrink_dcache_parent` on the
//! victim, and `__lookup_slow` answers ENOENT in a dead directory
//! (`IS_DEADDIR`) before it allocates anything there.
//!
//! What breaks the rule shows under the designs that cache negatives
//! (negative, negbound): a name looked up in the directory stays hashed
//! under the corpse, and keeps it from being freed until the shrinker
//! comes.
//!
//! Every test runs every ENOENT design of the registry; only some cache
//! negatives, the others pass by construction. Touches only the fs crate's
//! public API.

use std::cell::RefCell;
use std::rc::Rc;

use fs::dcache::{self, design, DRef};
use fs::errno::Errno;
use fs::fault::{arm_race, disarm_race, RacePoint};
use fs::namei::{self, LookupFlags};
use fs::vfs::Vfs;

fn each_design(test: &str, f: impl Fn(&str)) {
    let opts = design::mount_opts();
    for o in &opts {
        f(o);
    }
    design::say_ran(test, &opts);
}

/// The dentry `path` names now (a counted reference).
fn dentry(v: &Vfs, path: &[u8]) -> DRef {
    let lf = LookupFlags {
        follow: false,
        directory: false,
    };
    namei::resolve(v.mnt_ns(), path, lf).unwrap().1
}

/// No name is still hashed under the dead directory `d`.
fn nothing_hashed_under(d: &DRef, what: &str) {
    let names: Vec<String> = dcache::all_children(d)
        .into_iter()
        .filter(|c| c.is_hashed())
        .map(|c| String::from_utf8_lossy(&c.name.to_vec()).into_owned())
        .collect();
    assert!(names.is_empty(), "{what}: hashed under it: {names:?}");
}

/// rmdir of a directory in which missing names were looked up: none of
/// them stays cached under the dead directory.
#[test]
fn rmdir_leaves_no_cached_name_under_the_dead_directory() {
    each_design("dead_dir::rmdir_prunes", |o| {
        let v = Vfs::new_tmpfs(o).unwrap();
        v.mkdir(b"/d", 0o755).unwrap();
        for name in [&b"/d/x"[..], b"/d/y", b"/d/x"] {
            assert_eq!(v.stat(name).err(), Some(Errno::ENOENT), "{o}");
        }
        let d = dentry(&v, b"/d");
        v.rmdir(b"/d").unwrap();
        assert!(!d.is_hashed(), "{o}");
        nothing_hashed_under(&d, &format!("{o}: the removed /d"));
    });
}

/// The same for a directory renamed over: the target's cached names go
/// with it.
#[test]
fn rename_over_a_directory_leaves_no_cached_name_under_it() {
    each_design("dead_dir::rename_over_prunes", |o| {
        let v = Vfs::new_tmpfs(o).unwrap();
        v.mkdir(b"/x", 0o755).unwrap();
        v.mkdir(b"/t", 0o755).unwrap();
        assert_eq!(v.stat(b"/t/gone").err(), Some(Errno::ENOENT), "{o}");
        let t = dentry(&v, b"/t");
        v.rename(b"/x", b"/t").unwrap();
        nothing_hashed_under(&t, &format!("{o}: the old /t"));
    });
}

/// A walk that stands on `/d` and misses `x` reaches `lookup_slow`;
/// `rmdir("/d")` runs before it takes the directory's lock. The walk
/// answers ENOENT and hashes nothing under the dead directory.
#[test]
fn a_lookup_in_a_directory_removed_meanwhile_hashes_nothing_there() {
    each_design("dead_dir::lookup_slow_in_removed", |o| {
        let v = Rc::new(Vfs::new_tmpfs(o).unwrap());
        v.mkdir(b"/d", 0o755).unwrap();
        let d = dentry(&v, b"/d");
        let out = Rc::new(RefCell::new(None));
        let (o2, v2) = (out.clone(), v.clone());
        arm_race(RacePoint::LookupSlow, move || {
            *o2.borrow_mut() = Some(v2.rmdir(b"/d"))
        });
        let r = v.stat(b"/d/x");
        // noalloc answers a tmpfs miss without lookup_slow.
        let fired = !disarm_race();
        assert_eq!(r.err(), Some(Errno::ENOENT), "{o}: stat /d/x");
        if fired {
            assert_eq!(*out.borrow(), Some(Ok(())), "{o}: rmdir /d");
        } else {
            v.rmdir(b"/d").unwrap();
        }
        nothing_hashed_under(&d, &format!("{o}: the removed /d"));
    });
}
