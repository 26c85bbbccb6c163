//! cargo-fuzz target `cmdline`: the kernel command-line parser, included by
//! path from `kernel/src/` (pure code); the body lives in
//! `kernel/src/fuzz_cmdline/harness.rs`, shared with the stable replay
//! `kernel/src/fuzz_cmdline.rs`.
#![no_main]

#[path = "../../kernel/src/smbargs.rs"]
#[allow(dead_code)]
mod smbargs;

#[path = "../../kernel/src/cmdline.rs"]
#[allow(dead_code)]
mod cmdline;

#[path = "../../kernel/src/fuzz_cmdline/harness.rs"]
mod harness;

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    harness::cmdline(data);
});
