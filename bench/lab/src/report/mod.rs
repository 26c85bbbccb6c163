//! report.md from raw.csv rows: one table per source (with its accelerator
//! and host named), ratios between designs and to Linux, the design goals
//! ([`goals`]) checked against the figures, and the runs that were skipped.
//!
//! Rows from several runs or hosts can be merged: tables group by
//! (source, accel, host, session). Sessions are never pooled: rows that put
//! two sessions under one name are refused ([`check`]). A (testcase,
//! design, cpus) point measured more than once in a session — `bench sweep
//! --repeat N` — shows as one line
//! taken from its median run ([`super::points`]), and every ratio uses that
//! run's figures; the table then also gives each point's number of runs and
//! the spread of their averages. The ratio goals pair the runs
//! of each repetition round ([`points::paired_ratio`]); a goal whose
//! points do not pair says `unpaired` and gives no verdict (a ratio of two
//! medians taken at different times is not evidence for a goal).
//!
//! Every line carries its point's n (runs), and its median run's load
//! average, steal, CPUs it got, CPUs everyone else used and spin yields
//! ("n/a" where the source cannot say). A point with n = 1, no CPU use
//! recorded, a starved run, a run beside others using more than a quarter
//! of a CPU, any spin yields, or a scaling efficiency above 105 % is
//! flagged ([`flags`]) and feeds no verdict. A ratio of a configuration
//! to itself (`transient lock=qspinlock` ÷ `transient`, qspinlock being the
//! default) is refused.
//!
//! With `bench predict` models ([`render_with`]) a "Predicted scaling"
//! section follows: the model's inputs and predicted ops/s at 1..64 CPUs
//! per design and lock kind, each beside the host-mode measurement of the
//! same point where the rows have one.
//!
//! Touches nothing but the rows it is given.

use std::collections::BTreeSet;
use std::fmt::Write as _;

use super::human;
use super::points::{self, Point};
use super::predict::Model;
use super::rows::{self, Row};
use formats::markdown::{
    Align::{Left, Right},
    Table,
};

mod goals;
mod predicted;

use goals::write_goals;
use predicted::write_predictions;
pub(crate) use predicted::{no_sharing_bound, ops_validity};

/// Display order and titles of the known sources.
const SOURCES: &[(&str, &str)] = &[
    ("guest", "Guest: this kernel under QEMU"),
    ("host", "Host mode: the fs crate on native host threads"),
    ("linux-host", "Linux on the host: stat() of a missing name"),
    (
        "linux-guest",
        "Linux reference guest under the same QEMU settings",
    ),
];

fn source_rank(s: &str) -> usize {
    SOURCES
        .iter()
        .position(|(n, _)| *n == s)
        .unwrap_or(SOURCES.len())
}

fn source_title(s: &str) -> String {
    SOURCES
        .iter()
        .find(|(n, _)| *n == s)
        .map(|(_, t)| t.to_string())
        .unwrap_or_else(|| s.to_string())
}

fn opt3(v: Option<f64>) -> String {
    v.map(|v| format!("{v:.3}")).unwrap_or_else(|| "–".into())
}

/// A (source, accel, host, session) group.
type Group = (String, String, String, String);

/// Whether the median run `r` belongs to group `g`.
fn in_group(r: &Row, g: &Group) -> bool {
    r.source == g.0 && r.accel == g.1 && r.host == g.2 && r.session == g.3
}

/// `host`, and its session in parentheses when the rows name one.
fn host_cell(g: &Group) -> String {
    if g.3.is_empty() {
        g.2.clone()
    } else {
        format!("{} ({})", g.2, g.3)
    }
}

/// Refuse what the report must not show: rows that pool sessions
/// ([`points::check_not_pooled`]). `bench sweep` and `bench report` call it
/// before writing anything.
pub fn check(rows: &[Row]) -> Result<(), String> {
    points::check_not_pooled(rows)
}

