//! The benchmark words: `bench=NAME tasks=N design=D warmup=S secs=S lock=K
//! pause=P names=N`.
//!
//! One strict parser for both places the words appear: the guest kernel's
//! command line and host mode (`bench host WORDS`). An unknown key, a word
//! that is not `key=value`, a repeated key or a bad value is an error whose
//! text lists every valid key with one line of help ([`KEYS`]).
//!
//! The kernel's own command-line parser can delegate: for each `key=value`
//! word it asks [`is_key`], feeds bench keys to [`ParamsBuilder::set`] and
//! calls [`ParamsBuilder::finish`] at the end.
//!
//! Touches nothing: pure parsing that never allocates, errors included
//! ([`ParamError`] borrows the words it names), because the kernel parses
//! its command line before its heap exists. The command-line fuzz harness
//! checks this with allocation forbidden.

use core::fmt;

use fs::dcache::design::{EnoentDesign, DESIGNS};
pub use fs::sync::rawlock::LockKind;

/// Largest task count: one task per CPU id, leaving one id for the CPU or
/// thread that sets up and samples the run.
pub const MAX_TASKS: usize = fs::platform::MAX_CPUS - 1;
/// Longest warmup or measurement, in seconds (one hour).
pub const MAX_SECS: u32 = 3600;
/// Most `pause=` hints between two operations (about a millisecond on the
/// slowest `pause` known, Skylake's 140 cycles).
pub const MAX_PAUSE: u32 = 100_000;
/// Most `names=` (distinct names a task of `statneg-many`/`statmix` cycles over).
pub const MAX_NAMES: u32 = 1_000_000;
/// `names=` when not given.
pub const DEFAULT_NAMES: u32 = 1000;

/// One valid key: its name, the values it takes and one line of help.
#[derive(Clone, Copy, Debug)]
pub struct KeyInfo {
    pub key: &'static str,
    pub values: Values,
    pub help: &'static str,
}

/// Every key the parser accepts, in the order the help lists them.
pub const KEYS: &[KeyInfo] = &[
    KeyInfo {
        key: "bench",
        values: Values::Text(
            "statneg|statneg-distinct|statneg-deep|statpos|churn|statneg-owndir|statneg-many|statmix",
        ),
        help: "workload to run (required)",
    },
    KeyInfo {
        key: "tasks",
        values: Values::Text("1..255"),
        help: "tasks, one per CPU, pinned (default 1)",
    },
    KeyInfo {
        key: "design",
        values: Values::Designs,
        help: "tmpfs ENOENT design, mounted as enoent=DESIGN (default: the first, Linux's)",
    },
    KeyInfo {
        key: "warmup",
        values: Values::Text("0..3600"),
        help: "warmup seconds (default 2)",
    },
    KeyInfo {
        key: "secs",
        values: Values::Text("1..3600"),
        help: "measured seconds (default 5)",
    },
    KeyInfo {
        key: "lock",
        values: Values::Text("qspinlock|ticket|ttas|pvqspinlock"),
        help: "spinlock of the lookup path (d_lock, hash, in-lookup, LRU; default qspinlock; \
               pvqspinlock halts long waiters: guests on fewer host cores)",
    },
    KeyInfo {
        key: "pause",
        values: Values::Text("0..100000"),
        help: "CPU spin-wait hints (x86 `pause`) each task runs between two operations (default 0)",
    },
    KeyInfo {
        key: "names",
        values: Values::Text("1..1000000"),
        help: "distinct names per task of statneg-many, files and misses of statmix (default 1000)",
    },
];

/// Is `key` one of [`KEYS`]?
pub fn is_key(key: &str) -> bool {
    KEYS.iter().any(|k| k.key == key)
}

/// The workloads (see [`crate::workloads`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Bench {
    /// Every task stats the same missing name in the tmpfs root.
    Statneg,
    /// Each task stats its own missing name in the root.
    StatnegDistinct,
    /// Every task stats `/a/b/c/d/missing`.
    StatnegDeep,
    /// Every task stats an existing file.
    Statpos,
    /// Half the tasks create and unlink in one directory, the rest statneg in it.
    Churn,
    /// Each task stats a missing name in a directory of its own.
    StatnegOwndir,
    /// Each task cycles over `names=` distinct missing names in one directory.
    StatnegMany,
    /// Hits and misses alternating in one directory (`names=` of each).
    Statmix,
}

