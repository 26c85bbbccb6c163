//! cargo-fuzz target `cmdline`: the kernel command-line parser, included by
//! path from `kernel/src/` (pure code); the body lives in
//! `fs/tests/fuzz_harness/cmdline.rs`, shared with the stable replay.
#![no_main]

#[path = "../../kernel/src/smbargs.rs"]
#[allow(dead_code)]
mod smbargs;

#[path = "../../kernel/src/cmdline.rs"]
#[allow(dead_code)]
mod cmdline;

#[path = "../../fs/tests/fuzz_harness/cmdline.rs"]
mod harness;

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    harness::cmdline(data);
});