/// The (design, lock) a design label names: `transient`, `transient+ticket`
/// and `transient lock=ticket` spellings alike, the default lock where none
/// is named. `None` for a label naming an unknown lock.
pub fn configuration(label: &str) -> Option<(&str, bench::params::LockKind)> {
    use bench::params::LockKind;
    let (design, lock) = match label.split_once(" lock=").or_else(|| label.split_once('+')) {
        Some((d, l)) => (d, l.parse::<LockKind>().ok()?),
        None => (label, LockKind::DEFAULT),
    };
    Some((design, lock))
}

/// True when `a` and `b` are one configuration under two labels: their
/// ratio would divide a configuration by itself.
pub fn self_ratio(a: &str, b: &str) -> bool {
    a == b || configuration(a).is_some_and(|c| configuration(b) == Some(c))
}

/// A run whose processes got less than this share of the CPUs it asked
/// for (at most the host cores it could use) was `starved`.
pub const STARVED_BELOW: f64 = 0.9;

/// Everyone else using more than this many CPUs during a run (`others`).
pub const OTHERS_ABOVE: f64 = 0.25;

/// Why point `p` feeds no verdict (empty: it may): a single run (`n=1`),
/// no run with its CPU use measured (`cpu unrecorded`: rows from before
/// the `eff_cpus` and `others_cpus` columns, whose quiet cannot be
/// checked), a host or linux-host run whose tasks got less than 90 % of
/// the CPUs they asked for (`starved`: `eff_cpus` below 0.9 × its CPUs,
/// capped at the host cores it could use — its tasks waited for a CPU, or
/// for each other, and the rate shows the wait), a run of any source
/// during which the rest of the machine used more than a quarter of a CPU
/// (`others>0.25`: `others_cpus`, the busy time of every CPU less the
/// run's own, so the run shared the cores with someone), spin yields in
/// any of its runs (`yields`), or a scaling efficiency above 105 % against
/// its group's 1-CPU point in `fair` (`eff>105%`), which more work per CPU
/// than alone cannot be, so something else moved.
///
/// Guests are judged by `others>0.25` alone: QEMU's CPU time counts the
/// boot, TCG's translation and its I/O thread, and a vCPU thread sleeps
/// while its vCPU halts, so its ratio to the vCPU count is no measure of
/// what the guest wanted; what the rest of the machine took from the same
/// cores is. The 1-minute load average is recorded but flags nothing: read
/// after a 4-6 s run it mostly reports the minute before it, the sweep's
/// earlier runs and its own QEMU threads included.
pub fn flags(p: &Point, fair: &[Point]) -> Vec<&'static str> {
    let r = p.median();
    let mut f = Vec::new();
    if p.count() == 1 {
        f.push("n=1");
    }
    if p.runs()
        .iter()
        .all(|r| r.eff_cpus.is_none() || r.others_cpus.is_none())
    {
        f.push("cpu unrecorded");
    }
    if p.runs().iter().any(|r| starved(r)) {
        f.push("starved");
    }
    if p.runs()
        .iter()
        .any(|r| r.others_cpus.is_some_and(|o| o > OTHERS_ABOVE))
    {
        f.push("others>0.25");
    }
    if p.runs().iter().any(|r| r.yields.is_some_and(|y| y > 0)) {
        f.push("yields");
    }
    let g = (
        r.source.clone(),
        r.accel.clone(),
        r.host.clone(),
        r.session.clone(),
    );
    if let Some(one) = ops(fair, &g, &r.testcase, &r.design, 1).filter(|o| *o > 0.0) {
        if r.average as f64 > 1.05 * r.cpus as f64 * one {
            f.push("eff>105%");
        }
    }
    f
}

/// The least or most (`pick`) of `field` over `p`'s runs that have it.
fn extreme(
    p: &Point,
    field: impl Fn(&Row) -> Option<f64>,
    pick: fn(f64, f64) -> f64,
) -> Option<f64> {
    p.runs().iter().filter_map(|r| field(r)).reduce(pick)
}

