//! The report's "Predicted scaling" section: `bench predict`'s inputs and
//! predicted ops/s and allocs/op at 1..64 CPUs per design and lock kind,
//! each beside the host-mode measurement of the same point, the no-sharing
//! lower bound, the seed comparison at 10 CPUs and the 2-CPU check. Every
//! figure past the CPU counts the measurements checked is labelled an
//! extrapolation, with its band ([`extrapolate`]).
//!
//! Touches nothing but the rows and models it is given.

use std::fmt::Write as _;

use crate::human;
use crate::points::Point;
use crate::predict::extrapolate::{self, Validity};
use crate::predict::model::CPUS;
use crate::predict::{cpus_columns, input_cells, input_columns, lock_cell, Model};
use crate::rows::Row;
use formats::markdown::Align::{self, Left, Right};
use formats::markdown::Table;

/// The host-mode run of a model's point at `cpus`, if any: a row of
/// `design lock=KIND` (what `bench predict --validate` writes), of
/// `design+KIND` (a sweep's `--locks` row), or of `design` itself when the
/// model's kind is the default lock (a sweep's plain row).
fn measured_row<'a>(pts: &[Point<'a>], m: &Model, cpus: usize) -> Option<&'a Row> {
    let with_lock = format!("{} lock={}", m.design, m.lock);
    let swept = format!("{}+{}", m.design, m.lock);
    let plain_ok = m.lock == crate::predict::model::LockKind::DEFAULT;
    let matches = |r: &Row| {
        r.source == "host"
            && r.testcase == m.testcase
            && r.cpus == cpus
            && (r.design == with_lock || r.design == swept || (plain_ok && r.design == m.design))
    };
    pts.iter().map(|p| p.median()).find(|r| matches(r))
}

/// The host-mode ops/s of a model's point at `cpus`, if measured.
fn measured_for(pts: &[Point], m: &Model, cpus: usize) -> Option<f64> {
    measured_row(pts, m, cpus).map(|r| r.average as f64)
}

/// What a model's predicted ops/s rest on: the CPU counts host mode
/// measured and the prediction met.
pub(crate) fn ops_validity(pts: &[Point], m: &Model) -> Validity {
    let points: Vec<(usize, f64, f64)> = CPUS
        .into_iter()
        .filter_map(|n| measured_for(pts, m, n).map(|v| (n, m.at(n), v)))
        .collect();
    Validity::from_points(&points)
}

/// The same for its predicted allocs/op.
fn allocs_validity(pts: &[Point], m: &Model) -> Validity {
    let points: Vec<(usize, f64, f64)> = CPUS
        .into_iter()
        .filter_map(|n| measured_allocs_for(pts, m, n).map(|v| (n, m.predict(n).allocs, v)))
        .collect();
    Validity::from_points(&points)
}

/// The model's own other bound on its ops/s: without sharing, for a
/// design whose misses can share a hashed dentry.
pub(crate) fn no_sharing_bound(m: &Model, cpus: usize) -> Option<f64> {
    (m.inputs.allocs > 0.0 && m.inputs.hashed_ns > 0.0).then(|| m.predict(cpus).ops_no_sharing)
}

