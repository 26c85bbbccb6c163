//! Paired rounds: the order in which the kernel's `demo=table` (`make run`)
//! runs its designs, and the statistics it prints from them. Every round
//! runs each design once, one after another, so the designs of a round
//! share the machine's state of that moment; a ratio between two designs is
//! taken inside a round, and every second round runs the designs backwards
//! (ABBA), so that no design always follows the same one or always comes
//! first.
//!
//! What a round gives a design is one measured window's ops/s (after its
//! own warm-up) and its per-op counters. From these: each design's median
//! round, its min–max, its per-round ratio to the baseline (median and
//! min–max), and for every pair of designs an exact sign test over the
//! paired rounds, which says whether the run can tell the two apart.
//!
//! The rule for "told apart": two designs are told apart when the exact
//! two-sided sign test over the rounds in which they differ gives p ≤ 0.05
//! (no distribution assumed: the rounds of one run are few and the host's
//! noise is neither normal nor steady). With n rounds that takes every
//! round going the same way once n ≤ 8: 2·2^−n is 0.031 at 6 rounds and
//! 0.016 at 7, while 6 of 7 gives 0.125; at 5 rounds or fewer nothing can
//! be told apart. The test is per pair, not corrected for the number of
//! pairs: two designs that do the same work are split by chance in one run
//! in about 1/64 at 7 rounds.
//!
//! Integer arithmetic only (the kernel has no floats): ratios are in
//! thousandths. Touches nothing.

use alloc::vec::Vec;
use core::fmt;

use formats::output::PerOpCounts;

/// The most rounds a plan may have (the sign test's binomial sums fit
/// `u128` up to here).
pub const MAX_ROUNDS: usize = 64;

/// The two-sided p at or below which a pair is told apart, as a fraction.
pub const ALPHA: (u128, u128) = (5, 100);

/// The design indices of round `round` (0-based) of `designs` designs:
/// registry order in even rounds, backwards in odd ones.
pub fn order(designs: usize, round: usize) -> impl Iterator<Item = usize> {
    let backwards = round % 2 == 1;
    (0..designs).map(move |i| if backwards { designs - 1 - i } else { i })
}

/// One measured window of one design in one round.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Window {
    /// Operations per second over the window, all tasks together.
    pub ops: u64,
    /// The fs counter deltas of the window and its operation count.
    pub per_op: PerOpCounts,
}

/// Every design's windows, round by round: `windows[design][round]`.
#[derive(Clone, Debug, Default)]
pub struct Rounds {
    windows: Vec<Vec<Window>>,
}

/// Median and range of a set of values (the lower median for an even
/// count, so that it is one of the values).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Spread {
    pub median: u64,
    pub min: u64,
    pub max: u64,
}

impl Spread {
    /// `None` for no values.
    pub fn of(values: &[u64]) -> Option<Spread> {
        let i = lower_median_index(values)?;
        Some(Spread {
            median: values[i],
            min: *values.iter().min()?,
            max: *values.iter().max()?,
        })
    }
}

/// The index of `values`' lower median: the value with as many below it
/// as at or above it, less one for an even count (ties by position).
pub fn lower_median_index(values: &[u64]) -> Option<usize> {
    if values.is_empty() {
        return None;
    }
    let mut idx: Vec<usize> = (0..values.len()).collect();
    idx.sort_by_key(|&i| (values[i], i));
    Some(idx[(values.len() - 1) / 2])
}

/// `a / b` in thousandths, rounded (0 when `b` is 0).
pub fn ratio_milli(a: u64, b: u64) -> u64 {
    if b == 0 {
        return 0;
    }
    let m = (a as u128 * 1000 + b as u128 / 2) / b as u128;
    m.min(u64::MAX as u128) as u64
}

impl Rounds {
    /// Room for `designs` designs.
    pub fn new(designs: usize) -> Rounds {
        Rounds {
            windows: (0..designs).map(|_| Vec::new()).collect(),
        }
    }

    /// Record design `d`'s window of its next round.
    pub fn push(&mut self, d: usize, w: Window) {
        if let Some(v) = self.windows.get_mut(d) {
            v.push(w);
        }
    }

    /// How many designs.
    pub fn designs(&self) -> usize {
        self.windows.len()
    }

