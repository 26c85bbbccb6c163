//! What a predicted figure rests on. The model is checked only where host
//! mode measured the same point (`bench predict --validate`: 2 CPUs, host
//! mode, within ±[`TOLERANCE`]); every figure at a CPU count past the
//! largest count so checked is an extrapolation, and prints as one:
//! `[`LABEL`]` and an error band.
//!
//! The band: the check bounds the model's error over one step (1 → 2
//! CPUs) by a factor `f`, the larger of 1 + [`TOLERANCE`] and the error
//! the check found (predicted ÷ measured or its inverse). Nothing measured
//! says a later doubling errs less, so each doubling past the checked
//! count may err by `f` again: at N CPUs, `d = log2(N / checked)`
//! doublings, the band is the figure ÷ `f^d` to × `f^d`, widened to a bound
//! the model itself gives where it has one (transient's ops/s without
//! sharing; allocs/op of 1, every op allocating). It is the checked error
//! carried forward, not a confidence interval: what the model leaves out
//! (the lock hand-off at many waiters, a machine's topology) may err more.
//!
//! Touches nothing.

/// The word every extrapolated figure carries.
pub const LABEL: &str = "extrapolated";

/// The 2-CPU check's tolerance: a prediction within ±25 % of the
/// measurement is met.
pub const TOLERANCE: f64 = 0.25;

/// What one model's figures of one kind (ops/s or allocs/op) rest on.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Validity {
    /// The largest CPU count whose measurement the prediction met (1: the
    /// 1-CPU input itself, where nothing more was met).
    pub checked_cpus: usize,
    /// The error factor per doubling carried past it (≥ 1 + TOLERANCE).
    pub factor: f64,
}

impl Default for Validity {
    fn default() -> Self {
        Validity {
            checked_cpus: 1,
            factor: 1.0 + TOLERANCE,
        }
    }
}

/// `predicted ÷ measured` or its inverse, whichever is ≥ 1 (infinite where
/// either is not a positive number).
fn error_factor(predicted: f64, measured: f64) -> f64 {
    if predicted > 0.0 && measured > 0.0 && predicted.is_finite() && measured.is_finite() {
        (predicted / measured).max(measured / predicted)
    } else {
        f64::INFINITY
    }
}

impl Validity {
    /// From one model's `(cpus, predicted, measured)` points: the largest
    /// count above 1 met as the check meets it (predicted ÷ measured within
    /// 1 ± TOLERANCE), and the larger of 1 + TOLERANCE and the worst error
    /// factor at the counts up to it.
    pub fn from_points(points: &[(usize, f64, f64)]) -> Validity {
        // The check's own rule: predicted ÷ measured within 1 ± TOLERANCE.
        let met = |&&(n, p, m): &&(usize, f64, f64)| {
            n > 1 && p > 0.0 && m > 0.0 && (p / m - 1.0).abs() <= TOLERANCE + 1e-12
        };
        let Some(checked) = points.iter().filter(met).map(|p| p.0).max() else {
            return Validity::default();
        };
        let worst = points
            .iter()
            .filter(|p| p.0 > 1 && p.0 <= checked)
            .map(|&(_, p, m)| error_factor(p, m))
            .fold(1.0 + TOLERANCE, f64::max);
        Validity {
            checked_cpus: checked,
            factor: worst,
        }
    }

    /// Whether a figure at `cpus` is an extrapolation.
    pub fn extrapolated(&self, cpus: usize) -> bool {
        cpus > self.checked_cpus
    }

    /// The band of `predicted` at `cpus` (`None` at a checked count):
    /// ÷ and × the factor per doubling past the checked count, the low end
    /// widened down and the high end up to `bound` (a figure the model
    /// itself gives on the other side), the high end at most `cap`.
    pub fn band(
        &self,
        predicted: f64,
        cpus: usize,
        bound: Option<f64>,
        cap: Option<f64>,
    ) -> Option<(f64, f64)> {
        if !self.extrapolated(cpus) {
            return None;
        }
        let d = (cpus as f64 / self.checked_cpus.max(1) as f64).log2();
        let k = self.factor.powf(d);
        let b = bound.unwrap_or(predicted);
        let lo = predicted.min(b) / k;
        let hi = predicted.max(b) * k;
        Some((lo, cap.map_or(hi, |c| hi.min(c))))
    }

    /// `text` for a figure at `cpus`; where it is an extrapolation, its
    /// point figure (`text`'s start, `fmt(predicted)`) gives way to
    /// [`LABEL`] and the band, each end rounded to two significant figures
    /// and written by `fmt` (what follows the point in `text`, such as a
    /// measured figure, stays): past the checked counts a point estimate
    /// to three or four digits claims what the model was never checked on.
    pub fn cell(
        &self,
        text: String,
        predicted: f64,
        cpus: usize,
        bound: Option<f64>,
        cap: Option<f64>,
        fmt: impl Fn(f64) -> String,
    ) -> String {
        match self.band(predicted, cpus, bound, cap) {
            None => text,
            Some((lo, hi)) => {
                let point = fmt(predicted);
                let rest = text.strip_prefix(point.as_str()).unwrap_or(&text);
                format!(
                    "{LABEL}: {}–{}{rest}",
                    fmt(two_figures(lo)),
                    fmt(two_figures(hi))
                )
            }
        }
    }
}

