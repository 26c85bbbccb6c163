//! Smoke runs of `bench pingpong`, `bench predict` and the per-op
//! `transfers=` figure of host mode (1 s runs; the figures themselves are
//! for the reports, here only their shape and the zero/non-zero rules).

use std::process::Command;

use benchlab::predict;
use formats::output::parse;

fn bench_exe() -> Command {
    Command::new(env!("CARGO_BIN_EXE_bench"))
}

fn run(args: &[&str]) -> String {
    let out = bench_exe().args(args).output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "bench {args:?}: exit {:?}\n{stdout}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    stdout
}

#[test]
fn pingpong_prints_a_transfer_latency() {
    let out = run(&["pingpong", "--batches", "5"]);
    let ns = bench::pingpong::parse_transfer_ns(&out).unwrap_or_else(|| panic!("{out}"));
    assert!(ns > 1.0 && ns < 1e7, "{out}");
}

/// Host mode, 2 tasks: the lock-free designs move no line; transient does.
#[test]
fn host_mode_transfers_per_design() {
    for (design, moves) in [("noalloc", false), ("negative", false), ("transient", true)] {
        let out = run(&[
            "host",
            "bench=statneg",
            "tasks=2",
            &format!("design={design}"),
            "warmup=0",
            "secs=1",
        ]);
        let t = parse(&out).unwrap().per_op.unwrap().transfers;
        let t = t.unwrap_or_else(|| panic!("no transfers= in {out}"));
        assert_eq!(t > 0.0, moves, "{design}: {out}");
    }
}

#[test]
fn predict_writes_its_table_and_csv() {
    let dir = std::env::temp_dir().join(format!("bench-predict-{}", std::process::id()));
    let out = run(&[
        "predict",
        "--designs",
        "noalloc,transient",
        "--locks",
        "qspinlock,ttas",
        "--transfer-ns",
        "100",
        "--secs",
        "1",
        "--warmup",
        "0",
        "--out",
        dir.to_str().unwrap(),
    ]);
    assert!(
        out.contains("transfer latency: 100.0 ns (given with --transfer-ns)"),
        "{out}"
    );
    let models = predict::read_dir(&dir).unwrap();
    let _ = std::fs::remove_dir_all(&dir);
    assert_eq!(models.len(), 4, "{models:?}");
    let noalloc = models.iter().find(|m| m.design == "noalloc").unwrap();
    assert_eq!(noalloc.inputs.hot_stores, 0.0, "{noalloc:?}");
    assert!((noalloc.at(64) / noalloc.at(1) - 64.0).abs() < 1e-6);
    let tr = models
        .iter()
        .find(|m| m.design == "transient" && m.lock.name() == "ttas")
        .unwrap();
    assert!(tr.inputs.hot_stores >= 1.0, "{tr:?}");
    // The lock model: without sharing, TTAS collapses.
    assert!(
        tr.predict(64).ops_no_sharing < tr.predict(8).ops_no_sharing,
        "TTAS collapses: {tr:?}"
    );
    // The sharing term's inputs were measured: transient's dentry is hashed
    // for part of each op, and sharing ops are cheaper than the op.
    assert!(tr.inputs.hashed_ns > 0.0, "{tr:?}");
    assert!(tr.inputs.hit_ns > 0.0 && tr.inputs.hit_ns < tr.inputs.ns_per_op);
    assert_eq!(tr.inputs.allocs, 1.0);
    assert!(tr.predict(2).allocs < 1.0);
    for bad in [
        &["predict", "--locks", "mcs"][..],
        &["predict", "--transfer-ns", "-1"],
    ] {
        let o = bench_exe().args(bad).output().unwrap();
        assert!(!o.status.success(), "{bad:?}");
    }
}

