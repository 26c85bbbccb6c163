//! Points: the measured runs of one (source, accel, host, testcase, design,
//! cpus) of one session gathered together, and the one run that speaks for
//! them.
//!
//! A point can hold several runs: `bench sweep --repeat N` measures each
//! point N times, once per round. Runs of two sessions (two sweeps, or two
//! directories given to `bench report`) are two points, never pooled: the
//! machine's conditions differ between sessions by more than the effects
//! measured, and a round number means nothing across them. Rows that claim
//! one session but repeat a round of a point are refused by
//! [`check_not_pooled`]. The report and the plot show one figure per point, taken from
//! the run whose `average` is the median — for an even count the *lower*
//! median, so the figure is always one real run's and never the mean of two.
//! Its per-second min/max and its per-op counters come from that same run:
//! figures from different runs are never stitched into one line. The other
//! runs still say something: their lowest and highest `average` are the
//! point's spread, the noise a reader should allow for.
//!
//! Only `ok` rows are points; skipped and failed rows are left to the
//! report's "Not run" list.
//!
//! Touches nothing but the rows it is given.

use std::collections::{BTreeMap, BTreeSet};

use super::rows::{key, Key, Row};

/// The ok runs of one point.
#[derive(Clone, Debug)]
pub struct Point<'a> {
    /// The runs, slowest first; runs with equal averages keep the order
    /// they had in the rows (so the earlier repetition wins a tie).
    runs: Vec<&'a Row>,
}

impl<'a> Point<'a> {
    /// A point of `runs` (any order); `None` if there are none.
    pub fn new(mut runs: Vec<&'a Row>) -> Option<Point<'a>> {
        if runs.is_empty() {
            return None;
        }
        // A stable sort, so ties resolve by row order (see `runs`).
        runs.sort_by_key(|r| r.average);
        Some(Point { runs })
    }

    /// The run with the median average: index (n − 1) / 2 of the sorted
    /// runs, the middle one for odd n, the lower of the two middle ones for
    /// even n.
    pub fn median(&self) -> &'a Row {
        self.runs[(self.runs.len() - 1) / 2]
    }

    /// How many runs the point has.
    pub fn count(&self) -> usize {
        self.runs.len()
    }

    /// The lowest and highest average of the runs.
    pub fn spread(&self) -> (u64, u64) {
        (self.runs[0].average, self.runs[self.runs.len() - 1].average)
    }

    /// Every run, slowest first.
    pub fn runs(&self) -> &[&'a Row] {
        &self.runs
    }
}

/// A ratio between two points taken round by round (see [`paired_ratio`]).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Paired {
    /// The median of the per-round ratios (the lower one for an even count).
    pub median: f64,
    pub min: f64,
    pub max: f64,
    /// Rounds paired.
    pub rounds: usize,
}

/// `a ÷ b` paired by repetition round: the ratio of the two runs of each
/// round (`rep`) that both points ran exactly once, then the median of
/// those ratios. A round runs every point once (`sweep::plan`, every
/// second round backwards), so the two runs share the round's stretch of
/// the machine's mood: one design's 1- and 2-CPU runs back to back, two
/// designs of one source a few runs apart, a design and its Linux
/// reference up to a round apart (about two minutes for a guest and the
/// Linux guest). On a noisy host (a VM whose speed drifts by ±20 % over a
/// minute) that is steadier than the ratio of two medians taken at
/// different moments, by less the farther apart the two ran. `None` unless at least
/// two rounds pair up.
pub fn paired_ratio(a: &Point, b: &Point) -> Option<Paired> {
    let mut ratios: Vec<f64> = round_ratios(a, b).into_iter().map(|(_, r)| r).collect();
    if ratios.len() < 2 {
        return None;
    }
    ratios.sort_by(f64::total_cmp);
    Some(Paired {
        median: ratios[(ratios.len() - 1) / 2],
        min: ratios[0],
        max: ratios[ratios.len() - 1],
        rounds: ratios.len(),
    })
}

