//! raw.csv: one row per run (or per skipped run), written and read back.
//!
//! Columns, in order ([`HEADER`]): `source` (guest, host, linux-host,
//! linux-guest), `accel` (tcg, kvm, native ...), `host` (machine name),
//! `testcase`, `design` (an ENOENT design, or `linux-<fstype>` for
//! references), `cpus`, `average` (ops/s: mean of the per-second totals),
//! `min`/`max` (lowest and highest per-second total), `task_min`/`task_max`
//! (lowest and highest per-task count of any measured second), the per-op
//! counters `allocs`, `shared_stores`, `fallbacks`, `locks` (empty where the
//! source has none), `status` (`ok`, `skipped`, `failed`), `note` and
//! `rep` (which repetition of its point the run was, 1 to N under
//! `bench sweep --repeat N`) and `transfers` (cache-line transfers per op,
//! the per-op line's last counter; empty where the source has none) and
//! `cpu_model` (the CPU the run ran on: host rows the host's `/proc/cpuinfo`
//! model name, guest rows the accelerator and QEMU's `-cpu` model, e.g.
//! `TCG qemu64` or `KVM host,-arch-capabilities`; empty where unknown) and
//! `host_cores` (the host cores the run could use: this process's CPU
//! affinity when the row was made; for guest rows `cpus` is the vCPU count,
//! so `cpus > host_cores` marks an overcommitted run, whose figures depend
//! on the host's scheduler; empty where unknown), then `session` (the sweep
//! that made the row: its result directory's name; a row read from a file
//! without the column belongs to the directory `bench report` read it
//! from), `loadavg` (the host's 1-minute load average, from `/proc/loadavg`,
//! when the run ended: it mostly reflects the minute before, earlier runs
//! included, so it is a record, not a test of the run), `steal` (the share
//! of the host's CPU time stolen by its hypervisor while the run ran, in %,
//! from `/proc/stat`) and `yields` (host mode's spin yields: a lock waiter
//! gave its thread away, so there were more spinners than CPUs; 0 for a
//! guest, which never yields); each of the three empty where the source
//! cannot say. Then the run's own window, from just before its processes
//! start to just after the last is waited for: `eff_cpus` (the CPU the
//! run's processes used, user + system of every thread — host mode's and
//! `linux-stat`'s tasks, or the whole QEMU process with its vCPU, I/O and
//! translator threads for guest and linux-guest rows — divided by the
//! window's wall seconds), `others_cpus` (the busy time of all host CPUs
//! in the window, from `/proc/stat`, less the run's own, divided by the
//! wall seconds: what everyone else used meanwhile, this sweep's own
//! process included) and `loadavg_before` (the 1-minute load average when
//! the window opened); empty where /proc cannot say. A linux-guest boot
//! gives two rows (tmpfs and ext4) with one window, so both carry its
//! figures.
//!
//! `rep`, `transfers`, `cpu_model`, `host_cores`, the next four and the
//! last three came later, each appended: files written before them
//! ([`HEADER_V1`], 17 columns; [`HEADER_V2`], 18; [`HEADER_V3`], 19;
//! [`HEADER_V4`], 20; [`HEADER_V5`], 21; [`HEADER_V6`], 25) are still read,
//! rows without `rep` as repetition 1, rows without `transfers` with none,
//! rows without `cpu_model` with an empty one, rows without `host_cores`,
//! the load or the CPU columns with none and rows without `session` with an
//! empty one.
//! Writing always uses the current [`HEADER`].
//!
//! Touches: the files it is asked to read or write.

use std::fmt::Write as _;
use std::path::Path;

use formats::output::RunOutput;

/// The identity of a point: what ran where. Ordered field by field, in
/// this order.
#[derive(Clone, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Key {
    /// `guest`, `host`, `linux-host`, `linux-guest`.
    pub source: String,
    /// `tcg`, `kvm`, `native` ...
    pub accel: String,
    /// The machine's name.
    pub host: String,
    /// The benchmark (`statneg` ...).
    pub testcase: String,
    /// An ENOENT design, or `linux-<fstype>` for the references.
    pub design: String,
    /// CPUs (tasks) of the run.
    pub cpus: usize,
}

/// The key of `r`'s point.
pub fn key(r: &Row) -> Key {
    Key {
        source: r.source.clone(),
        accel: r.accel.clone(),
        host: r.host.clone(),
        testcase: r.testcase.clone(),
        design: r.design.clone(),
        cpus: r.cpus,
    }
}

