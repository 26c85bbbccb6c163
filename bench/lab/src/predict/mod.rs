//! `bench predict`: measure each design's 1-CPU inputs in this process,
//! feed them to the scaling model ([`model`]) and print the
//! predicted ops/s at 1..64 CPUs per design and lock kind; with
//! `--validate`, also measure 2 CPUs and set each prediction beside it:
//! the model is fitted on the odd rounds and validated on the even ones
//! ([`split`]).
//!
//! Inputs per design (and lock kind, where this build has `lock=`):
//! a plain 1-task run gives ns per op; a census run (`census_run.rs`: two
//! tasks' operations taking turns on one thread, under the fs line census)
//! gives, for every line both tasks store to at least once per two ops,
//! its stores, visits, lockref fast paths, stores inside its own holds,
//! holds and hold time, and what of that falls inside the sharing window
//! ([`inputs_from_census`]). Times are scaled from the census' speed to
//! the plain run's ([`scale_times`]). The census' windows
//! ([`fs::stats::census_windows`]) give the sharing term's inputs: how
//! long each op's dentry stays hashed, what an op costs that finds the
//! name hashed, how long a miss takes to look again in `d_alloc_parallel`,
//! and whether the tasks miss the same name ([`sharing_from_windows`]).
//! Under `--validate`, each round of a design that allocates also measures
//! what a move of the parent's lines costs its op ([`steal`]), for a
//! column that prices the round's moves at that in place of the model's
//! half `t_x`.
//!
//! With `--out DIR` it writes `DIR/predict.csv` (the model's inputs and
//! predictions, [`PREDICT_HEADER`]) and, under `--validate`, `DIR/raw.csv`
//! with the measured runs, so `bench report DIR` draws both.
//!
//! Touches: stdout, the output directory, threads of this process.

use std::fmt::Write as _;
use std::path::Path;

use clap::Args;

use super::exec::HostExecutor;
use super::rows::{self, Row};
use super::sweep::load;
use bench::params::Params;
use bench::pingpong;
use formats::output;
use model::{Inputs, LockKind};

mod census_run;
mod csv;
pub mod extrapolate;
pub mod model;
mod round;
pub mod spans;
pub mod split;
pub mod steal;
mod tables;

use csv::CHECKS_CSV;
pub use csv::{
    checks_from_csv, checks_to_csv, lines_field, parse_csv, parse_lines_field, read_dir, to_csv,
    PREDICT_HEADER,
};
#[cfg(test)]
use csv::{PREDICT_HEADER_V1, PREDICT_HEADER_V2};
use round::{Gathered, Session};
pub use tables::{
    cpus_columns, fit_line, input_cells, input_columns, latency_groups, lines_table, lock_cell,
    table, validation_table, Check,
};

/// `bench predict` options.
#[derive(Args, Debug, Clone)]
pub struct PredictArgs {
    /// ENOENT designs to model [default: every design of
    /// fs::dcache::design::DESIGNS].
    #[arg(long, value_delimiter = ',')]
    pub designs: Vec<String>,
    /// Lock kinds to model (qspinlock, ticket, ttas, pvqspinlock; the model
    /// hands a pvqspinlock over as a qspinlock and has no halted waiters).
    #[arg(long, value_delimiter = ',', default_value = "qspinlock,ticket,ttas")]
    pub locks: Vec<String>,
    /// Workload.
    #[arg(long, default_value = "statneg")]
    pub testcase: String,
    /// Use this transfer latency (ns) instead of measuring it with pingpong:
    /// the target machine's figure.
    #[arg(long)]
    pub transfer_ns: Option<f64>,
    /// Measured seconds per input run.
    #[arg(long, default_value_t = 2, value_parser = clap::value_parser!(u32).range(1..=3600))]
    pub secs: u32,
    /// Warmup seconds per run.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(0..=3600))]
    pub warmup: u32,
    /// Also measure 2 CPUs and compare (the ±25 % check).
    #[arg(long)]
    pub validate: bool,
    /// Rounds of (1-CPU inputs, 2-CPU measurement) under --validate; the
    /// table shows the median round and the spread.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=50))]
    pub repeat: u32,
    /// Write predict.csv (and raw.csv under --validate) here.
    #[arg(long)]
    pub out: Option<std::path::PathBuf>,
    /// Do not pin tasks to CPUs.
    #[arg(long)]
    pub no_pin: bool,
    /// Spin-wait hints every run leaves after each operation (`pause=`):
    /// the 1-CPU inputs price the gap, the 2-CPU check measures with it.
    #[arg(long, default_value_t = 0, value_parser = clap::value_parser!(u32).range(0..=100_000))]
    pub pause: u32,
}