impl Bench {
    /// All workloads, in the order sweeps run them.
    pub const ALL: [Bench; 8] = [
        Bench::Statneg,
        Bench::StatnegDistinct,
        Bench::StatnegDeep,
        Bench::Statpos,
        Bench::Churn,
        Bench::StatnegOwndir,
        Bench::StatnegMany,
        Bench::Statmix,
    ];

    /// The name used in `bench=NAME`.
    pub fn name(self) -> &'static str {
        match self {
            Bench::Statneg => "statneg",
            Bench::StatnegDistinct => "statneg-distinct",
            Bench::StatnegDeep => "statneg-deep",
            Bench::Statpos => "statpos",
            Bench::Churn => "churn",
            Bench::StatnegOwndir => "statneg-owndir",
            Bench::StatnegMany => "statneg-many",
            Bench::Statmix => "statmix",
        }
    }

    /// Parse a `bench=` value.
    pub fn from_name(s: &str) -> Option<Bench> {
        Bench::ALL.iter().copied().find(|b| b.name() == s)
    }
}

impl fmt::Display for Bench {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// An ENOENT design: a handle into the one registry,
/// [`fs::dcache::design::DESIGNS`] (its index there). Every name, help
/// line and error derives from the registry, so a design added there is
/// valid in `design=` with no edit here.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Design(u8);

impl Design {
    /// Every design of the registry, in its order.
    pub fn all() -> impl Iterator<Item = Design> + Clone {
        (0..DESIGNS.len()).map(|i| Design(i as u8))
    }

    /// The baseline other designs are compared with: the registry's first
    /// entry (Linux's behaviour).
    pub fn baseline() -> Design {
        Design(0)
    }

    /// The design at `idx` in the registry.
    pub fn from_index(idx: usize) -> Option<Design> {
        (idx < DESIGNS.len()).then_some(Design(idx as u8))
    }

    /// The registry's index of this design.
    pub fn index(self) -> usize {
        self.0 as usize
    }

    /// The design itself.
    pub fn imp(self) -> &'static dyn EnoentDesign {
        DESIGNS[self.index()]
    }

    /// The name used in `design=NAME` and `enoent=NAME`.
    pub fn name(self) -> &'static str {
        self.imp().name()
    }

    /// Parse a `design=` value.
    pub fn from_name(s: &str) -> Option<Design> {
        fs::dcache::design::by_name(s).and_then(Design::from_index)
    }

    /// The design called `name`; panics if the registry has none (for
    /// callers that name a design on purpose, e.g. a stress mode's default).
    pub fn named(name: &str) -> Design {
        Design::from_name(name).unwrap_or_else(|| panic!("no ENOENT design '{name}'"))
    }

    /// The tmpfs mount options selecting this design.
    pub fn mount_opts(self) -> alloc::string::String {
        alloc::format!("enoent={}", self.name())
    }
}

impl fmt::Debug for Design {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl fmt::Display for Design {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.pad(self.name())
    }
}

/// What a key accepts, for help texts and errors: fixed text, or the names
/// of the design registry (rendered on demand, without allocating).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Values {
    Text(&'static str),
    /// `|`-separated names of [`fs::dcache::design::DESIGNS`].
    Designs,
}

impl From<&'static str> for Values {
    fn from(s: &'static str) -> Self {
        Values::Text(s)
    }
}

impl fmt::Display for Values {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Values::Text(s) => f.pad(s),
            Values::Designs => {
                let mut buf = StackStr::<256>::new();
                let _ = fmt::write(&mut buf, format_args!("{}", fs::dcache::design::Names));
                f.pad(buf.as_str())
            }
        }
    }
}

