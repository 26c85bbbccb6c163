//! will-it-scale's output format, written and read back.
//!
//! ```text
//! testcase:non-existent file stat (tmpfs enoent=noalloc frontend=stat syscall=getppid)
//! warmup
//! min:261181 max:285570 total:2780930
//! measurement
//! min:311937 max:348949 total:3289838
//! average:3289838
//! per-op: allocs=0.000 shared_stores=0.000 fallbacks=0.000 locks=0.000 transfers=0.000
//! timing: warmup_us=1000012 measurement_us=1000203 late=0
//! ```
//!
//! The `testcase:` text is free; the prototype's runs end it with
//! `(tmpfs enoent=DESIGN frontend=F)`, and under `frontend=stat` with the
//! system call cost paid per operation (`syscall=getppid` in host mode).
//!
//! One `min:N max:N total:N` line per sample, about one a second: the
//! lowest and highest per-task operation count of that sample and their
//! sum, each divided by the sample's own elapsed time (so a rate per
//! second even when a sample covered more or less than a second).
//! `average` is the measurement's operations divided by its elapsed time
//! (the last sample's time minus the measurement's start); on output with
//! no `timing:` line (will-it-scale's, Linux's) it is the integer mean of
//! the measurement totals, which is the same when every sample lasted a
//! second. The `per-op` line is fs counter
//! deltas over the measurement window divided by operations; the Linux
//! reference guest prints its own from a separate counting run (kprobe hit
//! counts): `per-op: allocs=A locks=L rwsem=R fallbacks=F` — the same names
//! where the meaning is the same, no `shared_stores`, plus `rwsem`
//! (`i_rwsem` acquisitions). Host references leave it out. `transfers=`
//! came later and is appended: a line without it (older output, Linux's)
//! still parses, with [`PerOp::transfers`] `None`. A run that saw wrong
//! answers ends with an `error:` line, which makes [`parse`] fail.
//!
//! The `timing:` line came later and goes last, after `per-op:` and
//! `error:`, where a reader of the older format stops looking: each
//! sample's elapsed time in microseconds, warm-up then measurement, and a
//! `!` after a sample that lasted more than [`LATE_PERMILLE`]/1000 of its
//! window past it (the sampler was late: its rate is still right, but the
//! sample covers a stall); `late=` counts them. Output without the line
//! parses, with [`RunOutput::timing`] `None`.
//!
//! This file is the one writer and parser of the format: `bench`'s driver
//! writes it, and the `qemu` crate reads the Linux reference guest's output
//! with it too; both stand above this crate.
//!
//! The parser skips anything before `testcase:` and after the block (a
//! guest's boot log, a runner's notes), but is strict inside it.
//!
//! Touches nothing; allocates for the parsed result only.

use alloc::string::{String, ToString};
use alloc::vec::Vec;
use core::fmt;

/// One per-second line.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Sample {
    pub min: u64,
    pub max: u64,
    pub total: u64,
}

impl fmt::Display for Sample {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "min:{} max:{} total:{}", self.min, self.max, self.total)
    }
}

/// Counter values per operation, as printed (3 decimals). `shared_stores`
/// is ours only, `rwsem` Linux's only.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct PerOp {
    pub allocs: f64,
    pub shared_stores: Option<f64>,
    pub fallbacks: f64,
    pub locks: f64,
    pub rwsem: Option<f64>,
    /// Cache-line transfers per op; `None` on output from before the field.
    pub transfers: Option<f64>,
}

/// Raw counter deltas over the measurement window and the operations done.
/// Prints as the `per-op:` line, dividing in integers (exact, no floats in
/// the guest).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PerOpCounts {
    pub ops: u64,
    pub allocs: u64,
    pub shared_stores: u64,
    pub fallbacks: u64,
    pub locks: u64,
    pub transfers: u64,
}

