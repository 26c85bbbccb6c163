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
//! The rule for "told apart" is a claim of a gap, not only of an order:
//! one design's ops/s more than [`MARGIN_MILLI`] (1.2×) the other's. A
//! pair's exact two-sided sign test asks in how many of the n rounds one
//! design was more than 1.2× the other; a round where neither was counts
//! against both (null: neither is more than 1.2× the other in more than
//! half the rounds), so p = 2 · P(X ≥ that count) for X ~ Bin(n, ½) (no
//! distribution assumed: the rounds of one run are few and the host's
//! noise is neither normal nor steady). Why a margin: on TCG a round's
//! ratio scatters by ±15 %, so a gap smaller than that (noalloc over
//! negative, 1.04–1.16× in six runs on an idle 2-core host) was told apart
//! by a plain sign test in some runs and not in others, and a `>` that
//! comes and goes between runs says nothing a reader can rely on. A gap
//! under the margin is still shown, as a lean: each pair line says in how
//! many rounds either design was higher at all, and the ratio's median.
//!
//! Every pair of one table is a test of one family, and the family-wise
//! error is held at [`ALPHA`] (0.05) by Holm's step-down correction
//! ([`holm`]): sorted by p, the pair of rank i (1-based) of m is told apart
//! when its p ≤ α/(m − i + 1) and so was every pair ranked before it.
//! Without it, at 7 rounds and p ≤ 0.05 per pair, each pair of designs
//! that do the same work was split by chance in one run in 64, and some
//! pair of the six in up to one run in eleven. With 6 pairs the smallest p
//! must reach 0.05/6 = 0.0083: every round clear the same way gives
//! 2·2^−n, 0.0156 at 7 rounds (never enough) and 0.0078 at 8; one round
//! short gives 0.070 at 8 rounds and 0.039 at 9, which only the last
//! rank's 0.05 admits.
//!
//! A round whose baseline window measured below a tenth of the baseline's
//! median ([`Rounds::baseline_outliers`]: a stall of the host, not of the
//! design) would divide every other design by almost nothing; its ratios
//! are left out of the ÷base columns and the lines say so. The sign test
//! keeps the round: it uses only which design was higher.
//!
//! Integer arithmetic only (the kernel has no floats): ratios are in
//! thousandths. Touches nothing.

use alloc::vec::Vec;
use core::fmt;

use formats::output::PerOpCounts;

/// The most rounds a plan may have (the sign test's binomial sums fit
/// `u128` up to here).
pub const MAX_ROUNDS: usize = 64;

/// The family-wise error of one table's pair tests, as a fraction: Holm's
/// correction holds the chance of telling any pair apart wrongly at or
/// below it.
pub const ALPHA: (u128, u128) = (5, 100);

/// How far apart, in thousandths of the lower design's ops/s, two designs
/// must be in a round for that round to count toward telling them apart
/// (see the module doc): 1.2×.
pub const MARGIN_MILLI: u64 = 1200;

/// Whether `x` is more than [`MARGIN_MILLI`] thousandths of `y`.
fn clear_of(x: u64, y: u64) -> bool {
    u128::from(x) * 1000 > u128::from(y) * u128::from(MARGIN_MILLI)
}

