//! The lines `bench fidelity` prints and reads back (`fidelity …` for
//! the guest pairs, the host pairs' form) and the arithmetic behind them:
//! ratios to each side's baseline, the system call constant, medians,
//! ranges and whether Linux ranks two designs round by round.
//!
//! Touches nothing: pure functions.

use super::*;

/// One `fidelity …` line.
#[derive(Clone, Debug, PartialEq)]
pub struct Line {
    pub design: String,
    /// The Linux build; `None`: the design has none (printed `none`, and so
    /// are the Linux-side figures).
    pub linux: Option<String>,
    pub vcpus: u32,
    pub proto_ratio: f64,
    pub linux_ratio: Option<f64>,
    pub rank_agrees: Option<bool>,
}

impl Line {
    /// `(proto / linux - 1) * 100`: how far the prototype's ratio is from
    /// Linux's, in percent of Linux's.
    pub fn error_pct(&self) -> Option<f64> {
        self.linux_ratio.map(|l| error_pct(self.proto_ratio, l))
    }

    /// Reads a line `Display` wrote.
    pub fn parse(line: &str) -> Result<Line, String> {
        const KEYS: [&str; 7] = [
            "design",
            "linux",
            "vcpus",
            "proto_ratio",
            "linux_ratio",
            "error_pct",
            "rank_agrees",
        ];
        let v = keyed_values(line, &KEYS)?;
        let get = |i: usize| -> Result<&str, String> { Ok(v[i]) };
        let num = |i: usize| -> Result<Option<f64>, String> {
            match get(i)? {
                "none" => Ok(None),
                s => s
                    .parse::<f64>()
                    .ok()
                    .filter(|x| x.is_finite())
                    .map(Some)
                    .ok_or_else(|| format!("{}={s} is not a number", KEYS[i])),
            }
        };
        let linux = match get(1)? {
            "none" => None,
            k => Some(k.to_string()),
        };
        let rank_agrees = match get(6)? {
            "yes" => Some(true),
            "no" => Some(false),
            "none" => None,
            s => return Err(format!("rank_agrees={s} is not yes, no or none")),
        };
        let l = Line {
            design: get(0)?.to_string(),
            linux,
            vcpus: get(2)?
                .parse()
                .map_err(|_| format!("vcpus={} is not a count", v[2]))?,
            proto_ratio: num(3)?.ok_or("proto_ratio=none")?,
            linux_ratio: num(4)?,
            rank_agrees,
        };
        if (
            l.linux.is_none(),
            l.linux_ratio.is_none(),
            l.rank_agrees.is_none(),
        ) != (l.linux.is_none(), l.linux.is_none(), l.linux.is_none())
        {
            return Err(format!(
                "a line with linux={} needs every Linux figure, one without none",
                get(1)?
            ));
        }
        Ok(l)
    }
}

/// The values of a `fidelity KEY=VALUE …` line whose keys are `keys`,
/// each present, in that order, and nothing after them.
fn keyed_values<'a, const N: usize>(
    line: &'a str,
    keys: &[&str; N],
) -> Result<[&'a str; N], String> {
    let mut w = line.split_whitespace();
    if w.next() != Some("fidelity") {
        return Err(format!("not a fidelity line: {line:?}"));
    }
    let mut v = [""; N];
    let mut n = 0;
    for (i, word) in w.enumerate() {
        let (k, val) = word
            .split_once('=')
            .ok_or_else(|| format!("{word:?} is not KEY=VALUE"))?;
        if keys.get(i) != Some(&k) {
            return Err(format!("{k}= where {:?} belongs", keys.get(i)));
        }
        v[i] = val;
        n = i + 1;
    }
    match keys.get(n) {
        Some(k) => Err(format!("no {k}= in {line:?}")),
        None => Ok(v),
    }
}

impl fmt::Display for Line {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let opt =
            |x: Option<f64>, prec: usize| x.map_or("none".to_string(), |x| format!("{x:.prec$}"));
        write!(
            f,
            "fidelity design={} linux={} vcpus={} proto_ratio={:.3} linux_ratio={} error_pct={} rank_agrees={}",
            self.design,
            self.linux.as_deref().unwrap_or("none"),
            self.vcpus,
            self.proto_ratio,
            opt(self.linux_ratio, 3),
            opt(self.error_pct(), 1),
            match self.rank_agrees {
                Some(true) => "yes",
                Some(false) => "no",
                None => "none",
            }
        )
    }
}

