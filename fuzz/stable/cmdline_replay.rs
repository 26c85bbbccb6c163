//! Stable replay of the `cmdline` fuzz target (the kernel command-line
//! parser): every file of `fuzz/corpus/cmdline/`, then 20,000 seeded
//! mutations, no panics. Lives here because the parser needs the `bench`
//! crate; wired into `make test` as a `bench` integration test:
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
