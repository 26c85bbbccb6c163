//! `bench rcu-reader` end to end, briefly (1 s runs): every line it prints
//! parses, the rounds alternate which mode goes first, both modes measured
//! something (wall and CPU ns/op), the gains follow from the figures, and
//! the median line's figures are medians of the rounds'.
//! With `--perf` (needs `perf`, `make setup` installs linux-perf), the two
//! perf lines parse and the fenced reader's `rcu_read_lock` holds a share
//! of the samples. Timing itself is not checked (the figures are for
//! people to read).

use std::process::Command;

use benchlab::rcureader::parse_line;

fn field<'a>(f: &'a [(String, String)], k: &str) -> &'a str {
    f.iter()
        .find(|(key, _)| key == k)
        .map(|(_, v)| v.as_str())
        .unwrap_or_else(|| panic!("no {k}= in {f:?}"))
}

fn num(f: &[(String, String)], k: &str) -> f64 {
    field(f, k)
        .parse()
        .unwrap_or_else(|e| panic!("{k}={}: {e}", field(f, k)))
}

/// How far a gain (%) recomputed from `f` and `m` as printed (one decimal)
/// may lie from the printed gain, itself rounded to one decimal: the
/// gain `100 (f - m) / f` moves by at most `100 (dm / f + m df / f²)`
/// when `f` and `m` move by `df, dm <= 0.05`.
fn rounding(f: f64, m: f64) -> f64 {
    100.0 * (0.05 / f + m * 0.05 / (f * f)) + 0.05 + 1e-9
}

/// `bench rcu-reader` with 1 s runs, no warm-up and `extra`; must succeed.
/// Its stdout.
fn run_ok(extra: &[&str]) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_bench"))
        .args(["rcu-reader", "--secs", "1", "--warmup", "0"])
        .args(extra)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "exit {:?}\nstdout:\n{stdout}\nstderr:\n{stderr}",
        out.status
    );
    stdout
}

#[test]
fn rcu_reader_ab_prints_rounds_and_medians() {
    let stdout = run_ok(&["--rounds", "3"]);
    let lines: Vec<&str> = stdout.lines().collect();
    assert_eq!(lines.len(), 4, "3 rounds and a median line:\n{stdout}");
    let rounds: Vec<_> = lines[..3]
        .iter()
        .map(|l| parse_line(l).unwrap_or_else(|| panic!("does not parse: {l}")))
        .collect();
    let (mut fence, mut memb) = (Vec::new(), Vec::new());
    let (mut fence_cpu, mut memb_cpu) = (Vec::new(), Vec::new());
    for (i, r) in rounds.iter().enumerate() {
        assert_eq!(field(r, "round"), (i + 1).to_string());
        let first = if i % 2 == 0 { "fence" } else { "membarrier" };
        assert_eq!(field(r, "first"), first, "{}", lines[i]);
        let (f, m) = (num(r, "fence_ns"), num(r, "membarrier_ns"));
        assert!(f > 0.0 && m > 0.0, "{}", lines[i]);
        let gain = num(r, "gain");
        assert!(
            (gain - (f - m) / f * 100.0).abs() <= rounding(f, m),
            "gain {gain} from {f} and {m}"
        );
        let (fc, mc) = (num(r, "fence_cpu_ns"), num(r, "membarrier_cpu_ns"));
        assert!(fc > 0.0 && mc > 0.0, "{}", lines[i]);
        let cpu_gain = num(r, "cpu_gain");
        assert!(
            (cpu_gain - (fc - mc) / fc * 100.0).abs() <= rounding(fc, mc),
            "cpu_gain {cpu_gain} from {fc} and {mc}"
        );
        fence.push(f);
        memb.push(m);
        fence_cpu.push(fc);
        memb_cpu.push(mc);
    }
    let m = parse_line(lines[3]).unwrap_or_else(|| panic!("does not parse: {}", lines[3]));
    assert_eq!(m[0].0, "median", "{}", lines[3]);
    assert_eq!(field(&m, "rounds"), "3");
    assert_eq!(field(&m, "secs"), "1");
    fence.sort_by(f64::total_cmp);
    memb.sort_by(f64::total_cmp);
    assert_eq!(num(&m, "fence_ns"), fence[1], "{stdout}");
    assert_eq!(num(&m, "membarrier_ns"), memb[1], "{stdout}");
    for v in [&mut fence_cpu, &mut memb_cpu] {
        v.sort_by(f64::total_cmp);
    }
    assert_eq!(num(&m, "fence_cpu_ns"), fence_cpu[1], "{stdout}");
    assert_eq!(num(&m, "membarrier_cpu_ns"), memb_cpu[1], "{stdout}");
    for k in [
        "gain",
        "round_gain_median",
        "cpu_gain",
        "round_cpu_gain_median",
    ] {
        let _ = num(&m, k);
    }
}

#[test]
fn rcu_reader_refuses_zero_rounds() {
    let out = Command::new(env!("CARGO_BIN_EXE_bench"))
        .args(["rcu-reader", "--rounds", "0"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(out.stdout.is_empty());
}

#[test]
fn rcu_reader_perf_lines_parse() {
    if let Err(e) = Command::new("perf").arg("--version").output() {
        qemu::fixtures::skip("rcu_reader", "perf", format!("perf --version: {e}"));
        return;
    }
    let stdout = run_ok(&["--rounds", "1", "--perf"]);
    let perf: Vec<_> = stdout
        .lines()
        .filter(|l| l.starts_with("rcu-reader: perf "))
        .map(|l| parse_line(l).unwrap_or_else(|| panic!("does not parse: {l}")))
        .collect();
    assert_eq!(perf.len(), 2, "{stdout}");
    assert_eq!(field(&perf[0], "mode"), "fence");
    assert_eq!(field(&perf[1], "mode"), "membarrier");
    for p in &perf {
        let share = num(p, "rcu_read_lock");
        assert!((0.0..=100.0).contains(&share), "{p:?}");
        assert!(
            num(p, "samples") <= num(p, "of") && num(p, "of") > 0.0,
            "{p:?}"
        );
        assert!(num(p, "ns") > 0.0, "{p:?}");
    }
    // The fenced reader's read lock is where its fence is: it has samples.
    assert!(num(&perf[0], "samples") > 0.0, "{stdout}");
}
