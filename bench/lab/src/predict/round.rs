//! One round of `bench predict` for one design and lock kind: its 1-CPU
//! inputs and, under `--validate`, its 2-CPU check (the move-price probe,
//! the 2-task run at a settled transfer latency, the spans), gathered into
//! the command's rounds (the `split` module makes the models and checks of
//! them) and raw.csv rows.
//!
//! Touches: threads of this process (the runs), stdout (a line per probe).

use std::time::Duration;

use bench::params::Params;
use formats::output::RunOutput;

use super::model::{Inputs, LockKind};
use super::spans::{self, Spans};
use super::{
    measure_inputs, params, round_transfer_ns, run_spent, steal, tx_settled, Check, Measured,
    Model, PredictArgs, Spent, ROUND_TX_TRIES, STEAL_PAIRS,
};
use crate::exec::HostExecutor;
use crate::rows::{Key, Row};

/// What every round of one `bench predict` shares.
pub(super) struct Session<'a> {
    pub a: &'a PredictArgs,
    pub exec: &'a HostExecutor,
    /// The lock kinds asked for.
    pub locks: Vec<LockKind>,
    /// The latency measured when the run began (or given).
    pub transfer_ns: f64,
    /// Whether each 2-task run is predicted with the latency around it.
    pub per_round_tx: bool,
    /// What a clock read costs (subtracted from each census hold).
    pub clock_ns: f64,
    pub host: String,
    pub cpu_model: String,
    /// The session its raw.csv rows belong to.
    pub name: String,
}

/// What the rounds gather: each round per design and lock kind, and the
/// measured runs (raw.csv).
#[derive(Default)]
pub(super) struct Gathered {
    pub rounds: Vec<Round>,
    pub rows: Vec<Row>,
}

/// One round of one design and lock kind: its model (wall-clock inputs),
/// the same inputs on CPU time, and its 2-CPU measurement under
/// `--validate`.
pub(super) struct Round {
    pub round: u32,
    pub model: Model,
    pub cpu: Inputs,
    pub validation: Option<Validation>,
}

impl Round {
    pub(super) fn key(&self) -> (&str, &str, LockKind) {
        (&self.model.testcase, &self.model.design, self.model.lock)
    }
}

/// A round's 2-CPU measurement, for its checks.
pub(super) struct Validation {
    pub o2: RunOutput,
    pub spent2: Spent,
    /// The latency the check predicts with: the round's own, measured
    /// around its 2-task run (the machine's state then, not a fitted input).
    pub check_tx: f64,
    /// The move price the probe measured, if it ran and saw a transfer.
    pub move_ns: Option<f64>,
    pub spans_12: Option<[Spans; 2]>,
}

impl Validation {
    /// The check of `m` (on the CPU-time inputs `cpu`) against this run.
    pub fn check(&self, m: &Model, cpu: &Inputs) -> Check {
        let at_its_moment = Model {
            transfer_ns: self.check_tx,
            ..m.clone()
        };
        let mut c = Check::new(&at_its_moment, cpu, &self.o2, &self.spent2);
        if let Some(ns) = self.move_ns {
            c.price_moves(cpu, ns);
        }
        if let Some([s1, s2]) = self.spans_12 {
            (c.spans_1, c.spans_2) = (s1, s2);
        }
        c
    }
}

/// ` lock=K`, or nothing where the build's own spinlock ran.
fn lock_word(lk: Option<LockKind>) -> String {
    lk.map(|l| format!(" lock={l}")).unwrap_or_default()
}

/// Round `round` of `design` under `lk` (`None`: the build's own lock,
/// standing for every kind asked), into `out`.
pub(super) fn run(
    s: &Session,
    round: u32,
    design: &str,
    lk: Option<LockKind>,
    out: &mut Gathered,
) -> Result<(), String> {
    let a = s.a;
    let m1 = measure_inputs(&a.testcase, design, lk, a, s.exec, s.clock_ns)?;
    let validation = if a.validate {
        Some(validate(s, round, design, lk, &m1, &mut out.rows)?)
    } else {
        None
    };
    let applies: Vec<LockKind> = match lk {
        Some(l) => vec![l],
        None => s.locks.clone(),
    };
    for lock in applies {
        let m = Model {
            testcase: a.testcase.clone(),
            design: design.to_string(),
            lock,
            inputs: m1.wall.clone(),
            transfer_ns: s.transfer_ns,
            lock_measured: lk.is_some(),
        };
        out.rounds.push(Round {
            round,
            model: m,
            cpu: m1.cpu.clone(),
            validation: clone_validation(&validation),
        });
    }
    Ok(())
}

/// A copy of a round's 2-CPU measurement for each lock kind it stands for.
fn clone_validation(v: &Option<Validation>) -> Option<Validation> {
    v.as_ref().map(|v| Validation {
        o2: v.o2.clone(),
        spent2: v.spent2,
        check_tx: v.check_tx,
        move_ns: v.move_ns,
        spans_12: v.spans_12,
    })
}

