//! The cost split (`fidelity-cost`): each paired design's time per stat
//! and task on both sides, round by round, and the report's section of a
//! committed run, recomputed from its `fidelity-window` lines.
//!
//! Touches nothing: pure functions over a run's windows or output.

use super::*;

/// One design's time per stat on both sides at one CPU count ([`costs`]).
#[derive(Debug, Clone, PartialEq)]
pub struct Cost {
    pub design: String,
    pub linux: String,
    /// Per round where both sides ran: the prototype's ns per stat and
    /// task (`tasks / ops`, the system call constant added), Linux's.
    pub proto_ns: Vec<f64>,
    pub linux_ns: Vec<f64>,
}

impl Cost {
    /// The line: medians, and the per-round cost ratio's median and range.
    pub fn line(&self, vcpus: u32) -> String {
        let ratios: Vec<f64> = self
            .proto_ns
            .iter()
            .zip(&self.linux_ns)
            .map(|(p, l)| p / l)
            .collect();
        let f = |x: Option<f64>| x.map_or("none".into(), |x| format!("{x:.0}"));
        format!(
            "fidelity-cost design={} linux={} vcpus={vcpus} proto_ns={} linux_ns={} cost_ratio={} range={}",
            self.design,
            self.linux,
            f(median(&self.proto_ns)),
            f(median(&self.linux_ns)),
            median(&ratios).map_or("none".into(), |x| format!("{x:.3}")),
            range(&ratios),
        )
    }
}

/// Each paired design's time per stat and task on both sides, round by
/// round (the average estimator; the prototype's with `syscall_ns` added,
/// as [`with_syscall`] adds it). `proto_ratio ÷ linux_ratio` of a design is
/// the baseline's cost ratio over the design's, so a design whose cost
/// ratio is near 1 while the baseline's is not has its error from the
/// baseline's miss, not its own.
pub(super) fn costs(
    got: &[(u32, Job, Window)],
    rounds: u32,
    vcpus: u32,
    syscall_ns: f64,
) -> Vec<Cost> {
    let ns = |r: u32, job: Job| {
        got.iter()
            .find(|(gr, j, _)| *gr == r && *j == job)
            .map(|(_, _, w)| w.ops)
            .filter(|ops| *ops > 0.0)
            .map(|ops| f64::from(vcpus) / ops * 1e9)
    };
    PAIRS
        .iter()
        .enumerate()
        .filter_map(|(i, (d, k))| {
            let k = (*k)?;
            let (mut p, mut l) = (Vec::new(), Vec::new());
            for r in 0..rounds {
                if let (Some(x), Some(y)) =
                    (ns(r, Job::Proto(i, vcpus)), ns(r, Job::Linux(i, vcpus)))
                {
                    p.push(x + syscall_ns);
                    l.push(y);
                }
            }
            Some(Cost {
                design: d.to_string(),
                linux: k.to_string(),
                proto_ns: p,
                linux_ns: l,
            })
        })
        .collect()
}

/// The windows of a run's output (`fidelity-window` lines), as the run
/// collected them (the ops, the fastest second, a Linux boot's getppid
/// figure; per-op counters are not on these lines).
pub(super) fn windows_from(text: &str) -> Vec<(u32, Job, Window)> {
    let mut got = Vec::new();
    for l in text.lines() {
        let Some(rest) = l.strip_prefix("fidelity-window ") else {
            continue;
        };
        let w: Vec<&str> = rest.split_whitespace().collect();
        let field = |k: &str| {
            w.iter()
                .find_map(|x| x.strip_prefix(k)?.strip_prefix('='))
                .and_then(|v| v.parse::<f64>().ok())
        };
        let (Some(r), Some(n), Some(ops)) = (field("round"), field("vcpus"), field("ops")) else {
            continue;
        };
        let job = match w.get(1..3) {
            Some(["proto", d]) => PAIRS
                .iter()
                .position(|(p, _)| p == d)
                .map(|i| Job::Proto(i, n as u32)),
            Some([k, _]) => k
                .strip_prefix("7.3.4-")
                .and_then(|k| PAIRS.iter().position(|(_, l)| *l == Some(k)))
                .map(|i| Job::Linux(i, n as u32)),
            _ => None,
        };
        if let Some(job) = job {
            got.push((
                r as u32,
                job,
                Window {
                    ops,
                    best: field("best_second").unwrap_or(ops),
                    per_op: None,
                    getppid_ns: field("getppid_ns"),
                    probed: None,
                },
            ));
        }
    }
    got
}

/// The report's section of a `bench fidelity` run (its whole output, as
/// `docs/bench/fidelity-run.txt` keeps it): the ratio table with the
/// system call constant (window averages), the host pairs, and the cost
/// split ([`costs`]) recomputed from the run's windows, so a reader can
/// check it against the lines. `None` for a text with no windows.
pub fn report_section(run: &str) -> Option<String> {
    let got = windows_from(run);
    if got.is_empty() {
        return None;
    }
    let calib: Vec<f64> = got.iter().filter_map(|(_, _, w)| w.getppid_ns).collect();
    let c = median(&calib).unwrap_or(0.0);
    let rounds = got.iter().map(|(r, _, _)| r + 1).max().unwrap_or(0);
    let mut cpus: Vec<u32> = got
        .iter()
        .map(|(_, j, _)| match j {
            Job::Proto(_, n) | Job::Linux(_, n) => *n,
        })
        .collect();
    cpus.sort_unstable();
    cpus.dedup();
    let mut s =
        String::from("## Fidelity: the prototype's ratios beside Linux's (`make fidelity`)\n\n");
    s.push_str(
        "From the committed run's output (fidelity-run.txt; method, counters and the residual \
         per pair: [fidelity.md](fidelity.md)). Ratios are each design's ops/s over its side's \
         baseline in the same round (transient, 7.3.4-vanilla), the median over rounds, with \
         the guest's system call constant paid; `fidelity-cost` splits each error into the \
         two sides' time per stat and task (recomputed here from the run's windows).\n\n```\n",
    );
    let mut in_table = false;
    for l in run.lines() {
        if l.starts_with("fidelity-setup") || l.starts_with("fidelity-calibration") {
            s.push_str(l);
            s.push('\n');
        } else if l.starts_with("fidelity-table ") {
            let words: Vec<&str> = l.split_whitespace().collect();
            in_table = words.contains(&"estimator=average") && words.contains(&"syscall=with");
        } else if (in_table && l.starts_with("fidelity design=")) || l.contains(" linux=host-") {
            s.push_str(l);
            s.push('\n');
        }
    }
    for n in cpus {
        for cost in costs(&got, rounds, n, c) {
            s.push_str(&cost.line(n));
            s.push('\n');
        }
    }
    s.push_str("```\n");
    Some(s)
}
