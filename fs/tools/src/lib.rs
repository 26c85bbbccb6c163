//! The user tools over the `fs` crate's VFS: the vfsh engine ([`shell`])
//! and the step-through page's scenarios ([`explore`]).
//!
//! A crate of its own above `fs` (which knows nothing of it), below the
//! binaries (`src/bin/vfsh.rs`, `src/bin/explore/`). It drives the VFS
//! through `fs::vfs::Vfs` and reads what the walk emits (`fs::trace`'s
//! lines, `fs::walk_event`'s steps, `fs::stats`' counters). Host only.

#[cfg(feature = "teaching")]
pub mod explore;
pub mod shell;