/// A baseline window below `1/OUTLIER_FRACTION` of the baseline's median
/// is an outlier ([`Rounds::baseline_outliers`]).
pub const OUTLIER_FRACTION: u64 = 10;

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

    /// The rounds (0-based) in which design `d`'s window measured below
    /// 1/[`OUTLIER_FRACTION`] of its median: a stall of the host rather
    /// than the design's rate, which a ratio against it would turn into a
    /// thousandfold gap.
    pub fn outliers(&self, d: usize) -> Vec<usize> {
        let ops = self.ops(d);
        let Some(s) = Spread::of(&ops) else {
            return Vec::new();
        };
        (0..ops.len())
            .filter(|&r| ops[r].saturating_mul(OUTLIER_FRACTION) < s.median)
            .collect()
    }

    /// The rounds a ratio of `a` and `b` leaves out: those in which either
    /// window is an outlier of its design ([`Rounds::outliers`]), sorted.
    pub fn left_out(&self, a: usize, b: usize) -> Vec<usize> {
        let mut v = self.outliers(a);
        v.extend(self.outliers(b));
        v.sort_unstable();
        v.dedup();
        v
    }

    /// [`Rounds::ratios`] without the rounds [`Rounds::left_out`] names.
    pub fn kept_ratios(&self, a: usize, b: usize) -> Vec<u64> {
        let out = self.left_out(a, b);
        self.ratios(a, b)
            .into_iter()
            .enumerate()
            .filter(|(r, _)| !out.contains(r))
            .map(|(_, q)| q)
            .collect()
    }

    /// Every pair's sign test, corrected for the family by Holm
    /// ([`holm`]), in registry order.
    pub fn tested(&self) -> Vec<Tested> {
        holm(&self.pairs())
    }

    /// The sign test of design `a` against design `b` over the rounds.
    pub fn compare(&self, a: usize, b: usize) -> Pair {
        let (xs, ys) = (self.ops(a), self.ops(b));
        let above = xs.iter().zip(&ys).filter(|(x, y)| x > y).count();
        let below = xs.iter().zip(&ys).filter(|(x, y)| x < y).count();
        let clear_above = xs
            .iter()
            .zip(&ys)
            .filter(|(x, y)| clear_of(**x, **y))
            .count();
        let clear_below = xs
            .iter()
            .zip(&ys)
            .filter(|(x, y)| clear_of(**y, **x))
            .count();
        let (hi, lo) = if below > above { (b, a) } else { (a, b) };
        Pair {
            a,
            b,
            above,
            below,
            ties: xs.len() - above - below,
            clear_above,
            clear_below,
            ratio: Spread::of(&self.kept_ratios(hi, lo)),
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
/// and equal, in how many either was more than [`MARGIN_MILLI`] the other
/// (what the test counts), and per round the ops/s of the design higher in more rounds
/// ÷ the other's ([`Pair::higher_first`]; without the rounds
/// [`Rounds::left_out`] names).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Pair {
    pub a: usize,
    pub b: usize,
    pub above: usize,
    pub below: usize,
    pub ties: usize,
    /// Rounds in which `a` was more than [`MARGIN_MILLI`] of `b`, and `b`
    /// of `a`.
    pub clear_above: usize,
    pub clear_below: usize,
    pub ratio: Option<Spread>,
}

impl Pair {
    /// The exact two-sided sign-test p as a fraction (numerator,
    /// denominator): 2 · P(X ≥ max(clear_above, clear_below)) for X ~
    /// Bin(n, ½), n every round (a round clear neither way counts against
    /// both); (1, 1) when that reaches 1, so that below 1 the numerator is
    /// under 2^64 and two p cross-multiply within `u128`.
    pub fn p(&self) -> (u128, u128) {
        let n = (self.above + self.below + self.ties).min(MAX_ROUNDS);
        let k = self.clear_above.max(self.clear_below).min(n);
        if n == 0 || k == 0 {
            return (1, 1);
        }
        // P(X ≥ k) = P(X ≤ n − k) by symmetry.
        let tail: u128 = (0..=n - k).map(|i| binomial(n, i)).sum();
        let den = 1u128 << n;
        if 2 * tail >= den {
            return (1, 1);
        }
        (2 * tail, den)
    }

    /// Uncorrected: p ≤ [`ALPHA`], as if this pair were the only test of
    /// the table. What the table prints is Holm's verdict ([`holm`]).
    pub fn told_apart_alone(&self) -> bool {
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

/// One pair of a table's family after Holm's step-down correction.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Tested {
    pub pair: Pair,
    /// Its place among the family's p, smallest first, 1-based (equal p
    /// keep registry order).
    pub rank: usize,
    /// How many pairs the family holds.
    pub of: usize,
    /// Its p ≤ its rank's threshold ([`Tested::threshold`]).
    pub met: bool,
    /// Told apart: it met its threshold and so did every pair ranked
    /// before it (the step-down stops at the first miss).
    pub apart: bool,
}

impl Tested {
    /// Holm's threshold for its rank, α/(of − rank + 1), as a fraction.
    pub fn threshold(&self) -> (u128, u128) {
        let left = self.of.saturating_sub(self.rank) + 1;
        (ALPHA.0, ALPHA.1 * left as u128)
    }
}

/// `a` ≤ `b` for fractions whose numerators stay under 2^64 and whose
/// denominators are at most 2^64 ([`Pair::p`], [`Tested::threshold`]).
fn frac_le(a: (u128, u128), b: (u128, u128)) -> bool {
    a.0 * b.1 <= b.0 * a.1
}

/// Holm's step-down over one family of pairs, returned in `pairs`' order:
/// sorted by p, the pair of rank i of m is told apart when its p ≤
/// α/(m − i + 1) and every pair ranked before it was told apart. This
/// holds the chance of telling any pair apart wrongly at or below
/// [`ALPHA`] whatever the pairs' dependence.
pub fn holm(pairs: &[Pair]) -> Vec<Tested> {
    let m = pairs.len();
    let mut by_p: Vec<usize> = (0..m).collect();
    // A stable sort: equal p keep registry order.
    by_p.sort_by(|&i, &j| {
        let (a, b) = (pairs[i].p(), pairs[j].p());
        (a.0 * b.1).cmp(&(b.0 * a.1))
    });
    let mut out: Vec<Tested> = pairs
        .iter()
        .map(|&pair| Tested {
            pair,
            rank: 0,
            of: m,
            met: false,
            apart: false,
        })
        .collect();
    let mut still = true;
    for (r, &i) in by_p.iter().enumerate() {
        let t = &mut out[i];
        t.rank = r + 1;
        t.met = frac_le(t.pair.p(), t.threshold());
        still &= t.met;
        t.apart = still;
    }
    out
}

/// A fraction as `x.yyyy`, rounded to ten-thousandths.
pub struct Frac4(pub (u128, u128));

impl fmt::Display for Frac4 {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (num, den) = self.0;
        let t = num
            .saturating_mul(10_000)
            .saturating_add(den / 2)
            .checked_div(den)
            .unwrap_or(0);
        write!(f, "{}.{:04}", t / 10_000, t % 10_000)
    }
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
/// the design column `.0` wide, named `.4`. The ÷base columns leave out
/// the rounds [`Rounds::left_out`] names, and the line then ends with
/// `  flagged: …` naming them (for the baseline: its own outlier rounds
/// and their ops/s); rounds are numbered from 1.
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
            let q = Spread::of(&r.kept_ratios(d, base)).unwrap_or(Spread {
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
        write!(f, " {:>17}", Range(Milli(a.min), Milli(a.max)))?;
        if d == base {
            let ops = r.ops(d);
            for (i, round) in r.outliers(d).into_iter().enumerate() {
                let lead = if i == 0 { "  flagged: outlier" } else { "," };
                write!(f, "{lead} round {} ({} ops/s)", round + 1, ops[round])?;
            }
        } else {
            for (i, round) in r.left_out(d, base).into_iter().enumerate() {
                let lead = if i == 0 {
                    "  flagged: ÷base leaves out"
                } else {
                    ","
                };
                write!(f, "{lead} round {}", round + 1)?;
            }
        }
        Ok(())
    }
}

/// The line under the per-round table that says which windows were
/// flagged as outliers (below 1/[`OUTLIER_FRACTION`] of their design's
/// median) and what that changed, for the designs named `.1`.
pub struct Flagged<'a>(pub &'a Rounds, pub &'a [&'a str]);

