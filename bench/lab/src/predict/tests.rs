//! Unit tests of `bench predict`: the census and window inputs, the
//! predict.csv format and the tables.
use super::round::Round;
use super::round::Validation;
use super::split;
use super::*;
use fs::stats::LineCensus;

fn line(addr: usize, stores: u64, holds: u64, hold_ns: u64, writers: u64) -> LineCensus {
    LineCensus {
        addr,
        stores,
        visits: stores - holds,
        in_hold: holds,
        holds,
        hold_ns,
        writers,
        ..LineCensus::default()
    }
}

#[test]
fn census_to_inputs() {
    // 1000 ops of two tasks (writer bits 0b01 and 0b10): the hottest line
    // 5 stores/op, 2 holds of 60 ns, stored to by both; a line of one task
    // only (its own directory) at 3/op; one more shared line at 1/op; a
    // per-op dentry's line below the shared threshold.
    let mut hot = line(0x1000, 5000, 2000, 120_000, 0b11);
    hot.fast = 1000;
    hot.untagged = 1000;
    hot.win_visits = 1000;
    let lines = [
        hot,
        line(0x4000, 3000, 0, 0, 0b01),
        line(0x2000, 1000, 0, 0, 0b11),
        line(0x3000, 3, 1, 40, 0b10),
    ];
    let i = inputs_from_census(&lines, 1000, 2, 2000.0);
    assert_eq!(i.ns_per_op, 2000.0);
    assert_eq!(i.lines.len(), 2, "{i:?}");
    let h = &i.lines[0];
    assert_eq!((h.stores, h.tagged, h.visits, h.fast), (5.0, 4.0, 3.0, 1.0));
    assert_eq!(
        (h.in_hold, h.holds, h.hold_ns, h.win_visits),
        (2.0, 2.0, 120.0, 1.0)
    );
    assert_eq!((i.hot_stores, i.hot_holds, i.hold_ns), (5.0, 2.0, 120.0));
    assert_eq!(i.other_stores, 1.0);
    // With one task, every line stored to often enough counts.
    assert_eq!(inputs_from_census(&lines, 1000, 1, 2000.0).lines.len(), 3);
    // No shared line at all: nothing serialised.
    let i = inputs_from_census(&lines[3..], 1000, 2, 200.0);
    assert!(i.lines.is_empty());
    assert_eq!((i.hot_stores, i.other_stores, i.hold_ns), (0.0, 0.0, 0.0));
    // The census' slowdown comes off its hold times.
    let mut j = inputs_from_census(&lines, 1000, 2, 2000.0);
    scale_times(&mut j, 0.5);
    assert_eq!((j.hold_ns, j.lines[0].hold_ns), (60.0, 60.0));
}

#[test]
fn windows_to_sharing_inputs() {
    // 1000 ops, census 3000 ns/op, plain 2000 ns/op, clock 10 ns: the
    // slow part 2410 ns/op in the census (2400 after its clock read),
    // so hit = 3000 - 2400 - 10 = 590; the plain slow part is
    // 2000 - 590 = 1410, so the hashed window (1210 - 10 = 1200 in the
    // census) and the time to the parallel lookup (610 - 10 = 600) scale
    // by 1410/2400.
    let w = fs::stats::CensusWindows {
        hashed: 1000,
        hashed_ns: 1_210_000,
        slow: 1000,
        slow_ns: 2_410_000,
        lookup: 1000,
        lookup_ns: 610_000,
        common: 999,
        own_hash: 1000,
        own_hash_ns: 700_000,
    };
    let sh = sharing_from_windows(&w, 1000, 3000.0, 2000.0, 10.0);
    assert!((sh.hit_ns - 590.0).abs() < 1e-9, "{sh:?}");
    assert!(
        (sh.hashed_ns - 1200.0 * 1410.0 / 2400.0).abs() < 1e-9,
        "{sh:?}"
    );
    assert!(
        (sh.lookup_ns - 600.0 * 1410.0 / 2400.0).abs() < 1e-9,
        "{sh:?}"
    );
    // The same misses, each task its own name: nobody finds the dentry.
    let distinct = fs::stats::CensusWindows { common: 0, ..w };
    let d = sharing_from_windows(&distinct, 1000, 3000.0, 2000.0, 10.0);
    assert_eq!((d.hashed_ns, d.lookup_ns, d.hit_ns), (0.0, 0.0, sh.hit_ns));
    // No miss (noalloc, negative's cached hit): nothing to share.
    let nothing = Sharing {
        hit_ns: 200.0,
        ..Sharing::default()
    };
    let none = fs::stats::CensusWindows::default();
    assert_eq!(
        sharing_from_windows(&none, 1000, 300.0, 200.0, 10.0),
        nothing
    );
    // negative: one miss and one long window in the whole run (its
    // first lookup; the teardown unhashes): not per-op windows.
    let once = fs::stats::CensusWindows {
        hashed: 1,
        hashed_ns: 300_000,
        slow: 1,
        slow_ns: 2_000,
        lookup: 1,
        lookup_ns: 1_000,
        common: 1,
        own_hash: 1,
        own_hash_ns: 1_200,
    };
    assert_eq!(
        sharing_from_windows(&once, 1000, 300.0, 200.0, 10.0),
        nothing
    );
}

