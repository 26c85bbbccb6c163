//! The benchmark words: `bench=NAME tasks=N design=D warmup=S secs=S lock=K
//! pause=P names=N frontend=F`, as a key table of the one command-line parser
//! ([`crate::cmdline`]), and the [`Params`] they make.
//!
//! Both places the words appear parse them with the same table: host mode
//! (`bench host WORDS`, [`Params::parse_words`] over [`KEYS`]) and the
//! guest kernel's command line, which puts [`keys`] beside its own table and
//! calls [`ParamsBuilder::finish`] once every word is read.
//!
//! Touches nothing: pure parsing that never allocates, errors included,
//! because the kernel parses its command line before its heap exists.

use core::fmt;

use fs::dcache::design::{EnoentDesign, DESIGNS};

use crate::cmdline::{self, value::int_in, CmdlineError, Help, Key, Kind, Values};
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

/// The benchmark's keys for a parse whose state `C` holds a
/// [`ParamsBuilder`], in the order the help lists them: host mode parses
/// with [`KEYS`] alone, the kernel with its own table beside these.
pub const fn keys<C: AsMut<ParamsBuilder>>() -> [Key<C>; 9] {
    [
        Key {
            name: "bench",
            syntax: BENCH_NAMES,
            help: "workload to run (required)",
            kind: Kind::Value(|c, v| {
                c.as_mut().bench = Some(Bench::from_name(v).ok_or(BENCH_NAMES)?);
                Ok(())
            }),
        },
        Key {
            name: "tasks",
            syntax: Values::Text("1..255"),
            help: "tasks, one per CPU, pinned (default 1)",
            kind: Kind::Value(|c, v| {
                let n = int_in(v, 1, MAX_TASKS as u64, "a whole number from 1 to 255")?;
                c.as_mut().tasks = Some(n as usize);
                Ok(())
            }),
        },
        Key {
            name: "design",
            syntax: Values::Render(design_names),
            help: "tmpfs ENOENT design, mounted as enoent=DESIGN (default: the first, Linux's)",
            kind: Kind::Value(|c, v| {
                let d = Design::from_name(v).ok_or(Values::Render(design_names))?;
                c.as_mut().design = Some(d);
                Ok(())
            }),
        },
        Key {
            name: "warmup",
            syntax: Values::Text("0..3600"),
            help: "warmup seconds (default 2)",
            kind: Kind::Value(|c, v| {
                let n = int_in(v, 0, MAX_SECS as u64, "whole seconds from 0 to 3600")?;
                c.as_mut().warmup = Some(n as u32);
                Ok(())
            }),
        },
        Key {
            name: "secs",
            syntax: Values::Text("1..3600"),
            help: "measured seconds (default 5)",
            kind: Kind::Value(|c, v| {
                let n = int_in(v, 1, MAX_SECS as u64, "whole seconds from 1 to 3600")?;
                c.as_mut().secs = Some(n as u32);
                Ok(())
            }),
        },
        Key {
            name: "lock",
            syntax: Values::Text("qspinlock|ticket|ttas|pvqspinlock"),
            help: "spinlock of the lookup path (d_lock, hash, in-lookup, LRU; default qspinlock; \
                   pvqspinlock halts long waiters: guests on fewer host cores)",
            kind: Kind::Value(|c, v| {
                let expected = Values::Text("qspinlock, ticket, ttas or pvqspinlock");
                c.as_mut().lock = Some(LockKind::from_name(v).ok_or(expected)?);
                Ok(())
            }),
        },
        Key {
            name: "pause",
            syntax: Values::Text("0..100000"),
            help: "CPU spin-wait hints (x86 `pause`) each task runs between two operations (default 0)",
            kind: Kind::Value(|c, v| {
                let n = int_in(v, 0, MAX_PAUSE as u64, "a whole number from 0 to 100000")?;
                c.as_mut().pause = Some(n as u32);
                Ok(())
            }),
        },
        Key {
            name: "names",
            syntax: Values::Text("1..1000000"),
            help: "distinct names per task of statneg-many, files and misses of statmix (default 1000)",
            kind: Kind::Value(|c, v| {
                let n = int_in(v, 1, MAX_NAMES as u64, "a whole number from 1 to 1000000")?;
                c.as_mut().names = Some(n as u32);
                Ok(())
            }),
        },
        Key {
            name: "frontend",
            syntax: Values::Text("stat|walk"),
            help: "how a stat enters the VFS: stat, as Linux's newfstatat (names buffer, copy from \
                   the caller, struct stat out, one real cheap system call per stat in host mode), \
                   or walk, the path walk alone (default stat)",
            kind: Kind::Value(|c, v| {
                let expected = Values::Text("stat or walk");
                c.as_mut().frontend = Some(Frontend::from_name(v).ok_or(expected)?);
                Ok(())
            }),
        },
    ]
}