impl fmt::Display for Flagged<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let Flagged(r, names) = *self;
        let mut any = false;
        f.write_str("flagged:")?;
        for d in 0..r.designs() {
            let ops = r.ops(d);
            let median = Spread::of(&ops).map_or(0, |s| s.median);
            for round in r.outliers(d) {
                write!(
                    f,
                    "{} {} round {} at {} ops/s (its median {median})",
                    if any { "," } else { "" },
                    names.get(d).copied().unwrap_or("?"),
                    round + 1,
                    ops[round]
                )?;
                any = true;
            }
        }
        if any {
            write!(
                f,
                ": below a tenth of the design's median, so ratios against those windows are left out of ÷base and the pairs' ratio ranges; the sign tests keep them (they use only which design was higher)"
            )
        } else {
            f.write_str(" none (no window below a tenth of its design's median)")
        }
    }
}

/// The line above the pairs: the test, the rounds and the correction.
pub struct PairsHeader(pub usize, pub usize);

impl fmt::Display for PairsHeader {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let PairsHeader(rounds, m) = *self;
        write!(
            f,
            "pairs (exact sign test over the {rounds} paired rounds of one design above {}× the other; Holm–Bonferroni over the {m} pairs, family-wise alpha {}: the pair of rank i by p is told apart when p <= {}/({m} - i + 1) and every pair ranked before it was):",
            Milli(MARGIN_MILLI),
            Frac4(ALPHA),
            Frac4(ALPHA),
        )
    }
}

/// One pair's line: `  higher > lower: higher in k of n rounds, by more
/// than 1.200× in c, ratio median … [min–max], p=…, holm rank r of m needs p <= t: met` and, when
/// Holm does not tell them apart, `≈`, `missed` (or `met, but a smaller p
/// missed`) and `: cannot tell apart`.
pub struct PairLine<'a>(pub &'a Tested, pub &'a [&'a str]);

impl fmt::Display for PairLine<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let t = self.0;
        let p = &t.pair;
        let name = |i: usize| self.1.get(i).copied().unwrap_or("?");
        let (hi, lo) = p.higher_first();
        let (k, n) = (p.above.max(p.below), p.above + p.below + p.ties);
        let c = if hi == p.a {
            p.clear_above
        } else {
            p.clear_below
        };
        let ratio = p.ratio;
        write!(
            f,
            "  {} {} {}: higher in {k} of {n} rounds, by more than {}× in {c}, ratio median {} [{}], p={}, holm rank {} of {} needs p <= {}: {}",
            name(hi),
            if t.apart { ">" } else { "≈" },
            name(lo),
            Milli(MARGIN_MILLI),
            Milli(ratio.map_or(0, |s| s.median)),
            Range(
                Milli(ratio.map_or(0, |s| s.min)),
                Milli(ratio.map_or(0, |s| s.max))
            ),
            Frac4(p.p()),
            t.rank,
            t.of,
            Frac4(t.threshold()),
            match (t.met, t.apart) {
                (true, true) => "met",
                (true, false) => "met, but a smaller p missed",
                (false, _) => "missed",
            }
        )?;
        if !t.apart {
            f.write_str(": cannot tell apart")?;
        }
        Ok(())
    }
}

/// The closing line: `cannot tell apart: a ≈ b, …` or that every pair
/// was told apart (after Holm's correction).
pub struct Verdict<'a>(pub &'a [Tested], pub &'a [&'a str]);

impl fmt::Display for Verdict<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let name = |i: usize| self.1.get(i).copied().unwrap_or("?");
        let mut first = true;
        f.write_str("cannot tell apart:")?;
        for t in self.0.iter().filter(|t| !t.apart) {
            let (hi, lo) = t.pair.higher_first();
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
mod tests;
