//! The guest kernel mounts the Samba fixture's share over virtio-net and
//! lists it: QEMU user networking (`restrict=on`) forwards the guest's
//! 10.0.2.100:445 to the latency relay (started by QEMU per connection,
//! 0 ms delay), which forwards to the fixture's loopback port and counts
//! every frame. Checks that the guest listed every entry (coreutils 9.7's
//! calls, `llistxattr` included), that `eacache=easize`
//! answered every `llistxattr` without a query, that `smbread=` read a 300 KB file through the
//! mount with the checksum of the server's copy, that the relay counted
//! exactly the frames the guest says it sent, and that a wrong password is
//! a clean non-zero exit; and that `wslea=probe` (the old name) mounts as
//! `eacache=always`, saying so, and asks once per name cold and warm.
//!
//! Skips with the reason (a failure under `REQUIRE_FIXTURES=1`) unless root + smbd (the fixture), QEMU and the
//! release kernel image (`$GUEST_KERNEL`, else
//! `$CARGO_TARGET_DIR` or `target/`, then `x86_64-unknown-none/release/kernel`)
//! are there.

use std::time::{Duration, Instant};

use qemu::relay::{load_stats_dir, Totals};
use qemu::runner::{
    guest_boot_unavailable, guest_kernel_image as kernel_image, GuestFwd, GuestStatus, Outcome,
    QemuConfig, Runner,
};
use qemu::samba::{entry_name, Fixture, FixtureOpts};

const ENTRIES: usize = 20;
/// The file `smbread=` reads (at the share root, beside the directories).
const READ_NAME: &str = "blob.bin";
const READ_SIZE: usize = 300_000;
/// `ExitCode::RunFailed` in kernel/src/exit.rs.
const RUN_FAILED: u8 = 6;

/// The missing fixture and why, if one is.
fn skip_reason() -> Option<(&'static str, String)> {
    if let Err(why) = Fixture::available() {
        return Some(("Samba", why));
    }
    guest_boot_unavailable().map(|why| ("QEMU and the kernel image", why))
}

/// Boot the kernel with `cmdline` and a guestfwd to the relay.
fn boot(fx: &Fixture, stats: &std::path::Path, cmdline: &str) -> Outcome {
    let relay = env!("CARGO_BIN_EXE_latency-relay");
    let fwd = GuestFwd::smb(vec![
        relay.into(),
        "--target".into(),
        format!("127.0.0.1:{}", fx.port),
        "--delay-ms".into(),
        "0".into(),
        "--stats-dir".into(),
        stats.display().to_string(),
        "--log".into(),
        stats.join("relay.log").display().to_string(),
    ]);
    let cfg = QemuConfig::new(kernel_image())
        .smp(2)
        .memory("256M".parse().unwrap())
        .guestfwd(fwd)
        .cmdline(cmdline);
    Runner::new(cfg)
        .timeout(Duration::from_secs(60))
        .run()
        .expect("start QEMU")
}