/// A fixed buffer that formats without allocating (truncating when full,
/// on a character boundary).
pub struct StackStr<const N: usize> {
    buf: [u8; N],
    len: usize,
}

impl<const N: usize> StackStr<N> {
    pub fn new() -> Self {
        StackStr {
            buf: [0; N],
            len: 0,
        }
    }

    pub fn as_str(&self) -> &str {
        // Only whole UTF-8 characters are ever copied in.
        core::str::from_utf8(&self.buf[..self.len]).unwrap_or("")
    }
}

impl<const N: usize> Default for StackStr<N> {
    fn default() -> Self {
        Self::new()
    }
}

impl<const N: usize> fmt::Write for StackStr<N> {
    fn write_str(&mut self, s: &str) -> fmt::Result {
        for c in s.chars() {
            let mut tmp = [0u8; 4];
            let b = c.encode_utf8(&mut tmp).as_bytes();
            if self.len + b.len() > N {
                return Err(fmt::Error);
            }
            self.buf[self.len..self.len + b.len()].copy_from_slice(b);
            self.len += b.len();
        }
        Ok(())
    }
}

/// A complete, validated set of benchmark parameters.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Params {
    pub bench: Bench,
    pub tasks: usize,
    pub design: Design,
    pub warmup: u32,
    pub secs: u32,
    /// The spinlock kind every fs lock is created with.
    pub lock: LockKind,
    /// Spin-wait hints ([`core::hint::spin_loop`]) a task runs after each
    /// operation: a gap between operations that is the same on every CPU
    /// count, so a 1-CPU run prices it. Tasks that run the same loop with no
    /// gap fall into step behind a shared lock, and how they line up decides
    /// how often one finds another's transient dentry (docs/scaling-model.md,
    /// "Where it does not hold: past 2 CPUs"); a few hints shift that.
    pub pause: u32,
    /// Distinct names of `statneg-many` (per task) and `statmix`.
    pub names: u32,
}

impl Params {
    /// Parse whitespace-separated words (e.g. a command line).
    pub fn parse_line(line: &str) -> Result<Params, ParamError<'_>> {
        Params::parse_words(line.split_ascii_whitespace())
    }

    /// Parse words, each `key=value`. Every word must be a bench key.
    pub fn parse_words<'a, I: IntoIterator<Item = &'a str>>(
        words: I,
    ) -> Result<Params, ParamError<'a>> {
        let mut b = ParamsBuilder::new();
        for w in words {
            b.set_word(w)?;
        }
        b.finish()
    }
}

/// Prints the canonical words, which [`Params::parse_line`] reads back.
impl fmt::Display for Params {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "bench={} tasks={} design={} warmup={} secs={}",
            self.bench, self.tasks, self.design, self.warmup, self.secs
        )?;
        // The default lock stays unsaid: the line reads as it always did.
        if self.lock != LockKind::DEFAULT {
            write!(f, " lock={}", self.lock)?;
        }
        // So does no gap.
        if self.pause != 0 {
            write!(f, " pause={}", self.pause)?;
        }
        // And the default name count.
        if self.names != DEFAULT_NAMES {
            write!(f, " names={}", self.names)?;
        }
        Ok(())
    }
}

/// Collects keys one at a time (for a caller that parses its own words).
#[derive(Clone, Debug, Default)]
pub struct ParamsBuilder {
    bench: Option<Bench>,
    tasks: Option<usize>,
    design: Option<Design>,
    warmup: Option<u32>,
    secs: Option<u32>,
    lock: Option<LockKind>,
    pause: Option<u32>,
    names: Option<u32>,
}

impl ParamsBuilder {
    pub fn new() -> Self {
        Self::default()
    }