impl fmt::Display for PerOpCounts {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("per-op: allocs=")?;
        write_ratio(f, self.allocs, self.ops)?;
        f.write_str(" shared_stores=")?;
        write_ratio(f, self.shared_stores, self.ops)?;
        f.write_str(" fallbacks=")?;
        write_ratio(f, self.fallbacks, self.ops)?;
        f.write_str(" locks=")?;
        write_ratio(f, self.locks, self.ops)?;
        f.write_str(" transfers=")?;
        write_ratio(f, self.transfers, self.ops)
    }
}

/// `n / d` rounded to 3 decimals; `0.000` when `d` is 0.
fn write_ratio(f: &mut fmt::Formatter<'_>, n: u64, d: u64) -> fmt::Result {
    if d == 0 {
        return f.write_str("0.000");
    }
    let milli = (n as u128 * 1000 + d as u128 / 2) / d as u128;
    write!(f, "{}.{:03}", milli / 1000, milli % 1000)
}

/// The window a sample is meant to cover: one second, in nanoseconds.
pub const WINDOW_NS: u64 = 1_000_000_000;
/// A sample longer than its window by more than this many thousandths of
/// it is late (a tenth).
pub const LATE_PERMILLE: u64 = 100;

/// One sample's elapsed time and whether it came late.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SampleTime {
    /// Microseconds from the previous sample (or the start) to this one.
    pub elapsed_us: u64,
    /// Longer than its window by more than [`LATE_PERMILLE`]/1000 of it.
    pub late: bool,
}

impl SampleTime {
    /// The time of a sample that covered `elapsed_ns` of a `window_ns` window.
    pub fn new(elapsed_ns: u64, window_ns: u64) -> SampleTime {
        SampleTime {
            elapsed_us: elapsed_ns / 1000,
            late: is_late(elapsed_ns, window_ns),
        }
    }
}

/// True when `elapsed_ns` exceeds `window_ns` by more than a tenth of it.
pub fn is_late(elapsed_ns: u64, window_ns: u64) -> bool {
    elapsed_ns as u128 * 1000 > window_ns as u128 * (1000 + LATE_PERMILLE as u128)
}

/// Every sample's elapsed time: the `timing:` line.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Timing {
    pub warmup: Vec<SampleTime>,
    pub measurement: Vec<SampleTime>,
}

impl Timing {
    /// How many samples came late.
    pub fn late(&self) -> usize {
        self.warmup
            .iter()
            .chain(&self.measurement)
            .filter(|t| t.late)
            .count()
    }
}

impl fmt::Display for Timing {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("timing:")?;
        for (key, list) in [
            ("warmup_us", &self.warmup),
            ("measurement_us", &self.measurement),
        ] {
            write!(f, " {key}=")?;
            if list.is_empty() {
                f.write_str("-")?;
            }
            for (i, t) in list.iter().enumerate() {
                let sep = if i == 0 { "" } else { "," };
                let mark = if t.late { "!" } else { "" };
                write!(f, "{sep}{}{mark}", t.elapsed_us)?;
            }
        }
        write!(f, " late={}", self.late())
    }
}

/// `count` operations over `elapsed_ns`, as operations per second
/// (rounded down; 0 over no time).
pub fn rate(count: u64, elapsed_ns: u64) -> u64 {
    if elapsed_ns == 0 {
        return 0;
    }
    let r = count as u128 * WINDOW_NS as u128 / elapsed_ns as u128;
    r.min(u64::MAX as u128) as u64
}

/// A whole run's output, parsed.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct RunOutput {
    /// The text after `testcase:`.
    pub testcase: String,
    pub warmup: Vec<Sample>,
    pub measurement: Vec<Sample>,
    pub average: u64,
    pub per_op: Option<PerOp>,
    /// Each sample's elapsed time; `None` on output without a `timing:`
    /// line.
    pub timing: Option<Timing>,
}

