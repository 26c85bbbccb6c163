//! The user tools over the VFS: the vfsh engine ([`shell`]) and the
//! step-through page's scenarios ([`explore`]).
//!
//! Above the core (vfs, namei, dcache, trace), below the binaries
//! (`src/bin/vfsh.rs`, `src/bin/explore/`). Host only (`std`).

#[cfg(feature = "teaching")]
pub mod explore;
pub mod shell;