/// `a ÷ b` of each round (`rep`) that both points ran exactly once, by
/// round; none for points of two sessions (their rounds are unrelated).
pub fn round_ratios(a: &Point, b: &Point) -> Vec<(u32, f64)> {
    if a.median().session != b.median().session {
        return Vec::new();
    }
    let once = |p: &Point, rep: u32| {
        let mut it = p.runs().iter().filter(|r| r.rep == rep);
        match (it.next(), it.next()) {
            (Some(r), None) => Some(r.average as f64),
            _ => None,
        }
    };
    let reps: BTreeSet<u32> = a.runs().iter().map(|r| r.rep).collect();
    reps.into_iter()
        .filter_map(|rep| match (once(a, rep), once(b, rep)) {
            (Some(x), Some(y)) if y > 0.0 => Some((rep, x / y)),
            _ => None,
        })
        .collect()
}

/// The points of the ok rows, in the order each first appears. With one run
/// per point that is the rows' own order, so a report listing points reads
/// exactly as one listing rows did; under `--repeat` it is the sweep's plan.
pub fn points(rows: &[Row]) -> Vec<Point<'_>> {
    let mut index: BTreeMap<(Key, &str), usize> = BTreeMap::new();
    let mut runs: Vec<Vec<&Row>> = Vec::new();
    for r in rows.iter().filter(|r| r.is_ok()) {
        let i = *index.entry((key(r), &r.session)).or_insert_with(|| {
            runs.push(Vec::new());
            runs.len() - 1
        });
        runs[i].push(r);
    }
    runs.into_iter().filter_map(Point::new).collect()
}