/// One design × lock kind: its inputs and whether they were measured with
/// that lock kind (`false`: this build has no `lock=` word, so the lock the
/// build has was measured and only the handoff model differs).
#[derive(Clone, Debug, PartialEq)]
pub struct Model {
    pub testcase: String,
    pub design: String,
    pub lock: LockKind,
    pub inputs: Inputs,
    pub transfer_ns: f64,
    pub lock_measured: bool,
}

impl Model {
    /// Predicted ops/s at `cpus`.
    pub fn at(&self, cpus: usize) -> f64 {
        self.predict(cpus).ops
    }
    /// Everything predicted at `cpus`.
    pub fn predict(&self, cpus: usize) -> model::Prediction {
        model::predict(&self.inputs, self.lock, self.transfer_ns, cpus)
    }
}

/// A discarding `fmt::Write` that is `Send` (the runs' own output).
struct Sink(String);
impl std::fmt::Write for Sink {
    fn write_str(&mut self, s: &str) -> std::fmt::Result {
        self.0.push_str(s);
        Ok(())
    }
}

/// Does this build's parser take `lock=`?
pub fn has_lock_word() -> bool {
    Params::parse_line("bench=statneg lock=qspinlock").is_ok()
}

fn params(
    testcase: &str,
    design: &str,
    lock: Option<LockKind>,
    tasks: usize,
    a: &PredictArgs,
) -> Result<Params, String> {
    let mut w = format!(
        "bench={testcase} tasks={tasks} design={design} warmup={} secs={}",
        a.warmup, a.secs
    );
    if let Some(l) = lock {
        let _ = write!(w, " lock={l}");
    }
    if a.pause != 0 {
        let _ = write!(w, " pause={}", a.pause);
    }
    Params::parse_line(&w).map_err(|e| format!("{w}: {e}"))
}

/// One run in this process, its lock waiters under `bench host`'s policy
/// ([`crate::exec::wait_policy`], the default restored after it); its
/// output text, parsed.
fn run_once(p: &Params, exec: &HostExecutor) -> Result<(output::RunOutput, String), String> {
    crate::exec::wait_policy(p.lock, p.tasks, exec.cpus().len(), exec.pinned());
    let mut sink = Sink(String::new());
    let ran = bench::run_params(p, exec, &mut sink);
    // The rest of predict (census, spans, steal) runs threads of its own:
    // back to the default policy.
    fs::sync::spinwait::set_yielding(true);
    ran.map_err(|e| format!("{p}: {e}"))?;
    let out = output::parse(&sink.0).map_err(|e| format!("{p}: {e}"))?;
    Ok((out, sink.0))
}

/// CPU seconds this process has used (user + system, all threads), from
/// `/proc/self/stat` (clock ticks of 1/100 s, Linux's `USER_HZ`).
pub fn cpu_seconds() -> Option<f64> {
    let s = std::fs::read_to_string("/proc/self/stat").ok()?;
    // Fields after the `(comm)`, which may hold spaces: state is field 3,
    // utime 14, stime 15.
    let rest = &s[s.rfind(')')? + 2..];
    let f: Vec<&str> = rest.split(' ').collect();
    let ticks = f.get(11)?.parse::<u64>().ok()? + f.get(12)?.parse::<u64>().ok()?;
    Some(ticks as f64 / 100.0)
}

