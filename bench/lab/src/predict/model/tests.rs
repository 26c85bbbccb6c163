//! Tests of the scaling model (`super`): hand-computed cases and the
//! shapes docs/scaling-model.md claims.

use super::*;

/// A transient-shaped op: 2000 ns, one lockref line (2 visits that
/// lock, 1 fast path, 3 stores inside its 2 holds of 100 ns in all),
/// one plain line (an `Arc` count) visited 4 times.
fn transient() -> Inputs {
    Inputs {
        ns_per_op: 2000.0,
        lines: vec![
            Line {
                stores: 6.0,
                tagged: 6.0,
                visits: 3.0,
                fast: 1.0,
                in_hold: 3.0,
                holds: 2.0,
                hold_ns: 100.0,
                ..Line::default()
            },
            Line {
                stores: 4.0,
                visits: 4.0,
                ..Line::default()
            },
        ],
        ..Inputs::default()
    }
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-6 * b.abs().max(1.0)
}

#[test]
fn one_cpu_is_the_measurement() {
    for lock in LockKind::ALL {
        assert!(close(ops_per_sec(&transient(), lock, 80.0, 1), 500_000.0));
    }
}

#[test]
fn nothing_shared_scales_linearly() {
    let noalloc = Inputs {
        ns_per_op: 200.0,
        ..Inputs::default()
    };
    for n in CPUS {
        for lock in LockKind::ALL {
            let p = predict(&noalloc, lock, 80.0, n);
            assert!(close(p.ops, n as f64 * 5e6));
            assert_eq!(p.transfers, 0.0);
        }
    }
}

/// One station at 2 CPUs has a closed form: with demand D and think
/// time Z, the other CPU is found there `s = R/(Z+R)` of the time,
/// `R = D(1+s)`, so `D s² + Z s - D = 0` and `X = 2/(Z + R)`.
fn two_cpus_one_station(d: f64, z: f64) -> f64 {
    let s = (-z + (z * z + 4.0 * d * d).sqrt()) / (2.0 * d);
    2e9 / (z + d * (1.0 + s))
}

#[test]
fn a_visit_moves_its_line_half_the_time_at_2_cpus_convoy_or_not() {
    // A plain line stored to once per op: at 2 CPUs half the visits
    // find it moved (the other CPU's visit came last), each a
    // read-for-ownership at half of t_x: D = 0.5 · 40 ns.
    let plain = Line {
        stores: 1.0,
        tagged: 1.0,
        visits: 1.0,
        ..Line::default()
    };
    let alone = Inputs {
        ns_per_op: 1000.0,
        lines: vec![plain.clone()],
        ..Inputs::default()
    };
    for lock in LockKind::ALL {
        let p = predict(&alone, lock, 80.0, 2);
        assert!(close(p.ops, two_cpus_one_station(20.0, 1000.0)), "{p:?}");
        assert!(close(p.transfers, 0.5));
    }
    // Beside a shared lock line the visits move it as often; what the
    // convoy adds is a waiter at the lock, who takes its line back at
    // the store inside the hold (one more move per op, uncounted: the
    // lock line carries no tag here).
    let lock_line = Line {
        in_hold: 1.0,
        holds: 1.0,
        ..Line::default()
    };
    let convoy = Inputs {
        lines: vec![lock_line, plain],
        ..alone.clone()
    };
    for lock in LockKind::ALL {
        let p = predict(&convoy, lock, 80.0, 2);
        assert!(close(p.transfers, 0.5), "{lock}: {p:?}");
        let q = predict(&alone, lock, 80.0, 2);
        assert!(p.ops < 0.97 * q.ops, "{lock}: {p:?} {q:?}");
    }
}

#[test]
fn two_cpus_by_hand() {
    // qspinlock (fair): half the 3 visits find the lock line moved
    // (the other CPU's visit came last), each at half of t_x, and a
    // waiter is always there (every op allocates), so the 3 in-hold
    // stores (2 holds of 50 ns may lose the line 2·(1 + 50/80) = 3.25
    // times: all 3 move) and the fast path's fallback (its 2 stores back
    // to back, one move) move it too, each at a whole t_x (the waiter's
    // read, then the holder's upgrade): D1 = 100 + 40·1.5 + 80·(3 + 1) =
    // 480 ns; the Arc line, half of 4 visits: D2 = 2·40 = 80 ns;
    // Z = 1900 ns. Two stations: check the fixed point's equations
    // rather than a closed form.
    let i = transient();
    let p = predict(&i, LockKind::Qspinlock, 80.0, 2);
    let (d1, d2, z) = (480.0, 80.0, 1900.0);
    let x = p.ops * 1e-9;
    // Solve the two queue equations at this X and check X = 2/cycle.
    let seen = |d: f64| {
        // s = x·R/2 with R = d(1+s): s = x d / (2 - x d).
        x * d / (2.0 - x * d)
    };
    let cycle = z + d1 * (1.0 + seen(d1)) + d2 * (1.0 + seen(d2));
    assert!(close(x, 2.0 / cycle), "{x} vs {}", 2.0 / cycle);
    // The counted transfers: the tagged line's visits that moved it.
    assert!(close(p.transfers, 1.5), "{p:?}");
    // With one waiter every kind hands over like a queued lock: the
    // waiter gets the line at the release (an unfair lock's holder
    // would have to come back within a transfer to beat it).
    assert!(close(ops_per_sec(&i, LockKind::Ticket, 80.0, 2), p.ops));
    assert!(close(ops_per_sec(&i, LockKind::Ttas, 80.0, 2), p.ops));
}

