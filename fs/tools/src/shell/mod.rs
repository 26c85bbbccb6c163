//! The vfsh engine: a line-oriented command shell over a fresh tmpfs [`Vfs`].
//!
//! `vfsh` (the binary) and the tests drive the same engine: [`Shell::exec`]
//! takes one input line and returns the output lines. The format is a
//! contract other tools rely on; it is described here once.
//!
//! Touches: one [`Vfs`] per shell, the global counters ([`fs::stats`]) and
//! the trace flag and sink ([`fs::trace`]). Host only (`std`).
//!
//! # Commands (one per line, paths absolute)
//!
//! | command | does |
//! |---|---|
//! | `mkdir P` | `mkdir(P, 0755)` |
//! | `create P` | `open(P, O_WRONLY\|O_CREAT\|O_EXCL, 0644)`, then close |
//! | `write P TEXT` | `open(P, O_WRONLY\|O_CREAT\|O_TRUNC, 0644)`, write TEXT, close |
//! | `read P` | `open(P, O_RDONLY)`, read to end of file |
//! | `symlink TARGET P` | `symlink(TARGET, P)` |
//! | `readlink P` | `readlink(P)` |
//! | `unlink P` · `rmdir P` | `unlink(P)` · `rmdir(P)` |
//! | `rename A B` | `rename(A, B)` |
//! | `stat P` · `lstat P` | `stat(P)` · `lstat(P)` |
//! | `ls P` | list the directory P (follows a final symlink) |
//! | `mount enoent=D` | remount the root tmpfs with ENOENT design D: its files, and the mounts on it, stay; only its design changes (as Linux's `mount -o remount`) |
//! | `mount OPTS P` | (extension) mount a fresh tmpfs with options OPTS on P |
//! | `mount cifs //HOST[:PORT]/SHARE P OPTIONS` | mount an SMB share on P (OPTIONS as Linux's `-o`: `username=U,password=P,vers=3.1.1`; port 445 by default) |
//! | `cksum P` | read P to its end and print its SHA-256 and size |
//! | `listxattr P` · `getxattr P NAME` · `setxattr P NAME VALUE [create\|replace]` · `removexattr P NAME` | extended attributes, and the `l` forms (`llistxattr` …) that do not follow a final symlink: see [`xattr_cmds`] |
//! | `stats` | print the lookup counters since the shell began or since its last `stats reset` (and every cifs mount's `/proc/fs/cifs/Stats` lines) |
//! | `stats reset` | (extension) count from zero again: later `stats` print what happened after it |
//! | `trace on` · `trace off` | print the lookup trace of later commands |
//! | `trace json` | (teaching) print later commands' walk steps as JSON lines (`trace off` stops) |
//! | `race STEP CMD…` | (teaching) run CMD when a later RCU-walk reaches step STEP |
//! | `race off` | disarm |
//! | `help` | (extension) print every command's syntax and what it does, and the ENOENT designs, as `# ` lines |
//!
//! A tmpfs mounted without `enoent=` (the root of `vfsh` without `-o`, or
//! `mount "" P`) has the ENOENT design
//! [`fs::fstype::tmpfs::DEFAULT_DESIGN`] (`noalloc`).
//!
//! # Output (exactly one result line per command)
//!
//! - `ok`, or `err ENAME` with the Linux errno name (`err ENOENT`).
//! - `stat`/`lstat`: `ok dir`, `ok symlink` or `ok file size=N`.
//! - `read`: `ok TEXT` (just `ok` for an empty file); `readlink`: `ok TARGET`.
//! - `cksum`: `ok SHA256HEX SIZE` (lower-case hex, size in bytes).
//! - `listxattr`: `ok` and the names as `ls` prints entries (sorted,
//!   escaped, space-separated); `getxattr`: `ok VALUE`, escaped as a link
//!   target (`ok` alone for an empty value).
//! - `mount cifs`: `ok`, or `err ENAME` (a refused option is `EINVAL`, a
//!   server that cannot be reached `EHOSTDOWN`, a refused login `EACCES`),
//!   with the reason on a `# ` line before it; an option given by its old
//!   name (`wslea=`) adds a `# cifs: …` note before `ok`.
//! - `ls`: `ok` followed by the entry names, sorted by their bytes,
//!   space-separated, without `.` and `..` (`ok a b c`; `ok` for an empty dir).
//! - Extra lines start with `# ` and come before the result line: `stats`
//!   prints one `# name value` per counter; with `trace on` every later command
//!   first prints its trace lines as `# …`; `help` prints its list as `# `
//!   lines.
//! - `trace json` (beside `trace on`, which it does not change) prints one
//!   `# {…}` line per walk step: `step` (the name `race` matches), `function`,
//!   `linux`, `src`, `name`, `mode` (`rcu`/`ref`), `dentry` (`id`, `parent`,
//!   `dname`, `state`: positive, negative, in-lookup or unhashed, `kind`),
//!   `seq` (`which`, `sampled`, and for a check `now` and `ok`), `lock`,
//!   `alloc`, `reason`, `what`, `counters` (this command's so far); `walk`
//!   and `race` steps also carry the whole dentry `tree`.
//! - `race STEP CMD…` prints `ok` and arms CMD (any filesystem command) for
//!   the next RCU-walk that reaches STEP, a step name as `trace json` prints
//!   it: the function, then the component for the functions that have one
//!   (`lookup_fast b`, `step_into b`, `try_to_unlazy`). It runs once, right
//!   after that step, on the walking thread (see [`steps`]); the
//!   command that walked prints `# race: at "STEP" ran `CMD`: RESULT`, or
//!   `# race: "STEP" not reached, still armed`. CMD's own walks are not
//!   traced. A STEP that names no step function is `err EINVAL`.
//! - Blank lines and lines whose first non-blank character is `#` print
//!   nothing. An unknown command, a wrong number of arguments, a malformed
//!   escape, a NUL byte in a path or a bad `trace` argument print
//!   `err EINVAL` (the command is not run).
//!
//! # Words, text and escapes
//!
//! Words (command, paths, link targets) are separated by spaces or tabs.
//! `write` takes everything after the single blank that ends P as TEXT
//! (further blanks belong to TEXT; `write P` alone writes an empty file).
//! Inside a path, a link target or TEXT these escapes are decoded:
//! `\\` (backslash), `\n`, `\r`, `\t`, `\xHH` (any byte, two hex digits);
//! any other backslash sequence is malformed. The word `""` stands for the
//! empty path (`stat ""` is `stat("")`).
//!
//! Output uses the same escapes, so what `read` prints can be fed back to
//! `write`: in file contents (`read`), a backslash, every control byte
//! (below 0x20, and 0x7f) and every byte that is not part of valid UTF-8 are
//! escaped (`\n`, `\r`, `\t`, else `\xHH`); valid non-ASCII UTF-8 and spaces
//! are printed as they are. Names (`ls`) and link targets (`readlink`) are
//! escaped the same way and additionally have spaces written as `\x20`, so
//! one result line always stays one line and `ls` output splits on spaces.