/// A run's figures beyond its output: operations counted by the fs
/// (warmup included), wall and CPU seconds over the same span.
#[derive(Clone, Copy, Debug, Default)]
pub struct Spent {
    pub ops: u64,
    pub wall_s: f64,
    pub cpu_s: f64,
    /// Over the same span: dentries allocated, and of those the misses
    /// that found the name hashed in `d_alloc_parallel` (`parallel_found`)
    /// and the waits for another lookup of the name (`in_lookup_waits`).
    pub allocs: u64,
    pub found: u64,
    pub waits: u64,
    /// Over the same span: lock waiters that gave their thread away
    /// (`spin_yields`; warmup included, so a superset of what the sweep's
    /// host runs report for their measured seconds alone).
    pub yields: u64,
    /// The host's load around the run, as the sweep records it for raw.csv
    /// (`sweep::load`): % of the host's CPU time stolen during the run, and
    /// the 1-minute load average when it ended; `None` where /proc cannot say.
    pub steal: Option<f64>,
    pub loadavg: Option<f64>,
    /// CPUs everyone but this process used during the run (all CPUs' busy
    /// time from `/proc/stat` less `cpu_s`, per wall second: raw.csv's
    /// `others_cpus`); `None` where /proc cannot say.
    pub others_cpus: Option<f64>,
}

impl Spent {
    /// Operations per CPU-second (the load-independent rate).
    pub fn ops_per_cpu_s(&self) -> f64 {
        self.ops as f64 / self.cpu_s.max(1e-9)
    }
    /// CPUs this run really had: CPU seconds ÷ wall seconds.
    pub fn effective_cpus(&self) -> f64 {
        self.cpu_s / self.wall_s.max(1e-9)
    }
}

/// Run `p` once, measuring what it spent.
fn run_spent(p: &Params, exec: &HostExecutor) -> Result<(output::RunOutput, Spent), String> {
    let before = fs::stats::snapshot();
    let stat0 = load::cpu_times();
    let c0 = cpu_seconds().unwrap_or(0.0);
    let t0 = std::time::Instant::now();
    let (out, _) = run_once(p, exec)?;
    let wall_s = t0.elapsed().as_secs_f64();
    let cpu_s = cpu_seconds().unwrap_or(0.0) - c0;
    let d = fs::stats::snapshot().delta(&before);
    let stat1 = load::cpu_times();
    let steal = load::steal_percent(stat0, stat1);
    let (_, others_cpus) = load::cpu_use(Some((cpu_s * 1000.0) as u64), stat0, stat1, wall_s);
    let spent = Spent {
        ops: d.lookups,
        wall_s,
        cpu_s,
        allocs: d.dentry_alloc,
        found: d.parallel_found,
        waits: d.in_lookup_waits,
        yields: d.spin_yields,
        steal,
        loadavg: load::loadavg(),
        others_cpus,
    };
    Ok((out, spent))
}

/// Nanoseconds one clock read costs here (median of batches).
fn clock_cost_ns() -> f64 {
    let p = fs::platform::get();
    let mut v: Vec<f64> = (0..21)
        .map(|_| {
            let t0 = p.now_ns();
            for _ in 0..1000 {
                std::hint::black_box(p.now_ns());
            }
            (p.now_ns() - t0) as f64 / 1001.0
        })
        .collect();
    pingpong::median(&mut v)
}

/// Lines stored to at least this often per op count as shared by every op.
pub const SHARED_PER_OP: f64 = 0.5;

