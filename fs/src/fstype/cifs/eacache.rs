//! The EA-cache designs: when does `listxattr`/`getxattr` on a cifs inode
//! ask the server (CREATE(FILE_READ_EA) + QUERY_INFO(FileFullEaInformation)
//! + CLOSE), and when may the client answer from what it knows?
//!
//! Linux 6.12 (`fs/smb/client/xattr.c` → `smb2_query_eas`) asks on every
//! call and remembers nothing: STATUS_NO_EAS_ON_FILE becomes an empty list.
//! coreutils ≥ 9.x `ls -l` calls `llistxattr` once per entry (plus the
//! argument and `.`), so listing N entries costs N round trips, warm as
//! cold: that is the cifs seed's slow `ls -la` (docs/designs.md).
//!
//! | design | rule | QUERY_INFO for coreutils 9.7 `ls -la` of N entries without EAs |
//! |---|---|---|
//! | `always` | every call asks (Linux 6.12, the baseline) | N+2 cold, N+2 warm |
//! | `negcache` | an inode answered "no EAs" is believed for its attribute window; per tree connect, after K such answers and none with EAs, entries whose attributes did not show EAs are answered locally until the window passes, an entry with EAs is seen or a reconnect | K cold, 0 warm |
//! | `easize` (default) | the EaSize the server sent with the attributes (QUERY_DIRECTORY's, or FileAllInformation's) is 0 → an empty list, answered locally within the attribute window; unknown (reparse points, where the field holds the tag) → `negcache` | 0 cold, 0 warm |
//! | `off` | no `user.` attributes at all: EOPNOTSUPP, nothing sent (as `nouser_xattr`) | 0 |
//!
//! Staleness bound: an EA added on the server to an entry answered (or
//! listed) as having none shows once that inode's attribute window
//! (acregmax, acdirmax for directories) has passed; the per-tcon stop of
//! `negcache` lasts at most one window too. A change made through this
//! client (write, rename, setxattr) forgets what it knew at once.
//!
//! To add a design: a unit struct implementing [`EaCacheDesign`] and a line
//! in [`EACACHE_DESIGNS`]; `eacache=NAME` then accepts it, help texts and
//! error messages name it, and `make smb-bench` can sweep it.

use alloc::string::String;

/// What a design may look at to decide.
#[derive(Clone, Copy, Debug)]
pub struct EaCtx {
    /// Milliseconds since the server last said this inode has no EAs
    /// (`None`: never, or the inode changed since).
    pub since_no_eas_ms: Option<u64>,
    /// The EaSize the server sent with this inode's attributes, if they are
    /// still inside the attribute window (`None`: unknown, stale, or a
    /// reparse point).
    pub ea_size: Option<u32>,
    /// NO_EAS answers on this tree connect since the last reset.
    pub tcon_no_eas: u32,
    /// Has this tree connect ever answered with EAs?
    pub tcon_positive: bool,
    /// Milliseconds since the per-tcon count reached K (`None`: it has not).
    pub since_tcon_stop_ms: Option<u64>,
    /// The server refused the EA query class on this tree connect
    /// (STATUS_NOT_SUPPORTED / STATUS_INVALID_INFO_CLASS).
    pub tcon_refused: bool,
    /// This inode's attribute window, milliseconds.
    pub window_ms: u64,
    /// K of `negcache` (`eacache_k=`).
    pub k: u32,
}

/// A design's answer for one `listxattr`/`getxattr`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EaAnswer {
    /// Send CREATE + QUERY_INFO(FileFullEaInformation) + CLOSE.
    Ask,
    /// The inode has no EAs: an empty list (ENODATA for a name), locally.
    NoEas,
    /// No `user.` attributes here: EOPNOTSUPP, locally.
    Unsupported,
}

/// What a design sends, declared by the design so that the per-design
/// tests (fs/tests/cifs_*.rs, bench's EA checks) know what to expect of it
/// without a list of names of their own. A new design picks the behaviour
/// its `decide` has; a copy of a design copies its declaration too.
///
/// QUERY_INFO(FileFullEaInformation) for coreutils 9.7 `ls -la` of N
/// entries with no EAs, and what a server that refuses the EA class costs:
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EaSends {
    /// Every call asks (`always`): N+2 cold, N+2 warm; a refusal is asked
    /// again every time.
    EveryCall,
    /// Per-inode NO_EAS for the attribute window, and a per-tcon stop after
    /// K NO_EAS answers while none showed EAs (`negcache`): K cold, 0 warm;
    /// one refusal, then nothing.
    PerInodeAndTcon,
    /// EaSize 0 with the attributes is an empty list; unknown falls back to
    /// [`EaSends::PerInodeAndTcon`] (`easize`): 0 cold, 0 warm; asks only
    /// for entries whose EaSize is not 0.
    TrustsEaSize,
    /// Never sends; every call is EOPNOTSUPP (`off`, as `nouser_xattr`).
    Never,
}

