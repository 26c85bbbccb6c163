//! negbound's per-directory tally on a filesystem whose negatives expire
//! (issue #47, point 5): a counted negative dentry that a change's lookup
//! finds expired and the filesystem now knows must leave the tally when it
//! turns positive, or it is never forgotten there and, moved and killed
//! later, takes one from its new directory's tally (0 → `u64::MAX`).
//!
//! The filesystem is a small in-memory "server" behind the VFS's remote
//! path (`FsOps::remote`): names change only through its answers, and
//! negatives expire when the test says so, as a cifs negative does after
//! `acdirmax`. Touches only the fs crate's public API.

use std::any::Any;
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use fs::dcache::{self, design};
use fs::errno::Errno;
use fs::inode::{FsOps, Inode, SuperBlock};
use fs::namei::{self, LookupFlags};
use fs::types::FileType;
use fs::vfs::Vfs;
use fs::KResult;

/// A name on the server: (directory inode number, name).
type Key = (u64, Vec<u8>);

/// The server: its names.
#[derive(Default)]
struct Server {
    names: Mutex<HashMap<Key, Arc<Inode>>>,
    next_ino: AtomicU64,
    /// Are negative answers still believed?
    negatives_valid: AtomicBool,
}

impl Server {
    fn inode(&self, kind: FileType) -> Arc<Inode> {
        let ino = 100 + self.next_ino.fetch_add(1, Ordering::Relaxed);
        Inode::new_arc(ino, kind, 0o755, b"").unwrap()
    }
}

struct Ops(Arc<Server>);

impl FsOps for Ops {
    fn fs_type(&self) -> &'static str {
        "testremote"
    }
    fn as_any(&self) -> &dyn Any {
        self
    }
    fn lookup(&self, _sb: &SuperBlock, dir: &Inode, name: &[u8]) -> KResult<Option<Arc<Inode>>> {
        let names = self.0.names.lock().unwrap();
        Ok(names.get(&(dir.ino, name.to_vec())).cloned())
    }
    fn writable(&self) -> bool {
        false
    }
    fn negative_valid(&self, _d_time_ms: u64) -> bool {
        self.0.negatives_valid.load(Ordering::Relaxed)
    }
    fn remote(&self) -> bool {
        true
    }
    fn create(
        &self,
        _sb: &SuperBlock,
        dir: &Inode,
        name: &[u8],
        kind: FileType,
        _mode: u32,
    ) -> KResult<Arc<Inode>> {
        let i = self.0.inode(kind);
        let mut names = self.0.names.lock().unwrap();
        if names.contains_key(&(dir.ino, name.to_vec())) {
            return Err(Errno::EEXIST);
        }
        names.insert((dir.ino, name.to_vec()), i.clone());
        Ok(i)
    }
    fn remove(&self, dir: &Inode, name: &[u8], _inode: &Inode) -> KResult<()> {
        let mut names = self.0.names.lock().unwrap();
        names
            .remove(&(dir.ino, name.to_vec()))
            .map(|_| ())
            .ok_or(Errno::ENOENT)
    }
    fn rename(
        &self,
        odir: &Inode,
        oname: &[u8],
        _inode: &Inode,
        ndir: &Inode,
        nname: &[u8],
    ) -> KResult<()> {
        let mut names = self.0.names.lock().unwrap();
        let i = names
            .remove(&(odir.ino, oname.to_vec()))
            .ok_or(Errno::ENOENT)?;
        names.insert((ndir.ino, nname.to_vec()), i);
        Ok(())
    }
}

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
    server.negatives_valid.store(true, Ordering::Relaxed);
    let root_ino = server.inode(FileType::Dir);
    let sub = server.inode(FileType::Dir);
    server
        .names
        .lock()
        .unwrap()
        .insert((root_ino.ino, b"sub".to_vec()), sub.clone());
    let sb = Arc::new(SuperBlock::new(
        negbound,
        false,
        Box::new(Ops(server.clone())),
    ));
    let v = Vfs::new_tmpfs("enoent=negbound").unwrap();
    v.mkdir(b"/m", 0o755).unwrap();
    v.mount_root(b"/m", dcache::d_alloc_root(sb, root_ino.clone()))
        .unwrap();

    // A miss: a negative dentry, kept and counted in /m's tally.
    assert_eq!(v.stat(b"/m/x").err(), Some(Errno::ENOENT));
    assert_eq!(tally(&v, b"/m"), 1, "the negative /m/x is counted");
    assert_eq!(tally(&v, b"/m/sub"), 0);

    // The server gains x behind our back; our negative expires.
    let x = server.inode(FileType::File);
    server
        .names
        .lock()
        .unwrap()
        .insert((root_ino.ino, b"x".to_vec()), x.clone());
    server.negatives_valid.store(false, Ordering::Relaxed);

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
