//! cargo-fuzz target `path_walk`: the body lives in the `fuzzharness` crate,
//! shared with the stable replay test `fs/tests/fuzz_replay.rs`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    fuzzharness::run("path_walk", data);
});
