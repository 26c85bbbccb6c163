//! The one parser of boot-command-line words, for the guest kernel's command
//! line and host mode's words (`bench host WORDS`): one word splitter, one
//! key-table type ([`Key`]: the key, its value syntax, one help line, its
//! parser), one error ([`CmdlineError`], worded as Linux's `parse_args`
//! words a bad boot parameter, with its errno) and one help printer
//! ([`Help`]). The key tables are the users': the kernel feeds its own and
//! the benchmark's ([`crate::params::keys`]), host mode only the
//! benchmark's. It lives in `bench` because every user already stands
//! above it (the kernel, benchlab and the fuzz harness depend on `bench`)
//! and the benchmark's table is here; it names nothing else of the crate,
//! so it can move into a crate of its own if a user below `bench` appears.
//!
//! The rules, the same for every table:
//!
//! - Words are maximal runs of non-whitespace ([`words`]). There is no
//!   quoting (unlike Linux's `"..."`): a value cannot hold a space, and a
//!   `"` is an ordinary byte.
//! - A word is a bare flag (`selftest`) or `key=value`, split at the first
//!   `=` (the value may hold more). A word that names no key, names a key
//!   two tables both claim, repeats a key, gives a flag a value, gives a
//!   value key no value, or gives a value its parser refuses is an error
//!   naming the word, and parsing stops there.
//! - A table's parser sets the caller's state `C`; what follows from all
//!   the words together (a mode that needs another key) is the caller's to
//!   check afterwards, reported with the same error type.
//!
//! Touches nothing: pure code that never allocates, errors and help
//! included (errors borrow the words they name), because the kernel parses
//! its command line before its heap exists; the fuzz harness
//! (`kernel/src/fuzz_cmdline/harness.rs`) runs it with allocation forbidden.

use core::fmt;

use fs::errno::Errno;

/// Split a line into words: ASCII whitespace separates them, and nothing
/// quotes (see the module's rules).
pub fn words(line: &str) -> core::str::SplitAsciiWhitespace<'_> {
    line.split_ascii_whitespace()
}

/// What a key accepts, for the help and for errors: fixed text, or text
/// rendered on demand (a registry's names) without allocating.
#[derive(Clone, Copy)]
pub enum Values {
    /// Fixed text (`""` for a flag).
    Text(&'static str),
    /// Written by a function (at most [`Values::RENDER_MAX`] bytes kept).
    Render(fn(&mut dyn fmt::Write) -> fmt::Result),
}

impl Values {
    /// Most bytes of a [`Values::Render`] text that are kept.
    pub const RENDER_MAX: usize = 256;

    fn is_empty(&self) -> bool {
        matches!(self, Values::Text(""))
    }
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
            Values::Render(_) => f.pad(self.text().as_str()),
        }
    }
}

impl Values {
    /// The text, rendered into a fixed buffer.
    fn text(&self) -> StackStr<{ Values::RENDER_MAX }> {
        let mut buf = StackStr::new();
        let _ = match self {
            Values::Text(s) => fmt::Write::write_str(&mut buf, s),
            Values::Render(render) => render(&mut buf),
        };
        buf
    }
}

/// Two values are equal when they read the same.
impl PartialEq for Values {
    fn eq(&self, other: &Self) -> bool {
        self.text().as_str() == other.text().as_str()
    }
}

impl Eq for Values {}

impl fmt::Debug for Values {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Values({:?})", self.text().as_str())
    }
}

/// How a key takes its value, with its parser into the caller's state `C`.
pub enum Kind<C> {
    /// A bare word, no `=`.
    Flag(fn(&mut C)),
    /// `key=value` with a non-empty value; the parser returns what would
    /// have been accepted when it refuses the value.
    Value(fn(&mut C, &str) -> Result<(), Values>),
}

impl<C> Clone for Kind<C> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<C> Copy for Kind<C> {}

/// One key of a table.
pub struct Key<C> {
    /// The key as typed.
    pub name: &'static str,
    /// Value syntax for the help (`""` for flags).
    pub syntax: Values,
    /// One line of help.
    pub help: &'static str,
    /// Flag or value, with its parser.
    pub kind: Kind<C>,
}

