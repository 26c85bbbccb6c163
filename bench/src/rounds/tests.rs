use super::*;
use alloc::string::ToString;
use alloc::vec;

fn w(ops: u64, allocs: u64) -> Window {
    Window {
        ops,
        per_op: PerOpCounts {
            ops: 1000,
            allocs,
            ..Default::default()
        },
    }
}

/// `ops[d][r]` as rounds (allocs/op 0.5 for design 0).
fn rounds(ops: &[&[u64]]) -> Rounds {
    let mut r = Rounds::new(ops.len());
    for (d, v) in ops.iter().enumerate() {
        for &x in *v {
            r.push(d, w(x, if d == 0 { 500 } else { 0 }));
        }
    }
    r
}

#[test]
fn odd_rounds_run_backwards_so_each_pair_alternates_which_goes_first() {
    let r0: Vec<usize> = order(4, 0).collect();
    let r1: Vec<usize> = order(4, 1).collect();
    let r2: Vec<usize> = order(4, 2).collect();
    assert_eq!(r0, vec![0, 1, 2, 3]);
    assert_eq!(r1, vec![3, 2, 1, 0]);
    assert_eq!(r2, r0);
    // Every design runs once per round.
    let mut s = r1.clone();
    s.sort();
    assert_eq!(s, r0);
}

#[test]
fn the_median_is_a_measured_value_the_lower_one_for_an_even_count() {
    assert_eq!(Spread::of(&[]), None);
    assert_eq!(
        Spread::of(&[30, 10, 20]),
        Some(Spread {
            median: 20,
            min: 10,
            max: 30
        })
    );
    assert_eq!(Spread::of(&[40, 10, 30, 20]).unwrap().median, 20);
    assert_eq!(lower_median_index(&[5, 5, 5]), Some(1));
    // The median window carries its own per-op counters.
    let mut r = Rounds::new(1);
    for (ops, allocs) in [(300, 580), (100, 430), (200, 470)] {
        r.push(0, w(ops, allocs));
    }
    assert_eq!(r.median_window(0), Some(w(200, 470)));
    assert_eq!(
        r.allocs_spread(0),
        Some(Spread {
            median: 470,
            min: 430,
            max: 580
        })
    );
}

#[test]
fn ratios_are_taken_inside_each_round() {
    // Design 1 is 2x design 0 in every round although both drift 3x.
    let r = rounds(&[&[100, 200, 300], &[200, 400, 600]]);
    assert_eq!(r.ratios(1, 0), vec![2000, 2000, 2000]);
    assert_eq!(ratio_milli(1, 3), 333);
    assert_eq!(ratio_milli(2, 3), 667);
    assert_eq!(ratio_milli(5, 0), 0);
}

#[test]
fn a_short_design_limits_every_design_to_the_rounds_all_completed() {
    let r = rounds(&[&[1, 2, 3], &[4, 5]]);
    assert_eq!(r.rounds(), 2);
    assert_eq!(r.ops(0), vec![1, 2]);
}

#[test]
fn the_sign_test_gives_the_exact_binomial_p() {
    // Every round higher is also higher by the margin here; a tie is a
    // round clear neither way.
    let pair = |above, below, ties| Pair {
        a: 0,
        b: 1,
        above,
        below,
        ties,
        clear_above: above,
        clear_below: below,
        ratio: None,
    };
    // 7 of 7: 2/128; 6 of 7: 2*8/128; 6 of 6: 2/64; 5 of 5: 2/32.
    assert_eq!(pair(7, 0, 0).p(), (2, 128));
    assert_eq!(pair(1, 6, 0).p(), (16, 128));
    assert_eq!(pair(6, 0, 0).p(), (2, 64));
    assert_eq!(pair(0, 5, 0).p(), (2, 32));
    assert_eq!(pair(4, 3, 0).p(), (1, 1));
    assert_eq!(pair(0, 0, 7).p(), (1, 1));
    assert_eq!(pair(8, 0, 0).p(), (2, 256));
    assert!(pair(7, 0, 0).told_apart_alone());
    assert!(pair(0, 6, 0).told_apart_alone());
    assert!(!pair(6, 1, 0).told_apart_alone());
    // Five rounds cannot tell anything apart, however large the gap.
    assert!(!pair(5, 0, 0).told_apart_alone());
    // A round clear neither way counts against both: 6 of 7 is
    // 2 * 8/128 = 0.125.
    assert_eq!(pair(6, 0, 1).p(), (16, 128));
    assert!(!pair(6, 0, 1).told_apart_alone());
    // Higher in all 8 rounds but by more than the margin in only 6: the
    // test counts the 6, p = 2 * 37/256 = 0.289.
    let lean = Pair {
        clear_above: 6,
        ..pair(8, 0, 0)
    };
    assert_eq!(lean.p(), (74, 256));
    // 8 of 9: 2*10/512 = 0.039.
    assert!(pair(8, 1, 0).told_apart_alone());
    assert_eq!(pair(40, 24, 0).p().1, 1 << 64);
    assert_eq!(binomial(64, 32), 1_832_624_140_942_590_534);
}

