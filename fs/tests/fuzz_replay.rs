//! The fuzz harnesses on stable: replays every committed corpus file of
//! every target (`fuzz/corpus/<target>/*`) through the harness bodies that
//! the cargo-fuzz targets use (the `fuzzharness` crate), then runs a
//! bounded, seeded mutation campaign per target (no panics, no aborts).
//!
//! The seed corpus is generated from the Samba captures in
//! `fs/smb/src/wire/testdata/` and hand-written path/cmdline cases by the
//! ignored test `write_seed_corpus` (`cargo test --release -p fs --test
//! fuzz_replay -- --ignored write_seed_corpus`). Reads only `fuzz/corpus/`
//! and the testdata files; writes only with that ignored test.

use fuzzharness::mutate::{hex, mutate, Rng};
use fuzzharness::{conn_opt, ctl, encode_script, TARGETS};
use std::path::{Path, PathBuf};

/// Mutated executions per target in `mutations_never_panic` (smb_replies
/// mounts a whole client per run, so it gets fewer; cargo-fuzz runs it
/// for longer).
const MUTATIONS: u64 = 20_000;
const MUTATIONS_CONN: u64 = 20_000;
const MUTATIONS_REPLIES: u64 = 2_000;

fn corpus_dir(target: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../fuzz/corpus")
        .join(target)
}