use std::cell::RefCell;
use std::fmt;
use std::string::{String, ToString};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::vec::Vec;

use fs::errno::{Errno, KResult};
use fs::stats;
use fs::trace;
use fs::vfs::{OpenFlags, Vfs};

pub use text::{escape_text, escape_word, ls_line, ok_with, stat_line, unescape};
use text::{is_blank, path_word};

/// The ENOENT designs `mount enoent=D` takes: the names of the registry,
/// [`fs::dcache::design::DESIGNS`], in its order.
pub fn designs() -> impl Iterator<Item = &'static str> + Clone {
    fs::dcache::design::DESIGNS.iter().map(|d| d.name())
}

/// One parsed command.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Cmd {
    Mkdir(Vec<u8>),
    Create(Vec<u8>),
    Write(Vec<u8>, Vec<u8>),
    Read(Vec<u8>),
    Symlink {
        target: Vec<u8>,
        path: Vec<u8>,
    },
    Readlink(Vec<u8>),
    Unlink(Vec<u8>),
    Rmdir(Vec<u8>),
    Rename(Vec<u8>, Vec<u8>),
    Stat(Vec<u8>),
    Lstat(Vec<u8>),
    Ls(Vec<u8>),
    /// `mount OPTS` (remount `/`) or `mount OPTS P` (fresh tmpfs on P).
    Mount {
        opts: String,
        path: Option<Vec<u8>>,
    },
    /// `mount cifs //HOST[:PORT]/SHARE P OPTIONS`.
    MountCifs {
        source: String,
        path: Vec<u8>,
        opts: String,
    },
    Cksum(Vec<u8>),
    /// `listxattr P` (`follow`) / `llistxattr P`.
    ListXattr {
        path: Vec<u8>,
        follow: bool,
    },
    /// `getxattr P NAME` / `lgetxattr P NAME`.
    GetXattr {
        path: Vec<u8>,
        name: Vec<u8>,
        follow: bool,
    },
    /// `setxattr P NAME VALUE [create|replace]` / `lsetxattr …`.
    SetXattr {
        path: Vec<u8>,
        name: Vec<u8>,
        value: Vec<u8>,
        flags: u32,
        follow: bool,
    },
    /// `removexattr P NAME` / `lremovexattr P NAME`.
    RemoveXattr {
        path: Vec<u8>,
        name: Vec<u8>,
        follow: bool,
    },
    Stats,
    /// `stats reset`.
    StatsReset,
    /// `help`.
    Help,
    Trace(bool),
    /// `trace json`.
    TraceJson,
    /// `race STEP CMD…` (`None`: `race off`).
    Race(Option<Box<RaceCmd>>),
}

