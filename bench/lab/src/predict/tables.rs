//! What `bench predict` prints: the 2-CPU check of one design and lock
//! kind ([`Check`]) and its table ([`validation_table`]), and the table of
//! the model's inputs and predictions ([`table`]).
//!
//! Touches nothing but the checks and models it is given.

use std::fmt::Write as _;

use super::extrapolate::Validity;
use super::spans;
use super::{Model, Spent};
use crate::predict::model::{self, Inputs, LockKind};
use formats::markdown::Align::{self, Left, Right};
use formats::markdown::Table;
use formats::output;

/// One round's 2-CPU check of one design and lock kind.
#[derive(Clone, Debug, PartialEq)]
pub struct Check {
    pub design: String,
    pub lock: LockKind,
    /// Wall clock: predicted and measured total ops/s.
    pub predicted: f64,
    pub measured: f64,
    /// CPU time: predicted and measured operations per CPU-second (the
    /// model fed with the 1-CPU run's CPU time per op).
    pub predicted_per_cpu_s: f64,
    pub measured_per_cpu_s: f64,
    /// CPU seconds ÷ wall seconds of the 2-task run (2.0 on an idle machine).
    pub effective_cpus: f64,
    pub transfers_predicted: f64,
    pub transfers_measured: f64,
    pub allocs_predicted: f64,
    pub allocs_measured: f64,
    /// The transfer latency the round was predicted with (ns): measured
    /// around its 2-task run, or the one given; 0 where not recorded.
    pub transfer_ns: f64,
    /// Predicted operations per CPU-second with the allocating fraction the
    /// 2-task run measured in place of the sharing term's (what the model
    /// says an allocating op costs, alone); 0 where not recorded.
    pub predicted_per_cpu_s_at_sharing: f64,
    /// CPU nanoseconds an allocating op took in the 2-task run (its ops'
    /// time less the sharing ones', each at the 1-CPU hit time, over the
    /// allocating fraction), and what the model charges one at that
    /// fraction; 0 for a design that does not allocate, or not recorded.
    pub alloc_ns_measured: f64,
    pub alloc_ns_at_sharing: f64,
    /// Counted transfers per allocating op: the 2-task run's `transfers=`
    /// over its allocating fraction, and what the model says at that
    /// fraction; 0 for a design that does not allocate, or not recorded.
    pub transfers_per_alloc_measured: f64,
    pub transfers_per_alloc_at_sharing: f64,
    /// Of the 2-task run's allocating ops, the share that found the name
    /// hashed by the other CPU in `d_alloc_parallel` (`parallel_found` over
    /// the allocations: they asked the filesystem nothing), and the waits
    /// for the other CPU's lookup of the name per allocation
    /// (`in_lookup_waits`); 0 for a design that does not allocate, or not
    /// recorded.
    pub found_per_alloc_measured: f64,
    pub waits_per_alloc_measured: f64,
    /// The model's share of allocating ops that find the name in
    /// `d_alloc_parallel` (the sharing term's found path); 0 where nothing
    /// is shared, or not recorded.
    pub found_predicted: f64,
    /// What a move of the parent's lines cost this design's op in the
    /// round ([`super::steal`], ns), and the prediction at the measured
    /// sharing with a visit's move priced at it in place of the model's
    /// half `t_x`
    /// (operations per CPU-second); 0 where not measured.
    pub move_ns_measured: f64,
    pub predicted_per_cpu_s_at_sharing_and_price: f64,
    /// The round's spans on 1 CPU and on 2 ([`super::spans`]), for designs
    /// that allocate; `tasks` 0 where not measured.
    pub spans_1: super::spans::Spans,
    pub spans_2: super::spans::Spans,
    /// The model's spans at the allocating fraction the 2-task run
    /// measured, on CPU time (ns): its own dentry's hashed window and the
    /// slow part of an allocating op ([`predict::WithAllocating`]); 0 for a
    /// design that does not allocate, or not recorded.
    pub window_ns_at_sharing: f64,
    pub slow_ns_at_sharing: f64,
    /// The round whose 2-task run this checks (0: not recorded), and
    /// whether the prediction came from other rounds' inputs (a held-out
    /// round, [`super::split`]) rather than the round's own (a fit round:
    /// in-sample, no verdict where held-out rounds exist).
    pub round: u32,
    pub held_out: bool,
}

