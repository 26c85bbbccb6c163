//! `bench rcu-reader`: what the host RCU reader's fence costs, measured as
//! an A/B in one run.
//!
//! Host mode's readers are fence-free where the kernel offers
//! `membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED)` (`fs/src/sync/host.rs`);
//! `FS_RCU_READER=fence` forces the older reader that issues a SeqCst fence
//! on every outermost `rcu_read_lock`. This command runs child processes
//! `bench host bench=statneg design=noalloc tasks=1` — the lookup whose
//! cost the fence weighs most in, no allocation, no lock, no shared store —
//! alternately in the two modes, `--rounds` times, and swaps which mode goes
//! first every round, so that a slow stretch of a loaded machine falls on
//! both. Each child gives two figures: wall-clock ns per op of its fastest
//! measured second (`_ns`), and CPU ns per op (`_cpu_ns`: its user + system
//! time, which `bench host` prints on stderr, over every operation it
//! counted). On a loaded machine the second is the one to trust: time the
//! task spent preempted is in the wall clock, not in its CPU time. Output,
//! one line per round and a median line (the median of each mode's
//! figures; a gain is the share of the fenced reader's ns/op that the
//! fence-free one saves; `round_*gain_median` the median of the rounds'
//! own gains):
//!
//! ```text
//! rcu-reader: round=1 first=fence fence_ns=102.7 membarrier_ns=82.9 gain=19.2% fence_cpu_ns=98.0 membarrier_cpu_ns=83.1 cpu_gain=15.2%
//! rcu-reader: median rounds=9 secs=3 fence_ns=… membarrier_ns=… gain=…% round_gain_median=…% fence_cpu_ns=… membarrier_cpu_ns=… cpu_gain=…% round_cpu_gain_median=…%
//! ```
//!
//! With `--perf`, one more run per mode goes under `perf record -e
//! cpu-clock` (no call graphs) and `perf report` gives the share of all
//! samples in `HostPlatform::rcu_read_lock` — the figure the issue quoted
//! for the fenced reader (16 %) — as an independent view of the fence:
//!
//! ```text
//! rcu-reader: perf mode=fence rcu_read_lock=17.4% samples=387 of=2227 ns=131.0
//! rcu-reader: perf mode=membarrier rcu_read_lock=3.0% samples=61 of=2030 ns=112.4
//! ```
//!
//! A child that reports its readers in a mode other than the one asked
//! (membarrier refused here: both would fence) makes the command fail, as
//! the comparison would then be of a thing with itself.
//!
//! Touches: the child processes it starts (this binary) and stdout.

use std::fmt;
use std::path::Path;
use std::process::Command;
use std::time::Duration;

use super::proc::run_with_timeout;
use formats::output;

/// The reader mode a child runs with.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    /// `FS_RCU_READER=fence`: a SeqCst fence per outermost read lock.
    Fence,
    /// No override: fence-free readers, the advancer's membarrier.
    Membarrier,
}

impl Mode {
    pub fn name(self) -> &'static str {
        match self {
            Mode::Fence => "fence",
            Mode::Membarrier => "membarrier",
        }
    }
}

/// What to run.
#[derive(Clone, Copy, Debug)]
pub struct Config {
    pub rounds: u32,
    pub warmup: u32,
    pub secs: u32,
    pub no_pin: bool,
}

/// One run's figures.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Figures {
    /// Wall-clock ns per op of the run's fastest measured second
    /// (preemption only ever slows a second down).
    pub ns: f64,
    /// CPU ns per op: the child's user + system time over every operation
    /// it counted (warm-up included). A loaded machine's preemption does
    /// not enter it, so on a shared machine this is the figure to trust.
    pub cpu_ns: f64,
}

/// One round: both modes once.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Round {
    pub n: u32,
    pub first: Mode,
    pub fence: Figures,
    pub membarrier: Figures,
}

/// `(fence − membarrier) / fence` in percent.
pub fn gain_pct(fence_ns: f64, membarrier_ns: f64) -> f64 {
    if fence_ns > 0.0 {
        (fence_ns - membarrier_ns) / fence_ns * 100.0
    } else {
        0.0
    }
}

impl Round {
    pub fn gain_pct(&self) -> f64 {
        gain_pct(self.fence.ns, self.membarrier.ns)
    }
    pub fn cpu_gain_pct(&self) -> f64 {
        gain_pct(self.fence.cpu_ns, self.membarrier.cpu_ns)
    }
}

impl fmt::Display for Round {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "rcu-reader: round={} first={} fence_ns={:.1} membarrier_ns={:.1} gain={:.1}% fence_cpu_ns={:.1} membarrier_cpu_ns={:.1} cpu_gain={:.1}%",
            self.n,
            self.first.name(),
            self.fence.ns,
            self.membarrier.ns,
            self.gain_pct(),
            self.fence.cpu_ns,
            self.membarrier.cpu_ns,
            self.cpu_gain_pct()
        )
    }
}