    /// The rounds every design completed.
    pub fn rounds(&self) -> usize {
        self.windows.iter().map(Vec::len).min().unwrap_or(0)
    }

    /// Design `d`'s ops/s per completed round.
    pub fn ops(&self, d: usize) -> Vec<u64> {
        let n = self.rounds();
        self.windows
            .get(d)
            .map(|v| v[..n].iter().map(|w| w.ops).collect())
            .unwrap_or_default()
    }

    /// Design `d`'s median round (lower median by ops/s): the window whose
    /// figures stand for the design.
    pub fn median_window(&self, d: usize) -> Option<Window> {
        let i = lower_median_index(&self.ops(d))?;
        Some(self.windows[d][i])
    }

    /// Median and range of design `d`'s ops/s.
    pub fn ops_spread(&self, d: usize) -> Option<Spread> {
        Spread::of(&self.ops(d))
    }

    /// Median and range of design `d`'s allocations per op, thousandths.
    pub fn allocs_spread(&self, d: usize) -> Option<Spread> {
        let n = self.rounds();
        let v: Vec<u64> = self.windows.get(d)?[..n]
            .iter()
            .map(|w| ratio_milli(w.per_op.allocs, w.per_op.ops))
            .collect();
        Spread::of(&v)
    }

    /// Design `a`'s ops/s ÷ design `b`'s, round by round, thousandths.
    pub fn ratios(&self, a: usize, b: usize) -> Vec<u64> {
        self.ops(a)
            .iter()
            .zip(self.ops(b))
            .map(|(&x, y)| ratio_milli(x, y))
            .collect()
    }

    /// The sign test of design `a` against design `b` over the rounds.
    pub fn compare(&self, a: usize, b: usize) -> Pair {
        let (xs, ys) = (self.ops(a), self.ops(b));
        let above = xs.iter().zip(&ys).filter(|(x, y)| x > y).count();
        let below = xs.iter().zip(&ys).filter(|(x, y)| x < y).count();
        let (hi, lo) = if below > above { (b, a) } else { (a, b) };
        Pair {
            a,
            b,
            above,
            below,
            ties: xs.len() - above - below,
            ratio: Spread::of(&self.ratios(hi, lo)),
        }
    }

    /// Every pair (a, b) with a < b, in registry order.
    pub fn pairs(&self) -> Vec<Pair> {
        let n = self.designs();
        (0..n)
            .flat_map(|a| (a + 1..n).map(move |b| (a, b)))
            .map(|(a, b)| self.compare(a, b))
            .collect()
    }
}

/// One pair's sign test: in how many rounds `a` measured above `b`, below,
/// and equal, and per round the ops/s of the design higher in more rounds
/// ÷ the other's ([`Pair::higher_first`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Pair {
    pub a: usize,
    pub b: usize,
    pub above: usize,
    pub below: usize,
    pub ties: usize,
    pub ratio: Option<Spread>,
}

impl Pair {
    /// The exact two-sided sign-test p as a fraction (numerator,
    /// denominator): 2 · P(X ≤ min(above, below)) for X ~ Bin(n, ½), n the
    /// rounds without a tie, at most 1; (1, 1) when every round tied.
    pub fn p(&self) -> (u128, u128) {
        let n = (self.above + self.below).min(MAX_ROUNDS);
        if n == 0 {
            return (1, 1);
        }
        let k = self.above.min(self.below);
        let tail: u128 = (0..=k).map(|i| binomial(n, i)).sum();
        let den = 1u128 << n;
        ((2 * tail).min(den), den)
    }

    /// Told apart: p ≤ [`ALPHA`].
    pub fn told_apart(&self) -> bool {
        let (num, den) = self.p();
        num * ALPHA.1 <= ALPHA.0 * den
    }

    /// The design that measured higher in more rounds, then the other
    /// (`a` first on a draw).
    pub fn higher_first(&self) -> (usize, usize) {
        if self.below > self.above {
            (self.b, self.a)
        } else {
            (self.a, self.b)
        }
    }
}

/// C(n, k) for n ≤ [`MAX_ROUNDS`].
fn binomial(n: usize, k: usize) -> u128 {
    if k > n {
        return 0;
    }
    let k = k.min(n - k);
    (0..k).fold(1u128, |c, i| c * (n - i) as u128 / (i + 1) as u128)
}