impl Check {
    /// The check of `m` (wall-clock inputs) against a 2-task run `o2` that
    /// spent `spent`, with `cpu` the same inputs on CPU time.
    pub fn new(m: &Model, cpu: &Inputs, o2: &output::RunOutput, spent: &Spent) -> Check {
        let wall = m.predict(2);
        let on_cpu = model::predict(cpu, m.lock, m.transfer_ns, 2);
        let allocs_measured = o2.per_op.map(|p| p.allocs).unwrap_or(0.0);
        // The allocating fraction the run had: its allocs/op over the
        // 1-CPU run's (every 1-CPU op allocates what it allocates).
        let a = if cpu.allocs > 0.0 {
            (allocs_measured / cpu.allocs).clamp(1e-6, 1.0)
        } else {
            1.0
        };
        let at = model::with_allocating(cpu, m.lock, m.transfer_ns, 2, a);
        let at_sharing = at.ops;
        // Per op on one CPU's time, then per allocating op.
        let per_alloc = |per_cpu_s: f64| {
            if cpu.allocs > 0.0 && per_cpu_s > 0.0 {
                (1e9 / per_cpu_s - (1.0 - a) * model::hit_ns(cpu)) / a
            } else {
                0.0
            }
        };
        let transfers_measured = o2.per_op.and_then(|p| p.transfers).unwrap_or(0.0);
        let per_alloc_count = |n: u64| {
            if spent.allocs > 0 {
                n as f64 / spent.allocs as f64
            } else {
                0.0
            }
        };
        let (transfers_per_alloc_measured, transfers_per_alloc_at_sharing) = if cpu.allocs > 0.0 {
            (transfers_measured / a, at.transfers_per_alloc)
        } else {
            (0.0, 0.0)
        };
        Check {
            design: m.design.clone(),
            lock: m.lock,
            predicted: wall.ops,
            measured: o2.average as f64,
            predicted_per_cpu_s: on_cpu.ops / 2.0,
            measured_per_cpu_s: spent.ops_per_cpu_s(),
            effective_cpus: spent.effective_cpus(),
            transfers_predicted: wall.transfers,
            transfers_measured,
            allocs_predicted: wall.allocs,
            allocs_measured,
            transfer_ns: m.transfer_ns,
            predicted_per_cpu_s_at_sharing: at_sharing / 2.0,
            alloc_ns_measured: per_alloc(spent.ops_per_cpu_s()),
            alloc_ns_at_sharing: per_alloc(at_sharing / 2.0),
            transfers_per_alloc_measured,
            transfers_per_alloc_at_sharing,
            found_predicted: on_cpu.found,
            move_ns_measured: 0.0,
            predicted_per_cpu_s_at_sharing_and_price: 0.0,
            found_per_alloc_measured: per_alloc_count(spent.found),
            waits_per_alloc_measured: per_alloc_count(spent.waits),
            spans_1: Default::default(),
            spans_2: Default::default(),
            window_ns_at_sharing: if cpu.allocs > 0.0 { at.window_ns } else { 0.0 },
            slow_ns_at_sharing: if cpu.allocs > 0.0 { at.slow_ns } else { 0.0 },
            round: 0,
            held_out: false,
        }
    }

    /// A round known by its rates alone: ops/s predicted and measured on
    /// the wall clock (`wall`) and per CPU-second (`per_cpu_s`), and the
    /// run's effective CPUs; every other column 0, "not recorded", as a
    /// checks.csv from before it reads. For tests and hand-made tables.
    pub fn from_rates(
        design: &str,
        lock: LockKind,
        wall: (f64, f64),
        per_cpu_s: (f64, f64),
        effective_cpus: f64,
    ) -> Check {
        Check {
            design: design.into(),
            lock,
            predicted: wall.0,
            measured: wall.1,
            predicted_per_cpu_s: per_cpu_s.0,
            measured_per_cpu_s: per_cpu_s.1,
            effective_cpus,
            transfers_predicted: 0.0,
            transfers_measured: 0.0,
            allocs_predicted: 0.0,
            allocs_measured: 0.0,
            transfer_ns: 0.0,
            predicted_per_cpu_s_at_sharing: 0.0,
            alloc_ns_measured: 0.0,
            alloc_ns_at_sharing: 0.0,
            transfers_per_alloc_measured: 0.0,
            transfers_per_alloc_at_sharing: 0.0,
            found_per_alloc_measured: 0.0,
            waits_per_alloc_measured: 0.0,
            found_predicted: 0.0,
            move_ns_measured: 0.0,
            predicted_per_cpu_s_at_sharing_and_price: 0.0,
            spans_1: Default::default(),
            spans_2: Default::default(),
            window_ns_at_sharing: 0.0,
            slow_ns_at_sharing: 0.0,
            round: 0,
            held_out: false,
        }
    }

