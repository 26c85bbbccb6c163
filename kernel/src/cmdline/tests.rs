//! Unit tests of the command-line parser (host: `cargo test -p kernel --lib`).

use super::*;

#[test]
fn empty_line_gives_defaults() {
    assert_eq!(parse(""), Ok(Config::default()));
    assert_eq!(parse("   \t "), Ok(Config::default()));
}

#[test]
fn flags_and_values() {
    let c = parse("selftest log=debug hz=250 crash=ud").unwrap();
    assert!(c.selftest);
    assert_eq!(c.log, log::LevelFilter::Debug);
    assert_eq!(c.hz, 250);
    assert_eq!(c.crash, Some(Crash::InvalidOpcode));
}

#[test]
fn unknown_key() {
    assert_eq!(parse("bogus=1"), Err(CmdlineError::UnknownKey("bogus")));
    assert_eq!(
        parse("selftest bogus"),
        Err(CmdlineError::UnknownKey("bogus"))
    );
}

#[test]
fn bad_values() {
    assert!(matches!(
        parse("hz=0"),
        Err(CmdlineError::BadValue {
            key: "hz",
            value: "0",
            ..
        })
    ));
    assert!(matches!(
        parse("hz=1001"),
        Err(CmdlineError::BadValue { .. })
    ));
    assert!(matches!(parse("hz=+5"), Err(CmdlineError::BadValue { .. })));
    assert!(matches!(
        parse("hz=99999999999999999999999"),
        Err(CmdlineError::BadValue { .. })
    ));
    assert!(matches!(
        parse("log=loud"),
        Err(CmdlineError::BadValue { key: "log", .. })
    ));
}

/// The shapes of a bad word are the one parser's (`bench::cmdline`'s
/// tests); here only what the kernel's entry points add.
#[test]
fn shape_errors() {
    assert_eq!(parse("hz"), Err(CmdlineError::MissingValue("hz")));
    assert_eq!(
        parse("selftest=1"),
        Err(CmdlineError::UnexpectedValue {
            key: "selftest",
            value: "1"
        })
    );
    assert_eq!(
        parse("selftest selftest"),
        Err(CmdlineError::Duplicate("selftest"))
    );
    assert_eq!(parse_bytes(b"self\xfftest"), Err(CmdlineError::NotUtf8));
}

#[test]
fn help_lists_every_key() {
    let text = std::format!("{}", Help);
    assert!(
        text.starts_with("valid kernel command-line keys:\n"),
        "{text}"
    );
    for k in TABLES.iter().flat_map(|t| t.iter()) {
        assert!(text.contains(k.name), "help misses {}", k.name);
        assert!(text.contains(k.help));
    }
    assert!(text.contains("hz=10..1000"));
    assert!(text.contains("\n  selftest "), "{text}");
    assert_eq!(text.lines().count(), 1 + KEYS.len() + BENCH_KEYS.len());
}

#[test]
fn every_registered_design_is_a_guest_word() {
    let help = std::format!("{}", Help);
    for d in fs::dcache::design::DESIGNS {
        let n = d.name();
        let c = parse(&std::format!("bench=statneg design={n}")).unwrap();
        assert_eq!(c.bench.unwrap().design.name(), n);
        let c = parse(&std::format!("stress=mem design={n}")).unwrap();
        assert_eq!(c.design.map(|d| d.name()), Some(n));
        assert!(help.contains(n), "help lists {n}: {help}");
    }
    let e = parse("bench=statneg design=nosuch").unwrap_err();
    let msg = std::format!("{e}");
    for d in fs::dcache::design::DESIGNS {
        assert!(msg.contains(d.name()), "{msg}");
    }
    std::eprintln!(
        "designs ran by cmdline::every_registered_design_is_a_guest_word: {}",
        fs::dcache::design::Names
    );
}