#[test]
fn predict_csv_round_trips() {
    let m = Model {
        testcase: "statneg".into(),
        design: "transient".into(),
        lock: LockKind::Ticket,
        inputs: Inputs {
            ns_per_op: 2000.0,
            hot_stores: 5.0,
            hot_holds: 2.0,
            hold_ns: 100.0,
            other_stores: 6.0,
            lines: vec![
                model::Line {
                    stores: 5.0,
                    tagged: 4.0,
                    visits: 3.0,
                    fast: 1.0,
                    in_hold: 2.0,
                    holds: 2.0,
                    hold_ns: 100.0,
                    win_visits: 1.0,
                    win_in_hold: 0.5,
                },
                model::Line {
                    stores: 6.0,
                    visits: 6.0,
                    ..model::Line::default()
                },
            ],
            hashed_ns: 400.0,
            hit_ns: 150.0,
            lookup_ns: 250.0,
            allocs: 1.0,
        },
        transfer_ns: 80.0,
        lock_measured: false,
    };
    let text = to_csv(std::slice::from_ref(&m));
    assert_eq!(text.lines().count(), 1 + model::CPUS.len());
    assert!(
        text.contains("statneg,transient,ticket,1,500000,0.000,"),
        "{text}"
    );
    assert_eq!(parse_csv(&text).unwrap(), vec![m.clone()]);
    // A file from before the sharing term still reads, without it.
    let v1: String = std::iter::once(PREDICT_HEADER_V1.to_string())
        .chain(text.lines().skip(1).map(|l| {
            let f: Vec<&str> = l.split(',').collect();
            f[..13].join(",")
        }))
        .collect::<Vec<_>>()
        .join("\n");
    let old = parse_csv(&v1).unwrap();
    assert_eq!(old[0].inputs.hashed_ns, 0.0);
    assert_eq!(old[0].inputs.ns_per_op, m.inputs.ns_per_op);
    // One from before the per-line inputs reads with the summary standing
    // for the lines.
    let v2: String = std::iter::once(PREDICT_HEADER_V2.to_string())
        .chain(text.lines().skip(1).map(|l| {
            let f: Vec<&str> = l.split(',').collect();
            f[..17].join(",")
        }))
        .collect::<Vec<_>>()
        .join("\n");
    let older = parse_csv(&v2).unwrap();
    assert!(older[0].inputs.lines.is_empty());
    assert_eq!(older[0].inputs.hashed_ns, 400.0);
    assert_eq!(older[0].inputs.lines_or_summary().len(), 2);
    let torn = text.replace(":0.5000;", ":0.5x;");
    assert!(
        parse_csv(&torn).unwrap_err().contains("bad lines"),
        "{torn}"
    );
    assert!(parse_csv("design,lock\n").is_err());
    let bad = text.replace(",ticket,", ",mcs,");
    assert!(parse_csv(&bad).unwrap_err().contains("bad lock"));
}

#[test]
fn the_check_uses_cpu_time() {
    let c = Check {
        transfer_ns: 36.5,
        predicted_per_cpu_s_at_sharing: 5e6,
        ..Check::from_rates(
            "noalloc",
            LockKind::Qspinlock,
            (10e6, 5e6),
            (5e6, 4.5e6),
            1.0,
        )
    };
    assert_eq!(c.wall_ratio(), 2.0);
    let back = checks_from_csv(&checks_to_csv(std::slice::from_ref(&c))).unwrap();
    assert_eq!(back, vec![c.clone()]);
    assert!(checks_from_csv("design\n").is_err());
    let t = validation_table(std::slice::from_ref(&c));
    assert!(t.contains("| noalloc | qspinlock | 1 |"), "{t}");
    assert!(t.contains("| 1.11 [1.11–1.11] |"), "{t}");
    assert!(t.contains("| met | 36.5 |"), "{t}");
    // Rounds at different latencies show the median round's and the range.
    let far = Check {
        transfer_ns: 234.0,
        measured_per_cpu_s: 10e6,
        ..c.clone()
    };
    let near = Check {
        transfer_ns: 40.0,
        measured_per_cpu_s: 5e6,
        ..c.clone()
    };
    let t = validation_table(&[c.clone(), far, near]);
    assert!(t.contains("| 40.0 [36–234] |"), "{t}");
    // A checks.csv from before the prediction at measured sharing, and one
    // from before the latency column, still read, as 0.
    let drop_fields = |k: usize| without_last_fields(&c, k + SPANS_FIELDS);
    let back = checks_from_csv(&drop_fields(10)).unwrap();
    assert_eq!(back[0].transfer_ns, 36.5);
    assert_eq!(back[0].predicted_per_cpu_s_at_sharing, 0.0);
    assert_eq!(back[0].sharing_ratio(), None);
    assert!(validation_table(&back).contains("| 1.11 | – |"));
    let back = checks_from_csv(&drop_fields(11)).unwrap();
    assert_eq!(back[0].transfer_ns, 0.0);
    let t = validation_table(&back);
    assert!(t.contains("| met | – |"));
    // No latency recorded: no by-latency table.
    assert!(!t.contains("By transfer latency"), "{t}");
}