/// Turn a census (lines, most-stored first) of `ops` operations by `tasks`
/// tasks into the model's line inputs: the lines stored to at least
/// [`SHARED_PER_OP`] times per op, and, with more than one task, by more
/// than one of them (a line only one task stores to is its own). Hold
/// times are census times; the caller scales them to the plain run's speed
/// ([`scale_times`]).
pub fn inputs_from_census(
    lines: &[fs::stats::LineCensus],
    ops: u64,
    tasks: usize,
    ns_per_op: f64,
) -> Inputs {
    let ops_f = ops.max(1) as f64;
    let shared: Vec<model::Line> = lines
        .iter()
        .filter(|l| l.stores as f64 / ops_f >= SHARED_PER_OP)
        .filter(|l| tasks < 2 || l.writers() >= 2)
        .map(|l| model::Line {
            stores: l.stores as f64 / ops_f,
            tagged: l.stores.saturating_sub(l.untagged) as f64 / ops_f,
            visits: l.visits as f64 / ops_f,
            fast: l.fast as f64 / ops_f,
            in_hold: l.in_hold as f64 / ops_f,
            holds: l.holds as f64 / ops_f,
            hold_ns: l.hold_ns as f64 / ops_f,
            win_visits: l.win_visits as f64 / ops_f,
            win_in_hold: l.win_in_hold as f64 / ops_f,
        })
        .collect();
    let Some(hot) = shared.first() else {
        return Inputs {
            ns_per_op,
            ..Inputs::default()
        };
    };
    Inputs {
        ns_per_op,
        hot_stores: hot.stores,
        hot_holds: hot.holds,
        hold_ns: hot.hold_ns,
        other_stores: shared[1..].iter().map(|l| l.stores).sum(),
        lines: shared,
        ..Inputs::default()
    }
}

/// Scale the hold times the census measured by `factor`: the census books
/// each store and slows the run, evenly enough that its times keep their
/// share of the operation.
pub fn scale_times(i: &mut Inputs, factor: f64) {
    i.hold_ns *= factor;
    for l in &mut i.lines {
        l.hold_ns *= factor;
    }
}

/// The sharing inputs from the census' windows, per op, at the plain run's
/// speed ([`sharing_from_windows`]).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Sharing {
    /// How long the op's own dentry stays hashed.
    pub hashed_ns: f64,
    /// What an op costs that finds the name hashed.
    pub hit_ns: f64,
    /// From the RCU-walk miss to `d_alloc_parallel`'s look in the dcache.
    pub lookup_ns: f64,
}

/// The sharing inputs from the census' windows over `ops` operations at
/// the plain run's speed (`plain_ns` per op; the census run took
/// `census_ns` per op). The part of an op before its RCU-walk miss stores
/// to no counted line, so the census leaves it at plain speed:
/// `hit = census_ns - slow` (one clock read less). The slow part carries
/// the census' booking; the hashed window and the time to the parallel
/// lookup lie inside it and are scaled by the slow part's plain ÷ census
/// speed. An op that never misses has `hit = plain_ns`; one that never
/// unhashes its dentry again (negative's cached dentry) has no window.
/// Windows rarer than [`SHARED_PER_OP`] per op are not the operation's own
/// (the run's first miss, the teardown of its tmpfs) and count as none.
/// Nor do windows of names the census' tasks do not share (fewer than half
/// of the hash inserts found the other task's last name the same:
/// `statneg-distinct`, `statneg-owndir`): nobody can find those dentries.
pub fn sharing_from_windows(
    w: &fs::stats::CensusWindows,
    ops: u64,
    census_ns: f64,
    plain_ns: f64,
    clock_ns: f64,
) -> Sharing {
    let ops_f = ops.max(1) as f64;
    if (w.slow as f64) < SHARED_PER_OP * ops_f {
        return Sharing {
            hit_ns: plain_ns,
            ..Sharing::default()
        };
    }
    let per_op = |n: u64, ns: u64| {
        if (n as f64) < SHARED_PER_OP * ops_f {
            0.0
        } else {
            (ns as f64 - n as f64 * clock_ns).max(0.0) / ops_f
        }
    };
    let slow = per_op(w.slow, w.slow_ns);
    let hit = (census_ns - slow - clock_ns).clamp(0.0, plain_ns);
    let one_name = 2 * w.common >= w.hashed;
    let scale = if slow > 0.0 {
        ((plain_ns - hit) / slow).clamp(0.0, 1.0)
    } else {
        1.0
    };
    if !one_name {
        return Sharing {
            hit_ns: hit,
            ..Sharing::default()
        };
    }
    Sharing {
        hashed_ns: (per_op(w.hashed, w.hashed_ns) * scale).min(plain_ns),
        hit_ns: hit,
        lookup_ns: (per_op(w.lookup, w.lookup_ns) * scale).min(plain_ns),
    }
}

