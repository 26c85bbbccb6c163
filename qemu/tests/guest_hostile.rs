//! One guest boot against the hostile server (issue 29): the kernel mounts
//! `qemu::hostile`'s share (the `hostile-smb` binary, started by QEMU's
//! guestfwd per connection) whose listing never ends. The kernel must end
//! the run with `ExitCode::RunFailed` (6) and Linux's errno for the
//! listing (EIO at the listing limit, or ENOMEM where the heap runs out
//! first: 126 MiB of heap in a 256 MiB guest, measured ENOMEM after
//! ~54 s on a loaded 2-core host), never a panic (4).
//!
//! Skips with the reason (a failure under `REQUIRE_FIXTURES=1`) unless QEMU
//! and the release kernel image are there.

use std::time::{Duration, Instant};

use qemu::runner::{
    guest_boot_unavailable, guest_kernel_image as kernel_image, GuestFwd, GuestStatus, QemuConfig,
    Runner,
};

/// `ExitCode::RunFailed` in kernel/src/exit.rs.
const RUN_FAILED: u8 = 6;

#[test]
fn guest_endless_listing_ends_with_status_6() {
    if let Some(why) = guest_boot_unavailable() {
        qemu::fixtures::skip("guest_hostile", "QEMU and the kernel image", why);
        return;
    }
    let fwd = GuestFwd::smb(vec![
        env!("CARGO_BIN_EXE_hostile-smb").into(),
        "--case".into(),
        "endless-listing".into(),
    ]);
    let cfg = QemuConfig::new(kernel_image())
        .smp(2)
        .memory("256M".parse().unwrap())
        .guestfwd(fwd)
        .cmdline("smb=//10.0.2.100/share smbopts=username=u,password=p");
    let t0 = Instant::now();
    let out = Runner::new(cfg)
        .timeout(Duration::from_secs(150))
        .run()
        .expect("start QEMU");
    let secs = t0.elapsed().as_secs_f64();
    let serial = &out.serial_output;
    for l in serial
        .lines()
        .rev()
        .take(15)
        .collect::<Vec<_>>()
        .into_iter()
        .rev()
    {
        eprintln!("guest: {l}");
    }
    eprintln!("guest_hostile: exited {:?} in {secs:.1} s", out.status);
    assert_eq!(
        out.status,
        GuestStatus::Exited(RUN_FAILED),
        "the endless listing must end the run with status 6:\n{serial}\n{}",
        out.qemu_stderr
    );
    assert!(
        ["readdir", "ls -la"].iter().any(|op| {
            serial.contains(&format!("smb: {op} /mnt: EIO"))
                || serial.contains(&format!("smb: {op} /mnt: ENOMEM"))
        }),
        "{serial}"
    );
}