/// The names `bench=` takes.
const BENCH_NAMES: Values = Values::Text(
    "statneg|statneg-distinct|statneg-deep|statpos|churn|statneg-owndir|statneg-many|statmix",
);

/// The benchmark's keys on their own (host mode's table).
pub const KEYS: &[Key<ParamsBuilder>] = &keys::<ParamsBuilder>();

/// Host mode's key reference, printed after an error.
pub const HELP: Help<'static, ParamsBuilder> = Help {
    title: "valid keys:",
    tables: &[KEYS],
};

/// The names of the design registry, `|`-separated.
fn design_names(w: &mut dyn fmt::Write) -> fmt::Result {
    write!(w, "{}", fs::dcache::design::Names)
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

/// How a workload's `stat` enters the VFS (`frontend=`).
///
/// `Stat` is the default because the figures are there to predict Linux:
/// a Linux `stat()` pays the system call, `getname`'s names buffer and
/// copy, the walk's set-up and `struct stat` out around the walk, and once
/// a design keeps the walk in RCU mode that rest is most of the cost
/// (docs/bench/frontend.md). Through the walk alone every design that
/// shortens the walk looks several times better than Linux will show it.
/// `Walk` stays for looking at the walk by itself.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Frontend {
    /// [`fs::stat::sys_newfstatat`], after the executor's system call cost.
    Stat,
    /// [`fs::vfs::Vfs::stat`]: the path walk alone.
    Walk,
}

impl Frontend {
    /// What a run uses unless `frontend=` says otherwise.
    pub const DEFAULT: Frontend = Frontend::Stat;
    /// Both, in the order comparisons run them.
    pub const ALL: [Frontend; 2] = [Frontend::Stat, Frontend::Walk];

    /// The name used in `frontend=NAME`.
    pub fn name(self) -> &'static str {
        match self {
            Frontend::Stat => "stat",
            Frontend::Walk => "walk",
        }
    }

    /// Parse a `frontend=` value.
    pub fn from_name(s: &str) -> Option<Frontend> {
        Frontend::ALL.iter().copied().find(|f| f.name() == s)
    }
}

impl fmt::Display for Frontend {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.pad(self.name())
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
    /// How each `stat` enters the VFS.
    pub frontend: Frontend,
}

impl Params {
    /// Parse a line of words (host mode's, or a kernel command line holding
    /// only benchmark words), split as [`cmdline::words`] splits.
    pub fn parse_line(line: &str) -> Result<Params, CmdlineError<'_>> {
        Params::parse_words(cmdline::words(line))
    }

    /// Parse words, each a key of [`KEYS`] (`bench=` required).
    pub fn parse_words<'a, I: IntoIterator<Item = &'a str>>(
        words: I,
    ) -> Result<Params, CmdlineError<'a>> {
        let mut b = ParamsBuilder::new();
        cmdline::parse_words(words, &mut b, &[KEYS])?;
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
        // And the default frontend (the `testcase:` line always names it).
        if self.frontend != Frontend::DEFAULT {
            write!(f, " frontend={}", self.frontend)?;
        }
        Ok(())
    }
}

/// The benchmark words given so far, each as its key's parser left it
/// (the parse state of [`keys`]; [`cmdline::parse_words`] refuses repeats).
#[derive(Clone, Debug, Default)]
pub struct ParamsBuilder {
    pub bench: Option<Bench>,
    pub tasks: Option<usize>,
    pub design: Option<Design>,
    pub warmup: Option<u32>,
    pub secs: Option<u32>,
    pub lock: Option<LockKind>,
    pub pause: Option<u32>,
    pub names: Option<u32>,
    pub frontend: Option<Frontend>,
}