/// `c`'s checks.csv text with the last `k` fields of every line (the
/// header's too) left out: the file an older `bench predict` wrote.
fn without_last_fields(c: &Check, k: usize) -> String {
    checks_to_csv(std::slice::from_ref(c))
        .lines()
        .map(|l| {
            let f: Vec<&str> = l.split(',').collect();
            f[..f.len() - k].join(",") + "\n"
        })
        .collect()
}

/// The columns after the move price in a checks.csv line: the spans (1
/// and 2 CPUs), the model's two spans, the round and its set.
const SPANS_FIELDS: usize = 2 * super::spans::COLUMNS.len() + 4;

/// A transient round at `tx` ns that met (every rate 1e6 a second).
fn transient_round(lock: LockKind, tx: f64) -> Check {
    Check {
        transfers_predicted: 5.0,
        transfers_measured: 3.0,
        allocs_predicted: 0.7,
        allocs_measured: 0.5,
        transfer_ns: tx,
        predicted_per_cpu_s_at_sharing: 1e6,
        transfers_per_alloc_measured: 6.0,
        transfers_per_alloc_at_sharing: 7.5,
        found_per_alloc_measured: 0.4,
        waits_per_alloc_measured: 0.125,
        found_predicted: 0.07,
        move_ns_measured: 55.0,
        predicted_per_cpu_s_at_sharing_and_price: 0.9e6,
        ..Check::from_rates("transient", lock, (1e6, 1e6), (1e6, 1e6), 2.0)
    }
}

/// The by-latency table ends each row with the counted transfers per
/// allocating op, the model's at the measured sharing and the run's, then
/// the shares of the allocating ops that found the name in
/// `d_alloc_parallel` and waited there; a checks.csv from before them
/// still reads, as 0, and shows a dash (transfers) or 0.00 (shares).
#[test]
fn transfers_per_allocating_op_sit_beside_the_verdict() {
    let c = transient_round(LockKind::Qspinlock, 30.0);
    let t = validation_table(std::slice::from_ref(&c));
    assert!(
        t.contains("| met | 7.50 | 6.00 | 0.07 | 0.40 | 0.12 |"),
        "{t}"
    );
    let back = checks_from_csv(&checks_to_csv(std::slice::from_ref(&c))).unwrap();
    assert_eq!(back, vec![c.clone()]);
    let older = |k: usize| without_last_fields(&c, k + SPANS_FIELDS);
    // Before the move price: no price, a dash.
    let back = checks_from_csv(&older(2)).unwrap();
    assert_eq!(
        (back[0].move_ns_measured, back[0].priced_ratio()),
        (0.0, None)
    );
    assert!(validation_table(&back).contains("| 0.07 | 0.40 | 0.12 | – | – |"));
    let back = checks_from_csv(&older(5)).unwrap();
    assert_eq!(
        (
            back[0].found_predicted,
            back[0].found_per_alloc_measured,
            back[0].waits_per_alloc_measured,
            back[0].transfers_per_alloc_measured
        ),
        (0.0, 0.0, 0.0, 6.0)
    );
    assert!(validation_table(&back).contains("| met | 7.50 | 6.00 | 0.00 | 0.00 | 0.00 | – | – |"));
    let back = checks_from_csv(&older(7)).unwrap();
    assert_eq!(
        (
            back[0].transfers_per_alloc_measured,
            back[0].transfers_per_alloc_at_sharing
        ),
        (0.0, 0.0)
    );
    assert!(validation_table(&back).contains("| met | – | – | 0.00 | 0.00 | 0.00 | – | – |"));
    // A design that allocates nothing has no shares to show.
    let none = Check {
        allocs_measured: 0.0,
        ..back[0].clone()
    };
    assert!(validation_table(&[none]).contains("| met | – | – | – | – | – | – | – |"));
}

