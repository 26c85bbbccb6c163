//! `negcost`: what N distinct missing names stat()ed in one tmpfs
//! directory cost that directory afterwards (issue 50), in Linux 7.3.4
//! (our vanilla, negative and noalloc builds, in the reference guest:
//! `qemu::linuxref::run_negcost`) and in the prototype's ENOENT designs
//! (host mode, here: [`run_proto`]). One line per kernel or design and N:
//!
//! ```text
//! negcost kernel=K|proto design=D names=N ls_ms=… rmdir_ms=… dentries=… max_locked_us=… [KEY=VALUE…]
//! ```
//!
//! `ls_ms`: a full readdir of the directory (ten files in it, the misses
//! made after them); `rmdir_ms`: rmdir of the same directory once its files
//! are unlinked; `dentries`: the dentries the misses left (Linux: the growth
//! of nr_dentry; the prototype: the directory's children); `max_locked_us`:
//! the longest stretch with the directory's `d_lock` held that was measured
//! (`locked_by=` says how). The keys after the seven are extras
//! ([`Line::extra`]); a reader keeps them and needs none of them.
//!
//! Touches: a fresh prototype tmpfs per run (host mode's dcache, its LRU),
//! the clock.

use std::fmt;
use std::time::Instant;

use fs::dcache;
use fs::namei::{self, LookupFlags};
use fs::vfs::Vfs;
use fs::Errno;

/// One `negcost …` line.
#[derive(Clone, Debug, PartialEq)]
pub struct Line {
    /// `proto`, or the Linux kernel (`7.3.4-vanilla`).
    pub kernel: String,
    /// The prototype's ENOENT design, or the Linux build's series
    /// (`vanilla`, `negative`, `noalloc`).
    pub design: String,
    pub names: u64,
    pub ls_ms: f64,
    pub rmdir_ms: f64,
    pub dentries: i64,
    pub max_locked_us: f64,
    /// Further `KEY=VALUE` words, in order (`stat_ms`, `locked_by`, `mode`).
    pub extra: Vec<(String, String)>,
}

/// The seven keys every line has, in order.
pub const KEYS: [&str; 7] = [
    "kernel",
    "design",
    "names",
    "ls_ms",
    "rmdir_ms",
    "dentries",
    "max_locked_us",
];

impl Line {
    /// The value of an extra key.
    pub fn extra(&self, key: &str) -> Option<&str> {
        self.extra
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.as_str())
    }

    /// Reads a line `Display` wrote (or any with the seven keys, in any
    /// order after the `negcost` word).
    pub fn parse(line: &str) -> Result<Line, String> {
        let mut words = line.split_whitespace();
        if words.next() != Some("negcost") {
            return Err(format!("not a negcost line: {line:?}"));
        }
        let mut known: [Option<&str>; 7] = [None; 7];
        let mut extra = Vec::new();
        for w in words {
            let (k, v) = w
                .split_once('=')
                .ok_or_else(|| format!("{w:?} is not KEY=VALUE"))?;
            match KEYS.iter().position(|key| *key == k) {
                Some(i) if known[i].is_some() => return Err(format!("{k} given twice")),
                Some(i) => known[i] = Some(v),
                None => extra.push((k.to_string(), v.to_string())),
            }
        }
        let get = |i: usize| known[i].ok_or_else(|| format!("no {}= in {line:?}", KEYS[i]));
        let num = |i: usize| -> Result<f64, String> {
            let v = get(i)?;
            v.parse::<f64>()
                .ok()
                .filter(|x| x.is_finite())
                .ok_or_else(|| format!("{}={v} is not a number", KEYS[i]))
        };
        Ok(Line {
            kernel: get(0)?.to_string(),
            design: get(1)?.to_string(),
            names: get(2)?
                .parse()
                .map_err(|_| format!("names={} is not a count", known[2].unwrap_or("")))?,
            ls_ms: num(3)?,
            rmdir_ms: num(4)?,
            dentries: get(5)?
                .parse()
                .map_err(|_| format!("dentries={} is not an integer", known[5].unwrap_or("")))?,
            max_locked_us: num(6)?,
            extra,
        })
    }
}

impl fmt::Display for Line {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "negcost kernel={} design={} names={} ls_ms={:.3} rmdir_ms={:.3} dentries={} max_locked_us={:.1}",
            self.kernel,
            self.design,
            self.names,
            self.ls_ms,
            self.rmdir_ms,
            self.dentries,
            self.max_locked_us
        )?;
        for (k, v) in &self.extra {
            write!(f, " {k}={v}")?;
        }
        Ok(())
    }
}

/// Regular files in the directory before the misses (as in the guest).
pub const FILES: u64 = 10;

/// Repetitions of the readdir and of each locked walk; the fastest is the
/// figure (a slower one met a busier host). The rmdir happens once.
pub const REPS: usize = 5;

fn ms(t: Instant) -> f64 {
    t.elapsed().as_secs_f64() * 1e3
}

