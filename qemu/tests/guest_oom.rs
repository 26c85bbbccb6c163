//! Memory pressure in the guest: a 64 MiB guest boots with `stress=oom`,
//! which fills a tmpfs per ENOENT design until memory admission refuses
//! (ENOMEM at the heap's reserve), checks every answer, unlinks
//! everything, and fills again (see `kernel/src/stress.rs`). Checked here:
//! the guest exits 0 (no panic: that would be status 4), says
//! `stress=oom: ok`, and prints one line of figures per design with no
//! wrong answer, at least one ENOMEM, thousands of files created first, a
//! refill of at least 90% of them, and live dentries back at baseline.
//!
//! A few seconds under TCG. Skips with the reason unless QEMU and the
//! release kernel image (`$GUEST_KERNEL`, else `$CARGO_TARGET_DIR` or
//! `target/`, then `x86_64-unknown-none/release/kernel`) are there.

use std::path::PathBuf;
use std::process::Command;
use std::time::Duration;

use qemu::runner::{GuestStatus, QemuConfig, Runner, DEFAULT_QEMU};

const DESIGNS: [&str; 3] = ["transient", "negative", "noalloc"];

/// `$GUEST_KERNEL`, else the release image under `$CARGO_TARGET_DIR` (as
/// the Makefile builds it), else under the workspace's `target/`.
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
        return Some(format!("{DEFAULT_QEMU} not installed"));
    }
    let k = kernel_image();
    if !k.exists() {
        return Some(format!(
            "no kernel image at {} (cargo build -p kernel --target x86_64-unknown-none --release)",
            k.display()
        ));
    }
    None
}

/// `key=value` (a number) from `line`.
fn field(line: &str, key: &str) -> Option<u64> {
    line.split_whitespace()
        .find_map(|w| w.strip_prefix(key)?.strip_prefix('='))
        .and_then(|v| v.parse().ok())
}

#[test]
fn small_guest_fills_tmpfs_to_enomem_and_recovers() {
    if let Some(why) = skip_reason() {
        eprintln!("SKIP guest_oom: {why}");
        return;
    }
    let cfg = QemuConfig::new(kernel_image())
        .smp(2)
        .memory("64M".parse().unwrap())
        .cmdline("stress=oom");
    let out = Runner::new(cfg)
        .timeout(Duration::from_secs(120))
        .run()
        .expect("start QEMU");
    let serial = &out.serial_output;
    for l in serial.lines().filter(|l| l.starts_with("stress=oom")) {
        eprintln!("guest: {l}");
    }
    assert_eq!(
        out.status,
        GuestStatus::Exited(0),
        "guest failed:\n{serial}\n{}",
        out.qemu_stderr
    );
    assert!(serial.contains("stress=oom: ok"), "{serial}");
    for d in DESIGNS {
        let prefix = format!("stress=oom design={d} ");
        let line = serial
            .lines()
            .find(|l| l.starts_with(&prefix))
            .unwrap_or_else(|| panic!("no `{prefix}...` line in:\n{serial}"));
        let get = |k: &str| field(line, k).unwrap_or_else(|| panic!("no {k}= in {line}"));
        let created = get("files_before_enomem");
        // 64 MiB of RAM, a heap of about half, 4 KiB per file.
        assert!(created >= 4000, "{d}: only {created} files: {line}");
        assert!(get("enomem") >= 1, "{line}");
        assert_eq!(get("wrong"), 0, "{line}");
        assert!(get("fs_enomem") >= get("enomem"), "{line}");
        assert!(get("refill") * 10 >= created * 9, "{line}");
        if d == "noalloc" {
            assert_eq!(get("lookup_enomem"), 0, "noalloc allocated: {line}");
        }
        let live = line
            .split_whitespace()
            .find_map(|w| w.strip_prefix("dentries_live="))
            .and_then(|v| v.split_once("->"))
            .unwrap_or_else(|| panic!("no dentries_live=A->B in {line}"));
        assert_eq!(live.0, live.1, "{d}: dentries leaked: {line}");
    }
}