/// "Predicted scaling": one table of inputs, one of predictions with the
/// measurements beside them.
pub(super) fn write_predictions(s: &mut String, pts: &[Point], models: &[Model], validation: &str) {
    if models.is_empty() {
        return;
    }
    let _ = writeln!(
        s,
        "## Predicted scaling (`bench predict`)
"
    );
    let _ = writeln!(
        s,
        "Predicted figures come from the model of docs/scaling-model.md: each \
         design's 1-CPU figures (ns per op, and for every line the tasks share, found by a census \
         of two tasks' operations taking turns on one thread: its visits, lockref fast paths, \
         stores inside its own holds, holds and hold time; the hottest line and the rest are \
         summed up in the first table, every line is in the second) and one cache-line transfer \
         latency *t_x* (under `--validate`, the median of the rounds' latencies, each measured \
         around its 2-task run, which the 2-CPU check below prices it at; else the one `bench \
         pingpong` measured when the run began, or the one given). Every shared line is a \
         queueing station (approximate mean-value analysis): a visit finds its line moved when \
         another CPU's visit came last, (N−1)/N of the time, at half of *t_x* \
         (one read-for-ownership; a ping-pong transfer is a read miss and an upgrade), and where the tasks share a lock \
         they move in step behind it, so a waiter spins at every hold and takes the line back \
         from the holder's stores. In scaling.svg \
         **predicted curves are dashed** (`predicted:DESIGN lock=KIND`) and **measured points are \
         solid** lines with dots; past the CPU counts host mode checked, a curve's legend line \
         says `extrapolated: past N CPUs` and its band, the table's `lo–hi`, is shaded around \
         it. A cell reads `predicted (measured M)` where host mode measured \
         that point. Lock kinds marked \\* were not measured with that lock (the build had no \
         `lock=` word): only their handoff model differs.\n"
    );
    let mut cols: Vec<(String, Align)> = [
        ("testcase".into(), Left),
        ("design".into(), Left),
        ("lock".into(), Left),
        ("t_x ns".into(), Right),
    ]
    .into();
    cols.extend(input_columns());
    cols.push(("queued bound".into(), Right));
    let mut t = Table::new(cols);
    for m in models {
        let i = &m.inputs;
        let bound = crate::predict::model::queued_bound(i, m.transfer_ns);
        let mut cells = Vec::from([
            m.testcase.clone(),
            m.design.clone(),
            lock_cell(m, "\\*"),
            format!("{:.1}", m.transfer_ns),
        ]);
        cells.extend(input_cells(i));
        cells.push(if bound.is_finite() {
            human(bound)
        } else {
            "none (linear)".into()
        });
        t.row(cells);
    }
    s.push_str(&t.into_string());
    if models.iter().any(|m| !m.inputs.lines.is_empty()) {
        s.push_str(&crate::predict::lines_table(models));
    }
    s.push('\n');
    let mut t = predicted_cpus_table();
    for m in models {
        let v = ops_validity(pts, m);
        let mut cells = model_cells(m, "");
        cells.extend(CPUS.into_iter().map(|n| {
            let p = human(m.at(n));
            let text = match measured_for(pts, m, n) {
                Some(v) => format!("{p} (measured {})", human(v)),
                None => p,
            };
            v.cell(text, m.at(n), n, no_sharing_bound(m, n), None, human)
        }));
        t.row(cells);
    }
    s.push_str(&t.into_string());
    s.push('\n');
    s.push_str(&extrapolate::legend());
    s.push('\n');
    write_predicted_allocs(s, pts, models);
    write_seed_comparison(s, pts, models);
    if !validation.trim().is_empty() {
        let _ = writeln!(
            s,
            "### 2-CPU check (`bench predict --validate`)\n\n{}\n",
            validation.trim()
        );
    }
}

/// The host-mode allocs/op of a model's point at `cpus`, if measured.
fn measured_allocs_for(pts: &[Point], m: &Model, cpus: usize) -> Option<f64> {
    measured_row(pts, m, cpus).and_then(|r| r.allocs)
}

/// Predicted allocs/op per CPU count (the sharing term), for the models
/// that allocate, with host mode's figure beside where it was measured.
fn write_predicted_allocs(s: &mut String, pts: &[Point], models: &[Model]) {
    let alloc: Vec<&Model> = models.iter().filter(|m| m.inputs.allocs > 0.0).collect();
    if alloc.is_empty() {
        return;
    }
    let _ = writeln!(
        s,
        "Predicted allocs/op (concurrent misses of one name share each other's hashed dentry; \
         docs/scaling-model.md, \"The sharing term\"):\n"
    );
    let mut t = predicted_cpus_table();
    for &m in &alloc {
        let v = allocs_validity(pts, m);
        let mut cells = model_cells(m, "");
        cells.extend(CPUS.into_iter().map(|n| {
            let p = m.predict(n).allocs;
            let text = match measured_allocs_for(pts, m, n) {
                Some(v) => format!("{p:.2} (measured {v:.2})"),
                None => format!("{p:.2}"),
            };
            // Every op allocating (1) bounds it from above.
            v.cell(text, p, n, Some(1.0), Some(1.0), |x| format!("{x:.2}"))
        }));
        t.row(cells);
    }
    s.push_str(&t.into_string());
    s.push('\n');
    let _ = writeln!(
        s,
        "The sharing term is checked at 2 CPUs only. Beyond that it assumes the CPUs' lookups \
         fall at independent instants, but every miss at a window's end sends all free CPUs to \
         allocate together, which leaves fewer of them free to share the next window: it \
         overestimates sharing there. The same designs' ops/s with every operation allocating \
         (no sharing) bound the prediction from below:\n"
    );
    let mut t = predicted_cpus_table();
    for m in alloc {
        let v = ops_validity(pts, m);
        let mut cells = model_cells(m, " (no sharing)");
        cells.extend(CPUS.map(|n| {
            let p = m.predict(n).ops_no_sharing;
            v.cell(human(p), p, n, None, None, human)
        }));
        t.row(cells);
    }
    s.push_str(&t.into_string());
    s.push('\n');
}

/// The seed's figures (Linux, will-it-scale `statneg_processes -t 10`):
/// tmpfs ~3.0–3.3 M ops/s total with 10 tasks, flat; ext4 ~64.7 M, linear.
const SEED_TASKS: usize = 10;