/// A host or linux-host run whose tasks used less than [`STARVED_BELOW`]
/// of the CPUs it asked for (at most its host cores).
fn starved(r: &Row) -> bool {
    if r.source != "host" && r.source != "linux-host" {
        return false;
    }
    let want = r.host_cores.map_or(r.cpus, |c| r.cpus.min(c)) as f64;
    r.eff_cpus.is_some_and(|e| e < STARVED_BELOW * want)
}

/// The (source, accel, host) groups present, in display order.
fn groups(pts: &[Point]) -> Vec<Group> {
    let mut g: Vec<Group> = pts
        .iter()
        .map(|p| p.median())
        .map(|r| {
            (
                r.source.clone(),
                r.accel.clone(),
                r.host.clone(),
                r.session.clone(),
            )
        })
        .collect::<BTreeSet<_>>()
        .into_iter()
        .collect();
    g.sort_by(|a, b| source_rank(&a.0).cmp(&source_rank(&b.0)).then(a.cmp(b)));
    g
}

/// The point of group `g` for (testcase, design, cpus): `design`'s label,
/// or another spelling of its configuration ([`configuration`]).
fn point<'p, 'r>(
    pts: &'p [Point<'r>],
    g: &Group,
    testcase: &str,
    design: &str,
    cpus: usize,
) -> Option<&'p Point<'r>> {
    let found = |exact: bool| {
        pts.iter().find(|p| {
            let r = p.median();
            in_group(r, g)
                && r.testcase == testcase
                && r.cpus == cpus
                && if exact {
                    r.design == design
                } else {
                    configuration(&r.design).is_some()
                        && configuration(&r.design) == configuration(design)
                }
        })
    };
    // The label as given, else the same configuration spelt otherwise
    // (`transient lock=qspinlock` for `transient`, as `bench predict`
    // labels its rows).
    found(true).or_else(|| found(false))
}

/// Ops/s of the median run of a point of group `g`.
fn ops(pts: &[Point], g: &Group, testcase: &str, design: &str, cpus: usize) -> Option<f64> {
    pts.iter()
        .map(|p| p.median())
        .find(|r| in_group(r, g) && r.testcase == testcase && r.design == design && r.cpus == cpus)
        .map(|r| r.average as f64)
}

/// Registry order (fs::dcache::design::DESIGNS), then unknown names
/// (variants such as `transient+ticket`, Linux references) by name.
fn design_rank(d: &str) -> (usize, &str) {
    let r = fs::dcache::design::by_name(d).unwrap_or(fs::dcache::design::DESIGNS.len());
    (r, d)
}

/// The whole report.md text.
pub fn render(rows: &[Row]) -> String {
    render_with(rows, &[])
}

/// [`render`] with a "Predicted scaling" section for `models`.
pub fn render_with(rows: &[Row], models: &[Model]) -> String {
    render_full(rows, models, "")
}

/// [`render_with`] plus `bench predict --validate`'s 2-CPU check tables
/// (`validation`: the text of its validation.md files) in that section.
/// Overcommitted runs are shown, marked, and left out of every ratio.
pub fn render_full(rows: &[Row], models: &[Model], validation: &str) -> String {
    render_opts(rows, models, validation, false)
}

