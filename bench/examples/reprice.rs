//! Re-price the rounds of a recorded `bench predict --validate` run with
//! another price for a visit's move, at the sharing each round measured
//! (the validation's *at measured sharing* column) and with the whole
//! model (its sharing term included), beside the model's own price (`predict::MovePrice::MODEL`, half a `t_x` a move; a whole one
//! before: `reprice DIR 0 1`).
//!
//!     cargo run --release -p bench --example reprice DIR [FIXED_NS [OF_LATENCY]]
//!
//! (defaults: 30 ns, 0.5: a move costs `30 ns + t_x/2`). DIR holds the
//! run's `predict.csv` and `checks.csv`. Each round is priced with its own
//! transfer latency and allocating fraction, and with the inputs
//! predict.csv keeps for its design and lock kind (the median round's,
//! wall-clock; the run's own check used each round's CPU-time inputs, so
//! the model's column here differs from the report's by a few per cent).
//! docs/designs.md ("What a visit's move costs") quotes it.
//!
//! Touches: reads the two files, nothing else.

use bench::host::predict::{checks_from_csv, read_dir};
use bench::predict::{predict, predict_priced, with_allocating, with_allocating_priced, MovePrice};

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let Some(dir) = args.get(1).map(std::path::Path::new) else {
        eprintln!("usage: reprice DIR [FIXED_NS [OF_LATENCY]]");
        std::process::exit(2);
    };
    let num = |i: usize, d: f64| {
        args.get(i).map_or(d, |s| {
            s.parse().unwrap_or_else(|_| panic!("not a number: {s}"))
        })
    };
    let price = MovePrice {
        fixed_ns: num(2, 30.0),
        of_latency: num(3, 0.5),
    };
    let models = read_dir(dir).unwrap_or_else(|e| panic!("{e}"));
    let path = dir.join("checks.csv");
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let checks = checks_from_csv(&text).unwrap_or_else(|e| panic!("{e}"));
    let within = |r: f64| (0.75..=1.25).contains(&r);
    let (mut rounds, mut ok_model, mut ok_price) = (0, 0, 0);
    let (mut own_model, mut own_price) = (0, 0);
    let (mut sq_model, mut sq_price) = (0.0, 0.0);
    for c in &checks {
        let Some(m) = models
            .iter()
            .find(|m| m.design == c.design && m.lock == c.lock && m.inputs.allocs > 0.0)
        else {
            continue;
        };
        let i = &m.inputs;
        let a = (c.allocs_measured / i.allocs).clamp(1e-6, 1.0);
        let ratio = |ops: f64| ops / 2.0 / c.measured_per_cpu_s.max(1e-9);
        let r_model = ratio(with_allocating(i, c.lock, c.transfer_ns, 2, a).ops);
        let r_price = ratio(with_allocating_priced(i, c.lock, c.transfer_ns, price, 2, a).ops);
        let w_model = ratio(predict(i, c.lock, c.transfer_ns, 2).ops);
        let w_price = ratio(predict_priced(i, c.lock, c.transfer_ns, price, 2).ops);
        println!(
            "reprice: design={} lock={} transfer_ns={:.1} allocating={:.2} \
             ratio_at_sharing_model={r_model:.2} ratio_at_sharing_priced={r_price:.2} \
             ratio_model={w_model:.2} ratio_priced={w_price:.2}",
            c.design, c.lock, c.transfer_ns, a
        );
        own_model += within(w_model) as usize;
        own_price += within(w_price) as usize;
        rounds += 1;
        ok_model += within(r_model) as usize;
        ok_price += within(r_price) as usize;
        sq_model += r_model.ln().powi(2);
        sq_price += r_price.ln().powi(2);
    }
    if rounds == 0 {
        eprintln!("no round of an allocating design in {}", dir.display());
        std::process::exit(1);
    }
    let rms = |sq: f64| (sq / rounds as f64).sqrt();
    println!(
        "reprice: rounds={rounds} within_25pct_model={ok_model} within_25pct_priced={ok_price} \
         rms_log_ratio_model={:.3} rms_log_ratio_priced={:.3} whole_model_within_model={own_model} \
         whole_model_within_priced={own_price} price=\"{} ns + {}·t_x\"",
        rms(sq_model),
        rms(sq_price),
        price.fixed_ns,
        price.of_latency
    );
}
