//! The kernel command line: whitespace-separated words, each either a bare
//! flag (`selftest`) or `key=value`, parsed by the one command-line parser
//! (`bench::cmdline`) against two tables: the kernel's own [`KEYS`] and the
//! benchmark's (`bench::params::keys`, the words host mode takes too), so
//! both places accept exactly the same benchmark words with the same
//! errors. Parsing is strict: an unknown key, a key both tables claim, a
//! value that does not parse, a flag given a value, a key without its value
//! or a repeated key is an error naming the word, worded as Linux words a
//! bad boot parameter; the caller then prints [`Help`] (every key with a
//! one-line description) and exits non-zero.
//!
//! What only the whole line decides is checked here, after the words: a
//! benchmark word without `bench=`, two modes at once, `smbopts=` without
//! `smb=`. Of the benchmark words, `lock=` is taken in any mode: it picks
//! the spinlock kind of every fs lock ([`Config::lock`]; a benchmark's own
//! `lock=` is the same word); `secs=` and `design=` also serve `stress=`.
//!
//! Pure code that never allocates (the kernel parses before its heap
//! exists; errors borrow the words they name): [`parse`] is a function from
//! bytes to a [`Config`], unit-tested on the host (`cargo test -p kernel
//! --lib`) and fuzzed with allocation forbidden (`fuzz_cmdline/`).
//! A line longer than [`MAX_LEN`] is refused ([`parse_boot`]), never cut.
//! To add a key: add a field to [`Config`] (with its default in
//! `Config::default`) and one [`Key`] line to [`KEYS`] with a parser from
//! the `value` helpers.

use core::fmt;

use bench::cmdline::{value, Key, Kind, Values};
use bench::params::ParamsBuilder;

pub use bench::cmdline::CmdlineError;

/// Longest command line the kernel keeps (bytes, without the NUL). The
/// boot code copies at most this much and says when the loader passed
/// more; `qemu-run` refuses longer lines before booting.
pub const MAX_LEN: usize = 4096;

mod config;

pub use config::{Config, Crash, Demo, Stress, GUEST_LOCK};

/// The parse state: the [`Config`] the kernel's keys set and the
/// benchmark words the benchmark's keys collect, read together once the
/// line is done ([`Draft::finish`]).
#[derive(Clone, Debug, Default)]
pub struct Draft {
    /// What the kernel's keys set.
    pub config: Config,
    /// What the benchmark's keys set.
    pub bench: ParamsBuilder,
}

impl AsMut<ParamsBuilder> for Draft {
    fn as_mut(&mut self) -> &mut ParamsBuilder {
        &mut self.bench
    }
}