/// The 2-CPU side of a round: the probes of a design that misses (the
/// move price, the spans), the 2-task run, and both runs as raw.csv rows.
fn validate(
    s: &Session,
    round: u32,
    design: &str,
    lk: Option<LockKind>,
    m1: &Measured,
    rows: &mut Vec<Row>,
) -> Result<Validation, String> {
    let a = s.a;
    let probes = m1.cpu.allocs > 0.0 && s.exec.cpus().len() >= 2;
    let p1 = params(&a.testcase, design, lk, 1, a)?;
    let run = Duration::from_secs_f64((0.2 * a.secs as f64).clamp(0.1, 0.4));
    // What a move of the parent's lines costs this design's op just now,
    // for the check's priced column.
    let move_ns = if probes {
        move_price(s, &p1, run, round, design, lk)?
    } else {
        None
    };
    let p2 = params(&a.testcase, design, lk, 2, a)?;
    let (o2, spent2, check_tx) = two_task_run(s, &p2, round, design, lk)?;
    let d = format!("{design}{}", lock_word(lk));
    let ids = RowIds {
        host: &s.host,
        testcase: &a.testcase,
        cpu_model: &s.cpu_model,
        session: &s.name,
        pause: a.pause,
    };
    rows.extend(check_rows(
        &ids,
        round,
        &d,
        [(&m1.plain, &m1.plain_spent), (&o2, &spent2)],
    ));
    // The spans at 1 CPU and at 2, for designs that miss.
    let spans_12 = if probes {
        Some(spans_at_1_and_2(s, &p1, &p2, run, round, &d)?)
    } else {
        None
    };
    Ok(Validation {
        o2,
        spent2,
        check_tx,
        move_ns,
        spans_12,
    })
}

/// The move-price probe ([`steal`]) on `p1`, said on stdout.
fn move_price(
    s: &Session,
    p1: &Params,
    run: Duration,
    round: u32,
    design: &str,
    lk: Option<LockKind>,
) -> Result<Option<f64>, String> {
    let pairs = steal::pairs(p1, s.exec, steal::GAP, STEAL_PAIRS, run)?;
    let move_ns = steal::move_ns(&pairs);
    println!(
        "round {round} {design}{}: a move of the parent's lines costs it {}",
        lock_word(lk),
        move_ns.map_or("– (no counted transfer)".into(), |m| format!("{m:.0} ns"))
    );
    Ok(move_ns)
}

/// The 2-task run of `p2` and the latency to predict it with. A round
/// whose transfer latency moved during its 2-task run (the vCPUs changed
/// cores) has no one latency to predict it with: it runs again, up to
/// [`ROUND_TX_TRIES`] times.
fn two_task_run(
    s: &Session,
    p2: &Params,
    round: u32,
    design: &str,
    lk: Option<LockKind>,
) -> Result<(RunOutput, Spent, f64), String> {
    let mut tries = 0;
    loop {
        tries += 1;
        let before = if s.per_round_tx {
            Some(round_transfer_ns(s.exec)?)
        } else {
            None
        };
        let (o2, spent2) = run_spent(p2, s.exec)?;
        let Some(before) = before else {
            return Ok((o2, spent2, s.transfer_ns));
        };
        let after = round_transfer_ns(s.exec)?;
        let mean = (before + after) / 2.0;
        let moved = !tx_settled(before, after);
        println!(
            "round {round} {design}{}: transfer latency {before:.1} ns before \
             the 2-task run, {after:.1} ns after: {}",
            lock_word(lk),
            match (moved, tries < ROUND_TX_TRIES) {
                (false, _) => format!("predicted with {mean:.1} ns"),
                (true, true) => "it moved during the run; running it again".into(),
                (true, false) =>
                    format!("it moved in {tries} tries running; predicted with {mean:.1} ns"),
            }
        );
        if !moved || tries >= ROUND_TX_TRIES {
            return Ok((o2, spent2, mean));
        }
    }
}

/// What every raw.csv row of one `bench predict` names besides its run.
pub(super) struct RowIds<'a> {
    pub host: &'a str,
    pub testcase: &'a str,
    pub cpu_model: &'a str,
    pub session: &'a str,
    /// `--pause`: a gap between operations makes other figures, and the
    /// rows' note says so.
    pub pause: u32,
}

/// The round's input run (1 CPU) and its 2-task run as raw.csv rows of
/// design `d`, each with its session and the load around it (the load
/// average when it ended, the steal while it ran, its spin yields), as a
/// sweep's rows carry them.
pub(super) fn check_rows(
    ids: &RowIds,
    round: u32,
    d: &str,
    runs: [(&RunOutput, &Spent); 2],
) -> Vec<Row> {
    let gap = match ids.pause {
        0 => String::new(),
        n => format!(" pause={n}"),
    };
    let [one, two] = runs;
    [
        (1, one, format!("bench predict: input run{gap}")),
        (2, two, format!("bench predict --validate{gap}")),
    ]
    .into_iter()
    .map(|(cpus, (o, spent), note)| {
        let key = Key {
            source: "host".into(),
            accel: "native".into(),
            host: ids.host.to_string(),
            testcase: ids.testcase.to_string(),
            design: d.to_string(),
            cpus,
        };
        let mut r = Row::from_output(key, o, &note);
        r.rep = round;
        r.cpu_model = ids.cpu_model.to_string();
        r.session = ids.session.to_string();
        r.loadavg = spent.loadavg;
        r.steal = spent.steal;
        // This process is the run: its CPU time over the run's wall time.
        r.eff_cpus = Some(spent.effective_cpus());
        r.others_cpus = spent.others_cpus;
        r.yields = Some(spent.yields);
        r
    })
    .collect()
}

/// The spans at 1 CPU and at 2 ([`spans::at`]), said on stdout.
fn spans_at_1_and_2(
    s: &Session,
    p1: &Params,
    p2: &Params,
    run: Duration,
    round: u32,
    d: &str,
) -> Result<[Spans; 2], String> {
    let sp = [
        spans::at(p1, s.exec, 1, run)?,
        spans::at(p2, s.exec, 2, run)?,
    ];
    println!(
        "round {round} {d}: spans at 1 → 2 CPUs: slow part {:.0} → {:.0} ns, \
         hashed {:.0} → {:.0} ns, restarts {:.3}/op",
        sp[0].slow_ns, sp[1].slow_ns, sp[0].hashed_ns, sp[1].hashed_ns, sp[1].restarts
    );
    Ok(sp)
}