/// The guest's `smbopts=` takes every EA-cache design: the command line
/// keeps the options, and the fs crate's cifs option parser (what the
/// boot-time mount runs on them) selects the design; an unknown one is
/// refused naming every registered design.
#[test]
fn every_registered_eacache_design_is_a_guest_smbopts_word() {
    use fs::fstype::cifs::{eacache, CifsOpts};
    for d in eacache::EACACHE_DESIGNS {
        let n = d.name();
        let c = parse(&std::format!(
            "smb=//10.0.2.100/share smbopts=username=root,password=pw,eacache={n}"
        ))
        .unwrap();
        let opts = c.smbopts.unwrap();
        let o = CifsOpts::parse(opts.as_str()).unwrap();
        assert_eq!(o.effective_eacache().name(), n);
    }
    let c = parse("smb=//10.0.2.100/s smbopts=username=root,eacache=nosuch").unwrap();
    let e = CifsOpts::parse(c.smbopts.unwrap().as_str()).unwrap_err();
    let msg = std::format!("{e}");
    for d in eacache::EACACHE_DESIGNS {
        assert!(msg.contains(d.name()), "{msg}");
    }
    std::eprintln!(
        "designs ran by cmdline::every_registered_eacache_design_is_a_guest_smbopts_word: {}",
        eacache::names().replace('|', " ")
    );
}

#[test]
fn bench_words_delegate_to_bench_params() {
    let c = parse("bench=statneg tasks=2 design=noalloc warmup=0 secs=1").unwrap();
    let p = c.bench.unwrap();
    assert_eq!(
        (p.tasks, p.design, p.warmup, p.secs),
        (2, bench::params::Design::named("noalloc"), 0, 1)
    );
    // defaults come from bench::params
    let d = parse("bench=churn").unwrap().bench.unwrap();
    assert_eq!(d, bench::params::Params::parse_line("bench=churn").unwrap());
    assert!(matches!(
        parse("bench=statneg tasks=0"),
        Err(CmdlineError::BadValue { key: "tasks", .. })
    ));
    assert!(matches!(
        parse("bench=nope"),
        Err(CmdlineError::BadValue { key: "bench", .. })
    ));
    assert_eq!(
        parse("bench=statneg secs=1 secs=2"),
        Err(CmdlineError::Duplicate("secs"))
    );
    assert_eq!(parse("tasks=2"), Err(needs_bench("tasks")));
    assert_eq!(parse("secs=2"), Err(needs_bench("secs")));
    assert_eq!(parse("bench"), Err(CmdlineError::MissingValue("bench")));
    // Any run-only benchmark word asks for a run, which needs `bench=`.
    assert_eq!(parse("pause=4"), Err(needs_bench("pause")));
    assert_eq!(parse("demo=table names=9"), Err(needs_bench("names")));
    assert_eq!(parse("design=negative"), Err(needs_bench("design")));
    let text = std::format!("{}", Help);
    for k in bench::params::KEYS {
        assert!(text.contains(k.help), "help misses {}", k.name);
    }
}

#[test]
fn modes() {
    let c = parse("stress=rcu secs=10").unwrap();
    assert_eq!(
        (c.stress, c.secs, c.bench),
        (Some(Stress::Rcu), Some(10), None)
    );
    let c = parse("stress=mem design=negative").unwrap();
    assert_eq!(c.design, Some(bench::params::Design::named("negative")));
    assert_eq!(parse("stress=rcu tasks=3"), Err(needs_bench("tasks")));
    assert_eq!(parse("demo=table").unwrap().demo, Some(Demo::Table));
    assert_eq!(parse("demo=pingpong").unwrap().demo, Some(Demo::Pingpong));
    // poison= is a setting, not a mode: it goes with any of them.
    let c = parse("poison=1 stress=rcu secs=10").unwrap();
    assert!(c.poison == Some(true) && c.stress == Some(Stress::Rcu));
    assert_eq!(parse("poison=1 selftest").unwrap().poison, Some(true));
    assert_eq!(parse("stress=rcu poison=0").unwrap().poison, Some(false));
    assert_eq!(parse("stress=rcu").unwrap().poison, None);
    assert!(matches!(
        parse("poison=yes"),
        Err(CmdlineError::BadValue {
            key: "poison",
            expected: Values::Text("0 or 1"),
            ..
        })
    ));
    assert_eq!(parse("poison"), Err(CmdlineError::MissingValue("poison")));
    assert!(parse("trace=lookup demo=trace").unwrap().trace_lookup);
    assert!(matches!(
        parse("trace=all"),
        Err(CmdlineError::BadValue { key: "trace", .. })
    ));
    assert_eq!(
        parse("selftest bench=statneg"),
        Err(CmdlineError::Conflict("selftest", "bench"))
    );
    assert_eq!(
        parse("demo=table stress=mem"),
        Err(CmdlineError::Conflict("demo", "stress"))
    );
    assert_eq!(parse("stress=oom").unwrap().stress, Some(Stress::Oom));
    let c = parse("stress=hostile secs=3").unwrap();
    assert_eq!((c.stress, c.secs), (Some(Stress::Hostile), Some(3)));
}