#[test]
fn rounds_group_by_their_latency() {
    let round = |tx: f64, measured: f64, at_sharing: f64| Check {
        measured_per_cpu_s: measured,
        predicted_per_cpu_s_at_sharing: at_sharing,
        ..transient_round(LockKind::Ticket, tx)
    };
    // Three near rounds (28-40 ns: within 2x of 28) and two far ones.
    let rounds = [
        round(240.0, 2.5e6, 1.5e6),
        round(30.0, 1.25e6, 1.5e6),
        round(28.0, 1.3e6, 1.6e6),
        round(40.0, 1.2e6, 1.4e6),
        round(225.0, 2.0e6, 1.0e6),
    ];
    let all: Vec<&Check> = rounds.iter().collect();
    let g = latency_groups(&all);
    let txs: Vec<Vec<f64>> = g
        .iter()
        .map(|g| g.iter().map(|c| c.transfer_ns).collect())
        .collect();
    assert_eq!(txs, vec![vec![28.0, 30.0, 40.0], vec![225.0, 240.0]]);
    // 57 ns is past 2x the near group's 28: a group of its own.
    let mid = round(57.0, 1e6, 1e6);
    let mut more = all.clone();
    more.push(&mid);
    assert_eq!(latency_groups(&more).len(), 3);
    let t = validation_table(&rounds);
    // The whole run's median round: ratio 0.80 (1e6 / 1.25e6), met.
    assert!(t.contains("| transient | ticket | 5 |"), "{t}");
    // Near: ratios 0.77, 0.80, 0.83, median 0.80 (the 30 ns round), whose
    // prediction at measured sharing is 1.5e6 / 1.25e6 = 1.20.
    assert!(
        t.contains("| transient | ticket | 28–40 | 3 | 0.80 | 1.20 | 0.70 | 0.50 | met |"),
        "{t}"
    );
    // Far: ratios 0.40 and 0.50, the lower median 0.40 (the 240 ns round):
    // at measured sharing 1.5e6 / 2.5e6 = 0.60.
    assert!(
        t.contains("| transient | ticket | 225–240 | 2 | 0.40 | 0.60 | 0.70 | 0.50 | NOT met |"),
        "{t}"
    );
}

/// Round `round` of `design` under `lock` with 1-CPU `ns` per op (wall
/// and CPU time alike; every op allocates once where `allocs`), and a 2-CPU
/// measurement of 1.5 M ops/CPU-s at 2 effective CPUs under `--validate`.
fn a_round(round: u32, design: &str, lock: LockKind, ns: f64, validate: bool) -> Round {
    let inputs = Inputs {
        ns_per_op: ns,
        ..Inputs::default()
    };
    let o2 = output::RunOutput {
        testcase: "statneg".into(),
        average: 3_000_000,
        ..Default::default()
    };
    let spent2 = Spent {
        ops: 3_000_000,
        wall_s: 1.0,
        cpu_s: 2.0,
        ..Default::default()
    };
    Round {
        round,
        model: Model {
            testcase: "statneg".into(),
            design: design.into(),
            lock,
            inputs: inputs.clone(),
            transfer_ns: 80.0,
            lock_measured: true,
        },
        cpu: inputs,
        validation: validate.then_some(Validation {
            o2,
            spent2,
            check_tx: 80.0,
            move_ns: None,
            spans_12: None,
        }),
    }
}

#[test]
fn the_median_fit_round_sets_the_inputs() {
    let rounds = vec![
        a_round(1, "noalloc", LockKind::Ticket, 100.0, false),
        // Held out: never the table's inputs, however it compares.
        a_round(2, "noalloc", LockKind::Ticket, 115.0, false),
        a_round(3, "noalloc", LockKind::Ticket, 900.0, false),
        a_round(1, "noalloc", LockKind::Ttas, 110.0, false),
        a_round(5, "noalloc", LockKind::Ticket, 120.0, false),
    ];
    let med = split::fit_models(&rounds);
    assert_eq!(med.len(), 2);
    assert_eq!(
        (med[0].lock, med[0].inputs.ns_per_op),
        (LockKind::Ticket, 120.0)
    );
    assert_eq!(
        (med[1].lock, med[1].inputs.ns_per_op),
        (LockKind::Ttas, 110.0)
    );
}