/// The medians over all rounds.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Summary {
    pub rounds: u32,
    pub secs: u32,
    pub fence: Figures,
    pub membarrier: Figures,
    /// Medians of the per-round gains (each round's two runs are
    /// neighbours in time, so these shrug off drift best).
    pub round_gain_median: f64,
    pub round_cpu_gain_median: f64,
}

impl Summary {
    pub fn gain_pct(&self) -> f64 {
        gain_pct(self.fence.ns, self.membarrier.ns)
    }
    pub fn cpu_gain_pct(&self) -> f64 {
        gain_pct(self.fence.cpu_ns, self.membarrier.cpu_ns)
    }
}

impl fmt::Display for Summary {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "rcu-reader: median rounds={} secs={} fence_ns={:.1} membarrier_ns={:.1} gain={:.1}% round_gain_median={:.1}% fence_cpu_ns={:.1} membarrier_cpu_ns={:.1} cpu_gain={:.1}% round_cpu_gain_median={:.1}%",
            self.rounds,
            self.secs,
            self.fence.ns,
            self.membarrier.ns,
            self.gain_pct(),
            self.round_gain_median,
            self.fence.cpu_ns,
            self.membarrier.cpu_ns,
            self.cpu_gain_pct(),
            self.round_cpu_gain_median
        )
    }
}

/// The lower median (one real value, never a mean of two).
fn median(mut v: Vec<f64>) -> f64 {
    if v.is_empty() {
        return 0.0;
    }
    v.sort_by(f64::total_cmp);
    v[(v.len() - 1) / 2]
}

/// Medians of `rounds`.
pub fn summarize(rounds: &[Round], secs: u32) -> Summary {
    let m = |pick: &dyn Fn(&Round) -> f64| median(rounds.iter().map(pick).collect());
    Summary {
        rounds: rounds.len() as u32,
        secs,
        fence: Figures {
            ns: m(&|r| r.fence.ns),
            cpu_ns: m(&|r| r.fence.cpu_ns),
        },
        membarrier: Figures {
            ns: m(&|r| r.membarrier.ns),
            cpu_ns: m(&|r| r.membarrier.cpu_ns),
        },
        round_gain_median: m(&Round::gain_pct),
        round_cpu_gain_median: m(&Round::cpu_gain_pct),
    }
}

/// The child's command: `bench host …` in `mode`, run directly or, with
/// `perf_out`, under `perf record -e cpu-clock -o FILE`.
fn child_cmd(mode: Mode, cfg: &Config, perf_out: Option<&Path>) -> Result<Command, String> {
    let exe = std::env::current_exe().map_err(|e| format!("cannot find this program: {e}"))?;
    let mut cmd = match perf_out {
        None => Command::new(exe),
        Some(out) => {
            let mut c = Command::new("perf");
            c.args(["record", "-q", "-e", "cpu-clock", "-o"])
                .arg(out)
                .arg("--")
                .arg(exe);
            c
        }
    };
    cmd.arg("host");
    if cfg.no_pin {
        cmd.arg("--no-pin");
    }
    cmd.args([
        "bench=statneg",
        "design=noalloc",
        "tasks=1",
        &format!("warmup={}", cfg.warmup),
        &format!("secs={}", cfg.secs),
    ]);
    match mode {
        Mode::Fence => cmd.env("FS_RCU_READER", "fence"),
        Mode::Membarrier => cmd.env_remove("FS_RCU_READER"),
    };
    Ok(cmd)
}

/// One child run in `mode` (under perf with `perf_out`): its figures.
fn run_child(mode: Mode, cfg: &Config, perf_out: Option<&Path>) -> Result<Figures, String> {
    let cmd = child_cmd(mode, cfg, perf_out)?;
    let limit = Duration::from_secs(u64::from(cfg.warmup) + u64::from(cfg.secs) + 60);
    let f = run_with_timeout(cmd, limit)?;
    let what = format!("{} run", mode.name());
    if f.code != Some(0) {
        return Err(format!(
            "{what}: exit {:?}{}: {}",
            f.code,
            if f.timed_out { " (timeout)" } else { "" },
            f.stderr.trim()
        ));
    }
    // `bench host` names its reader mode on stderr: "membarrier" or
    // "fence (why)".
    let said = f
        .stderr
        .lines()
        .find_map(|l| l.strip_prefix("bench: host RCU readers: "))
        .unwrap_or("(not said)");
    if said.split(' ').next() != Some(mode.name()) {
        return Err(format!(
            "{what}: the child's readers ran as '{said}', not '{}'",
            mode.name()
        ));
    }
    let out = output::parse(&f.stdout).map_err(|e| format!("{what}: output: {e}"))?;
    if out.max_total() == 0 {
        return Err(format!("{what}: no operations measured"));
    }
    let cpu_ms: f64 = f
        .stderr
        .lines()
        .find_map(|l| l.strip_prefix("bench: cpu time: "))
        .and_then(|r| r.split(' ').next())
        .and_then(|ms| ms.parse().ok())
        .ok_or_else(|| format!("{what}: no 'bench: cpu time:' line on stderr"))?;
    let ops: u64 = out
        .warmup
        .iter()
        .chain(&out.measurement)
        .map(|s| s.total)
        .sum();
    Ok(Figures {
        ns: 1e9 / out.max_total() as f64,
        cpu_ns: cpu_ms * 1e6 / ops as f64,
    })
}

