//! Unit tests of the guest runner: command lines, console parsers, the
//! crash hook (host only).

use super::*;

const REPORT: &str = "testcase:stat() of a missing name (/mnt/tmpfs/x), 2 threads\n\
    warmup\n\
    min:10 max:12 total:22\n\
    measurement\n\
    min:11 max:13 total:24\n\
    min:9 max:11 total:20\n\
    average:22\n";

#[test]
fn cifs_listings_parse() {
    let serial = "linuxref-cifs-begin variant=base\n\
        linuxref-lsla variant=base phase=cold wall_s=1.250000 rc=0 lines=514\n\
        linuxref-stats variant=base phase=cold\n\
        Resources in use\n\
        QueryInfos: 511 total 0 failed\n\
        linuxref-trace variant=base phase=cold\n\
        \x20   268 status=0xc0000052\n\
        \x20   548 cmd=5\n\
        \x20   830 smb3_cmd_enter:\n\
        linuxref-trace-end\n\
        linuxref-cifs-end variant=base\n";
    let l = parse_listings(serial).unwrap();
    assert_eq!(l.len(), 1);
    assert_eq!(
        (l[0].variant.as_str(), l[0].phase.as_str()),
        ("base", "cold")
    );
    assert_eq!((l[0].wall_s, l[0].rc, l[0].entries()), (1.25, 0, 511));
    assert_eq!(l[0].stat("QueryInfos"), Some(511));
    assert_eq!(l[0].stat("Creates"), None);
    assert_eq!(
        trace_counts(&l[0].trace, "status"),
        [("0xc0000052".to_string(), 268)]
    );
    assert_eq!(trace_counts(&l[0].trace, "cmd"), [("5".to_string(), 548)]);
    assert!(parse_listings("linuxref-lsla variant=x phase=cold wall_s=abc\n").is_err());
    let l = parse_listings("linuxref-lsla variant=b phase=warm wall_s=0.5 rc=0 lines=4 ls=9.7\n")
        .unwrap();
    assert_eq!((l[0].ls.as_str(), l[0].entries()), ("9.7", 1));
    let x = parse_xattr_lines(
        "linuxref-xattr variant=b when=later xattr-list path=/mnt/cifs/d001 n=1 user.foo=bar\n\
         linuxref-xattr variant=b when=cold xattr-list path=/mnt/cifs/d002 error=No data\n",
    );
    assert_eq!(x[0].n, Some(1));
    assert_eq!(
        (x[0].when.as_str(), x[0].attrs.as_str()),
        ("later", "user.foo=bar")
    );
    assert_eq!((x[1].n, x[1].attrs.as_str()), (None, "error=No"));
    assert_eq!(
        dropped_options("x\nlinuxref-dropped variant=base option=nativesocket\n"),
        [("base".to_string(), "nativesocket".to_string())]
    );
}