impl RunOutput {
    /// Lowest per-second total of the measurement.
    pub fn min_total(&self) -> u64 {
        self.measurement.iter().map(|s| s.total).min().unwrap_or(0)
    }
    /// Highest per-second total of the measurement.
    pub fn max_total(&self) -> u64 {
        self.measurement.iter().map(|s| s.total).max().unwrap_or(0)
    }
    /// Lowest per-task count of any measured second.
    pub fn task_min(&self) -> u64 {
        self.measurement.iter().map(|s| s.min).min().unwrap_or(0)
    }
    /// Highest per-task count of any measured second.
    pub fn task_max(&self) -> u64 {
        self.measurement.iter().map(|s| s.max).max().unwrap_or(0)
    }
    /// How many samples came late (0 without a `timing:` line).
    pub fn late(&self) -> usize {
        self.timing.as_ref().map_or(0, Timing::late)
    }
}

/// Integer mean of the totals, as will-it-scale prints it.
pub fn average(samples: &[Sample]) -> u64 {
    if samples.is_empty() {
        return 0;
    }
    samples.iter().map(|s| s.total).sum::<u64>() / samples.len() as u64
}

/// Write a whole run (the format's reference writer; the driver writes
/// the same lines one at a time as the run goes).
pub fn write_run(
    w: &mut dyn fmt::Write,
    run: &RunOutput,
    per_op: Option<&PerOpCounts>,
) -> fmt::Result {
    writeln!(w, "testcase:{}", run.testcase)?;
    writeln!(w, "warmup")?;
    for s in &run.warmup {
        writeln!(w, "{s}")?;
    }
    writeln!(w, "measurement")?;
    for s in &run.measurement {
        writeln!(w, "{s}")?;
    }
    writeln!(w, "average:{}", run.average)?;
    if let Some(p) = per_op {
        writeln!(w, "{p}")?;
    }
    if let Some(t) = &run.timing {
        writeln!(w, "{t}")?;
    }
    Ok(())
}

/// Why output did not parse: the 1-based line number and what was wrong.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ParseError {
    pub line: usize,
    pub msg: String,
}

impl fmt::Display for ParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.line == 0 {
            write!(f, "{}", self.msg)
        } else {
            write!(f, "line {}: {}", self.line, self.msg)
        }
    }
}

fn err(line: usize, msg: impl Into<String>) -> ParseError {
    ParseError {
        line,
        msg: msg.into(),
    }
}

/// Parse the first run block in `text` (see the module doc).
pub fn parse(text: &str) -> Result<RunOutput, ParseError> {
    // Serial consoles may end lines with "\r\n".
    let mut lines = text
        .lines()
        .map(|l| l.trim_end_matches('\r'))
        .enumerate()
        .map(|(i, l)| (i + 1, l));
    let mut out = RunOutput::default();
    loop {
        match lines.next() {
            Some((_, l)) => {
                if let Some(desc) = l.strip_prefix("testcase:") {
                    out.testcase = desc.to_string();
                    break;
                }
            }
            None => return Err(err(0, "no testcase: line")),
        }
    }
    let mut next = |what: &str| {
        lines
            .next()
            .ok_or_else(|| err(0, alloc::format!("output ends before {what}")))
    };
    let (n, l) = next("warmup")?;
    if l != "warmup" {
        return Err(err(n, alloc::format!("expected 'warmup', got '{l}'")));
    }
    let mut in_measurement = false;
    loop {
        let (n, l) = next("average:")?;
        if l == "measurement" && !in_measurement {
            in_measurement = true;
        } else if let Some(v) = l.strip_prefix("average:") {
            if !in_measurement {
                return Err(err(n, "average: before measurement"));
            }
            out.average = num(v).ok_or_else(|| err(n, alloc::format!("bad average '{v}'")))?;
            break;
        } else {
            let s = parse_sample(l).ok_or_else(|| {
                err(
                    n,
                    alloc::format!("expected 'min:N max:N total:N', got '{l}'"),
                )
            })?;
            if in_measurement {
                out.measurement.push(s);
            } else {
                out.warmup.push(s);
            }
        }
    }
    if out.measurement.is_empty() {
        return Err(err(0, "no measurement lines"));
    }
    // Optional per-op line, then an optional error line, then an optional
    // timing line.
    let Some((mut n, mut l)) = lines.next() else {
        return Ok(out);
    };
    if let Some(rest) = l.strip_prefix("per-op:") {
        out.per_op = Some(
            parse_per_op(rest).ok_or_else(|| err(n, alloc::format!("bad per-op line '{l}'")))?,
        );
        match lines.next() {
            Some(next) => (n, l) = next,
            None => return Ok(out),
        }
    }
    if let Some(e) = l.strip_prefix("error:") {
        return Err(err(n, alloc::format!("run reported an error:{e}")));
    }
    if let Some(rest) = l.strip_prefix("timing:") {
        let t =
            parse_timing(rest).ok_or_else(|| err(n, alloc::format!("bad timing line '{l}'")))?;
        if t.warmup.len() != out.warmup.len() || t.measurement.len() != out.measurement.len() {
            return Err(err(
                n,
                alloc::format!(
                    "timing line has {}+{} samples, the run {}+{}",
                    t.warmup.len(),
                    t.measurement.len(),
                    out.warmup.len(),
                    out.measurement.len()
                ),
            ));
        }
        out.timing = Some(t);
    }
    Ok(out)
}

