//! Boots the runner's tiny probe guest (no real kernel needed) under QEMU to
//! check serial capture, the isa-debug-exit status mapping, the serial log,
//! the timeout and QEMU error detection end to end. Skipped (a failure under
//! `REQUIRE_FIXTURES=1`) when `qemu-system-x86_64` is not installed (`make
//! setup` installs it).

use std::fs;
use std::path::PathBuf;
use std::process::Command;
use std::time::Duration;

use qemu::runner::{probe_elf, GuestStatus, QemuConfig, Runner};

fn qemu_available() -> bool {
    let ok = Command::new(qemu::runner::DEFAULT_QEMU)
        .arg("--version")
        .output()
        .map(|o| o.status.success())
        .unwrap_or(false);
    if !ok {
        qemu::fixtures::skip(
            "runner_boot",
            "QEMU",
            "qemu-system-x86_64 not installed (run `make setup` as root)",
        );
    }
    ok
}

fn scratch(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("qemu-runner-test-{}-{name}", std::process::id()));
    fs::create_dir_all(&d).unwrap();
    d
}

#[test]
fn guest_status_and_serial_come_back() {
    if !qemu_available() {
        return;
    }
    let dir = scratch("status");
    for (status, msg) in [(0u32, "all good\n"), (5, "five\n")] {
        let elf = dir.join(format!("g{status}.elf"));
        fs::write(&elf, probe_elf(1000, msg.as_bytes(), status)).unwrap();
        let log = dir.join(format!("g{status}.log"));
        let out = Runner::new(QemuConfig::new(&elf).smp(2).memory("64M".parse().unwrap()))
            .timeout(Duration::from_secs(60))
            .serial_log(&log)
            .run()
            .unwrap();
        assert_eq!(out.status, GuestStatus::Exited(status as u8), "{out:?}");
        assert_eq!(out.serial_output, msg);
        assert_eq!(fs::read_to_string(&log).unwrap(), msg);
    }
    fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn timeout_kills_qemu() {
    if !qemu_available() {
        return;
    }
    let dir = scratch("timeout");
    let elf = dir.join("spin.elf");
    // u32::MAX iterations: far longer than the 1 s timeout under TCG.
    fs::write(&elf, probe_elf(u32::MAX - 1, b"spinning\n", 0)).unwrap();
    let out = Runner::new(QemuConfig::new(&elf).memory("64M".parse().unwrap()))
        .timeout(Duration::from_secs(1))
        .run()
        .unwrap();
    assert_eq!(out.status, GuestStatus::TimedOut);
    assert_eq!(out.status.exit_code(), 124);
    assert!(out.wall < Duration::from_secs(10));
    fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn missing_kernel_is_a_qemu_error_not_success() {
    if !qemu_available() {
        return;
    }
    let out = Runner::new(QemuConfig::new("/nonexistent/kernel.elf"))
        .timeout(Duration::from_secs(30))
        .run()
        .unwrap();
    assert_eq!(out.status, GuestStatus::QemuError(1), "{out:?}");
    assert!(!out.status.success());
}
