//! predict.csv and checks.csv: `bench predict`'s models as text (inputs,
//! per-line inputs and the predictions at every CPU count) and its 2-CPU
//! checks, and back, reading the older formats too.
//!
//! Touches: nothing but the text it is given, and the output directory's
//! predict.csv ([`read_dir`]).

use std::fmt::Write as _;
use std::path::Path;

use super::spans::{self, Spans};
use super::{Check, Model};
use crate::predict::model::{self, Inputs, LockKind};

/// predict.csv's header. `lines` holds the shared lines ([`lines_field`]).
pub const PREDICT_HEADER: &str = "testcase,design,lock,cpus,predicted,transfers_predicted,\
transfer_ns,ns_per_op,hot_stores,hot_holds,hold_ns,other_stores,lock_measured,\
hashed_ns,hit_ns,allocs,allocs_predicted,lookup_ns,lines";

/// predict.csv's header before the per-line inputs (still read: the
/// summary columns then stand for the lines).
pub(super) const PREDICT_HEADER_V2: &str =
    "testcase,design,lock,cpus,predicted,transfers_predicted,\
transfer_ns,ns_per_op,hot_stores,hot_holds,hold_ns,other_stores,lock_measured,\
hashed_ns,hit_ns,allocs,allocs_predicted";

/// predict.csv's header before the sharing term (still read).
pub(super) const PREDICT_HEADER_V1: &str =
    "testcase,design,lock,cpus,predicted,transfers_predicted,\
transfer_ns,ns_per_op,hot_stores,hot_holds,hold_ns,other_stores,lock_measured";

/// The `lines` field of predict.csv: one
/// `stores:tagged:visits:fast:in_hold:holds:hold_ns:win_visits:win_in_hold`
/// entry per line, `;` between lines (no commas, so the field needs no
/// quoting).
pub fn lines_field(lines: &[model::Line]) -> String {
    lines
        .iter()
        .map(|l| {
            l.values()
                .iter()
                .enumerate()
                .map(|(k, v)| match k {
                    model::Line::HOLD_NS => format!("{v:.2}"),
                    _ => format!("{v:.4}"),
                })
                .collect::<Vec<_>>()
                .join(":")
        })
        .collect::<Vec<_>>()
        .join(";")
}

/// Parse [`lines_field`]'s text back.
pub fn parse_lines_field(text: &str) -> Option<Vec<model::Line>> {
    if text.is_empty() {
        return Some(Vec::new());
    }
    let num = |t: &str| t.parse::<f64>().ok().filter(|v| v.is_finite() && *v >= 0.0);
    text.split(';')
        .map(|entry| {
            let v: Vec<f64> = entry.split(':').map(num).collect::<Option<_>>()?;
            Some(model::Line::from_values(v.try_into().ok()?))
        })
        .collect()
}

/// The predict.csv text for `models` (one line per model and CPU count).
pub fn to_csv(models: &[Model]) -> String {
    let mut s = String::from(PREDICT_HEADER);
    s.push('\n');
    for m in models {
        for n in model::CPUS {
            let i = &m.inputs;
            let pr = m.predict(n);
            let _ = writeln!(
                s,
                "{},{},{},{n},{:.0},{:.3},{:.2},{:.2},{:.3},{:.3},{:.2},{:.3},{},{:.2},{:.2},{:.3},{:.3},{:.2},{}",
                m.testcase,
                m.design,
                m.lock,
                pr.ops,
                pr.transfers,
                m.transfer_ns,
                i.ns_per_op,
                i.hot_stores,
                i.hot_holds,
                i.hold_ns,
                i.other_stores,
                m.lock_measured,
                i.hashed_ns,
                i.hit_ns,
                i.allocs,
                pr.allocs,
                i.lookup_ns,
                lines_field(&i.lines)
            );
        }
    }
    s
}