/// Every key the kernel accepts.
pub const KEYS: &[Key<Draft>] = &[
    Key {
        name: "selftest",
        syntax: Values::Text(""),
        help: "run the in-guest self-tests, print `N passed, M failed`, exit 0 iff M is 0",
        kind: Kind::Flag(|d| d.config.selftest = true),
    },
    Key {
        name: "log",
        syntax: Values::Text("off|error|warn|info|debug|trace"),
        help: "log level of kernel messages (default info)",
        kind: Kind::Value(|d, v| {
            d.config.log = value::one_of(
                v,
                &[
                    ("off", log::LevelFilter::Off),
                    ("error", log::LevelFilter::Error),
                    ("warn", log::LevelFilter::Warn),
                    ("info", log::LevelFilter::Info),
                    ("debug", log::LevelFilter::Debug),
                    ("trace", log::LevelFilter::Trace),
                ],
                "off, error, warn, info, debug or trace",
            )?;
            Ok(())
        }),
    },
    Key {
        name: "hz",
        syntax: Values::Text("10..1000"),
        help: "per-CPU timer tick frequency in Hz (default 100)",
        kind: Kind::Value(|d, v| {
            d.config.hz = value::int_in(v, 10, 1000, "an integer from 10 to 1000")? as u32;
            Ok(())
        }),
    },
    Key {
        name: "smp_timeout",
        syntax: Values::Text("100..600000"),
        help: "milliseconds to wait for all CPUs to come online (default 60000)",
        kind: Kind::Value(|d, v| {
            d.config.smp_timeout_ms =
                value::int_in(v, 100, 600_000, "an integer from 100 to 600000")? as u32;
            Ok(())
        }),
    },
    Key {
        name: "crash",
        syntax: Values::Text("pagefault|stackoverflow[-ap]|ud|panic"),
        help: "crash on purpose after boot, to see the fault report and exit status",
        kind: Kind::Value(|d, v| {
            d.config.crash = Some(value::one_of(
                v,
                &[
                    ("pagefault", Crash::PageFault),
                    ("stackoverflow", Crash::StackOverflow),
                    ("stackoverflow-ap", Crash::StackOverflowAp),
                    ("ud", Crash::InvalidOpcode),
                    ("panic", Crash::Panic),
                ],
                "pagefault, stackoverflow, stackoverflow-ap, ud or panic",
            )?);
            Ok(())
        }),
    },
    Key {
        name: "trace",
        syntax: Values::Text("lookup"),
        help: "print every step of every path walk on the console, lines prefixed `# `",
        kind: Kind::Value(|d, v| {
            d.config.trace_lookup = value::one_of(v, &[("lookup", true)], "lookup")?;
            Ok(())
        }),
    },
    Key {
        name: "demo",
        syntax: Values::Text("trace|table|pingpong"),
        help: "trace: trace stat(\"/a/b/missing\") per design; table: statneg (frontend=stat) per design in 8 interleaved rounds, medians, per-round ratios and the pairs it cannot tell apart; pingpong: cache-line transfer ns between CPUs 0 and 1",
        kind: Kind::Value(|d, v| {
            d.config.demo = Some(value::one_of(
                v,
                &[
                        ("trace", Demo::Trace),
                        ("table", Demo::Table),
                        ("pingpong", Demo::Pingpong),
                    ],
                "trace, table or pingpong",
            )?);
            Ok(())
        }),
    },
    Key {
        name: "rounds",
        syntax: Values::Text("1..8"),
        help: "with demo=table: its rounds (default 8; fewer for a smoke: the rows and the status, no pair told apart)",
        kind: Kind::Value(|d, v| {
            d.config.rounds = Some(value::int_in(
                v,
                1,
                crate::demotable::TABLE_ROUNDS as u64,
                "an integer from 1 to 8",
            )? as u32);
            Ok(())
        }),
    },
    Key {
        name: "stress",
        syntax: Values::Text("rcu|mem|oom|hostile"),
        help: "rcu: churn vs checked lookups on every CPU (secs=S); mem: 1M missing names per design; oom: fill tmpfs to ENOMEM and recover; hostile: 1M distinct misses/s per CPU for secs=S (60), negative design",
        kind: Kind::Value(|d, v| {
            d.config.stress = Some(value::one_of(
                v,
                &[
                    ("rcu", Stress::Rcu),
                    ("mem", Stress::Mem),
                    ("oom", Stress::Oom),
                    ("hostile", Stress::Hostile),
                ],
                "rcu, mem, oom or hostile",
            )?);
            Ok(())
        }),
    },
    Key {
        name: "failslab",
        syntax: Values::Text("1..1000000000"),
        help: "fault injection: every N-th fs allocation fails with ENOMEM (as Linux failslab's interval)",
        kind: Kind::Value(|d, v| {
            d.config.failslab = Some(value::int_in(
                v,
                1,
                1_000_000_000,
                "an integer from 1 to 1000000000",
            )?);
            Ok(())
        }),
    },
    Key {
        name: "poison",
        syntax: Values::Text("0|1"),
        help: "1: fill freed memory with 0x6b, check the fill on reuse (use-after-free detector); stress=rcu: on unless 0",
        kind: Kind::Value(|d, v| {
            d.config.poison = Some(value::one_of(
                v,
                &[("0", false), ("1", true)],
                "0 or 1",
            )?);
            Ok(())
        }),
    },
    Key {
        name: "smb",
        syntax: Values::Text("//A.B.C.D/SHARE"),
        help: "mount the SMB share at /mnt over virtio-net, run `lsla` cold then warm, exit",
        kind: Kind::Value(|d, v| {
            d.config.smb = Some(crate::smbargs::parse_source(v)?);
            Ok(())
        }),
    },
    Key {
        name: "smbopts",
        syntax: Values::Text("username=U,password=P,eacache=D,..."),
        help: "cifs mount options for `smb=` (as mount -t cifs -o; eacache=DESIGN, nouser_xattr; the designs: docs/designs.md)",
        kind: Kind::Value(|d, v| {
            d.config.smbopts = Some(crate::smbargs::parse_opts(v)?);
            Ok(())
        }),
    },
    Key {
        name: "host_cores",
        syntax: Values::Text("1..4096"),
        help: "host cores the vCPUs run on (qemu-run passes it; the demo table and benchmark notes name overcommit)",
        kind: Kind::Value(|d, v| {
            let n = value::int_in(v, 1, 4096, "a core count from 1 to 4096")?;
            d.config.host_cores = Some(n as u32);
            Ok(())
        }),
    },
    Key {
        name: "smbread",
        syntax: Values::Text("PATH"),
        help: "with smb=: after the listing read the share-relative file PATH, print its size and SHA-256",
        kind: Kind::Value(|d, v| {
            d.config.smbread = Some(crate::smbargs::parse_read_path(v)?);
            Ok(())
        }),
    },
];

