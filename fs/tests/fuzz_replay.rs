//! The fuzz harnesses on stable: replays every committed corpus file of
//! every target (`fuzz/corpus/<target>/*`) through the harness bodies that
//! the cargo-fuzz targets use (`fs/tests/fuzz_harness/mod.rs`), then runs a
//! bounded, seeded mutation campaign per target (no panics, no aborts).
//!
//! The seed corpus is generated from the Samba captures in
//! `fs/src/smb/wire/testdata/` and hand-written path/cmdline cases by the
//! ignored test `write_seed_corpus` (`cargo test --release -p fs --test
//! fuzz_replay -- --ignored write_seed_corpus`). Reads only `fuzz/corpus/`
//! and the testdata files; writes only with that ignored test.

mod fuzz_harness;

use fuzz_harness::mutate::{hex, mutate, Rng};
use fuzz_harness::{conn_opt, ctl, encode_script, TARGETS};
use std::path::{Path, PathBuf};

/// Mutated executions per target in `mutations_never_panic` (the smb_conn
/// harness runs a whole client, so it gets fewer).
const MUTATIONS: u64 = 20_000;
const MUTATIONS_CONN: u64 = 20_000;

fn corpus_dir(target: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../fuzz/corpus")
        .join(target)
}

fn testdata(name: &str) -> Vec<Vec<u8>> {
    let p = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("src/smb/wire/testdata")
        .join(name);
    fuzz_harness::capture_frames(&std::fs::read(p).unwrap())
}

/// Replies of a capture (every second frame).
fn replies(name: &str) -> Vec<Vec<u8>> {
    testdata(name).into_iter().skip(1).step_by(2).collect()
}

fn corpus(target: &str) -> Vec<(String, Vec<u8>)> {
    let mut v: Vec<_> = std::fs::read_dir(corpus_dir(target))
        .unwrap_or_else(|e| panic!("corpus of {target}: {e}"))
        .map(|e| e.unwrap().path())
        .filter(|p| p.is_file())
        .map(|p| {
            let name = p.file_name().unwrap().to_string_lossy().into_owned();
            (name, std::fs::read(&p).unwrap())
        })
        .collect();
    v.sort();
    v
}

/// Runs one input; on a panic prints the target and the input in hex, then
/// fails the test.
fn run_checked(target: &str, what: &str, data: &[u8]) {
    let r = std::panic::catch_unwind(|| fuzz_harness::run(target, data));
    if r.is_err() {
        panic!(
            "harness {target} panicked on {what}; input ({} bytes) = {}",
            data.len(),
            hex(data)
        );
    }
}

#[test]
fn corpus_replays_without_panics() {
    let mut total = 0;
    for t in TARGETS {
        let c = corpus(t);
        assert!(!c.is_empty(), "empty corpus for {t}");
        for (name, data) in &c {
            run_checked(t, name, data);
        }
        println!("fuzz_replay corpus target={t} files={}", c.len());
        total += c.len();
    }
    println!("fuzz_replay corpus files={total}");
}

/// The seeds are not dead weight: the 2.1 and 3.0.2 scripts built from
/// real Samba replies get through the handshake, the listing, the stat and
/// the EA query of the fake-server client.
#[test]
fn conn_seeds_reach_the_operations() {
    for (name, data) in corpus("smb_conn") {
        if name.starts_with("seed-full-") {
            let depth = fuzz_harness::smb_conn(&data);
            assert_eq!(depth, 4, "{name}: connect+list+stat+ea, got {depth}");
        }
    }
}

#[test]
fn mutations_never_panic() {
    let t0 = std::time::Instant::now();
    let mut total = 0u64;
    for (ti, t) in TARGETS.iter().enumerate() {
        let seeds: Vec<Vec<u8>> = corpus(t).into_iter().map(|(_, d)| d).collect();
        let n = if *t == "smb_conn" {
            MUTATIONS_CONN
        } else {
            MUTATIONS
        };
        let mut rng = Rng::new(ti as u64 + 1);
        let t1 = std::time::Instant::now();
        for i in 0..n {
            let mut d = seeds[rng.below(seeds.len())].clone();
            let other = &seeds[rng.below(seeds.len())];
            mutate(&mut rng, &mut d, other);
            run_checked(t, &format!("mutation {i}"), &d);
        }
        println!(
            "fuzz_replay mutations target={t} executions={n} secs={:.2}",
            t1.elapsed().as_secs_f64()
        );
        total += n;
    }
    println!(
        "fuzz_replay mutations executions={total} crashes=0 secs={:.2}",
        t0.elapsed().as_secs_f64()
    );
}

// ------------------------------------------------------------ seed corpus

fn seeds_smb_wire() -> Vec<(String, Vec<u8>)> {
    let mut out = Vec::new();
    for cap in [
        "smb311_handshake",
        "smb302_handshake",
        "smb210_handshake",
        "smb311_list",
        "smb311_stat",
        "smb311_ea_present",
        "smb311_ea_absent",
    ] {
        for (i, r) in replies(&format!("{cap}.frames")).into_iter().enumerate() {
            out.push((format!("seed-{cap}-reply{i}"), r));
        }
    }
    out
}