#[test]
fn lock_and_host_cores_in_any_mode() {
    use bench::params::LockKind;
    assert_eq!(parse("").unwrap().lock, None);
    let c = parse("selftest lock=pvqspinlock host_cores=2").unwrap();
    assert_eq!(c.lock, Some(LockKind::Pvqspinlock));
    assert_eq!(c.host_cores, Some(2));
    let c = parse("bench=statneg lock=ttas").unwrap();
    assert_eq!(c.lock, Some(LockKind::Ttas));
    assert_eq!(c.bench.unwrap().lock, LockKind::Ttas);
    assert!(matches!(
        parse("demo=table lock=mcs"),
        Err(CmdlineError::BadValue { key: "lock", .. })
    ));
    assert!(matches!(
        parse("selftest host_cores=0"),
        Err(CmdlineError::BadValue {
            key: "host_cores",
            ..
        })
    ));
}

#[test]
fn failslab() {
    assert_eq!(parse("").unwrap().failslab, None);
    let c = parse("stress=mem failslab=7").unwrap();
    assert_eq!((c.stress, c.failslab), (Some(Stress::Mem), Some(7)));
    assert_eq!(parse("selftest failslab=1").unwrap().failslab, Some(1));
    for bad in [
        "failslab=0",
        "failslab=-1",
        "failslab=x",
        "failslab=1000000001",
    ] {
        assert!(
            matches!(
                parse(bad),
                Err(CmdlineError::BadValue {
                    key: "failslab",
                    ..
                })
            ),
            "{bad}"
        );
    }
    assert_eq!(
        parse("failslab"),
        Err(CmdlineError::MissingValue("failslab"))
    );
}

#[test]
fn issue13_bad_benchmark_words_are_errors() {
    // Each of these panicked the kernel ("memory allocation of 5 bytes
    // failed") when bench::params allocated its error before the heap.
    for (line, key) in [
        ("bench=statneg tasks=999999", "tasks"),
        ("bench=statneg secs=-1", "secs"),
        ("bench=statneg tasks=0", "tasks"),
        ("bench=statneg design=NOALLOC", "design"),
        ("bench=statneg warmup=3601", "warmup"),
        ("stress=rcu secs=3601", "secs"),
    ] {
        match parse(line) {
            Err(CmdlineError::BadValue { key: k, .. }) => assert_eq!(k, key, "{line}"),
            other => panic!("{line}: {other:?}"),
        }
    }
    assert_eq!(
        parse("bench=statneg bench=churn"),
        Err(CmdlineError::Duplicate("bench"))
    );
}

#[test]
fn smb_is_a_mode_and_smbopts_needs_it() {
    assert_eq!(
        parse("selftest smb=//10.0.2.100/share"),
        Err(CmdlineError::Conflict("selftest", "smb"))
    );
    assert_eq!(
        parse("stress=mem smb=//10.0.2.100/share"),
        Err(CmdlineError::Conflict("stress", "smb"))
    );
    let e = parse("smbopts=username=u").unwrap_err();
    assert_eq!(
        e,
        CmdlineError::Needs {
            key: "smbopts",
            needs: "smb"
        }
    );
    assert_eq!(
        std::format!("{e}"),
        "parameter `smbopts' does nothing without `smb=' (EINVAL)"
    );
    let c = parse("smb=//10.0.2.100/share smbopts=username=u").unwrap();
    assert!(c.smb.is_some() && c.smbopts.is_some());
}

