//! cargo-fuzz target `smb_replies`: structure-aware, `arbitrary`-derived
//! reply sequences through `qemu::hostile`'s transport to the whole client;
//! the body lives in `fs/tests/fuzz_harness/replies.rs`, shared with the
//! stable replay test `fs/tests/fuzz_replay.rs`.
#![no_main]

#[path = "../../fs/tests/fuzz_harness/mod.rs"]
mod fuzz_harness;

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    fuzz_harness::run("smb_replies", data);
});
