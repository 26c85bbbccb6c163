//! report.md from raw.csv rows: one table per source (with its accelerator
//! and host named), ratios between designs and to Linux, the goals
//! checked against the figures, and the runs that were skipped.
//!
//! Rows from several runs or hosts can be merged: tables group by
//! (source, accel, host), and repeated (testcase, design, cpus) rows within
//! a group are averaged where a ratio needs one figure.
//!
//! Touches nothing but the rows it is given.

use std::collections::BTreeSet;
use std::fmt::Write as _;

use super::rows::Row;

/// Display order and titles of the known sources.
const SOURCES: &[(&str, &str)] = &[
    ("guest", "Guest: this kernel under QEMU"),
    ("host", "Host mode: the fs crate on native host threads"),
    ("linux-host", "Linux on the host: stat() of a missing name"),
    (
        "linux-guest",
        "Linux reference guest under the same QEMU settings",
    ),
];

fn source_rank(s: &str) -> usize {
    SOURCES
        .iter()
        .position(|(n, _)| *n == s)
        .unwrap_or(SOURCES.len())
}

fn source_title(s: &str) -> String {
    SOURCES
        .iter()
        .find(|(n, _)| *n == s)
        .map(|(_, t)| t.to_string())
        .unwrap_or_else(|| s.to_string())
}

/// `12.34 M`, `567.8 k`, `12`.
pub fn human(v: f64) -> String {
    if v >= 1e6 {
        format!("{:.2} M", v / 1e6)
    } else if v >= 1e3 {
        format!("{:.1} k", v / 1e3)
    } else {
        format!("{v:.0}")
    }
}

fn opt3(v: Option<f64>) -> String {
    v.map(|v| format!("{v:.3}")).unwrap_or_else(|| "–".into())
}

/// The (source, accel, host) groups present, in display order.
fn groups(rows: &[Row]) -> Vec<(String, String, String)> {
    let mut g: Vec<(String, String, String)> = rows
        .iter()
        .filter(|r| r.is_ok())
        .map(|r| (r.source.clone(), r.accel.clone(), r.host.clone()))
        .collect::<BTreeSet<_>>()
        .into_iter()
        .collect();
    g.sort_by(|a, b| source_rank(&a.0).cmp(&source_rank(&b.0)).then(a.cmp(b)));
    g
}

/// Mean ops/s of the ok rows matching a group and a run.
fn ops(
    rows: &[Row],
    g: &(String, String, String),
    testcase: &str,
    design: &str,
    cpus: usize,
) -> Option<f64> {
    let v: Vec<f64> = rows
        .iter()
        .filter(|r| {
            r.is_ok()
                && r.source == g.0
                && r.accel == g.1
                && r.host == g.2
                && r.testcase == testcase
                && r.design == design
                && r.cpus == cpus
        })
        .map(|r| r.average as f64)
        .collect();
    (!v.is_empty()).then(|| v.iter().sum::<f64>() / v.len() as f64)
}

/// Mean ops/s for a source on a host (any accelerator).
fn ops_any_accel(
    rows: &[Row],
    source: &str,
    host: &str,
    testcase: &str,
    design: &str,
    cpus: usize,
) -> Option<f64> {
    let v: Vec<f64> = rows
        .iter()
        .filter(|r| {
            r.is_ok()
                && r.source == source
                && r.host == host
                && r.testcase == testcase
                && r.design == design
                && r.cpus == cpus
        })
        .map(|r| r.average as f64)
        .collect();
    (!v.is_empty()).then(|| v.iter().sum::<f64>() / v.len() as f64)
}

fn design_rank(d: &str) -> (usize, &str) {
    let r = match d {
        "transient" => 0,
        "negative" => 1,
        "noalloc" => 2,
        _ => 3,
    };
    (r, d)
}

fn ratio(a: Option<f64>, b: Option<f64>) -> String {
    match (a, b) {
        (Some(a), Some(b)) if b > 0.0 => format!("{:.2}×", a / b),
        _ => "–".into(),
    }
}

