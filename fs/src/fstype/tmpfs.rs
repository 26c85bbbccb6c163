//! tmpfs: a filesystem that lives entirely in the dcache.
//!
//! Every name is a dentry and every file an inode in memory, so the dcache
//! of a tmpfs directory is *complete*: the filesystem's own lookup has
//! nothing to add (Linux `simple_lookup`), which is what lets the noalloc
//! design answer a miss without asking anyone. The name-changing operations
//! are the generic ones in `vfs` (Linux's libfs `simple_*` helpers).
//!
//! Mount options: `enoent=D`, D a name of [`design::DESIGNS`] (default `noalloc`).
//!
//! Touches: nothing beyond creating its superblock and root.

use alloc::boxed::Box;
use alloc::sync::Arc;

use crate::dcache::{self, design, DRef};
use crate::errno::{Errno, KResult};
use crate::inode::{FsOps, Inode, SuperBlock};
use crate::mem;
use crate::types::FileType;

/// Default ENOENT design of a new tmpfs.
pub const DEFAULT_DESIGN: &str = "noalloc";

/// Parsed tmpfs options.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct TmpfsOpts {
    /// Index into [`design::DESIGNS`], if given.
    pub design: Option<usize>,
}

/// Parse `key=value,...`; unknown keys and bad values are EINVAL.
pub fn parse_opts(opts: &str) -> KResult<TmpfsOpts> {
    let mut o = TmpfsOpts::default();
    for word in opts.split(',').map(str::trim).filter(|w| !w.is_empty()) {
        match word.split_once('=') {
            Some(("enoent", v)) => o.design = Some(design::by_name(v).ok_or(Errno::EINVAL)?),
            _ => return Err(Errno::EINVAL),
        }
    }
    Ok(o)
}

struct Tmpfs;

impl FsOps for Tmpfs {
    fn fs_type(&self) -> &'static str {
        "tmpfs"
    }
    fn as_any(&self) -> &dyn core::any::Any {
        self
    }
    fn lookup(&self, _: &SuperBlock, _: &Inode, _: &[u8]) -> KResult<Option<Arc<Inode>>> {
        // Everything that exists is in the dcache already.
        Ok(None)
    }
    fn writable(&self) -> bool {
        true
    }
}

/// A new tmpfs superblock and its root dentry.
pub fn new_root(opts: &str) -> KResult<DRef> {
    let o = parse_opts(opts)?;
    let d = o
        .design
        .unwrap_or_else(|| design::by_name(DEFAULT_DESIGN).expect("default design exists"));
    // A mount under memory pressure fails like any other creation.
    mem::admit(mem::arc_size::<SuperBlock>())?;
    mem::admit(dcache::DENTRY_BYTES)?;
    let sb = Arc::new(SuperBlock::new(d, true, Box::new(Tmpfs)));
    let root = Inode::new_arc(sb.alloc_ino(), FileType::Dir, 0o1777, b"")?;
    Ok(dcache::d_alloc_root(sb, root))
}