/// The relay's totals once every connection it served has closed.
fn relay_totals(stats: &std::path::Path) -> Totals {
    let until = Instant::now() + Duration::from_secs(5);
    loop {
        let t = Totals::sum(&load_stats_dir(stats).expect("relay stats"));
        if t.open == 0 || Instant::now() > until {
            return t;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// `key=value` from the line starting with `prefix`.
fn field(serial: &str, prefix: &str, key: &str) -> Option<u64> {
    let line = serial.lines().find(|l| l.starts_with(prefix))?;
    line.split_whitespace()
        .find_map(|w| w.strip_prefix(key)?.strip_prefix('='))
        .and_then(|v| v.parse().ok())
}

#[test]
fn guest_mounts_and_lists_share_over_virtio_net() {
    if let Some((fixture, why)) = skip_reason() {
        qemu::fixtures::skip("guest_smb", fixture, why);
        return;
    }
    let blob: Vec<u8> = (0..READ_SIZE).map(|i| (i * 7 % 253) as u8).collect();
    let fx = Fixture::start(&FixtureOpts {
        entries: ENTRIES,
        files: vec![(READ_NAME.into(), blob)],
        // One EA: its EaSize in the listing proves that Samba fills the
        // field, so `easize` believes the other entries' 0.
        other_xattrs: vec![(entry_name(0), "user.proof".into(), b"1".to_vec())],
        ..FixtureOpts::default()
    })
    .expect("samba fixture");
    let stats = fx.dir.join("guest-relay-stats");
    std::fs::create_dir_all(&stats).unwrap();

    let out = boot(
        &fx,
        &stats,
        &format!(
            "smb=//10.0.2.100/{} smbopts=username={},password={},eacache=easize,acregmax=60,acdirmax=60 smbread={READ_NAME}",
            fx.share, fx.user, fx.password
        ),
    );
    let serial = &out.serial_output;
    // The guest's report without the per-entry lines, for the test log.
    for l in serial.lines().filter(|l| !l.starts_with("ls: ")) {
        eprintln!("guest: {l}");
    }
    assert_eq!(
        out.status,
        GuestStatus::Exited(0),
        "guest failed:\n{serial}\n{}",
        out.qemu_stderr
    );
    for i in 0..ENTRIES {
        let name = entry_name(i);
        assert!(
            serial
                .lines()
                .any(|l| l.starts_with("ls: ") && l.ends_with(&format!(" {name}"))),
            "entry {name} not listed:\n{serial}"
        );
    }
    let lsla = "lsla design=";
    assert_eq!(
        field(serial, lsla, "entries"),
        Some(ENTRIES as u64 + 1),
        "{serial}"
    );
    // The server's own copy, hashed here.
    let on_disk = std::fs::read(fx.share_dir.join(READ_NAME)).unwrap();
    let want: String = {
        use sha2::Digest;
        sha2::Sha256::digest(&on_disk)
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect()
    };
    let line = serial
        .lines()
        .find(|l| l.starts_with("smbread "))
        .unwrap_or_else(|| panic!("no smbread line:\n{serial}"));
    assert!(
        line.contains(&format!("path={READ_NAME} size={READ_SIZE} sha256={want} ")),
        "guest read {line:?}, server has sha256={want}"
    );
    let cold = field(serial, lsla, "cold_frames").expect("cold_frames");
    let warm = field(serial, lsla, "warm_frames").expect("warm_frames");
    // The listing's frames, plus the EA queries of `/mnt` (asked before
    // the listing proves EaSize) and of the one entry with an EA.
    assert!(
        (1..=8).contains(&cold),
        "easize lists without per-entry EA queries: {cold}"
    );
    // Warm, every entry's "no EAs" is remembered; the one entry that has an
    // EA is asked again (EA lists are not cached, as in Linux).
    assert!(
        warm <= 1,
        "warm listing asks at most about the entry with an EA: {warm}"
    );
    assert!(
        serial.contains("QueryDirectories: "),
        "Stats lines: {serial}"
    );

    let guest_total: u64 = serial
        .lines()
        .find_map(|l| l.strip_prefix("smb: frames_total="))
        .and_then(|v| v.trim().parse().ok())
        .expect("frames_total line");
    let t = relay_totals(&stats);
    assert_eq!(t.connections, 1, "one connection: {t:#?}");
    assert_eq!(
        t.round_trips, guest_total,
        "relay round trips vs guest frames: {t:#?}"
    );
    assert_eq!(
        t.client_to_server.unparsed_bytes + t.server_to_client.unparsed_bytes,
        0
    );

    // A wrong password: a clear error and a non-zero exit, never a panic.
    let bad = fx.dir.join("guest-relay-stats-bad");
    std::fs::create_dir_all(&bad).unwrap();
    let out = boot(
        &fx,
        &bad,
        &format!(
            "smb=//10.0.2.100/{} smbopts=username={},password=wrong-{}",
            fx.share, fx.user, fx.password
        ),
    );
    assert_eq!(
        out.status,
        GuestStatus::Exited(RUN_FAILED),
        "{}",
        out.serial_output
    );
    assert!(
        out.serial_output.contains("smb: mount //10.0.2.100/"),
        "{}",
        out.serial_output
    );
}

/// The seed's mount line pasted as is into `smbopts=` (with credentials
/// and `seal`: 300+ characters) against a server with `smb encrypt =
/// required`: the guest mounts over SMB 3.1.1 encrypted, lists, and
/// `smbread=` returns the server's bytes (same SHA-256).
#[test]
fn guest_encrypted_311_mount_with_the_seed_options() {
    if let Some((fixture, why)) = skip_reason() {
        qemu::fixtures::skip("guest_smb", fixture, why);
        return;
    }
    let blob: Vec<u8> = (0..READ_SIZE).map(|i| (i * 13 % 251) as u8).collect();
    let fx = Fixture::start(&FixtureOpts {
        entries: ENTRIES,
        files: vec![(READ_NAME.into(), blob)],
        extra_global: vec!["smb encrypt = required".into()],
        ..FixtureOpts::default()
    })
    .expect("samba fixture");
    let stats = fx.dir.join("guest-relay-stats-seal");
    std::fs::create_dir_all(&stats).unwrap();
    let seed = "vers=3.1.1,cache=strict,upcall_target=app,uid=5000,forceuid,gid=5000,\
forcegid,file_mode=0664,dir_mode=0775,iocharset=utf8,soft,nounix,mapposix,\
reparse=nfs,nativesocket,symlink=native,rsize=4194304,wsize=4194304,\
acdirmax=300,acregmax=30";
    let opts = format!("{seed},username={},password={},seal", fx.user, fx.password);
    assert!(opts.len() > 261, "{}", opts.len());
    let out = boot(
        &fx,
        &stats,
        &format!(
            "smb=//10.0.2.100/{} smbopts={opts} smbread={READ_NAME}",
            fx.share
        ),
    );
    let serial = &out.serial_output;
    assert_eq!(
        out.status,
        GuestStatus::Exited(0),
        "guest failed:\n{serial}\n{}",
        out.qemu_stderr
    );
    assert_eq!(
        field(serial, "lsla design=", "entries"),
        Some(ENTRIES as u64 + 1),
        "{serial}"
    );
    let on_disk = std::fs::read(fx.share_dir.join(READ_NAME)).unwrap();
    let want: String = {
        use sha2::Digest;
        sha2::Sha256::digest(&on_disk)
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect()
    };
    let line = serial
        .lines()
        .find(|l| l.starts_with("smbread "))
        .unwrap_or_else(|| panic!("no smbread line:\n{serial}"));
    assert!(
        line.contains(&format!("path={READ_NAME} size={READ_SIZE} sha256={want} ")),
        "guest read {line:?}, server has sha256={want}"
    );
    assert!(
        serial.contains("Encrypted frames: "),
        "the Stats show the sealed frames:\n{serial}"
    );
}

/// The old option name in the guest: `wslea=probe` mounts as
/// `eacache=always` (and says so), and the guest's `ls -la` then asks the
/// server once per name, cold and warm, as Linux 6.12 does under coreutils
/// 9.7: the entries, `/mnt` and `.`.
#[test]
fn guest_always_asks_per_name_and_wslea_says_what_it_means_now() {
    if let Some((fixture, why)) = skip_reason() {
        qemu::fixtures::skip("guest_smb", fixture, why);
        return;
    }
    let fx = Fixture::start(&FixtureOpts {
        entries: ENTRIES,
        ..FixtureOpts::default()
    })
    .expect("samba fixture");
    let stats = fx.dir.join("guest-relay-stats");
    std::fs::create_dir_all(&stats).unwrap();
    let out = boot(
        &fx,
        &stats,
        &format!(
            "smb=//10.0.2.100/{} smbopts=username={},password={},wslea=probe,acregmax=60,acdirmax=60",
            fx.share, fx.user, fx.password
        ),
    );
    let serial = &out.serial_output;
    assert_eq!(out.status, GuestStatus::Exited(0), "{serial}");
    assert!(
        serial.contains("smb: cifs: wslea=probe is now eacache=always"),
        "{serial}"
    );
    assert!(serial.contains("(eacache=always)"), "{serial}");
    let line = serial
        .lines()
        .find(|l| l.starts_with("lsla: cold "))
        .unwrap_or_else(|| panic!("no lsla line:\n{serial}"));
    let names = ENTRIES + 2;
    assert!(
        line.contains(&format!(" {names} QUERY_INFO; warm "))
            && line.ends_with(&format!(" {names} QUERY_INFO")),
        "one EA query per name, cold and warm: {line}"
    );
}