/// A design's 1-CPU measurement: the model inputs on the wall clock and
/// on CPU time, the plain run's output and what it spent.
struct Measured {
    wall: Inputs,
    cpu: Inputs,
    plain: output::RunOutput,
    /// What the plain run spent (its load columns go to raw.csv).
    plain_spent: Spent,
}

/// Measure one design's inputs (1 CPU): ns/op from a plain run, lines
/// from a census run. The census run is slower (it books every store);
/// hold times keep their share of its time and are scaled to the plain
/// run's speed.
fn measure_inputs(
    testcase: &str,
    design: &str,
    lock: Option<LockKind>,
    a: &PredictArgs,
    exec: &HostExecutor,
    clock_ns: f64,
) -> Result<Measured, String> {
    let p = params(testcase, design, lock, 1, a)?;
    let (plain, spent) = run_spent(&p, exec)?;
    if plain.average == 0 || spent.ops == 0 {
        return Err(format!("{p}: no operations"));
    }
    let ns_per_op = 1e9 / plain.average as f64;
    // The census: two tasks' operations taking turns on one thread, so
    // that a line both store to is known to be shared (census_run.rs).
    let c = census_run::run(
        &p,
        if a.no_pin {
            None
        } else {
            exec.cpus().first().copied()
        },
    )?;
    let (lines, windows, ops, census_ns_per_op) = (c.lines, c.windows, c.ops, c.ns_per_op);
    let mut wall = inputs_from_census(&lines, ops, census_run::TASKS, ns_per_op);
    let plain_whole_ns = spent.wall_s * 1e9 / spent.ops as f64;
    scale_times(&mut wall, (plain_whole_ns / census_ns_per_op).min(1.0));
    let sh = sharing_from_windows(&windows, ops, census_ns_per_op, ns_per_op, clock_ns);
    (wall.hashed_ns, wall.hit_ns, wall.lookup_ns) = (sh.hashed_ns, sh.hit_ns, sh.lookup_ns);
    wall.allocs = plain.per_op.map(|p| p.allocs).unwrap_or(0.0);
    let mut cpu = wall.clone();
    cpu.ns_per_op = 1e9 / spent.ops_per_cpu_s();
    let to_cpu = (cpu.ns_per_op / ns_per_op).min(1.0);
    scale_times(&mut cpu, to_cpu);
    cpu.hashed_ns = wall.hashed_ns * to_cpu;
    cpu.hit_ns = wall.hit_ns * to_cpu;
    cpu.lookup_ns = wall.lookup_ns * to_cpu;
    Ok(Measured {
        wall,
        cpu,
        plain,
        plain_spent: spent,
    })
}

/// Set in the child processes of [`run_per_lock_kind`].
const CHILD_ENV: &str = "BENCH_PREDICT_CHILD";
/// The session name the parent gives those children, so that the rows of
/// every lock kind belong to one session (raw.csv's `session`).
const SESSION_ENV: &str = "BENCH_PREDICT_SESSION";
/// Set in those children when the parent measured the transfer latency
/// (rather than being given it): they measure it again around each 2-task
/// run, as a single process does.
const ROUND_TX_ENV: &str = "BENCH_PREDICT_ROUND_TX";

/// Round trips (in batches of 1000) of the short pingpong run before and
/// after each 2-task run of `--validate`.
const ROUND_TX_BATCHES: usize = 50;

/// One side of the transfer latency around a 2-task run: a short
/// pingpong just before or just after it. This VM's two vCPUs move between
/// cores that share a cache (23–27 ns) and cores that do not (199–225 ns)
/// from one minute to the next, so a 2-task run is predicted with the mean
/// of the two sides, the latency of its own moment, not of the run's start.
fn round_transfer_ns(exec: &HostExecutor) -> Result<f64, String> {
    pingpong::run(exec, ROUND_TX_BATCHES)
        .map(|pp| pp.transfer_ns)
        .map_err(|e| e.to_string())
}

