//! The kernel command line: whitespace-separated words, each either a bare
//! flag (`selftest`) or `key=value`. Parsing is strict: an unknown key, a
//! value that does not parse, a flag given a value, a key without its value
//! or a repeated key is an error, reported with the offending word; the
//! caller then prints [`Help`] (every key with a one-line description) and
//! exits non-zero.
//!
//! The benchmark words (`bench= tasks= design= warmup= secs=`) are not in
//! [`KEYS`]: they go to `bench::params`, host mode's parser, so both places
//! accept exactly the same words. Of those, `lock=` is also taken without
//! `bench=`: it picks the spinlock kind of every fs lock in any mode
//! ([`Config::lock`]; a benchmark's own `lock=` is the same word).
//!
//! Pure code that never allocates (the kernel parses before its heap
//! exists; errors borrow the words they name): [`parse`] is a function from
//! bytes to a [`Config`], unit-tested on the host (`cargo test -p kernel
//! --lib`) and fuzzed with allocation forbidden (`fs/tests/fuzz_harness`).
//! A line longer than [`MAX_LEN`] is refused ([`parse_boot`]), never cut. To add a key: add a field to [`Config`]
//! (with its default in `Config::default`) and one [`KeySpec`] line to
//! [`KEYS`] with a parser from the `value` helpers below.

use core::fmt;

/// Longest command line the kernel keeps (bytes, without the NUL). The
/// boot code copies at most this much and says when the loader passed
/// more; `qemu-run` refuses longer lines before booting.
pub const MAX_LEN: usize = 4096;

/// A fault to trigger on purpose (`crash=`), to see the exception path.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Crash {
    /// Read an unmapped address (page fault).
    PageFault,
    /// Recurse until the stack guard page is hit (double fault on IST).
    StackOverflow,
    /// The same on the last CPU (an AP's guarded stack) when there is one.
    StackOverflowAp,
    /// Execute `ud2` (invalid opcode).
    InvalidOpcode,
    /// `panic!`.
    Panic,
}

/// Everything the command line can set.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Config {
    /// Run the in-guest self-test suite and exit with its verdict.
    pub selftest: bool,
    /// Log level of the `log` macros.
    pub log: log::LevelFilter,
    /// LAPIC tick frequency in Hz.
    pub hz: u32,
    /// Milliseconds to wait for the APs to come online.
    pub smp_timeout_ms: u32,
    /// Crash on purpose after boot.
    pub crash: Option<Crash>,
    /// A guest benchmark: `bench=NAME tasks=N design=D warmup=S secs=S`,
    /// parsed by `bench::params` (the same parser as host mode).
    pub bench: Option<bench::params::Params>,
    /// `trace=lookup`: print every path-walk step to the console.
    pub trace_lookup: bool,
    /// `demo=`: a demonstration to run.
    pub demo: Option<Demo>,
    /// `stress=`: a stress test to run.
    pub stress: Option<Stress>,
    /// `secs=` as given (bench length, or stress length without `bench=`).
    pub secs: Option<u32>,
    /// `design=` as given (with `stress=`: only this design).
    pub design: Option<bench::params::Design>,
    /// `smb=//A.B.C.D/SHARE`: mount the share at /mnt and list it (`lsla`).
    pub smb: Option<crate::smbargs::SmbSource>,
    /// `smbopts=`: cifs mount options for `smb=`.
    pub smbopts: Option<crate::smbargs::Text<{ crate::smbargs::OPTS_MAX }>>,
    /// `smbread=PATH`: with `smb=`, read this share-relative file and
    /// print its checksum.
    pub smbread: Option<crate::smbargs::Text<{ crate::smbargs::READ_PATH_MAX }>>,
    /// `poison=0|1` as given: `1` fills freed memory and checks the fill on
    /// reuse from boot on; `stress=rcu` turns it on unless `poison=0`.
    pub poison: Option<bool>,
    /// `failslab=N`: refuse every N-th fs allocation (`fs::fault`).
    pub failslab: Option<u64>,
    /// `lock=K` as given: the kind of every fs lock (without it
    /// [`GUEST_LOCK`]; with `bench=` also the benchmark's `lock=`).
    pub lock: Option<bench::params::LockKind>,
    /// `host_cores=N`: the host cores QEMU may run on (`qemu-run` passes
    /// it), so that results can say when vCPUs outnumber them.
    pub host_cores: Option<u32>,
}

