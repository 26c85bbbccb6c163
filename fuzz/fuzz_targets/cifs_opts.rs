//! cargo-fuzz target `cifs_opts`: the body lives in `fs/tests/fuzz_harness/mod.rs`,
//! shared with the stable replay test `fs/tests/fuzz_replay.rs`.
#![no_main]

#[path = "../../fs/tests/fuzz_harness/mod.rs"]
mod fuzz_harness;

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    fuzz_harness::run("cifs_opts", data);
});