/// Pairs of the move-price probe per round ([`steal::pairs`]).
const STEAL_PAIRS: usize = 3;

/// Tries of a 2-task run whose transfer latency moved during it.
const ROUND_TX_TRIES: usize = 3;

/// Whether the transfer latency measured just before and just after a
/// 2-task run tells one regime: within a factor of 2. This VM's two
/// regimes (cores that share a cache, cores that do not) are 5-8x apart;
/// one regime's readings stay within 1.6x of each other over a day.
pub fn tx_settled(before: f64, after: f64) -> bool {
    let (lo, hi) = (before.min(after), before.max(after));
    lo > 0.0 && hi <= 2.0 * lo
}

/// The transfer latency: `--transfer-ns`, else measured by pingpong.
fn transfer_latency(a: &PredictArgs, exec: &HostExecutor) -> Result<f64, String> {
    match a.transfer_ns {
        Some(t) if t.is_finite() && t > 0.0 => {
            println!("transfer latency: {t:.1} ns (given with --transfer-ns)");
            Ok(t)
        }
        Some(t) => Err(format!(
            "--transfer-ns {t}: must be a positive number of ns"
        )),
        None => {
            if exec.cpus().len() < 2 {
                return Err(
                    "pingpong needs two CPUs; give the target machine's figure with --transfer-ns"
                        .into(),
                );
            }
            let pp = pingpong::run(exec, 200).map_err(|e| e.to_string())?;
            println!(
                "transfer latency: {:.1} ns (measured: {pp})",
                pp.transfer_ns
            );
            Ok(pp.transfer_ns)
        }
    }
}

/// `bench predict` with several lock kinds: one child `bench predict
/// --locks K` per kind, all with the same transfer latency; under `--out`
/// their predict.csv, raw.csv and validation.md are merged into DIR.
fn run_per_lock_kind(
    a: &PredictArgs,
    locks: &[LockKind],
    exec: &HostExecutor,
) -> Result<(), String> {
    let transfer_ns = transfer_latency(a, exec)?;
    let session = session_name();
    let exe = std::env::current_exe().map_err(|e| format!("bench predict: {e}"))?;
    let mut models: Vec<Model> = Vec::new();
    let mut raw: Vec<Row> = Vec::new();
    let mut checks: Vec<Check> = Vec::new();
    for &lock in locks {
        let mut cmd = std::process::Command::new(&exe);
        cmd.env(CHILD_ENV, "1")
            .env(SESSION_ENV, &session)
            .arg("predict");
        if a.transfer_ns.is_none() {
            cmd.env(ROUND_TX_ENV, "1");
        }
        cmd.arg("--designs").arg(a.designs.join(","));
        cmd.arg("--locks").arg(lock.to_string());
        cmd.arg("--testcase").arg(&a.testcase);
        cmd.arg("--transfer-ns").arg(format!("{transfer_ns}"));
        cmd.arg("--secs").arg(a.secs.to_string());
        cmd.arg("--warmup").arg(a.warmup.to_string());
        cmd.arg("--repeat").arg(a.repeat.to_string());
        if a.validate {
            cmd.arg("--validate");
        }
        if a.no_pin {
            cmd.arg("--no-pin");
        }
        cmd.arg("--pause").arg(a.pause.to_string());
        let sub = a.out.as_ref().map(|d| d.join(format!("lock-{lock}")));
        if let Some(d) = &sub {
            cmd.arg("--out").arg(d);
        }
        let status = cmd
            .status()
            .map_err(|e| format!("bench predict --locks {lock}: {e}"))?;
        if !status.success() {
            return Err(format!("bench predict --locks {lock}: {status}"));
        }
        if let Some(d) = &sub {
            let text = std::fs::read_to_string(d.join("predict.csv"))
                .map_err(|e| format!("{}: {e}", d.display()))?;
            models.extend(parse_csv(&text).map_err(|e| format!("{}: {e}", d.display()))?);
            if d.join("raw.csv").exists() {
                raw.extend(rows::read(&d.join("raw.csv"))?);
            }
            if let Ok(v) = std::fs::read_to_string(d.join(CHECKS_CSV)) {
                checks.extend(checks_from_csv(&v)?);
            }
            let _ = std::fs::remove_dir_all(d);
        }
    }
    let table_tx = table_transfer_ns(transfer_ns, &checks);
    say_table_latency(transfer_ns, table_tx);
    for m in &mut models {
        m.transfer_ns = table_tx;
    }
    if let Some(dir) = &a.out {
        std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        std::fs::write(dir.join("predict.csv"), to_csv(&models))
            .map_err(|e| format!("{}: {e}", dir.display()))?;
        if !raw.is_empty() {
            rows::write(&dir.join("raw.csv"), &raw)?;
        }
        if a.validate {
            write_checks(dir, &checks, a.pause)?;
        }
        println!(
            "wrote {} (all lock kinds)",
            dir.join("predict.csv").display()
        );
    }
    if a.validate {
        print!("{}", validation_text(&checks, a.pause));
    }
    Ok(())
}

