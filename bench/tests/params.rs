//! The benchmark words parser: good words, defaults, and every kind of bad word.

use bench::cmdline::CmdlineError;
use bench::params::{Bench, Design, LockKind, Params, HELP, KEYS, MAX_TASKS};

#[test]
fn full_line_parses() {
    let p = Params::parse_line("bench=statneg tasks=2 design=noalloc warmup=1 secs=3").unwrap();
    assert_eq!(
        p,
        Params {
            bench: Bench::Statneg,
            tasks: 2,
            design: Design::named("noalloc"),
            warmup: 1,
            secs: 3,
            lock: LockKind::DEFAULT,
            pause: 0,
            names: bench::params::DEFAULT_NAMES,
            frontend: bench::params::Frontend::DEFAULT,
        }
    );
}

#[test]
fn every_workload_and_design_name() {
    for b in Bench::ALL {
        for d in Design::all() {
            let p = Params::parse_line(&format!("design={} bench={}", d.name(), b.name())).unwrap();
            assert_eq!((p.bench, p.design), (b, d));
        }
    }
    assert_eq!(Bench::from_name("statneg-deep"), Some(Bench::StatnegDeep));
    assert_eq!(Design::named("negative").mount_opts(), "enoent=negative");
}

#[test]
fn defaults_and_round_trip() {
    let p = Params::parse_line("bench=churn").unwrap();
    assert_eq!(
        (p.tasks, p.design, p.warmup, p.secs),
        (1, Design::baseline(), 2, 5)
    );
    let q = Params::parse_line(&p.to_string()).unwrap();
    assert_eq!(p, q);
    assert_eq!(
        p.to_string(),
        "bench=churn tasks=1 design=transient warmup=2 secs=5"
    );
}

#[test]
fn limits() {
    assert!(Params::parse_line(&format!("bench=statneg tasks={MAX_TASKS}")).is_ok());
    assert_eq!(MAX_TASKS, 255, "KEYS' help text says 1..255");
    assert!(Params::parse_line("bench=statneg warmup=0").is_ok());
    assert!(Params::parse_line("bench=statneg secs=3600").is_ok());
}

fn bad(line: &str) -> CmdlineError<'_> {
    Params::parse_line(line).expect_err(line)
}

#[test]
fn unknown_key_and_the_help() {
    let e = bad("bench=statneg cpus=2");
    assert_eq!(e, CmdlineError::UnknownKey("cpus"));
    assert_eq!(e.to_string(), "Unknown parameter `cpus' (ENOENT)");
    let help = HELP.to_string();
    assert!(help.starts_with("valid keys:\n"), "{help}");
    for k in KEYS {
        assert!(
            help.contains(&format!("  {}=", k.name)),
            "help lacks {}: {help}",
            k.name
        );
        assert!(
            help.contains(k.help),
            "help lacks the help of {}: {help}",
            k.name
        );
    }
    assert_eq!(help.lines().count(), 1 + KEYS.len());
    for d in Design::all() {
        assert!(help.contains(d.name()), "{help}");
    }
}

#[test]
fn bad_values() {
    for line in [
        "bench=statnegx",
        "bench=statneg tasks=0",
        "bench=statneg tasks=256",
        "bench=statneg tasks=-1",
        "bench=statneg tasks=+2",
        "bench=statneg tasks=2x",
        "bench=statneg tasks=99999999999999999999",
        "bench=statneg design=Noalloc",
        "bench=statneg warmup=3601",
        "bench=statneg secs=0",
        "bench=statneg secs=1.5",
    ] {
        match bad(line) {
            CmdlineError::BadValue { .. } => {}
            other => panic!("{line}: {other:?}"),
        }
        assert!(
            bad(line).to_string().contains("' invalid for parameter `"),
            "{line}"
        );
    }
    for (line, key) in [
        ("bench=statneg tasks=", "tasks"),
        ("bench=statneg design=", "design"),
    ] {
        assert_eq!(bad(line), CmdlineError::MissingValue(key));
    }
    let e = bad("bench=statneg design=nosuch").to_string();
    for d in Design::all() {
        assert!(e.contains(d.name()), "{e}");
    }
}

#[test]
fn other_errors() {
    assert_eq!(bad("tasks=2"), CmdlineError::Required("bench"));
    assert_eq!(bad(""), CmdlineError::Required("bench"));
    assert_eq!(
        bad("tasks=2").to_string(),
        "missing parameter `bench=' (EINVAL)"
    );
    assert_eq!(
        bad("bench=statneg noalloc"),
        CmdlineError::UnknownKey("noalloc")
    );
    assert_eq!(
        bad("bench=statneg tasks=1 tasks=2"),
        CmdlineError::Duplicate("tasks")
    );
    assert_eq!(bad("=3 bench=statneg"), CmdlineError::EmptyKey("=3"));
    // Words are split the one way everywhere: argv words or one line.
    assert_eq!(
        Params::parse_words(["bench=statpos", "tasks=4"]).unwrap(),
        Params::parse_line(" bench=statpos\ttasks=4 ").unwrap()
    );
}

#[test]
fn names_for_the_many_name_workloads() {
    let p = Params::parse_line("bench=statneg-many names=64 tasks=2").unwrap();
    assert_eq!((p.bench, p.names), (Bench::StatnegMany, 64));
    assert_eq!(Params::parse_line(&p.to_string()).unwrap(), p);
    assert!(p.to_string().ends_with(" names=64"), "{p}");
    let d = Params::parse_line("bench=statmix").unwrap();
    assert_eq!(
        (d.bench, d.names),
        (Bench::Statmix, bench::params::DEFAULT_NAMES)
    );
    assert!(!d.to_string().contains("names="), "{d}");
    for bad in ["names=0", "names=1000001", "names=x"] {
        let line = format!("bench=statneg-many {bad}");
        assert!(Params::parse_line(&line).is_err(), "{line}");
    }
}