    /// Take one `key=value` word.
    pub fn set_word<'a>(&mut self, word: &'a str) -> Result<(), ParamError<'a>> {
        match word.split_once('=') {
            Some((k, v)) => self.set(k, v),
            None => Err(ParamError::NotKeyValue(word)),
        }
    }

    /// Take one key and its value.
    pub fn set<'a>(&mut self, key: &'a str, value: &'a str) -> Result<(), ParamError<'a>> {
        let bad = |expected: &'static str| ParamError::BadValue {
            key,
            value,
            expected: Values::Text(expected),
        };
        let dup = || ParamError::Repeated(key);
        match key {
            "bench" => {
                let b = Bench::from_name(value).ok_or(ParamError::BadValue {
                    key,
                    value,
                    expected: KEYS[0].values,
                })?;
                put(&mut self.bench, b).map_err(|_| dup())
            }
            "tasks" => {
                let n = parse_num(value)
                    .filter(|n| (1..=MAX_TASKS as u64).contains(n))
                    .ok_or_else(|| bad("a whole number from 1 to 255"))?;
                put(&mut self.tasks, n as usize).map_err(|_| dup())
            }
            "design" => {
                let d = Design::from_name(value).ok_or(ParamError::BadValue {
                    key,
                    value,
                    expected: Values::Designs,
                })?;
                put(&mut self.design, d).map_err(|_| dup())
            }
            "warmup" => {
                let n = parse_num(value)
                    .filter(|n| *n <= MAX_SECS as u64)
                    .ok_or_else(|| bad("whole seconds from 0 to 3600"))?;
                put(&mut self.warmup, n as u32).map_err(|_| dup())
            }
            "secs" => {
                let n = parse_num(value)
                    .filter(|n| (1..=MAX_SECS as u64).contains(n))
                    .ok_or_else(|| bad("whole seconds from 1 to 3600"))?;
                put(&mut self.secs, n as u32).map_err(|_| dup())
            }
            "lock" => {
                let k = LockKind::from_name(value)
                    .ok_or_else(|| bad("qspinlock, ticket, ttas or pvqspinlock"))?;
                put(&mut self.lock, k).map_err(|_| dup())
            }
            "pause" => {
                let n = parse_num(value)
                    .filter(|n| *n <= MAX_PAUSE as u64)
                    .ok_or_else(|| bad("a whole number from 0 to 100000"))?;
                put(&mut self.pause, n as u32).map_err(|_| dup())
            }
            "names" => {
                let n = parse_num(value)
                    .filter(|n| (1..=MAX_NAMES as u64).contains(n))
                    .ok_or_else(|| bad("a whole number from 1 to 1000000"))?;
                put(&mut self.names, n as u32).map_err(|_| dup())
            }
            _ => Err(ParamError::UnknownKey(key)),
        }
    }

    /// Has any key been given? (A kernel runs a benchmark only if so.)
    pub fn is_empty(&self) -> bool {
        self.bench.is_none()
            && self.tasks.is_none()
            && self.design.is_none()
            && self.warmup.is_none()
            && self.secs.is_none()
            && self.lock.is_none()
            && self.pause.is_none()
            && self.names.is_none()
    }

    /// Check that `bench` was given and fill in defaults.
    pub fn finish(&self) -> Result<Params, ParamError<'static>> {
        Ok(Params {
            bench: self.bench.ok_or(ParamError::MissingBench)?,
            tasks: self.tasks.unwrap_or(1),
            design: self.design.unwrap_or_else(Design::baseline),
            warmup: self.warmup.unwrap_or(2),
            secs: self.secs.unwrap_or(5),
            lock: self.lock.unwrap_or(LockKind::DEFAULT),
            pause: self.pause.unwrap_or(0),
            names: self.names.unwrap_or(DEFAULT_NAMES),
        })
    }
}

fn put<T>(slot: &mut Option<T>, v: T) -> Result<(), ()> {
    if slot.is_some() {
        return Err(());
    }
    *slot = Some(v);
    Ok(())
}

/// Decimal digits only (no sign, no spaces), at most 9 of them.
fn parse_num(s: &str) -> Option<u64> {
    if s.is_empty() || s.len() > 9 || !s.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    s.parse().ok()
}

