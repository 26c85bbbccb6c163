//! The share of `make eacache-check`, the same on every server, and the
//! check's line: shared by our client's lines (`fs/tests/eacache_check.rs`)
//! and the Linux client's (`qemu/tests/linuxref_eacache_check.rs`), so that
//! both list the same entries and print the one format tools parse.
//!
//! The share: files `a0` `a1` `a2` and `f-set` without EAs, file `b-ea`
//! and directory `c-ea` carrying `user.srv=1` set on the server's side
//! (names sort so that EA-less entries come first, as they would before an
//! EA-bearing one in a real `ls`). Touches only the fixtures it starts.

use std::fmt;
use std::io;

use crate::{impacket, ksmbd, samba};

/// Files without EAs (the set target last).
pub const PLAIN: &[&str] = &["a0", "a1", "a2", "f-set"];
/// The file with `user.srv` on the server.
pub const EA_FILE: &str = "b-ea";
/// The directory with `user.srv` on the server.
pub const EA_DIR: &str = "c-ea";
/// The EA both carry, and its value.
pub const EA_NAME: &str = "user.srv";
pub const EA_VALUE: &str = "1";

/// The files of the share (the EA-less ones, then `b-ea`), `x` each.
fn files() -> impl Iterator<Item = &'static str> {
    PLAIN.iter().copied().chain([EA_FILE])
}

/// Samba's fixture options for the share (Samba makes `c-ea` as it sets
/// its EA).
pub fn samba_opts() -> samba::FixtureOpts {
    samba::FixtureOpts {
        entries: 0,
        files: files().map(|n| (n.to_string(), b"x".to_vec())).collect(),
        other_xattrs: [EA_FILE, EA_DIR]
            .iter()
            .map(|n| (n.to_string(), EA_NAME.into(), EA_VALUE.as_bytes().to_vec()))
            .collect(),
        ..samba::FixtureOpts::default()
    }
}

/// impacket serving the share. impacket never shows EAs; they exist on
/// its files all the same (set where the host's file system takes them).
pub fn start_impacket() -> io::Result<impacket::Server> {
    let files: Vec<(&str, &[u8])> = files().map(|n| (n, &b"x"[..])).collect();
    let srv = impacket::Server::start(&files, 0)?;
    std::fs::create_dir(srv.share_dir.join(EA_DIR))?;
    for n in [EA_FILE, EA_DIR] {
        let _ = samba::set_xattr(&srv.share_dir.join(n), EA_NAME, EA_VALUE.as_bytes());
    }
    Ok(srv)
}

/// The share as ksmbd's fixture entries.
pub fn ksmbd_entries() -> Vec<ksmbd::Entry> {
    let mut entries: Vec<ksmbd::Entry> = files()
        .map(|n| ksmbd::Entry::File(n.to_string(), "x".into()))
        .collect();
    entries.push(ksmbd::Entry::Dir(EA_DIR.into()));
    for n in [EA_FILE, EA_DIR] {
        entries.push(ksmbd::Entry::Xattr(
            n.into(),
            EA_NAME.into(),
            EA_VALUE.into(),
        ));
    }
    entries
}

/// One line of the check, exact, for tools:
///
/// `eacache-check server=S client=C design=D default=yes|no hidden=H stale_after_set=S lsla_rt_cold=C lsla_rt_warm=W`
pub struct Line<'a> {
    pub server: &'a str,
    /// `proto` (our client) or the Linux client's name.
    pub client: &'a str,
    pub design: &'a str,
    pub default: bool,
    /// EAs that exist and were answered as absent.
    pub hidden: u64,
    /// EAs set through this client and then answered as absent.
    pub stale_after_set: u64,
    /// Round trips of `ls -la`, cold and warm.
    pub lsla_rt_cold: u64,
    pub lsla_rt_warm: u64,
}

impl Line<'_> {
    /// Whether the line breaks the rule that a default design (and, for
    /// our client, `always`) never hides an EA.
    pub fn hides(&self) -> bool {
        self.hidden != 0 || self.stale_after_set != 0
    }
}

impl fmt::Display for Line<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "eacache-check server={} client={} design={} default={} hidden={} \
             stale_after_set={} lsla_rt_cold={} lsla_rt_warm={}",
            self.server,
            self.client,
            self.design,
            if self.default { "yes" } else { "no" },
            self.hidden,
            self.stale_after_set,
            self.lsla_rt_cold,
            self.lsla_rt_warm
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_line_is_the_documented_format() {
        let l = Line {
            server: "ksmbd",
            client: "proto",
            design: "easize",
            default: true,
            hidden: 0,
            stale_after_set: 2,
            lsla_rt_cold: 7,
            lsla_rt_warm: 1,
        };
        assert_eq!(
            l.to_string(),
            "eacache-check server=ksmbd client=proto design=easize default=yes hidden=0 \
             stale_after_set=2 lsla_rt_cold=7 lsla_rt_warm=1"
        );
        assert!(l.hides());
    }
}