impl<C> Clone for Key<C> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<C> Copy for Key<C> {}

/// Most keys of all the tables one parse is given together (repeats are
/// found with one bit per key).
pub const MAX_KEYS: usize = 64;

/// Why a command line was refused. `Display` names the word and the reason
/// as Linux's `parse_args` does (`` `VALUE' invalid for parameter `KEY' ``,
/// `` Unknown parameter `KEY' ``), then the errno in parentheses; the caller
/// prefixes what it was doing (`cmdline: `, `bench host: `).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CmdlineError<'a> {
    /// The bytes are not UTF-8.
    NotUtf8,
    /// The line is longer than the `max` bytes its reader keeps.
    TooLong {
        /// How many bytes are kept.
        max: usize,
    },
    /// A word names no key of any table.
    UnknownKey(&'a str),
    /// A word starts with `=`.
    EmptyKey(&'a str),
    /// More than one table claims the key a word names.
    Ambiguous(&'static str),
    /// `key=value` where the key's parser refuses the value.
    BadValue {
        /// The key.
        key: &'static str,
        /// The value given.
        value: &'a str,
        /// What would have been accepted.
        expected: Values,
    },
    /// A value key given as a bare word or with an empty value.
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
    /// A key the caller requires is absent.
    Required(&'static str),
    /// A key given without the key it configures: it would do nothing.
    Needs {
        /// The key given.
        key: &'static str,
        /// The key it needs.
        needs: &'static str,
    },
    /// Two keys that each pick something to run, and exclude each other.
    Conflict(&'static str, &'static str),
}

impl CmdlineError<'_> {
    /// The errno Linux would answer: `E2BIG` for a line too long, `ENOENT`
    /// for an unknown parameter (what `parse_args` returns), `EINVAL` for
    /// every other refusal.
    pub fn errno(&self) -> Errno {
        match self {
            CmdlineError::TooLong { .. } => Errno::E2BIG,
            CmdlineError::UnknownKey(_) => Errno::ENOENT,
            _ => Errno::EINVAL,
        }
    }
}

impl fmt::Display for CmdlineError<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            CmdlineError::NotUtf8 => write!(f, "command line is not valid UTF-8"),
            CmdlineError::TooLong { max } => write!(
                f,
                "command line longer than {max} bytes was cut, so it is refused"
            ),
            CmdlineError::UnknownKey(k) => write!(f, "Unknown parameter `{k}'"),
            CmdlineError::EmptyKey(w) => write!(f, "`{w}' has no parameter name before `='"),
            CmdlineError::Ambiguous(k) => {
                write!(f, "parameter `{k}' is claimed by two key tables")
            }
            CmdlineError::BadValue {
                key,
                value,
                expected,
            } => write!(
                f,
                "`{value}' invalid for parameter `{key}': expected {expected}"
            ),
            CmdlineError::MissingValue(k) => {
                write!(f, "parameter `{k}' needs a value (`{k}=...')")
            }
            CmdlineError::UnexpectedValue { key, value } => write!(
                f,
                "`{value}' invalid for parameter `{key}': it is a flag and takes no value"
            ),
            CmdlineError::Duplicate(k) => write!(f, "parameter `{k}' given more than once"),
            CmdlineError::Required(k) => write!(f, "missing parameter `{k}='"),
            CmdlineError::Needs { key, needs } => {
                write!(f, "parameter `{key}' does nothing without `{needs}='")
            }
            CmdlineError::Conflict(a, b) => {
                write!(f, "parameters `{a}' and `{b}' cannot run together")
            }
        }?;
        write!(f, " ({})", self.errno().name())
    }
}

