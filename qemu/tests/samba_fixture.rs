//! The Samba fixture: it starts, smbclient lists the share's entries, WSL
//! EAs are where they were put, options reach smbd, and it stops cleanly.
//! Skips (with the reason; a failure under `REQUIRE_FIXTURES=1`) where smbd
//! is not installed or we are not root.

use qemu::samba::{self, entry_name, Fixture, FixtureOpts};
use std::path::Path;

fn skip() -> bool {
    match Fixture::smbclient_available() {
        Ok(()) => false,
        Err(why) => {
            qemu::fixtures::skip("samba_fixture", "Samba", why);
            true
        }
    }
}

#[test]
fn lists_entries_and_carries_wsl_eas() {
    if skip() {
        return;
    }
    let opts = FixtureOpts {
        files: vec![("hello.txt".into(), b"hello".to_vec())],
        other_xattrs: vec![("d010".into(), "user.foo".into(), b"bar".to_vec())],
        ..FixtureOpts::default()
    }
    .with_wsl_eas(3);
    let fx = Fixture::start(&opts).expect("fixture starts");
    assert!(fx.port >= 1024);

    let (ok, out) = fx.smbclient(fx.port, &[], "ls").unwrap();
    assert!(ok, "{out}");
    let mut names = samba::parse_ls_names(&out);
    names.sort();
    let mut want: Vec<String> = (0..511).map(entry_name).collect();
    want.push("hello.txt".into());
    want.sort();
    assert_eq!(names, want);

    // WSL EAs through SMB (smbclient geteas) and on the share's disk.
    let (ok, out) = fx.smbclient(fx.port, &[], "geteas d001").unwrap();
    assert!(ok, "{out}");
    for n in ["$LXUID", "$LXGID", "$LXMOD", "$LXDEV"] {
        assert!(out.contains(n), "{n} missing: {out}");
    }
    assert!(out.contains("E9 03 00 00"), "uid 1001 LE: {out}");
    assert!(out.contains("D1 07 00 00"), "gid 2001 LE: {out}");
    let (_, out) = fx.smbclient(fx.port, &[], "geteas d005").unwrap();
    assert!(out.contains("NT_STATUS_NO_EAS_ON_FILE"), "{out}");
    let (_, out) = fx.smbclient(fx.port, &[], "geteas d010").unwrap();
    assert!(out.contains("foo") && !out.contains("$LXUID"), "{out}");
    let d2 = fx.share_dir.join("d002");
    assert_eq!(
        samba::get_xattr(&d2, "user.$LXUID").unwrap(),
        1002u32.to_le_bytes()
    );
    assert_eq!(
        samba::get_xattr(&d2, "user.$LXMOD").unwrap(),
        0o040_750u32.to_le_bytes()
    );
    assert_eq!(samba::get_xattr(&d2, "user.$LXDEV").unwrap(), [0u8; 8]);
    assert!(samba::get_xattr(&fx.share_dir.join("d003"), "user.$LXUID").is_err());

    // Wrong password is refused.
    let (ok, out) = samba::smbclient(fx.port, &fx.unc(), "root%wrong", &[], "ls").unwrap();
    assert!(!ok && out.contains("NT_STATUS_LOGON_FAILURE"), "{out}");

    // Drop stops smbd (reaped) and removes the temp dir.
    let pid = fx.pid().unwrap();
    let dir = fx.dir.clone();
    drop(fx);
    assert!(
        !Path::new(&format!("/proc/{pid}")).exists(),
        "smbd {pid} still there"
    );
    assert!(!dir.exists());
}

#[test]
fn protocol_and_share_options_reach_smbd() {
    if skip() {
        return;
    }
    let opts = FixtureOpts {
        entries: 4,
        share: "data".into(),
        password: "s3cret pw".into(),
        max_protocol: Some("SMB2_10".into()),
        ..FixtureOpts::default()
    };
    let fx = Fixture::start(&opts).unwrap();
    let (ok, out) = fx.smbclient(fx.port, &[], "ls").unwrap();
    assert!(ok, "{out}");
    assert_eq!(samba::parse_ls_names(&out).len(), 4);
    let (ok, out) = fx
        .smbclient(fx.port, &["--option=client min protocol=SMB3"], "ls")
        .unwrap();
    assert!(!ok && out.contains("NT_STATUS_NOT_SUPPORTED"), "{out}");
    // Two fixtures run side by side on different ports.
    let fx2 = Fixture::start(&FixtureOpts {
        entries: 1,
        ..FixtureOpts::default()
    })
    .unwrap();
    assert_ne!(fx.port, fx2.port);
    let (ok, out) = fx2.smbclient(fx2.port, &[], "ls").unwrap();
    assert!(ok, "{out}");
}

/// fstests' TEST and SCRATCH shares: an extra share is its own empty
/// directory, writable through SMB, and a name clash with the main share
/// is refused.
#[test]
fn extra_shares_are_separate_and_writable() {
    if skip() {
        return;
    }
    let fx = Fixture::start(&FixtureOpts {
        entries: 0,
        share: "test".into(),
        extra_shares: vec!["scratch".into()],
        ..FixtureOpts::default()
    })
    .expect("fixture starts");
    let scratch = "//127.0.0.1/scratch";
    let creds = fx.credentials();
    let (ok, out) =
        samba::smbclient(fx.port, scratch, &creds, &[], "mkdir made-in-scratch").unwrap();
    assert!(ok, "{out}");
    let (ok, out) = samba::smbclient(fx.port, scratch, &creds, &[], "ls").unwrap();
    assert!(ok, "{out}");
    assert_eq!(samba::parse_ls_names(&out), ["made-in-scratch"]);
    let (ok, out) = fx.smbclient(fx.port, &[], "ls").unwrap();
    assert!(ok, "{out}");
    assert!(samba::parse_ls_names(&out).is_empty(), "{out}");
    assert!(fx.dir.join("shares/scratch/made-in-scratch").is_dir());
    assert!(!fx.share_dir.join("made-in-scratch").exists());

    let clash = Fixture::start(&FixtureOpts {
        entries: 0,
        extra_shares: vec!["share".into()],
        ..FixtureOpts::default()
    });
    assert!(clash.is_err());
}