/// Refuse rows that pool sessions: two ok runs of one point (same
/// session) in the same round. A sweep writes each round of a point once,
/// so a repeat means rows of two sessions were put under one name (two
/// directories concatenated into one raw.csv without a `session` column).
pub fn check_not_pooled(rows: &[Row]) -> Result<(), String> {
    let mut seen: BTreeMap<(Key, &str, u32), usize> = BTreeMap::new();
    for (i, r) in rows.iter().enumerate().filter(|(_, r)| r.is_ok()) {
        if let Some(first) = seen.insert((key(r), &r.session, r.rep), i) {
            let session = if r.session.is_empty() {
                "no session".to_string()
            } else {
                format!("session `{}`", r.session)
            };
            return Err(format!(
                "pooled sessions: rows {} and {} are both round {} of {} {} {} at {} CPUs ({session}); \
                 a round runs once per session, so these rows come from two sessions: give each \
                 session's directory to `bench report` on its own, or set their `session` column",
                first + 2,
                i + 2,
                r.rep,
                r.source,
                r.testcase,
                r.design,
                r.cpus
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A host statneg noalloc run at 1 CPU: repetition `rep`, `average`
    /// ops/s, and `allocs` as a marker of which run the counters came from.
    fn run(rep: u32, average: u64, allocs: f64) -> Row {
        Row {
            source: "host".into(),
            accel: "native".into(),
            host: "h".into(),
            testcase: "statneg".into(),
            design: "noalloc".into(),
            cpus: 1,
            average,
            min: average - 1,
            max: average + 1,
            allocs: Some(allocs),
            status: "ok".into(),
            rep,
            ..Row::default()
        }
    }

    #[test]
    fn median_of_odd_count_is_the_middle_run_with_its_counters() {
        let rows = vec![
            run(1, 13_200_000, 0.1),
            run(2, 10_500_000, 0.2),
            run(3, 11_800_000, 0.3),
        ];
        let pts = points(&rows);
        assert_eq!(pts.len(), 1);
        let m = pts[0].median();
        assert_eq!(m.average, 11_800_000);
        // The counters and per-second figures are the median run's own.
        assert_eq!((m.rep, m.allocs, m.min), (3, Some(0.3), 11_799_999));
        assert_eq!(pts[0].count(), 3);
        assert_eq!(pts[0].spread(), (10_500_000, 13_200_000));
    }

    #[test]
    fn paired_ratio_takes_each_rounds_ratio_then_the_median() {
        // Round 2 is slow for both points: the medians would give
        // 14 ÷ 10 = 1.4, the rounds 2.0, 2.0 and 1.0 → median 2.0.
        let one = [run(1, 10, 0.0), run(2, 5, 0.0), run(3, 12, 0.0)];
        let mut two = [run(1, 20, 0.0), run(2, 10, 0.0), run(3, 12, 0.0)];
        for r in &mut two {
            r.cpus = 2;
        }
        let a = Point::new(two.iter().collect()).unwrap();
        let b = Point::new(one.iter().collect()).unwrap();
        let p = paired_ratio(&a, &b).unwrap();
        assert_eq!((p.median, p.min, p.max, p.rounds), (2.0, 1.0, 2.0, 3));
        // A round run twice (merged directories) does not pair; one round
        // left is too few.
        let b2 = [run(1, 10, 0.0), run(2, 5, 0.0), run(2, 6, 0.0)];
        let b2 = Point::new(b2.iter().collect()).unwrap();
        assert_eq!(paired_ratio(&a, &b2), None);
    }

    #[test]
    fn pooled_sessions_are_refused_and_sessions_stay_apart() {
        // Round 1 twice under one (empty) session: two sweeps pooled.
        let pooled = vec![run(1, 10, 0.0), run(2, 11, 0.0), run(1, 12, 0.0)];
        let e = check_not_pooled(&pooled).unwrap_err();
        assert!(
            e.contains("pooled sessions: rows 2 and 4 are both round 1"),
            "{e}"
        );
        // The same rows named by session: two points, neither pooled.
        let mut split = pooled.clone();
        split[2].session = "results/locks".into();
        assert_eq!(check_not_pooled(&split), Ok(()));
        let pts = points(&split);
        assert_eq!(pts.len(), 2);
        assert_eq!((pts[0].count(), pts[1].count()), (2, 1));
        // A ratio never pairs rounds of two sessions.
        let mut other = vec![run(1, 20, 0.0), run(2, 22, 0.0)];
        for r in &mut other {
            r.session = "results/locks".into();
            r.cpus = 2;
        }
        let a = Point::new(other.iter().collect()).unwrap();
        assert_eq!(paired_ratio(&a, &pts[0]), None);
    }

    #[test]
    fn median_of_even_count_is_the_lower_middle_run() {
        let rows = vec![
            run(1, 40, 0.1),
            run(2, 10, 0.2),
            run(3, 30, 0.3),
            run(4, 20, 0.4),
        ];
        let pts = points(&rows);
        let m = pts[0].median();
        // Sorted 10, 20, 30, 40: the lower middle is 20 (run 4), not 25.
        assert_eq!((m.average, m.rep, m.allocs), (20, 4, Some(0.4)));
        assert_eq!(pts[0].spread(), (10, 40));

        let two = vec![run(1, 9, 0.1), run(2, 7, 0.2)];
        let m = points(&two)[0].median();
        assert_eq!((m.average, m.allocs), (7, Some(0.2)));
    }

    #[test]
    fn equal_averages_resolve_to_the_earlier_row() {
        let rows = vec![run(1, 5, 0.1), run(2, 5, 0.2), run(3, 5, 0.3)];
        assert_eq!(points(&rows)[0].median().rep, 2);
        let rows = vec![run(1, 5, 0.1), run(2, 5, 0.2)];
        assert_eq!(points(&rows)[0].median().rep, 1);
    }

    #[test]
    fn points_split_by_key_keep_row_order_and_skip_rows_that_did_not_run() {
        let mut two_cpus = run(1, 100, 0.0);
        two_cpus.cpus = 2;
        let mut failed = run(2, 0, 0.0);
        failed.status = "failed".into();
        let rows = vec![two_cpus, run(1, 50, 0.0), failed, run(3, 60, 0.0)];
        let pts = points(&rows);
        assert_eq!(pts.len(), 2);
        // First-appearance order: the 2-CPU point came first in the rows.
        assert_eq!((pts[0].median().cpus, pts[0].count()), (2, 1));
        // The failed run (average 0) is not a run of the 1-CPU point.
        assert_eq!(pts[1].count(), 2);
        assert_eq!(pts[1].median().average, 50);
        assert!(Point::new(Vec::new()).is_none());
    }
}