/// The latency the predicted table (1..64 CPUs) is made at: the lower
/// median of the rounds' latencies where `--validate` recorded them (a
/// machine whose CPUs move between regimes, as this VM's vCPUs do, may
/// catch its rarer one in the single reading taken when the run begins),
/// else `start`, the latency measured then or given.
pub fn table_transfer_ns(start: f64, checks: &[Check]) -> f64 {
    let mut v: Vec<f64> = checks
        .iter()
        .map(|c| c.transfer_ns)
        .filter(|&t| t > 0.0)
        .collect();
    if v.is_empty() {
        return start;
    }
    v.sort_by(f64::total_cmp);
    v[(v.len() - 1) / 2]
}

/// Say which latency the table was made at, where the rounds moved it.
fn say_table_latency(start: f64, table: f64) {
    if table != start {
        println!(
            "predicted table at t_x = {table:.1} ns: the median of the rounds' transfer \
             latencies ({start:.1} ns when the run began)"
        );
    }
}

/// The validation tables, with the gap the runs left between operations
/// said first where there was one (`--pause`): such checks hold for runs
/// with that gap only.
pub fn validation_text(checks: &[Check], pause: u32) -> String {
    let mut s = String::new();
    if pause != 0 {
        let _ = write!(
            s,
            "\nEvery run of this check left {pause} spin-wait hints between two operations \
             (`bench predict --pause {pause}`, the benchmark word `pause={pause}`): the 1-CPU \
             inputs price that gap, and the figures hold for runs with it.\n"
        );
    }
    s.push_str(&validation_table(checks));
    s.push_str(&tables::spans_table(checks));
    s
}

/// Write `checks.csv` and `validation.md` (its tables) into `dir`.
fn write_checks(dir: &Path, checks: &[Check], pause: u32) -> Result<(), String> {
    std::fs::write(dir.join(CHECKS_CSV), checks_to_csv(checks))
        .map_err(|e| format!("{}: {e}", dir.display()))?;
    std::fs::write(dir.join("validation.md"), validation_text(checks, pause))
        .map_err(|e| format!("{}: {e}", dir.display()))
}

/// `bench predict`.
pub fn run(a: &PredictArgs, exec: &HostExecutor) -> Result<(), String> {
    // No --designs: every design of the registry.
    let mut all = a.clone();
    if all.designs.is_empty() {
        all.designs = fs::dcache::design::DESIGNS
            .iter()
            .map(|d| d.name().to_string())
            .collect();
    }
    let a = &all;
    let locks = lock_kinds(a)?;
    let with_lock = has_lock_word();
    // The dcache's global locks (hash and in-lookup buckets, the LRU) take
    // their kind when the fs is first used, so one process measures one
    // lock kind: with several, each kind runs in a child process of its
    // own (given this process's transfer latency) and the results merge.
    if with_lock && locks.len() > 1 && std::env::var_os(CHILD_ENV).is_none() {
        return run_per_lock_kind(a, &locks, exec);
    }
    let s = session(a, exec, locks, with_lock)?;
    let mut got = Gathered::default();
    for r in 1..=a.repeat {
        for design in &a.designs {
            // Without lock= one measurement serves every kind.
            let kinds: Vec<Option<LockKind>> = if with_lock {
                s.locks.iter().map(|&l| Some(l)).collect()
            } else {
                vec![None]
            };
            for lk in kinds {
                round::run(&s, r, design, lk, &mut got)?;
            }
        }
    }
    finish(a, s.transfer_ns, got)
}