/// One EA-cache policy.
pub trait EaCacheDesign: Sync {
    /// The name in `eacache=`.
    fn name(&self) -> &'static str;
    /// One line for help texts.
    fn help(&self) -> &'static str;
    /// Ask the server, or answer locally?
    fn decide(&self, c: &EaCtx) -> EaAnswer;
    /// What it sends, for the per-design tests to check.
    fn sends(&self) -> EaSends;
}

/// Linux 6.12: every call asks.
pub struct Always;
/// Per-inode and per-tcon negative cache.
pub struct NegCache;
/// Trust the EaSize the attributes came with.
pub struct EaSize;
/// No `user.` attributes (as `nouser_xattr`).
pub struct Off;

impl EaCacheDesign for Always {
    fn name(&self) -> &'static str {
        "always"
    }
    fn help(&self) -> &'static str {
        "Linux 6.12: every listxattr/getxattr sends CREATE+QUERY_INFO(EA)+CLOSE, nothing remembered"
    }
    fn decide(&self, _: &EaCtx) -> EaAnswer {
        EaAnswer::Ask
    }
    fn sends(&self) -> EaSends {
        EaSends::EveryCall
    }
}

fn negcache_rule(c: &EaCtx) -> EaAnswer {
    if c.tcon_refused {
        return EaAnswer::Unsupported;
    }
    if c.since_no_eas_ms.is_some_and(|t| t < c.window_ms) {
        return EaAnswer::NoEas;
    }
    let attrs_say_none = c.ea_size.is_none_or(|s| s == 0);
    let tcon_stopped = !c.tcon_positive
        && c.tcon_no_eas >= c.k
        && c.since_tcon_stop_ms.is_some_and(|t| t < c.window_ms);
    if tcon_stopped && attrs_say_none {
        EaAnswer::NoEas
    } else {
        EaAnswer::Ask
    }
}

impl EaCacheDesign for NegCache {
    fn name(&self) -> &'static str {
        "negcache"
    }
    fn help(&self) -> &'static str {
        "remember NO_EAS per inode for the attribute window; stop per tree connect after K NO_EAS answers"
    }
    fn decide(&self, c: &EaCtx) -> EaAnswer {
        negcache_rule(c)
    }
    fn sends(&self) -> EaSends {
        EaSends::PerInodeAndTcon
    }
}

impl EaCacheDesign for EaSize {
    fn name(&self) -> &'static str {
        "easize"
    }
    fn help(&self) -> &'static str {
        "EaSize 0 in the listing or FileAllInformation: an empty list, locally, within the attribute window; unknown: negcache"
    }
    fn decide(&self, c: &EaCtx) -> EaAnswer {
        match c.ea_size {
            _ if c.tcon_refused => EaAnswer::Unsupported,
            Some(0) => EaAnswer::NoEas,
            Some(_) => EaAnswer::Ask,
            None => negcache_rule(c),
        }
    }
    fn sends(&self) -> EaSends {
        EaSends::TrustsEaSize
    }
}

impl EaCacheDesign for Off {
    fn name(&self) -> &'static str {
        "off"
    }
    fn help(&self) -> &'static str {
        "no user. attributes: EOPNOTSUPP without a round trip (as nouser_xattr)"
    }
    fn decide(&self, _: &EaCtx) -> EaAnswer {
        EaAnswer::Unsupported
    }
    fn sends(&self) -> EaSends {
        EaSends::Never
    }
}

/// A design added only by the fs feature `test-design`, exactly as
/// docs/designs.md tells a user to add one (a copy of `always` under a new
/// name, its declaration included, and one entry in [`EACACHE_DESIGNS`]):
/// scripts/design-check.sh proves that every surface and every per-design
/// test takes it with no other edit.
#[cfg(feature = "test-design")]
pub struct AskAll;

#[cfg(feature = "test-design")]
impl EaCacheDesign for AskAll {
    fn name(&self) -> &'static str {
        "askall"
    }
    fn help(&self) -> &'static str {
        "test only: a copy of always under another name"
    }
    fn decide(&self, _: &EaCtx) -> EaAnswer {
        EaAnswer::Ask
    }
    fn sends(&self) -> EaSends {
        EaSends::EveryCall
    }
}

/// Every EA-cache design, in report order. Add new designs here: this is
/// the only list (`eacache=`, the guest's `smbopts=`, `bench smb-sweep`,
/// help texts, errors and every per-design test read it).
pub static EACACHE_DESIGNS: &[&dyn EaCacheDesign] = &[
    &Always,
    &NegCache,
    &EaSize,
    &Off,
    #[cfg(feature = "test-design")]
    &AskAll,
];

/// The default design.
pub const DEFAULT: &str = "easize";

/// Index of the design called `name`.
pub fn by_name(name: &str) -> Option<usize> {
    EACACHE_DESIGNS.iter().position(|d| d.name() == name)
}

