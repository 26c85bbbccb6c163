//! The spans of recorded `bench predict --validate` runs, over every
//! round rather than the median ones the spans table shows: per latency
//! regime, how far the runs stretch an op's spans at 2 CPUs over 1 and how
//! far the cost term does (each against its own 1-CPU figure: the census's
//! clock reads lengthen the runs' spans), and, over all the runs given,
//! the sharing shares the term's logic is judged by. docs/designs.md ("The
//! spans in every check") quotes it:
//!
//!     cargo run --release -p bench --example stretch DIR [DIR ...]
//!
//! Each DIR holds a run's `predict.csv` and `checks.csv` (a run from
//! before the spans has none to show). A round is near below 80 ns.
//!
//! Touches: reads those files, nothing else.

use bench::host::predict::{checks_from_csv, read_dir, Check};
use bench::predict::hit_ns;

/// Rounds predicted with a latency below this are near.
const NEAR_BELOW_NS: f64 = 80.0;

/// `min–max` of `v` (a dash when empty).
fn range(v: &[f64], digits: usize) -> String {
    if v.is_empty() {
        return "–".into();
    }
    let lo = v.iter().copied().fold(f64::INFINITY, f64::min);
    let hi = v.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    format!("{lo:.digits$}–{hi:.digits$}")
}

fn main() {
    let dirs: Vec<String> = std::env::args().skip(1).collect();
    if dirs.is_empty() {
        eprintln!("usage: stretch DIR [DIR ...]");
        std::process::exit(2);
    }
    let (mut hashed, mut found, mut h_term, mut restarts) = (vec![], vec![], vec![], vec![]);
    for dir in &dirs {
        let dir = std::path::Path::new(dir);
        let models = read_dir(dir).unwrap_or_else(|e| panic!("{e}"));
        let path = dir.join("checks.csv");
        let text =
            std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        let checks: Vec<Check> = checks_from_csv(&text)
            .unwrap_or_else(|e| panic!("{e}"))
            .into_iter()
            .filter(|c| c.spans_2.tasks == 2)
            .collect();
        for c in &checks {
            hashed.push(c.spans_2.time_hashed());
            found.push(c.spans_2.found_hashed());
            h_term.push(c.spans_2.term_at_these_spans().1);
            restarts.push(c.spans_2.restarts);
        }
        for (regime, near) in [("near", true), ("far", false)] {
            let mine: Vec<&Check> = checks
                .iter()
                .filter(|c| (c.transfer_ns < NEAR_BELOW_NS) == near)
                .collect();
            if mine.is_empty() {
                continue;
            }
            let (mut slow_run, mut slow_model, mut win_run, mut win_model, mut fast_run) =
                (vec![], vec![], vec![], vec![], vec![]);
            for c in &mine {
                let Some(m) = models
                    .iter()
                    .find(|m| m.design == c.design && m.lock == c.lock)
                else {
                    continue;
                };
                let i = &m.inputs;
                let (a, b) = (&c.spans_1, &c.spans_2);
                slow_run.push(b.slow_ns / a.slow_ns);
                win_run.push(b.hashed_ns / a.hashed_ns);
                fast_run.push(b.fast_ns() / a.fast_ns());
                if c.slow_ns_at_sharing > 0.0 {
                    slow_model.push(c.slow_ns_at_sharing / (i.ns_per_op - hit_ns(i)));
                    win_model.push(c.window_ns_at_sharing / i.hashed_ns);
                }
            }
            println!(
                "stretch: dir={} regime={regime} rounds={} transfer_ns={} slow_run={} \
                 slow_model={} hashed_run={} window_model={} rcu_part_run={}",
                dir.display(),
                mine.len(),
                range(&mine.iter().map(|c| c.transfer_ns).collect::<Vec<_>>(), 0),
                range(&slow_run, 1),
                range(&slow_model, 1),
                range(&win_run, 1),
                range(&win_model, 1),
                range(&fast_run, 1)
            );
        }
    }
    println!(
        "stretch: rounds={} time_hashed={} found_hashed={} h_term={} restarts={}",
        hashed.len(),
        range(&hashed, 2),
        range(&found, 2),
        range(&h_term, 2),
        range(&restarts, 2)
    );
}