/// The check's verdict comes only from rounds the model was not fitted
/// on: a held-out round is predicted with the fit's inputs, so its own
/// inputs change nothing, and no round is both fitted and held out.
#[test]
fn validation_never_reuses_the_fitting_rounds() {
    let q = LockKind::Qspinlock;
    // Odd rounds fit at 1 µs an op; the even rounds' own 1-CPU runs read
    // 250 ns, which would predict 4× as much were they used.
    let rounds: Vec<Round> = (1..=6)
        .map(|r| {
            a_round(
                r,
                "noalloc",
                q,
                if r % 2 == 1 { 1000.0 } else { 250.0 },
                true,
            )
        })
        .collect();
    let checks = split::checks(&rounds);
    assert_eq!(checks.len(), 6);
    let held: Vec<&Check> = checks.iter().filter(|c| c.held_out).collect();
    let fit: Vec<&Check> = checks.iter().filter(|c| !c.held_out).collect();
    assert_eq!(held.iter().map(|c| c.round).collect::<Vec<_>>(), [2, 4, 6]);
    assert_eq!(fit.iter().map(|c| c.round).collect::<Vec<_>>(), [1, 3, 5]);
    // The table's model is a fit round's, never a held-out one's.
    let f = split::fit_of(&rounds, ("statneg", "noalloc", q)).unwrap();
    assert_eq!(split::set_of(f.round), split::Set::Fit);
    // 1 µs an op, no sharing: 1 M ops/CPU-s against 1.5 M measured.
    for c in &held {
        assert!((c.predicted_per_cpu_s - 1e6).abs() < 1.0, "{c:?}");
        assert!((c.cpu_ratio() - 2.0 / 3.0).abs() < 1e-9, "{c:?}");
    }
    // Whatever a held-out round measured at 1 CPU changes nothing.
    let mut moved = rounds;
    for r in moved.iter_mut().filter(|r| r.round % 2 == 0) {
        r.model.inputs.ns_per_op = 1.0;
        r.cpu.ns_per_op = 1.0;
    }
    let again: Vec<Check> = split::checks(&moved)
        .into_iter()
        .filter(|c| c.held_out)
        .collect();
    assert_eq!(again, held.into_iter().cloned().collect::<Vec<_>>());
    // The verdict is the held-out rounds' (0.67: NOT met) although every
    // fit round, checked with its own inputs, would be too; the table says
    // which rounds are which.
    let t = validation_table(&checks);
    assert!(
        t.contains("| noalloc | qspinlock | held out 2,4,6 |"),
        "{t}"
    );
    assert!(t.contains("| noalloc | qspinlock | fit 1,3,5 |"), "{t}");
    assert!(t.contains("| NOT met |"), "{t}");
    assert!(t.contains("| in-sample |"), "{t}");
    assert!(split::say_sets(6).contains("fitted on 1,3,5 (odd) and validated on 2,4,6 (even)"));
    assert!(split::say_sets(1).contains("in-sample only"));
}

#[test]
fn cpu_seconds_reads_proc() {
    let a = cpu_seconds().expect("/proc/self/stat");
    let t = std::time::Instant::now();
    while t.elapsed().as_millis() < 50 {
        std::hint::black_box(0);
    }
    assert!(cpu_seconds().unwrap() >= a);
}

#[test]
fn a_round_is_settled_when_its_latency_stays_in_one_regime() {
    // Within one regime (a day's spread here: 53-82 ns).
    assert!(tx_settled(53.0, 82.0));
    assert!(tx_settled(246.0, 216.0));
    // Across the two (shared cache, none): run it again.
    assert!(!tx_settled(36.7, 246.6));
    assert!(!tx_settled(246.6, 36.7));
    // No reading is no regime.
    assert!(!tx_settled(0.0, 0.0));
}

#[test]
fn an_allocating_op_s_cost_is_fitted_against_the_latency() {
    assert_eq!(fit_line(&[(1.0, 3.0)]), None);
    assert_eq!(fit_line(&[(2.0, 3.0), (2.0, 5.0)]), None);
    let (c, m) = fit_line(&[(0.0, 1.0), (1.0, 3.0), (2.0, 5.0)]).unwrap();
    assert!((c - 1.0).abs() < 1e-9 && (m - 2.0).abs() < 1e-9, "{c} {m}");
    // Rounds at 30 and 240 ns: measured 1000 + 10·t_x, the model 600 +
    // 20·t_x, across two lock kinds.
    let round = |lock: LockKind, tx: f64| Check {
        alloc_ns_measured: 1000.0 + 10.0 * tx,
        alloc_ns_at_sharing: 600.0 + 20.0 * tx,
        ..transient_round(lock, tx)
    };
    let near = [
        round(LockKind::Qspinlock, 30.0),
        round(LockKind::Ticket, 30.0),
    ];
    let t = validation_table(&near);
    // One regime only: no line (its slope would be noise).
    assert!(!t.contains("An allocating op"), "{t}");
    let both = [
        near[0].clone(),
        near[1].clone(),
        round(LockKind::Ticket, 240.0),
    ];
    let t = validation_table(&both);
    assert!(
        t.contains("3 rounds at 30–240 ns, CPU time): measured 1000 ns + 10.0·t_x; the model at measured sharing 600 ns + 20.0·t_x."),
        "{t}"
    );
    // Read back from checks.csv, the costs are the same.
    assert_eq!(
        checks_from_csv(&checks_to_csv(&both)).unwrap(),
        both.to_vec()
    );
}