impl Cmd {
    /// Commands of the shell itself, not filesystem commands of a
    /// namespace: counters, help, tracing, races, and a cifs mount (which
    /// needs the shell's connector, not just the namespace).
    fn is_shell_only(&self) -> bool {
        matches!(
            self,
            Cmd::Stats
                | Cmd::StatsReset
                | Cmd::Help
                | Cmd::Trace(_)
                | Cmd::TraceJson
                | Cmd::Race(_)
                | Cmd::MountCifs { .. }
        )
    }
}

/// What `race STEP CMD…` arms.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RaceCmd {
    /// The step name (`lookup_fast b`).
    pub step: String,
    pub cmd: Cmd,
    /// CMD as typed.
    pub text: String,
}

/// Why a line was rejected with `err EINVAL`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ParseError {
    UnknownCommand(String),
    /// Wrong number of arguments: the command and its usage.
    Arity(&'static str),
    /// A bad backslash escape in a word or text.
    BadEscape(String),
    /// A path or link target holding a NUL byte (no system call can take it).
    Nul,
    /// `trace` wants `on`, `json` or `off`.
    TraceArg(String),
    /// `race` wants a step function it knows.
    RaceStep(String),
}

impl fmt::Display for ParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ParseError::UnknownCommand(c) => write!(f, "unknown command `{c}`"),
            ParseError::Arity(usage) => write!(f, "wrong number of arguments; usage: {usage}"),
            ParseError::BadEscape(w) => write!(f, "malformed escape in `{w}`"),
            ParseError::Nul => f.write_str("NUL byte in a path"),
            ParseError::TraceArg(a) => {
                write!(f, "`trace` wants `on`, `json` or `off`, not `{a}`")
            }
            ParseError::RaceStep(a) => write!(f, "`race`: no walk step `{a}`"),
        }
    }
}

/// Usage lines of every command (`vfsh --help`, `help`, with what each
/// does: [`help`]).
pub const USAGE: &[&str] = &[
    "mkdir P",
    "create P",
    "write P TEXT",
    "read P",
    "symlink TARGET P",
    "readlink P",
    "unlink P",
    "rmdir P",
    "rename A B",
    "stat P",
    "lstat P",
    "ls P",
    "mount enoent=D [P]",
    "mount cifs //HOST[:PORT]/SHARE P OPTIONS",
    "cksum P",
    xattr_cmds::USAGE[0],
    xattr_cmds::USAGE[1],
    xattr_cmds::USAGE[2],
    xattr_cmds::USAGE[3],
    "stats | stats reset",
    "trace on|json|off",
    "race STEP CMD... | race off",
    "help",
];