fn us(t: Instant) -> f64 {
    t.elapsed().as_secs_f64() * 1e6
}

/// `/d/<tag><i>`.
fn path(tag: &str, i: u64) -> Vec<u8> {
    format!("/d/{tag}{i}").into_bytes()
}

fn step<T>(what: &str, r: Result<T, Errno>) -> Result<T, String> {
    r.map_err(|e| format!("{what}: {e:?}"))
}

/// The prototype's side, in host mode: a fresh tmpfs mounted with
/// `enoent=DESIGN`, the directory `/d` with [`FILES`] files, `names`
/// distinct missing names stat()ed in it (each must answer ENOENT), then
/// the readdir ([`REPS`] times, the fastest kept) and, its files unlinked,
/// the rmdir, each timed. The directory's lock: the walks that hold its
/// `d_lock` across its children (`dcache::children`, readdir's, and
/// `dcache::has_positive_children`, rmdir's emptiness test) called alone
/// on the same directory just before the operation that makes them, timed
/// from before the lock is taken to after it is dropped, [`REPS`] times
/// each, the fastest kept (`locked_by=` names the longer of the two).
pub fn run_proto(design: &str, names: u64) -> Result<Line, String> {
    if dcache::design::by_name(design).is_none() {
        return Err(format!("unknown design {design}"));
    }
    let v = step("mount", Vfs::new_tmpfs(&format!("enoent={design}")))?;
    step("mkdir /d", v.mkdir(b"/d", 0o755))?;
    for i in 0..FILES {
        step("create", v.write_file(&path("f", i), b""))?;
    }
    let lf = LookupFlags {
        follow: true,
        directory: true,
    };
    let (_mnt, d) = step("resolve /d", namei::resolve(v.mnt_ns(), b"/d", lf))?;
    let before = dcache::all_children(&d).len() as i64;
    let t = Instant::now();
    for i in 0..names {
        match v.stat(&path("m", i)) {
            Err(Errno::ENOENT) => {}
            other => return Err(format!("stat of a missing name: {:?}", other.map(|_| ()))),
        }
    }
    let stat_ms = ms(t);
    let dentries = dcache::all_children(&d).len() as i64 - before;

    let mut readdir_locked = f64::MAX;
    let mut ls_ms = f64::MAX;
    for _ in 0..REPS {
        let t = Instant::now();
        let walked = dcache::children(&d);
        readdir_locked = readdir_locked.min(us(t));
        drop(walked);
        let t = Instant::now();
        let entries = step("readdir", v.readdir(b"/d"))?.len() as u64;
        ls_ms = ls_ms.min(ms(t));
        if entries != FILES {
            return Err(format!("readdir returned {entries} entries, not {FILES}"));
        }
    }

    for i in 0..FILES {
        step("unlink", v.unlink(&path("f", i)))?;
    }
    let mut empty_locked = f64::MAX;
    for _ in 0..REPS {
        let t = Instant::now();
        let nonempty = dcache::has_positive_children(&d);
        empty_locked = empty_locked.min(us(t));
        if nonempty {
            return Err("the emptied directory still has a positive child".into());
        }
    }
    drop(d);
    let t = Instant::now();
    step("rmdir", v.rmdir(b"/d"))?;
    let rmdir_ms = ms(t);

    let (max_locked_us, locked_by) = if readdir_locked >= empty_locked {
        (readdir_locked, "children")
    } else {
        (empty_locked, "has_positive_children")
    };
    Ok(Line {
        kernel: "proto".into(),
        design: design.into(),
        names,
        ls_ms,
        rmdir_ms,
        dentries,
        max_locked_us,
        extra: vec![
            ("stat_ms".into(), format!("{stat_ms:.1}")),
            ("locked_by".into(), locked_by.into()),
            ("mode".into(), "host".into()),
        ],
    })
}

/// A Linux guest's figures as a line: `locked_by=` names the traced
/// function with the longest call; with nothing traced, the readdir or
/// rmdir (whichever is longer) stands in as an upper bound
/// (`locked_by=upper-bound`).
pub fn linux_line(kernel: &str, variant: &str, g: &qemu::linuxref::GuestNegcost) -> Line {
    let (max_locked_us, locked_by) = match g.max_locked() {
        Some(s) => (s.max_us, s.function.clone()),
        None => (g.ls_us.max(g.rmdir_us), "upper-bound".to_string()),
    };
    Line {
        kernel: kernel.into(),
        design: variant.into(),
        names: g.names,
        ls_ms: g.ls_us / 1e3,
        rmdir_ms: g.rmdir_us / 1e3,
        dentries: g.dentries(),
        max_locked_us,
        extra: vec![
            ("stat_ms".into(), format!("{:.1}", g.stat_us / 1e3)),
            ("locked_by".into(), locked_by),
            ("mode".into(), "guest-tcg".into()),
        ],
    }
}
