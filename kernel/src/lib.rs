//! The kernel's hardware-free modules, also built for the host so their unit
//! tests run with `cargo test -p kernel --lib`: the command-line parser,
//! the demo's table and the random source's sanity rules; and, in the test
//! build or with the `fuzz` feature only, the command-line parser's fuzz
//! harness and its replay (`fuzz_cmdline`). The bootable kernel is the
//! `kernel` binary (`main.rs`), which uses this library.
#![cfg_attr(not(any(test, feature = "fuzz")), no_std)]
#![deny(unsafe_code)]

pub mod cmdline;
pub mod demotable;
pub mod randcheck;
pub mod smbargs;

#[cfg(any(test, feature = "fuzz"))]
pub mod fuzz_cmdline;
