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
use std::sync::Arc;

use fs::dcache::{self, design, DRef};
use fs::errno::Errno;
use fs::fault::{arm_race, disarm_race, RacePoint};
use fs::inode::Inode;
use fs::namei::{self, LookupFlags};
use fs::types::FileType;
use fs::vfs::Vfs;

mod remote;
use remote::Server;

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

/// On a remote filesystem, `rmdir("/m/t/e")` looked `/m/t` up; before it
/// locks it, `rename("/m/x", "/m/t")` kills that directory, and the server
/// gives the dead directory's number (its handle) to a new directory
/// `/m/z` holding an `e`, as servers that reuse inode numbers do. Linux
/// answers ENOENT (`lookup_one_qstr_excl`'s `IS_DEADDIR`) and never asks
/// the server about a dead directory. An rmdir that asked removed
/// `/m/z/e`, a name the caller never gave, under no order of the two
/// calls. (cifs asks by the path the dead inode still carries, `t`: there
/// the answer is the new `/m/t`'s, which an rmdir ordered after the rename
/// may remove, and asking costs a round trip for a directory that is gone.)
#[test]
fn a_change_in_a_remote_directory_removed_meanwhile_is_enoent() {
    each_design("dead_dir::remote_change_in_removed", |o| {
        let server = Arc::new(Server::default());
        let root = server.inode(FileType::Dir);
        let (t, x) = (server.inode(FileType::Dir), server.inode(FileType::Dir));
        server.put(&root, b"t", &t);
        server.put(&root, b"x", &x);
        let idx = design::by_name(o.trim_start_matches("enoent=")).unwrap();
        let v = Rc::new(Vfs::new_tmpfs(o).unwrap());
        v.mkdir(b"/m", 0o755).unwrap();
        server.mount(&v, b"/m", idx, &root);

        let out = Rc::new(RefCell::new(None));
        // The old t's number, given again to a new directory.
        let z = Inode::new_arc(t.ino, FileType::Dir, 0o755, b"").unwrap();
        let (o2, v2, s2, r2, z2) = (
            out.clone(),
            v.clone(),
            server.clone(),
            root.clone(),
            z.clone(),
        );
        arm_race(RacePoint::Rmdir, move || {
            let r = v2.rename(b"/m/x", b"/m/t");
            s2.put(&r2, b"z", &z2);
            s2.put(&z2, b"e", &s2.inode(FileType::Dir));
            *o2.borrow_mut() = Some(r);
        });
        let r = v.rmdir(b"/m/t/e");
        assert!(!disarm_race(), "{o}: the race point was not reached");
        assert_eq!(*out.borrow(), Some(Ok(())), "{o}: rename /m/x /m/t");
        assert_eq!(r, Err(Errno::ENOENT), "{o}: rmdir in the dead /m/t");
        assert!(server.has(&z, b"e"), "{o}: rmdir removed /m/z/e");
        assert!(v.stat(b"/m/z/e").is_ok(), "{o}: /m/z/e");
    });
}
