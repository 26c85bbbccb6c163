//! The filesystem types, side by side as in Linux's `fs/<type>/`: each
//! builds a superblock and a root dentry and answers the inode operations
//! ([`crate::inode::FsOps`]) the VFS calls.
//!
//! - [`tmpfs`]: memory only; names live in the dcache (Linux's `shmem`).
//! - [`cifs`]: an SMB2/3 share (Linux's `fs/smb/client`), over the `smb`
//!   protocol crate.
//!
//! They reach the core (`inode`, `dcache`, `mount`, `types`), never the
//! path API (`vfs`).

pub mod cifs;
pub mod tmpfs;