/// [`render_full`]; `with_overcommit` keeps overcommitted runs (more CPUs
/// than the host cores they ran on, [`Row::overcommitted`]) in the scaling
/// efficiency, the ratios and the goals (`bench report --with-overcommit`).
pub fn render_opts(
    rows: &[Row],
    models: &[Model],
    validation: &str,
    with_overcommit: bool,
) -> String {
    let mut s = String::new();
    let ok = rows.iter().filter(|r| r.is_ok()).count();
    let _ = writeln!(s, "# Lookup benchmark report\n");
    let _ = writeln!(
        s,
        "{ok} runs measured, {} not run. Figures are operations per second over the measured \
         seconds (will-it-scale's `average`). Scaling efficiency = ops/s at N CPUs ÷ (N × ops/s at \
         1 CPU). Per-op counters are the fs crate's counter deltas over the measured window ÷ \
         operations; they do not depend on the accelerator, so they carry across sources.\n",
        rows.len() - ok
    );
    let _ = writeln!(
        s,
        "Under QEMU's TCG everything but contended cache-line transfers slows 6–15×, which dilutes \
         contention: guest (TCG) scaling is not native scaling. Host mode runs the same fs code and \
         workloads on native threads; the Linux rows are the same measurement on the host kernel \
         and in a Linux guest.\n"
    );

    let pts = points::points(rows);
    let _ = writeln!(
        s,
        "Each line gives its point's number of runs (*n*); for the run it shows, the host's 1-minute load \
         average when it ended (a record only: it mostly reports the minute before) and steal (% of the \
         host's CPU time taken by its hypervisor during the run); over its runs, the fewest CPUs a run's \
         own processes got (CPU seconds ÷ wall seconds of the run) and the most that everyone else used \
         meanwhile (all CPUs' busy time from /proc/stat less the run's own); and spin yields (host mode: \
         a lock waiter gave its thread away); *n/a* where the source cannot say. A point with n = 1, no \
         CPU use recorded (rows older than those columns: `cpu unrecorded`), a host or linux-host run that \
         got under 0.9 of the CPUs it asked for (`starved`), a run beside others using over a quarter \
         of a CPU (`others>0.25`), any spin yields, or scaling efficiency above 105 % is flagged and \
         feeds no verdict below (per-op counts ignore the flags about time). Sessions (sweeps) are \
         never pooled: each has its own tables.\n"
    );
    if pts.iter().any(|p| p.count() > 1) {
        let _ = writeln!(
            s,
            "Some points were measured more than once. Each such point is shown by its median run \
             (by ops/s; the lower median for an even count), with that run's own min–max and \
             per-op counters; ratios and the plot use the same run. The scaling goals divide \
             the runs of each round (`rep`) and take the median of those ratios. `bench sweep` runs \
             the two runs a ratio divides back to back within a round (one design at its CPU \
             counts in a row) and every second round backwards, so each pair alternates which \
             goes first (ABBA); rows of another sweep order only pair as well as that order \
             put them side by side.\n"
        );
    }
    // The runs ratios may use: overcommitted ones only when asked, since
    // more CPUs than host cores makes a spinning run a scheduler lottery.
    let fair_rows: Vec<Row> = rows
        .iter()
        .filter(|r| with_overcommit || !r.overcommitted())
        .cloned()
        .collect();
    let fair = points::points(&fair_rows);
    write_overcommit_note(&mut s, rows, with_overcommit);
    let groups = groups(&pts);
    for g in &groups {
        write_group(&mut s, &pts, &fair, g);
    }
    write_design_ratios(&mut s, &fair, &groups);
    write_linux_ratios(&mut s, &fair, &groups);
    write_goals(&mut s, &fair);
    write_predictions(&mut s, &fair, models, validation);
    write_not_run(&mut s, rows);
    s
}