fn num(s: &str) -> Option<u64> {
    if s.is_empty() || !s.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    s.parse().ok()
}

fn parse_sample(l: &str) -> Option<Sample> {
    let mut it = l.split(' ');
    let min = num(it.next()?.strip_prefix("min:")?)?;
    let max = num(it.next()?.strip_prefix("max:")?)?;
    let total = num(it.next()?.strip_prefix("total:")?)?;
    if it.next().is_some() || min > max {
        return None;
    }
    Some(Sample { min, max, total })
}

/// `warmup_us=A,B… measurement_us=C,D… late=N`, in that order; `-` for
/// no samples; `!` after a late one, and `late=` their count.
fn parse_timing(rest: &str) -> Option<Timing> {
    let mut words = rest.split_ascii_whitespace();
    let list = |w: &str, key: &str| -> Option<Vec<SampleTime>> {
        let v = w.strip_prefix(key)?.strip_prefix('=')?;
        if v == "-" {
            return Some(Vec::new());
        }
        v.split(',')
            .map(|x| {
                let (x, late) = match x.strip_suffix('!') {
                    Some(x) => (x, true),
                    None => (x, false),
                };
                Some(SampleTime {
                    elapsed_us: num(x)?,
                    late,
                })
            })
            .collect()
    };
    let t = Timing {
        warmup: list(words.next()?, "warmup_us")?,
        measurement: list(words.next()?, "measurement_us")?,
    };
    let late = num(words.next()?.strip_prefix("late=")?)?;
    if words.next().is_some() || late != t.late() as u64 {
        return None;
    }
    Some(t)
}

/// `allocs`, `fallbacks` and `locks` are required, `shared_stores`,
/// `rwsem` and `transfers` optional; every key at most once, nothing else.
fn parse_per_op(rest: &str) -> Option<PerOp> {
    let mut v: [Option<f64>; 6] = [None; 6];
    for word in rest.split_ascii_whitespace() {
        let (k, val) = word.split_once('=')?;
        if val.is_empty() || !val.bytes().all(|b| b.is_ascii_digit() || b == b'.') {
            return None;
        }
        let i = match k {
            "allocs" => 0,
            "shared_stores" => 1,
            "fallbacks" => 2,
            "locks" => 3,
            "rwsem" => 4,
            "transfers" => 5,
            _ => return None,
        };
        if v[i].is_some() {
            return None;
        }
        v[i] = Some(val.parse().ok()?);
    }
    Some(PerOp {
        allocs: v[0]?,
        shared_stores: v[1],
        fallbacks: v[2]?,
        locks: v[3]?,
        rwsem: v[4],
        transfers: v[5],
    })
}
