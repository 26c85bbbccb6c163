//! `bench sweep` and `bench smb-sweep` check their inputs and outputs
//! before running (an unknown EA-cache design too), and a sweep in which no point ran fails (issue #13 item
//! 8). Before: `--sources guest --kernel /nonexistent` measured nothing and
//! exited 0; `smb-sweep --out <unwritable>` ran the whole experiment, then
//! failed to write. Runs the `bench` binary; touches a scratch directory.

use std::path::PathBuf;
use std::process::Command;
use std::time::{Duration, Instant};

fn scratch(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("bench-inputs-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn bench(args: &[&str]) -> (Option<i32>, String, Duration) {
    let t = Instant::now();
    let o = Command::new(env!("CARGO_BIN_EXE_bench"))
        .args(args)
        .output()
        .expect("run bench");
    (
        o.status.code(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
        t.elapsed(),
    )
}

#[test]
fn a_missing_kernel_is_refused_before_running() {
    let out = scratch("kernel");
    let (code, err, _) = bench(&[
        "sweep",
        "--sources",
        "guest",
        "--kernel",
        "/nonexistent",
        "--out",
        out.to_str().unwrap(),
    ]);
    assert_ne!(code, Some(0), "{err}");
    assert!(err.contains("--kernel /nonexistent: no such file"), "{err}");
    // Nothing ran, so no result directory either.
    assert_eq!(std::fs::read_dir(&out).unwrap().count(), 0);
    std::fs::remove_dir_all(&out).unwrap();
}

#[test]
fn a_sweep_where_no_point_ran_fails() {
    let out = scratch("none");
    let (code, err, _) = bench(&[
        "sweep",
        "--sources",
        "linux-host",
        "--linux-dirs",
        "/nonexistent-dir",
        "--cpus",
        "1",
        "--warmup",
        "0",
        "--secs",
        "1",
        "--out",
        out.to_str().unwrap(),
    ]);
    assert_ne!(code, Some(0), "{err}");
    assert!(err.contains("no point ran (0 skipped, 1 failed"), "{err}");
    std::fs::remove_dir_all(&out).unwrap();
}

#[test]
fn smb_sweep_checks_its_output_first() {
    let dir = scratch("smb");
    // A regular file where a directory must go: unwritable even for root
    // (a read-only mode would not stop root).
    let file = dir.join("not-a-dir");
    std::fs::write(&file, "x").unwrap();
    let (code, err, took) = bench(&["smb-sweep", "--out", file.to_str().unwrap()]);
    assert_ne!(code, Some(0), "{err}");
    assert!(err.contains("nothing was run"), "{err}");
    assert!(took < Duration::from_secs(30), "it ran first: {took:?}");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn smb_sweep_refuses_an_unknown_design_naming_the_known_ones() {
    let (code, err, took) = bench(&["smb-sweep", "easize", "probe", "--linux", "none"]);
    assert_eq!(code, Some(2), "{err}");
    let want = format!(
        "no EA-cache design \"probe\" ({})",
        fs::fstype::cifs::eacache::names()
    );
    assert!(err.contains(&want), "{err}");
    assert!(err.contains("always|negcache|easize|off"), "{err}");
    assert!(took < Duration::from_secs(30), "it ran first: {took:?}");
}

#[test]
fn smb_sweep_help_names_every_design() {
    let o = Command::new(env!("CARGO_BIN_EXE_bench"))
        .args(["smb-sweep", "--help"])
        .output()
        .expect("run bench");
    assert!(o.status.success());
    let out = String::from_utf8_lossy(&o.stdout);
    for d in fs::fstype::cifs::eacache::EACACHE_DESIGNS {
        assert!(
            out.lines()
                .any(|l| l.trim_start().starts_with(&format!("{} ", d.name()))),
            "{} missing from:\n{out}",
            d.name()
        );
    }
}
