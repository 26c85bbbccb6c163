//! vfsh's `help` (and the list `vfsh --help` prints): every command's
//! syntax with what it does, the steps `race` takes, and the ENOENT
//! designs with the default one.
//!
//! The commands come from [`super::USAGE`], the race steps from the
//! parser's own lists and the designs from the registry
//! ([`fs::dcache::design::DESIGNS`]), so the help names what the shell
//! takes. Touches nothing.

use std::format;
use std::string::String;
use std::vec::Vec;

use super::{xattr_cmds, RACE_BARE, RACE_NAMED, USAGE};
use fs::dcache::design::{self, DESIGNS};
use fs::fstype::tmpfs::DEFAULT_DESIGN;

/// What each usage line of [`USAGE`] does, in its order.
const DOES: &[(&str, &str)] = &[
    ("mkdir P", "mkdir(P, 0755)"),
    (
        "create P",
        "open(P, O_WRONLY|O_CREAT|O_EXCL, 0644), then close",
    ),
    (
        "write P TEXT",
        "open(P, O_WRONLY|O_CREAT|O_TRUNC, 0644), write TEXT (the rest of the line), close",
    ),
    ("read P", "read P to its end: ok TEXT"),
    ("symlink TARGET P", "symlink(TARGET, P)"),
    ("readlink P", "readlink(P): ok TARGET"),
    ("unlink P", "unlink(P)"),
    ("rmdir P", "rmdir(P)"),
    ("rename A B", "rename(A, B)"),
    ("stat P", "stat(P): ok dir, ok symlink or ok file size=N"),
    (
        "lstat P",
        "lstat(P): the same without following a final symlink",
    ),
    ("ls P", "the entries of the directory P, sorted: ok a b c"),
    (
        "mount enoent=D [P]",
        "with P: a fresh tmpfs with ENOENT design D on P; without P: remount the root tmpfs \
         with design D (its files, and the mounts on it, stay; only its design changes)",
    ),
    (
        "mount cifs //HOST[:PORT]/SHARE P OPTIONS",
        "mount an SMB share on P (OPTIONS as Linux's -o: username=U,password=P,vers=3.1.1)",
    ),
    ("cksum P", "read P to its end: ok SHA256HEX SIZE"),
    (
        xattr_cmds::USAGE[0],
        "the names of P's extended attributes (l...: not following a final symlink)",
    ),
    (xattr_cmds::USAGE[1], "the value of the attribute NAME"),
    (
        xattr_cmds::USAGE[2],
        "set NAME to VALUE (create: only a new one; replace: only an existing one)",
    ),
    (xattr_cmds::USAGE[3], "remove the attribute NAME"),
    (
        "stats | stats reset",
        "print the lookup counters (# name value) since the shell began or since its last \
         `stats reset`, which counts from zero again",
    ),
    (
        "trace on|json|off",
        "print the lookup trace of later commands as # lines (json: one object per walk step)",
    ),
    (
        "race STEP CMD... | race off",
        "run CMD once when a later RCU-walk reaches STEP (see below); race off disarms",
    ),
    ("help", "this list"),
];

/// The help, one line each (without the `# ` that the `help` command puts
/// before them).
pub fn lines() -> impl Iterator<Item = String> {
    let mut out = Vec::new();
    out.push(String::from(
        "Commands (one per line, absolute paths; one result line each: ok ... or err ENAME):",
    ));
    for u in USAGE {
        out.push(format!("  {u}"));
        if let Some((_, does)) = DOES.iter().find(|(usage, _)| usage == u) {
            out.push(format!("      {does}"));
        }
    }
    out.push(format!(
        "race STEP is one word or two, as `trace json` names the step: the function and the \
         component for {} (`step_into b`, `lookup_fast b`), the function alone for {}.",
        RACE_NAMED.join(", "),
        RACE_BARE.join(", ")
    ));
    let designs: Vec<(&str, &str)> = DESIGNS.iter().map(|d| (d.name(), d.help())).collect();
    out.extend(design_lines(&designs, DEFAULT_DESIGN));
    out.into_iter()
}

/// The ENOENT designs `enoent=D` takes, one line each with its help, the
/// names in a column as wide as the longest of them; which one a tmpfs
/// mounted without `enoent=` gets.
pub fn design_lines(designs: &[(&str, &str)], default: &str) -> Vec<String> {
    let w = design::width_of(designs.iter().map(|d| d.0), 0);
    let mut out = vec![format!(
        "ENOENT designs (mount enoent=D, vfsh -o enoent=D; without enoent=: {default}):"
    )];
    for (name, help) in designs {
        out.push(format!("  {name:<w$}  {help}"));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_usage_line_says_what_it_does() {
        for u in USAGE {
            assert!(
                DOES.iter().any(|(usage, _)| usage == u),
                "no help for `{u}`"
            );
        }
        for (usage, _) in DOES {
            assert!(
                USAGE.contains(usage),
                "help for a command not in USAGE: `{usage}`"
            );
        }
    }

    #[test]
    fn design_names_line_up_however_long() {
        let lines = design_lines(
            &[
                ("short", "one"),
                ("a-name-of-twenty-one", "two"),
                ("mid-length", "three"),
            ],
            "short",
        );
        assert_eq!(
            lines[0],
            "ENOENT designs (mount enoent=D, vfsh -o enoent=D; without enoent=: short):"
        );
        let cols: Vec<usize> = lines[1..]
            .iter()
            .map(|l| l.rfind(' ').expect("a help column") + 1)
            .collect();
        assert_eq!(cols, [24, 24, 24], "{lines:#?}");
        assert_eq!(lines[2], "  a-name-of-twenty-one  two");
    }
}