fn seeds_ntlm() -> Vec<(String, Vec<u8>)> {
    use fs::smb::wire::session::SessionSetupResponse;
    let mut out = Vec::new();
    for cap in ["smb311_handshake", "smb302_handshake", "smb210_handshake"] {
        let r = &replies(&format!("{cap}.frames"))[1];
        let tok = SessionSetupResponse::parse(r).unwrap().token.to_vec();
        out.push((format!("seed-{cap}-challenge"), tok));
    }
    out
}

fn seeds_smb_conn() -> Vec<(String, Vec<u8>)> {
    let fx = ctl::FIXUP | ctl::UNSIGN;
    let ops: Vec<Vec<u8>> = ["smb311_list", "smb311_stat", "smb311_ea_present"]
        .iter()
        .flat_map(|c| replies(&format!("{c}.frames")))
        .collect();
    let mut out = Vec::new();
    for (cap, opt) in [
        ("smb210_handshake", conn_opt::ONLY_21),
        ("smb302_handshake", conn_opt::ONLY_302),
        ("smb311_handshake", 0),
    ] {
        let hs = replies(&format!("{cap}.frames"));
        // Handshake only.
        let recs: Vec<(u8, &[u8])> = hs.iter().map(|r| (fx, &r[..])).collect();
        out.push((format!("seed-hs-{cap}"), encode_script(opt, &recs)));
        if opt == 0 {
            continue; // 3.1.1 needs a signed SESSION_SETUP reply
        }
        // Handshake, then the operations.
        let recs: Vec<(u8, &[u8])> = hs.iter().chain(&ops).map(|r| (fx, &r[..])).collect();
        out.push((format!("seed-full-{cap}"), encode_script(opt, &recs)));
        // A drop in the middle of the listing, then everything again.
        let mut recs: Vec<(u8, &[u8])> = hs.iter().map(|r| (fx, &r[..])).collect();
        recs.push((ctl::DROP, &[]));
        recs.extend(hs.iter().chain(&ops).map(|r| (fx, &r[..])));
        out.push((format!("seed-drop-{cap}"), encode_script(opt, &recs)));
    }
    out
}

fn path_seq(design: u8, ops: &[(u8, &[&[u8]])]) -> Vec<u8> {
    let mut v = vec![design];
    for (op, args) in ops {
        v.push(*op);
        for a in *args {
            v.push(a.len() as u8);
            v.extend_from_slice(a);
        }
    }
    v
}

fn seeds_path_walk() -> Vec<(String, Vec<u8>)> {
    let long = vec![b'n'; 255];
    let long_arg: [&[u8]; 1] = [&long];
    let ops: Vec<(u8, &[&[u8]])> = vec![
        (0, &[b"/a/b/f"]),
        (0, &[b"/a/l"]),
        (1, &[b"/a/l/"]),
        (0, &[b"/a/./b/../b/f"]),
        (0, &[b"////a//b///f"]),
        (0, &[b"/a/b/f/x"]),
        (0, &[b"/loop"]),
        (0, &[b"/../../a/missing"]),
        (0, &[b""]),
        (0, &[b"a/b"]),
        (0, &long_arg),
        (2, &[b"/a/n"]),
        (5, &[b"/a/n", b"/a/b/m"]),
        (6, &[b"/s", b"../a/./l"]),
        (0, &[b"/s"]),
        (9, &[b"/a/w"]),
        (10, &[b"/a/l"]),
        (11, &[b"/a/x", &[0o300, 0, 0, 0]]),
        (8, &[b"/a"]),
        (7, &[b"/a/l"]),
        (12, &[b"a\0b"]),
        (13, &[b"/a/b/"]),
        (14, &[b"/a/b"]),
        (0, &[b"/a/b/f"]),
        (3, &[b"/a/w"]),
        (4, &[b"/a/b"]),
        (15, &[b"/"]),
    ];
    (0..3u8)
        .map(|d| (format!("seed-ops-design{d}"), path_seq(d, &ops)))
        .collect()
}

fn seeds_cmdline() -> Vec<(String, Vec<u8>)> {
    [
        "",
        "selftest",
        "selftest log=debug hz=250 crash=ud",
        "log=trace smp_timeout=100",
        "hz=",
        "=x",
        "hz=99999999999999999999",
        "selftest selftest",
        "selftest=1",
        "crash=stackoverflow-ap",
        "? unknown",
    ]
    .iter()
    .enumerate()
    .map(|(i, s)| (format!("seed-{i}"), s.as_bytes().to_vec()))
    .chain([("seed-not-utf8".to_string(), b"hz=\xff\xfe".to_vec())])
    .collect()
}

/// Regenerates the committed seed files (`seed-*`; crash reproducers and
/// other files are left alone).
#[test]
#[ignore]
fn write_seed_corpus() {
    for (t, seeds) in [
        ("smb_wire", seeds_smb_wire()),
        ("smb_conn", seeds_smb_conn()),
        ("ntlm", seeds_ntlm()),
        ("path_walk", seeds_path_walk()),
        ("cmdline", seeds_cmdline()),
    ] {
        let dir = corpus_dir(t);
        std::fs::create_dir_all(&dir).unwrap();
        for (name, data) in &seeds {
            std::fs::write(dir.join(name), data).unwrap();
        }
        println!("{t}: {} seeds", seeds.len());
    }
}
