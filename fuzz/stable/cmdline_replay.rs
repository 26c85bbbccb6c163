//! Stable replay of the `cmdline` fuzz target (the kernel command-line
//! parser): every file of `fuzz/corpus/cmdline/`, then 20,000 seeded
//! mutations, no panics and no allocation (the kernel parses before its
//! heap exists; the harness forbids allocation around the parser). Lives
//! here because the parser is `bench::cmdline` (the kernel's tables are
//! included by path); wired into `make test` as a `bench` integration test:
//!
//! ```toml
//! [[test]]
//! name = "fuzz_cmdline"
//! path = "../fuzz/stable/cmdline_replay.rs"
//! ```
//!
//! Reads only `fuzz/corpus/cmdline/`.

#[path = "../../kernel/src/smbargs.rs"]
#[allow(dead_code)]
mod smbargs;

#[path = "../../kernel/src/cmdline.rs"]
#[allow(dead_code)]
mod cmdline;

#[path = "../../fs/tests/fuzz_harness/cmdline.rs"]
mod harness;

#[path = "../../fs/tests/fuzz_harness/mutate.rs"]
mod mutate;

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