/// The lock kind fs locks get in the guest unless `lock=` says otherwise
/// (a benchmark's own default stays `bench::params`'s, qspinlock, as on the
/// host): the paravirt lock, because guests usually run with more vCPUs
/// than the host has cores free (64-vCPU selftest on 2 cores:
/// `fs_lookups_all_cpus_per_design` 113-253 ms in 10 boots, against
/// 138 ms to 88 s with qspinlock; docs/overcommit.md).
pub const GUEST_LOCK: bench::params::LockKind = bench::params::LockKind::Pvqspinlock;

/// What `demo=` runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Demo {
    /// Trace one `stat("/a/b/missing")` per ENOENT design.
    Trace,
    /// statneg for 1 s per design on up to 4 CPUs; one table.
    Table,
    /// `bench pingpong` between the first two CPUs.
    Pingpong,
}

/// What `stress=` runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stress {
    /// Create/unlink/rename churn against checked lookups on every CPU.
    Rcu,
    /// 1,000,000 distinct missing names per design in a small guest.
    Mem,
    /// Fill tmpfs until memory admission says ENOMEM, then check recovery.
    Oom,
    /// Distinct missing names from every CPU for `secs=` (default 60), the
    /// negative design: memory must stay bounded.
    Hostile,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            selftest: false,
            log: log::LevelFilter::Info,
            hz: 100,
            smp_timeout_ms: 60_000,
            crash: None,
            bench: None,
            trace_lookup: false,
            demo: None,
            stress: None,
            secs: None,
            design: None,
            smb: None,
            smbopts: None,
            smbread: None,
            poison: None,
            failslab: None,
            lock: None,
            host_cores: None,
        }
    }
}

