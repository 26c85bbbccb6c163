//! The host's load around a run, for raw.csv's `loadavg`, `steal`,
//! `eff_cpus` and `others_cpus` columns: `/proc/loadavg`'s 1-minute
//! figure, the share of the `cpu` line of `/proc/stat` that went to
//! `steal` between two readings, and the CPU the run's own processes used
//! ([`super::super::proc::children_cpu_ms`]) against the busy time of all
//! CPUs over the same window ([`cpu_use`]; [`around`] measures one run
//! for the fidelity windows). Everything is `None` where
//! /proc is not Linux's.
//!
//! Touches: reads `/proc/loadavg`, `/proc/stat` and `/proc/self/stat`.

/// Jiffies (1/100 s, Linux's `USER_HZ`) per second.
const HZ: f64 = 100.0;

/// The aggregate `cpu` line of `/proc/stat`: (all jiffies, steal jiffies,
/// busy jiffies).
pub fn cpu_times() -> Option<(u64, u64, u64)> {
    parse_cpu_times(&std::fs::read_to_string("/proc/stat").ok()?)
}

/// (all, steal, busy) jiffies of a `/proc/stat` text's `cpu ` line: user
/// nice system idle iowait irq softirq steal (guest and guest_nice are
/// already counted in user and nice, so they are left out of the sum);
/// busy is user + nice + system + irq + softirq, the time some task or
/// interrupt of this machine ran (idle, iowait and steal are not).
pub fn parse_cpu_times(stat: &str) -> Option<(u64, u64, u64)> {
    let line = stat.lines().find(|l| l.starts_with("cpu "))?;
    let v: Vec<u64> = line
        .split_ascii_whitespace()
        .skip(1)
        .take(8)
        .map(|x| x.parse().ok())
        .collect::<Option<_>>()?;
    if v.len() < 8 {
        return None;
    }
    Some((v.iter().sum(), v[7], v[0] + v[1] + v[2] + v[5] + v[6]))
}

/// Percent of the CPU time between two readings that was stolen.
pub fn steal_percent(
    before: Option<(u64, u64, u64)>,
    after: Option<(u64, u64, u64)>,
) -> Option<f64> {
    let ((t0, s0, _), (t1, s1, _)) = (before?, after?);
    let total = t1.checked_sub(t0).filter(|t| *t > 0)?;
    let steal = s1.checked_sub(s0)?;
    Some(100.0 * steal as f64 / total as f64)
}

/// What a run got and what the rest of the machine used meanwhile, in
/// CPUs (CPU seconds per wall second): `(eff_cpus, others_cpus)`.
/// `own_ms` is the run's own CPU time (its processes' user + system),
/// `busy` the two `/proc/stat` readings around it and `wall_s` the
/// seconds between them. Others are every CPU's busy time less the run's
/// own, never below 0 (the two clocks tick apart: the run's CPU time is
/// charged in whole ticks when its processes end). `None` without a
/// window or a reading.
pub fn cpu_use(
    own_ms: Option<u64>,
    before: Option<(u64, u64, u64)>,
    after: Option<(u64, u64, u64)>,
    wall_s: f64,
) -> (Option<f64>, Option<f64>) {
    if wall_s <= 0.0 {
        return (None, None);
    }
    let own = own_ms.map(|ms| ms as f64 / 1000.0);
    let busy = before
        .zip(after)
        .and_then(|((_, _, b0), (_, _, b1))| b1.checked_sub(b0))
        .map(|j| j as f64 / HZ);
    let others = own.zip(busy).map(|(o, b)| ((b - o) / wall_s).max(0.0));
    (own.map(|o| o / wall_s), others)
}

/// What the machine did around one run of `f` (its child processes
/// included): the CPUs the run got, what everyone else used, and steal.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Around {
    pub eff_cpus: Option<f64>,
    pub others_cpus: Option<f64>,
    pub steal: Option<f64>,
}

impl Around {
    /// ` eff_cpus=E others_cpus=O steal=S` (two decimals; `none` for a
    /// figure /proc could not give), for a result line.
    pub fn words(&self) -> String {
        let f = |v: Option<f64>| v.map_or("none".to_string(), |v| format!("{v:.2}"));
        format!(
            " eff_cpus={} others_cpus={} steal={}",
            f(self.eff_cpus),
            f(self.others_cpus),
            f(self.steal)
        )
    }
}

