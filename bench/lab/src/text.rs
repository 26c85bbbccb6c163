//! `bench report --text DIR…`: a plain-text summary for a mailing list, every
//! line at most [`WIDTH`] columns: per design and Linux row, median ops/s at
//! each CPU count with the scaling from 1 CPU, the per-op counters, and the
//! SMB `ls -la` table (from the `lsla …` lines of an smb-sweep's smb.md).
//!
//! Touches: reads `DIR/raw.csv` and `DIR/smb.md` (either may be missing).

use std::collections::BTreeMap;
use std::path::Path;

use super::rows::{self, Row};

/// The widest line written.
pub const WIDTH: usize = 72;

/// The summary of the result directories `dirs`.
pub fn render_dirs(dirs: &[&Path]) -> Result<String, String> {
    let mut all = Vec::new();
    let mut lsla = Vec::new();
    for d in dirs {
        let csv = if d.is_file() {
            d.to_path_buf()
        } else {
            d.join("raw.csv")
        };
        if csv.is_file() {
            all.extend(rows::read(&csv)?);
        }
        if let Ok(md) = std::fs::read_to_string(d.join("smb.md")) {
            lsla.extend(
                md.lines()
                    .filter(|l| l.starts_with("lsla "))
                    .map(str::to_string),
            );
        }
    }
    if all.is_empty() && lsla.is_empty() {
        return Err("no raw.csv or smb.md with lsla lines in the given directories".into());
    }
    Ok(render(&all, &lsla))
}

fn median(mut v: Vec<f64>) -> Option<f64> {
    if v.is_empty() {
        return None;
    }
    v.sort_by(|a, b| a.total_cmp(b));
    Some(v[v.len() / 2])
}

fn ops(v: f64) -> String {
    if v >= 1e6 {
        format!("{:.2}M", v / 1e6)
    } else if v >= 1e3 {
        format!("{:.1}k", v / 1e3)
    } else {
        format!("{v:.0}")
    }
}

fn f3(v: Option<f64>) -> String {
    v.map_or("-".into(), |v| format!("{v:.3}"))
}

/// The summary of `rows` (ok runs only, medians over repetitions) and of
/// the `lsla …` lines.
pub fn render(rows: &[Row], lsla: &[String]) -> String {
    type Key = (String, String, String);
    let mut points: BTreeMap<(Key, usize), Vec<&Row>> = BTreeMap::new();
    for r in rows.iter().filter(|r| r.is_ok()) {
        let key = (r.testcase.clone(), r.source.clone(), r.design.clone());
        points.entry((key, r.cpus)).or_default().push(r);
    }
    let mut cpus: Vec<usize> = points.keys().map(|(_, c)| *c).collect();
    cpus.sort_unstable();
    cpus.dedup();
    let cpus: Vec<usize> = cpus.into_iter().take(3).collect();
    let mut s = String::new();
    if !points.is_empty() {
        s.push_str("stat() of a missing name: median ops/s per CPU count\n\n");
        let mut head = format!("{:<24}", "source/design");
        for c in &cpus {
            head.push_str(&format!("{:>10}", format!("{c} CPU")));
        }
        head.push_str(&format!("{:>9}", "scaling"));
        s.push_str(&head);
        s.push('\n');
        let mut keys: Vec<&Key> = points.keys().map(|(k, _)| k).collect();
        keys.dedup();
        for k in &keys {
            let med = |c: usize| {
                median(
                    points
                        .get(&((*k).clone(), c))
                        .map(|v| v.iter().map(|r| r.average as f64).collect())
                        .unwrap_or_default(),
                )
            };
            let name = format!("{}/{}", short(&k.1), k.2);
            let mut line = format!("{:<24}", clip(&name, 23));
            for c in &cpus {
                line.push_str(&format!("{:>10}", med(*c).map_or("-".into(), ops)));
            }
            let scaling = match (
                cpus.first().and_then(|c| med(*c)),
                cpus.last().and_then(|c| med(*c)),
            ) {
                (Some(a), Some(b)) if a > 0.0 && cpus.len() > 1 => format!("{:.2}x", b / a),
                _ => "-".into(),
            };
            line.push_str(&format!("{scaling:>9}"));
            s.push_str(&line);
            s.push('\n');
        }
        s.push_str("\nper-op counters (median; Linux rows: kprobe counting run)\n\n");
        s.push_str(&format!(
            "{:<24}{:>4}{:>9}{:>9}{:>9}{:>9}\n",
            "source/design", "CPU", "allocs", "locks", "fallbk", "shared"
        ));
        for ((k, c), v) in &points {
            let m = |f: fn(&Row) -> Option<f64>| median(v.iter().filter_map(|r| f(r)).collect());
            let (a, l, fb, sh) = (
                m(|r| r.allocs),
                m(|r| r.locks),
                m(|r| r.fallbacks),
                m(|r| r.shared_stores),
            );
            if a.is_none() && l.is_none() {
                continue;
            }
            let name = format!("{}/{}", short(&k.1), k.2);
            s.push_str(&format!(
                "{:<24}{:>4}{:>9}{:>9}{:>9}{:>9}\n",
                clip(&name, 23),
                c,
                f3(a),
                f3(l),
                f3(fb),
                f3(sh)
            ));
        }
    }
    if !lsla.is_empty() {
        if !s.is_empty() {
            s.push('\n');
        }
        s.push_str("ls -la of a 511-entry share (relay counts; QI = QUERY_INFO;\n");
        s.push_str("ls = the coreutils version of a Linux row)\n\n");
        s.push_str(&format!(
            "{:<24}{:>4}{:>8}{:>6}{:>6}{:>8}{:>6}{:>6}{:>4}\n",
            "design", "RTT", "cold s", "RTs", "QI", "warm s", "RTs", "QI", "ls"
        ));
        for l in lsla {
            let kv: BTreeMap<&str, &str> = l
                .split_whitespace()
                .filter_map(|w| w.split_once('='))
                .collect();
            let g = |k: &str| kv.get(k).copied().unwrap_or("-");
            s.push_str(&format!(
                "{:<24}{:>4}{:>8}{:>6}{:>6}{:>8}{:>6}{:>6}{:>4}\n",
                clip(g("design"), 23),
                g("rtt_ms"),
                g("cold_s"),
                g("cold_round_trips"),
                g("cold_query_info"),
                g("warm_s"),
                g("warm_round_trips"),
                g("warm_query_info"),
                clip(g("ls"), 3)
            ));
        }
    }
    s
}