/// The runs that were skipped or failed, with their reasons. A run skipped
/// the same way in every repetition (no kernel image, say) is one line with
/// its count, not N identical lines.
fn write_not_run(s: &mut String, rows: &[Row]) {
    let mut not_run: Vec<(&Row, usize)> = Vec::new();
    for r in rows.iter().filter(|r| !r.is_ok()) {
        let same =
            |o: &Row| rows::key(o) == rows::key(r) && o.status == r.status && o.note == r.note;
        match not_run.iter_mut().find(|(o, _)| same(o)) {
            Some((_, n)) => *n += 1,
            None => not_run.push((r, 1)),
        }
    }
    if !not_run.is_empty() {
        let _ = writeln!(s, "## Not run\n");
        let mut t = Table::new([
            ("source", Left),
            ("host", Left),
            ("testcase", Left),
            ("design", Left),
            ("CPUs", Right),
            ("status", Left),
            ("reason", Left),
        ]);
        for (r, n) in not_run {
            let times = if n > 1 {
                format!(" (×{n})")
            } else {
                String::new()
            };
            t.row([
                r.source.clone(),
                r.host.clone(),
                r.testcase.clone(),
                r.design.clone(),
                r.cpus.to_string(),
                r.status.clone(),
                format!("{}{times}", r.note.replace('|', "\\|")),
            ]);
        }
        s.push_str(&t.into_string());
        s.push('\n');
    }
}

/// "3" when every point of a group has 3 runs, "2–3" when they differ
/// (a repetition failed).
fn run_counts(mine: &[&Point]) -> String {
    let lo = mine.iter().map(|p| p.count()).min().unwrap_or(0);
    let hi = mine.iter().map(|p| p.count()).max().unwrap_or(0);
    if lo == hi {
        lo.to_string()
    } else {
        format!("{lo}–{hi}")
    }
}

/// "CPU model: …" for a group's points: every model its runs recorded
/// (raw.csv's `cpu_model`), and how many runs recorded none.
fn cpu_models_line(pts: &[&Point]) -> String {
    let runs = pts.iter().flat_map(|p| p.runs().iter());
    let mut models: Vec<&str> = Vec::new();
    let mut unknown = 0;
    for r in runs {
        if r.cpu_model.is_empty() {
            unknown += 1;
        } else if !models.contains(&r.cpu_model.as_str()) {
            models.push(&r.cpu_model);
        }
    }
    let mut line = match models.len() {
        0 => "CPU model: not recorded".to_string(),
        1 => format!("CPU model: {}", models[0]),
        _ => format!("CPU models: {}", models.join("; ")),
    };
    if unknown > 0 && !models.is_empty() {
        let _ = write!(line, " (not recorded for {unknown} runs)");
    }
    line
}

/// "Kernel: …" for a group of Linux rows: every `Linux <release>` its
/// successful runs' notes name (linux-guest: the package's release;
/// linux-host: the host's `osrelease`); `None` for other groups.
fn linux_releases_line(pts: &[&Point], source: &str) -> Option<String> {
    if !source.starts_with("linux") {
        return None;
    }
    let mut releases: Vec<&str> = Vec::new();
    for r in pts.iter().flat_map(|p| p.runs().iter()) {
        for part in r.note.split("; ") {
            if part.starts_with("Linux ") && !releases.contains(&part) {
                releases.push(part);
            }
        }
    }
    Some(match releases.len() {
        0 => "Kernel: not recorded".to_string(),
        _ => format!("Kernel: {}", releases.join("; ")),
    })
}

/// Which runs had more CPUs than host cores, and what the report did with
/// them.
fn write_overcommit_note(s: &mut String, rows: &[Row], kept: bool) {
    let over: BTreeSet<(String, usize, usize)> = rows
        .iter()
        .filter(|r| r.is_ok() && r.overcommitted())
        .map(|r| (r.source.clone(), r.cpus, r.host_cores.unwrap_or(0)))
        .collect();
    if over.is_empty() {
        return;
    }
    let list: Vec<String> = over
        .iter()
        .map(|(src, v, c)| format!("`{src}` {v} CPUs on {c} host cores"))
        .collect();
    let _ = writeln!(
        s,
        "**Overcommitted runs** (marked ⚠ in the tables): {}. With more vCPUs or tasks than host \
         cores, a CPU that holds or waits next for a lock can be descheduled by the host, and every \
         other waiter spins behind it: such figures measure the host's scheduler as much as the \
         design. {}\n",
        list.join(", "),
        if kept {
            "They are kept in the scaling efficiency and ratios below (`--with-overcommit`)."
        } else {
            "They are left out of the scaling efficiency, the ratios and the goals below \
             (`bench report --with-overcommit` keeps them)."
        }
    );
}

