//! The guest's reliability runs, as `make test` runs them (issue #6):
//!
//! - `stress=rcu secs=10` on 8 vCPUs (2 host cores under TCG, so vCPUs are
//!   preempted at awkward moments): churn and checked lookups for each
//!   ENOENT design with freed memory poisoned; must print
//!   `violations=0 lookups=N leaked=0` with N > 0 and a poison line showing
//!   that freed objects were really checked.
//! - `stress=mem` in a 64 MiB guest: 1,000,000 distinct missing names per
//!   design; every answer ENOENT, the negative design's LRU at or under
//!   its limit, no dentry left behind.
//!
//! Skips with the reason when QEMU or the release kernel image
//! (`$GUEST_KERNEL`, else `$CARGO_TARGET_DIR` or `target/`, then
//! `x86_64-unknown-none/release/kernel`; `make test` builds it first) is
//! missing.

use std::path::PathBuf;
use std::process::Command;
use std::time::Duration;

use qemu::runner::{Accel, GuestStatus, Outcome, QemuConfig, Runner, DEFAULT_QEMU};

fn kernel_image() -> PathBuf {
    if let Some(p) = std::env::var_os("GUEST_KERNEL") {
        return PathBuf::from(p);
    }
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| qemu::runner::workspace_root().join("target"));
    target.join("x86_64-unknown-none/release/kernel")
}

fn skip_reason() -> Option<String> {
    let qemu_ok = Command::new(DEFAULT_QEMU)
        .arg("--version")
        .output()
        .map(|o| o.status.success())
        .unwrap_or(false);
    if !qemu_ok {
        return Some(format!("{DEFAULT_QEMU} not installed (make setup)"));
    }
    let k = kernel_image();
    if !k.exists() {
        return Some(format!(
            "no kernel image at {} (make build-kernel)",
            k.display()
        ));
    }
    None
}

fn boot(smp: u32, mem: &str, cmdline: &str, timeout_s: u64) -> Outcome {
    let cfg = QemuConfig::new(kernel_image())
        .smp(smp)
        .memory(mem.parse().unwrap())
        .accel(Accel::Tcg)
        .cmdline(cmdline);
    let out = Runner::new(cfg)
        .timeout(Duration::from_secs(timeout_s))
        .run()
        .expect("start QEMU");
    for l in out.serial_output.lines() {
        eprintln!("guest: {l}");
    }
    out
}

/// `key=value` from the last line starting with `prefix`.
fn field(serial: &str, prefix: &str, key: &str) -> Option<u64> {
    let line = serial.lines().rfind(|l| l.starts_with(prefix))?;
    line.split_whitespace()
        .find_map(|w| w.strip_prefix(key)?.strip_prefix('='))
        .and_then(|v| v.parse().ok())
}

#[test]
fn stress_rcu_8_vcpus_10s() {
    if let Some(why) = skip_reason() {
        eprintln!("SKIP guest_stress: {why}");
        return;
    }
    let out = boot(8, "512M", "stress=rcu secs=10", 180);
    let s = &out.serial_output;
    assert_eq!(out.status, GuestStatus::Exited(0), "{:?}", out.status);
    let last = s
        .lines()
        .rfind(|l| l.starts_with("violations="))
        .expect("no final line");
    let lookups = field(s, "violations=", "lookups").expect("lookups=");
    assert_eq!(
        last,
        format!("violations=0 lookups={lookups} leaked=0"),
        "the final line"
    );
    assert!(lookups > 0);
    let checked = field(s, "poison:", "freed_objects_checked").expect("poison line");
    assert!(checked > 0, "poisoning checked no freed object");
    assert_eq!(field(s, "poison:", "writes_after_free"), Some(0));
    assert_eq!(field(s, "poison:", "reads_of_poison"), Some(0));
}

#[test]
fn stress_mem_64m() {
    if let Some(why) = skip_reason() {
        eprintln!("SKIP guest_stress: {why}");
        return;
    }
    let out = boot(2, "64M", "stress=mem", 300);
    let s = &out.serial_output;
    assert_eq!(out.status, GuestStatus::Exited(0), "{:?}", out.status);
    assert!(
        s.lines().any(|l| l == "stress=mem: ok"),
        "no 'stress=mem: ok'"
    );
    for design in ["transient", "negative", "noalloc"] {
        let p = format!("stress=mem design={design} ");
        assert_eq!(field(s, &p, "lookups"), Some(1_000_000), "{design}");
        assert_eq!(field(s, &p, "enoent"), Some(1_000_000), "{design}");
        assert_eq!(field(s, &p, "wrong"), Some(0), "{design}");
        let limit = field(s, &p, "limit").unwrap();
        assert!(field(s, &p, "nr_unused_max").unwrap() <= limit, "{design}");
    }
    let neg = "stress=mem design=negative ";
    assert!(
        field(s, neg, "shrunk").unwrap() >= 990_000,
        "the shrinker ran"
    );
}
