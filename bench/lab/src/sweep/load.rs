//! The host's load around a run, for raw.csv's `loadavg` and `steal`
//! columns: `/proc/loadavg`'s 1-minute figure, and the share of the
//! `cpu` line of `/proc/stat` that went to `steal` between two readings.
//! Everything is `None` where /proc is not Linux's.
//!
//! Touches: reads `/proc/loadavg` and `/proc/stat`.

/// The aggregate `cpu` line of `/proc/stat`: (all jiffies, steal jiffies).
pub fn cpu_times() -> Option<(u64, u64)> {
    parse_cpu_times(&std::fs::read_to_string("/proc/stat").ok()?)
}

/// (all, steal) jiffies of a `/proc/stat` text's `cpu ` line: user nice
/// system idle iowait irq softirq steal (guest and guest_nice are already
/// counted in user and nice, so they are left out of the sum).
pub fn parse_cpu_times(stat: &str) -> Option<(u64, u64)> {
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
    Some((v.iter().sum(), v[7]))
}

/// Percent of the CPU time between two readings that was stolen.
pub fn steal_percent(before: Option<(u64, u64)>, after: Option<(u64, u64)>) -> Option<f64> {
    let ((t0, s0), (t1, s1)) = (before?, after?);
    let total = t1.checked_sub(t0).filter(|t| *t > 0)?;
    let steal = s1.checked_sub(s0)?;
    Some(100.0 * steal as f64 / total as f64)
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
    fn steal_is_the_stolen_share_of_the_cpu_line() {
        let a = "cpu  100 0 50 800 10 0 0 40 5 0\ncpu0 1 2 3 4 5 6 7 8 9 10\n";
        let b = "cpu  150 0 70 900 10 0 0 60 9 0\n";
        let (ta, tb) = (parse_cpu_times(a), parse_cpu_times(b));
        assert_eq!(ta, Some((1000, 40)));
        // 20 stolen of 190 jiffies.
        let p = steal_percent(ta, tb).unwrap();
        assert!((p - 100.0 * 20.0 / 190.0).abs() < 1e-9, "{p}");
        assert_eq!(steal_percent(tb, ta), None, "a clock that went back");
        assert_eq!(parse_cpu_times("cpu  1 2 3\n"), None);
        assert_eq!(parse_loadavg("1.52 0.90 0.41 3/512 4242\n"), Some(1.52));
        assert_eq!(parse_loadavg(""), None);
    }
}