    /// Price the round once more at its measured sharing, with a visit's
    /// move at `move_ns` (measured in the round) instead of `t_x`; `cpu`:
    /// the CPU-time inputs [`Check::new`] had.
    pub fn price_moves(&mut self, cpu: &Inputs, move_ns: f64) {
        if cpu.allocs <= 0.0 {
            return;
        }
        let a = (self.allocs_measured / cpu.allocs).clamp(1e-6, 1.0);
        let price = model::MovePrice {
            fixed_ns: move_ns,
            of_latency: 0.0,
        };
        let at = model::with_allocating_priced(cpu, self.lock, self.transfer_ns, price, 2, a);
        self.move_ns_measured = move_ns;
        self.predicted_per_cpu_s_at_sharing_and_price = at.ops / 2.0;
    }

    /// Predicted at the measured sharing, moves at the measured price, ÷
    /// measured per CPU-second, where recorded.
    pub fn priced_ratio(&self) -> Option<f64> {
        (self.predicted_per_cpu_s_at_sharing_and_price > 0.0).then(|| {
            self.predicted_per_cpu_s_at_sharing_and_price / self.measured_per_cpu_s.max(1e-9)
        })
    }

    /// Predicted ÷ measured on the wall clock.
    pub fn wall_ratio(&self) -> f64 {
        self.predicted / self.measured.max(1.0)
    }
    /// Predicted ÷ measured per CPU-second.
    pub fn cpu_ratio(&self) -> f64 {
        self.predicted_per_cpu_s / self.measured_per_cpu_s.max(1e-9)
    }
    /// Predicted at the measured sharing ÷ measured per CPU-second, where
    /// recorded.
    pub fn sharing_ratio(&self) -> Option<f64> {
        (self.predicted_per_cpu_s_at_sharing > 0.0)
            .then(|| self.predicted_per_cpu_s_at_sharing / self.measured_per_cpu_s.max(1e-9))
    }
}

/// The rounds of `checks` grouped by their transfer latency, lowest first:
/// a round joins the group before it while its latency is within 2× of
/// that group's lowest (the bound [`super::tx_settled`] uses for one round).
/// Rounds with no latency recorded form no group.
pub fn latency_groups<'a>(checks: &[&'a Check]) -> Vec<Vec<&'a Check>> {
    let mut by_tx: Vec<&Check> = checks
        .iter()
        .copied()
        .filter(|c| c.transfer_ns > 0.0)
        .collect();
    by_tx.sort_by(|a, b| a.transfer_ns.total_cmp(&b.transfer_ns));
    let mut groups: Vec<Vec<&Check>> = Vec::new();
    for c in by_tx {
        match groups.last_mut() {
            Some(g) if c.transfer_ns <= 2.0 * g[0].transfer_ns => g.push(c),
            _ => groups.push(vec![c]),
        }
    }
    groups
}

/// `checks` grouped by `key`, groups and their rounds in first-seen order.
pub(super) fn groups_by<'a, K: PartialEq>(
    checks: impl IntoIterator<Item = &'a Check>,
    key: impl Fn(&'a Check) -> K,
) -> Vec<(K, Vec<&'a Check>)> {
    let mut groups: Vec<(K, Vec<&Check>)> = Vec::new();
    for c in checks {
        let k = key(c);
        match groups.iter_mut().find(|g| g.0 == k) {
            Some(g) => g.1.push(c),
            None => groups.push((k, vec![c])),
        }
    }
    groups
}

/// The median round of `rounds` by the CPU-time ratio (the lower one of
/// an even count); `rounds` must not be empty.
pub(super) fn median_round<'a>(rounds: &[&'a Check]) -> &'a Check {
    let mut v = rounds.to_vec();
    v.sort_by(|a, b| a.cpu_ratio().total_cmp(&b.cpu_ratio()));
    v[(v.len() - 1) / 2]
}

/// Within ±25 %: the check's bound.
fn within(ratio: f64) -> bool {
    (0.75..=1.25).contains(&ratio)
}

/// The checks a verdict rests on: the held-out rounds' where there are any
/// ([`super::split`]), else all (a single round, or a checks.csv from
/// before the split: in-sample).
fn verdict_checks(checks: &[Check]) -> Vec<Check> {
    if checks.iter().any(|c| c.held_out) {
        checks.iter().filter(|c| c.held_out).cloned().collect()
    } else {
        checks.to_vec()
    }
}