/// Parse predict.csv back into models (one per testcase, design, lock).
pub fn parse_csv(text: &str) -> Result<Vec<Model>, String> {
    let mut lines = text.lines();
    let fields = match lines.next().map(str::trim_end) {
        Some(PREDICT_HEADER) => 19,
        Some(PREDICT_HEADER_V2) => 17,
        Some(PREDICT_HEADER_V1) => 13,
        _ => return Err("missing or different predict.csv header".into()),
    };
    let mut out: Vec<Model> = Vec::new();
    for (i, l) in lines.enumerate().filter(|(_, l)| !l.trim().is_empty()) {
        let f: Vec<&str> = l.split(',').collect();
        let bad = |what: &str| format!("predict.csv line {}: bad {what}", i + 2);
        if f.len() != fields {
            return Err(bad("field count"));
        }
        let num = |j: usize, what: &str| -> Result<f64, String> {
            f[j].parse::<f64>()
                .ok()
                .filter(|v| v.is_finite())
                .ok_or_else(|| bad(what))
        };
        let lock = LockKind::from_name(f[2]).ok_or_else(|| bad("lock"))?;
        let m = Model {
            testcase: f[0].to_string(),
            design: f[1].to_string(),
            lock,
            transfer_ns: num(6, "transfer_ns")?,
            inputs: Inputs {
                ns_per_op: num(7, "ns_per_op")?,
                hot_stores: num(8, "hot_stores")?,
                hot_holds: num(9, "hot_holds")?,
                hold_ns: num(10, "hold_ns")?,
                other_stores: num(11, "other_stores")?,
                hashed_ns: if fields > 13 {
                    num(13, "hashed_ns")?
                } else {
                    0.0
                },
                hit_ns: if fields > 13 { num(14, "hit_ns")? } else { 0.0 },
                allocs: if fields > 13 { num(15, "allocs")? } else { 0.0 },
                lookup_ns: if fields > 17 {
                    num(17, "lookup_ns")?
                } else {
                    0.0
                },
                lines: if fields > 18 {
                    parse_lines_field(f[18]).ok_or_else(|| bad("lines"))?
                } else {
                    Vec::new()
                },
            },
            lock_measured: f[12] == "true",
        };
        if !out
            .iter()
            .any(|o| (&o.testcase, &o.design, o.lock) == (&m.testcase, &m.design, m.lock))
        {
            out.push(m);
        }
    }
    Ok(out)
}

/// Read `DIR/predict.csv` if there is one.
pub fn read_dir(dir: &Path) -> Result<Vec<Model>, String> {
    let p = dir.join("predict.csv");
    match std::fs::read_to_string(&p) {
        Ok(t) => parse_csv(&t).map_err(|e| format!("{}: {e}", p.display())),
        Err(_) => Ok(Vec::new()),
    }
}

/// The children's checks, merged by the parent into one table.
pub const CHECKS_CSV: &str = "checks.csv";
/// checks.csv's header before the spans (read, never written): the current
/// header is this and the spans' columns ([`checks_header`]).
const CHECKS_HEADER_V6: &str = "design,lock,predicted,measured,predicted_per_cpu_s,\
measured_per_cpu_s,effective_cpus,transfers_predicted,transfers_measured,allocs_predicted,\
allocs_measured,transfer_ns,predicted_per_cpu_s_at_sharing,alloc_ns_measured,\
alloc_ns_at_sharing,transfers_per_alloc_measured,transfers_per_alloc_at_sharing,\
found_per_alloc_measured,waits_per_alloc_measured,found_predicted,move_ns_measured,\
predicted_per_cpu_s_at_sharing_and_price";
/// The header before the move price (read, never written).
const CHECKS_HEADER_V5: &str = "design,lock,predicted,measured,predicted_per_cpu_s,\
measured_per_cpu_s,effective_cpus,transfers_predicted,transfers_measured,allocs_predicted,\
allocs_measured,transfer_ns,predicted_per_cpu_s_at_sharing,alloc_ns_measured,\
alloc_ns_at_sharing,transfers_per_alloc_measured,transfers_per_alloc_at_sharing,\
found_per_alloc_measured,waits_per_alloc_measured,found_predicted";
/// The header before the `d_alloc_parallel` shares (read, never written).
const CHECKS_HEADER_V4: &str = "design,lock,predicted,measured,predicted_per_cpu_s,\
measured_per_cpu_s,effective_cpus,transfers_predicted,transfers_measured,allocs_predicted,\
allocs_measured,transfer_ns,predicted_per_cpu_s_at_sharing,alloc_ns_measured,\
alloc_ns_at_sharing,transfers_per_alloc_measured,transfers_per_alloc_at_sharing";
/// The header before transfers per allocating op (read, never written).
const CHECKS_HEADER_V3: &str = "design,lock,predicted,measured,predicted_per_cpu_s,\
measured_per_cpu_s,effective_cpus,transfers_predicted,transfers_measured,allocs_predicted,\
allocs_measured,transfer_ns,predicted_per_cpu_s_at_sharing,alloc_ns_measured,\
alloc_ns_at_sharing";
/// The header before the prediction at measured sharing and the cost of an
/// allocating op (read, never written).
const CHECKS_HEADER_V2: &str = "design,lock,predicted,measured,predicted_per_cpu_s,\
measured_per_cpu_s,effective_cpus,transfers_predicted,transfers_measured,allocs_predicted,\
allocs_measured,transfer_ns";
/// The header before `transfer_ns` was recorded (read, never written).
const CHECKS_HEADER_V1: &str = "design,lock,predicted,measured,predicted_per_cpu_s,\
measured_per_cpu_s,effective_cpus,transfers_predicted,transfers_measured,allocs_predicted,\
allocs_measured";

