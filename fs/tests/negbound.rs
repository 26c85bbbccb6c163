//! negbound's per-directory tally on a filesystem whose negatives expire
//! (issue #47, point 5): a counted negative dentry that a change's lookup
//! finds expired and the filesystem now knows must leave the tally when it
//! turns positive, or it is never forgotten there and, moved and killed
//! later, takes one from its new directory's tally (0 → `u64::MAX`).
//!
//! The filesystem is the tests' in-memory "server" behind the VFS's remote
//! path (`remote/mod.rs`): names change only through its answers, and
//! negatives expire when the test says so, as a cifs negative does after
//! `acdirmax`. Touches only the fs crate's public API.

use std::sync::atomic::Ordering;
use std::sync::Arc;

use fs::dcache::design;
use fs::errno::Errno;
use fs::namei::{self, LookupFlags};
use fs::types::FileType;
use fs::vfs::Vfs;

mod remote;
use remote::Server;

/// negbound's tally of the directory at `path` (its design word 0).
fn tally(v: &Vfs, path: &[u8]) -> u64 {
    let lf = LookupFlags {
        follow: true,
        directory: true,
    };
    let (_m, d) = namei::resolve(v.mnt_ns(), path, lf).unwrap();
    d.design_state.words[0].load(Ordering::Relaxed)
}

#[test]
fn a_counted_negative_made_positive_leaves_the_tally() {
    let negbound = design::by_name("negbound").unwrap();
    let server = Arc::new(Server::default());
    let root_ino = server.inode(FileType::Dir);
    let sub = server.inode(FileType::Dir);
    server.put(&root_ino, b"sub", &sub);
    let v = Vfs::new_tmpfs("enoent=negbound").unwrap();
    v.mkdir(b"/m", 0o755).unwrap();
    server.mount(&v, b"/m", negbound, &root_ino);

    // A miss: a negative dentry, kept and counted in /m's tally.
    assert_eq!(v.stat(b"/m/x").err(), Some(Errno::ENOENT));
    assert_eq!(tally(&v, b"/m"), 1, "the negative /m/x is counted");
    assert_eq!(tally(&v, b"/m/sub"), 0);

    // The server gains x behind our back; our negative expires.
    let x = server.inode(FileType::File);
    server.put(&root_ino, b"x", &x);
    server.expire_negatives();

    // rename's lookup asks the server, which knows x now: the negative
    // dentry turns positive and must leave /m's tally.
    v.rename(b"/m/x", b"/m/sub/x").unwrap();
    assert_eq!(
        tally(&v, b"/m"),
        0,
        "the negative turned positive is forgotten"
    );
    assert_eq!(v.stat(b"/m/sub/x").unwrap().ino, x.ino);

    // Killed in its new directory, it takes nothing from that tally.
    // (Its unlink's reference is the last: the dentry dies in unlink.
    // Not shrunk before we look: /m/sub's dentry is unpinned and unused,
    // and a fresh one would start from a zero tally.)
    v.unlink(b"/m/sub/x").unwrap();
    assert_eq!(tally(&v, b"/m/sub"), 0, "the new directory's tally");
    assert_eq!(tally(&v, b"/m"), 0);
}
