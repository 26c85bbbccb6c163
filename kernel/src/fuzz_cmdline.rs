//! The command-line parser under fuzzing: [`harness`], the body that the
//! cargo-fuzz target `fuzz/fuzz_targets/cmdline.rs` runs through this
//! library's `fuzz` feature, and in the test build its stable replay
//! (`replay`: the committed corpus and seeded mutations). Built only for
//! the host (tests, or the `fuzz` feature); the kernel image has neither.

pub mod harness;

#[cfg(test)]
mod replay;
