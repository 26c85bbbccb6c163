//! Which rounds of `bench predict --validate` fit the model and which
//! validate it. A round measures a design's 1-CPU inputs (the per-op
//! costs, the census' lines and windows) and its 2-task run. The odd
//! rounds (1, 3, 5, …) are the fit: the median of their inputs is the
//! model the predicted table prints, and each is also checked against its
//! own 2-task run (in-sample, printed, no verdict). The even rounds (2, 4,
//! …) are held out: their 2-task runs are predicted with the fit's model,
//! never with their own inputs, and only they give the ±25 % verdict and
//! the band past the checked CPU counts. A single round has nothing held
//! out: its check is in-sample and says so.
//!
//! Odd and even rather than a first and a second half: rounds follow one
//! another, each design's in a row, and this machine's load and its vCPUs'
//! placement drift over minutes; interleaved sets span the same stretch of
//! time, so what the held-out rounds test is the model, not a change of
//! the machine between the halves.
//!
//! Touches nothing but the rounds it is given.

use super::model::LockKind;
use super::round::Round;
use super::{Check, Model};

/// Which set a round belongs to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Set {
    Fit,
    HeldOut,
}

/// The set of round `round` (numbered from 1).
pub fn set_of(round: u32) -> Set {
    if round % 2 == 1 {
        Set::Fit
    } else {
        Set::HeldOut
    }
}

/// The fit of `testcase`, `design` and `lock`: of its fit rounds, the one
/// whose 1-CPU ns/op is the median (the lower one of an even count), so one
/// slow round on a loaded machine does not set the inputs.
pub(super) fn fit_of<'a>(rounds: &'a [Round], key: (&str, &str, LockKind)) -> Option<&'a Round> {
    let mut mine: Vec<&Round> = rounds
        .iter()
        .filter(|r| r.key() == key && set_of(r.round) == Set::Fit)
        .collect();
    mine.sort_by(|a, b| {
        a.model
            .inputs
            .ns_per_op
            .total_cmp(&b.model.inputs.ns_per_op)
    });
    mine.get(mine.len().checked_sub(1)? / 2).copied()
}

/// The models the predicted table prints: one fit per testcase, design
/// and lock kind, in first-seen order.
pub(super) fn fit_models(rounds: &[Round]) -> Vec<Model> {
    let mut out: Vec<Model> = Vec::new();
    for r in rounds {
        let seen = out
            .iter()
            .any(|m| (m.testcase.as_str(), m.design.as_str(), m.lock) == r.key());
        if !seen {
            if let Some(f) = fit_of(rounds, r.key()) {
                out.push(f.model.clone());
            }
        }
    }
    out
}

/// The checks of every round that measured 2 CPUs: a fit round's with its
/// own inputs, a held-out round's with its fit's (see the module's text).
pub(super) fn checks(rounds: &[Round]) -> Vec<Check> {
    rounds
        .iter()
        .filter_map(|r| {
            let v = r.validation.as_ref()?;
            let (model, cpu, held_out) = match set_of(r.round) {
                Set::Fit => (&r.model, &r.cpu, false),
                Set::HeldOut => {
                    let f = fit_of(rounds, r.key())?;
                    (&f.model, &f.cpu, true)
                }
            };
            let mut c = v.check(model, cpu);
            c.round = r.round;
            c.held_out = held_out;
            Some(c)
        })
        .collect()
}

/// The rounds of each set, as `fit 1,3,5; held out 2,4` for stdout.
pub fn say_sets(rounds: u32) -> String {
    let list = |s: Set| {
        let v: Vec<String> = (1..=rounds)
            .filter(|&r| set_of(r) == s)
            .map(|r| r.to_string())
            .collect();
        if v.is_empty() {
            "none".to_string()
        } else {
            v.join(",")
        }
    };
    format!(
        "rounds: the model is fitted on {} (odd) and validated on {} (even){}",
        list(Set::Fit),
        list(Set::HeldOut),
        if rounds < 2 {
            ": with one round the check is in-sample only (--repeat 2 or more holds rounds out)"
        } else {
            ""
        }
    )
}