/// A group's rounds as a cell: `fit 1,3,5` or `held out 2,4`, or how many
/// where the rounds were not recorded.
fn rounds_cell(mine: &[&Check]) -> String {
    if mine.iter().any(|c| c.round == 0) {
        return mine.len().to_string();
    }
    let list: Vec<String> = mine.iter().map(|c| c.round.to_string()).collect();
    let set = if mine[0].held_out { "held out" } else { "fit" };
    format!("{set} {}", list.join(","))
}

/// The ±25 % check table: per design and lock kind, the median round (by
/// the CPU-time ratio) with the spread of both ratios over the rounds.
/// The verdict uses the CPU-time ratio, which holds on a machine whose
/// cores other jobs share (the 2-task run then gets fewer than 2 CPUs:
/// the *effective CPUs* column); the wall-clock ratio is the same check
/// on an idle machine.
pub fn validation_table(checks: &[Check]) -> String {
    let mut s = String::from(
        "\n2-CPU check (host mode, this machine): predicted ÷ measured, median round, with the \
         spread over rounds in brackets. *per CPU-s* compares operations per CPU-second (load-\
         independent; the verdict); *wall* compares ops/s (meaningful when effective CPUs ≈ 2). \
         The model is for 2 CPUs running at once: where *effective CPUs* (the 2-task run's CPU-s \
         ÷ wall-s) is well below 2 the tasks took turns on a CPU, and a task frozen with its \
         transient dentry hashed lets the other share it for a whole time slice, so transient's \
         measured allocs/op fall below the prediction and its ops/CPU-s rise above it. Unless \
         `--transfer-ns` was given, each round's 2-task run is predicted with the cache-line \
         transfer latency measured just before and after it (bench predict prints it per \
         round): on a VM whose vCPUs move between cores that share a cache and cores that do \
         not, the latency of the run's start is not that of every round: the last column gives \
         the median round's, and the range over the rounds. The model is fitted on the odd \
         rounds and validated on the even ones (`benchlab::predict::split`): a *held out* row \
         predicts its rounds' 2-task runs with the fit rounds' median inputs, never their own, \
         and gives the verdict; a *fit* row checks each fit round against its own inputs \
         (*in-sample*, no verdict where held-out rounds exist).\n\n\
         ",
    );
    let mut t = Table::new([
        ("design", Left),
        ("lock", Left),
        ("rounds", Right),
        ("predicted ops/CPU-s", Right),
        ("measured ops/CPU-s", Right),
        ("ratio per CPU-s", Right),
        ("wall ops/s predicted", Right),
        ("measured", Right),
        ("ratio wall", Right),
        ("effective CPUs", Right),
        ("allocs/op predicted", Right),
        ("measured", Right),
        ("transfers/op predicted", Right),
        ("measured", Right),
        ("verdict (±25 %)", Left),
        ("transfer ns", Right),
    ]);
    for ((design, lock, held_out), mine) in
        groups_by(checks, |c| (c.design.as_str(), c.lock, c.held_out))
    {
        let med = median_round(&mine);
        let span = |f: &dyn Fn(&Check) -> f64| {
            let lo = mine.iter().map(|c| f(c)).fold(f64::INFINITY, f64::min);
            let hi = mine.iter().map(|c| f(c)).fold(0.0, f64::max);
            format!("[{lo:.2}–{hi:.2}]")
        };
        let tx_lo = mine
            .iter()
            .map(|c| c.transfer_ns)
            .fold(f64::INFINITY, f64::min);
        let tx_hi = mine.iter().map(|c| c.transfer_ns).fold(0.0, f64::max);
        let tx = if tx_hi <= 0.0 {
            "–".to_string()
        } else if tx_hi - tx_lo < 0.05 {
            format!("{:.1}", med.transfer_ns)
        } else {
            format!("{:.1} [{tx_lo:.0}–{tx_hi:.0}]", med.transfer_ns)
        };
        let ok = (if within(med.cpu_ratio()) {
            "met"
        } else {
            "NOT met"
        })
        .to_string();
        let any_held_out = checks
            .iter()
            .any(|c| c.held_out && c.design == design && c.lock == lock);
        let verdict = match (held_out, any_held_out, med.round) {
            (true, _, _) => ok,
            (false, true, _) => "in-sample".to_string(),
            (false, false, 0) => ok,
            (false, false, _) => format!("{ok} (in-sample)"),
        };
        t.row([
            design.to_string(),
            lock.to_string(),
            rounds_cell(&mine),
            crate::human(med.predicted_per_cpu_s),
            crate::human(med.measured_per_cpu_s),
            format!("{:.2} {}", med.cpu_ratio(), span(&Check::cpu_ratio)),
            crate::human(med.predicted),
            crate::human(med.measured),
            format!("{:.2} {}", med.wall_ratio(), span(&Check::wall_ratio)),
            format!("{:.2}", med.effective_cpus),
            format!("{:.2}", med.allocs_predicted),
            format!("{:.2}", med.allocs_measured),
            format!("{:.2}", med.transfers_predicted),
            format!("{:.2}", med.transfers_measured),
            verdict,
            tx,
        ]);
    }
    s.push_str(&t.into_string());
    s.push_str(&by_latency_table(checks));
    s
}