/// Run the A/B; `line` gets each round's line as it finishes.
pub fn run(cfg: &Config, line: &mut dyn FnMut(&str)) -> Result<Summary, String> {
    let mut rounds = Vec::new();
    for n in 1..=cfg.rounds {
        let order = if n % 2 == 1 {
            [Mode::Fence, Mode::Membarrier]
        } else {
            [Mode::Membarrier, Mode::Fence]
        };
        let (mut fence, mut membarrier) = (Figures::default(), Figures::default());
        for mode in order {
            let fig = run_child(mode, cfg, None)?;
            match mode {
                Mode::Fence => fence = fig,
                Mode::Membarrier => membarrier = fig,
            }
        }
        let r = Round {
            n,
            first: order[0],
            fence,
            membarrier,
        };
        line(&r.to_string());
        rounds.push(r);
    }
    Ok(summarize(&rounds, cfg.secs))
}

/// The symbol whose share `--perf` reports.
pub const READ_LOCK_SYMBOL: &str =
    "<fs::sync::host::HostPlatform as fs::platform::Platform>::rcu_read_lock";

/// What `perf` saw of one run: the read lock's share of the samples.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct PerfShare {
    pub mode: Mode,
    /// Percent of all samples in [`READ_LOCK_SYMBOL`].
    pub share_pct: f64,
    pub samples: u64,
    pub total_samples: u64,
    /// The run's own wall-clock ns/op (fastest second; perf's sampling
    /// slows it a little).
    pub ns: f64,
}

impl fmt::Display for PerfShare {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "rcu-reader: perf mode={} rcu_read_lock={:.1}% samples={} of={} ns={:.1}",
            self.mode.name(),
            self.share_pct,
            self.samples,
            self.total_samples,
            self.ns
        )
    }
}

/// From `perf report --stdio --no-children -n --sort symbol` text: the
/// share (percent) and sample count of `symbol`, and the sum of all rows'
/// samples. `None` if the symbol has no row.
pub fn parse_perf_report(text: &str, symbol: &str) -> Option<(f64, u64, u64)> {
    let mut total = 0;
    let mut found = None;
    for l in text.lines() {
        let mut w = l.split_whitespace();
        let (Some(pct), Some(n)) = (w.next(), w.next()) else {
            continue;
        };
        let (Some(pct), Ok(n)) = (
            pct.strip_suffix('%').and_then(|p| p.parse::<f64>().ok()),
            n.parse::<u64>(),
        ) else {
            continue;
        };
        total += n;
        if l.contains(symbol) {
            found = Some((pct, n));
        }
    }
    found.map(|(p, n)| (p, n, total))
}

/// One run per mode under `perf record -e cpu-clock` (no call graphs):
/// the read lock's share. Errors when perf is missing or refused.
pub fn perf_shares(cfg: &Config) -> Result<Vec<PerfShare>, String> {
    let mut out = Vec::new();
    for mode in [Mode::Fence, Mode::Membarrier] {
        let data = std::env::temp_dir().join(format!(
            "bench-rcu-reader-{}-{}.perf",
            std::process::id(),
            mode.name()
        ));
        let ns = run_child(mode, cfg, Some(&data));
        let report = ns.and_then(|fig| {
            let mut rep = Command::new("perf");
            rep.args([
                "report",
                "--stdio",
                "--no-children",
                "-n",
                "--sort",
                "symbol",
                "-i",
            ])
            .arg(&data);
            let f = run_with_timeout(rep, Duration::from_secs(120))?;
            if f.code != Some(0) {
                return Err(format!("perf report: {}", f.stderr.trim()));
            }
            let (share_pct, samples, total_samples) =
                parse_perf_report(&f.stdout, READ_LOCK_SYMBOL)
                    .ok_or_else(|| format!("perf report: no row for {READ_LOCK_SYMBOL}"))?;
            Ok(PerfShare {
                mode,
                share_pct,
                samples,
                total_samples,
                ns: fig.ns,
            })
        });
        let _ = std::fs::remove_file(&data);
        out.push(report.map_err(|e| format!("perf, {} run: {e}", mode.name()))?);
    }
    Ok(out)
}

