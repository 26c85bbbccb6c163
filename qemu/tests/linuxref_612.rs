//! The Linux 6.12 reference guest, short: one boot runs statneg on tmpfs
//! for one second, a small counting run (kprobes), then its cifs client
//! mounts a Samba share through the latency relay (0 ms) and lists it cold
//! and warm with Debian 13's coreutils 9.7 `ls -la`, with the seed's options
//! and with `nouser_xattr` added. Checks that every line the benchmarks read
//! parses and holds what Linux must have done: 9.7 asks every entry for its
//! xattr names (one QUERY_INFO each, the seed's), `nouser_xattr` none.
//! Skips where the 6.12 packages, Samba or QEMU cannot be had (a failure
//! under `REQUIRE_FIXTURES=1`). ~30 s under TCG.

use qemu::linuxref::{self, CifsRun, Fs, GuestRun, Release};
use qemu::samba::{Fixture, FixtureOpts};

const FILE: &str = "linuxref_612";
const ENTRIES: usize = 40;

#[test]
fn linux_612_boots_counts_and_lists_a_cifs_share() {
    if let Some(why) = qemu::runner::qemu_unavailable() {
        return qemu::fixtures::skip(FILE, "QEMU", why);
    }
    let paths = match linuxref::ensure_release(&linuxref::default_build_dir(), Release::V6_12) {
        Ok(p) => p,
        Err(why) => return qemu::fixtures::skip(FILE, "the Linux 6.12 packages", why),
    };
    if let Err(why) = Fixture::available() {
        return qemu::fixtures::skip(FILE, "Samba", why);
    }
    assert!(
        paths.describe().starts_with("Linux 6.12."),
        "{}",
        paths.describe()
    );
    let fx = Fixture::start(&FixtureOpts {
        entries: ENTRIES,
        ..FixtureOpts::default()
    })
    .expect("samba fixture");
    let dir = std::env::temp_dir().join(format!("linuxref-612-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let opts = format!(
        "vers=3.1.1,cache=strict,uid=5000,forceuid,gid=5000,forcegid,iocharset=utf8,soft,nounix,\
         mapposix,reparse=nfs,acdirmax=300,acregmax=30,username={},password={},ip=10.0.2.100",
        fx.user, fx.password
    );
    let run = GuestRun {
        count: 2000,
        cifs: Some(CifsRun::through_relay(
            env!("CARGO_BIN_EXE_latency-relay"),
            fx.port,
            &fx.share,
            &dir,
            vec![
                ("base".into(), opts.clone()),
                ("nox".into(), format!("{opts},nouser_xattr")),
            ],
        )),
        ..GuestRun::statneg(1, vec![Fs::Tmpfs], 0, 1)
    };
    let rep = linuxref::run_guest(&paths, &run).expect("the 6.12 guest ran");
    assert!(rep.uname.starts_with("6.12."), "uname -r: {}", rep.uname);

    // statneg: will-it-scale's lines, then Linux's per-op line. On tmpfs
    // every stat of a missing name allocates a dentry in __lookup_slow
    // under the parent's i_rwsem, and takes spinlocks to add and kill it.
    let (fs, r) = &rep.results[0];
    assert_eq!(*fs, Fs::Tmpfs);
    assert!(r.average > 0 && r.measurement.len() == 1, "{r:?}");
    let p = r.per_op.expect("per-op line");
    assert!((0.95..1.05).contains(&p.allocs), "allocs/op {}", p.allocs);
    assert!(
        (0.95..1.05).contains(&p.fallbacks),
        "fallbacks/op {}",
        p.fallbacks
    );
    assert!((0.95..1.05).contains(&p.rwsem.unwrap_or(0.0)), "{p:?}");
    assert!(p.locks >= 3.0, "locks/op {}", p.locks);
    assert!(rep.sections[0].1.contains("linuxref-count ops=2000 "));

    // cifs: two listings of every entry per mount, each bracketed by relay
    // snapshots.
    assert_eq!(rep.listings.len(), 4, "notes: {:?}", rep.notes);
    let cifs = run.cifs.as_ref().expect("a cifs run");
    for l in &rep.listings {
        assert_eq!((l.rc, l.entries()), (0, ENTRIES), "{l:?}");
        assert!(l.wall_s > 0.0);
        let v = &l.variant;
        let t = cifs
            .between_marks(&format!("{v}-{}", l.phase))
            .expect("marker snapshot");
        // The listing's own round trips, counted by the relay, agree with
        // the client's /proc/fs/cifs/Stats.
        assert_eq!(
            l.stat("QueryDirectories"),
            Some(t.client_to_server.command("QUERY_DIRECTORY")),
            "{}: {}",
            l.phase,
            l.stats
        );
        assert!(t.client_to_server.command("QUERY_DIRECTORY") >= 1);
        assert_eq!(
            l.stat("QueryInfos"),
            Some(t.client_to_server.command("QUERY_INFO"))
        );
        // The seed: coreutils 9.7's llistxattr of every entry is one
        // QUERY_INFO (FileFullEaInformation) each, cold and warm, answered
        // STATUS_NO_EAS_ON_FILE; nouser_xattr answers it locally.
        assert_eq!(l.ls, "9.7", "{l:?}");
        let qi = t.client_to_server.command("QUERY_INFO");
        if v == "base" {
            assert!(qi >= ENTRIES as u64, "{} {}: {qi} QUERY_INFO", v, l.phase);
            assert!(
                t.server_to_client.status(0xc000_0052) >= ENTRIES as u64,
                "{:?}",
                t.server_to_client.statuses
            );
        } else {
            assert_eq!(qi, 0, "{} {}: QUERY_INFO with nouser_xattr", v, l.phase);
        }
    }
    assert!(linuxref::trace_counts(&rep.listings[0].trace, "cmd")
        .iter()
        .any(|(c, n)| c == "14" && *n > 0));
    let _ = std::fs::remove_dir_all(&dir);
}