#[test]
fn a_waiter_takes_the_line_back_at_most_once_per_transfer() {
    // 10 stores inside 2 holds of 50 ns: at 10 ns a transfer the
    // waiter can take the line back after every store; at 200 ns only
    // 2·(1 + 50/200) = 2.5 times; a fallback's two stores once.
    let l = Line {
        in_hold: 10.0,
        holds: 2.0,
        hold_ns: 100.0,
        ..Line::default()
    };
    assert!(close(spun_moves(&l, 100.0, 10.0, 0.0), 10.0));
    assert!(close(spun_moves(&l, 100.0, 200.0, 0.0), 2.5));
    assert!(close(spun_moves(&l, 100.0, 200.0, 1.5), 4.0));
    // A line nobody locks has no waiter spinning on it.
    let plain = Line {
        visits: 4.0,
        ..Line::default()
    };
    assert_eq!(spun_moves(&plain, 0.0, 80.0, 0.0), 0.0);
    // So at long transfers the same stores cost less than in
    // proportion: 10x the latency, well under 10x the lock line's time.
    let i = Inputs {
        ns_per_op: 2000.0,
        lines: vec![l],
        ..Inputs::default()
    };
    let t = |tx: f64| 2e9 / ops_per_sec(&i, LockKind::Qspinlock, tx, 2) - 2000.0;
    assert!(t(200.0) < 0.5 * 10.0 * t(20.0), "{} {}", t(20.0), t(200.0));
}

#[test]
fn fast_paths_take_the_lock_under_a_convoy() {
    // Each fast path that finds the lock held costs two more moves.
    let mut fewer = transient();
    fewer.lines[0].fast = 0.0;
    let with = predict(&transient(), LockKind::Qspinlock, 80.0, 2).ops;
    let without = predict(&fewer, LockKind::Qspinlock, 80.0, 2).ops;
    assert!(with < without, "{with} {without}");
    // Alone, a fast path is just a store: no difference.
    assert!(close(
        ops_per_sec(&transient(), LockKind::Qspinlock, 80.0, 1),
        ops_per_sec(&fewer, LockKind::Qspinlock, 80.0, 1)
    ));
}

#[test]
fn queued_saturates_and_the_others_collapse() {
    let i = transient();
    let bound = queued_bound(&i, 80.0);
    let q: Vec<f64> = CPUS
        .iter()
        .map(|&n| ops_per_sec(&i, LockKind::Qspinlock, 80.0, n))
        .collect();
    // Past 2 CPUs the queued lock climbs towards the bound of its
    // busiest line and stays there (within the 1.6 % that a visit's
    // `(N-1)/N` still grows from 32 CPUs to 64). The bound moves the
    // line on every visit, N CPUs on `(N-1)/N` of them: never beyond
    // it by more than that.
    assert!(q[1..].windows(2).all(|w| w[1] >= w[0] * 0.99), "{q:?}");
    assert!(
        CPUS.iter()
            .zip(&q)
            .all(|(&n, &x)| n == 1 || x <= bound * n as f64 / (n as f64 - 1.0)),
        "{q:?} {bound}"
    );
    assert!(q[6] > 0.9 * bound, "{q:?} {bound}");
    for lock in [LockKind::Ticket, LockKind::Ttas] {
        let c: Vec<f64> = CPUS
            .iter()
            .map(|&n| ops_per_sec(&i, lock, 80.0, n))
            .collect();
        let peak = c.iter().cloned().fold(0.0, f64::max);
        assert!(c[6] < 0.5 * peak, "{lock}: {c:?}");
        assert!(c[6] < q[6], "{lock}: below the queued lock at 64");
        assert!(c.iter().all(|&x| x > 0.0 && x.is_finite()), "{lock}: {c:?}");
    }
    assert!(
        ops_per_sec(&i, LockKind::Ttas, 80.0, 64) < ops_per_sec(&i, LockKind::Ticket, 80.0, 64)
    );
}