/// Parse `words` against `tables` into `state`: every word must name a key
/// of exactly one table (see the module's rules). The tables hold at most
/// [`MAX_KEYS`] keys together; a key past that is still parsed, but its
/// repeats are not found.
pub fn parse_words<'a, C, I>(
    words: I,
    state: &mut C,
    tables: &[&[Key<C>]],
) -> Result<(), CmdlineError<'a>>
where
    I: IntoIterator<Item = &'a str>,
{
    let mut seen: u64 = 0;
    for word in words {
        let (name, value) = match word.split_once('=') {
            Some(("", _)) => return Err(CmdlineError::EmptyKey(word)),
            Some((k, v)) => (k, Some(v)),
            None => (word, None),
        };
        let (index, key) = lookup(tables, name)?;
        let bit = u32::try_from(index)
            .ok()
            .and_then(|i| 1u64.checked_shl(i))
            .unwrap_or(0);
        if seen & bit != 0 {
            return Err(CmdlineError::Duplicate(key.name));
        }
        seen |= bit;
        match (key.kind, value) {
            (Kind::Flag(set), None) => set(state),
            (Kind::Flag(_), Some(v)) => {
                return Err(CmdlineError::UnexpectedValue {
                    key: key.name,
                    value: v,
                })
            }
            (Kind::Value(_), None | Some("")) => return Err(CmdlineError::MissingValue(key.name)),
            (Kind::Value(set), Some(v)) => {
                set(state, v).map_err(|expected| CmdlineError::BadValue {
                    key: key.name,
                    value: v,
                    expected,
                })?
            }
        }
    }
    Ok(())
}

/// The one key called `name` across `tables`, with its index counted over
/// all of them.
fn lookup<'t, 'a, C>(
    tables: &[&'t [Key<C>]],
    name: &'a str,
) -> Result<(usize, &'t Key<C>), CmdlineError<'a>> {
    let mut found = None;
    let mut base = 0;
    for table in tables {
        if let Some(i) = table.iter().position(|k| k.name == name) {
            if found.is_some() {
                return Err(CmdlineError::Ambiguous(table[i].name));
            }
            found = Some((base + i, &table[i]));
        }
        base += table.len();
    }
    found.ok_or(CmdlineError::UnknownKey(name))
}

/// The key reference: a title line, then one line per key of every table,
/// `key=syntax` (or the bare flag) padded to a column, then its help.
pub struct Help<'t, C> {
    /// The first line (`valid keys:`).
    pub title: &'static str,
    /// The tables, listed in order.
    pub tables: &'t [&'t [Key<C>]],
}

impl<C> fmt::Display for Help<'_, C> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.title)?;
        for k in self.tables.iter().flat_map(|t| t.iter()) {
            write!(f, "\n  {:<44} {}", Usage(k.name, k.syntax), k.help)?;
        }
        Ok(())
    }
}

/// `key=syntax`, or the bare key of a flag, rendered for the help table
/// (padding honoured).
struct Usage(&'static str, Values);

impl fmt::Display for Usage {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        use fmt::Write;
        let mut buf = StackStr::<{ Values::RENDER_MAX + 64 }>::new();
        let _ = buf.write_str(self.0);
        if !self.1.is_empty() {
            let _ = write!(buf, "={}", self.1);
        }
        f.pad(buf.as_str())
    }
}

/// Value parsers for [`Key`] entries: each returns what it expected when it
/// refuses.
pub mod value {
    use super::Values;

    /// A decimal integer in `lo..=hi`: digits only (no sign, no spaces), at
    /// most 19 of them.
    pub fn int_in(v: &str, lo: u64, hi: u64, expected: &'static str) -> Result<u64, Values> {
        if v.is_empty() || v.len() > 19 || !v.bytes().all(|b| b.is_ascii_digit()) {
            return Err(Values::Text(expected));
        }
        match v.parse::<u64>() {
            Ok(n) if (lo..=hi).contains(&n) => Ok(n),
            _ => Err(Values::Text(expected)),
        }
    }

    /// One of the listed words.
    pub fn one_of<T: Copy>(
        v: &str,
        table: &[(&str, T)],
        expected: &'static str,
    ) -> Result<T, Values> {
        table
            .iter()
            .find(|(k, _)| *k == v)
            .map(|&(_, t)| t)
            .ok_or(Values::Text(expected))
    }
}

/// A fixed buffer that formats without allocating: a write that does not
/// fit is refused whole-character-wise, keeping what fitted.
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

#[cfg(test)]
mod tests;