/// The host pairs: the prototype's design in host mode, the name of its
/// Linux counterpart on the `fidelity` line, and the filesystem host Linux
/// answers on (its native miss behaves as the design does: tmpfs keeps no
/// negative dentry, ext4 keeps one).
pub const HOST_PAIRS: [(&str, &str, &str); 2] = [
    ("transient", "host-tmpfs", "tmpfs"),
    ("negative", "host-ext4", "ext4"),
];

/// One host pair's `fidelity …` line: ops/s on both sides (host mode and
/// host Linux run on the same CPUs, so the rates compare directly, where
/// the guest lines compare ratios).
#[derive(Clone, Debug, PartialEq)]
pub struct HostLine {
    pub design: String,
    /// `host-tmpfs`, `host-ext4`.
    pub linux: String,
    /// Tasks, one per CPU (named as the guest lines name it).
    pub vcpus: u32,
    pub proto_ops: f64,
    pub linux_ops: f64,
}

impl HostLine {
    /// `(proto_ops / linux_ops - 1) * 100`.
    pub fn error_pct(&self) -> f64 {
        error_pct(self.proto_ops, self.linux_ops)
    }

    /// Reads a line `Display` wrote.
    pub fn parse(line: &str) -> Result<HostLine, String> {
        const KEYS: [&str; 6] = [
            "design",
            "linux",
            "vcpus",
            "proto_ops",
            "linux_ops",
            "error_pct",
        ];
        let v = keyed_values(line, &KEYS)?;
        let ops = |i: usize| -> Result<f64, String> {
            v[i].parse::<f64>()
                .ok()
                .filter(|x| x.is_finite() && *x > 0.0)
                .ok_or_else(|| format!("{}={} is not a rate", KEYS[i], v[i]))
        };
        let l = HostLine {
            design: v[0].to_string(),
            linux: v[1].to_string(),
            vcpus: v[2]
                .parse()
                .map_err(|_| format!("vcpus={} is not a count", v[2]))?,
            proto_ops: ops(3)?,
            linux_ops: ops(4)?,
        };
        let e: f64 = v[5]
            .parse()
            .map_err(|_| format!("error_pct={} is not a number", v[5]))?;
        if (e - l.error_pct()).abs() > 0.051 {
            return Err(format!(
                "error_pct={e} is not that of the rates ({:.1})",
                l.error_pct()
            ));
        }
        Ok(l)
    }
}

impl fmt::Display for HostLine {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "fidelity design={} linux={} vcpus={} proto_ops={:.0} linux_ops={:.0} error_pct={:.1}",
            self.design,
            self.linux,
            self.vcpus,
            self.proto_ops,
            self.linux_ops,
            self.error_pct()
        )
    }
}

/// Any `fidelity …` line: a guest pair's ratios or a host pair's rates.
#[derive(Clone, Debug, PartialEq)]
pub enum AnyLine {
    Guest(Line),
    Host(HostLine),
}

impl AnyLine {
    /// Reads either form (the fifth word tells them apart: `proto_ratio=`
    /// or `proto_ops=`).
    pub fn parse(line: &str) -> Result<AnyLine, String> {
        if line
            .split_whitespace()
            .nth(4)
            .is_some_and(|w| w.starts_with("proto_ops="))
        {
            HostLine::parse(line).map(AnyLine::Host)
        } else {
            Line::parse(line).map(AnyLine::Guest)
        }
    }
}

/// `(proto / linux - 1) * 100`.
pub fn error_pct(proto: f64, linux: f64) -> f64 {
    (proto / linux - 1.0) * 100.0
}

/// Ops/s of `tasks` tasks had each stat also paid `syscall_ns`: each
/// task's time per stat (`tasks / ops` seconds) plus the constant. Exact
/// on one task; on more it leaves out that a slower stat also meets less
/// contention on shared lines, so it charges contended designs slightly
/// too much.
pub fn with_syscall(ops: f64, tasks: u32, syscall_ns: f64) -> f64 {
    if ops <= 0.0 {
        return 0.0;
    }
    let per_op_s = f64::from(tasks) / ops;
    f64::from(tasks) / (per_op_s + syscall_ns * 1e-9)
}

