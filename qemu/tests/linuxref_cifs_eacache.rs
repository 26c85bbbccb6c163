//! The cifs-eacache patch series (`linux/patches/6.12/cifs-eacache/`) in the
//! real client: cifs.ko built out of tree against Debian 13's headers for
//! the reference guest's kernel, loaded instead of the packaged module, and
//! Debian 13's coreutils 9.7 `ls -la` of a Samba share through the relay
//! (0 ms). Checks that the module loaded (what the kernel says about an
//! unsigned out-of-tree module), that the listing asks the server for EAs
//! only where the directory listing said an entry has some, that those
//! entries still show their EAs, and that an EA added on the server after a
//! listing shows once the attribute window (acdirmax=2 here) has passed.
//! Skips where the packages, Samba or QEMU cannot be had (a failure under
//! `REQUIRE_FIXTURES=1`). The first build takes 1-3 minutes on 2 cores,
//! then it is cached under build/cifs-mod/; the boot ~30 s under TCG.
//! `make linux-check` runs it (`#[ignore]`d in `make test`, whose Linux
//! client smoke is the 7.3 series' against Samba in
//! `linuxref_eacache_check.rs`).

use qemu::linuxref::{self, CifsRun, EaCheck, GuestRun, Release};
use qemu::samba::{entry_name, Fixture, FixtureOpts};

const FILE: &str = "linuxref_cifs_eacache";
const ENTRIES: usize = 40;
const SERIES: &str = "cifs-eacache";

#[test]
#[ignore = "the 6.12 series' module build and a Linux guest boot: run with `make linux-check`"]
fn patched_cifs_lists_without_per_entry_ea_queries() {
    if let Some(why) = qemu::runner::qemu_unavailable() {
        return qemu::fixtures::skip(FILE, "QEMU", why);
    }
    let build = linuxref::default_build_dir();
    let paths = match linuxref::ensure_release(&build, Release::V6_12) {
        Ok(p) => p,
        Err(why) => return qemu::fixtures::skip(FILE, "the Linux 6.12 packages", why),
    };
    let module = match linuxref::ensure_cifs_module(&build, Release::V6_12, SERIES) {
        Ok(m) => m,
        Err(why) => return qemu::fixtures::skip(FILE, "the out-of-tree cifs.ko build", why),
    };
    if let Some(t) = module.build_s {
        eprintln!("{FILE}: cifs.ko with {SERIES} built in {t:.0} s");
    }
    if let Err(why) = Fixture::available() {
        return qemu::fixtures::skip(FILE, "Samba", why);
    }
    // d000 carries the four WSL EAs, d001 user.foo; the rest none.
    let mut opts = FixtureOpts {
        entries: ENTRIES,
        ..FixtureOpts::default()
    }
    .with_wsl_eas(1);
    opts.other_xattrs
        .push((entry_name(1), "user.foo".into(), b"bar".to_vec()));
    let fx = Fixture::start(&opts).expect("samba fixture");
    let dir = std::env::temp_dir().join(format!("linuxref-eacache-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let base = format!(
        "vers=3.1.1,cache=strict,uid=5000,forceuid,gid=5000,forcegid,iocharset=utf8,soft,nounix,\
         mapposix,reparse=nfs,username={},password={},ip=10.0.2.100",
        fx.user, fx.password
    );
    let added = entry_name(ENTRIES - 1);
    let run = GuestRun {
        cifs: Some(CifsRun {
            eashow: vec![entry_name(0), entry_name(1)],
            eacheck: Some(EaCheck {
                variant: "short".into(),
                entry: added.clone(),
                wait_s: 3,
            }),
            ..CifsRun::through_relay(
                env!("CARGO_BIN_EXE_latency-relay"),
                fx.port,
                &fx.share,
                &dir,
                vec![
                    ("base".into(), format!("{base},acdirmax=300,acregmax=30")),
                    ("short".into(), format!("{base},acdirmax=2,acregmax=2")),
                ],
            )
        }),
        cifs_module: Some(module.ko.clone()),
        ..GuestRun::statneg(1, vec![], 0, 1)
    };
    let rep = linuxref::run_guest(&paths, &run).expect("the 6.12 guest ran");

    // The kernel loaded our module, and said what it thinks of it.
    eprintln!("{FILE}: kernel on loading cifs.ko: {:?}", rep.module_log);
    assert!(
        rep.module_log
            .iter()
            .any(|l| l.contains("tainting kernel") || l.contains("taints kernel")),
        "{:?} / notes {:?}",
        rep.module_log,
        rep.notes
    );
    assert!(
        !rep.notes.iter().any(|n| n.contains("insmod")),
        "{:?}",
        rep.notes
    );

    // Listings: only the two entries with EAs (and the mount's root, which
    // no listing describes: once per window, so at most twice per listing
    // when the window is 2 s) are asked for them.
    assert_eq!(rep.listings.len(), 4, "notes: {:?}", rep.notes);
    let cifs = run.cifs.as_ref().expect("a cifs run");
    for l in &rep.listings {
        assert_eq!(
            (l.rc, l.entries(), l.ls.as_str()),
            (0, ENTRIES, "9.7"),
            "{l:?}"
        );
        let v = &l.variant;
        let t = cifs
            .between_marks(&format!("{v}-{}", l.phase))
            .expect("marker snapshot");
        let qi = t.client_to_server.command("QUERY_INFO");
        eprintln!(
            "{FILE}: {v} {}: {:.3} s, {qi} QUERY_INFO",
            l.phase, l.wall_s
        );
        assert_eq!(l.stat("QueryInfos"), Some(qi));
        let most = if v == "base" { 3 } else { 4 };
        if v == "base" {
            // acdirmax=300: the root once, cold; the EA entries each time.
            let want = if l.phase == "cold" { 3 } else { 2 };
            assert_eq!(qi, want, "{v} {}: QUERY_INFO", l.phase);
        }
        assert!((2..=most).contains(&qi), "{v} {}: {qi} QUERY_INFO", l.phase);
        assert!(t.server_to_client.status(0xc000_0052) <= most - 2);
    }

    // The entries with EAs still show them, cold and warm.
    let seen = |v: &str, when: &str, n: usize| {
        rep.xattrs
            .iter()
            .filter(|x| x.variant == v && x.when == when)
            .nth(n)
            .cloned()
            .unwrap_or_else(|| panic!("no {v} {when} xattr line {n}: {:?}", rep.xattrs))
    };
    for phase in ["cold", "warm"] {
        let wsl = seen("base", phase, 0);
        assert_eq!(wsl.n, Some(4), "{wsl:?}");
        assert!(wsl.attrs.contains("user.$LXUID="), "{wsl:?}");
        let foo = seen("base", phase, 1);
        assert_eq!((foo.n, foo.attrs.as_str()), (Some(1), "user.foo=bar"));
    }

    // An EA set through another connection after the listing: within the
    // window the first mount may still answer from its cache; past it, the
    // server's answer.
    let before = seen("short", "before", 0);
    assert_eq!(before.n, Some(0), "{before:?}");
    let later = seen("short", "later", 0);
    assert_eq!(
        (later.n, later.attrs.as_str()),
        (Some(1), "user.lrcheck=added")
    );
    eprintln!(
        "{FILE}: {added} right after the EA was set elsewhere: {:?}",
        seen("short", "soon", 0)
    );
    let _ = std::fs::remove_dir_all(&dir);
}
