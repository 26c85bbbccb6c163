//! The kernel command line: whitespace-separated words, each either a bare
//! flag (`selftest`) or `key=value`. Parsing is strict: an unknown key, a
//! value that does not parse, a flag given a value, a key without its value
//! or a repeated key is an error, reported with the offending word; the
//! caller then prints [`Help`] (every key with a one-line description) and
//! exits non-zero.
//!
//! Pure code (no hardware, no allocation): [`parse`] is a function from
//! bytes to a [`Config`], unit-tested on the host (`cargo test -p kernel
//! --lib`) and ready for fuzzing. To add a key: add a field to [`Config`]
//! (with its default in `Config::default`) and one [`KeySpec`] line to
//! [`KEYS`] with a parser from the `value` helpers below.

use core::fmt;

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
}

impl Default for Config {
    fn default() -> Self {
        Config {
            selftest: false,
            log: log::LevelFilter::Info,
            hz: 100,
            smp_timeout_ms: 60_000,
            crash: None,
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
        expected: &'static str,
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
        }
    }
}

/// Parse raw command-line bytes.
pub fn parse_bytes(bytes: &[u8]) -> Result<Config, CmdlineError<'_>> {
    parse(core::str::from_utf8(bytes).map_err(|_| CmdlineError::NotUtf8)?)
}

/// Parse a command line.
pub fn parse(line: &str) -> Result<Config, CmdlineError<'_>> {
    let mut cfg = Config::default();
    let mut seen = [false; 64];
    for word in line.split_ascii_whitespace() {
        let (key, value) = match word.split_once('=') {
            Some((k, v)) => (k, Some(v)),
            None => (word, None),
        };
        if key.is_empty() {
            return Err(CmdlineError::EmptyKey(word));
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
                    expected,
                })?
            }
        }
    }
    Ok(cfg)
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
                Word(k.name, k.syntax)
            };
            writeln!(f, "  {:<44} {}", word, k.help)?;
        }
        Ok(())
    }
}

/// `key=syntax` rendered for the help table (padding honoured).
#[derive(Clone, Copy)]
struct Word(&'static str, &'static str);

impl From<&'static str> for Word {
    fn from(s: &'static str) -> Self {
        Word(s, "")
    }
}

impl fmt::Display for Word {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut buf = [0u8; 96];
        let mut n = 0;
        for part in [self.0, if self.1.is_empty() { "" } else { "=" }, self.1] {
            let b = part.as_bytes();
            let m = b.len().min(buf.len() - n);
            buf[n..n + m].copy_from_slice(&b[..m]);
            n += m;
        }
        f.pad(core::str::from_utf8(&buf[..n]).unwrap_or(self.0))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn empty_line_gives_defaults() {
        assert_eq!(parse(""), Ok(Config::default()));
        assert_eq!(parse("   \t "), Ok(Config::default()));
    }

    #[test]
    fn flags_and_values() {
        let c = parse("selftest log=debug hz=250 crash=ud").unwrap();
        assert!(c.selftest);
        assert_eq!(c.log, log::LevelFilter::Debug);
        assert_eq!(c.hz, 250);
        assert_eq!(c.crash, Some(Crash::InvalidOpcode));
    }

    #[test]
    fn unknown_key() {
        assert_eq!(parse("bogus=1"), Err(CmdlineError::UnknownKey("bogus")));
        assert_eq!(
            parse("selftest bogus"),
            Err(CmdlineError::UnknownKey("bogus"))
        );
    }

    #[test]
    fn bad_values() {
        assert!(matches!(
            parse("hz=0"),
            Err(CmdlineError::BadValue {
                key: "hz",
                value: "0",
                ..
            })
        ));
        assert!(matches!(
            parse("hz=1001"),
            Err(CmdlineError::BadValue { .. })
        ));
        assert!(matches!(parse("hz=+5"), Err(CmdlineError::BadValue { .. })));
        assert!(matches!(
            parse("hz=99999999999999999999999"),
            Err(CmdlineError::BadValue { .. })
        ));
        assert!(matches!(
            parse("log=loud"),
            Err(CmdlineError::BadValue { key: "log", .. })
        ));
    }

    #[test]
    fn shape_errors() {
        assert_eq!(parse("hz"), Err(CmdlineError::MissingValue("hz")));
        assert_eq!(parse("hz="), Err(CmdlineError::MissingValue("hz")));
        assert_eq!(
            parse("selftest=1"),
            Err(CmdlineError::UnexpectedValue {
                key: "selftest",
                value: "1"
            })
        );
        assert_eq!(parse("=1"), Err(CmdlineError::EmptyKey("=1")));
        assert_eq!(
            parse("selftest selftest"),
            Err(CmdlineError::Duplicate("selftest"))
        );
        assert_eq!(parse_bytes(b"self\xfftest"), Err(CmdlineError::NotUtf8));
    }

    #[test]
    fn value_may_contain_equals() {
        assert!(matches!(
            parse("log=a=b"),
            Err(CmdlineError::BadValue { value: "a=b", .. })
        ));
    }

    #[test]
    fn help_lists_every_key() {
        let text = std::format!("{}", Help);
        for k in KEYS {
            assert!(text.contains(k.name), "help misses {}", k.name);
            assert!(text.contains(k.help));
        }
        assert!(text.contains("hz=10..1000"));
    }

    #[test]
    fn key_table_fits_the_seen_array() {
        assert!(KEYS.len() <= 64);
        for (i, a) in KEYS.iter().enumerate() {
            assert!(
                KEYS[i + 1..].iter().all(|b| b.name != a.name),
                "duplicate key {}",
                a.name
            );
        }
    }
}