/// How a key takes its value.
#[derive(Clone, Copy)]
pub enum Kind {
    /// Bare word, no `=`.
    Flag(fn(&mut Config)),
    /// `key=value`; the parser returns what was expected on error.
    Value(fn(&mut Config, &str) -> Result<(), &'static str>),
}

/// One command-line key.
#[derive(Clone, Copy)]
pub struct KeySpec {
    /// The key as typed.
    pub name: &'static str,
    /// Value syntax for the help (`""` for flags).
    pub syntax: &'static str,
    /// One-line help.
    pub help: &'static str,
    /// Flag or value, with its parser.
    pub kind: Kind,
}

/// Every key the kernel accepts.
pub const KEYS: &[KeySpec] = &[
    KeySpec {
        name: "selftest",
        syntax: "",
        help: "run the in-guest self-tests, print `N passed, M failed`, exit 0 iff M is 0",
        kind: Kind::Flag(|c| c.selftest = true),
    },
    KeySpec {
        name: "log",
        syntax: "off|error|warn|info|debug|trace",
        help: "log level of kernel messages (default info)",
        kind: Kind::Value(|c, v| {
            c.log = value::one_of(
                v,
                &[
                    ("off", log::LevelFilter::Off),
                    ("error", log::LevelFilter::Error),
                    ("warn", log::LevelFilter::Warn),
                    ("info", log::LevelFilter::Info),
                    ("debug", log::LevelFilter::Debug),
                    ("trace", log::LevelFilter::Trace),
                ],
                "off, error, warn, info, debug or trace",
            )?;
            Ok(())
        }),
    },
    KeySpec {
        name: "hz",
        syntax: "10..1000",
        help: "per-CPU timer tick frequency in Hz (default 100)",
        kind: Kind::Value(|c, v| {
            c.hz = value::int_in(v, 10, 1000, "an integer from 10 to 1000")? as u32;
            Ok(())
        }),
    },
    KeySpec {
        name: "smp_timeout",
        syntax: "100..600000",
        help: "milliseconds to wait for all CPUs to come online (default 60000)",
        kind: Kind::Value(|c, v| {
            c.smp_timeout_ms =
                value::int_in(v, 100, 600_000, "an integer from 100 to 600000")? as u32;
            Ok(())
        }),
    },
    KeySpec {
        name: "crash",
        syntax: "pagefault|stackoverflow[-ap]|ud|panic",
        help: "crash on purpose after boot, to see the fault report and exit status",
        kind: Kind::Value(|c, v| {
            c.crash = Some(value::one_of(
                v,
                &[
                    ("pagefault", Crash::PageFault),
                    ("stackoverflow", Crash::StackOverflow),
                    ("stackoverflow-ap", Crash::StackOverflowAp),
                    ("ud", Crash::InvalidOpcode),
                    ("panic", Crash::Panic),
                ],
                "pagefault, stackoverflow, stackoverflow-ap, ud or panic",
            )?);
            Ok(())
        }),
    },
    KeySpec {
        name: "trace",
        syntax: "lookup",
        help: "print every step of every path walk on the console, lines prefixed `# `",
        kind: Kind::Value(|c, v| {
            c.trace_lookup = value::one_of(v, &[("lookup", true)], "lookup")?;
            Ok(())
        }),
    },
    KeySpec {
        name: "demo",
        syntax: "trace|table|pingpong",
        help: "trace: trace stat(\"/a/b/missing\") per design; table: 1 s statneg per design, one table; pingpong: cache-line transfer ns between CPUs 0 and 1",
        kind: Kind::Value(|c, v| {
            c.demo = Some(value::one_of(
                v,
                &[
                        ("trace", Demo::Trace),
                        ("table", Demo::Table),
                        ("pingpong", Demo::Pingpong),
                    ],
                "trace, table or pingpong",
            )?);
            Ok(())
        }),
    },
    KeySpec {
        name: "stress",
        syntax: "rcu|mem|oom|hostile",
        help: "rcu: churn vs checked lookups on every CPU (secs=S); mem: 1M missing names per design; oom: fill tmpfs to ENOMEM and recover; hostile: 1M distinct misses/s per CPU for secs=S (60), negative design",
        kind: Kind::Value(|c, v| {
            c.stress = Some(value::one_of(
                v,
                &[
                    ("rcu", Stress::Rcu),
                    ("mem", Stress::Mem),
                    ("oom", Stress::Oom),
                    ("hostile", Stress::Hostile),
                ],
                "rcu, mem, oom or hostile",
            )?);
            Ok(())
        }),
    },
    KeySpec {
        name: "failslab",
        syntax: "1..1000000000",
        help: "fault injection: every N-th fs allocation fails with ENOMEM (as Linux failslab's interval)",
        kind: Kind::Value(|c, v| {
            c.failslab = Some(value::int_in(
                v,
                1,
                1_000_000_000,
                "an integer from 1 to 1000000000",
            )?);
            Ok(())
        }),
    },
    KeySpec {
        name: "poison",
        syntax: "0|1",
        help: "1: fill freed memory with 0x6b, check the fill on reuse (use-after-free detector); stress=rcu: on unless 0",
        kind: Kind::Value(|c, v| {
            c.poison = Some(value::one_of(
                v,
                &[("0", false), ("1", true)],
                "0 or 1",
            )?);
            Ok(())
        }),
    },
    KeySpec {
        name: "smb",
        syntax: "//A.B.C.D/SHARE",
        help: "mount the SMB share at /mnt over virtio-net, run `lsla` cold then warm, exit",
        kind: Kind::Value(|c, v| {
            c.smb = Some(crate::smbargs::parse_source(v)?);
            Ok(())
        }),
    },
    KeySpec {
        name: "smbopts",
        syntax: "username=U,password=P,eacache=D,...",
        help: "cifs mount options for `smb=` (as mount -t cifs -o; eacache=DESIGN, nouser_xattr; the designs: docs/designs.md)",
        kind: Kind::Value(|c, v| {
            c.smbopts = Some(crate::smbargs::parse_opts(v)?);
            Ok(())
        }),
    },
    KeySpec {
        name: "host_cores",
        syntax: "1..4096",
        help: "host cores the vCPUs run on (qemu-run passes it; the demo table and benchmark notes name overcommit)",
        kind: Kind::Value(|c, v| {
            c.host_cores = Some(value::int_in(v, 1, 4096, "a core count from 1 to 4096")? as u32);
            Ok(())
        }),
    },
    KeySpec {
        name: "smbread",
        syntax: "PATH",
        help: "with smb=: after the listing read the share-relative file PATH, print its size and SHA-256",
        kind: Kind::Value(|c, v| {
            c.smbread = Some(crate::smbargs::parse_read_path(v)?);
            Ok(())
        }),
    },
];

/// Value parsers for [`KeySpec`] entries.
pub mod value {
    /// A decimal integer in `lo..=hi`.
    pub fn int_in(v: &str, lo: u64, hi: u64, expected: &'static str) -> Result<u64, &'static str> {
        if v.is_empty() || v.len() > 19 || !v.bytes().all(|b| b.is_ascii_digit()) {
            return Err(expected);
        }
        let n: u64 = v.parse().map_err(|_| expected)?;
        if n < lo || n > hi {
            return Err(expected);
        }
        Ok(n)
    }

    /// One of the listed words.
    pub fn one_of<T: Copy>(
        v: &str,
        table: &[(&str, T)],
        expected: &'static str,
    ) -> Result<T, &'static str> {
        table
            .iter()
            .find(|(k, _)| *k == v)
            .map(|&(_, t)| t)
            .ok_or(expected)
    }
}

/// Why a command line was rejected.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CmdlineError<'a> {
    /// The bytes are not UTF-8.
    NotUtf8,
    /// A word names no key.
    UnknownKey(&'a str),
    /// A word starts with `=`.
    EmptyKey(&'a str),
    /// `key=value` where the value does not parse.
    BadValue {
        /// The key.
        key: &'static str,
        /// The value given.
        value: &'a str,
        /// What would have been accepted.
        expected: bench::params::Values,
    },
    /// A value key given as a bare word (or with an empty value).
    MissingValue(&'static str),
    /// A flag given a value.
    UnexpectedValue {
        /// The flag.
        key: &'static str,
        /// The value given.
        value: &'a str,
    },
    /// The same key twice.
    Duplicate(&'static str),
    /// A benchmark word other than `secs=`/`design=` without `bench=NAME`.
    NeedsBench(&'static str),
    /// Two things to run that exclude each other.
    Conflict(&'static str, &'static str),
    /// A setting given without the key it configures (`smbopts=` without
    /// `smb=`): it would do nothing.
    Needs {
        /// The key given.
        key: &'static str,
        /// The key it needs.
        needs: &'static str,
    },
    /// The loader passed more than [`MAX_LEN`] bytes; the rest was cut.
    TooLong {
        /// How many bytes the kernel kept.
        max: usize,
    },
}

impl fmt::Display for CmdlineError<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CmdlineError::NotUtf8 => write!(f, "the command line is not valid UTF-8"),
            CmdlineError::UnknownKey(k) => write!(f, "unknown key `{k}`"),
            CmdlineError::EmptyKey(w) => write!(f, "`{w}` has no key before `=`"),
            CmdlineError::BadValue {
                key,
                value,
                expected,
            } => {
                write!(f, "bad value `{value}` for `{key}`: expected {expected}")
            }
            CmdlineError::MissingValue(k) => write!(f, "`{k}` needs a value (`{k}=...`)"),
            CmdlineError::UnexpectedValue { key, value } => {
                write!(f, "`{key}` is a flag and takes no value (got `{value}`)")
            }
            CmdlineError::Duplicate(k) => write!(f, "`{k}` given more than once"),
            CmdlineError::NeedsBench(k) => write!(f, "`{k}=` needs `bench=NAME`"),
            CmdlineError::Conflict(a, b) => write!(f, "`{a}` and `{b}` cannot run together"),
            CmdlineError::Needs { key, needs } => {
                write!(f, "`{key}=` does nothing without `{needs}=`")
            }
            CmdlineError::TooLong { max } => write!(
                f,
                "the command line is longer than {max} bytes (E2BIG); it was cut, so it is refused"
            ),
        }
    }
}

/// Parse the command line as the boot code copied it: `truncated` says the
/// loader passed more than [`MAX_LEN`] bytes, which is refused before the
/// kept part is read (a cut line could silently lose its last words).
pub fn parse_boot(bytes: &[u8], truncated: bool) -> Result<Config, CmdlineError<'_>> {
    if truncated || bytes.len() > MAX_LEN {
        return Err(CmdlineError::TooLong { max: MAX_LEN });
    }
    parse_bytes(bytes)
}

/// Parse raw command-line bytes.
pub fn parse_bytes(bytes: &[u8]) -> Result<Config, CmdlineError<'_>> {
    parse(core::str::from_utf8(bytes).map_err(|_| CmdlineError::NotUtf8)?)
}