#[test]
fn a_check_prices_its_run_at_the_sharing_it_measured() {
    // One shared line with holds; every 1-CPU op allocates once; a
    // sharing op costs 200 ns.
    let inputs = Inputs {
        ns_per_op: 600.0,
        lines: vec![model::Line {
            stores: 4.0,
            tagged: 4.0,
            visits: 2.0,
            in_hold: 2.0,
            holds: 2.0,
            hold_ns: 100.0,
            ..Default::default()
        }],
        hashed_ns: 150.0,
        hit_ns: 200.0,
        allocs: 1.0,
        ..Default::default()
    };
    let m = Model {
        testcase: "statneg".into(),
        design: "transient".into(),
        lock: LockKind::Qspinlock,
        inputs: inputs.clone(),
        transfer_ns: 30.0,
        lock_measured: true,
    };
    // The 2-task run: half its ops allocated, 1 µs of CPU time per op.
    let o2 = output::RunOutput {
        testcase: "t".into(),
        warmup: vec![],
        measurement: vec![],
        average: 2_000_000,
        per_op: Some(output::PerOp {
            allocs: 0.5,
            shared_stores: None,
            fallbacks: 0.5,
            locks: 2.0,
            rwsem: None,
            transfers: Some(2.0),
        }),
        timing: None,
    };
    // Of its 1 000 000 allocations, 400 000 found the name in
    // d_alloc_parallel, after 125 000 waits there.
    let spent = Spent {
        ops: 2_000_000,
        wall_s: 1.0,
        cpu_s: 2.0,
        allocs: 1_000_000,
        found: 400_000,
        waits: 125_000,
        ..Default::default()
    };
    let c = Check::new(&m, &inputs, &o2, &spent);
    // (1000 ns - 0.5 · 200 ns) / 0.5.
    assert!((c.alloc_ns_measured - 1800.0).abs() < 1e-6, "{c:?}");
    assert_eq!(
        (c.found_per_alloc_measured, c.waits_per_alloc_measured),
        (0.4, 0.125)
    );
    // The model's own found share, from the same CPU-time inputs (0 here:
    // no time from a miss to d_alloc_parallel's look was measured).
    let own = model::predict(&inputs, LockKind::Qspinlock, 30.0, 2).found;
    assert_eq!(c.found_predicted, own, "{c:?}");
    // Priced at a measured move of 15 ns (half the round's t_x, the
    // model's own price) it reads as at measured sharing; at 60 ns it is
    // slower, and says so.
    assert_eq!(c.priced_ratio(), None);
    let mut same = c.clone();
    same.price_moves(&inputs, 15.0);
    assert!(
        (same.predicted_per_cpu_s_at_sharing_and_price - c.predicted_per_cpu_s_at_sharing).abs()
            < 1e-6 * c.predicted_per_cpu_s_at_sharing,
        "{same:?}"
    );
    let mut dear = c.clone();
    dear.price_moves(&inputs, 60.0);
    assert_eq!(dear.move_ns_measured, 60.0);
    assert!(
        dear.priced_ratio().unwrap() < c.sharing_ratio().unwrap(),
        "{dear:?}"
    );
    let at = model::with_allocating(&inputs, LockKind::Qspinlock, 30.0, 2, 0.5).ops / 2.0;
    assert!(
        (c.predicted_per_cpu_s_at_sharing - at).abs() < 1e-6 * at,
        "{c:?}"
    );
    assert!(
        (c.alloc_ns_at_sharing - (1e9 / at - 100.0) / 0.5).abs() < 1e-6,
        "{c:?}"
    );
    // The model alone, fed the fraction the run had, charges an
    // allocating op more than its 1-CPU 600 ns (its line moves now).
    assert!(c.alloc_ns_at_sharing > 600.0, "{c:?}");
    // 2 transfers per op, half of them allocating: 4 per allocating op;
    // the model's at that fraction moves the shared line.
    assert!((c.transfers_per_alloc_measured - 4.0).abs() < 1e-9, "{c:?}");
    let tr = model::with_allocating(&inputs, LockKind::Qspinlock, 30.0, 2, 0.5).transfers_per_alloc;
    assert!(tr > 0.0 && c.transfers_per_alloc_at_sharing == tr, "{c:?}");
    // A design that does not allocate has no per-allocation cost.
    let plain = Inputs {
        allocs: 0.0,
        ..inputs.clone()
    };
    let c = Check::new(&m, &plain, &o2, &spent);
    assert_eq!((c.alloc_ns_measured, c.alloc_ns_at_sharing), (0.0, 0.0));
    assert_eq!(
        (
            c.transfers_per_alloc_measured,
            c.transfers_per_alloc_at_sharing
        ),
        (0.0, 0.0)
    );
}