/// Thousandths as `x.yyy`.
pub struct Milli(pub u64);

impl fmt::Display for Milli {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut buf = [0u8; 32];
        let mut w = Buf(&mut buf, 0);
        let _ = fmt::write(
            &mut w,
            format_args!("{}.{:03}", self.0 / 1000, self.0 % 1000),
        );
        let n = w.1;
        f.pad(core::str::from_utf8(&buf[..n]).unwrap_or("?"))
    }
}

/// `lo–hi` padded as one piece.
struct Range<T>(T, T);

impl<T: fmt::Display> fmt::Display for Range<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut buf = [0u8; 64];
        let mut w = Buf(&mut buf, 0);
        let _ = fmt::write(&mut w, format_args!("{}–{}", self.0, self.1));
        let n = w.1;
        f.pad(core::str::from_utf8(&buf[..n]).unwrap_or("?"))
    }
}

/// A fixed buffer to format into, so a composite (`lo–hi`, `1.234`) pads
/// as one piece without the heap: `Buf(&mut bytes, 0)`, then `fmt::write`;
/// `.1` is the length written. Text past its end is an error.
pub struct Buf<'a>(pub &'a mut [u8], pub usize);

impl fmt::Write for Buf<'_> {
    fn write_str(&mut self, s: &str) -> fmt::Result {
        let end = self.1 + s.len();
        let dst = self.0.get_mut(self.1..end).ok_or(fmt::Error)?;
        dst.copy_from_slice(s.as_bytes());
        self.1 = end;
        Ok(())
    }
}

/// The per-round table's header, the design column `.0` wide.
pub struct RoundsHeader(pub usize);

impl fmt::Display for RoundsHeader {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{:<w$} {:>6} {:>12} {:>23} {:>12} {:>19} {:>17}",
            "design",
            "rounds",
            "median ops/s",
            "min–max ops/s",
            "÷base median",
            "÷base min–max",
            "allocs/op min–max",
            w = self.0
        )
    }
}

/// Design `.2`'s line of the per-round table against the baseline `.3`,
/// the design column `.0` wide, named `.4`.
pub struct RoundsLine<'a>(pub usize, pub &'a Rounds, pub usize, pub usize, pub &'a str);

impl fmt::Display for RoundsLine<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let RoundsLine(w, r, d, base, name) = *self;
        let Some(ops) = r.ops_spread(d) else {
            return write!(f, "{name:<w$} {:>6}", 0);
        };
        write!(
            f,
            "{name:<w$} {:>6} {:>12} {:>23}",
            r.rounds(),
            ops.median,
            Range(ops.min, ops.max)
        )?;
        if d == base {
            write!(f, " {:>12} {:>19}", "baseline", "")?;
        } else {
            let q = Spread::of(&r.ratios(d, base)).unwrap_or(Spread {
                median: 0,
                min: 0,
                max: 0,
            });
            write!(
                f,
                " {:>12} {:>19}",
                Milli(q.median),
                Range(Milli(q.min), Milli(q.max))
            )?;
        }
        let a = r.allocs_spread(d).unwrap_or(Spread {
            median: 0,
            min: 0,
            max: 0,
        });
        write!(f, " {:>17}", Range(Milli(a.min), Milli(a.max)))
    }
}

/// One pair's line: `  higher > lower  k of n rounds  ÷ median [min–max]
/// p=… ` and, when the run cannot tell them apart, `≈` and the words.
pub struct PairLine<'a>(pub &'a Pair, pub &'a [&'a str]);

impl fmt::Display for PairLine<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let p = self.0;
        let name = |i: usize| self.1.get(i).copied().unwrap_or("?");
        let (hi, lo) = p.higher_first();
        let (k, n) = (p.above.max(p.below), p.above + p.below + p.ties);
        let apart = p.told_apart();
        let (num, den) = p.p();
        let p_milli = ((num * 1000 + den / 2) / den) as u64;
        let ratio = p.ratio;
        write!(
            f,
            "  {} {} {}: higher in {k} of {n} rounds, ratio median {} [{}], p={}",
            name(hi),
            if apart { ">" } else { "≈" },
            name(lo),
            Milli(ratio.map_or(0, |s| s.median)),
            Range(
                Milli(ratio.map_or(0, |s| s.min)),
                Milli(ratio.map_or(0, |s| s.max))
            ),
            Milli(p_milli)
        )?;
        if !apart {
            f.write_str(": cannot tell apart")?;
        }
        Ok(())
    }
}