/// checks.csv's header: [`CHECKS_HEADER_V6`]'s columns, the spans'
/// ([`spans::COLUMNS`]) of the 1-CPU run and of the 2-CPU run, the
/// model's spans at the run's sharing, then the round and whether it was
/// held out of the fit ([`super::split`]).
pub fn checks_header() -> String {
    checks_header_v8() + ",round,held_out"
}

/// The header before the round and its set (read, never written).
fn checks_header_v8() -> String {
    checks_header_v7() + ",window_ns_at_sharing,slow_ns_at_sharing"
}

/// The header before the model's spans (read, never written).
fn checks_header_v7() -> String {
    let mut h = CHECKS_HEADER_V6.to_string();
    for n in [1, 2] {
        for c in spans::COLUMNS {
            let _ = write!(h, ",spans_{n}_{c}");
        }
    }
    h
}

/// `checks` as CSV text (header [`checks_header`]).
pub fn checks_to_csv(checks: &[Check]) -> String {
    let mut s = format!("{}\n", checks_header());
    for c in checks {
        let _ = write!(
            s,
            "{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{}",
            c.design,
            c.lock,
            c.predicted,
            c.measured,
            c.predicted_per_cpu_s,
            c.measured_per_cpu_s,
            c.effective_cpus,
            c.transfers_predicted,
            c.transfers_measured,
            c.allocs_predicted,
            c.allocs_measured,
            c.transfer_ns,
            c.predicted_per_cpu_s_at_sharing,
            c.alloc_ns_measured,
            c.alloc_ns_at_sharing,
            c.transfers_per_alloc_measured,
            c.transfers_per_alloc_at_sharing,
            c.found_per_alloc_measured,
            c.waits_per_alloc_measured,
            c.found_predicted,
            c.move_ns_measured,
            c.predicted_per_cpu_s_at_sharing_and_price
        );
        for v in c.spans_1.values().iter().chain(c.spans_2.values().iter()) {
            let _ = write!(s, ",{v}");
        }
        let _ = writeln!(
            s,
            ",{},{},{},{}",
            c.window_ns_at_sharing,
            c.slow_ns_at_sharing,
            c.round,
            u8::from(c.held_out)
        );
    }
    s
}