#[test]
fn a_pause_reaches_every_run_and_the_tables_say_it() {
    #[derive(clap::Parser)]
    struct Cli {
        #[command(flatten)]
        a: PredictArgs,
    }
    use clap::Parser as _;
    let a = Cli::parse_from(["predict", "--pause", "4"]).a;
    assert_eq!(a.pause, 4);
    for tasks in [1, 2] {
        let p = params("statneg", "transient", Some(LockKind::Ticket), tasks, &a).unwrap();
        assert_eq!((p.pause, p.tasks, p.lock), (4, tasks, LockKind::Ticket));
    }
    let none = Cli::parse_from(["predict"]).a;
    assert_eq!(
        params("statneg", "noalloc", None, 1, &none).unwrap().pause,
        0
    );
    assert!(Cli::try_parse_from(["predict", "--pause", "100001"]).is_err());

    let c = transient_round(LockKind::Qspinlock, 30.0);
    let plain = validation_text(std::slice::from_ref(&c), 0);
    assert_eq!(plain, validation_table(std::slice::from_ref(&c)));
    let gap = validation_text(std::slice::from_ref(&c), 4);
    assert!(
        gap.starts_with("\nEvery run of this check left 4 spin-wait hints"),
        "{gap}"
    );
    assert!(gap.contains("`pause=4`") && gap.ends_with(&plain), "{gap}");
}

/// The predicted table is made at the rounds' lower median latency where
/// the checks recorded one, else at the latency the run began with.
#[test]
fn the_table_takes_the_rounds_median_latency() {
    let at = |tx: f64| Check {
        transfer_ns: tx,
        ..transient_round(LockKind::Qspinlock, tx)
    };
    assert_eq!(table_transfer_ns(200.0, &[]), 200.0);
    assert_eq!(table_transfer_ns(200.0, &[at(0.0)]), 200.0);
    let rounds = [at(230.0), at(27.0), at(0.0), at(25.0), at(30.0)];
    // 25, 27, 30, 230: the lower median.
    assert_eq!(table_transfer_ns(200.0, &rounds), 27.0);
    assert_eq!(table_transfer_ns(200.0, &rounds[..2]), 27.0);
}

/// The spans table: a round's spans at 1 CPU and at 2 with their
/// stretch, the restarts, and the sharing term's logic fed the 2-CPU spans,
/// all computed by hand; checks.csv keeps the spans, and one from before
/// them reads with none (and no table).
#[test]
fn the_spans_table_by_hand() {
    use super::spans::Spans;
    let one = Spans {
        tasks: 1,
        ns_per_op: 600.0,
        slow: 1.0,
        allocs: 1.0,
        own_hash: 1.0,
        hashed_ns: 200.0,
        slow_ns: 500.0,
        lookup_ns: 150.0,
        own_hash_ns: 300.0,
        ..Spans::default()
    };
    let two = Spans {
        tasks: 2,
        ns_per_op: 1000.0,
        slow: 0.6,
        allocs: 0.6,
        own_hash: 0.4,
        found: 0.2,
        waits: 0.01,
        restarts: 0.1,
        hashed_ns: 500.0,
        slow_ns: 1500.0,
        lookup_ns: 400.0,
        own_hash_ns: 800.0,
        ..Spans::default()
    };
    // 2 CPUs × 0.4 hashes per 1000 ns × 500 ns; hits 0.4 plus restarts.
    assert!((two.time_hashed() - 0.4).abs() < 1e-12);
    assert!((two.found_hashed() - 0.5).abs() < 1e-12);
    assert!((two.fast_ns() - 100.0).abs() < 1e-9);
    // r = 0.6 / 1000 ns, c = r · 400 = 0.24: finds 0.24/1.24, H = r/1.24 · 500.
    let (finds, h) = two.term_at_these_spans();
    assert!((finds - 0.24 / 1.24).abs() < 1e-12 && (h - 0.3 / 1.24).abs() < 1e-12);
    assert_eq!(one.term_at_these_spans(), (0.0, 0.0));
    let mut c = transient_round(LockKind::Qspinlock, 30.0);
    let t = super::tables::spans_table(std::slice::from_ref(&c));
    assert!(t.is_empty(), "no spans, no table: {t}");
    (c.spans_1, c.spans_2) = (one, two);
    let t = super::tables::spans_table(std::slice::from_ref(&c));
    assert!(
        t.starts_with("\nSpans at 2 CPUs (`benchlab::predict::spans`: the round's design"),
        "{t}"
    );
    assert!(
        t.contains(
            "| transient | qspinlock | 1 | 30.0 | 100 → 100 (1.0×) | 500 → 1500 (3.0×) | – | \
             150 → 400 (2.7×) | 300 → 800 (2.7×) | 200 → 500 (2.5×) | – | 0.10 | 0.33 | 0.19 | \
             0.50 | 0.40 | 0.24 |"
        ),
        "{t}"
    );
    (c.slow_ns_at_sharing, c.window_ns_at_sharing) = (900.0, 350.0);
    let t = super::tables::spans_table(std::slice::from_ref(&c));
    assert!(
        t.contains("(3.0×) | 900 |") && t.contains("(2.5×) | 350 |"),
        "{t}"
    );
    assert!(validation_text(std::slice::from_ref(&c), 0).contains(&t));
    let back = checks_from_csv(&checks_to_csv(std::slice::from_ref(&c))).unwrap();
    assert_eq!(back, vec![c.clone()]);
    let drop_last = |k: usize| without_last_fields(&c, k);
    // Before the round's columns: round 0, in the fit.
    let held = Check {
        round: 4,
        held_out: true,
        ..c.clone()
    };
    let back = checks_from_csv(&checks_to_csv(std::slice::from_ref(&held))).unwrap();
    assert_eq!(back, vec![held]);
    let back = checks_from_csv(&drop_last(2)).unwrap();
    assert_eq!((back[0].round, back[0].held_out), (0, false));
    assert_eq!(back[0].spans_2, two);
    // Before the model's spans: they read as 0, the run's spans stay.
    let back = checks_from_csv(&drop_last(4)).unwrap();
    assert_eq!(back[0].spans_2, two);
    assert_eq!(
        (back[0].slow_ns_at_sharing, back[0].window_ns_at_sharing),
        (0.0, 0.0)
    );
    let v6 = drop_last(2 + SPANS_FIELDS);
    let back = checks_from_csv(&v6).unwrap();
    assert_eq!((back[0].spans_1.tasks, back[0].spans_2.tasks), (0, 0));
    assert!(super::tables::spans_table(&back).is_empty());
}