/// The second table of [`validation_table`]: each design and lock kind's
/// rounds per latency regime ([`latency_groups`]), with the prediction at
/// the sharing the run measured beside the model's own. Empty when no
/// round recorded its latency.
fn by_latency_table(checks: &[Check]) -> String {
    let checks = &verdict_checks(checks);
    if checks.iter().all(|c| c.transfer_ns <= 0.0) {
        return String::new();
    }
    let mut s = String::from(
        "\nBy transfer latency: each design and lock kind's rounds grouped by the latency \
         they were predicted with (a round joins a group while its latency is within 2× of \
         the group's lowest), the median round of each group; the held-out rounds only, where \
         there are any. *At measured sharing* predicts \
         the same round with the allocating fraction its 2-task run measured in place of the \
         sharing term's: where it is near 1 and the model's own ratio is not, the sharing \
         term missed; where it is off too, so is what the model charges an allocating op at \
         that latency. Then come the counted transfers per allocating op, the \
         model's at the measured sharing and the run's (`transfers=` over the allocating \
         fraction): where they differ, the model moves the lines more or less often than \
         the run did. *Found* is the share of the allocating ops that found the name hashed \
         (or in lookup) by the other CPU when `d_alloc_parallel` looked again, the sharing \
         term's (its found path) and the run's (`parallel_found` over the allocations: they \
         asked the filesystem nothing, yet the model prices every allocating op as one that \
         does); *waits* are the run's waits for the other CPU's lookup of the name per \
         allocating op (`in_lookup_waits`). *Move ns* is what a move of the parent's lines \
         cost the design's op in the round (a second CPU that only takes and drops a \
         reference on the parent), and the last column predicts the round at its measured \
         sharing with a visit's move priced at that in place of the model's half `t_x`.\n\n\
         ",
    );
    let mut t = Table::new([
        ("design", Left),
        ("lock", Left),
        ("transfer ns", Right),
        ("rounds", Right),
        ("ratio per CPU-s", Right),
        ("at measured sharing", Right),
        ("allocs/op predicted", Right),
        ("measured", Right),
        ("verdict (±25 %)", Left),
        ("transfers per allocating op at measured sharing", Right),
        ("measured", Right),
        ("found predicted", Right),
        ("measured", Right),
        ("waits", Right),
        ("move ns", Right),
        ("at measured sharing and move price", Right),
    ]);
    for ((design, lock), mine) in groups_by(checks, |c| (c.design.as_str(), c.lock)) {
        for g in latency_groups(&mine) {
            let med = median_round(&g);
            let (lo, hi) = (g[0].transfer_ns, g[g.len() - 1].transfer_ns);
            let (lo_s, hi_s) = (format!("{lo:.0}"), format!("{hi:.0}"));
            let tx = if lo_s == hi_s {
                format!("{:.1}", med.transfer_ns)
            } else {
                format!("{lo_s}–{hi_s}")
            };
            let at = med
                .sharing_ratio()
                .map(|r| format!("{r:.2}"))
                .unwrap_or_else(|| "–".into());
            let per_alloc = |v: f64| {
                if v > 0.0 {
                    format!("{v:.2}")
                } else {
                    "–".into()
                }
            };
            // Found and waits: 0.00 is a measurement where the run
            // allocated; nothing to share where it did not.
            let share = |v: f64| {
                if med.allocs_measured > 0.0 {
                    format!("{v:.2}")
                } else {
                    "–".into()
                }
            };
            t.row([
                design.to_string(),
                lock.to_string(),
                tx,
                g.len().to_string(),
                format!("{:.2}", med.cpu_ratio()),
                at,
                format!("{:.2}", med.allocs_predicted),
                format!("{:.2}", med.allocs_measured),
                (if within(med.cpu_ratio()) {
                    "met"
                } else {
                    "NOT met"
                })
                .to_string(),
                per_alloc(med.transfers_per_alloc_at_sharing),
                per_alloc(med.transfers_per_alloc_measured),
                share(med.found_predicted),
                share(med.found_per_alloc_measured),
                share(med.waits_per_alloc_measured),
                if med.move_ns_measured > 0.0 {
                    format!("{:.0}", med.move_ns_measured)
                } else {
                    "–".into()
                },
                med.priced_ratio()
                    .map(|r| format!("{r:.2}"))
                    .unwrap_or_else(|| "–".into()),
            ]);
        }
    }
    s.push_str(&t.into_string());
    s.push_str(&alloc_cost_lines(checks));
    s
}