/// Parse one input line. `Ok(None)` for blank and comment lines.
pub fn parse(line: &str) -> Result<Option<Cmd>, ParseError> {
    let line = line.strip_suffix('\n').unwrap_or(line);
    let line = line.strip_suffix('\r').unwrap_or(line);
    let s = line.trim_start_matches(is_blank);
    if s.is_empty() || s.starts_with('#') {
        return Ok(None);
    }
    let (name, rest) = s.split_once(is_blank).unwrap_or((s, ""));
    if name == "write" {
        return parse_write(rest).map(Some);
    }
    let args: Vec<&str> = rest.split(is_blank).filter(|w| !w.is_empty()).collect();
    let want = |n: usize, usage: &'static str| {
        if args.len() == n {
            Ok(())
        } else {
            Err(ParseError::Arity(usage))
        }
    };
    let p = |i: usize| path_word(args[i]);
    let cmd = match name {
        "mkdir" => want(1, "mkdir P").and_then(|_| Ok(Cmd::Mkdir(p(0)?)))?,
        "create" => want(1, "create P").and_then(|_| Ok(Cmd::Create(p(0)?)))?,
        "read" => want(1, "read P").and_then(|_| Ok(Cmd::Read(p(0)?)))?,
        "symlink" => want(2, "symlink TARGET P").and_then(|_| {
            Ok(Cmd::Symlink {
                target: p(0)?,
                path: p(1)?,
            })
        })?,
        "readlink" => want(1, "readlink P").and_then(|_| Ok(Cmd::Readlink(p(0)?)))?,
        "unlink" => want(1, "unlink P").and_then(|_| Ok(Cmd::Unlink(p(0)?)))?,
        "rmdir" => want(1, "rmdir P").and_then(|_| Ok(Cmd::Rmdir(p(0)?)))?,
        "rename" => want(2, "rename A B").and_then(|_| Ok(Cmd::Rename(p(0)?, p(1)?)))?,
        "stat" => want(1, "stat P").and_then(|_| Ok(Cmd::Stat(p(0)?)))?,
        "lstat" => want(1, "lstat P").and_then(|_| Ok(Cmd::Lstat(p(0)?)))?,
        "ls" => want(1, "ls P").and_then(|_| Ok(Cmd::Ls(p(0)?)))?,
        "cksum" => want(1, "cksum P").and_then(|_| Ok(Cmd::Cksum(p(0)?)))?,
        "mount" if args.first() == Some(&"cifs") => {
            if args.len() != 4 {
                return Err(ParseError::Arity(
                    "mount cifs //HOST[:PORT]/SHARE P OPTIONS",
                ));
            }
            Cmd::MountCifs {
                source: args[1].to_string(),
                path: p(2)?,
                opts: args[3].to_string(),
            }
        }
        "mount" => match args.len() {
            1 => Cmd::Mount {
                opts: args[0].to_string(),
                path: None,
            },
            2 => Cmd::Mount {
                opts: args[0].to_string(),
                path: Some(p(1)?),
            },
            _ => return Err(ParseError::Arity("mount enoent=D [P]")),
        },
        "stats" => match args[..] {
            [] => Cmd::Stats,
            ["reset"] => Cmd::StatsReset,
            _ => return Err(ParseError::Arity("stats | stats reset")),
        },
        "help" => want(0, "help").map(|_| Cmd::Help)?,
        "trace" => {
            want(1, "trace on|off|json")?;
            match args[0] {
                "on" => Cmd::Trace(true),
                "json" => Cmd::TraceJson,
                "off" => Cmd::Trace(false),
                a => return Err(ParseError::TraceArg(a.to_string())),
            }
        }
        "race" => return parse_race(rest).map(Some),
        other if xattr_cmds::parse(other, &args).is_some() => {
            xattr_cmds::parse(other, &args).expect("an xattr command")?
        }
        other => return Err(ParseError::UnknownCommand(other.to_string())),
    };
    Ok(Some(cmd))
}

/// Step functions whose step name carries the component.
pub(crate) const RACE_NAMED: &[&str] = &[
    "walk",
    "lookup_fast",
    "lookup_slow",
    "d_alloc_parallel",
    "d_add",
    "step_into",
    "handle_dots",
    "filename_lookup",
];
/// Step functions named by the function alone.
pub(crate) const RACE_BARE: &[&str] = &["try_to_unlazy", "restart", "complete_walk"];