/// The header line of raw.csv.
pub const HEADER: &str =
    "source,accel,host,testcase,design,cpus,average,min,max,task_min,task_max,\
allocs,shared_stores,fallbacks,locks,status,note,rep,transfers,cpu_model,host_cores,\
session,loadavg,steal,yields,eff_cpus,others_cpus,loadavg_before";

/// The header of raw.csv files written before the `eff_cpus` column.
pub const HEADER_V6: &str =
    "source,accel,host,testcase,design,cpus,average,min,max,task_min,task_max,\
allocs,shared_stores,fallbacks,locks,status,note,rep,transfers,cpu_model,host_cores,\
session,loadavg,steal,yields";

/// The header of raw.csv files written before the `session` column.
pub const HEADER_V5: &str =
    "source,accel,host,testcase,design,cpus,average,min,max,task_min,task_max,\
allocs,shared_stores,fallbacks,locks,status,note,rep,transfers,cpu_model,host_cores";

/// The header of raw.csv files written before the `host_cores` column.
pub const HEADER_V4: &str =
    "source,accel,host,testcase,design,cpus,average,min,max,task_min,task_max,\
allocs,shared_stores,fallbacks,locks,status,note,rep,transfers,cpu_model";

/// The header of raw.csv files written before the `cpu_model` column.
pub const HEADER_V3: &str =
    "source,accel,host,testcase,design,cpus,average,min,max,task_min,task_max,\
allocs,shared_stores,fallbacks,locks,status,note,rep,transfers";

/// The header of raw.csv files written before the `transfers` column.
pub const HEADER_V2: &str =
    "source,accel,host,testcase,design,cpus,average,min,max,task_min,task_max,\
allocs,shared_stores,fallbacks,locks,status,note,rep";

/// The header of raw.csv files written before the `rep` column existed.
pub const HEADER_V1: &str =
    "source,accel,host,testcase,design,cpus,average,min,max,task_min,task_max,\
allocs,shared_stores,fallbacks,locks,status,note";

/// Fields per line under [`HEADER_V1`], [`HEADER_V2`], [`HEADER_V3`] and
/// [`HEADER`].
const FIELDS_V1: usize = 17;
const FIELDS_V2: usize = 18;
const FIELDS_V3: usize = 19;
const FIELDS_V4: usize = 20;
const FIELDS_V5: usize = 21;
const FIELDS_V6: usize = 25;
const FIELDS: usize = 28;

/// One run.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Row {
    pub source: String,
    pub accel: String,
    pub host: String,
    pub testcase: String,
    pub design: String,
    pub cpus: usize,
    pub average: u64,
    pub min: u64,
    pub max: u64,
    pub task_min: u64,
    pub task_max: u64,
    pub allocs: Option<f64>,
    pub shared_stores: Option<f64>,
    pub fallbacks: Option<f64>,
    pub locks: Option<f64>,
    pub status: String,
    pub note: String,
    /// Which repetition of its (source, testcase, design, cpus) point this
    /// run was, from 1. A single run, and every row of an old file, is 1.
    pub rep: u32,
    /// Cache-line transfers per op (`None`: no counters, or an old row).
    pub transfers: Option<f64>,
    /// The CPU the run ran on (see the module doc; empty: unknown, or an
    /// old row).
    pub cpu_model: String,
    /// The host cores the run could use (`None`: unknown, or an old row).
    pub host_cores: Option<usize>,
    /// The sweep (session) the run belongs to; runs of one point from two
    /// sessions are two points, never one.
    pub session: String,
    /// The host's 1-minute load average when the run ended.
    pub loadavg: Option<f64>,
    /// Percent of the host's CPU time stolen while the run ran.
    pub steal: Option<f64>,
    /// Spin yields in the run (host mode); `None`: the source cannot say.
    pub yields: Option<u64>,
    /// CPUs the run's own processes used over its window (CPU seconds per
    /// wall second); `None`: not measured (an old row).
    pub eff_cpus: Option<f64>,
    /// CPUs everyone else used over the run's window; `None`: not
    /// measured.
    pub others_cpus: Option<f64>,
    /// The 1-minute load average when the run's window opened.
    pub loadavg_before: Option<f64>,
}

/// The host cores this process may run on (its CPU affinity), which every
/// run a sweep starts here inherits: QEMU's vCPU threads and host mode's
/// tasks alike.
pub fn this_host_cores() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