/// Parse a `rcu-reader:` line (round or median) into its `key=value`
/// fields, `%` stripped; `None` unless it is one.
pub fn parse_line(l: &str) -> Option<Vec<(String, String)>> {
    let rest = l.trim_end_matches('\r').strip_prefix("rcu-reader: ")?;
    let mut fields = Vec::new();
    for w in rest.split(' ') {
        if (w == "median" || w == "perf") && fields.is_empty() {
            fields.push((w.to_string(), String::new()));
            continue;
        }
        let (k, v) = w.split_once('=')?;
        fields.push((k.to_string(), v.trim_end_matches('%').to_string()));
    }
    Some(fields)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn round(n: u32, f: (f64, f64), m: (f64, f64)) -> Round {
        Round {
            n,
            first: if n % 2 == 1 {
                Mode::Fence
            } else {
                Mode::Membarrier
            },
            fence: Figures {
                ns: f.0,
                cpu_ns: f.1,
            },
            membarrier: Figures {
                ns: m.0,
                cpu_ns: m.1,
            },
        }
    }

    #[test]
    fn medians_and_gain() {
        let rounds = [
            round(1, (120.0, 110.0), (100.0, 99.0)),
            round(2, (200.0, 100.0), (180.0, 90.0)),
            round(3, (100.0, 120.0), (90.0, 96.0)),
        ];
        let s = summarize(&rounds, 2);
        assert_eq!(
            s.fence,
            Figures {
                ns: 120.0,
                cpu_ns: 110.0
            }
        );
        assert_eq!(
            s.membarrier,
            Figures {
                ns: 100.0,
                cpu_ns: 96.0
            }
        );
        assert!((s.gain_pct() - 16.666).abs() < 0.01);
        // round gains 16.7, 10.0, 10.0 -> 10.0; cpu 10.0, 10.0, 20.0 -> 10.0
        assert!((s.round_gain_median - 10.0).abs() < 1e-9);
        assert!((s.round_cpu_gain_median - 10.0).abs() < 1e-9);
        assert_eq!(
            s.to_string(),
            "rcu-reader: median rounds=3 secs=2 fence_ns=120.0 membarrier_ns=100.0 gain=16.7% round_gain_median=10.0% fence_cpu_ns=110.0 membarrier_cpu_ns=96.0 cpu_gain=12.7% round_cpu_gain_median=10.0%"
        );
        assert_eq!(
            rounds[1].to_string(),
            "rcu-reader: round=2 first=membarrier fence_ns=200.0 membarrier_ns=180.0 gain=10.0% fence_cpu_ns=100.0 membarrier_cpu_ns=90.0 cpu_gain=10.0%"
        );
    }

    #[test]
    fn lines_parse_back() {
        let f = parse_line(
            "rcu-reader: round=2 first=membarrier fence_ns=200.0 membarrier_ns=180.0 gain=10.0%",
        )
        .unwrap();
        assert_eq!(f[0], ("round".into(), "2".into()));
        assert_eq!(f[4], ("gain".into(), "10.0".into()));
        let f = parse_line("rcu-reader: median rounds=3 secs=2 fence_ns=120.0 membarrier_ns=100.0 gain=16.7% round_gain_median=10.0% fence_cpu_ns=110.0 membarrier_cpu_ns=96.0 cpu_gain=12.7% round_cpu_gain_median=10.0%").unwrap();
        assert_eq!(f[0].0, "median");
        assert_eq!(f.len(), 11);
        let f = parse_line(
            "rcu-reader: perf mode=fence rcu_read_lock=17.4% samples=387 of=2227 ns=130.2",
        )
        .unwrap();
        assert_eq!(f[0].0, "perf");
        assert_eq!(f[2], ("rcu_read_lock".into(), "17.4".into()));
        assert!(parse_line("pingpong: transfer_ns=1").is_none());
        assert!(parse_line("rcu-reader: round").is_none());
    }

    #[test]
    fn perf_report_rows() {
        let text = "\
# Samples: 2K of event 'cpu-clock'
#
# Overhead       Samples  Symbol
# ........  ............  ......
#
    23.22%           517  [.] fs::namei::Nd::walk_component
    17.38%           387  [.] <fs::sync::host::HostPlatform as fs::platform::Platform>::rcu_read_lock
     0.05%             1  [k] do_syscall_64
";
        assert_eq!(
            parse_perf_report(text, READ_LOCK_SYMBOL),
            Some((17.38, 387, 905))
        );
        assert_eq!(parse_perf_report(text, "nothing_here"), None);
    }
}