/// The benchmark's keys, for the kernel's parse state.
const BENCH_KEYS: &[Key<Draft>] = &bench::params::keys::<Draft>();

/// Every table a kernel command line is parsed against, in the order the
/// help lists them.
pub const TABLES: &[&[Key<Draft>]] = &[KEYS, BENCH_KEYS];

/// Parse the command line as the boot code copied it: `truncated` says the
/// loader passed more than [`MAX_LEN`] bytes, which is refused before the
/// kept part is read (a cut line could silently lose its last words).
pub fn parse_boot(bytes: &[u8], truncated: bool) -> Result<Config, CmdlineError<'_>> {
    if truncated || bytes.len() > MAX_LEN {
        return Err(CmdlineError::TooLong { max: MAX_LEN });
    }
    parse_bytes(bytes)
}

/// Parse raw command-line bytes.
pub fn parse_bytes(bytes: &[u8]) -> Result<Config, CmdlineError<'_>> {
    parse(core::str::from_utf8(bytes).map_err(|_| CmdlineError::NotUtf8)?)
}

/// Parse a command line.
pub fn parse(line: &str) -> Result<Config, CmdlineError<'_>> {
    let mut draft = Draft::default();
    bench::cmdline::parse_words(bench::cmdline::words(line), &mut draft, TABLES)?;
    draft.finish()
}

impl Draft {
    /// The config the whole line makes: the benchmark words become a run
    /// only with `bench=` (`secs=` and `design=` may serve `stress=`
    /// instead, `lock=` any mode), at most one mode runs, and a setting
    /// needs the key it configures.
    pub fn finish(self) -> Result<Config, CmdlineError<'static>> {
        let Draft { mut config, bench } = self;
        config.secs = bench.secs;
        config.design = bench.design;
        config.lock = bench.lock;
        if bench.bench.is_some() {
            config.bench = Some(bench.finish()?);
        } else if let Some(k) = bench.run_only_key() {
            return Err(needs_bench(k));
        } else if config.stress.is_none() && (config.secs.is_some() || config.design.is_some()) {
            return Err(needs_bench(if config.secs.is_some() {
                "secs"
            } else {
                "design"
            }));
        }
        let modes = [
            ("selftest", config.selftest),
            ("bench", config.bench.is_some()),
            ("demo", config.demo.is_some()),
            ("stress", config.stress.is_some()),
            ("smb", config.smb.is_some()),
        ];
        let mut on = modes.iter().filter(|m| m.1).map(|m| m.0);
        if let (Some(a), Some(b)) = (on.next(), on.next()) {
            return Err(CmdlineError::Conflict(a, b));
        }
        if config.rounds.is_some() && config.demo != Some(Demo::Table) {
            return Err(CmdlineError::Needs {
                key: "rounds",
                needs: "demo=table",
            });
        }
        if config.smbopts.is_some() && config.smb.is_none() {
            return Err(CmdlineError::Needs {
                key: "smbopts",
                needs: "smb",
            });
        }
        Ok(config)
    }
}

fn needs_bench(key: &'static str) -> CmdlineError<'static> {
    CmdlineError::Needs {
        key,
        needs: "bench",
    }
}

/// The key reference: one line per key of both tables.
pub struct Help;

impl fmt::Display for Help {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        bench::cmdline::Help {
            title: "valid kernel command-line keys:",
            tables: TABLES,
        }
        .fmt(f)
    }
}

#[cfg(test)]
mod tests {
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
        assert_eq!(parse("demo=table").unwrap().rounds, None);
        assert_eq!(parse("demo=table rounds=1").unwrap().rounds, Some(1));
        assert!(parse("demo=table rounds=0").is_err());
        assert_eq!(
            parse("demo=table rounds=8").unwrap().rounds,
            Some(crate::demotable::TABLE_ROUNDS as u32)
        );
        assert!(parse("demo=table rounds=9").is_err());
        assert_eq!(
            parse("demo=trace rounds=2"),
            Err(CmdlineError::Needs {
                key: "rounds",
                needs: "demo=table"
            })
        );
        assert_eq!(
            parse("selftest rounds=2"),
            Err(CmdlineError::Needs {
                key: "rounds",
                needs: "demo=table"
            })
        );
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
}