#[test]
fn a_cut_command_line_is_refused() {
    let mut long = std::vec![b' '; MAX_LEN - 7];
    long.extend_from_slice(b"hz=1000");
    assert_eq!(parse_boot(&long, false).unwrap().hz, 1000);
    // The boot code kept MAX_LEN bytes of a longer line.
    assert_eq!(
        parse_boot(&long, true),
        Err(CmdlineError::TooLong { max: MAX_LEN })
    );
    long.push(b' ');
    assert_eq!(
        parse_boot(&long, false),
        Err(CmdlineError::TooLong { max: MAX_LEN })
    );
    let msg = std::format!("{}", CmdlineError::TooLong { max: MAX_LEN });
    assert!(msg.contains("longer than 4096 bytes"), "{msg}");
}

#[test]
fn key_tables_fit_the_seen_bits_and_claim_no_word_twice() {
    let all = || TABLES.iter().flat_map(|t| t.iter());
    assert!(all().count() <= bench::cmdline::MAX_KEYS);
    for (i, a) in all().enumerate() {
        assert!(
            all().skip(i + 1).all(|b| b.name != a.name),
            "key {} in two places",
            a.name
        );
    }
}

/// A word two tables both claim is refused, not taken by the first table
/// that has it: here a kernel key `lock` beside the benchmark's.
#[test]
fn a_word_both_tables_claim_is_an_error() {
    const KERNEL_LOCK: &[Key<Draft>] = &[Key {
        name: "lock",
        syntax: Values::Text("K"),
        help: "a kernel key that shadows the benchmark's",
        kind: Kind::Value(|d, _| {
            d.config.hz = 1;
            Ok(())
        }),
    }];
    for tables in [
        &[KEYS, KERNEL_LOCK, BENCH_KEYS][..],
        &[KEYS, BENCH_KEYS, KERNEL_LOCK][..],
    ] {
        let mut d = Draft::default();
        assert_eq!(
            bench::cmdline::parse_words(bench::cmdline::words("lock=ttas"), &mut d, tables),
            Err(CmdlineError::Ambiguous("lock"))
        );
        assert_eq!((d.config.hz, d.bench.lock), (100, None));
    }
    let msg = std::format!("{}", CmdlineError::Ambiguous("lock"));
    assert_eq!(
        msg,
        "parameter `lock' is claimed by two key tables (EINVAL)"
    );
}

/// The messages the boot tests look for (`qemu/tests/guest_badinput.rs`),
/// whole: Linux's words for a bad boot parameter, then the errno.
#[test]
fn messages_read_as_linux_words_them() {
    for (line, msg) in [
        ("bogus=1", "Unknown parameter `bogus' (ENOENT)"),
        (
            "bench=statneg tasks=999999",
            "`999999' invalid for parameter `tasks': expected a whole number from 1 to 255 (EINVAL)",
        ),
        (
            "hz=5",
            "`5' invalid for parameter `hz': expected an integer from 10 to 1000 (EINVAL)",
        ),
        (
            "bench=statneg bench=statneg",
            "parameter `bench' given more than once (EINVAL)",
        ),
        (
            "selftest smb=//10.0.2.100/share",
            "parameters `selftest' and `smb' cannot run together (EINVAL)",
        ),
        (
            "tasks=2",
            "parameter `tasks' does nothing without `bench=' (EINVAL)",
        ),
    ] {
        let e = parse(line).unwrap_err();
        assert_eq!(std::format!("{e}"), msg, "{line}");
    }
    let e = parse_boot(b"hz=1000", true).unwrap_err();
    assert_eq!(
        std::format!("{e}"),
        "command line longer than 4096 bytes was cut, so it is refused (E2BIG)"
    );
}