/// The census tells the lines tasks share from each task's own: in
/// `statneg-owndir` each task's directory (its lockref, its lock) is its
/// own, so no shared line is a lock line, where statneg's parent directory,
/// lock and all, is shared by every task. Priced by the model with the
/// same times for both (so that only the census's counts differ, and
/// nothing here depends on how fast this machine ran the two runs), the
/// prediction at 2 CPUs is far above statneg's.
#[test]
fn predict_prices_only_the_lines_tasks_share() {
    let model = |testcase: &str| {
        let dir =
            std::env::temp_dir().join(format!("bench-predict-{testcase}-{}", std::process::id()));
        run(&[
            "predict",
            "--designs",
            "transient",
            "--locks",
            "qspinlock",
            "--testcase",
            testcase,
            "--transfer-ns",
            "100",
            "--secs",
            "1",
            "--warmup",
            "0",
            "--out",
            dir.to_str().unwrap(),
        ]);
        let mut m = predict::read_dir(&dir).unwrap();
        let _ = std::fs::remove_dir_all(&dir);
        assert_eq!(m.len(), 1, "{m:?}");
        m.remove(0)
    };
    // The two tasks' names sit in one in-lookup bucket, whose lock they
    // then share, for one hash seed in 256 (dcache.rs, `InLookupBucket`);
    // each run has a seed of its own, so three such runs in a row would
    // take a lock shared for every seed.
    let owns_no_lock = |m: &predict::Model| m.inputs.lines.iter().all(|l| l.holds == 0.0);
    let mut own = model("statneg-owndir");
    for _ in 0..2 {
        if owns_no_lock(&own) {
            break;
        }
        own = model("statneg-owndir");
    }
    let shared = model("statneg");
    assert!(
        !own.inputs.lines.is_empty(),
        "the superblock is shared: {own:?}"
    );
    assert!(owns_no_lock(&own), "{own:?}");
    assert!(
        shared
            .inputs
            .lines
            .iter()
            .any(|l| l.holds >= 1.0 && l.fast >= 1.0),
        "{shared:?}"
    );
    // The census's counts as measured; every time fixed, the same for both.
    let timed_alike = |m: &predict::Model| {
        let mut m = m.clone();
        m.transfer_ns = 100.0;
        let i = &mut m.inputs;
        i.ns_per_op = 1_000.0;
        (i.hashed_ns, i.hit_ns, i.lookup_ns) = (300.0, 200.0, 100.0);
        for l in &mut i.lines {
            l.hold_ns = 20.0 * l.holds;
        }
        m
    };
    let (own, shared) = (timed_alike(&own), timed_alike(&shared));
    eprintln!(
        "RATIO {}",
        own.predict(2).ops_no_sharing / shared.predict(2).ops_no_sharing
    );
    assert!(
        own.predict(2).ops_no_sharing > 1.5 * shared.predict(2).ops_no_sharing,
        "{own:?}\n{shared:?}"
    );
}

