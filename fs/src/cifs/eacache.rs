//! The WSL-EA designs: when does `stat` ask the server for the WSL metadata
//! EAs (`$LXUID $LXGID $LXMOD $LXDEV`)?
//!
//! | design | rule | round trips for `ls -la` of N entries without EAs |
//! |---|---|---|
//! | `probe` | every `stat`, every time (Linux 6.12 as the seed shows it) | N cold, N warm |
//! | `negcache` | remember the answer (NO_EAS included) per inode for the attribute window; per tree connect, after K answers of NO_EAS and no WSL EA ever, stop probing entries whose listing showed no EAs, until a positive answer, a reconnect or the window expiring | K cold, 0 warm |
//! | `easize` (default) | the listing's EaSize says whether an entry has any EA at all: 0 → never probe; reparse points (where that field holds the tag) fall back to `negcache` | 0 cold, 0 warm |
//! | `off` | never probe (implied when uid, gid, file_mode and dir_mode are all forced) | 0 |
//!
//! Staleness bound of `negcache`: an entry that gains WSL EAs after being
//! answered NO_EAS shows the default owner for at most one attribute window
//! (acregmax) per inode, and the per-tcon stop lasts at most one window too.
//!
//! To add a design: a unit struct implementing [`WslEaDesign`] and a line in
//! [`WSLEA_DESIGNS`]; `wslea=NAME` then accepts it and `make smb-bench`
//! can sweep it.

/// What a design may look at to decide.
pub struct ProbeCtx {
    /// Milliseconds since the server last answered a probe for this inode
    /// (NO_EAS or the EAs themselves); `None`: never asked.
    pub since_answer_ms: Option<u64>,
    /// The directory listing's EaSize for this entry (`None`: unknown or a
    /// reparse point).
    pub listing_ea_size: Option<u32>,
    /// NO_EAS answers on this tree connect since the last reset.
    pub tcon_no_eas: u32,
    /// Has this tree connect ever returned a WSL EA?
    pub tcon_positive: bool,
    /// Milliseconds since the per-tcon count reached K (`None`: it has not).
    pub since_tcon_stop_ms: Option<u64>,
    /// The attribute-cache window (acregmax), milliseconds.
    pub window_ms: u64,
    /// K of `negcache`.
    pub k: u32,
}

/// One policy for WSL-EA probing.
pub trait WslEaDesign: Sync {
    /// The name in `wslea=`.
    fn name(&self) -> &'static str;
    /// One line for help texts.
    fn help(&self) -> &'static str;
    /// Send CREATE+QUERY_INFO(EA)+CLOSE for this `stat`?
    fn should_probe(&self, c: &ProbeCtx) -> bool;
}

/// Linux 6.12: probe on every stat.
pub struct Probe;
/// Per-inode and per-tcon negative cache.
pub struct NegCache;
/// Trust the listing's EaSize.
pub struct EaSize;
/// Never probe.
pub struct Off;

impl WslEaDesign for Probe {
    fn name(&self) -> &'static str {
        "probe"
    }
    fn help(&self) -> &'static str {
        "Linux 6.12: CREATE+QUERY_INFO(EA)+CLOSE on every stat, nothing remembered"
    }
    fn should_probe(&self, _: &ProbeCtx) -> bool {
        true
    }
}

fn negcache_rule(c: &ProbeCtx) -> bool {
    if c.since_answer_ms.is_some_and(|t| t < c.window_ms) {
        return false;
    }
    let listing_says_none = c.listing_ea_size.is_none_or(|s| s == 0);
    let tcon_stopped = !c.tcon_positive
        && c.tcon_no_eas >= c.k
        && c.since_tcon_stop_ms.is_some_and(|t| t < c.window_ms);
    !(tcon_stopped && listing_says_none)
}

impl WslEaDesign for NegCache {
    fn name(&self) -> &'static str {
        "negcache"
    }
    fn help(&self) -> &'static str {
        "remember NO_EAS per inode for the attribute window; stop per tree connect after K NO_EAS answers"
    }
    fn should_probe(&self, c: &ProbeCtx) -> bool {
        negcache_rule(c)
    }
}

impl WslEaDesign for EaSize {
    fn name(&self) -> &'static str {
        "easize"
    }
    fn help(&self) -> &'static str {
        "never probe entries whose directory listing says EaSize=0; reparse points fall back to negcache"
    }
    fn should_probe(&self, c: &ProbeCtx) -> bool {
        match c.listing_ea_size {
            Some(0) => false,
            Some(_) => c.since_answer_ms.is_none_or(|t| t >= c.window_ms),
            None => negcache_rule(c),
        }
    }
}

impl WslEaDesign for Off {
    fn name(&self) -> &'static str {
        "off"
    }
    fn help(&self) -> &'static str {
        "never probe for WSL EAs (implied when uid, gid and both modes are forced)"
    }
    fn should_probe(&self, _: &ProbeCtx) -> bool {
        false
    }
}

/// Every WSL-EA design. Add new designs here.
pub static WSLEA_DESIGNS: &[&dyn WslEaDesign] = &[&Probe, &NegCache, &EaSize, &Off];

/// Index of the design called `name`.
pub fn by_name(name: &str) -> Option<usize> {
    WSLEA_DESIGNS.iter().position(|d| d.name() == name)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ctx() -> ProbeCtx {
        ProbeCtx {
            since_answer_ms: None,
            listing_ea_size: Some(0),
            tcon_no_eas: 0,
            tcon_positive: false,
            since_tcon_stop_ms: None,
            window_ms: 1000,
            k: 8,
        }
    }

    #[test]
    fn rules() {
        let c = ctx();
        assert!(Probe.should_probe(&c));
        assert!(!Off.should_probe(&c));
        assert!(!EaSize.should_probe(&c), "EaSize 0: no EAs at all");
        assert!(NegCache.should_probe(&c), "nothing known yet");
        let c = ProbeCtx {
            since_answer_ms: Some(10),
            ..ctx()
        };
        assert!(
            !NegCache.should_probe(&c),
            "per-inode negative within window"
        );
        let c = ProbeCtx {
            since_answer_ms: Some(2000),
            ..ctx()
        };
        assert!(NegCache.should_probe(&c), "window expired");
        let c = ProbeCtx {
            tcon_no_eas: 8,
            since_tcon_stop_ms: Some(5),
            ..ctx()
        };
        assert!(!NegCache.should_probe(&c), "tcon stopped");
        let c = ProbeCtx {
            tcon_no_eas: 8,
            since_tcon_stop_ms: Some(5),
            listing_ea_size: Some(19),
            ..ctx()
        };
        assert!(NegCache.should_probe(&c), "listing says it has EAs");
        let c = ProbeCtx {
            tcon_no_eas: 8,
            since_tcon_stop_ms: Some(5),
            tcon_positive: true,
            ..ctx()
        };
        assert!(
            NegCache.should_probe(&c),
            "a positive answer re-arms probing"
        );
        let c = ProbeCtx {
            listing_ea_size: None,
            ..ctx()
        };
        assert!(EaSize.should_probe(&c), "reparse point: negcache rule");
        let c = ProbeCtx {
            listing_ea_size: Some(15),
            ..ctx()
        };
        assert!(EaSize.should_probe(&c), "has EAs");
    }
}