fn testdata(name: &str) -> Vec<Vec<u8>> {
    let p = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("smb/src/wire/testdata")
        .join(name);
    fuzzharness::capture_frames(&std::fs::read(p).unwrap())
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
    let r = std::panic::catch_unwind(|| fuzzharness::run(target, data));
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

/// The seeds are not dead weight: the 2.1 script built from real Samba
/// replies gets through the handshake, the listing, the stat and the EA
/// query of the fake-server client. The 3.0.2 one stops at the handshake:
/// the scripted server cannot sign the FSCTL_VALIDATE_NEGOTIATE_INFO
/// answer (its captured keys are not this client's), and a 3.0.2 session
/// without a valid one is refused, as Linux refuses it.
/// The path-walk ops of the seed corpus on every design of the registry
/// (`data[0]` picks the design).
#[test]
fn path_walk_runs_every_design() {
    let (_, ops) = seeds_path_walk()
        .into_iter()
        .next()
        .expect("a path_walk seed");
    let n = fs::dcache::design::DESIGNS.len();
    for d in 0..n {
        let mut data = ops.clone();
        data[0] = d as u8;
        fuzzharness::path_walk(&data);
    }
    fs::dcache::design::say_ran(
        "fuzz_replay::path_walk_runs_every_design",
        &fs::dcache::design::mount_opts(),
    );
}

#[test]
fn conn_seeds_reach_the_operations() {
    for (name, data) in corpus("smb_conn") {
        let want = if name.contains("smb302") { 0 } else { 4 };
        if name.starts_with("seed-full-") || name.starts_with("seed-forever-") {
            let depth = fuzzharness::smb_conn(&data);
            assert_eq!(depth, want, "{name}: connect+list+stat+ea, got {depth}");
        }
    }
}

#[test]
fn mutations_never_panic() {
    let t0 = std::time::Instant::now();
    let mut total = 0u64;
    for (ti, t) in TARGETS.iter().enumerate() {
        let seeds: Vec<Vec<u8>> = corpus(t).into_iter().map(|(_, d)| d).collect();
        let n = match *t {
            "smb_conn" => MUTATIONS_CONN,
            "smb_replies" => MUTATIONS_REPLIES,
            _ => MUTATIONS,
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

/// A longer random campaign on stable, where cargo-fuzz is not installed:
/// `FUZZ_SECS` seconds (default 60) of seeded mutations per target in
/// `FUZZ_TARGETS` (comma-separated; default all), each input watched: one
/// that runs longer than `FUZZ_HANG_SECS` (default 20) fails as a hang
/// with its bytes. Prints `fuzz_campaign target=T executions=N secs=S
/// execs_per_s=R crashes=0 hangs=0 slowest_ms=M`. Ignored in `make test`
/// (run it with `-- --ignored fuzz_campaign`).
#[test]
#[ignore]
fn fuzz_campaign() {
    use std::sync::atomic::{AtomicU64, Ordering};
    use std::sync::{Arc, Mutex};
    let secs: u64 = std::env::var("FUZZ_SECS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(60);
    let hang: u64 = std::env::var("FUZZ_HANG_SECS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(20);
    let only = std::env::var("FUZZ_TARGETS").unwrap_or_default();
    for (ti, t) in TARGETS.iter().enumerate() {
        if !only.is_empty() && !only.split(',').any(|o| o == *t) {
            continue;
        }
        let seeds: Vec<Vec<u8>> = corpus(t).into_iter().map(|(_, d)| d).collect();
        let started = std::time::Instant::now();
        let progress = Arc::new(AtomicU64::new(0));
        let current = Arc::new(Mutex::new(Vec::new()));
        let slowest = Arc::new(AtomicU64::new(0));
        let worker = {
            let (progress, current, slowest) = (progress.clone(), current.clone(), slowest.clone());
            let t = t.to_string();
            std::thread::spawn(move || {
                let mut rng = Rng::new(0x5eed + ti as u64);
                let mut n = 0u64;
                while started.elapsed().as_secs() < secs {
                    let mut d = seeds[rng.below(seeds.len())].clone();
                    let other = &seeds[rng.below(seeds.len())];
                    mutate(&mut rng, &mut d, other);
                    *current.lock().unwrap() = d.clone();
                    let t0 = std::time::Instant::now();
                    run_checked(&t, &format!("campaign input {n}"), &d);
                    slowest.fetch_max(t0.elapsed().as_millis() as u64, Ordering::Relaxed);
                    n += 1;
                    progress.store(n, Ordering::Relaxed);
                }
                n
            })
        };
        let mut last = (0u64, std::time::Instant::now());
        while !worker.is_finished() {
            std::thread::sleep(std::time::Duration::from_millis(200));
            let p = progress.load(Ordering::Relaxed);
            if p != last.0 {
                last = (p, std::time::Instant::now());
            } else if last.1.elapsed().as_secs() > hang {
                panic!(
                    "fuzz_campaign target={t}: input hung > {hang} s: {}",
                    hex(&current.lock().unwrap())
                );
            }
        }
        let n = worker
            .join()
            .expect("campaign worker (a crash is printed above)");
        let el = started.elapsed().as_secs_f64();
        println!(
            "fuzz_campaign target={t} executions={n} secs={el:.1} execs_per_s={:.0} crashes=0 hangs=0 slowest_ms={}",
            n as f64 / el,
            slowest.load(Ordering::Relaxed)
        );
    }
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
    use smb::wire::session::SessionSetupResponse;
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

/// The 2.1 and 3.0.2 full scripts again with the server answering
/// forever (the script starts over when it runs out).
fn seeds_smb_conn_forever() -> Vec<(String, Vec<u8>)> {
    seeds_smb_conn()
        .into_iter()
        .filter(|(n, _)| n.starts_with("seed-full-"))
        .map(|(n, mut d)| {
            d[0] |= conn_opt::FOREVER;
            (n.replace("seed-full-", "seed-forever-"), d)
        })
        .collect()
}

/// Sealed frames (raw mode) and plaintexts for the seal-then-open mode,
/// from the captured replies.
fn seeds_smb_transform() -> Vec<(String, Vec<u8>)> {
    use smb::crypto::{Cipher, Sealer};
    let plains: Vec<Vec<u8>> = ["smb311_list", "smb311_stat"]
        .iter()
        .flat_map(|c| replies(&format!("{c}.frames")))
        .collect();
    let mut out = Vec::new();
    for (i, p) in plains.iter().enumerate() {
        for sel in [8u8, 8 | 4, 8 | 4 | 1] {
            let mut d = vec![sel, 0, 0, 0];
            d.extend_from_slice(p);
            out.push((format!("seed-seal{sel}-{i}"), d));
        }
        // Raw: what the 3.0 client sealer would receive from its server.
        let key = [0x5au8; 16];
        let enc = smb::crypto::kdf(&key, b"SMB2AESCCM\0", b"ServerIn \0");
        let dec = smb::crypto::kdf(&key, b"SMB2AESCCM\0", b"ServerOut\0");
        let mut server =
            Sealer::with_keys(Cipher::Aes128Ccm, &dec, &enc, 0x1122_3344_5566_7788, [9; 4]);
        let mut d = vec![0u8];
        d.extend_from_slice(&server.seal(p));
        out.push((format!("seed-raw-{i}"), d));
    }
    out
}

fn seeds_cifs_opts() -> Vec<(String, Vec<u8>)> {
    [
        "username=u,password=p",
        "username=u,password=p,vers=3,seal",
        "vers=3.1.1,cache=strict,upcall_target=app,uid=5000,forceuid,gid=5000,forcegid,\
file_mode=0664,dir_mode=0775,iocharset=utf8,soft,nounix,mapposix,reparse=nfs,nativesocket,\
symlink=native,rsize=4194304,wsize=4194304,acdirmax=300,acregmax=30",
        "username=u,password=p,mapchars,actimeo=0,wslea=easize,sign",
        "vers=2.0,nomapposix,noserverino,rsize=1,wsize=0",
        "vers=9,frob=1,=,,,",
        "unix,username=",
    ]
    .iter()
    .enumerate()
    .map(|(i, s)| (format!("seed-{i}"), s.as_bytes().to_vec()))
    .collect()
}

/// The captured listing's records, and hand-made ones holding names a
/// directory may not.
fn seeds_cifs_listing() -> Vec<(String, Vec<u8>)> {
    use qemu::hostile::wire::{dir_records, utf16};
    use smb::wire::query::OutputResponse;
    let mut out = Vec::new();
    for r in replies("smb311_list.frames") {
        if let Ok(o) = OutputResponse::parse(&r) {
            for m in 0..3u8 {
                let mut d = vec![m];
                d.extend_from_slice(o.data);
                out.push((format!("seed-capture-{m}-{}", out.len()), d));
            }
        }
    }
    let names: Vec<Vec<u16>> = vec![
        utf16("plain"),
        utf16("a/b"),
        vec![b'x' as u16, 0, b'y' as u16],
        vec![],
        vec![0xf029],
        vec![0xf029, 0xf029],
        utf16("c\\d"),
        utf16("trailing\u{f028}"),
    ];
    for (i, n) in names.into_iter().enumerate() {
        for m in 0..3u8 {
            let recs = dir_records(&[(utf16("ok"), false, 1, 5), (n.clone(), i % 2 == 0, 7, 9)]);
            let mut d = vec![m];
            d.extend_from_slice(&recs);
            out.push((format!("seed-names{i}-{m}"), d));
        }
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
    (0..fs::dcache::design::DESIGNS.len() as u8)
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
        ("smb_conn", seeds_smb_conn_forever()),
        ("smb_transform", seeds_smb_transform()),
        ("cifs_opts", seeds_cifs_opts()),
        ("cifs_listing", seeds_cifs_listing()),
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