/// The design names as one `a|b|c` word (for messages and help).
pub fn names() -> String {
    let mut s = String::new();
    for (i, d) in EACACHE_DESIGNS.iter().enumerate() {
        if i > 0 {
            s.push('|');
        }
        s.push_str(d.name());
    }
    s
}

/// `wslea=NAME`, the option's old name: the design it now means. `probe`
/// (an EA query on every `stat`) modelled no Linux client; the client
/// that really asks every time is `always`.
pub fn from_wslea(name: &str) -> Option<usize> {
    match name {
        "probe" => by_name("always"),
        n => by_name(n),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ctx() -> EaCtx {
        EaCtx {
            since_no_eas_ms: None,
            ea_size: Some(0),
            tcon_no_eas: 0,
            tcon_positive: false,
            since_tcon_stop_ms: None,
            tcon_refused: false,
            window_ms: 1000,
            k: 8,
        }
    }

    use EaAnswer::*;

    #[test]
    fn always_and_off() {
        for c in [
            ctx(),
            EaCtx {
                tcon_refused: true,
                since_no_eas_ms: Some(1),
                ..ctx()
            },
        ] {
            assert_eq!(Always.decide(&c), Ask, "Linux asks every time");
            assert_eq!(Off.decide(&c), Unsupported);
        }
    }

    #[test]
    fn negcache() {
        let no_size = EaCtx {
            ea_size: None,
            ..ctx()
        };
        assert_eq!(NegCache.decide(&no_size), Ask, "nothing known yet");
        assert_eq!(
            NegCache.decide(&ctx()),
            Ask,
            "negcache ignores EaSize alone"
        );
        let c = EaCtx {
            since_no_eas_ms: Some(10),
            ..no_size
        };
        assert_eq!(NegCache.decide(&c), NoEas, "per-inode negative in window");
        let c = EaCtx {
            since_no_eas_ms: Some(1000),
            ..no_size
        };
        assert_eq!(NegCache.decide(&c), Ask, "window expired");
        let stopped = EaCtx {
            tcon_no_eas: 8,
            since_tcon_stop_ms: Some(5),
            ..no_size
        };
        assert_eq!(NegCache.decide(&stopped), NoEas, "tcon stopped");
        let c = EaCtx {
            ea_size: Some(19),
            ..stopped
        };
        assert_eq!(NegCache.decide(&c), Ask, "attributes show EAs");
        let c = EaCtx {
            tcon_positive: true,
            ..stopped
        };
        assert_eq!(NegCache.decide(&c), Ask, "an entry with EAs re-arms");
        let c = EaCtx {
            since_tcon_stop_ms: Some(1000),
            ..stopped
        };
        assert_eq!(NegCache.decide(&c), Ask, "the stop lasts one window");
        let c = EaCtx {
            tcon_refused: true,
            ..no_size
        };
        assert_eq!(NegCache.decide(&c), Unsupported, "refused class");
    }

    #[test]
    fn easize() {
        assert_eq!(EaSize.decide(&ctx()), NoEas, "EaSize 0: no EAs at all");
        let c = EaCtx {
            ea_size: Some(15),
            since_no_eas_ms: Some(1),
            ..ctx()
        };
        assert_eq!(EaSize.decide(&c), Ask, "has EAs: asks");
        let c = EaCtx {
            ea_size: None,
            ..ctx()
        };
        assert_eq!(EaSize.decide(&c), Ask, "unknown: the negcache rule");
        let c = EaCtx {
            ea_size: None,
            since_no_eas_ms: Some(1),
            ..ctx()
        };
        assert_eq!(EaSize.decide(&c), NoEas, "unknown: the negcache rule");
    }

    #[test]
    fn registry_names() {
        assert!(
            names().starts_with("always|negcache|easize|off"),
            "{}",
            names()
        );
        assert!(by_name(DEFAULT).is_some());
        assert_eq!(from_wslea("probe"), by_name("always"));
        assert_eq!(from_wslea("negcache"), by_name("negcache"));
        assert_eq!(from_wslea("bogus"), None);
    }

    /// Every design's `decide` does what its `sends()` declares, on the
    /// situations that tell the four behaviours apart.
    #[test]
    fn every_design_decides_as_it_declares() {
        let fresh = ctx();
        let unknown = EaCtx {
            ea_size: None,
            ..ctx()
        };
        let remembered = EaCtx {
            since_no_eas_ms: Some(10),
            ..unknown
        };
        let with_eas = EaCtx {
            ea_size: Some(19),
            ..ctx()
        };
        for d in EACACHE_DESIGNS {
            let got = [fresh, unknown, remembered, with_eas].map(|c| d.decide(&c));
            let want = match d.sends() {
                EaSends::EveryCall => [Ask, Ask, Ask, Ask],
                EaSends::PerInodeAndTcon => [Ask, Ask, NoEas, Ask],
                EaSends::TrustsEaSize => [NoEas, Ask, NoEas, Ask],
                EaSends::Never => [Unsupported; 4],
            };
            assert_eq!(got, want, "{}: {:?}", d.name(), d.sends());
        }
    }
}
