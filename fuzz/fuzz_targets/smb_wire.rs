//! cargo-fuzz target `smb_wire`: the body lives in the `fuzzharness` crate,
//! shared with the stable replay test `fs/tests/fuzz_replay.rs`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    fuzzharness::run("smb_wire", data);
});