/// The whole report.md text.
pub fn render(rows: &[Row]) -> String {
    let mut s = String::new();
    let ok = rows.iter().filter(|r| r.is_ok()).count();
    let _ = writeln!(s, "# Lookup benchmark report\n");
    let _ = writeln!(
        s,
        "{ok} runs measured, {} not run. Figures are operations per second over the measured \
         seconds (will-it-scale's `average`). Scaling efficiency = ops/s at N CPUs ÷ (N × ops/s at \
         1 CPU). Per-op counters are the fs crate's counter deltas over the measured window ÷ \
         operations; they do not depend on the accelerator, so they carry across sources.\n",
        rows.len() - ok
    );
    let _ = writeln!(
        s,
        "Under QEMU's TCG everything but contended cache-line transfers slows 6–15×, which dilutes \
         contention: guest (TCG) scaling is not native scaling. Host mode runs the same fs code and \
         workloads on native threads; the Linux rows are the same measurement on the host kernel \
         and in a Linux guest.\n"
    );

    let groups = groups(rows);
    for g in &groups {
        write_group(&mut s, rows, g);
    }
    write_design_ratios(&mut s, rows, &groups);
    write_linux_ratios(&mut s, rows, &groups);
    write_goals(&mut s, rows);

    let not_run: Vec<&Row> = rows.iter().filter(|r| !r.is_ok()).collect();
    if !not_run.is_empty() {
        let _ = writeln!(s, "## Not run\n");
        let _ = writeln!(
            s,
            "| source | host | testcase | design | CPUs | status | reason |"
        );
        let _ = writeln!(s, "|---|---|---|---|---:|---|---|");
        for r in not_run {
            let _ = writeln!(
                s,
                "| {} | {} | {} | {} | {} | {} | {} |",
                r.source,
                r.host,
                r.testcase,
                r.design,
                r.cpus,
                r.status,
                r.note.replace('|', "\\|")
            );
        }
        s.push('\n');
    }
    s
}