#[test]
fn a_summary_stands_for_its_lines() {
    // predict.csv files from before the per-line inputs: the hottest
    // line with its holds and the rest as one line, every store a visit.
    let old = Inputs {
        ns_per_op: 2000.0,
        hot_stores: 5.0,
        hot_holds: 2.0,
        hold_ns: 100.0,
        other_stores: 4.0,
        ..Inputs::default()
    };
    let l = old.lines_or_summary();
    assert_eq!(l.len(), 2);
    assert_eq!((l[0].visits, l[0].holds, l[0].hold_ns), (5.0, 2.0, 100.0));
    assert_eq!((l[1].visits, l[1].holds), (4.0, 0.0));
    assert!(predict(&old, LockKind::Qspinlock, 80.0, 2).ops > 0.0);
    assert!(transient().lines_or_summary() == transient().lines);
}

fn sharing() -> Inputs {
    let mut i = transient();
    i.hashed_ns = 600.0;
    i.hit_ns = 150.0;
    i.allocs = 1.0;
    i.lines[0].win_visits = 1.0;
    i.lines[0].win_in_hold = 1.0;
    i
}

#[test]
fn one_cpu_with_a_window_is_still_t1() {
    for lock in LockKind::ALL {
        let p = predict(&sharing(), lock, 80.0, 1);
        assert!(close(p.ops, 500_000.0));
        assert_eq!((p.allocating, p.allocs, p.transfers), (1.0, 1.0, 0.0));
    }
}

#[test]
fn sharing_raises_throughput_and_holds_its_fixed_point() {
    for lock in LockKind::ALL {
        for n in CPUS.into_iter().skip(1) {
            let with = predict(&sharing(), lock, 80.0, n);
            let without = predict(&transient(), lock, 80.0, n);
            assert!(with.allocating > 0.0 && with.allocating < 1.0, "{with:?}");
            assert!(with.ops > without.ops, "{lock} {n}: {with:?} {without:?}");
            assert!(close(with.ops_no_sharing, without.ops));
            assert!(with.transfers < without.transfers);
            // Without the found path (no lookup_ns):
            // a = 1 - min(1, (N-1)·w·a·X/N), w the stretched window.
            let a = with.allocating;
            let s = solve(&sharing(), lock, 80.0, n, a);
            let hashed = s.window_ns * 1e-9 * a * s.ops / n as f64;
            let h = ((n - 1) as f64 * hashed).min(1.0);
            assert!(
                (a - (1.0 - h)).abs() < 1e-6,
                "{lock} {n}: {a} vs {}",
                1.0 - h
            );
        }
    }
}

#[test]
fn the_sharing_term_left_out_at_its_own_fraction_is_the_prediction() {
    // Fed the allocating fraction the sharing term found, the loop
    // alone gives the prediction; fed a smaller one (more sharing than
    // predicted), more ops a second; fed 1, the no-sharing bound.
    let i = sharing();
    let p = predict(&i, LockKind::Ticket, 80.0, 2);
    assert!(p.allocating < 1.0, "{p:?}");
    let at = |a: f64| with_allocating(&i, LockKind::Ticket, 80.0, 2, a).ops;
    assert!(
        close(at(p.allocating), p.ops),
        "{} vs {}",
        at(p.allocating),
        p.ops
    );
    assert!(at(p.allocating * 0.7) > p.ops);
    assert!(close(at(1.0), p.ops_no_sharing));
}

#[test]
fn the_window_stretches_with_what_it_visits() {
    // The line visited inside the window moves and queues there: the
    // window at 2 CPUs is longer than on one, and more so with a slower
    // transfer; a window that visits nothing keeps its 1-CPU length.
    let i = sharing();
    let w = |tx: f64| solve(&i, LockKind::Qspinlock, tx, 2, 1.0).window_ns;
    assert_eq!(
        solve(&i, LockKind::Qspinlock, 80.0, 1, 1.0).window_ns,
        600.0
    );
    // More than its visit's move (half of 40 ns, half the time) and its
    // in-hold store's (a whole 80 ns, a waiter always there): the waits.
    assert!(w(80.0) > 600.0 + 0.5 * 40.0 + 80.0, "{}", w(80.0));
    assert!(w(200.0) > w(80.0));
    let mut quiet = i.clone();
    quiet.lines[0].win_visits = 0.0;
    quiet.lines[0].win_in_hold = 0.0;
    assert_eq!(
        solve(&quiet, LockKind::Qspinlock, 80.0, 2, 1.0).window_ns,
        600.0
    );
    // A longer window, more sharing.
    assert!(
        allocating_fraction(&i, LockKind::Qspinlock, 80.0, 2)
            < allocating_fraction(&quiet, LockKind::Qspinlock, 80.0, 2)
    );
}

