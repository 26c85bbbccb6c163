//! The report's "Design goals" section: what each ENOENT design promises
//! ([`GOALS`], see docs/designs.md), checked against the figures where they
//! exist, with the reason for each goal.
//!
//! A verdict needs evidence: a ratio goal whose points do not pair round by
//! round says `unpaired`, and a goal that rests on a flagged point (n = 1,
//! spin yields, efficiency above 105 %: [`super::flags`]) says which flag;
//! neither gives `met` or `NOT met`.
//!
//! Touches nothing but the points it is given.

use std::collections::BTreeSet;
use std::fmt::Write as _;

use super::{flags, point};
use formats::markdown::{Align, Table};

use crate::points::{self, Point};

/// What a goal compares.
enum Check {
    /// ops/s of `(design, tasks)` over ops/s of `(design, tasks)` on one
    /// host, statneg, and the test on that ratio.
    Ratio(
        (&'static str, usize),
        (&'static str, usize),
        fn(f64) -> bool,
    ),
    /// The per-op counters (allocs, shared_stores) of every statneg run of
    /// `design` at `cpus` CPUs (every count when `None`), host or guest,
    /// and the test on them.
    PerOp(&'static str, Option<usize>, fn(f64, f64) -> bool),
    /// The 2-task ÷ 1-task scaling of `design` in host mode over the same
    /// scaling of Linux's `linux_design` on the same host (`linux-host`):
    /// the baseline claim "this design behaves like that Linux".
    LikeLinux(&'static str, &'static str, fn(f64) -> bool),
}

/// One design goal: the line the report prints, why the design should
/// meet it, and how the figures check it.
struct Goal {
    text: &'static str,
    why: &'static str,
    check: Check,
    /// The flags ([`super::flags`]) this goal's figures do not depend on,
    /// so a flagged point still gives its verdict: a goal on exact counts
    /// ignores the flags about time ([`TIMING_FLAGS`]); a goal on ops/s
    /// ignores none.
    ignores: &'static [&'static str],
}

/// The design goals, in report order: what each ENOENT design promises
/// (see docs/designs.md), checked where the figures exist.
const GOALS: &[Goal] = &[
    Goal {
        text: "noalloc statneg 2 tasks ≥ 1.9 × 1 task",
        why: "a noalloc miss stores to no shared line, so a second task should nearly double the rate",
        check: Check::Ratio(("noalloc", 2), ("noalloc", 1), |r| r >= 1.9),
        ignores: &[],
    },
    Goal {
        text: "transient's 2-task scaling within 25 % of Linux tmpfs's",
        why: "transient is the model of Linux 6.12's tmpfs, so a second task must gain what it gains on Linux on the same host (a fixed bound such as \"≤ 1.3 × 1 task\" would assume that the collapse the seed saw at 10 tasks shows at 2; it does not: Linux's own tmpfs gains 1.9× at 2 tasks, with 0.52–0.63 allocations per miss in the 6.12 guest)",
        check: Check::LikeLinux("transient", "linux-tmpfs", |r| (0.75..=1.25).contains(&r)),
        ignores: &[],
    },
    Goal {
        text: "noalloc ÷ transient at 2 tasks ≥ 5×",
        why: "with two tasks, the miss that stays in RCU-walk should beat the one that bounces lines by far",
        check: Check::Ratio(("noalloc", 2), ("transient", 2), |r| r >= 5.0),
        ignores: &[],
    },
    Goal {
        text: "transient per op at 1 CPU: allocs ≥ 1, shared_stores ≥ 4",
        why: "alone, the transient design pays for every miss: a dentry allocated and the locks and counts around it (with more CPUs, concurrent misses of one name share the dentry, as on Linux: docs/designs.md)",
        check: Check::PerOp("transient", Some(1), |a, ss| a >= 1.0 && ss >= 4.0),
        ignores: &TIMING_FLAGS,
    },
    Goal {
        text: "noalloc per op: allocs = 0, shared_stores = 0",
        why: "the noalloc design answers a miss without allocating or writing anything shared",
        check: Check::PerOp("noalloc", None, |a, ss| a == 0.0 && ss == 0.0),
        ignores: &TIMING_FLAGS,
    },
];

/// The lower median, min and max of `xs`; `None` under two values (one
/// round is no pairing).
fn spread(xs: &[f64]) -> Option<(f64, f64, f64)> {
    if xs.len() < 2 {
        return None;
    }
    let mut v = xs.to_vec();
    v.sort_by(f64::total_cmp);
    Some((v[(v.len() - 1) / 2], v[0], v[v.len() - 1]))
}

/// `a`'s ops/s over `b`'s round by round, and how it was taken, for the
/// report; `None` when the rounds do not pair (no fallback to the medians'
/// ratio: two medians taken at different times are not a paired figure).
fn scaling(a: &Point, b: &Point) -> Option<(f64, String)> {
    points::paired_ratio(a, b).map(|p| {
        (
            p.median,
            format!(
                " (median of {} rounds' ratios, {:.2}–{:.2})",
                p.rounds, p.min, p.max
            ),
        )
    })
}

/// The flags of `ps` that `goal` does not ignore as a verdict ("no
/// verdict: flagged (n=1)"), or `None` when none is left.
fn flagged(goal: &Goal, ps: &[&Point], fair: &[Point]) -> Option<String> {
    let mut all: Vec<&str> = Vec::new();
    for p in ps {
        for f in flags(p, fair) {
            if !goal.ignores.contains(&f) && !all.contains(&f) {
                all.push(f);
            }
        }
    }
    (!all.is_empty()).then(|| format!("no verdict: flagged ({})", all.join(", ")))
}

/// Flags that speak to how fast a run went, not to what it counted: the
/// per-op goals (exact counts of the median run: allocs, shared stores)
/// list them in their `ignores`. The machine's load moves ops/s; it does not make noalloc
/// allocate or transient allocate less than once a miss on one CPU.
const TIMING_FLAGS: [&str; 4] = ["cpu unrecorded", "starved", "others>0.25", "eff>105%"];

/// What the report prints when the rounds do not pair.
const UNPAIRED: &str = "unpaired";

/// The "Design goals" section: [`GOALS`] checked where the figures exist.
pub(super) fn write_goals(s: &mut String, pts: &[Point]) {
    let mut lines: Vec<[String; 4]> = Vec::new();
    let mark = |ok: bool| if ok { "met" } else { "NOT met" };
    let hosts: BTreeSet<(String, String, String)> = pts
        .iter()
        .map(|p| p.median())
        .filter(|r| r.source == "host")
        .map(|r| (r.accel.clone(), r.host.clone(), r.session.clone()))
        .collect();
    for (accel, host, session) in &hosts {
        let g = (
            "host".to_string(),
            accel.clone(),
            host.clone(),
            session.clone(),
        );
        let pt = |(design, cpus): (&str, usize)| point(pts, &g, "statneg", design, cpus);
        let lg = (
            "linux-host".to_string(),
            accel.clone(),
            host.clone(),
            session.clone(),
        );
        let host = &super::host_cell(&g);
        let lpt = |(design, cpus): (&str, usize)| point(pts, &lg, "statneg", design, cpus);
        for goal in GOALS {
            match goal.check {
                Check::Ratio(num, den, ok) => {
                    let (Some(a), Some(b)) = (pt(num), pt(den)) else {
                        continue;
                    };
                    let (measured, verdict) = match scaling(a, b) {
                        None => (UNPAIRED.to_string(), format!("no verdict: {UNPAIRED}")),
                        Some((r, how)) => (
                            {
                                let rounds = points::round_ratios(a, b);
                                let meet = rounds.iter().filter(|(_, x)| ok(*x)).count();
                                format!("{r:.2}×{how}, {meet} of {} rounds meet it", rounds.len())
                            },
                            flagged(goal, &[a, b], pts).unwrap_or_else(|| mark(ok(r)).to_string()),
                        ),
                    };
                    lines.push([
                        format!("host `{host}`"),
                        goal.text.to_string(),
                        measured,
                        verdict,
                    ]);
                }
                Check::LikeLinux(design, linux, ok) => {
                    let (Some(a2), Some(a1), Some(l2), Some(l1)) = (
                        pt((design, 2)),
                        pt((design, 1)),
                        lpt((linux, 2)),
                        lpt((linux, 1)),
                    ) else {
                        continue;
                    };
                    // Each round's scaling over Linux's in the same round,
                    // then the median of those: a ratio taken inside a round.
                    let (ours_r, theirs_r) =
                        (points::round_ratios(a2, a1), points::round_ratios(l2, l1));
                    let per_round: Vec<f64> = ours_r
                        .iter()
                        .filter_map(|(rep, o)| {
                            let t = theirs_r.iter().find(|(r, _)| r == rep)?.1;
                            (t > 0.0).then(|| o / t)
                        })
                        .collect();
                    let (measured, verdict) = match (
                        scaling(a2, a1),
                        scaling(l2, l1),
                        spread(&per_round),
                    ) {
                        (Some((ours, _)), Some((theirs, _)), Some((r, lo, hi))) => {
                            let meet = per_round.iter().filter(|x| ok(**x)).count();
                            (
                                format!(
                                    "{design} {ours:.2}× ÷ {linux} {theirs:.2}×; per round {r:.2} ({lo:.2}–{hi:.2}, {meet} of {} rounds within the goal)",
                                    per_round.len()
                                ),
                                flagged(goal, &[a2, a1, l2, l1], pts)
                                    .unwrap_or_else(|| mark(ok(r)).to_string()),
                            )
                        }
                        _ => (UNPAIRED.to_string(), format!("no verdict: {UNPAIRED}")),
                    };
                    lines.push([
                        format!("host `{host}`"),
                        goal.text.to_string(),
                        measured,
                        verdict,
                    ]);
                }
                Check::PerOp(..) => {}
            }
        }
    }
    // The counters checked are the median run's, as in the tables.
    for p in pts.iter().filter(|p| {
        let r = p.median();
        (r.source == "host" || r.source == "guest") && r.testcase == "statneg"
    }) {
        let r = p.median();
        let (Some(a), Some(ss)) = (r.allocs, r.shared_stores) else {
            continue;
        };
        let g = (
            r.source.clone(),
            r.accel.clone(),
            r.host.clone(),
            r.session.clone(),
        );
        let who = format!("{} `{}` {} CPUs", r.source, super::host_cell(&g), r.cpus);
        for goal in GOALS {
            let Check::PerOp(design, at, ok) = goal.check else {
                continue;
            };
            if design == r.design && at.is_none_or(|c| c == r.cpus) {
                lines.push([
                    who.clone(),
                    goal.text.to_string(),
                    format!("allocs={a:.3} shared_stores={ss:.3}"),
                    flagged(goal, &[p], pts).unwrap_or_else(|| mark(ok(a, ss)).to_string()),
                ]);
            }
        }
    }
    if lines.is_empty() {
        return;
    }
    let _ = writeln!(s, "## Design goals\n");
    let _ = writeln!(
        s,
        "What each ENOENT design promises (docs/designs.md), checked against the figures \
         above where they exist.\n"
    );
    let mut t = Table::new(["where", "goal", "measured", "verdict"].map(|h| (h, Align::Left)));
    for l in lines {
        t.row(l);
    }
    s.push_str(&t.into_string());
    s.push('\n');
    let _ = writeln!(s, "Why each goal:\n");
    for goal in GOALS {
        let _ = writeln!(s, "- {}: {}.", goal.text, goal.why);
    }
    s.push('\n');
}