#[test]
fn designs_that_trade_places_are_reported_as_not_told_apart() {
    let names = ["transient", "negative", "noalloc", "negbound"];
    let r = rounds(&[
        &[230, 250, 217, 339, 300, 260, 240, 235],
        &[1400, 1500, 1300, 1600, 1450, 1550, 1480, 1420],
        &[1800, 1900, 1700, 2000, 1850, 1950, 1870, 1820],
        &[1410, 1490, 1320, 1580, 1460, 1540, 1470, 1425],
    ]);
    let tested = r.tested();
    assert_eq!(tested.len(), 6);
    let neg_bound = tested
        .iter()
        .find(|t| (t.pair.a, t.pair.b) == (1, 3))
        .unwrap();
    assert_eq!((neg_bound.pair.above, neg_bound.pair.below), (4, 4));
    assert!(!neg_bound.apart);
    assert!(tested
        .iter()
        .filter(|t| (t.pair.a, t.pair.b) != (1, 3))
        .all(|t| t.apart));
    assert_eq!(
        Verdict(&tested, &names).to_string(),
        "cannot tell apart: negative ≈ negbound"
    );
    assert_eq!(
        PairLine(neg_bound, &names).to_string(),
        "  negative ≈ negbound: higher in 4 of 8 rounds, by more than 1.200× in 0, ratio median 0.996 [0.985–1.013], p=1.0000, holm rank 6 of 6 needs p <= 0.0500: missed: cannot tell apart"
    );
    let noalloc = tested
        .iter()
        .find(|t| (t.pair.a, t.pair.b) == (1, 2))
        .unwrap();
    assert_eq!(
        PairLine(noalloc, &names).to_string(),
        "  noalloc > negative: higher in 8 of 8 rounds, by more than 1.200× in 8, ratio median 1.267 [1.250–1.308], p=0.0078, holm rank 4 of 6 needs p <= 0.0167: met"
    );
    let all_apart = rounds(&[&[1; 8], &[2; 8]]);
    assert_eq!(
        Verdict(&all_apart.tested(), &names).to_string(),
        "cannot tell apart: none (every pair told apart)"
    );
    // Seven rounds of six pairs can tell nothing apart: 7 of 7 is
    // p = 0.0156, above the first rank's 0.05/6.
    let seven = rounds(&[&[1; 7], &[2; 7], &[3; 7], &[4; 7]]);
    assert!(seven
        .tested()
        .iter()
        .all(|t| !t.apart && t.pair.told_apart_alone()));
}

fn pair(above: usize, below: usize) -> Pair {
    Pair {
        a: 0,
        b: 1,
        above,
        below,
        ties: 0,
        clear_above: above,
        clear_below: below,
        ratio: None,
    }
}

#[test]
fn holm_keeps_a_pair_that_one_uncorrected_test_would_tell_apart() {
    // 8 of 9 rounds: p = 0.039 <= 0.05 alone, but among 6 pairs it
    // ranks first and needs 0.05/6.
    let mut family = vec![pair(8, 1)];
    family.extend([pair(5, 4); 5]);
    assert!(family[0].told_apart_alone());
    let t = holm(&family);
    assert_eq!((t[0].rank, t[0].of), (1, 6));
    assert_eq!(t[0].threshold(), (5, 600));
    assert!(!t[0].met && !t[0].apart);
    assert!(t.iter().all(|t| !t.apart));
    // Alone in its family the same pair is told apart.
    let alone = holm(&[pair(8, 1)]);
    assert!(alone[0].met && alone[0].apart);
    // 8 of 8 (p = 0.0078) passes even the first rank of six.
    let mut family = vec![pair(8, 0)];
    family.extend([pair(4, 4); 5]);
    assert!(holm(&family)[0].apart);
}

#[test]
fn holm_steps_down_in_order_of_p_and_stops_at_the_first_miss() {
    // In registry order: p = 0.039, 0.0039, 1, 0.0156, 1, 1. By p:
    // 0.0039 (rank 1, needs 0.0083: met), 0.0156 (rank 2, needs 0.01:
    // missed), 0.039 (rank 3, needs 0.0125: missed), then the p = 1s.
    let family = [
        pair(8, 1),
        pair(0, 9),
        pair(2, 2),
        pair(7, 0),
        pair(3, 3),
        pair(1, 1),
    ];
    let t = holm(&family);
    let ranks: Vec<usize> = t.iter().map(|t| t.rank).collect();
    // Equal p (the three 1s) keep registry order.
    assert_eq!(ranks, vec![3, 1, 4, 2, 5, 6]);
    assert!(t[1].met && t[1].apart);
    assert!(!t[3].met && !t[3].apart);
    assert!(!t[0].met && !t[0].apart);
    // A pair that meets its own rank's threshold after a miss is still
    // not told apart: 0.039 <= 0.05 at the last rank.
    let mut family = vec![pair(9, 0), pair(7, 0)];
    family.extend([pair(1, 9); 3]);
    family.push(pair(8, 1));
    let t = holm(&family);
    // p: 0.0039, 0.0156, 0.0215 ×3, 0.039: the 0.0156 misses 0.01.
    assert_eq!(t[5].rank, 6);
    assert!(t[5].met && !t[5].apart);
    let names = ["a", "b"];
    let mut line = t[5];
    line.pair.ratio = Some(Spread {
        median: 1100,
        min: 900,
        max: 1300,
    });
    assert_eq!(
        PairLine(&line, &names).to_string(),
        "  a ≈ b: higher in 8 of 9 rounds, by more than 1.200× in 8, ratio median 1.100 [0.900–1.300], p=0.0391, holm rank 6 of 6 needs p <= 0.0500: met, but a smaller p missed: cannot tell apart"
    );
    assert_eq!(
        PairsHeader(8, 6).to_string(),
        "pairs (exact sign test over the 8 paired rounds of one design above 1.200× the other; Holm–Bonferroni over the 6 pairs, family-wise alpha 0.0500: the pair of rank i by p is told apart when p <= 0.0500/(6 - i + 1) and every pair ranked before it was):"
    );
}