/// Under `--validate` with a measured transfer latency, each round's
/// 2-task run is predicted with the latency measured around it (this VM's
/// vCPUs move between cores that share a cache and cores that do not; a
/// round whose latency moved during it runs again); a latency given with
/// `--transfer-ns` is used as given.
#[test]
fn validate_measures_the_transfer_latency_around_each_two_task_run() {
    let args = [
        "predict",
        "--designs",
        "noalloc",
        "--locks",
        "qspinlock",
        "--validate",
        "--repeat",
        "2",
        "--secs",
        "1",
        "--warmup",
        "0",
    ];
    let out = run(&args);
    let mut used_tx = Vec::new();
    for round in 1..=2 {
        // A round whose latency moved during its 2-task run runs again (up
        // to 3 tries): every try has a line, and only the last one says
        // what the round was predicted with.
        let lines: Vec<&str> = out
            .lines()
            .filter(|l| {
                l.starts_with(&format!(
                    "round {round} noalloc lock=qspinlock: transfer latency "
                ))
            })
            .collect();
        assert!((1..=3).contains(&lines.len()), "round {round}:\n{out}");
        let (line, earlier) = lines.split_last().unwrap();
        for l in earlier {
            assert!(
                l.ends_with("it moved during the run; running it again"),
                "{l}"
            );
        }
        let used: f64 = line
            .rsplit_once("predicted with ")
            .and_then(|(_, t)| t.strip_suffix(" ns"))
            .and_then(|t| t.parse().ok())
            .unwrap_or_else(|| panic!("{line}"));
        assert!(used > 1.0 && used < 1e7, "{line}");
        used_tx.push(used);
    }
    // Round 1 fits the model, round 2 validates it with round 1's inputs;
    // both are printed, and only the held-out round gives the verdict.
    assert!(
        out.contains("rounds: the model is fitted on 1 (odd) and validated on 2 (even)"),
        "{out}"
    );
    assert!(out.contains("| noalloc | qspinlock | fit 1 |"), "{out}");
    assert!(
        out.contains("| noalloc | qspinlock | held out 2 |"),
        "{out}"
    );
    // The predicted table is made at the rounds' (lower) median latency,
    // and says so where that is not the reading taken when the run began.
    let start: f64 = out
        .lines()
        .find_map(|l| l.strip_prefix("transfer latency: "))
        .and_then(|l| l.split_once(" ns"))
        .and_then(|(t, _)| t.parse().ok())
        .unwrap_or_else(|| panic!("{out}"));
    let median = used_tx.iter().cloned().fold(f64::INFINITY, f64::min);
    let said = out
        .lines()
        .find(|l| l.starts_with("predicted table at t_x = "));
    match said {
        Some(said) => {
            assert!(said.contains(&format!("= {median:.1} ns")), "{said}");
            assert!(said.contains(&format!("({start:.1} ns when")), "{said}");
        }
        None => assert_eq!(format!("{median:.1}"), format!("{start:.1}"), "{out}"),
    }
    let given = run(&[&args[..], &["--transfer-ns", "100"]].concat());
    assert!(
        !given.contains("transfer latency measured around"),
        "{given}"
    );
    assert!(!given.lines().any(|l| l.starts_with("round ")), "{given}");
}

/// Under `--validate` a design that allocates has its spans timed at 1 CPU
/// and at 2 in each round: a line per round, the spans table after the
/// check (with the cost term's spans beside the run's), and checks.csv
/// keeps them; a design that allocates nothing has none.
#[test]
fn validate_times_the_spans_of_an_allocating_design() {
    let dir = std::env::temp_dir().join(format!("bench-spans-{}", std::process::id()));
    let out = run(&[
        "predict",
        "--designs",
        "transient,noalloc",
        "--locks",
        "qspinlock",
        "--transfer-ns",
        "30",
        "--validate",
        "--secs",
        "1",
        "--warmup",
        "0",
        "--out",
        dir.to_str().unwrap(),
    ]);
    let checks = std::fs::read_to_string(dir.join("checks.csv")).unwrap();
    let text = std::fs::read_to_string(dir.join("validation.md")).unwrap();
    let _ = std::fs::remove_dir_all(&dir);
    assert!(
        out.lines()
            .any(|l| l
                .starts_with("round 1 transient lock=qspinlock: spans at 1 → 2 CPUs: slow part ")),
        "{out}"
    );
    assert!(
        !out.contains("round 1 noalloc lock=qspinlock: spans"),
        "{out}"
    );
    let row = text
        .lines()
        .find(|l| l.starts_with("| transient | qspinlock | 1 | 30.0 | "))
        .unwrap_or_else(|| panic!("no spans row:\n{text}"));
    assert_eq!(row.matches('|').count(), 18, "{row}");
    let checks = predict::checks_from_csv(&checks).unwrap();
    let tr = checks.iter().find(|c| c.design == "transient").unwrap();
    assert_eq!((tr.spans_1.tasks, tr.spans_2.tasks), (1, 2), "{tr:?}");
    assert_eq!(tr.spans_1.own_hash, 1.0, "{tr:?}");
    assert!(
        tr.spans_2.slow_ns > 0.0 && tr.slow_ns_at_sharing > 0.0,
        "{tr:?}"
    );
    assert!(tr.window_ns_at_sharing > 0.0, "{tr:?}");
    let na = checks.iter().find(|c| c.design == "noalloc").unwrap();
    assert_eq!(
        (na.spans_2.tasks, na.slow_ns_at_sharing),
        (0, 0.0),
        "{na:?}"
    );
}
