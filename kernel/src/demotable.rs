//! The table `demo=table` prints (`make run`'s result): a header and one
//! row of statneg's figures per ENOENT design (its median round; the rounds
//! and their statistics are `bench::rounds`'). Pure formatting, in the
//! library so that the host tests it; the demo (`demo.rs`) runs the
//! benchmark and prints these lines.
//!
//! The design column is as wide as the longest name it holds (the demo
//! passes the registry's, [`fs::dcache::design::name_width`]) and never
//! narrower than the [`MIN_DESIGN_WIDTH`] characters it has always had, so
//! every column lines up whatever a design is called.
//!
//! [`demo_lock`] chooses the demo's spinlock: the figures'
//! (docs/bench/report.md's guest and host rows run `bench=` without
//! `lock=`: qspinlock) unless `lock=` asked for another or the guest has
//! more vCPUs than host cores, and [`LockWhy`] is the line that says which
//! and why. Touches nothing.

use core::fmt;

use bench::params::LockKind;
use bench::rounds::Buf;
use formats::output::PerOpCounts;

/// The lock docs/bench/report.md's figures were measured with (`bench=`'s
/// default).
pub const FIGURES_LOCK: LockKind = LockKind::DEFAULT;

/// Why the demo runs the lock it runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LockWhy {
    /// The figures' lock.
    Figures,
    /// `lock=` on the command line.
    Asked(LockKind),
    /// More vCPUs than host cores: the paravirt lock (a qspinlock waiter
    /// spins while the holder's vCPU is descheduled; docs/overcommit.md).
    Overcommit { vcpus: usize, cores: u32 },
}

/// The demo's lock: `asked` if given; else the paravirt lock when `vcpus`
/// outnumber `host_cores`; else the figures' lock.
pub fn demo_lock(
    asked: Option<LockKind>,
    vcpus: usize,
    host_cores: Option<u32>,
) -> (LockKind, LockWhy) {
    match (asked, host_cores) {
        (Some(k), _) => (k, LockWhy::Asked(k)),
        (None, Some(c)) if (c as usize) < vcpus => (
            LockKind::Pvqspinlock,
            LockWhy::Overcommit { vcpus, cores: c },
        ),
        (None, _) => (FIGURES_LOCK, LockWhy::Figures),
    }
}

impl fmt::Display for LockWhy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            LockWhy::Figures => write!(
                f,
                "lock: {FIGURES_LOCK}, the lock of docs/bench/report.md's figures"
            ),
            LockWhy::Asked(k) if k == FIGURES_LOCK => write!(
                f,
                "lock: {k} as lock= asked, the lock of docs/bench/report.md's figures"
            ),
            LockWhy::Asked(k) => write!(
                f,
                "lock: {k} as lock= asked, not the {FIGURES_LOCK} of docs/bench/report.md's figures: its ops/s do not compare with them"
            ),
            LockWhy::Overcommit { vcpus, cores } => write!(
                f,
                "lock: {} and not the {FIGURES_LOCK} of docs/bench/report.md's figures: {vcpus} vCPUs on {cores} host cores, where a {FIGURES_LOCK} waiter spins while the holder's vCPU is descheduled (docs/overcommit.md); its ops/s do not compare with them",
                LockKind::Pvqspinlock
            ),
        }
    }
}

/// Rounds of `demo=table` (`rounds=` may ask for fewer): the fewest with
/// which the sign test can tell a pair apart among the six pairs of four
/// designs under Holm's correction (`bench::rounds`): every round the same
/// way gives p = 2·2^−8 = 0.0078 ≤ 0.05/6, where 7 rounds' 0.0156 never
/// could.
pub const TABLE_ROUNDS: usize = 8;

/// The narrowest design column: the width of today's table.
pub const MIN_DESIGN_WIDTH: usize = 10;

/// One design's figures.
pub struct Row<'a> {
    pub design: &'a str,
    pub tasks: usize,
    /// Operations per second, all tasks together.
    pub ops: u64,
    pub per_op: PerOpCounts,
}

/// The header line, the design column `.0` characters wide.
pub struct Header(pub usize);

impl fmt::Display for Header {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{:<w$} {:>5} {:>12} {:>14} {:>10} {:>17} {:>9} {:>13}",
            "design",
            "tasks",
            "ops/s",
            "per-CPU ops/s",
            "allocs/op",
            "shared_stores/op",
            "locks/op",
            "fallbacks/op",
            w = self.0
        )
    }
}

/// One row's line, the design column `.0` characters wide.
pub struct Line<'a>(pub usize, pub &'a Row<'a>);