/// `race STEP CMD…` / `race off`.
fn parse_race(rest: &str) -> Result<Cmd, ParseError> {
    const USAGE: &str = "race STEP CMD... | race off";
    let rest = rest.trim_matches(is_blank);
    if rest == "off" {
        return Ok(Cmd::Race(None));
    }
    let (func, rest) = rest.split_once(is_blank).ok_or(ParseError::Arity(USAGE))?;
    let rest = rest.trim_start_matches(is_blank);
    let (step, rest) = if RACE_NAMED.contains(&func) {
        let (name, rest) = rest.split_once(is_blank).ok_or(ParseError::Arity(USAGE))?;
        // The name as the trace prints it: escapes decoded, then re-encoded.
        let name = path_word(name)?;
        (std::format!("{func} {}", escape_word(&name)), rest)
    } else if RACE_BARE.contains(&func) {
        (func.to_string(), rest)
    } else {
        return Err(ParseError::RaceStep(func.to_string()));
    };
    let text = rest.trim_matches(is_blank).to_string();
    let cmd = match parse(&text)? {
        None => return Err(ParseError::Arity(USAGE)),
        Some(c) if c.is_shell_only() => return Err(ParseError::Arity(USAGE)),
        Some(c) => c,
    };
    Ok(Cmd::Race(Some(Box::new(RaceCmd { step, cmd, text }))))
}

/// `write P TEXT`: P is the first word, TEXT all after the blank that ends it.
fn parse_write(rest: &str) -> Result<Cmd, ParseError> {
    let rest = rest.trim_start_matches(is_blank);
    if rest.is_empty() {
        return Err(ParseError::Arity("write P TEXT"));
    }
    let (p, text) = rest.split_once(is_blank).unwrap_or((rest, ""));
    Ok(Cmd::Write(path_word(p)?, unescape(text)?))
}

// Trace capture. The fs crate hands each trace line to one global sink
// function; ours appends it to a buffer of the calling thread, and the shell
// that ran the command collects it. The global flag is on while at least one
// shell wants tracing.
std::thread_local! {
    static TRACE_BUF: RefCell<Vec<String>> = const { RefCell::new(Vec::new()) };
}
static TRACE_USERS: AtomicUsize = AtomicUsize::new(0);

fn trace_sink(args: fmt::Arguments<'_>) {
    #[cfg(feature = "teaching")]
    if steps::in_race() {
        return; // the race command's own walks are not part of the trace
    }
    let line = args.to_string();
    // `try_with`: a line emitted while the thread is being torn down is dropped.
    let _ = TRACE_BUF.try_with(|b| b.borrow_mut().push(line));
}

/// Append one line to this thread's trace buffer (the step sink's JSON).
#[cfg(feature = "teaching")]
pub(crate) fn push_trace_line(line: String) {
    let _ = TRACE_BUF.try_with(|b| b.borrow_mut().push(line));
}

fn take_trace() -> Vec<String> {
    TRACE_BUF
        .try_with(|b| core::mem::take(&mut *b.borrow_mut()))
        .unwrap_or_default()
}

/// A shell: one fresh tmpfs namespace and the trace setting.
pub struct Shell {
    vfs: std::sync::Arc<Vfs>,
    tracing: bool,
    /// `trace json` is on.
    json: bool,
    /// The armed `race`.
    #[cfg(feature = "teaching")]
    race: Option<steps::Armed>,
    /// Dentry ids of the JSON steps.
    #[cfg(feature = "teaching")]
    ids: steps::Ids,
    /// The cifs mounts made with `mount cifs` (for `stats`).
    cifs: Vec<std::sync::Arc<fs::inode::SuperBlock>>,
    /// The counters at the last `stats reset` (zero: none yet), which
    /// `stats` subtracts.
    stats_base: stats::Counters,
}

/// Shells that want walk steps now (`trace json` on or a race armed).
#[cfg(feature = "teaching")]
static STEP_USERS: AtomicUsize = AtomicUsize::new(0);

