//! Stable replay of the `cmdline` fuzz target (the kernel command-line
//! parser, `kernel::cmdline` over `bench::cmdline`): every file of the
//! target's cargo-fuzz corpus, then 20,000 seeded mutations, no panics and
//! no allocation (the kernel parses before its heap exists; the harness,
//! `harness.rs` beside this file, forbids allocation around the parser). A unit
//! test of the library that owns the parser's key tables (`cargo test -p
//! kernel --lib`, which `make test-host` runs): an integration test would
//! make cargo build the `kernel` binary for the host, where it cannot link.
//!
//! Reads only `fuzz/corpus/cmdline/`, the one folder read outside this crate,
//! on purpose: every fuzz target's corpus lives under `fuzz/corpus/`, where
//! libFuzzer grows it and `fuzz/.gitignore` keeps the seeds, and the stable
//! replays (this one, `fs/tests/fuzz_replay.rs`) read the corpus the fuzzer
//! runs from rather than a copy that would drift from it.

use super::harness;
use crate::cmdline;

// The harness counts allocations through this allocator; the test binary
// installs it, as the cargo-fuzz target does.
#[global_allocator]
static NO_ALLOC_CHECK: assert_no_alloc::AllocDisabler = assert_no_alloc::AllocDisabler;

use fuzzmutate as mutate;
use std::path::Path;

const MUTATIONS: u64 = 20_000;

fn run_checked(what: &str, data: &[u8]) {
    if std::panic::catch_unwind(|| harness::cmdline(data)).is_err() {
        panic!(
            "cmdline harness panicked on {what}; input = {}",
            mutate::hex(data)
        );
    }
}

#[test]
fn the_harness_sees_an_allocation() {
    assert!(harness::allocation_is_detected() >= 1);
}

/// The words that panicked the kernel before its heap existed (issue 13):
/// each is refused, and neither parsing nor the message allocates.
#[test]
fn issue13_bad_benchmark_words_parse_without_a_heap() {
    for line in [
        "bench=statneg tasks=999999",
        "bench=statneg secs=-1",
        "bench=statneg tasks=0",
        "bench=statneg design=NOALLOC",
        "bench=statneg warmup=3601",
        "stress=rcu secs=3601",
        "bench=statneg bench=statneg",
        "bench=statneg cpus=2",
        "tasks=2",
    ] {
        assert!(cmdline::parse(line).is_err(), "{line}");
        run_checked(line, line.as_bytes());
    }
}

#[test]
fn cmdline_corpus_and_mutations_never_panic() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../fuzz/corpus/cmdline");
    let mut seeds = Vec::new();
    for e in std::fs::read_dir(&dir).unwrap() {
        let p = e.unwrap().path();
        let d = std::fs::read(&p).unwrap();
        run_checked(&p.display().to_string(), &d);
        seeds.push(d);
    }
    assert!(!seeds.is_empty(), "empty corpus {}", dir.display());
    seeds.sort();
    let t = std::time::Instant::now();
    let mut rng = mutate::Rng::new(0xc0de);
    for i in 0..MUTATIONS {
        let mut d = seeds[rng.below(seeds.len())].clone();
        let other = &seeds[rng.below(seeds.len())];
        mutate::mutate(&mut rng, &mut d, other);
        run_checked(&format!("mutation {i}"), &d);
    }
    println!(
        "fuzz_replay cmdline corpus={} mutations={MUTATIONS} crashes=0 secs={:.2}",
        seeds.len(),
        t.elapsed().as_secs_f64()
    );
}