/// Why a set of words was refused. `Display` names the problem, then lists
/// every valid key with its help line. It borrows the words it names from
/// the input (no allocation: the kernel parses before its heap exists).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ParamError<'a> {
    /// A key that is not in [`KEYS`].
    UnknownKey(&'a str),
    /// A word without `=`.
    NotKeyValue(&'a str),
    /// The same key twice.
    Repeated(&'a str),
    /// A value out of range or not one of the names.
    BadValue {
        key: &'a str,
        value: &'a str,
        expected: Values,
    },
    /// No `bench=` word.
    MissingBench,
}

impl<'a> ParamError<'a> {
    /// The first line of the message, without the key list.
    pub fn problem(&self) -> Problem<'a> {
        Problem(*self)
    }
}

/// The first line of a [`ParamError`]'s message (a `Display`, so that
/// rendering it allocates nothing either).
#[derive(Clone, Copy, Debug)]
pub struct Problem<'a>(ParamError<'a>);

impl fmt::Display for Problem<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.0 {
            ParamError::UnknownKey(k) => write!(f, "unknown key '{k}'"),
            ParamError::NotKeyValue(w) => write!(f, "'{w}' is not a key=value word"),
            ParamError::Repeated(k) => write!(f, "key '{k}' given twice"),
            ParamError::BadValue {
                key,
                value,
                expected,
            } => write!(f, "bad value '{value}' for {key}= (expected {expected})"),
            ParamError::MissingBench => f.write_str("missing bench=NAME"),
        }
    }
}

impl fmt::Display for ParamError<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "{}", self.problem())?;
        write_help(f)
    }
}

/// Write the key table, one line per key.
pub fn write_help(f: &mut dyn fmt::Write) -> fmt::Result {
    write!(f, "valid keys:")?;
    for k in KEYS {
        write!(f, "\n  {}={:<52} {}", k.key, k.values, k.help)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn display_round_trips() {
        let p = Params::parse_line("bench=churn tasks=3 design=negative warmup=0 secs=7").unwrap();
        assert_eq!(Params::parse_line(&alloc::format!("{p}")).unwrap(), p);
        assert_eq!(p.lock, LockKind::DEFAULT);
        assert!(!alloc::format!("{p}").contains("lock="));
        for k in LockKind::ALL {
            let p = Params::parse_line(&alloc::format!("bench=statneg lock={k}")).unwrap();
            assert_eq!(p.lock, k);
            assert_eq!(Params::parse_line(&alloc::format!("{p}")).unwrap(), p);
        }
        let e = Params::parse_line("bench=statneg lock=mcs").unwrap_err();
        assert!(
            e.to_string()
                .contains("expected qspinlock, ticket, ttas or pvqspinlock"),
            "{e}"
        );
        assert!(Params::parse_line("bench=statneg lock=ttas lock=ttas").is_err());
    }

    #[test]
    fn pause_is_a_gap_said_only_when_there_is_one() {
        let p = Params::parse_line("bench=statneg").unwrap();
        assert_eq!(p.pause, 0);
        assert!(!alloc::format!("{p}").contains("pause="));
        let p = Params::parse_line("bench=statneg tasks=2 pause=16").unwrap();
        assert_eq!(p.pause, 16);
        assert_eq!(
            alloc::format!("{p}"),
            "bench=statneg tasks=2 design=transient warmup=2 secs=5 pause=16"
        );
        assert_eq!(Params::parse_line(&alloc::format!("{p}")).unwrap(), p);
        let most = alloc::format!("bench=statneg pause={MAX_PAUSE}");
        assert_eq!(Params::parse_line(&most).unwrap().pause, MAX_PAUSE);
        for bad in ["pause=100001", "pause=-1", "pause=1.5", "pause="] {
            let line = alloc::format!("bench=statneg {bad}");
            let e = Params::parse_line(&line).unwrap_err();
            assert!(
                e.to_string()
                    .contains("expected a whole number from 0 to 100000"),
                "{line}: {e}"
            );
        }
        assert_eq!(
            Params::parse_line("bench=statneg pause=1 pause=2").unwrap_err(),
            ParamError::Repeated("pause")
        );
        // A kernel command line with only `pause=` still asks for a run.
        let mut b = ParamsBuilder::new();
        b.set("pause", "4").unwrap();
        assert!(!b.is_empty());
    }
}