/// The closing line: `cannot tell apart: a ≈ b, …` or that every pair
/// was told apart.
pub struct Verdict<'a>(pub &'a [Pair], pub &'a [&'a str]);

impl fmt::Display for Verdict<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let name = |i: usize| self.1.get(i).copied().unwrap_or("?");
        let mut first = true;
        f.write_str("cannot tell apart:")?;
        for p in self.0.iter().filter(|p| !p.told_apart()) {
            let (hi, lo) = p.higher_first();
            write!(
                f,
                "{} {} ≈ {}",
                if first { "" } else { "," },
                name(hi),
                name(lo)
            )?;
            first = false;
        }
        if first {
            f.write_str(" none (every pair told apart)")?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
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
        let pair = |above, below, ties| Pair {
            a: 0,
            b: 1,
            above,
            below,
            ties,
            ratio: None,
        };
        // 7 of 7: 2/128; 6 of 7: 2*8/128; 6 of 6: 2/64; 5 of 5: 2/32.
        assert_eq!(pair(7, 0, 0).p(), (2, 128));
        assert_eq!(pair(1, 6, 0).p(), (16, 128));
        assert_eq!(pair(6, 0, 0).p(), (2, 64));
        assert_eq!(pair(0, 5, 0).p(), (2, 32));
        assert_eq!(pair(4, 3, 0).p(), (128, 128));
        assert_eq!(pair(0, 0, 7).p(), (1, 1));
        assert!(pair(7, 0, 0).told_apart());
        assert!(pair(0, 6, 0).told_apart());
        assert!(!pair(6, 1, 0).told_apart());
        // Five rounds cannot tell anything apart, however large the gap.
        assert!(!pair(5, 0, 0).told_apart());
        // A tie is no evidence either way: 6 of 6 with one tie still counts.
        assert!(pair(6, 0, 1).told_apart());
        // 8 of 9: 2*10/512 = 0.039.
        assert!(pair(8, 1, 0).told_apart());
        assert_eq!(binomial(64, 32), 1_832_624_140_942_590_534);
    }

    #[test]
    fn designs_that_trade_places_are_reported_as_not_told_apart() {
        let names = ["transient", "negative", "noalloc", "negbound"];
        let r = rounds(&[
            &[230, 250, 217, 339, 300, 260, 240],
            &[1400, 1500, 1300, 1600, 1450, 1550, 1480],
            &[1800, 1900, 1700, 2000, 1850, 1950, 1870],
            &[1410, 1490, 1320, 1580, 1460, 1540, 1470],
        ]);
        let pairs = r.pairs();
        assert_eq!(pairs.len(), 6);
        let neg_bound = pairs.iter().find(|p| (p.a, p.b) == (1, 3)).unwrap();
        assert_eq!((neg_bound.above, neg_bound.below), (4, 3));
        assert!(!neg_bound.told_apart());
        assert!(pairs
            .iter()
            .filter(|p| (p.a, p.b) != (1, 3))
            .all(Pair::told_apart));
        assert_eq!(
            Verdict(&pairs, &names).to_string(),
            "cannot tell apart: negative ≈ negbound"
        );
        assert_eq!(
            PairLine(neg_bound, &names).to_string(),
            "  negative ≈ negbound: higher in 4 of 7 rounds, ratio median 1.006 [0.985–1.013], p=1.000: cannot tell apart"
        );
        let noalloc = pairs.iter().find(|p| (p.a, p.b) == (1, 2)).unwrap();
        assert_eq!(
            PairLine(noalloc, &names).to_string(),
            "  noalloc > negative: higher in 7 of 7 rounds, ratio median 1.267 [1.250–1.308], p=0.016"
        );
        let all_apart = rounds(&[&[1, 1, 1, 1, 1, 1], &[2, 2, 2, 2, 2, 2]]);
        assert_eq!(
            Verdict(&all_apart.pairs(), &names).to_string(),
            "cannot tell apart: none (every pair told apart)"
        );
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
}