/// The shared lines each model priced (markdown), one row per line: what
/// the census saw per operation, two tasks' operations taking turns.
pub fn lines_table(models: &[Model]) -> String {
    let mut t = Table::new([
        ("design", Left),
        ("lock", Left),
        ("line", Right),
        ("stores/op", Right),
        ("counted by transfers=", Right),
        ("visits", Right),
        ("lockref fast paths", Right),
        ("stores in its own holds", Right),
        ("holds", Right),
        ("hold ns", Right),
        ("visits in the window", Right),
        ("in-hold stores in the window", Right),
    ]);
    for m in models {
        for (k, l) in m.inputs.lines.iter().enumerate() {
            let mut cells = vec![m.design.clone(), m.lock.to_string(), (k + 1).to_string()];
            cells.extend(l.values().iter().enumerate().map(|(j, v)| match j {
                model::Line::HOLD_NS => format!("{v:.1}"),
                _ => format!("{v:.2}"),
            }));
            t.row(cells);
        }
    }
    format!("\n{t}")
}

/// A right-aligned column per CPU count of [`model::CPUS`]: `1 CPU`,
/// `2 CPUs`, … (the predicted tables' last columns).
pub fn cpus_columns() -> impl Iterator<Item = (String, Align)> {
    model::CPUS.into_iter().map(|n| {
        (
            format!("{n} CPU{}", if n == 1 { "" } else { "s" }),
            Align::Right,
        )
    })
}

/// The headers of a model's seven measured 1-CPU inputs, in the order
/// [`input_cells`] formats them: the prediction table and the report's
/// inputs table both show these columns.
pub fn input_columns() -> impl Iterator<Item = (String, Align)> {
    [
        "1-CPU ns/op",
        "hot-line stores/op",
        "holds/op",
        "hold ns/op",
        "other shared stores/op",
        "hashed ns/op",
        "hit ns/op",
    ]
    .into_iter()
    .map(|h| (h.to_string(), Right))
}

/// A model's measured 1-CPU inputs as table cells, under
/// [`input_columns`].
pub fn input_cells(i: &Inputs) -> [String; 7] {
    [
        format!("{:.0}", i.ns_per_op),
        format!("{:.2}", i.hot_stores),
        format!("{:.2}", i.hot_holds),
        format!("{:.1}", i.hold_ns),
        format!("{:.2}", i.other_stores),
        format!("{:.0}", i.hashed_ns),
        format!("{:.0}", i.hit_ns),
    ]
}

/// A model's lock kind as a cell, followed by `marker` when its inputs were
/// measured with the build's own lock rather than this kind.
pub fn lock_cell(m: &Model, marker: &str) -> String {
    format!("{}{}", m.lock, if m.lock_measured { "" } else { marker })
}

/// What the 2-CPU checks of `checks` (its held-out rounds where it has
/// any) say about the model of `design` and `lock`: 2 CPUs checked where the median round (by predicted ÷
/// measured operations per CPU-second, the check's verdict) met the
/// tolerance, the error factor the worst round's; nothing checked past the
/// 1-CPU input without a round.
pub fn checked_validity(checks: &[Check], design: &str, lock: LockKind) -> Validity {
    let ours: Vec<Check> = checks
        .iter()
        .filter(|c| c.design == design && c.lock == lock)
        .cloned()
        .collect();
    let mut mine: Vec<(usize, f64, f64)> = verdict_checks(&ours)
        .iter()
        .filter(|c| c.design == design && c.lock == lock)
        .map(|c| (2, c.predicted_per_cpu_s, c.measured_per_cpu_s))
        .collect();
    if mine.is_empty() {
        return Validity::default();
    }
    let ratio = |p: &(usize, f64, f64)| p.1 / p.2;
    mine.sort_by(|a, b| ratio(a).total_cmp(&ratio(b)));
    let median = Validity::from_points(&[mine[(mine.len() - 1) / 2]]);
    if median.checked_cpus < 2 {
        return median;
    }
    let worst = mine
        .iter()
        .map(|p| ratio(p).max(1.0 / ratio(p)))
        .fold(median.factor, f64::max);
    Validity {
        checked_cpus: 2,
        factor: worst,
    }
}

