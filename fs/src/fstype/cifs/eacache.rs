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
//! | `negcache` (opt-in, riskier) | an inode answered "no EAs" is believed for its attribute window; per tree connect, after K such answers and none with EAs, entries listed with EaSize 0 are answered locally until the window passes, an entry with EAs is seen or a reconnect | K cold, 0 warm |
//! | `easize` (default) | an inode's own "no EAs" answer is believed for its attribute window; EaSize 0 with the attributes (QUERY_DIRECTORY's, or FileAllInformation's) is an empty list only on a tree connect whose server has shown that it fills the field (see below) | 0 cold, 0 warm where trusted; N+2 cold, 0 warm where not |
//! | `off` | no `user.` attributes at all: EOPNOTSUPP, nothing sent (as `nouser_xattr`) | 0 |
//!
//! Trusting EaSize, per tree connect (`TconEa` in `mod.rs`): *unknown* at
//! the start; *honest* once a non-reparse entry arrives with an EaSize
//! that is a length (1 to 65536: a reparse tag is larger), which a server
//! that does not fill the field never sends; *liar*, for good, once an EA
//! query finds EAs on an inode whose EaSize, fresh and recorded at the same
//! EA generation, said 0, and the file's own attributes (FileAllInformation,
//! asked once then) still show no EaSize: an EA another client added after
//! the listing shows there on an honest server, and proves it instead.
//! Samba fills EaSize from the file's EAs
//! (honest at the first entry with EAs); ksmbd's `smb2_populate_readdir_entry`
//! writes the reparse tag there, 0 for every regular file and directory,
//! and answers FileAllInformation's EASize with 0 always, so it never
//! shows the proof and is never trusted; Windows fills it as NTFS keeps
//! it. A share where no entry has EAs proves nothing either: there the
//! default asks once per inode and window (what `always` asks, cold).
//! `negcache`'s per-tcon stop still takes EaSize 0 without proof: against
//! ksmbd it hides EAs for one window (opt-in, for servers known to fill
//! the field: Samba, Windows).
//!
//! A local "no EAs" never stands for an answer the server would not give:
//! a refused EA class is EOPNOTSUPP (every design asks once, as `always`
//! would meet it), and a tree connect that ever answered EACCES stops
//! trusting EaSize (the listing cannot say which entries this user may
//! read the EAs of).
//!
//! Lost updates: each inode has an EA generation, bumped by every local EA
//! change and every invalidation (a write, a rename, a ChangeTime that
//! moved); a request samples the mount's EA clock before it is sent, and
//! its reply records nothing on an inode bumped after the sample.
//! A file with two names (a hard link) has two inodes here (the second
//! name's inode number is a local one), so a setxattr through one name is
//! also recorded by the server's FileId, and the other name's inode
//! believes nothing it learned from a request sampled before it.
//!
//! Staleness bound: an EA added on the server to an entry answered (or
//! listed) as having none shows once that inode's attribute window
//! (acregmax, acdirmax for directories) has passed; the per-tcon stop of
//! `negcache` lasts at most one window too. A change made through this
//! client (write, rename, setxattr) forgets what it knew at once.
//!
//! Batched sibling queries: where a design that remembers answers
//! (`negcache`, `easize`) must ask about an entry and a walk over its
//! directory's listing is visible, it asks in the same round trip about
//! the entries listed after it that it would also have to ask about: one
//! related CREATE + QUERY_INFO(FileFullEaInformation) + CLOSE compound per
//! entry, each its own frame (MS-SMB2 3.2.4.1.4: related and unrelated
//! compounding are never mixed in one send), every frame in one send
//! ([`smb::Connection::query_eas_many`]). A walk is visible, as readahead
//! sees a sequential reader, when the previous EA question on the listing
//! (inside the attribute window) was about the entry listed just before:
//! in the server's order (coreutils `ls -l` asks in listing order,
//! gobble_file, before it sorts; `find`, `getfattr -R`) or by name (a
//! sorted walk); the siblings then follow in that order, never past the
//! last entry. Any other question asks about its entry alone and starts
//! the batches small again, so one `getfattr` after a listing opens one
//! file, not its siblings (an open with FILE_READ_EA breaks other
//! clients' batch oplocks and write-caching leases on Windows). A listing
//! of N entries walked costs about log2 + N/128 round trips instead of N,
//! on servers whose EaSize is not trusted (ksmbd; an EA-less share where
//! nothing proves the field). Of a sibling's answer only NO_EAS is kept,
//! as the inode's own answer (the rule above, generation included: a reply
//! whose sample is stale records nothing); a list of EAs or EACCES is not
//! kept (it would be served later as the server's answer then, after a
//! change the client cannot see) and the entry is asked on its own when
//! its turn comes; a refused class marks the tree connect as a single
//! query would; any other failure of a sibling's chain records nothing.
//! The entry that was asked for gets its chain's answer exactly as a
//! single query would (EIO for a reply that does not parse).
//!
//! How many: a walk's first batch carries [`FIRST_BATCH`] entries, each
//! next one twice as many, up to `eacache_batch=` ([`DEFAULT_BATCH`]; 1
//! turns batching off). Never more than the credits the server has
//! granted pay for (three per entry; the client asks 256 with each
//! request): 128 entries are 384 credits, within what Samba's and ksmbd's
//! `smb2 max credits` (8192 by default) let a client hold; a server that
//! grants fewer gets smaller batches. The first EA query of a tree connect
//! goes alone: a server that refuses the EA class then costs one query,
//! not a batch of refusals; a link that went down and came up between the
//! choice of a batch and its send asks the entry alone too.
//!
//! Known limit: the connection lock is held for the whole batch. A
//! sibling's CREATE that the server parks on an oplock or lease break
//! (STATUS_PENDING; Windows waits up to 35 s for the other client's
//! acknowledgement) holds up the entry asked for, whose own chain may be
//! answered already, and every other request of the mount, until that
//! sibling's final reply comes or the exchange's bound passes; the client
//! sends no SMB2 CANCEL for it. It happens once per tree connect: a batch
//! that met an interim reply stops batching there (every question then
//! goes alone, as Linux's cifs asks).
//! `negcache` batches no more than the answers its per-tcon stop still
//! needs (K less those counted) while no entry has shown EAs.
//! `always` (Linux 6.12's behaviour, the baseline) never batches.
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
    /// This tree connect's server has shown that it fills EaSize, and
    /// never that it does not (see the module doc).
    pub tcon_trusts_easize: bool,
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
    /// Per-inode NO_EAS for the attribute window; EaSize 0 with the
    /// attributes is an empty list where the tree connect has shown that it
    /// fills EaSize (`easize`): there 0 cold, 0 warm, asking only for
    /// entries whose EaSize is not 0; elsewhere N+2 cold, 0 warm; one
    /// refusal, then nothing.
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
    // Unknown (what a local change leaves) is never "none".
    let attrs_say_none = c.ea_size == Some(0);
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
        "remember NO_EAS per inode for the attribute window; stop per tree connect after K NO_EAS answers (trusts EaSize 0 unproven: hides EAs on ksmbd)"
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
        "an inode's own NO_EAS for the attribute window; EaSize 0 an empty list only where the server has shown that it fills EaSize"
    }
    fn decide(&self, c: &EaCtx) -> EaAnswer {
        if c.tcon_refused {
            EaAnswer::Unsupported
        } else if c.since_no_eas_ms.is_some_and(|t| t < c.window_ms)
            || (c.ea_size == Some(0) && c.tcon_trusts_easize)
        {
            // Its own answer, or a proven EaSize 0.
            EaAnswer::NoEas
        } else {
            EaAnswer::Ask
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

/// Entries in the first batched EA round trip of a listing (see the
/// module doc, "Batched sibling queries").
pub const FIRST_BATCH: usize = 8;
/// `eacache_batch=`'s default: most entries in one batched round trip.
pub const DEFAULT_BATCH: u32 = 128;
/// `eacache_batch=`'s largest value.
pub const MAX_BATCH: u32 = 1024;

/// Does a design that sends as `s` ask about siblings with the entry it
/// was asked about? Only those that remember answers: `always` asks on
/// every call by definition, `off` never.
pub fn batches(s: EaSends) -> bool {
    matches!(s, EaSends::PerInodeAndTcon | EaSends::TrustsEaSize)
}

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
            tcon_trusts_easize: false,
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
        assert_eq!(NegCache.decide(&stopped), Ask, "tcon stopped, unknown");
        let stopped = EaCtx {
            ea_size: Some(0),
            ..stopped
        };
        assert_eq!(NegCache.decide(&stopped), NoEas, "tcon stopped, EaSize 0");
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
        assert_eq!(EaSize.decide(&ctx()), Ask, "EaSize 0, unproven: asks");
        let trusted = EaCtx {
            tcon_trusts_easize: true,
            ..ctx()
        };
        assert_eq!(EaSize.decide(&trusted), NoEas, "EaSize 0, proven");
        let c = EaCtx {
            ea_size: None,
            tcon_no_eas: 8,
            since_tcon_stop_ms: Some(5),
            ..trusted
        };
        assert_eq!(EaSize.decide(&c), Ask, "no per-tcon stop: unknown asks");
        let c = EaCtx {
            tcon_refused: true,
            ..trusted
        };
        assert_eq!(EaSize.decide(&c), Unsupported, "refused class");
        let c = EaCtx {
            ea_size: Some(15),
            ..trusted
        };
        assert_eq!(EaSize.decide(&c), Ask, "has EAs: asks");
        // Attributes showing EAs forget the inode's own NO_EAS when they
        // are recorded, so an answer still standing is the newer one.
        let c = EaCtx {
            since_no_eas_ms: Some(1),
            ..c
        };
        assert_eq!(EaSize.decide(&c), NoEas, "its own answer, newer");
        let c = EaCtx {
            ea_size: None,
            ..ctx()
        };
        assert_eq!(EaSize.decide(&c), Ask, "unknown: asks");
        let c = EaCtx {
            ea_size: None,
            since_no_eas_ms: Some(1),
            ..ctx()
        };
        assert_eq!(EaSize.decide(&c), NoEas, "its own answer");
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
        let trusted = EaCtx {
            tcon_trusts_easize: true,
            ..ctx()
        };
        for d in EACACHE_DESIGNS {
            let got = [fresh, unknown, remembered, with_eas, trusted].map(|c| d.decide(&c));
            let want = match d.sends() {
                EaSends::EveryCall => [Ask, Ask, Ask, Ask, Ask],
                EaSends::PerInodeAndTcon => [Ask, Ask, NoEas, Ask, Ask],
                EaSends::TrustsEaSize => [Ask, Ask, NoEas, Ask, NoEas],
                EaSends::Never => [Unsupported; 5],
            };
            assert_eq!(got, want, "{}: {:?}", d.name(), d.sends());
        }
    }
}