impl Row {
    /// A row of the point `key` for a run whose output parsed.
    pub fn from_output(key: Key, out: &RunOutput, note: &str) -> Row {
        let p = out.per_op;
        Row {
            source: key.source,
            accel: key.accel,
            host: key.host,
            testcase: key.testcase,
            design: key.design,
            cpus: key.cpus,
            average: out.average,
            min: out.min_total(),
            max: out.max_total(),
            task_min: out.task_min(),
            task_max: out.task_max(),
            allocs: p.map(|p| p.allocs),
            shared_stores: p.and_then(|p| p.shared_stores),
            fallbacks: p.map(|p| p.fallbacks),
            locks: p.map(|p| p.locks),
            status: "ok".into(),
            note: note.into(),
            rep: 1,
            transfers: p.and_then(|p| p.transfers),
            cpu_model: String::new(),
            host_cores: Some(this_host_cores()),
            ..Row::default()
        }
    }

    /// A row of the point `key` for a run that did not happen or did not
    /// produce output (`status`: `skipped` or `failed`).
    pub fn not_run(status: &str, key: Key, note: &str) -> Row {
        Row {
            source: key.source,
            accel: key.accel,
            host: key.host,
            testcase: key.testcase,
            design: key.design,
            cpus: key.cpus,
            status: status.into(),
            note: note.into(),
            rep: 1,
            host_cores: Some(this_host_cores()),
            ..Row::default()
        }
    }

    /// More CPUs (vCPUs or tasks) than the host cores the run could use:
    /// its figures depend on how the host scheduled them.
    pub fn overcommitted(&self) -> bool {
        self.host_cores.is_some_and(|c| self.cpus > c)
    }

    pub fn is_ok(&self) -> bool {
        self.status == "ok"
    }

    /// The CSV line (no newline).
    pub fn to_csv(&self) -> String {
        let opt = |v: Option<f64>| v.map(|v| format!("{v:.3}")).unwrap_or_default();
        let mut s = String::new();
        for f in [
            &self.source,
            &self.accel,
            &self.host,
            &self.testcase,
            &self.design,
        ] {
            s.push_str(&quote(f));
            s.push(',');
        }
        let _ = write!(
            s,
            "{},{},{},{},{},{},{},{},{},{},",
            self.cpus,
            self.average,
            self.min,
            self.max,
            self.task_min,
            self.task_max,
            opt(self.allocs),
            opt(self.shared_stores),
            opt(self.fallbacks),
            opt(self.locks)
        );
        s.push_str(&quote(&self.status));
        s.push(',');
        s.push_str(&quote(&self.note));
        let _ = write!(s, ",{},{},", self.rep, opt(self.transfers));
        s.push_str(&quote(&self.cpu_model));
        s.push(',');
        if let Some(c) = self.host_cores {
            let _ = write!(s, "{c}");
        }
        s.push(',');
        s.push_str(&quote(&self.session));
        let _ = write!(s, ",{},", opt(self.loadavg));
        let _ = write!(s, "{},", opt(self.steal));
        if let Some(y) = self.yields {
            let _ = write!(s, "{y}");
        }
        let _ = write!(
            s,
            ",{},{},{}",
            opt(self.eff_cpus),
            opt(self.others_cpus),
            opt(self.loadavg_before)
        );
        s
    }

    /// Parse one CSV line of a file whose header is [`HEADER`].
    pub fn from_csv(line: &str) -> Result<Row, String> {
        Row::from_csv_fields(line, FIELDS)
    }