fn write_group(s: &mut String, pts: &[Point], fair: &[Point], g: &Group) {
    let session = if g.3.is_empty() {
        String::new()
    } else {
        format!(", session `{}`", g.3)
    };
    let _ = writeln!(
        s,
        "## {} — source `{}`, accel `{}`, host `{}`{session}\n",
        source_title(&g.0),
        g.0,
        g.1,
        g.2
    );
    let mut mine: Vec<&Point> = pts.iter().filter(|p| in_group(p.median(), g)).collect();
    let _ = writeln!(s, "{}\n", cpu_models_line(&mine));
    if let Some(k) = linux_releases_line(&mine, &g.0) {
        let _ = writeln!(s, "{k}\n");
    }
    mine.sort_by(|a, b| {
        let (a, b) = (a.median(), b.median());
        a.testcase
            .cmp(&b.testcase)
            .then(design_rank(&a.design).cmp(&design_rank(&b.design)))
            .then(a.cpus.cmp(&b.cpus))
    });
    // Single runs keep the plain table; repeated points add two columns
    // that show how far apart the runs were.
    let repeated = mine.iter().any(|p| p.count() > 1);
    if repeated {
        let _ = writeln!(
            s,
            "Each line: the median of {} runs; *spread* is the lowest–highest ops/s of the point's \
             runs.\n",
            run_counts(&mine)
        );
    }
    let mut cols = vec![
        ("testcase", Left),
        ("design", Left),
        ("CPUs", Right),
        ("ops/s", Right),
        ("per-CPU ops/s", Right),
        ("scaling eff.", Right),
        ("min–max ops/s", Right),
        ("allocs/op", Right),
        ("shared_stores/op", Right),
        ("fallbacks/op", Right),
        ("locks/op", Right),
        ("transfers/op", Right),
    ];
    if repeated {
        cols.extend([("runs", Right), ("spread of ops/s", Right)]);
    }
    cols.extend([
        ("n", Right),
        ("loadavg", Right),
        ("steal", Right),
        ("CPUs got (min)", Right),
        ("others' CPUs (max)", Right),
        ("yields", Right),
        ("flagged", Left),
    ]);
    let mut t = Table::new(cols);
    for p in mine {
        let r = p.median();
        let avg = r.average as f64;
        let per_cpu = avg / r.cpus.max(1) as f64;
        let over = r.overcommitted();
        let eff = ops(fair, g, &r.testcase, &r.design, 1)
            .filter(|one| *one > 0.0)
            .filter(|_| ops(fair, g, &r.testcase, &r.design, r.cpus).is_some())
            .map(|one| format!("{:.0} %", 100.0 * avg / (r.cpus as f64 * one)))
            .unwrap_or_else(|| "–".into());
        let mut cells = vec![
            r.testcase.clone(),
            r.design.clone(),
            format!("{}{}", r.cpus, if over { " ⚠" } else { "" }),
            human(avg),
            human(per_cpu),
            eff,
            format!("{}–{}", human(r.min as f64), human(r.max as f64)),
            opt3(r.allocs),
            opt3(r.shared_stores),
            opt3(r.fallbacks),
            opt3(r.locks),
            opt3(r.transfers),
        ];
        if repeated {
            let (lo, hi) = p.spread();
            cells.push(p.count().to_string());
            cells.push(format!("{}–{}", human(lo as f64), human(hi as f64)));
        }
        let na = || "n/a".to_string();
        cells.extend([
            p.count().to_string(),
            r.loadavg.map_or_else(na, |v| format!("{v:.2}")),
            r.steal.map_or_else(na, |v| format!("{v:.1} %")),
            extreme(p, |r| r.eff_cpus, f64::min).map_or_else(na, |v| format!("{v:.2}")),
            extreme(p, |r| r.others_cpus, f64::max).map_or_else(na, |v| format!("{v:.2}")),
            r.yields.map_or_else(na, |v| v.to_string()),
            flags(p, fair).join(", "),
        ]);
        t.row(cells);
    }
    s.push_str(&t.into_string());
    s.push('\n');
}