/// `--locks`, parsed.
fn lock_kinds(a: &PredictArgs) -> Result<Vec<LockKind>, String> {
    a.locks
        .iter()
        .map(|l| {
            LockKind::from_name(l).ok_or_else(|| {
                format!(
                    "--locks: unknown lock kind '{l}' (qspinlock, ticket, ttas, or pvqspinlock: \
                     modelled as qspinlock, no halted waiters)"
                )
            })
        })
        .collect()
}

/// What the rounds share: the transfer latency, the clock's cost, this
/// machine; said on stdout as the run begins.
fn session<'a>(
    a: &'a PredictArgs,
    exec: &'a HostExecutor,
    locks: Vec<LockKind>,
    with_lock: bool,
) -> Result<Session<'a>, String> {
    let transfer_ns = transfer_latency(a, exec)?;
    // Under --validate, each 2-task run is predicted with the latency
    // measured around it, unless the user gave one (a target machine's).
    let per_round_tx = a.validate
        && (a.transfer_ns.is_none() || std::env::var_os(ROUND_TX_ENV).is_some())
        && exec.cpus().len() >= 2;
    if per_round_tx {
        println!(
            "under --validate each 2-task run is predicted with the transfer latency measured \
             around it ({ROUND_TX_BATCHES} batches before and after)"
        );
    }
    let clock_ns = clock_cost_ns();
    println!("clock read: {clock_ns:.1} ns (subtracted from each census hold)");
    if !with_lock {
        println!(
            "note: this build has no lock= word: every lock kind's inputs come from the build's \
             own spinlock; only the handoff model differs"
        );
    }
    Ok(Session {
        a,
        exec,
        locks,
        transfer_ns,
        per_round_tx,
        clock_ns,
        host: super::hostname(),
        cpu_model: super::host_cpu_model(),
        name: session_name(),
    })
}

/// This run's session (raw.csv's `session`): the parent's under
/// [`run_per_lock_kind`], else the UTC time it began, as a sweep names its
/// directory.
fn session_name() -> String {
    std::env::var(SESSION_ENV)
        .ok()
        .filter(|s| !s.is_empty())
        .unwrap_or_else(super::now_stamp)
}

/// The rounds' models at the table's latency, medians per design and lock
/// kind: the tables on stdout, and under `--out` the files.
fn finish(a: &PredictArgs, transfer_ns: f64, got: Gathered) -> Result<(), String> {
    let Gathered { rounds, rows } = got;
    let checks = split::checks(&rounds);
    if a.validate {
        println!("{}", split::say_sets(a.repeat));
    }
    let table_tx = table_transfer_ns(transfer_ns, &checks);
    say_table_latency(transfer_ns, table_tx);
    let mut models = split::fit_models(&rounds);
    for m in &mut models {
        m.transfer_ns = table_tx;
    }
    print!("{}", table(&models, &checks));
    if models.iter().any(|m| !m.inputs.lines.is_empty()) {
        print!("\nShared lines (what the census saw per op, two tasks' ops taking turns on one thread):\n{}", lines_table(&models));
    }
    if a.validate {
        print!("{}", validation_text(&checks, a.pause));
    }
    if let Some(dir) = &a.out {
        std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        std::fs::write(dir.join("predict.csv"), to_csv(&models))
            .map_err(|e| format!("{}: {e}", dir.display()))?;
        if !rows.is_empty() {
            rows::write(&dir.join("raw.csv"), &rows)?;
        }
        if a.validate {
            write_checks(dir, &checks, a.pause)?;
        }
        println!("wrote {}", dir.join("predict.csv").display());
    }
    Ok(())
}

#[cfg(test)]
mod tests;