    /// Parse one line holding `fields` fields: [`FIELDS`], [`FIELDS_V2`]
    /// for a file from before `transfers`, or [`FIELDS_V1`] for one from
    /// before `rep` (the row is then repetition 1).
    fn from_csv_fields(line: &str, fields: usize) -> Result<Row, String> {
        let f = split_csv(line)?;
        if f.len() != fields {
            return Err(format!("expected {fields} fields, got {}", f.len()));
        }
        let int = |i: usize, name: &str| -> Result<u64, String> {
            f[i].parse().map_err(|_| format!("bad {name} '{}'", f[i]))
        };
        let opt = |i: usize, name: &str| -> Result<Option<f64>, String> {
            if f[i].is_empty() {
                Ok(None)
            } else {
                f[i].parse()
                    .map(Some)
                    .map_err(|_| format!("bad {name} '{}'", f[i]))
            }
        };
        Ok(Row {
            source: f[0].clone(),
            accel: f[1].clone(),
            host: f[2].clone(),
            testcase: f[3].clone(),
            design: f[4].clone(),
            cpus: int(5, "cpus")? as usize,
            average: int(6, "average")?,
            min: int(7, "min")?,
            max: int(8, "max")?,
            task_min: int(9, "task_min")?,
            task_max: int(10, "task_max")?,
            allocs: opt(11, "allocs")?,
            shared_stores: opt(12, "shared_stores")?,
            fallbacks: opt(13, "fallbacks")?,
            locks: opt(14, "locks")?,
            status: f[15].clone(),
            note: f[16].clone(),
            rep: match f.get(17) {
                None => 1,
                Some(v) => match v.parse() {
                    Ok(n) if n >= 1 => n,
                    _ => return Err(format!("bad rep '{v}'")),
                },
            },
            transfers: if f.len() > 18 {
                opt(18, "transfers")?
            } else {
                None
            },
            cpu_model: f.get(19).cloned().unwrap_or_default(),
            host_cores: match f.get(20).map(String::as_str) {
                None | Some("") => None,
                Some(v) => Some(v.parse().map_err(|_| format!("bad host_cores '{v}'"))?),
            },
            session: f.get(21).cloned().unwrap_or_default(),
            loadavg: if f.len() > 22 {
                opt(22, "loadavg")?
            } else {
                None
            },
            steal: if f.len() > 23 {
                opt(23, "steal")?
            } else {
                None
            },
            yields: match f.get(24).map(String::as_str) {
                None | Some("") => None,
                Some(v) => Some(v.parse().map_err(|_| format!("bad yields '{v}'"))?),
            },
            eff_cpus: if f.len() > 25 {
                opt(25, "eff_cpus")?
            } else {
                None
            },
            others_cpus: if f.len() > 26 {
                opt(26, "others_cpus")?
            } else {
                None
            },
            loadavg_before: if f.len() > 27 {
                opt(27, "loadavg_before")?
            } else {
                None
            },
        })
    }
}

fn quote(s: &str) -> String {
    if s.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", s.replace('"', "\"\"").replace(['\n', '\r'], " "))
    } else {
        s.to_string()
    }
}

fn split_csv(line: &str) -> Result<Vec<String>, String> {
    let mut fields = Vec::new();
    let mut cur = String::new();
    let mut chars = line.chars().peekable();
    let mut in_quotes = false;
    while let Some(c) = chars.next() {
        match (c, in_quotes) {
            ('"', true) if chars.peek() == Some(&'"') => {
                chars.next();
                cur.push('"');
            }
            ('"', true) => in_quotes = false,
            ('"', false) if cur.is_empty() => in_quotes = true,
            (',', false) => fields.push(std::mem::take(&mut cur)),
            (c, _) => cur.push(c),
        }
    }
    if in_quotes {
        return Err("unterminated quote".into());
    }
    fields.push(cur);
    Ok(fields)
}

/// Whole file text for `rows`.
pub fn to_csv(rows: &[Row]) -> String {
    let mut s = String::from(HEADER);
    s.push('\n');
    for r in rows {
        s.push_str(&r.to_csv());
        s.push('\n');
    }
    s
}

/// Parse a whole raw.csv text, current ([`HEADER`]) or from before the
/// `rep` column ([`HEADER_V1`]). The header decides how many fields every
/// line must have, so a file cannot mix the two.
pub fn parse_csv(text: &str) -> Result<Vec<Row>, String> {
    let mut lines = text.lines().enumerate();
    let fields = match lines.next().map(|(_, h)| h.trim_end()) {
        Some(h) if h == HEADER => FIELDS,
        Some(h) if h == HEADER_V6 => FIELDS_V6,
        Some(h) if h == HEADER_V5 => FIELDS_V5,
        Some(h) if h == HEADER_V4 => FIELDS_V4,
        Some(h) if h == HEADER_V3 => FIELDS_V3,
        Some(h) if h == HEADER_V2 => FIELDS_V2,
        Some(h) if h == HEADER_V1 => FIELDS_V1,
        _ => return Err("missing or different raw.csv header".into()),
    };
    lines
        .filter(|(_, l)| !l.trim().is_empty())
        .map(|(i, l)| Row::from_csv_fields(l, fields).map_err(|e| format!("line {}: {e}", i + 1)))
        .collect()
}

