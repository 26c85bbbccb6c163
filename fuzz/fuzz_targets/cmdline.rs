//! cargo-fuzz target `cmdline`: the kernel command-line parser; the body
//! lives in the kernel's library (`kernel::fuzz_cmdline::harness`, its
//! `fuzz` feature), shared with the stable replay
//! `kernel/src/fuzz_cmdline/replay.rs`.
#![no_main]

use kernel::fuzz_cmdline::harness;

// The harness counts allocations through this allocator: the kernel parses
// before its heap exists, so an allocation in parsing fails the input.
#[global_allocator]
static NO_ALLOC_CHECK: assert_no_alloc::AllocDisabler = assert_no_alloc::AllocDisabler;

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    harness::cmdline(data);
});
