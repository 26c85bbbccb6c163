//! What a move of the parent's lines costs a lookup, measured on the
//! workload itself: `statneg` on one CPU, while a *thief* on a second CPU
//! takes and drops a reference on the parent (the tmpfs root) and does
//! nothing else, `P` spin-wait hints apart. The probe is
//! `bench::host::predict::steal` (its doc says what it measures); `bench
//! predict --validate` runs it once per round at the default gap.
//!
//! Each trial runs the victim alone, beside a thief that only spins, and
//! beside the thief, three times over, and prints one line per pair with
//! `bench pingpong`'s latency read before the trial (`added_ns`: beside
//! the thief less beside the spinner). docs/designs.md ("Where it stands") quotes it beside
//! `movecost`:
//!
//!     cargo run --release -p bench --example stealcost [DESIGN [P,P,...] [TRIALS]]
//!
//! (defaults: transient, 16,64, 3).
//!
//! Touches: a fresh tmpfs, the first two CPUs, for about 5 s per trial and
//! gap.

use std::time::Duration;

use bench::host::exec::HostExecutor;
use bench::host::predict::steal;

/// How long the victim runs per measurement (after a quarter of it as
/// warm-up).
const RUN: Duration = Duration::from_millis(400);

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let design = args.get(1).map_or("transient", String::as_str);
    let gaps: Vec<u32> = args
        .get(2)
        .map(|s| s.split(',').map(|x| x.parse().expect("P,P,...")).collect())
        .unwrap_or_else(|| vec![16, 64]);
    let trials: usize = args.get(3).and_then(|t| t.parse().ok()).unwrap_or(3);
    let exec = HostExecutor::new(true);
    let p = bench::params::Params::parse_line(&format!(
        "bench=statneg tasks=1 design={design} warmup=0 secs=1"
    ))
    .unwrap_or_else(|e| panic!("{e}"));
    for trial in 0..trials {
        let tx = bench::pingpong::run(&exec, 50)
            .map(|p| p.transfer_ns)
            .unwrap_or(0.0);
        for &gap in &gaps {
            let pairs = steal::pairs(&p, &exec, gap, 3, RUN).unwrap_or_else(|e| {
                eprintln!("stealcost: {e}");
                std::process::exit(1)
            });
            for x in &pairs {
                println!(
                    "stealcost: trial={trial} transfer_ns={tx:.1} pause={gap} alone_ns={:.0} \
                     spin_ns={:.0} beside_ns={:.0} added_ns={:.0} steals_per_op={:.2} transfers_per_op={:.2} \
                     fallbacks_per_op={:.2} thief_locked={:.2} added_per_transfer_ns={:.0}",
                    x.alone_ns,
                    x.spin_ns,
                    x.beside_ns,
                    x.added_ns(),
                    x.steals,
                    x.transfers,
                    x.fallbacks,
                    x.thief_locked,
                    x.per_transfer_ns().unwrap_or(0.0)
                );
            }
        }
    }
}