#[test]
fn a_stalled_baseline_window_is_flagged_and_left_out_of_the_ratios() {
    let names = ["transient", "negative"];
    // Round 3's baseline measured 20 ops/s against a median of 240.
    let r = rounds(&[&[230, 250, 20, 260, 240], &[1400, 1500, 1300, 1600, 1450]]);
    assert_eq!(r.outliers(0), vec![2]);
    assert_eq!(r.outliers(1), Vec::<usize>::new());
    assert_eq!(r.left_out(1, 0), vec![2]);
    assert_eq!(r.ratios(1, 0)[2], 65_000);
    let q = Spread::of(&r.kept_ratios(1, 0)).unwrap();
    assert_eq!((q.min, q.max), (6000, 6154));
    assert_eq!(r.compare(1, 0).ratio.unwrap().max, 6154);
    // The sign test keeps the round.
    assert_eq!(r.compare(1, 0).below + r.compare(1, 0).above, 5);
    let base = RoundsLine(10, &r, 0, 0, "transient").to_string();
    let other = RoundsLine(10, &r, 1, 0, "negative").to_string();
    assert!(
        base.ends_with("0.500–0.500  flagged: outlier round 3 (20 ops/s)"),
        "{base}"
    );
    assert!(
        other.ends_with("0.000–0.000  flagged: ÷base leaves out round 3"),
        "{other}"
    );
    assert!(other.contains("6.000–6.154"), "{other}");
    assert!(Flagged(&r, &names)
        .to_string()
        .starts_with("flagged: transient round 3 at 20 ops/s (its median 240): below a tenth"));
    let calm = rounds(&[&[230, 250, 240], &[1400, 1500, 1450]]);
    assert_eq!(
        Flagged(&calm, &names).to_string(),
        "flagged: none (no window below a tenth of its design's median)"
    );
    assert!(!RoundsLine(10, &calm, 1, 0, "negative")
        .to_string()
        .contains("flagged"));
}

#[test]
fn the_rounds_table_lines_up_and_names_the_baseline() {
    let r = rounds(&[&[100, 200, 300], &[250, 400, 900]]);
    let h = RoundsHeader(10).to_string();
    let base = RoundsLine(10, &r, 0, 0, "transient").to_string();
    let other = RoundsLine(10, &r, 1, 0, "negative").to_string();
    assert_eq!(
        h,
        "design     rounds median ops/s           min–max ops/s ÷base median       ÷base min–max allocs/op min–max"
    );
    assert_eq!(
        base,
        "transient       3          200                 100–300     baseline                           0.500–0.500"
    );
    assert_eq!(
        other,
        "negative        3          400                 250–900        2.500         2.000–3.000       0.000–0.000"
    );
    let chars = |s: &str| s.chars().count();
    assert_eq!(chars(&base), chars(&h));
    assert_eq!(chars(&other), chars(&h));
}

#[test]
fn a_steady_gap_under_the_margin_is_a_lean_not_a_ranking() {
    let names = ["negative", "noalloc"];
    // noalloc 10 % above negative in every round: higher 8 of 8, but by
    // more than 1.2× in none, so p = 1 and the pair is not told apart.
    let r = rounds(&[&[1000; 8], &[1100; 8]]);
    let t = r.tested();
    assert_eq!((t[0].pair.above, t[0].pair.below), (0, 8));
    assert_eq!((t[0].pair.clear_above, t[0].pair.clear_below), (0, 0));
    assert!(!t[0].apart);
    assert_eq!(
        PairLine(&t[0], &names).to_string(),
        "  noalloc ≈ negative: higher in 8 of 8 rounds, by more than 1.200× in 0, ratio median 1.100 [1.100–1.100], p=1.0000, holm rank 1 of 1 needs p <= 0.0500: missed: cannot tell apart"
    );
    // 30 % above in every round: told apart.
    let r = rounds(&[&[1000; 8], &[1300; 8]]);
    assert!(r.tested()[0].apart);
    // Exactly 1.2× is not more than the margin.
    let r = rounds(&[&[1000; 8], &[1200; 8]]);
    assert_eq!(r.compare(1, 0).clear_above, 0);
}