/// Run `f`, whose work is child processes it starts and waits for, and
/// measure the machine around it ([`cpu_use`], [`steal_percent`]).
pub fn around<T>(f: impl FnOnce() -> T) -> (T, Around) {
    let own0 = crate::proc::children_cpu_ms();
    let stat0 = cpu_times();
    let t0 = std::time::Instant::now();
    let out = f();
    let wall = t0.elapsed().as_secs_f64();
    let stat1 = cpu_times();
    let own = own0
        .zip(crate::proc::children_cpu_ms())
        .and_then(|(a, b)| b.checked_sub(a));
    let (eff_cpus, others_cpus) = cpu_use(own, stat0, stat1, wall);
    let steal = steal_percent(stat0, stat1);
    (
        out,
        Around {
            eff_cpus,
            others_cpus,
            steal,
        },
    )
}

/// The 1-minute load average.
pub fn loadavg() -> Option<f64> {
    parse_loadavg(&std::fs::read_to_string("/proc/loadavg").ok()?)
}

/// The first field of a `/proc/loadavg` text.
pub fn parse_loadavg(text: &str) -> Option<f64> {
    text.split_ascii_whitespace().next()?.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn around_a_child_counts_its_cpu_and_says_so() {
        // A child that spins for a few tenths of a second on one CPU.
        let (st, a) = around(|| {
            std::process::Command::new("sh")
                .args(["-c", "i=0; while [ $i -lt 300000 ]; do i=$((i+1)); done"])
                .status()
                .unwrap()
        });
        assert!(st.success());
        // At least what it spun (the other tests of this binary run in
        // parallel and their children count too, so no upper bound).
        let e = a.eff_cpus.expect("children's CPU time");
        assert!(e > 0.1, "{a:?}");
        assert!(a.others_cpus.is_some_and(|o| o >= 0.0), "{a:?}");
        assert!(a.steal.is_some(), "{a:?}");
        assert!(a.words().starts_with(" eff_cpus="), "{}", a.words());
        assert_eq!(
            Around::default().words(),
            " eff_cpus=none others_cpus=none steal=none"
        );
    }

    #[test]
    fn steal_is_the_stolen_share_of_the_cpu_line() {
        let a = "cpu  100 0 50 800 10 0 0 40 5 0\ncpu0 1 2 3 4 5 6 7 8 9 10\n";
        let b = "cpu  150 0 70 900 10 0 0 60 9 0\n";
        let (ta, tb) = (parse_cpu_times(a), parse_cpu_times(b));
        assert_eq!(ta, Some((1000, 40, 150)));
        // 20 stolen of 190 jiffies.
        let p = steal_percent(ta, tb).unwrap();
        assert!((p - 100.0 * 20.0 / 190.0).abs() < 1e-9, "{p}");
        assert_eq!(steal_percent(tb, ta), None, "a clock that went back");
        assert_eq!(parse_cpu_times("cpu  1 2 3\n"), None);
        assert_eq!(parse_loadavg("1.52 0.90 0.41 3/512 4242\n"), Some(1.52));
        assert_eq!(parse_loadavg(""), None);
    }

    #[test]
    fn others_are_the_busy_time_less_the_runs_own() {
        // 4 s of wall time; busy rose by 900 jiffies (9 CPU s); the run
        // used 7.2 s: it had 1.8 CPUs, everyone else 0.45.
        let a = Some((0, 0, 1000));
        let b = Some((1600, 0, 1900));
        let (eff, others) = cpu_use(Some(7200), a, b, 4.0);
        assert!((eff.unwrap() - 1.8).abs() < 1e-9, "{eff:?}");
        assert!((others.unwrap() - 0.45).abs() < 1e-9, "{others:?}");
        // Own time charged past the busy ticks: others 0, not negative.
        assert_eq!(cpu_use(Some(9500), a, b, 4.0).1, Some(0.0));
        // Without a reading, no others; without a window, nothing.
        assert_eq!(cpu_use(Some(7200), None, b, 4.0), (Some(1.8), None));
        assert_eq!(cpu_use(None, a, b, 4.0), (None, None));
        assert_eq!(cpu_use(Some(1), a, b, 0.0), (None, None));
    }
}