/// The machine class the seed measured on, where recorded: it was not (its
/// own machine, another CPU and kernel), so no figure here is divided by
/// the seed's.
const SEED_MACHINE: Option<&str> = None;

/// `predicted ÷ seed`, only where the same machine class measured both
/// (`host`: the class of the host-mode rows the model was checked against).
fn seed_ratio(
    predicted: f64,
    seed: f64,
    host: Option<&str>,
    seed_host: Option<&str>,
) -> Option<f64> {
    match (host, seed_host) {
        (Some(h), Some(s)) if h == s && seed > 0.0 => Some(predicted / seed),
        _ => None,
    }
}

/// The transient (Linux's lock) and noalloc predictions at 10 CPUs beside
/// the seed's tmpfs and ext4 figures: orders of magnitude, not a fit (other
/// machine, other kernel, real syscalls); divided by them only where the
/// same machine class measured both.
fn write_seed_comparison(s: &mut String, pts: &[Point], models: &[Model]) {
    let pick = |design: &str| {
        models
            .iter()
            .filter(|m| m.testcase == "statneg" && m.design == design)
            .min_by_key(|m| m.lock != crate::predict::model::LockKind::Qspinlock)
    };
    let lines: Vec<(&Model, &str, f64, &str)> = [
        (
            pick("transient"),
            "tmpfs (transient dentries, Linux 6.x qspinlock)",
            3.15e6,
            "~3.0–3.3 M, flat: the 10 tasks contend on the parent's and the bucket's spinlocks",
        ),
        (
            pick("noalloc"),
            "ext4 (negative dentries cached)",
            64.7e6,
            "~64.7 M, linear: nothing shared",
        ),
    ]
    .into_iter()
    .filter_map(|(m, what, v, how)| m.map(|m| (m, what, v, how)))
    .collect();
    if lines.is_empty() {
        return;
    }
    let _ = writeln!(
        s,
        "### Beside the seed's measurements ({SEED_TASKS} CPUs)\n\n\
         The seed measured Linux with will-it-scale `statneg_processes -t {SEED_TASKS}` on its own \
         machine, whose class is not recorded (another CPU, real system calls, Linux's own code). \
         The predictions at {SEED_TASKS} CPUs are extrapolations from this machine's check, set \
         beside the seed's figures as orders of magnitude and shapes; a prediction is divided by \
         the seed's only where the same machine class measured both.\n"
    );
    let mut t = Table::new([
        ("prediction".to_string(), Left),
        (format!("predicted at {SEED_TASKS} CPUs"), Right),
        ("× its 1-CPU figure".to_string(), Right),
        ("without sharing".to_string(), Right),
        ("the seed's Linux".to_string(), Left),
        (format!("seed, {SEED_TASKS} tasks"), Left),
        ("predicted ÷ seed".to_string(), Right),
    ]);
    for (m, what, seed, how) in lines {
        let v = ops_validity(pts, m);
        let p = m.predict(SEED_TASKS);
        let at = p.ops;
        let host = measured_row(pts, m, 1).map(|r| r.host.as_str());
        let ratio = |x: f64| match seed_ratio(x, seed, host, SEED_MACHINE) {
            Some(r) => format!(" ({r:.2} ÷ seed)"),
            None => String::new(),
        };
        let bound = no_sharing_bound(m, SEED_TASKS);
        let lower = match bound {
            Some(b) => format!(
                "{}{}",
                v.cell(human(b), b, SEED_TASKS, None, None, human),
                ratio(b)
            ),
            None => "same".into(),
        };
        t.row([
            format!("{} lock={}", m.design, m.lock),
            v.cell(human(at), at, SEED_TASKS, bound, None, human),
            format!("{:.1}", at / m.at(1).max(1.0)),
            lower,
            what.to_string(),
            how.to_string(),
            match seed_ratio(at, seed, host, SEED_MACHINE) {
                Some(r) => format!("{r:.2}"),
                None => "not divided: other machine class".to_string(),
            },
        ]);
    }
    s.push_str(&t.into_string());
    s.push('\n');
}

/// A predicted table: testcase, design, lock, then one column per CPU
/// count of [`CPUS`].
fn predicted_cpus_table() -> Table {
    let mut cols: Vec<(String, Align)> = ["testcase", "design", "lock"]
        .map(|h| (h.to_string(), Left))
        .into();
    cols.extend(cpus_columns());
    Table::new(cols)
}

/// A predicted row's first cells: testcase, design (with `note`), lock.
fn model_cells(m: &Model, note: &str) -> Vec<String> {
    vec![
        m.testcase.clone(),
        format!("{}{note}", m.design),
        m.lock.to_string(),
    ]
}
