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
//! - `stress=oom` in a 64 MiB guest: per design, a tmpfs filled until
//!   memory admission refuses (ENOMEM at the heap's reserve), every answer
//!   checked, everything unlinked and filled again. The guest must exit 0
//!   (a panic would be status 4) with one line of figures per design: no
//!   wrong answer, at least one ENOMEM, thousands of files created first,
//!   a refill of at least 90% of them, live dentries back at baseline.
//!
//! Skips with the reason (a failure under `REQUIRE_FIXTURES=1`) when QEMU or the release kernel image
//! (`$GUEST_KERNEL`, else `$CARGO_TARGET_DIR` or `target/`, then
//! `x86_64-unknown-none/release/kernel`; `make test` builds it first) is
//! missing.

use std::time::Duration;

use qemu::runner::{
    guest_boot_unavailable as skip_reason, guest_kernel_image as kernel_image, Accel, GuestStatus,
    Outcome, QemuConfig, Runner,
};

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

/// `key=value` (a number) from `line`.
fn value(line: &str, key: &str) -> Option<u64> {
    line.split_whitespace()
        .find_map(|w| w.strip_prefix(key)?.strip_prefix('='))
        .and_then(|v| v.parse().ok())
}

/// `key=value` from the last line starting with `prefix`.
fn field(serial: &str, prefix: &str, key: &str) -> Option<u64> {
    value(serial.lines().rfind(|l| l.starts_with(prefix))?, key)
}

/// The kernel's stress modes run every design of the registry.
fn designs() -> Vec<&'static dyn fs::dcache::design::EnoentDesign> {
    fs::dcache::design::DESIGNS.to_vec()
}

#[test]
fn stress_rcu_8_vcpus_10s() {
    if let Some(why) = skip_reason() {
        qemu::fixtures::skip("guest_stress", "QEMU and the kernel image", why);
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
        qemu::fixtures::skip("guest_stress", "QEMU and the kernel image", why);
        return;
    }
    let out = boot(2, "64M", "stress=mem", 300);
    let s = &out.serial_output;
    assert_eq!(out.status, GuestStatus::Exited(0), "{:?}", out.status);
    assert!(
        s.lines().any(|l| l == "stress=mem: ok"),
        "no 'stress=mem: ok'"
    );
    for design in designs().iter().map(|d| d.name()) {
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

#[test]
fn stress_oom_64m_fills_to_enomem_and_recovers() {
    if let Some(why) = skip_reason() {
        qemu::fixtures::skip("guest_stress", "QEMU and the kernel image", why);
        return;
    }
    let out = boot(2, "64M", "stress=oom", 120);
    let serial = &out.serial_output;
    assert_eq!(out.status, GuestStatus::Exited(0), "{:?}", out.status);
    assert!(
        serial.lines().any(|l| l == "stress=oom: ok"),
        "no 'stress=oom: ok'"
    );
    for design in designs() {
        let d = design.name();
        let prefix = format!("stress=oom design={d} ");
        let line = serial
            .lines()
            .find(|l| l.starts_with(&prefix))
            .unwrap_or_else(|| panic!("no `{prefix}...` line"));
        let get = |k: &str| value(line, k).unwrap_or_else(|| panic!("no {k}= in {line}"));
        let created = get("files_before_enomem");
        // 64 MiB of RAM, a heap of about half, 4 KiB per file.
        assert!(created >= 4000, "{d}: only {created} files: {line}");
        assert!(get("enomem") >= 1, "{line}");
        assert_eq!(get("wrong"), 0, "{line}");
        assert!(get("fs_enomem") >= get("enomem"), "{line}");
        assert!(get("refill") * 10 >= created * 9, "{line}");
        if !design.tmpfs_misses().allocates() {
            assert_eq!(get("lookup_enomem"), 0, "{d} allocated: {line}");
        }
        let live = line
            .split_whitespace()
            .find_map(|w| w.strip_prefix("dentries_live="))
            .and_then(|v| v.split_once("->"))
            .unwrap_or_else(|| panic!("no dentries_live=A->B in {line}"));
        assert_eq!(live.0, live.1, "{d}: dentries leaked: {line}");
    }
}