/// The prediction table (markdown), one line per design and lock kind;
/// each figure past the CPU counts `checks` checked labelled an
/// extrapolation with its band ([`super::extrapolate`]).
pub fn table(models: &[Model], checks: &[Check]) -> String {
    let mut cols: Vec<(String, Align)> = [("design".into(), Left), ("lock".into(), Left)].into();
    cols.extend(input_columns());
    cols.extend([("allocs/op".into(), Right), ("t_x ns".into(), Right)]);
    cols.extend(cpus_columns());
    let mut t = Table::new(cols);
    for m in models {
        let i = &m.inputs;
        let mut cells = Vec::from([m.design.to_string(), lock_cell(m, "*")]);
        cells.extend(input_cells(i));
        cells.extend([format!("{:.2}", i.allocs), format!("{:.1}", m.transfer_ns)]);
        let v = checked_validity(checks, &m.design, m.lock);
        cells.extend(model::CPUS.into_iter().map(|n| {
            let p = m.predict(n);
            let bound = (i.allocs > 0.0 && i.hashed_ns > 0.0).then_some(p.ops_no_sharing);
            let mut c = v.cell(crate::human(p.ops), p.ops, n, bound, None, crate::human);
            if i.allocs > 0.0 {
                let _ = write!(c, " ({:.2} allocs/op)", p.allocs);
            }
            c
        }));
        t.row(cells);
    }
    let mut s = format!("\n{t}");
    if models.iter().any(|m| {
        let v = checked_validity(checks, &m.design, m.lock);
        model::CPUS.iter().any(|&n| v.extrapolated(n))
    }) {
        s.push('\n');
        s.push_str(&super::extrapolate::legend());
    }
    if models.iter().any(|m| !m.lock_measured) {
        s.push_str(
            "\n\\* inputs measured with the build's own lock, not this kind (no `lock=` word).\n",
        );
    }
    s
}

/// A least-squares line `y = c + m·x`; `None` for fewer than two distinct
/// `x`.
pub fn fit_line(pts: &[(f64, f64)]) -> Option<(f64, f64)> {
    let n = pts.len() as f64;
    let mx = pts.iter().map(|p| p.0).sum::<f64>() / n;
    let my = pts.iter().map(|p| p.1).sum::<f64>() / n;
    let sxx: f64 = pts.iter().map(|p| (p.0 - mx) * (p.0 - mx)).sum();
    if pts.len() < 2 || sxx <= 0.0 {
        return None;
    }
    let m = pts.iter().map(|p| (p.0 - mx) * (p.1 - my)).sum::<f64>() / sxx;
    Some((my - m * mx, m))
}

/// Below [`by_latency_table`], for each allocating design whose rounds sit
/// in two latency regimes or more: what an allocating op costs at 2 CPUs
/// against the transfer latency, measured and as the model charges it at
/// the measured sharing, each a least-squares line over every lock kind's
/// rounds (at 2 CPUs the kinds hand over alike). A model that prices a move
/// right has the measured slope; what it leaves out that does not scale
/// with the latency shows in the constant.
fn alloc_cost_lines(checks: &[Check]) -> String {
    let costed = checks
        .iter()
        .filter(|c| c.alloc_ns_measured > 0.0 && c.alloc_ns_at_sharing > 0.0);
    let mut s = String::new();
    for (design, mine) in groups_by(costed, |c| c.design.as_str()) {
        if latency_groups(&mine).len() < 2 {
            continue;
        }
        let line = |f: fn(&Check) -> f64| {
            let pts: Vec<(f64, f64)> = mine.iter().map(|c| (c.transfer_ns, f(c))).collect();
            fit_line(&pts)
        };
        let (Some((mc, mm)), Some((pc, pm))) = (
            line(|c| c.alloc_ns_measured),
            line(|c| c.alloc_ns_at_sharing),
        ) else {
            continue;
        };
        let lo = mine
            .iter()
            .map(|c| c.transfer_ns)
            .fold(f64::INFINITY, f64::min);
        let hi = mine.iter().map(|c| c.transfer_ns).fold(0.0, f64::max);
        let _ = writeln!(
            s,
            "\nAn allocating op of {design} at 2 CPUs against the transfer latency `t_x` \
             (least squares over every lock kind's rounds: {} rounds at {lo:.0}–{hi:.0} ns, CPU \
             time): measured {mc:.0} ns + {mm:.1}·t_x; the model at measured sharing {pc:.0} ns \
             + {pm:.1}·t_x.",
            mine.len()
        );
    }
    s
}