impl Shell {
    /// A shell over a fresh tmpfs mounted with `opts` (e.g. `"enoent=noalloc"`,
    /// `""` for the defaults).
    pub fn try_new(opts: &str) -> KResult<Shell> {
        let vfs = Vfs::new_tmpfs(opts)?;
        trace::set_sink(trace_sink);
        Ok(Shell {
            vfs: std::sync::Arc::new(vfs),
            tracing: false,
            json: false,
            #[cfg(feature = "teaching")]
            race: None,
            #[cfg(feature = "teaching")]
            ids: Default::default(),
            cifs: Vec::new(),
            stats_base: stats::Counters::default(),
        })
    }

    /// Like [`Shell::try_new`].
    ///
    /// # Panics
    /// If the filesystem rejects `opts`; use `try_new` for untrusted options.
    pub fn new(opts: &str) -> Shell {
        match Shell::try_new(opts) {
            Ok(s) => s,
            Err(e) => panic!("vfsh: cannot mount tmpfs with options {opts:?}: {e}"),
        }
    }

    /// The namespace the shell works on.
    pub fn vfs(&self) -> &Vfs {
        &self.vfs
    }

    /// Run one input line; returns its output lines (none for blank and
    /// comment lines, else `# ` lines followed by exactly one result line).
    pub fn exec(&mut self, line: &str) -> Vec<String> {
        match parse(line) {
            Ok(None) => Vec::new(),
            Ok(Some(cmd)) => self.run(&cmd),
            Err(_) => vec![err_line(Errno::EINVAL)],
        }
    }

    /// Run one parsed command (see [`Shell::exec`]).
    pub fn run(&mut self, cmd: &Cmd) -> Vec<String> {
        match cmd {
            Cmd::Stats => {
                let mut out = counter_lines(&stats::snapshot().delta(&self.stats_base));
                out.extend(self.cifs_stats_lines());
                out.push("ok".to_string());
                out
            }
            Cmd::StatsReset => {
                self.stats_base = stats::snapshot();
                vec!["ok".to_string()]
            }
            Cmd::Help => {
                let mut out: Vec<String> = help::lines().map(|l| std::format!("# {l}")).collect();
                out.push("ok".to_string());
                out
            }
            Cmd::MountCifs { source, path, opts } => self.mount_cifs(source, path, opts),
            Cmd::Trace(on) => {
                self.set_tracing(*on);
                if !*on {
                    self.json = false;
                }
                vec!["ok".to_string()]
            }
            Cmd::TraceJson => {
                if cfg!(feature = "teaching") {
                    self.json = true;
                    vec!["ok".to_string()]
                } else {
                    vec![err_line(Errno::EOPNOTSUPP)]
                }
            }
            #[cfg(feature = "teaching")]
            Cmd::Race(r) => {
                self.race = r.as_ref().map(|r| steps::Armed {
                    step: r.step.clone(),
                    cmd: r.cmd.clone(),
                    text: r.text.clone(),
                });
                vec!["ok".to_string()]
            }
            #[cfg(not(feature = "teaching"))]
            Cmd::Race(_) => vec![err_line(Errno::EOPNOTSUPP)],
            cmd => {
                // Drop what other shells' traced commands left on this thread.
                let _ = take_trace();
                #[cfg(feature = "teaching")]
                let result = self.run_fs_stepped(cmd);
                #[cfg(not(feature = "teaching"))]
                let result = self.run_fs(cmd);
                let mut out = Vec::new();
                let mut trace = take_trace();
                if !self.tracing {
                    // Only our own JSON and race lines (others' text is not ours).
                    trace.retain(|l| l.starts_with('{') || l.starts_with("race: "));
                }
                for t in trace {
                    for l in t.split('\n') {
                        out.push(std::format!("# {l}"));
                    }
                }
                out.push(result);
                out
            }
        }
    }

    fn set_tracing(&mut self, on: bool) {
        if on != self.tracing {
            self.tracing = on;
            let users = if on {
                TRACE_USERS.fetch_add(1, Ordering::SeqCst) + 1
            } else {
                TRACE_USERS.fetch_sub(1, Ordering::SeqCst) - 1
            };
            trace::enable(users > 0);
        }
    }