fn write_group(s: &mut String, rows: &[Row], g: &(String, String, String)) {
    let _ = writeln!(
        s,
        "## {} — source `{}`, accel `{}`, host `{}`\n",
        source_title(&g.0),
        g.0,
        g.1,
        g.2
    );
    let _ = writeln!(
        s,
        "| testcase | design | CPUs | ops/s | per-CPU ops/s | scaling eff. | min–max ops/s | allocs/op | shared_stores/op | fallbacks/op | locks/op |"
    );
    let _ = writeln!(s, "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
    let mut mine: Vec<&Row> = rows
        .iter()
        .filter(|r| r.is_ok() && r.source == g.0 && r.accel == g.1 && r.host == g.2)
        .collect();
    mine.sort_by(|a, b| {
        a.testcase
            .cmp(&b.testcase)
            .then(design_rank(&a.design).cmp(&design_rank(&b.design)))
            .then(a.cpus.cmp(&b.cpus))
    });
    for r in mine {
        let avg = r.average as f64;
        let per_cpu = avg / r.cpus.max(1) as f64;
        let eff = ops(rows, g, &r.testcase, &r.design, 1)
            .filter(|one| *one > 0.0)
            .map(|one| format!("{:.0} %", 100.0 * avg / (r.cpus as f64 * one)))
            .unwrap_or_else(|| "–".into());
        let _ = writeln!(
            s,
            "| {} | {} | {} | {} | {} | {} | {}–{} | {} | {} | {} | {} |",
            r.testcase,
            r.design,
            r.cpus,
            human(avg),
            human(per_cpu),
            eff,
            human(r.min as f64),
            human(r.max as f64),
            opt3(r.allocs),
            opt3(r.shared_stores),
            opt3(r.fallbacks),
            opt3(r.locks)
        );
    }
    s.push('\n');
}

/// Other designs ÷ transient (Linux's behaviour), per group, testcase, CPUs.
fn write_design_ratios(s: &mut String, rows: &[Row], groups: &[(String, String, String)]) {
    let mut lines = Vec::new();
    for g in groups.iter().filter(|g| !g.0.starts_with("linux")) {
        let mut keys: Vec<(String, usize)> = rows
            .iter()
            .filter(|r| r.is_ok() && r.source == g.0 && r.accel == g.1 && r.host == g.2)
            .map(|r| (r.testcase.clone(), r.cpus))
            .collect::<BTreeSet<_>>()
            .into_iter()
            .collect();
        keys.sort();
        for (t, c) in keys {
            let tr = ops(rows, g, &t, "transient", c);
            let ne = ops(rows, g, &t, "negative", c);
            let na = ops(rows, g, &t, "noalloc", c);
            lines.push(format!(
                "| {} | {} | {} | {} | {} | {} | {} | {} |",
                g.0,
                g.1,
                g.2,
                t,
                c,
                ratio(ne, tr),
                ratio(na, tr),
                ratio(na, ne)
            ));
        }
    }
    if lines.is_empty() {
        return;
    }
    let _ = writeln!(s, "## Designs compared (ops/s ratios)\n");
    let _ = writeln!(s, "| source | accel | host | testcase | CPUs | negative ÷ transient | noalloc ÷ transient | noalloc ÷ negative |");
    let _ = writeln!(s, "|---|---|---|---|---:|---:|---:|---:|");
    for l in lines {
        let _ = writeln!(s, "{l}");
    }
    s.push('\n');
}

/// statneg of each design ÷ the Linux references on the same host at the
/// same CPU count: host mode against host Linux, the guest against the
/// Linux guest.
fn write_linux_ratios(s: &mut String, rows: &[Row], groups: &[(String, String, String)]) {
    let refs: Vec<String> = rows
        .iter()
        .filter(|r| r.is_ok() && r.source.starts_with("linux"))
        .map(|r| r.design.clone())
        .collect::<BTreeSet<_>>()
        .into_iter()
        .collect();
    if refs.is_empty() {
        return;
    }
    let mut lines = Vec::new();
    for g in groups.iter().filter(|g| g.0 == "host" || g.0 == "guest") {
        let ref_source = if g.0 == "host" {
            "linux-host"
        } else {
            "linux-guest"
        };
        let mut mine: Vec<&Row> = rows
            .iter()
            .filter(|r| {
                r.is_ok()
                    && r.source == g.0
                    && r.accel == g.1
                    && r.host == g.2
                    && r.testcase == "statneg"
            })
            .collect();
        mine.sort_by(|a, b| {
            design_rank(&a.design)
                .cmp(&design_rank(&b.design))
                .then(a.cpus.cmp(&b.cpus))
        });
        for r in mine {
            let cells: Vec<String> = refs
                .iter()
                .map(|d| {
                    ratio(
                        Some(r.average as f64),
                        ops_any_accel(rows, ref_source, &g.2, "statneg", d, r.cpus),
                    )
                })
                .collect();
            if cells.iter().all(|c| c == "–") {
                continue;
            }
            lines.push(format!(
                "| {} | {} | {} | {} | {} | {} |",
                g.0,
                g.2,
                r.design,
                r.cpus,
                human(r.average as f64),
                cells.join(" | ")
            ));
        }
    }
    if lines.is_empty() {
        return;
    }
    let _ = writeln!(
        s,
        "## Against Linux (statneg ops/s ÷ Linux's on the same host and CPU count)\n"
    );
    let _ = writeln!(
        s,
        "Host mode is compared with `linux-host`, the guest with `linux-guest`.\n\n| source | host | design | CPUs | ops/s | {} |",
        refs.iter().map(|d| format!("÷ {d}")).collect::<Vec<_>>().join(" | ")
    );
    let _ = writeln!(s, "|---|---|---|---:|---:|{}", "---:|".repeat(refs.len()));
    for l in lines {
        let _ = writeln!(s, "{l}");
    }
    s.push('\n');
}

/// The goals, checked where the figures exist.
fn write_goals(s: &mut String, rows: &[Row]) {
    let mut lines = Vec::new();
    let mark = |ok: bool| if ok { "met" } else { "NOT met" };
    let hosts: BTreeSet<(String, String)> = rows
        .iter()
        .filter(|r| r.is_ok() && r.source == "host")
        .map(|r| (r.accel.clone(), r.host.clone()))
        .collect();
    for (accel, host) in &hosts {
        let g = ("host".to_string(), accel.clone(), host.clone());
        let na1 = ops(rows, &g, "statneg", "noalloc", 1);
        let na2 = ops(rows, &g, "statneg", "noalloc", 2);
        let tr1 = ops(rows, &g, "statneg", "transient", 1);
        let tr2 = ops(rows, &g, "statneg", "transient", 2);
        if let (Some(a), Some(b)) = (na1, na2) {
            let r = b / a;
            lines.push(format!(
                "| host `{host}` | noalloc statneg 2 tasks ≥ 1.9 × 1 task | {r:.2}× | {} |",
                mark(r >= 1.9)
            ));
        }
        if let (Some(a), Some(b)) = (tr1, tr2) {
            let r = b / a;
            lines.push(format!(
                "| host `{host}` | transient statneg 2 tasks ≤ 1.3 × 1 task | {r:.2}× | {} |",
                mark(r <= 1.3)
            ));
        }
        if let (Some(a), Some(b)) = (na2, tr2) {
            let r = a / b;
            lines.push(format!(
                "| host `{host}` | noalloc ÷ transient at 2 tasks ≥ 5× | {r:.2}× | {} |",
                mark(r >= 5.0)
            ));
        }
    }
    for r in rows.iter().filter(|r| {
        r.is_ok() && (r.source == "host" || r.source == "guest") && r.testcase == "statneg"
    }) {
        let (Some(a), Some(ss)) = (r.allocs, r.shared_stores) else {
            continue;
        };
        let who = format!("{} `{}` {} CPUs", r.source, r.host, r.cpus);
        match r.design.as_str() {
            "noalloc" => lines.push(format!(
                "| {who} | noalloc per op: allocs = 0, shared_stores = 0 | allocs={a:.3} shared_stores={ss:.3} | {} |",
                mark(a == 0.0 && ss == 0.0)
            )),
            "transient" => lines.push(format!(
                "| {who} | transient per op: allocs ≥ 1, shared_stores ≥ 4 | allocs={a:.3} shared_stores={ss:.3} | {} |",
                mark(a >= 1.0 && ss >= 4.0)
            )),
            _ => {}
        }
    }
    if lines.is_empty() {
        return;
    }
    let _ = writeln!(s, "## Goals of issue 4\n");
    let _ = writeln!(s, "| where | goal | measured | verdict |");
    let _ = writeln!(s, "|---|---|---|---|");
    for l in lines {
        let _ = writeln!(s, "{l}");
    }
    s.push('\n');
}