#[test]
fn locks_takes_every_kind_and_says_how_pvqspinlock_is_modelled() {
    #[derive(clap::Parser)]
    struct Cli {
        #[command(flatten)]
        a: PredictArgs,
    }
    use clap::Parser as _;
    let a = Cli::parse_from(["predict", "--locks", "pvqspinlock,ttas"]).a;
    assert_eq!(
        super::lock_kinds(&a).unwrap(),
        [LockKind::Pvqspinlock, LockKind::Ttas]
    );
    let bad = Cli::parse_from(["predict", "--locks", "mcs"]).a;
    let e = super::lock_kinds(&bad).unwrap_err();
    assert!(
        e.starts_with("--locks: unknown lock kind 'mcs' (qspinlock, ticket, ttas, or pvqspinlock"),
        "{e}"
    );
    // What the error says: a pvqspinlock hands over as a qspinlock.
    for others in [0.0, 1.0, 5.0] {
        assert_eq!(
            super::model::extra_transfers(LockKind::Pvqspinlock, others),
            super::model::extra_transfers(LockKind::Qspinlock, others)
        );
    }
}

/// The rows `--validate` adds to raw.csv carry what a sweep's rows carry:
/// their session, the load average, the steal and the spin yields of
/// their own run (report.md flags a point whose rows do not).
#[test]
fn check_rows_carry_session_and_load() {
    use super::round::{check_rows, RowIds};
    let out = |average| output::RunOutput {
        testcase: "statneg".into(),
        average,
        ..Default::default()
    };
    let (o1, o2) = (out(1_000_000), out(1_500_000));
    let s1 = Spent {
        steal: Some(0.5),
        loadavg: Some(3.25),
        wall_s: 4.0,
        cpu_s: 3.9,
        others_cpus: Some(0.125),
        ..Default::default()
    };
    let s2 = Spent {
        yields: 42,
        steal: Some(1.5),
        loadavg: Some(4.0),
        ..Default::default()
    };
    let ids = RowIds {
        host: "vm",
        testcase: "statneg",
        cpu_model: "Intel(R) Xeon(R) Processor",
        session: "20261206T190000Z",
        pause: 0,
    };
    let rows = check_rows(&ids, 3, "transient lock=ttas", [(&o1, &s1), (&o2, &s2)]);
    let got: Vec<_> = rows
        .iter()
        .map(|r| {
            (
                r.cpus,
                r.rep,
                r.session.as_str(),
                r.loadavg,
                r.steal,
                r.yields,
            )
        })
        .collect();
    assert_eq!(
        got,
        [
            (1, 3, "20261206T190000Z", Some(3.25), Some(0.5), Some(0)),
            (2, 3, "20261206T190000Z", Some(4.0), Some(1.5), Some(42)),
        ]
    );
    // The run got 3.9 CPU s in 4 s; others used an eighth of a CPU.
    assert_eq!(
        (rows[0].eff_cpus, rows[0].others_cpus),
        (Some(0.975), Some(0.125))
    );
    // Written and read back, every load column is filled.
    let back = rows::parse_csv(&rows::to_csv(&rows)).unwrap();
    assert!(back
        .iter()
        .all(|r| r.loadavg.is_some() && r.steal.is_some() && r.yields.is_some()));
}