impl AsMut<ParamsBuilder> for ParamsBuilder {
    fn as_mut(&mut self) -> &mut ParamsBuilder {
        self
    }
}

impl ParamsBuilder {
    pub fn new() -> Self {
        Self::default()
    }

    /// The first key given (in [`KEYS`]' order) that configures a run and
    /// means nothing without `bench=`: `tasks`, `warmup`, `pause`, `names`,
    /// `frontend`.
    /// (`secs`, `design` and `lock` have uses of their own in the kernel.)
    pub fn run_only_key(&self) -> Option<&'static str> {
        [
            ("tasks", self.tasks.is_some()),
            ("warmup", self.warmup.is_some()),
            ("pause", self.pause.is_some()),
            ("names", self.names.is_some()),
            ("frontend", self.frontend.is_some()),
        ]
        .into_iter()
        .find(|&(_, given)| given)
        .map(|(k, _)| k)
    }

    /// Check that `bench` was given and fill in defaults.
    pub fn finish(&self) -> Result<Params, CmdlineError<'static>> {
        Ok(Params {
            bench: self.bench.ok_or(CmdlineError::Required("bench"))?,
            tasks: self.tasks.unwrap_or(1),
            design: self.design.unwrap_or_else(Design::baseline),
            warmup: self.warmup.unwrap_or(2),
            secs: self.secs.unwrap_or(5),
            lock: self.lock.unwrap_or(LockKind::DEFAULT),
            pause: self.pause.unwrap_or(0),
            names: self.names.unwrap_or(DEFAULT_NAMES),
            frontend: self.frontend.unwrap_or(Frontend::DEFAULT),
        })
    }
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
    fn frontend_defaults_to_stat_and_round_trips() {
        let p = Params::parse_line("bench=statneg").unwrap();
        assert_eq!(p.frontend, Frontend::Stat);
        assert!(!alloc::format!("{p}").contains("frontend="));
        let p = Params::parse_line("bench=statneg frontend=walk tasks=2").unwrap();
        assert_eq!(p.frontend, Frontend::Walk);
        assert_eq!(
            alloc::format!("{p}"),
            "bench=statneg tasks=2 design=transient warmup=2 secs=5 frontend=walk"
        );
        assert_eq!(Params::parse_line(&alloc::format!("{p}")).unwrap(), p);
        let p = Params::parse_line("frontend=stat bench=statpos").unwrap();
        assert_eq!((p.bench, p.frontend), (Bench::Statpos, Frontend::Stat));
        let e = Params::parse_line("bench=statneg frontend=syscall").unwrap_err();
        assert!(e.to_string().contains("expected stat or walk"), "{e}");
        assert_eq!(
            Params::parse_line("bench=statneg frontend=").unwrap_err(),
            CmdlineError::MissingValue("frontend")
        );
        assert_eq!(
            Params::parse_line("bench=statneg frontend=walk frontend=stat").unwrap_err(),
            CmdlineError::Duplicate("frontend")
        );
        // Alone on a kernel command line it asks for a run without saying
        // which: refused for want of `bench=`.
        let mut b = ParamsBuilder::new();
        crate::cmdline::parse_words(["frontend=walk"], &mut b, &[KEYS]).unwrap();
        assert_eq!(b.run_only_key(), Some("frontend"));
        assert_eq!(b.finish().unwrap_err(), CmdlineError::Required("bench"));
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
        for bad in ["pause=100001", "pause=-1", "pause=1.5"] {
            let line = alloc::format!("bench=statneg {bad}");
            let e = Params::parse_line(&line).unwrap_err();
            assert!(
                e.to_string()
                    .contains("expected a whole number from 0 to 100000"),
                "{line}: {e}"
            );
        }
        assert_eq!(
            Params::parse_line("bench=statneg pause=").unwrap_err(),
            CmdlineError::MissingValue("pause")
        );
        assert_eq!(
            Params::parse_line("bench=statneg pause=1 pause=2").unwrap_err(),
            CmdlineError::Duplicate("pause")
        );
        // A kernel command line with only `pause=` asks for a run: the
        // kernel refuses it for want of `bench=`.
        let mut b = ParamsBuilder::new();
        crate::cmdline::parse_words(["pause=4"], &mut b, &[KEYS]).unwrap();
        assert_eq!(b.run_only_key(), Some("pause"));
    }
}