/// `x` rounded to two significant figures.
fn two_figures(x: f64) -> f64 {
    if x == 0.0 || !x.is_finite() {
        return x;
    }
    let unit = 10f64.powf(x.abs().log10().floor() - 1.0);
    (x / unit).round() * unit
}

/// The words under a table with extrapolated cells.
pub fn legend() -> String {
    format!(
        "Cells marked *{LABEL}* are past the largest CPU count at which host mode measured the \
         point and the prediction met it within ±{:.0} %: the model was not checked there. Their \
         band carries the checked error forward: the larger of ±{:.0} % and the error found, \
         compounded once per doubling of the CPUs past the checked count, widened to the \
         model's own bound where it gives one (ops/s without sharing; 1 allocation per op). It \
         is not a confidence interval: what the model leaves out (a lock's hand-off among many \
         waiters, the machine's topology) may err more.\n",
        TOLERANCE * 100.0,
        TOLERANCE * 100.0
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nothing_met_past_one_cpu_leaves_every_larger_count_extrapolated() {
        let v = Validity::from_points(&[]);
        assert_eq!(v, Validity::default());
        assert!(!v.extrapolated(1));
        assert!(v.extrapolated(2));
        // Off by more than 25 % at 2 CPUs: not checked there.
        let v = Validity::from_points(&[(1, 100.0, 100.0), (2, 200.0, 150.0)]);
        assert_eq!(v.checked_cpus, 1);
    }

    #[test]
    fn a_met_two_cpu_check_covers_two_cpus_and_its_error_widens_the_band() {
        // 2.48 M predicted, 2.24 M measured: within 25 %, error 1.107.
        let v = Validity::from_points(&[(1, 1.85e6, 1.94e6), (2, 2.48e6, 2.24e6)]);
        assert_eq!(v.checked_cpus, 2);
        assert!((v.factor - 1.25).abs() < 1e-9, "{v:?}");
        assert_eq!(v.band(2.48e6, 2, None, None), None);
        // 4 CPUs: one doubling past the check.
        let (lo, hi) = v.band(8.0e6, 4, None, None).unwrap();
        assert!(
            (lo - 6.4e6).abs() < 1.0 && (hi - 10.0e6).abs() < 1.0,
            "{lo} {hi}"
        );
        // 64 CPUs: five doublings, 1.25^5 = 3.05.
        let (lo, hi) = v.band(100.0, 64, None, None).unwrap();
        assert!((hi / 100.0 - 1.25f64.powi(5)).abs() < 1e-9);
        assert!((100.0 / lo - 1.25f64.powi(5)).abs() < 1e-9);
        // A worse met error widens every doubling.
        let v = Validity::from_points(&[(2, 1.2, 1.0)]);
        assert!((v.factor - 1.25).abs() < 1e-9);
        let v = Validity::from_points(&[(2, 0.8, 1.0)]);
        assert!((v.factor - 1.25).abs() < 1e-9, "{v:?}");
        // 0.76 is met (within 1 ± 0.25) and errs by 1/0.76 = 1.316.
        let v = Validity::from_points(&[(2, 0.76, 1.0)]);
        assert_eq!(v.checked_cpus, 2);
        assert!((v.factor - 1.0 / 0.76).abs() < 1e-9, "{v:?}");
    }

    #[test]
    fn the_band_reaches_the_models_own_bound_and_stays_under_its_cap() {
        let v = Validity::default();
        // ops/s: the no-sharing figure below the prediction.
        let (lo, hi) = v.band(40.0e6, 8, Some(3.0e6), None).unwrap();
        assert!((lo - 3.0e6 / 1.25f64.powi(3)).abs() < 1.0);
        assert!((hi - 40.0e6 * 1.25f64.powi(3)).abs() < 1.0);
        // allocs/op: up to every op allocating, never above it.
        let (lo, hi) = v.band(0.09, 8, Some(1.0), Some(1.0)).unwrap();
        assert!((lo - 0.09 / 1.25f64.powi(3)).abs() < 1e-9);
        assert_eq!(hi, 1.0);
    }

    #[test]
    fn an_extrapolated_cell_never_prints_without_its_label() {
        let v = Validity::default();
        let f = |x: f64| format!("{x:.0}");
        assert_eq!(v.cell("100".into(), 100.0, 1, None, None, f), "100");
        assert_eq!(
            v.cell("100".into(), 100.0, 2, None, None, f),
            "extrapolated: 80–130"
        );
        // A measured figure after the point stays; the point goes.
        assert_eq!(
            v.cell("100 (measured 90)".into(), 100.0, 2, None, None, f),
            "extrapolated: 80–130 (measured 90)"
        );
        assert_eq!(two_figures(208_050_000.0), 210_000_000.0);
        assert_eq!(two_figures(7_936.0), 7_900.0);
    }
}