    /// A filesystem command with the walk steps watched (JSON, race).
    #[cfg(feature = "teaching")]
    fn run_fs_stepped(&mut self, cmd: &Cmd) -> String {
        if !self.json && self.race.is_none() {
            return self.run_fs(cmd);
        }
        let users = STEP_USERS.fetch_add(1, Ordering::SeqCst) + 1;
        fs::walk_event::enable_steps(users > 0);
        let ids = core::mem::take(&mut self.ids);
        steps::begin(self.vfs.clone(), self.json, self.race.take(), ids);
        let result = self.run_fs(cmd);
        let (race, ids) = steps::end();
        self.ids = ids;
        if let Some(r) = race {
            push_trace_line(std::format!(
                "race: \"{}\" not reached, still armed",
                r.step
            ));
            self.race = Some(r);
        }
        let users = STEP_USERS.fetch_sub(1, Ordering::SeqCst) - 1;
        fs::walk_event::enable_steps(users > 0);
        result
    }

    /// `mount cifs`: connect now (a bad password fails the mount).
    fn mount_cifs(&mut self, source: &str, path: &[u8], opts: &str) -> Vec<String> {
        use fs::fstype::cifs::{self, errmap::SmbErrno, MountError};
        use smb::{StdClock, TcpConnector};
        use std::net::ToSocketAddrs;
        let fail = |why: String, e: Errno| vec![std::format!("# {why}"), err_line(e)];
        // //HOST[:PORT]/SHARE: the port is ours to take off; the rest is the UNC.
        let unc = source.trim_start_matches(['/', '\\']);
        let Some((hostport, share)) = unc.split_once(['/', '\\']) else {
            return fail(
                std::format!("cifs: source must be //HOST[:PORT]/SHARE, got {source:?}"),
                Errno::EINVAL,
            );
        };
        let (host, port) = match hostport.rsplit_once(':') {
            Some((h, p)) if !h.contains(':') || h.starts_with('[') => match p.parse::<u16>() {
                Ok(p) => (h.trim_start_matches('[').trim_end_matches(']'), p),
                Err(_) => return fail(std::format!("cifs: bad port {p:?}"), Errno::EINVAL),
            },
            _ => (hostport, 445),
        };
        let addr = match (host, port).to_socket_addrs().map(|mut a| a.next()) {
            Ok(Some(a)) => a,
            _ => {
                return fail(
                    std::format!("cifs: cannot resolve {host:?}"),
                    Errno::EHOSTDOWN,
                )
            }
        };
        let r = cifs::mount(
            &self.vfs,
            &std::format!("//{host}/{share}"),
            path,
            opts,
            Box::new(TcpConnector {
                addr,
                timeout_ms: 10_000,
            }),
            Box::new(StdClock::default()),
        );
        match r {
            Ok(sb) => {
                // Options given by an old name say what they mean now.
                let mut out: Vec<String> = sb
                    .ops_as::<fs::fstype::cifs::CifsFs>()
                    .map(|fs| {
                        fs.opts
                            .notes
                            .iter()
                            .map(|n| std::format!("# {n}"))
                            .collect()
                    })
                    .unwrap_or_default();
                self.cifs.push(sb);
                out.push(ok_with(""));
                out
            }
            Err(e) => {
                let errno = match &e {
                    MountError::Opts(_) => Errno::EINVAL,
                    MountError::Smb(s) => s.errno(),
                    MountError::Vfs(v) => *v,
                };
                fail(e.to_string(), errno)
            }
        }
    }

    /// Every cifs mount's `/proc/fs/cifs/Stats` lines, as `# ` lines.
    fn cifs_stats_lines(&self) -> Vec<String> {
        let mut out = Vec::new();
        for sb in &self.cifs {
            if let Some(fs) = sb.ops_as::<fs::fstype::cifs::CifsFs>() {
                for l in fs.render_stats().lines() {
                    out.push(std::format!("# {l}"));
                }
            }
        }
        out
    }

    /// The filesystem commands: one result line.
    fn run_fs(&self, cmd: &Cmd) -> String {
        run_fs_on(&self.vfs, cmd)
    }
}