/// Parse [`checks_to_csv`]'s text.
pub fn checks_from_csv(text: &str) -> Result<Vec<Check>, String> {
    let mut lines = text.lines();
    let (header, v8, v7) = (checks_header(), checks_header_v8(), checks_header_v7());
    let fields = match lines.next().map(str::trim_end) {
        Some(h) if h == header => ROUND_AT + 2,
        Some(h) if h == v8 => MODEL_SPANS_AT + 2,
        Some(h) if h == v7 => MODEL_SPANS_AT,
        Some(CHECKS_HEADER_V6) => 22,
        Some(CHECKS_HEADER_V5) => 20,
        Some(CHECKS_HEADER_V4) => 17,
        Some(CHECKS_HEADER_V3) => 15,
        Some(CHECKS_HEADER_V2) => 12,
        Some(CHECKS_HEADER_V1) => 11,
        _ => return Err(format!("{CHECKS_CSV}: missing or different header")),
    };
    lines
        .filter(|l| !l.trim().is_empty())
        .map(|l| {
            let f: Vec<&str> = l.split(',').collect();
            let bad = || format!("{CHECKS_CSV}: bad line '{l}'");
            if f.len() != fields {
                return Err(bad());
            }
            let n = |i: usize| f[i].parse::<f64>().map_err(|_| bad());
            Ok(Check {
                design: f[0].to_string(),
                lock: LockKind::from_name(f[1]).ok_or_else(bad)?,
                predicted: n(2)?,
                measured: n(3)?,
                predicted_per_cpu_s: n(4)?,
                measured_per_cpu_s: n(5)?,
                effective_cpus: n(6)?,
                transfers_predicted: n(7)?,
                transfers_measured: n(8)?,
                allocs_predicted: n(9)?,
                allocs_measured: n(10)?,
                transfer_ns: if fields > 11 { n(11)? } else { 0.0 },
                predicted_per_cpu_s_at_sharing: if fields > 12 { n(12)? } else { 0.0 },
                alloc_ns_measured: if fields > 13 { n(13)? } else { 0.0 },
                alloc_ns_at_sharing: if fields > 14 { n(14)? } else { 0.0 },
                transfers_per_alloc_measured: if fields > 15 { n(15)? } else { 0.0 },
                transfers_per_alloc_at_sharing: if fields > 16 { n(16)? } else { 0.0 },
                found_per_alloc_measured: if fields > 17 { n(17)? } else { 0.0 },
                waits_per_alloc_measured: if fields > 18 { n(18)? } else { 0.0 },
                found_predicted: if fields > 19 { n(19)? } else { 0.0 },
                move_ns_measured: if fields > 20 { n(20)? } else { 0.0 },
                predicted_per_cpu_s_at_sharing_and_price: if fields > 21 { n(21)? } else { 0.0 },
                spans_1: spans_at(&f, SPANS_AT, 1).map_err(|_| bad())?,
                spans_2: spans_at(&f, SPANS_AT + spans::COLUMNS.len(), 2).map_err(|_| bad())?,
                window_ns_at_sharing: if fields > MODEL_SPANS_AT {
                    n(MODEL_SPANS_AT)?
                } else {
                    0.0
                },
                slow_ns_at_sharing: if fields > MODEL_SPANS_AT + 1 {
                    n(MODEL_SPANS_AT + 1)?
                } else {
                    0.0
                },
                round: if fields > ROUND_AT {
                    f[ROUND_AT].parse::<u32>().map_err(|_| bad())?
                } else {
                    0
                },
                held_out: if fields > ROUND_AT + 1 {
                    match f[ROUND_AT + 1] {
                        "0" => false,
                        "1" => true,
                        _ => return Err(bad()),
                    }
                } else {
                    false
                },
            })
        })
        .collect()
}

/// Where the spans' columns begin in a checks.csv line, and the model's
/// spans after them.
const SPANS_AT: usize = 22;
const MODEL_SPANS_AT: usize = SPANS_AT + 2 * spans::COLUMNS.len();
/// Where the round and its set begin.
const ROUND_AT: usize = MODEL_SPANS_AT + 2;

/// The spans of a run on `tasks` CPUs from the columns at `at` of line
/// `f`; not measured (`tasks` 0) where the line has none, or all are 0.
fn spans_at(f: &[&str], at: usize, tasks: usize) -> Result<Spans, ()> {
    let n = spans::COLUMNS.len();
    if f.len() < at + n {
        return Ok(Spans::default());
    }
    let mut v = [0.0; spans::COLUMNS.len()];
    for (k, x) in v.iter_mut().enumerate() {
        *x = f[at + k].parse::<f64>().map_err(|_| ())?;
    }
    if v.iter().all(|x| *x == 0.0) {
        return Ok(Spans::default());
    }
    Ok(Spans::from_values(tasks, &v))
}