/// `linux-guest` → `lguest`, … : sources short enough for the column.
fn short(source: &str) -> &str {
    match source {
        "linux-guest" => "lguest",
        "linux-host" => "lhost",
        s => s,
    }
}

fn clip(s: &str, n: usize) -> String {
    if s.chars().count() <= n {
        s.to_string()
    } else {
        s.chars().take(n).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(source: &str, design: &str, cpus: usize, avg: u64, allocs: Option<f64>) -> Row {
        Row {
            source: source.into(),
            testcase: "statneg".into(),
            design: design.into(),
            cpus,
            average: avg,
            allocs,
            locks: allocs.map(|a| a * 6.0),
            fallbacks: allocs,
            status: "ok".into(),
            rep: 1,
            ..Row::default()
        }
    }

    #[test]
    fn fits_in_72_columns_and_carries_the_figures() {
        let rows = vec![
            row("guest", "transient", 1, 83_700, Some(1.0)),
            row("guest", "transient", 2, 189_200, Some(0.594)),
            row(
                "linux-guest",
                "linux-tmpfs-with-a-very-long-name",
                1,
                112_076,
                Some(1.0),
            ),
            row(
                "linux-guest",
                "linux-tmpfs-with-a-very-long-name",
                2,
                44_461,
                Some(0.541),
            ),
        ];
        let lsla = vec!["lsla design=linux-6.12+noserverino rtt_ms=76 entries=511 cold_s=1.687 cold_round_trips=5 warm_s=1.763 warm_round_trips=5 cold_query_info=0 warm_query_info=0 ls=9.7".to_string()];
        let t = render(&rows, &lsla);
        for l in t.lines() {
            assert!(
                l.chars().count() <= WIDTH,
                "{} columns: {l}",
                l.chars().count()
            );
        }
        assert!(
            t.contains("83.7k") && t.contains("189.2k") && t.contains("2.26x"),
            "{t}"
        );
        assert!(
            t.contains("0.594") && t.contains("linux-6.12+noserverino"),
            "{t}"
        );
        assert!(t.contains("0.40x"), "{t}");
        assert!(
            t.lines()
                .any(|l| l.starts_with("linux-6.12+noserverino") && l.ends_with(" 9.7")),
            "{t}"
        );
    }
}
