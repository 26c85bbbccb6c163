//! vfsh's extended-attribute commands: parsing and their result lines.
//!
//! | command | does |
//! |---|---|
//! | `listxattr P` · `llistxattr P` | `listxattr(P)` · `llistxattr(P)`: `ok` and the names, sorted by their bytes, space-separated, escaped as `ls` names |
//! | `getxattr P NAME` · `lgetxattr P NAME` | the value, escaped as a link target (`ok` alone: empty) |
//! | `setxattr P NAME VALUE [create\|replace]` · `lsetxattr …` | `setxattr` with flags 0, `XATTR_CREATE` or `XATTR_REPLACE` |
//! | `removexattr P NAME` · `lremovexattr P NAME` | `removexattr(P, NAME)` |
//!
//! NAME and VALUE are words with the usual escapes (`""`: empty). A list
//! or value is fetched as a program does: the size-0 call, then the call
//! with that size. Touches nothing but the [`Vfs`] it is given.

use std::string::String;
use std::vec::Vec;

use super::{escape_word, ls_line, ok_with, path_word, Cmd, ParseError};
use fs::errno::KResult;
use fs::vfs::Vfs;
use fs::xattr::{XATTR_CREATE, XATTR_REPLACE};

/// Usage lines (in `vfsh --help` through [`super::USAGE`]).
pub const USAGE: [&str; 4] = [
    "listxattr P | llistxattr P",
    "getxattr P NAME | lgetxattr P NAME",
    "setxattr P NAME VALUE [create|replace] | lsetxattr ...",
    "removexattr P NAME | lremovexattr P NAME",
];

/// The xattr commands' words: `Some(Ok(cmd))` for one of them.
pub(super) fn parse(name: &str, args: &[&str]) -> Option<Result<Cmd, ParseError>> {
    let (base, follow) = match name.strip_prefix('l') {
        Some(b @ ("listxattr" | "getxattr" | "setxattr" | "removexattr")) => (b, false),
        _ => (name, true),
    };
    let arity = |ok: bool, usage: &'static str| {
        if ok {
            Ok(())
        } else {
            Err(ParseError::Arity(usage))
        }
    };
    let p = |i: usize| path_word(args[i]);
    let r = match base {
        "listxattr" => arity(args.len() == 1, USAGE[0]).and_then(|_| {
            Ok(Cmd::ListXattr {
                path: p(0)?,
                follow,
            })
        }),
        "getxattr" => arity(args.len() == 2, USAGE[1]).and_then(|_| {
            Ok(Cmd::GetXattr {
                path: p(0)?,
                name: p(1)?,
                follow,
            })
        }),
        "setxattr" => arity(matches!(args.len(), 3 | 4), USAGE[2]).and_then(|_| {
            let flags = match args.get(3) {
                None => 0,
                Some(&"create") => XATTR_CREATE,
                Some(&"replace") => XATTR_REPLACE,
                Some(_) => return Err(ParseError::Arity(USAGE[2])),
            };
            Ok(Cmd::SetXattr {
                path: p(0)?,
                name: p(1)?,
                value: p(2)?,
                flags,
                follow,
            })
        }),
        "removexattr" => arity(args.len() == 2, USAGE[3]).and_then(|_| {
            Ok(Cmd::RemoveXattr {
                path: p(0)?,
                name: p(1)?,
                follow,
            })
        }),
        _ => return None,
    };
    Some(r)
}

/// The result line of `listxattr`.
pub fn list_line(names: Vec<Vec<u8>>) -> String {
    ls_line(names)
}

/// The result line of `getxattr`.
pub fn value_line(value: &[u8]) -> String {
    ok_with(&escape_word(value))
}

/// Run an xattr command on `v` (`None`: not one of them).
pub(super) fn run(v: &Vfs, cmd: &Cmd) -> Option<KResult<String>> {
    Some(match cmd {
        Cmd::ListXattr { path, follow } => v.xattr_names(path, *follow).map(list_line),
        Cmd::GetXattr { path, name, follow } => {
            v.xattr_value(path, name, *follow).map(|x| value_line(&x))
        }
        Cmd::SetXattr {
            path,
            name,
            value,
            flags,
            follow,
        } => if *follow {
            v.setxattr(path, name, value, *flags)
        } else {
            v.lsetxattr(path, name, value, *flags)
        }
        .map(|_| ok_with("")),
        Cmd::RemoveXattr { path, name, follow } => if *follow {
            v.removexattr(path, name)
        } else {
            v.lremovexattr(path, name)
        }
        .map(|_| ok_with("")),
        _ => return None,
    })
}
