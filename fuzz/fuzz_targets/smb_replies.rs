//! cargo-fuzz target `smb_replies`: structure-aware, `arbitrary`-derived
//! reply sequences through `qemu::hostile`'s transport to the whole client;
//! the body lives in the `fuzzharness` crate (`replies.rs`), shared with the
//! stable replay test `fs/tests/fuzz_replay.rs`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    fuzzharness::run("smb_replies", data);
});