/// Parse a command line.
pub fn parse(line: &str) -> Result<Config, CmdlineError<'_>> {
    let mut cfg = Config::default();
    let mut seen = [false; 64];
    let mut bench_words = bench::params::ParamsBuilder::new();
    let mut other_bench_key = None;
    for word in line.split_ascii_whitespace() {
        let (key, value) = match word.split_once('=') {
            Some((k, v)) => (k, Some(v)),
            None => (word, None),
        };
        if key.is_empty() {
            return Err(CmdlineError::EmptyKey(word));
        }
        if let Some(bk) = bench::params::KEYS.iter().find(|k| k.key == key) {
            bench_word(&mut cfg, &mut bench_words, bk, value)?;
            if !matches!(bk.key, "bench" | "secs" | "design" | "lock") {
                other_bench_key.get_or_insert(bk.key);
            }
            continue;
        }
        let idx = KEYS
            .iter()
            .position(|k| k.name == key)
            .ok_or(CmdlineError::UnknownKey(key))?;
        let spec = &KEYS[idx];
        if seen[idx] {
            return Err(CmdlineError::Duplicate(spec.name));
        }
        seen[idx] = true;
        match (spec.kind, value) {
            (Kind::Flag(set), None) => set(&mut cfg),
            (Kind::Flag(_), Some(v)) => {
                return Err(CmdlineError::UnexpectedValue {
                    key: spec.name,
                    value: v,
                })
            }
            (Kind::Value(_), None) | (Kind::Value(_), Some("")) => {
                return Err(CmdlineError::MissingValue(spec.name))
            }
            (Kind::Value(set), Some(v)) => {
                set(&mut cfg, v).map_err(|expected| CmdlineError::BadValue {
                    key: spec.name,
                    value: v,
                    expected: expected.into(),
                })?
            }
        }
    }
    if bench_words.finish().is_ok() {
        cfg.bench = bench_words.finish().ok();
    } else if let Some(k) = other_bench_key {
        return Err(CmdlineError::NeedsBench(k));
    } else if cfg.stress.is_none() && (cfg.secs.is_some() || cfg.design.is_some()) {
        return Err(CmdlineError::NeedsBench(if cfg.secs.is_some() {
            "secs"
        } else {
            "design"
        }));
    }
    let modes = [
        ("selftest", cfg.selftest),
        ("bench", cfg.bench.is_some()),
        ("demo", cfg.demo.is_some()),
        ("stress", cfg.stress.is_some()),
        ("smb", cfg.smb.is_some()),
    ];
    let mut on = modes.iter().filter(|m| m.1).map(|m| m.0);
    if let (Some(a), Some(b)) = (on.next(), on.next()) {
        return Err(CmdlineError::Conflict(a, b));
    }
    if cfg.smbopts.is_some() && cfg.smb.is_none() {
        return Err(CmdlineError::Needs {
            key: "smbopts",
            needs: "smb",
        });
    }
    Ok(cfg)
}