/// Write `rows` to `path`.
pub fn write(path: &Path, rows: &[Row]) -> Result<(), String> {
    std::fs::write(path, to_csv(rows)).map_err(|e| format!("writing {}: {e}", path.display()))
}

/// Read `path`.
pub fn read(path: &Path) -> Result<Vec<Row>, String> {
    let text =
        std::fs::read_to_string(path).map_err(|e| format!("reading {}: {e}", path.display()))?;
    parse_csv(&text).map_err(|e| format!("{}: {e}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A line as the sweep wrote it before `rep` existed (17 fields).
    const OLD_LINE: &str = "host,native,h1,statneg,noalloc,2,19000000,18050000,19950000,\
9499990,9500010,0.000,0.000,0.000,0.000,ok,\"threads, not pinned\"";

    #[test]
    fn reads_files_from_before_the_rep_column() {
        let text = format!("{HEADER_V1}\n{OLD_LINE}\n\n");
        let rows = parse_csv(&text).unwrap();
        assert_eq!(rows.len(), 1);
        let r = &rows[0];
        assert_eq!((r.cpus, r.average, r.task_max), (2, 19_000_000, 9_500_010));
        assert_eq!(
            (r.status.as_str(), r.note.as_str()),
            ("ok", "threads, not pinned")
        );
        assert_eq!(r.rep, 1, "an old row is a single run");
        // Written back, it gains the column.
        let again = to_csv(&rows);
        assert!(again.starts_with(&format!("{HEADER}\n")));
        assert!(again.contains("not pinned\",1,,,,,,,,,,\n"), "{again}");
        assert_eq!(parse_csv(&again).unwrap(), rows);
    }

    #[test]
    fn reads_and_writes_the_rep_column() {
        let mut r = Row::from_csv_fields(OLD_LINE, FIELDS_V1).unwrap();
        r.rep = 3;
        let text = to_csv(std::slice::from_ref(&r));
        assert!(
            text.ends_with(",3,,,,,,,,,,\n"),
            "rep, transfers, cpu_model, host_cores, session, loadavg, steal, yields, eff_cpus, others_cpus, loadavg_before: {text}"
        );
        let back = parse_csv(&text).unwrap();
        assert_eq!(back, vec![r]);
        assert_eq!(back[0].rep, 3);
    }

    #[test]
    fn reads_and_writes_the_transfers_column() {
        // A file from before `transfers` (18 fields): no figure.
        let v2 = parse_csv(&format!("{HEADER_V2}\n{OLD_LINE},2\n")).unwrap();
        assert_eq!((v2[0].rep, v2[0].transfers), (2, None));
        let mut r = v2[0].clone();
        r.transfers = Some(3.5);
        let text = to_csv(std::slice::from_ref(&r));
        assert!(text.ends_with(",2,3.500,,,,,,,,,\n"), "{text}");
        assert_eq!(parse_csv(&text).unwrap(), vec![r]);
        let e = parse_csv(&format!("{HEADER}\n{OLD_LINE},1,x,,,,,,,,,\n")).unwrap_err();
        assert!(e.contains("bad transfers"), "{e}");
    }

    #[test]
    fn reads_and_writes_the_cpu_model_column() {
        // A file from before `cpu_model` (19 fields): empty.
        let v3 = parse_csv(&format!("{HEADER_V3}\n{OLD_LINE},2,1.0\n")).unwrap();
        assert_eq!(v3[0].cpu_model, "");
        let mut r = v3[0].clone();
        r.cpu_model = "Intel(R) Xeon(R) CPU @ 2.20GHz, 8 cores".into();
        let text = to_csv(std::slice::from_ref(&r));
        assert!(
            text.ends_with(",2,1.000,\"Intel(R) Xeon(R) CPU @ 2.20GHz, 8 cores\",,,,,,,,\n"),
            "{text}"
        );
        assert_eq!(parse_csv(&text).unwrap(), vec![r]);
    }

    #[test]
    fn reads_and_writes_the_host_cores_column() {
        // A file from before `host_cores` (20 fields): unknown, so never
        // overcommitted.
        let v4 = parse_csv(&format!("{HEADER_V4}\n{OLD_LINE},1,,TCG qemu64\n")).unwrap();
        assert_eq!(v4[0].host_cores, None);
        assert!(!v4[0].overcommitted());
        let mut r = v4[0].clone();
        r.host_cores = Some(1);
        let text = to_csv(std::slice::from_ref(&r));
        assert!(text.ends_with(",TCG qemu64,1,,,,,,,\n"), "{text}");
        assert_eq!(parse_csv(&text).unwrap(), vec![r.clone()]);
        assert_eq!(r.cpus, 2);
        assert!(r.overcommitted(), "2 CPUs on 1 host core");
        r.host_cores = Some(2);
        assert!(!r.overcommitted(), "2 CPUs on 2 host cores");
        let e = parse_csv(&format!("{HEADER}\n{OLD_LINE},1,,,two,,,,,,,\n")).unwrap_err();
        assert!(e.contains("bad host_cores"), "{e}");
    }

    #[test]
    fn the_header_decides_the_field_count() {
        // An old line under the new header, and a new line under the old.
        assert!(parse_csv(&format!("{HEADER}\n{OLD_LINE}\n")).is_err());
        assert!(parse_csv(&format!("{HEADER}\n{OLD_LINE},1\n")).is_err());
        assert!(parse_csv(&format!("{HEADER}\n{OLD_LINE},1,1.0\n")).is_err());
        assert!(parse_csv(&format!("{HEADER_V1}\n{OLD_LINE},2\n")).is_err());
        assert!(parse_csv(&format!("{HEADER_V2}\n{OLD_LINE},2,1.0\n")).is_err());
        assert!(parse_csv(&format!("{HEADER}\n{OLD_LINE},1,1.0,m\n")).is_err());
        for bad in ["0", "x", "-1", ""] {
            let e = parse_csv(&format!("{HEADER}\n{OLD_LINE},{bad},,,,,,,,,,\n")).unwrap_err();
            assert!(e.contains("bad rep"), "{bad}: {e}");
        }
        assert!(parse_csv("source,accel\n").is_err());
        // A line of the header before `session` under the new one, and
        // one of the header before `eff_cpus`.
        assert!(parse_csv(&format!("{HEADER}\n{OLD_LINE},1,,,\n")).is_err());
        assert!(parse_csv(&format!("{HEADER}\n{OLD_LINE},1,,,,,,,\n")).is_err());
    }

    #[test]
    fn reads_and_writes_the_session_and_load_columns() {
        // A file from before `session` (21 fields): none of the four.
        let v5 = parse_csv(&format!("{HEADER_V5}\n{OLD_LINE},1,,,2\n")).unwrap();
        let r = &v5[0];
        assert_eq!(
            (r.session.as_str(), r.loadavg, r.steal, r.yields),
            ("", None, None, None)
        );
        let mut r = r.clone();
        r.session = "20261206-0300".into();
        r.loadavg = Some(2.5);
        r.steal = Some(0.25);
        r.yields = Some(17);
        let text = to_csv(std::slice::from_ref(&r));
        assert!(
            text.ends_with(",2,20261206-0300,2.500,0.250,17,,,\n"),
            "{text}"
        );
        assert_eq!(parse_csv(&text).unwrap(), vec![r]);
        let e = parse_csv(&format!("{HEADER}\n{OLD_LINE},1,,,2,s,1.0,0.0,many,,,\n")).unwrap_err();
        assert!(e.contains("bad yields"), "{e}");
    }

    #[test]
    fn reads_and_writes_the_cpu_columns() {
        // A file from before `eff_cpus` (25 fields): none of the three.
        let v6 = parse_csv(&format!("{HEADER_V6}\n{OLD_LINE},1,,,2,s,3.1,0.0,0\n")).unwrap();
        let r = &v6[0];
        assert_eq!((r.loadavg, r.yields), (Some(3.1), Some(0)));
        assert_eq!(
            (r.eff_cpus, r.others_cpus, r.loadavg_before),
            (None, None, None)
        );
        let mut r = r.clone();
        r.eff_cpus = Some(1.97);
        r.others_cpus = Some(0.04);
        r.loadavg_before = Some(2.9);
        let text = to_csv(std::slice::from_ref(&r));
        assert!(
            text.ends_with(",s,3.100,0.000,0,1.970,0.040,2.900\n"),
            "{text}"
        );
        assert_eq!(parse_csv(&text).unwrap(), vec![r]);
        let e = parse_csv(&format!("{HEADER}\n{OLD_LINE},1,,,2,s,1.0,0.0,0,x,,\n")).unwrap_err();
        assert!(e.contains("bad eff_cpus"), "{e}");
        // A 25-field line under the current header is refused.
        assert!(parse_csv(&format!("{HEADER}\n{OLD_LINE},1,,,2,s,3.1,0.0,0\n")).is_err());
    }
}
