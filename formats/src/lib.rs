//! The text formats results travel in, shared by whoever writes them and
//! whoever reads them back: the guest's and host mode's benchmark driver
//! (`bench`), the Linux reference guest's runner (`qemu`), the lab's
//! sweep and report (`benchlab`).
//!
//! - [`output`]: will-it-scale's output format, written and parsed (the
//!   one parser, for our runs and Linux's alike).
//! - [`markdown`]: the one markdown table writer (report, predict, the
//!   Linux reference).
//!
//! A leaf: it depends on nothing of the workspace, so both the crates that
//! make results and the crates that launch and read them stand above it.
//! `no_std + alloc`, safe code only.
#![no_std]
#![forbid(unsafe_code)]

extern crate alloc;

pub mod markdown;
pub mod output;