/// One round's spans table row: the 1-CPU spans `a` → the 2-CPU ones `b`.
fn stretch(a: f64, b: f64) -> String {
    if a > 0.0 {
        format!("{a:.0} → {b:.0} ({:.1}×)", b / a)
    } else {
        "–".into()
    }
}

/// Nanoseconds, or a dash where not recorded.
fn ns_or_dash(ns: f64) -> String {
    if ns > 0.0 {
        format!("{ns:.0}")
    } else {
        "–".into()
    }
}

/// `bench predict --validate`'s spans table: per design and lock kind with
/// spans timed ([`Check::spans_2`]), the round of median CPU-time ratio,
/// its spans at 1 CPU and at 2, and the sharing term's logic judged at the
/// 2-CPU spans. Empty when no check has them.
pub fn spans_table(checks: &[Check]) -> String {
    let timed: Vec<&Check> = checks.iter().filter(|c| c.spans_2.tasks == 2).collect();
    if timed.is_empty() {
        return String::new();
    }
    let mut s = format!(
        "\nSpans at 2 CPUs (`{}`: the round's design on 1 CPU, then on 2 \
         at once, with only the census's windows timed; its clock reads make each op a little \
         slower than in the check). Mean ns: the RCU-walk part of an op (all ops), the slow part \
         (leaving RCU-walk to the walk's end), Δ (leaving RCU-walk to `d_alloc_parallel`'s look), \
         leaving RCU-walk to the walk's own hash, and a dentry hashed; *model* is what the cost \
         term gives the slow part and an op's own hashed window at the check's measured sharing \
         (CPU time; no finder holding the dentry on). Per op at 2 CPUs: \
         *restarts* found the other CPU's dentry hashed, saw it killed under the walk and \
         allocated after all (a path the sharing term does not have). Then the sharing term's \
         logic fed these 2-CPU spans: its share of allocating ops finding the name in \
         `d_alloc_parallel` (`c/(1+c)`) beside the run's, and its `H` beside the share of \
         lookups that found the name hashed and of the time it was. Median round by the \
         CPU-time ratio.\n\n\
         ",
        spans::MODULE
    );
    let mut t = Table::new([
        ("design", Left),
        ("lock", Left),
        ("rounds", Right),
        ("transfer ns", Right),
        ("RCU-walk part", Left),
        ("slow part", Left),
        ("model", Right),
        ("Δ", Left),
        ("to own hash", Left),
        ("hashed", Left),
        ("model", Right),
        ("restarts/op", Right),
        ("finds, run", Right),
        ("finds, term", Right),
        ("found hashed, run", Right),
        ("time hashed", Right),
        ("H, term", Right),
    ]);
    for ((design, lock), mine) in groups_by(timed, |c| (c.design.as_str(), c.lock)) {
        let m = median_round(&mine);
        let (a, b) = (&m.spans_1, &m.spans_2);
        let (finds_term, h_term) = b.term_at_these_spans();
        let finds_run = if b.allocs > 0.0 {
            b.found / b.allocs
        } else {
            0.0
        };
        t.row([
            design.to_string(),
            lock.to_string(),
            mine.len().to_string(),
            format!("{:.1}", m.transfer_ns),
            stretch(a.fast_ns(), b.fast_ns()),
            stretch(a.slow_ns, b.slow_ns),
            ns_or_dash(m.slow_ns_at_sharing),
            stretch(a.lookup_ns, b.lookup_ns),
            stretch(a.own_hash_ns, b.own_hash_ns),
            stretch(a.hashed_ns, b.hashed_ns),
            ns_or_dash(m.window_ns_at_sharing),
            format!("{:.2}", b.restarts),
            format!("{finds_run:.2}"),
            format!("{finds_term:.2}"),
            format!("{:.2}", b.found_hashed()),
            format!("{:.2}", b.time_hashed()),
            format!("{h_term:.2}"),
        ]);
    }
    s.push_str(&t.into_string());
    s
}