impl fmt::Display for Line<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let r = self.1;
        let c = &r.per_op;
        write!(
            f,
            "{:<w$} {:>5} {:>12} {:>14} {:>10} {:>17} {:>9} {:>13}",
            r.design,
            r.tasks,
            r.ops,
            r.ops / r.tasks.max(1) as u64,
            Ratio(c.allocs, c.ops),
            Ratio(c.shared_stores, c.ops),
            Ratio(c.locks, c.ops),
            Ratio(c.fallbacks, c.ops),
            w = self.0
        )
    }
}

/// `n / d` with 3 decimals, integer arithmetic (0 when `d` is 0).
struct Ratio(u64, u64);

impl fmt::Display for Ratio {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let milli = if self.1 == 0 {
            0
        } else {
            (self.0 as u128 * 1000 + self.1 as u128 / 2) / self.1 as u128
        };
        // At most 39 digits, a point and 3 decimals: pad it as one piece.
        let mut buf = [0u8; 48];
        let mut w = Buf(&mut buf, 0);
        let _ = fmt::write(&mut w, format_args!("{}.{:03}", milli / 1000, milli % 1000));
        let n = w.1;
        f.pad(core::str::from_utf8(&buf[..n]).unwrap_or("?"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(design: &str) -> Row<'_> {
        Row {
            design,
            tasks: 2,
            ops: 111_972,
            per_op: PerOpCounts {
                ops: 1000,
                allocs: 434,
                shared_stores: 11_682,
                fallbacks: 434,
                locks: 4322,
                transfers: 0,
            },
        }
    }

    #[test]
    fn the_demo_runs_the_figures_lock_unless_asked_or_overcommitted() {
        assert_eq!(FIGURES_LOCK, LockKind::Qspinlock);
        assert_eq!(
            demo_lock(None, 2, Some(2)),
            (LockKind::Qspinlock, LockWhy::Figures)
        );
        assert_eq!(demo_lock(None, 4, None).0, LockKind::Qspinlock);
        assert_eq!(
            demo_lock(None, 4, Some(2)),
            (
                LockKind::Pvqspinlock,
                LockWhy::Overcommit { vcpus: 4, cores: 2 }
            )
        );
        assert_eq!(
            demo_lock(Some(LockKind::Ttas), 4, Some(2)),
            (LockKind::Ttas, LockWhy::Asked(LockKind::Ttas))
        );
        assert_eq!(
            LockWhy::Figures.to_string(),
            "lock: qspinlock, the lock of docs/bench/report.md's figures"
        );
        let over = LockWhy::Overcommit { vcpus: 4, cores: 2 }.to_string();
        assert!(
            over.starts_with("lock: pvqspinlock and not the qspinlock"),
            "{over}"
        );
        assert!(over.contains("do not compare"), "{over}");
        let asked = LockWhy::Asked(LockKind::Pvqspinlock).to_string();
        assert!(asked.contains("do not compare"), "{asked}");
    }

    #[test]
    fn todays_names_keep_todays_layout() {
        let w = fs::dcache::design::width_of(["transient", "negbound"], MIN_DESIGN_WIDTH);
        assert_eq!(
            Header(w).to_string(),
            "design     tasks        ops/s  per-CPU ops/s  allocs/op  shared_stores/op  locks/op  fallbacks/op"
        );
        assert_eq!(
            Line(w, &row("transient")).to_string(),
            "transient      2       111972          55986      0.434            11.682     4.322         0.434"
        );
    }

    #[test]
    fn a_long_design_name_widens_the_column_and_every_line_lines_up() {
        let names = ["transient", "a-design-called-by-a-long-name", "noalloc"];
        let w = fs::dcache::design::width_of(names, MIN_DESIGN_WIDTH);
        assert_eq!(w, 30);
        let lines: Vec<String> = core::iter::once(Header(w).to_string())
            .chain(names.iter().map(|n| Line(w, &row(n)).to_string()))
            .collect();
        // Every column ends where the header's does.
        let ends = |l: &str| -> Vec<usize> {
            let b = l.as_bytes();
            (1..=b.len())
                .filter(|&i| b[i - 1] != b' ' && (i == b.len() || b[i] == b' '))
                .collect()
        };
        let header = ends(&lines[0]);
        // "per-CPU ops/s" and "shared_stores/op" are one column each.
        let header: Vec<usize> = header
            .into_iter()
            .filter(|&i| !lines[0][..i].ends_with("per-CPU"))
            .collect();
        for l in &lines[1..] {
            assert_eq!(ends(l)[1..], header[1..], "{lines:#?}");
            assert_eq!(l.len(), lines[0].len(), "{lines:#?}");
        }
    }
}