/// One benchmark word, checked by `bench::params` (its own table and
/// errors, mapped onto ours). `secs` and `design` are also kept in `cfg`
/// for `stress=`.
fn bench_word<'a>(
    cfg: &mut Config,
    words: &mut bench::params::ParamsBuilder,
    bk: &'static bench::params::KeyInfo,
    value: Option<&'a str>,
) -> Result<(), CmdlineError<'a>> {
    use bench::params::ParamError;
    let v = match value {
        None | Some("") => return Err(CmdlineError::MissingValue(bk.key)),
        Some(v) => v,
    };
    words.set(bk.key, v).map_err(|e| match e {
        ParamError::Repeated(_) => CmdlineError::Duplicate(bk.key),
        ParamError::BadValue { expected, .. } => CmdlineError::BadValue {
            key: bk.key,
            value: v,
            expected,
        },
        _ => CmdlineError::BadValue {
            key: bk.key,
            value: v,
            expected: bk.values,
        },
    })?;
    match bk.key {
        "secs" => cfg.secs = v.parse().ok(),
        "design" => cfg.design = bench::params::Design::from_name(v),
        "lock" => cfg.lock = bench::params::LockKind::from_name(v),
        _ => {}
    }
    Ok(())
}

/// The key reference: one line per key.
pub struct Help;

impl fmt::Display for Help {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "valid kernel command-line keys:")?;
        for k in KEYS {
            let word = if k.syntax.is_empty() {
                k.name.into()
            } else {
                Word(k.name, k.syntax.into())
            };
            writeln!(f, "  {:<44} {}", word, k.help)?;
        }
        for k in bench::params::KEYS {
            writeln!(f, "  {:<44} {}", Word(k.key, k.values), k.help)?;
        }
        Ok(())
    }
}

/// `key=syntax` rendered for the help table (padding honoured).
#[derive(Clone, Copy)]
struct Word(&'static str, bench::params::Values);

impl From<&'static str> for Word {
    fn from(s: &'static str) -> Self {
        Word(s, "".into())
    }
}

impl fmt::Display for Word {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        use fmt::Write;
        let mut buf = bench::params::StackStr::<160>::new();
        let _ = buf.write_str(self.0);
        if self.1 != bench::params::Values::Text("") {
            let _ = write!(buf, "={}", self.1);
        }
        f.pad(buf.as_str())
    }
}

// A path from this file's directory, so that the fuzz harness, which
// includes this file by path, finds it too.
#[cfg(test)]
#[path = "cmdline/tests.rs"]
mod tests;