/// marker.sh as QEMU runs it: the request on stdin, the snapshot taken
/// before the answer.
#[test]
fn the_marker_responder_copies_the_stats_then_answers() {
    let dir = std::env::temp_dir().join(format!("linuxref-marker-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let (marks, stats) = (dir.join("marks"), dir.join("stats dir"));
    std::fs::create_dir_all(&stats).unwrap();
    std::fs::write(stats.join("conn-1.json"), "{}").unwrap();
    let out = crate::process::output_with_stdin(
        std::process::Command::new("/bin/sh")
            .arg(super::super::guest_file("marker.sh"))
            .arg(&marks)
            .arg(&stats),
        b"GET /cold-base HTTP/1.0\r\n\r\n",
    )
    .unwrap();
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        "HTTP/1.0 200 OK\r\nContent-Length: 0\r\n\r\n"
    );
    assert_eq!(
        std::fs::read_to_string(marks.join("cold-base/conn-1.json")).unwrap(),
        "{}"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn marker_forward_rides_beside_the_relay() {
    let c = CifsRun {
        unc: "//10.0.2.100/share".into(),
        variants: vec![],
        relay: vec!["/bin/relay".into(), "--delay-ms".into(), "38".into()],
        stats_dir: "/tmp/st".into(),
        marks_dir: "/tmp/mk".into(),
        ls: vec![],
        eashow: vec![],
        eacheck: None,
    };
    let n = c.netdev_arg();
    assert!(n.starts_with("user,id=n0,restrict=on,guestfwd=tcp:10.0.2.100:445-cmd:/bin/relay"));
    let marker = super::super::guest_file("marker.sh");
    assert!(
        n.ends_with(&format!(
            ",guestfwd=tcp:10.0.2.100:4450-cmd:'/bin/sh' '{}' '/tmp/mk' '/tmp/st'",
            marker.display()
        )),
        "{n}"
    );
    let run = GuestRun {
        cifs: Some(CifsRun {
            variants: vec![("base".into(), "vers=3.1.1,ip=10.0.2.100".into())],
            ..c
        }),
        ..GuestRun::statneg(1, vec![], 0, 1)
    };
    let cmd = guest_cmdline(&run);
    assert!(cmd.ends_with(" lr.unc=//10.0.2.100/share lr.cifs=base:vers=3.1.1,ip=10.0.2.100"));
    let c = run.cifs.clone().unwrap();
    let run = GuestRun {
        cifs: Some(CifsRun {
            ls: vec![("old".into(), "9.1".into())],
            eashow: vec!["d000".into()],
            eacheck: Some(EaCheck {
                variant: "base".into(),
                entry: "d009".into(),
                wait_s: 3,
            }),
            ..c
        }),
        cifs_module: Some("/x/cifs.ko".into()),
        ..run
    };
    assert!(guest_cmdline(&run).ends_with(
        " lr.ls=old:9.1 lr.eashow=d000 lr.eacheck=base:d009:3 lr.cifsko=/extra/cifs.ko"
    ));
}

#[test]
fn the_crash_hook_crashes_the_first_n_boots_only() {
    use std::sync::atomic::AtomicU32;
    let boots = AtomicU32::new(0);
    assert_eq!(test_crash_word(None, &boots).unwrap(), None);
    let words: Vec<_> = (0..3)
        .map(|_| test_crash_word(Some("count:2"), &boots).unwrap())
        .collect();
    assert_eq!(
        words,
        [
            Some(" lr.crash=count".to_string()),
            Some(" lr.crash=count".to_string()),
            None
        ]
    );
    let boots = AtomicU32::new(0);
    assert_eq!(
        test_crash_word(Some("timed:1"), &boots).unwrap().as_deref(),
        Some(" lr.crash=timed")
    );
    for bad in ["count", "oops:1", "count:x", "count:-1"] {
        assert!(matches!(
            test_crash_word(Some(bad), &AtomicU32::new(0)),
            Err(LinuxRefError::Args(_))
        ));
    }
}

#[test]
fn a_short_cpu_count_is_refused_with_the_guests_reason() {
    let ok = "linuxref: kernel 7.3.4, 2 cpus, fs=tmpfs threads=2\n";
    assert!(check_guest_cpus(ok, 2).is_ok());
    let short = "linuxref-solo-failed off: /sys/devices/system/cpu/cpu1 online=0\n\
                 linuxref-solo-failed off: nproc=1 of the 2 CPUs the guest has\n\
                 linuxref: kernel 7.3.4, 1 cpus, fs=tmpfs threads=2\n";
    let e = check_guest_cpus(short, 2).unwrap_err().to_string();
    assert!(e.contains("brought 1 of its 2 vCPUs online"), "{e}");
    assert!(e.contains("cpu1 online=0"), "{e}");
    assert!(e.contains("nproc=1 of the 2 CPUs"), "{e}");
    // No kernel line at all (a cifs-only guest prints one too).
    assert!(check_guest_cpus("linuxref-done\n", 1).is_err());
}

#[test]
fn the_runs_a_crashed_guest_finished_are_found() {
    let run = GuestRun {
        count: 100,
        ..GuestRun::statneg(2, vec![Fs::Tmpfs, Fs::Ext4], 1, 3)
    };
    // tmpfs timed and counted; ext4 timed, then the kernel crashed in
    // its counting run.
    let serial = format!(
        "linuxref: kernel 7.3.4, 2 cpus, fs=tmpfs,ext4 threads=2 warmup=1 secs=3 count=100\n\
         linuxref-begin fs=tmpfs\n{REPORT}per-op: allocs=0.5 locks=3.0 rwsem=0.5 fallbacks=0.5\n\
         linuxref-end fs=tmpfs rc=0\nlinuxref-begin fs=ext4\n{REPORT}\
         [   20.0] Kernel panic - not syncing: Fatal exception in interrupt\n"
    );
    let done = finished_runs(&serial, &run);
    assert_eq!(done.len(), 1);
    assert_eq!(done[0].0, Fs::Tmpfs);
    assert_eq!(done[0].1.per_op.map(|p| p.locks), Some(3.0));
    // Runs made with one of the two vCPUs online (the boot's `solo
    // off` failed), or with no count to check, are not the guest's.
    let short = serial.replace(", 2 cpus,", ", 1 cpus,");
    assert!(finished_runs(&short, &run).is_empty());
    let unsaid = serial.replace(", 2 cpus,", ",");
    assert!(finished_runs(&unsaid, &run).is_empty());
    // A timed run whose counting run printed no per-op line is not
    // finished when the run counts.
    let uncounted = serial.replace("per-op: allocs=0.5 locks=3.0 rwsem=0.5 fallbacks=0.5\n", "");
    assert!(finished_runs(&uncounted, &run).is_empty());
}

#[test]
fn guest_sections_are_split_and_checked() {
    let serial = format!(
        "boot noise\nlinuxref-begin fs=tmpfs\n{REPORT}linuxref-end fs=tmpfs rc=0\n\
         linuxref-begin fs=ext4\nstatneg: bad\nlinuxref-end fs=ext4 rc=1\nlinuxref-done\n"
    );
    assert_eq!(
        parse_wis(guest_section(&serial, Fs::Tmpfs).unwrap())
            .unwrap()
            .average,
        22
    );
    assert!(matches!(
        guest_section(&serial, Fs::Ext4),
        Err(LinuxRefError::Guest(_))
    ));
    assert!(guest_section("nothing", Fs::Tmpfs).is_err());
}

#[test]
fn rename_loads_reach_the_command_line_and_bad_ones_are_refused() {
    assert!(valid_rename_load("100@ext4") && valid_rename_load("0@tmpfs"));
    for bad in [
        "x@ext4",
        "100@ramfs",
        "100",
        "-1@tmpfs",
        "@ext4",
        "10000001@ext4",
    ] {
        assert!(!valid_rename_load(bad), "{bad}");
    }
    let run = GuestRun {
        count: 100,
        renames: vec!["100@ext4".into(), "0@tmpfs".into()],
        ..GuestRun::statneg(2, vec![Fs::Tmpfs], 1, 3)
    };
    assert!(guest_cmdline(&run).ends_with(" lr.renames=100@ext4,0@tmpfs"));
    assert!(!guest_cmdline(&GuestRun::statneg(2, vec![Fs::Tmpfs], 1, 3)).contains("lr.renames"));
}