/// The median of `xs` (the mean of the middle two for an even count);
/// `None` when empty.
pub fn median(xs: &[f64]) -> Option<f64> {
    let mut v: Vec<f64> = xs.iter().copied().filter(|x| x.is_finite()).collect();
    if v.is_empty() {
        return None;
    }
    v.sort_by(f64::total_cmp);
    let n = v.len();
    Some(if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    })
}

/// One design's per-round ratios on both sides, at one CPU count: entry
/// `r` is round `r`'s ratio, `None` where the design or the baseline has
/// no window in that round.
#[derive(Clone, Debug, PartialEq)]
pub struct Ratios {
    pub design: String,
    pub linux: Option<String>,
    pub proto: Vec<Option<f64>>,
    pub linux_rounds: Vec<Option<f64>>,
}

/// The ratios of the rounds that have one.
pub(super) fn values(rounds: &[Option<f64>]) -> Vec<f64> {
    rounds.iter().flatten().copied().collect()
}

/// Fewest rounds in which one design's ratio must lie above the other's,
/// every one of them, for a side to rank the pair: with no difference
/// between the two, all of 5 rounds the same way (either way) has a
/// chance of 1/16; the prototype's side needs only a majority, so a pair
/// the prototype cannot tell apart reads `no` about half the time where
/// Linux ranks it.
pub const RANK_ROUNDS: usize = 5;

/// How one side orders designs `a` and `b` round by round: in how many rounds that both ran `a`'s ratio was
/// above `b`'s, and below (exact ties count for neither).
fn above_below(a: &[Option<f64>], b: &[Option<f64>]) -> (usize, usize) {
    a.iter()
        .zip(b)
        .filter_map(|(x, y)| Some(((*x)?, (*y)?)))
        .fold((0, 0), |(up, down), (x, y)| {
            (up + usize::from(x > y), down + usize::from(x < y))
        })
}

/// `[MIN-MAX]` of `xs`, or `none`.
pub(super) fn range(xs: &[f64]) -> String {
    let lo = xs.iter().copied().fold(f64::INFINITY, f64::min);
    let hi = xs.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    if xs.is_empty() {
        "none".into()
    } else {
        format!("[{lo:.3}-{hi:.3}]")
    }
}

/// Whether design `i` is ranked as Linux ranks it against each other
/// design of `rows` with a Linux counterpart, judged round by round (the
/// two designs of one round ran side by side, so the round is the pair):
/// Linux ranks two designs when one's ratio lay above the other's in every
/// round both ran, at least [`RANK_ROUNDS`] of them; otherwise it does not
/// rank them, and neither order disagrees. The prototype disagrees when
/// its own rounds put the other design above in more rounds than not. `None` for a design
/// without a Linux counterpart.
pub fn rank_agrees(rows: &[Ratios], i: usize) -> Option<bool> {
    let a = &rows[i];
    a.linux.as_ref()?;
    for (j, b) in rows.iter().enumerate() {
        if j == i || b.linux.is_none() {
            continue;
        }
        let (l_up, l_down) = above_below(&a.linux_rounds, &b.linux_rounds);
        let (p_up, p_down) = above_below(&a.proto, &b.proto);
        let disagrees = (l_down == 0 && l_up >= RANK_ROUNDS && p_down > p_up)
            || (l_up == 0 && l_down >= RANK_ROUNDS && p_up > p_down);
        if disagrees {
            return Some(false);
        }
    }
    Some(true)
}

/// The lines of one CPU count from its rows.
pub fn lines(rows: &[Ratios], vcpus: u32) -> Vec<Line> {
    (0..rows.len())
        .filter_map(|i| {
            let r = &rows[i];
            Some(Line {
                design: r.design.clone(),
                linux: r.linux.clone(),
                vcpus,
                proto_ratio: median(&values(&r.proto))?,
                linux_ratio: r
                    .linux
                    .as_ref()
                    .and_then(|_| median(&values(&r.linux_rounds))),
                rank_agrees: rank_agrees(rows, i),
            })
        })
        .collect()
}