/// Every design's ops/s ÷ the baseline's (the registry's first design,
/// Linux's behaviour) under the same lock, per group, workload and CPU
/// count: one row per configuration, so a design added to the registry
/// gets its rows. The ratio is paired ([`paired_cell`]): the median of the
/// rounds' ratios, `unpaired` when the rounds do not pair, never a ratio of
/// two medians taken at different times. A configuration is matched to
/// its baseline by what it names ([`configuration`]), so `noalloc+ticket`,
/// `noalloc lock=ticket` and the baseline spelt either way meet.
fn write_design_ratios(s: &mut String, pts: &[Point], groups: &[Group]) {
    let base = fs::dcache::design::DESIGNS[0].name();
    let mut lines = Vec::new();
    for g in groups.iter().filter(|g| !g.0.starts_with("linux")) {
        let mut mine: Vec<&Point> = pts.iter().filter(|p| in_group(p.median(), g)).collect();
        mine.sort_by(|a, b| {
            let (a, b) = (a.median(), b.median());
            (&a.testcase, a.cpus, design_rank(&a.design)).cmp(&(
                &b.testcase,
                b.cpus,
                design_rank(&b.design),
            ))
        });
        for p in &mine {
            let r = p.median();
            let Some((design, lock)) = configuration(&r.design) else {
                continue;
            };
            let baseline = mine.iter().find(|q| {
                let q = q.median();
                q.testcase == r.testcase
                    && q.cpus == r.cpus
                    && q.design != r.design
                    && configuration(&q.design) == Some((base, lock))
            });
            let (cell, spread, rounds, flagged) = match baseline {
                // The baseline under a second label: a ratio of the
                // configuration to itself.
                Some(b) if design == base => (
                    format!("refused: {} is {}", r.design, b.median().design),
                    "–".into(),
                    "–".into(),
                    String::new(),
                ),
                _ if design == base => continue,
                Some(b) => paired_cell(p, b, pts),
                None => ("no baseline".into(), "–".into(), "–".into(), String::new()),
            };
            lines.push([
                g.0.to_string(),
                g.1.to_string(),
                host_cell(g),
                r.testcase.clone(),
                r.cpus.to_string(),
                r.design.clone(),
                cell,
                spread,
                rounds,
                flagged,
            ]);
        }
    }
    if lines.is_empty() {
        return;
    }
    let _ = writeln!(
        s,
        "## Designs compared (ops/s ÷ {base}'s under the same lock, the baseline)\n"
    );
    let _ = writeln!(
        s,
        "Each ratio is the median of the per-round ratios (the two runs of one round of one \
         session), with their min–max; `unpaired` where the rounds do not pair (no ratio of two \
         medians stands in for it). A ratio with a flagged point (see its table) is shown but \
         feeds no verdict.\n"
    );
    let mut t = Table::new([
        ("source", Left),
        ("accel", Left),
        ("host", Left),
        ("workload", Left),
        ("CPUs", Right),
        ("design", Left),
        (&*format!("÷ {base}"), Right),
        ("min–max", Right),
        ("rounds", Right),
        ("flagged", Left),
    ]);
    for l in lines {
        t.row(l);
    }
    s.push_str(&t.into_string());
    s.push('\n');
}