#[test]
fn the_found_path_keeps_dentries_hashed_longer() {
    // A miss that looks again in d_alloc_parallel after another CPU
    // hashed the name holds that dentry until its own end: more of
    // the time the name is hashed, fewer allocating ops.
    let plain = sharing();
    let mut found = sharing();
    found.lookup_ns = 500.0;
    for n in [2, 4] {
        let a0 = allocating_fraction(&plain, LockKind::Qspinlock, 80.0, n);
        let a1 = allocating_fraction(&found, LockKind::Qspinlock, 80.0, n);
        assert!(a1 < a0, "{n}: {a1} vs {a0}");
        assert!(a1 > 0.0);
    }
    // At 2 CPUs by hand: with c = s·Δ·stretch, the fixed point holds.
    let a = allocating_fraction(&found, LockKind::Qspinlock, 80.0, 2);
    let sv = solve(&found, LockKind::Qspinlock, 80.0, 2, a);
    let slow_1 = 2000.0 - 150.0;
    let slow = (sv.alloc_ns - 150.0).max(slow_1);
    let delta = 500.0 * slow / slow_1;
    let rate = a * sv.ops * 1e-9 / 2.0;
    let c = rate * delta;
    let window =
        (1.0 - c.min(1.0)) * sv.window_ns + c.min(1.0) * sv.window_ns.max(slow - delta / 2.0);
    let h = (rate / (1.0 + c) * window).min(1.0);
    assert!((a - (1.0 - h)).abs() < 1e-6, "{a} vs {}", 1.0 - h);
    // And the prediction's found share is that `c/(1+c)`: none without
    // the found path, none on one CPU.
    let p = predict(&found, LockKind::Qspinlock, 80.0, 2);
    assert!((p.found - c / (1.0 + c)).abs() < 1e-9, "{p:?} vs {c}");
    assert_eq!(predict(&plain, LockKind::Qspinlock, 80.0, 2).found, 0.0);
    assert_eq!(predict(&found, LockKind::Qspinlock, 80.0, 1).found, 0.0);
}

#[test]
fn lock_words_round_trip() {
    for k in LockKind::ALL {
        assert_eq!(LockKind::from_name(k.name()), Some(k));
    }
    assert_eq!(LockKind::from_name("mcs"), None);
    assert_eq!(extra_transfers(LockKind::Ticket, 1.0), 0.0);
    assert_eq!(extra_transfers(LockKind::Ttas, 3.0), 4.0);
    assert_eq!(extra_transfers(LockKind::Qspinlock, 9.0), 0.0);
}

#[test]
fn a_visits_move_can_be_repriced() {
    // The model's own price is half a t_x a move: the priced loop at
    // that price, or at the same nanoseconds written as a fixed part, is
    // the plain one; a cheaper move gives more ops a second, a dearer
    // fewer (the old price, a whole t_x, among them).
    let i = transient();
    let plain = with_allocating(&i, LockKind::Qspinlock, 80.0, 2, 1.0);
    let at = |fixed_ns: f64, of_latency: f64| {
        let price = MovePrice {
            fixed_ns,
            of_latency,
        };
        with_allocating_priced(&i, LockKind::Qspinlock, 80.0, price, 2, 1.0)
    };
    assert_eq!(at(0.0, 0.5), plain);
    assert!(close(at(40.0, 0.0).ops, plain.ops));
    assert!(at(0.0, 0.25).ops > plain.ops);
    assert!(at(0.0, 1.0).ops < plain.ops);
    assert!(at(40.0, 0.5).ops < plain.ops);
    // The price changes what a move costs, not how many there are.
    assert!(close(
        at(0.0, 1.0).transfers_per_alloc,
        plain.transfers_per_alloc
    ));
    // The whole model, sharing term included, takes the same price.
    let s = sharing();
    let own = predict(&s, LockKind::Qspinlock, 80.0, 2);
    let priced = |p: MovePrice| predict_priced(&s, LockKind::Qspinlock, 80.0, p, 2);
    assert_eq!(priced(MovePrice::MODEL), own);
    assert!(priced(MovePrice::LATENCY).ops < own.ops);
    assert_eq!(MovePrice::MODEL.ns(80.0), 40.0);
    assert_eq!(MovePrice::LATENCY.ns(80.0), 80.0);
    assert_eq!(
        MovePrice {
            fixed_ns: 30.0,
            of_latency: 0.5
        }
        .ns(80.0),
        70.0
    );
}