/// Run one filesystem command on `v`: its result line.
pub(crate) fn run_fs_on(v: &Vfs, cmd: &Cmd) -> String {
    let r: KResult<String> = match cmd {
        Cmd::Mkdir(p) => v.mkdir(p, 0o755).map(|_| ok_with("")),
        Cmd::Create(p) => v
            .open(
                p,
                OpenFlags::WRONLY | OpenFlags::CREAT | OpenFlags::EXCL,
                0o644,
            )
            .map(|_f| ok_with("")),
        Cmd::Write(p, text) => v.write_file(p, text).map(|_| ok_with("")),
        Cmd::Read(p) => v.read_file(p).map(|d| ok_with(&escape_text(&d))),
        Cmd::Symlink { target, path } => v.symlink(target, path).map(|_| ok_with("")),
        Cmd::Readlink(p) => v.readlink(p).map(|t| ok_with(&escape_word(&t))),
        Cmd::Unlink(p) => v.unlink(p).map(|_| ok_with("")),
        Cmd::Rmdir(p) => v.rmdir(p).map(|_| ok_with("")),
        Cmd::Rename(a, b) => v.rename(a, b).map(|_| ok_with("")),
        Cmd::Stat(p) => v.stat(p).map(|st| stat_line(st.kind, st.size)),
        Cmd::Lstat(p) => v.lstat(p).map(|st| stat_line(st.kind, st.size)),
        Cmd::Ls(p) => v
            .readdir(p)
            .map(|es| ls_line(es.into_iter().map(|e| e.name).collect())),
        Cmd::Mount { opts, path: None } => v.remount(b"/", opts).map(|_| ok_with("")),
        Cmd::Mount {
            opts,
            path: Some(p),
        } => v.mount("tmpfs", p, opts).map(|_| ok_with("")),
        Cmd::Cksum(p) => {
            // Streams: the file passes through one read window, never held.
            use sha2::Digest;
            let mut h = sha2::Sha256::new();
            v.read_chunks(p, &mut |c| {
                h.update(c);
                Ok(())
            })
            .map(|n| {
                let hex: String = h
                    .finalize()
                    .iter()
                    .map(|b| std::format!("{b:02x}"))
                    .collect();
                ok_with(&std::format!("{hex} {n}"))
            })
        }
        cmd if cmd.is_shell_only() => Ok(ok_with("")),
        cmd => xattr_cmds::run(v, cmd).unwrap_or(Err(Errno::EINVAL)),
    };
    r.unwrap_or_else(err_line)
}

impl Drop for Shell {
    fn drop(&mut self) {
        self.set_tracing(false);
    }
}

/// `err ENAME`.
pub fn err_line(e: Errno) -> String {
    std::format!("err {}", e.name())
}

/// The `# name value` lines of `stats`, one per counter, in a fixed order
/// (the counters since the process began).
pub fn stats_lines() -> Vec<String> {
    counter_lines(&stats::snapshot())
}

/// [`stats_lines`] of the counters `c`.
fn counter_lines(c: &stats::Counters) -> Vec<String> {
    let mut out = vec![
        std::format!("# lookups {}", c.lookups),
        std::format!("# rcu_walks {}", c.rcu_walks),
        std::format!("# fallbacks {}", c.fallbacks),
    ];
    for r in stats::FallbackReason::ALL {
        out.push(std::format!(
            "# fallbacks_{} {}",
            r.name(),
            c.fallbacks_by_reason[r as usize]
        ));
    }
    for (name, v) in [
        ("dentry_alloc", c.dentry_alloc),
        ("dentry_free", c.dentry_free),
        ("negative_created", c.negative_created),
        ("negative_destroyed", c.negative_destroyed),
        ("enoent", c.enoent),
        ("locks", c.locks),
        ("shared_stores", c.shared_stores),
        ("shrunk", c.shrunk),
        ("enomem", c.enomem),
        ("transfers", c.transfers),
        ("parallel_found", c.parallel_found),
        ("in_lookup_waits", c.in_lookup_waits),
    ] {
        out.push(std::format!("# {name} {v}"));
    }
    out
}

pub mod help;
#[cfg(feature = "teaching")]
pub mod steps;
mod text;
pub mod xattr_cmds;

#[cfg(test)]
mod tests;
