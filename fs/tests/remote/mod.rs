//! A remote filesystem for the integration tests: a small in-memory
//! "server" behind the VFS's remote path (`FsOps::remote`). Names change
//! only through its answers, as on a server that knows a directory by its
//! handle (its inode number); its negatives stay valid until the test
//! expires them, as a cifs negative does after `acdirmax`.
//!
//! Touches only the fs crate's public API.

use std::any::Any;
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use fs::dcache;
use fs::errno::Errno;
use fs::inode::{FsOps, Inode, SuperBlock};
use fs::types::FileType;
use fs::vfs::Vfs;
use fs::KResult;

/// A name on the server: (directory inode number, name).
type Key = (u64, Vec<u8>);

/// The server: its names, and whether the client may still believe its
/// negative answers.
#[derive(Default)]
pub struct Server {
    names: Mutex<HashMap<Key, Arc<Inode>>>,
    next_ino: AtomicU64,
    negatives_expired: AtomicBool,
}

#[allow(dead_code)] // each test file uses its own part of the server
impl Server {
    /// A new inode of `kind` with the next free number (from 100 up).
    pub fn inode(&self, kind: FileType) -> Arc<Inode> {
        let ino = 100 + self.next_ino.fetch_add(1, Ordering::Relaxed);
        Inode::new_arc(ino, kind, 0o755, b"").unwrap()
    }

    /// `name` in `dir` is `i` now, behind the client's back.
    pub fn put(&self, dir: &Inode, name: &[u8], i: &Arc<Inode>) {
        let mut names = self.names.lock().unwrap();
        names.insert((dir.ino, name.to_vec()), i.clone());
    }

    /// Does the server hold `name` in `dir`?
    pub fn has(&self, dir: &Inode, name: &[u8]) -> bool {
        let names = self.names.lock().unwrap();
        names.contains_key(&(dir.ino, name.to_vec()))
    }

    /// From now on the client's negative dentries are out of date: the walk
    /// drops them and asks again.
    pub fn expire_negatives(&self) {
        self.negatives_expired.store(true, Ordering::Relaxed);
    }

    /// Mount the server's directory `root` at `at` (a directory of `v`),
    /// under the ENOENT design numbered `design`.
    pub fn mount(self: &Arc<Self>, v: &Vfs, at: &[u8], design: usize, root: &Arc<Inode>) {
        let sb = Arc::new(SuperBlock::new(
            design,
            false,
            Box::new(Remote(self.clone())),
        ));
        v.mount_root(at, dcache::d_alloc_root(sb, root.clone()))
            .unwrap();
    }
}

/// The client side: the `FsOps` that ask the [`Server`].
struct Remote(Arc<Server>);

impl FsOps for Remote {
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
        !self.0.negatives_expired.load(Ordering::Relaxed)
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