/// `a ÷ b` as the ratio tables print it: the paired median ("1.23×", or
/// `unpaired`), the rounds' min–max, the rounds paired, and the flags of
/// either point (judged against `fair`, see [`flags`]).
fn paired_cell(a: &Point, b: &Point, fair: &[Point]) -> (String, String, String, String) {
    let mut f: Vec<&str> = Vec::new();
    for x in flags(a, fair).into_iter().chain(flags(b, fair)) {
        if !f.contains(&x) {
            f.push(x);
        }
    }
    let flagged = f.join(", ");
    match points::paired_ratio(a, b) {
        Some(p) => (
            format!("{:.2}×", p.median),
            format!("{:.2}–{:.2}", p.min, p.max),
            p.rounds.to_string(),
            flagged,
        ),
        None => ("unpaired".into(), "–".into(), "–".into(), flagged),
    }
}

/// statneg of each design ÷ the Linux references on the same host at the
/// same CPU count: host mode against host Linux, the guest against the
/// Linux guest.
fn write_linux_ratios(s: &mut String, pts: &[Point], groups: &[Group]) {
    let refs: Vec<String> = pts
        .iter()
        .map(|p| p.median())
        .filter(|r| r.source.starts_with("linux"))
        .map(|r| r.design.clone())
        .collect::<BTreeSet<_>>()
        .into_iter()
        .collect();
    if refs.is_empty() {
        return;
    }
    let mut lines = Vec::new();
    for g in groups.iter().filter(|g| g.0 == "host" || g.0 == "guest") {
        let ref_source = if g.0 == "host" {
            "linux-host"
        } else {
            "linux-guest"
        };
        let mut mine: Vec<&Point> = pts
            .iter()
            .filter(|p| in_group(p.median(), g) && p.median().testcase == "statneg")
            .collect();
        mine.sort_by(|a, b| {
            let (a, b) = (a.median(), b.median());
            design_rank(&a.design)
                .cmp(&design_rank(&b.design))
                .then(a.cpus.cmp(&b.cpus))
        });
        for p in mine {
            let r = p.median();
            let cells: Vec<String> = refs
                .iter()
                .map(|d| {
                    let linux = pts.iter().find(|q| {
                        let q = q.median();
                        // The same accelerator: a guest that fell back
                        // to TCG is no match for a Linux guest under KVM.
                        q.source == ref_source
                            && q.accel == r.accel
                            && q.host == g.2
                            && q.session == g.3
                            && q.testcase == "statneg"
                            && q.design == *d
                            && q.cpus == r.cpus
                    });
                    match linux {
                        None => "–".to_string(),
                        Some(l) => {
                            let (cell, _, _, flagged) = paired_cell(p, l, pts);
                            if flagged.is_empty() || cell == "unpaired" {
                                cell
                            } else {
                                format!("{cell}†")
                            }
                        }
                    }
                })
                .collect();
            if cells.iter().all(|c| c == "–") {
                continue;
            }
            let mut line = vec![
                g.0.to_string(),
                host_cell(g),
                r.design.clone(),
                r.cpus.to_string(),
                human(r.average as f64),
            ];
            line.extend(cells);
            lines.push(line);
        }
    }
    if lines.is_empty() {
        return;
    }
    let _ = writeln!(
        s,
        "## Against Linux (statneg ops/s ÷ Linux's on the same host and CPU count)\n"
    );
    let _ = writeln!(
        s,
        "Host mode is compared with `linux-host`, the guest with `linux-guest`, of the same \
         session. Each cell is the median of the per-round ratios (`unpaired` where the rounds do \
         not pair); † marks a ratio with a flagged point (see its table), which feeds no verdict.\n"
    );
    let mut cols = vec![
        ("source".to_string(), Left),
        ("host".into(), Left),
        ("design".into(), Left),
        ("CPUs".into(), Right),
        ("ops/s".into(), Right),
    ];
    cols.extend(refs.iter().map(|d| (format!("÷ {d}"), Right)));
    let mut t = Table::new(cols);
    for l in lines {
        t.row(l);
    }
    s.push_str(&t.into_string());
    s.push('\n');
}
