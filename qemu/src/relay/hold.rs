//! The hold rule: keep one server → client frame back until another
//! request's response has gone by, to force an interleaving the client
//! would otherwise hit only by chance (a listing's reply applied after a
//! setxattr that the server ran later).
//!
//! [`Holder`] sees the server → client bytes after the parser and faults,
//! reassembles NetBIOS session frames (4-byte header, 24-bit length) and
//! hands back whole frames to forward. The first frame carrying a
//! successful response of the rule's `command` (any message of a compound
//! chain, followed through NextCommand) is kept back; it is released right
//! after the first later frame that carries a response of the `until`
//! command (final status, not STATUS_PENDING), or at the timeout. SMB2
//! clients match responses to requests by MessageId, so a reply released
//! later is legal reordering, not corruption. Encrypted (0xFD 'S' 'M' 'B')
//! and compressed (0xFC) frames cannot be read and are never held: a test
//! that needs the hold mounts without encryption; they are counted in
//! [`HoldStats::opaque_frames`] so a test can tell. Only one frame is ever
//! held per connection; after the release (or with no rule) bytes pass
//! through as they came. It touches nothing but the bytes it is given and,
//! with `armed_by`, the existence of one file.
//!
//! A rule may also rewrite one NT status into another in every response
//! header of every frame once armed (`rewrite_status`), for as long as the
//! connection lasts: e.g. STATUS_NO_EAS_ON_FILE into STATUS_ACCESS_DENIED,
//! a server that refuses EA queries (both are error responses with the same
//! 9-byte body, so no length changes; unsigned mounts only, as a client
//! checks a signature over the header). With [`NEVER`] as `command` it
//! only rewrites.

use serde::{Deserialize, Serialize};
use std::path::PathBuf;
use std::time::{Duration, Instant};

use super::SMB2_HEADER_LEN;

/// SMB2 QUERY_DIRECTORY.
pub const SMB2_QUERY_DIRECTORY: u16 = 0x000e;
/// SMB2 SET_INFO.
pub const SMB2_SET_INFO: u16 = 0x0011;
const STATUS_PENDING: u32 = 0x0000_0103;
/// A command no response carries: a rule with it holds nothing.
pub const NEVER: u16 = 0xffff;
/// Most bytes buffered while waiting for a frame to complete: a NetBIOS
/// length is 24 bits, so this is never reached by a well-formed stream.
const MAX_FRAME: usize = 4 + 0x00ff_ffff;

/// What to hold and until when.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct HoldRule {
    /// Command whose first successful response is held.
    pub command: u16,
    /// Command whose response releases the held frame.
    pub until: u16,
    /// Release anyway after this long (reported as `timeout`).
    pub timeout: Duration,
    /// Hold only once this file exists (a harness arms the rule in-band,
    /// e.g. through a marker request); `None`: armed from the start.
    pub armed_by: Option<PathBuf>,
    /// Once armed, every response header with status `.0` gets `.1`.
    #[serde(default)]
    pub rewrite_status: Option<(u32, u32)>,
}

impl HoldRule {
    /// Hold the first successful QUERY_DIRECTORY response until a SET_INFO
    /// response has gone back.
    pub fn listing_until_set_info(timeout: Duration) -> Self {
        HoldRule {
            command: SMB2_QUERY_DIRECTORY,
            until: SMB2_SET_INFO,
            timeout,
            armed_by: None,
            rewrite_status: None,
        }
    }
}

/// What the rule did on one connection (stats file field `hold`).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct HoldStats {
    /// A frame was held.
    pub held: bool,
    /// MessageId of the held response (the first matching one of its chain).
    pub held_message_id: u64,
    /// `"until"` (the release command's response went by first),
    /// `"timeout"`, `"closed"` (the connection ended while holding), or
    /// empty (nothing held, or still holding).
    pub released_by: String,
    /// Milliseconds the frame was held.
    pub held_ms: f64,
    /// Frames that passed while the frame was held.
    pub passed_while_held: u64,
    /// Encrypted or compressed frames seen (never held: unreadable).
    pub opaque_frames: u64,
    /// Response headers whose status was rewritten (`rewrite_status`).
    pub rewritten: u64,
}

/// Rewrites status `from` into `to` in each response header of `frame`'s
/// compound chain; returns how many it rewrote.
pub fn rewrite_status(frame: &mut [u8], from: u32, to: u32) -> u64 {
    let mut n = 0;
    let Some(p) = frame.get_mut(4..) else {
        return 0;
    };
    let mut off = 0usize;
    while let Some(h) = p.get_mut(off..off + SMB2_HEADER_LEN) {
        if h[..4] != [0xfe, b'S', b'M', b'B'] {
            break;
        }
        if u32::from_le_bytes([h[8], h[9], h[10], h[11]]) == from {
            h[8..12].copy_from_slice(&to.to_le_bytes());
            n += 1;
        }
        let next = u32::from_le_bytes([h[20], h[21], h[22], h[23]]) as usize;
        if next < SMB2_HEADER_LEN {
            break;
        }
        off += next;
    }
    n
}

/// The (command, status, message id) of each response in an SMB2 frame's
/// compound chain; empty for anything else (SMB1, transforms, garbage). A
/// chain that runs out of the frame stops there.
pub fn chain(frame: &[u8]) -> Vec<(u16, u32, u64)> {
    let mut out = Vec::new();
    let Some(p) = frame.get(4..) else {
        return out;
    };
    let mut off = 0usize;
    while let Some(h) = p.get(off..off + SMB2_HEADER_LEN) {
        if h[..4] != [0xfe, b'S', b'M', b'B'] {
            break;
        }
        let status = u32::from_le_bytes([h[8], h[9], h[10], h[11]]);
        let cmd = u16::from_le_bytes([h[12], h[13]]);
        let next = u32::from_le_bytes([h[20], h[21], h[22], h[23]]) as usize;
        let mut mid = [0u8; 8];
        mid.copy_from_slice(&h[24..32]);
        out.push((cmd, status, u64::from_le_bytes(mid)));
        if next < SMB2_HEADER_LEN {
            break;
        }
        off += next;
    }
    out
}

enum State {
    Waiting,
    Holding { since: Instant, frame: Vec<u8> },
    Done,
}

/// The rule applied to one connection's server → client stream.
pub struct Holder {
    rule: HoldRule,
    partial: Vec<u8>,
    state: State,
    /// What happened so far.
    pub stats: HoldStats,
}

impl Holder {
    /// A holder waiting for its frame.
    pub fn new(rule: HoldRule) -> Self {
        Holder {
            rule,
            partial: Vec::new(),
            state: State::Waiting,
            stats: HoldStats::default(),
        }
    }

    /// The rule has run its course (bytes now pass straight through).
    pub fn done(&self) -> bool {
        matches!(self.state, State::Done) && self.rule.rewrite_status.is_none()
    }

    fn armed(&self) -> bool {
        self.rule.armed_by.as_ref().is_none_or(|p| p.exists())
    }

    /// Feed server → client bytes; returns what to forward now, in order
    /// (whole frames while the rule is live, the bytes as given after).
    pub fn push(&mut self, bytes: &[u8], now: Instant) -> Vec<Vec<u8>> {
        let mut out = Vec::new();
        if let Some(f) = self.expire(now) {
            out.push(f);
        }
        if self.done() && self.partial.is_empty() {
            if !bytes.is_empty() {
                out.push(bytes.to_vec());
            }
            return out;
        }
        self.partial.extend_from_slice(bytes);
        loop {
            if self.done() {
                if !self.partial.is_empty() {
                    out.push(std::mem::take(&mut self.partial));
                }
                break;
            }
            let Some(h) = self.partial.get(..4) else {
                break;
            };
            let len = 4 + (usize::from(h[1]) << 16 | usize::from(h[2]) << 8 | usize::from(h[3]));
            if len > MAX_FRAME || self.partial.len() < len {
                break;
            }
            let rest = self.partial.split_off(len);
            let frame = std::mem::replace(&mut self.partial, rest);
            self.frame(frame, now, &mut out);
        }
        out
    }

    fn frame(&mut self, mut frame: Vec<u8>, now: Instant, out: &mut Vec<Vec<u8>>) {
        let magic = frame.get(4..8);
        if frame[0] == 0 && matches!(magic, Some([0xfd | 0xfc, b'S', b'M', b'B'])) {
            self.stats.opaque_frames += 1;
        }
        if let Some((from, to)) = self.rule.rewrite_status {
            if self.armed() {
                self.stats.rewritten += rewrite_status(&mut frame, from, to);
            }
        }
        let msgs = chain(&frame);
        match &self.state {
            State::Waiting => {
                let hit = msgs
                    .iter()
                    .find(|(c, s, _)| *c == self.rule.command && *s == 0);
                match hit {
                    Some(&(_, _, mid)) if self.armed() => {
                        self.stats.held = true;
                        self.stats.held_message_id = mid;
                        self.state = State::Holding { since: now, frame };
                    }
                    _ => out.push(frame),
                }
            }
            State::Holding { .. } => {
                let release = msgs
                    .iter()
                    .any(|(c, s, _)| *c == self.rule.until && *s != STATUS_PENDING);
                out.push(frame);
                if release {
                    out.extend(self.release(now, "until"));
                } else {
                    self.stats.passed_while_held += 1;
                }
            }
            State::Done => out.push(frame),
        }
    }

    fn release(&mut self, now: Instant, why: &str) -> Option<Vec<u8>> {
        match std::mem::replace(&mut self.state, State::Done) {
            State::Holding { since, frame } => {
                self.stats.released_by = why.into();
                self.stats.held_ms = now.duration_since(since).as_secs_f64() * 1000.0;
                Some(frame)
            }
            other => {
                self.state = other;
                None
            }
        }
    }

    /// The held frame, if its timeout has passed (to forward now).
    pub fn expire(&mut self, now: Instant) -> Option<Vec<u8>> {
        match &self.state {
            State::Holding { since, .. } if now.duration_since(*since) >= self.rule.timeout => {
                self.release(now, "timeout")
            }
            _ => None,
        }
    }

    /// The connection is ending: the held frame, if any, and what is left
    /// of a partial frame.
    pub fn finish(&mut self, now: Instant) -> Vec<Vec<u8>> {
        let mut out: Vec<Vec<u8>> = self.release(now, "closed").into_iter().collect();
        self.state = State::Done;
        if !self.partial.is_empty() {
            out.push(std::mem::take(&mut self.partial));
        }
        out
    }

    /// When the held frame's timeout falls, if one is held.
    pub fn deadline(&self) -> Option<Instant> {
        match &self.state {
            State::Holding { since, .. } => Some(*since + self.rule.timeout),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// One NetBIOS frame of SMB2 responses (command, status, message id),
    /// chained with NextCommand, each with `body` bytes after its header.
    fn frame(msgs: &[(u16, u32, u64)], body: usize) -> Vec<u8> {
        let mut p = Vec::new();
        for (i, &(c, s, m)) in msgs.iter().enumerate() {
            let mut h = vec![0u8; SMB2_HEADER_LEN + body];
            h[..4].copy_from_slice(&[0xfe, b'S', b'M', b'B']);
            h[4] = 64;
            h[8..12].copy_from_slice(&s.to_le_bytes());
            h[12..14].copy_from_slice(&c.to_le_bytes());
            h[16] = 1;
            if i + 1 < msgs.len() {
                h.resize((h.len() + 7) & !7, 0);
                let n = h.len() as u32;
                h[20..24].copy_from_slice(&n.to_le_bytes());
            }
            h[24..32].copy_from_slice(&m.to_le_bytes());
            p.extend(h);
        }
        let n = p.len() as u32;
        let mut f = vec![0, (n >> 16) as u8, (n >> 8) as u8, n as u8];
        f.extend(p);
        f
    }

    const CREATE: u16 = 5;
    const ECHO: u16 = 13;

    fn rule() -> HoldRule {
        HoldRule::listing_until_set_info(Duration::from_secs(5))
    }

    #[test]
    fn chain_follows_next_command() {
        let f = frame(&[(CREATE, 0, 7), (SMB2_QUERY_DIRECTORY, 0, 8)], 9);
        assert_eq!(
            chain(&f),
            vec![(CREATE, 0, 7), (SMB2_QUERY_DIRECTORY, 0, 8)]
        );
        // A NextCommand pointing past the frame ends the walk there.
        let mut bad = f.clone();
        bad[4 + 20] = 0xf0;
        assert_eq!(chain(&bad), vec![(CREATE, 0, 7)]);
        assert!(chain(&[0, 0, 0, 3, 1, 2, 3]).is_empty());
    }

    #[test]
    fn holds_the_listing_until_set_info_has_gone_back() {
        let t = Instant::now();
        let mut h = Holder::new(rule());
        let open_list = frame(&[(CREATE, 0, 4), (SMB2_QUERY_DIRECTORY, 0, 5)], 40);
        let lookup = frame(&[(CREATE, 0, 6)], 10);
        let set = frame(&[(CREATE, 0, 7), (SMB2_SET_INFO, 0, 8), (6, 0, 9)], 8);
        let after = frame(&[(ECHO, 0, 10)], 4);
        assert!(h.push(&open_list, t).is_empty(), "the listing is held");
        assert_eq!(h.push(&lookup, t), vec![lookup.clone()]);
        assert_eq!(h.stats.held_message_id, 5);
        // The set's response goes first, then the held listing.
        assert_eq!(
            h.push(&set, t + Duration::from_millis(30)),
            vec![set.clone(), open_list.clone()]
        );
        assert_eq!(h.push(&after, t), vec![after.clone()]);
        assert_eq!(h.stats.released_by, "until");
        assert_eq!(h.stats.passed_while_held, 1);
        assert!((h.stats.held_ms - 30.0).abs() < 1e-6);
        // Only the first listing is held.
        let again = frame(&[(SMB2_QUERY_DIRECTORY, 0, 11)], 4);
        assert_eq!(h.push(&again, t), vec![again.clone()]);
    }

    #[test]
    fn frames_split_and_joined_come_out_whole_and_in_order() {
        let t = Instant::now();
        let mut h = Holder::new(rule());
        let a = frame(&[(CREATE, 0, 1)], 100);
        let list = frame(&[(SMB2_QUERY_DIRECTORY, 0, 2)], 300);
        let set = frame(&[(SMB2_SET_INFO, 0, 3)], 2);
        let stream: Vec<u8> = [a.clone(), list.clone(), set.clone()].concat();
        let mut out = Vec::new();
        for piece in stream.chunks(7) {
            out.extend(h.push(piece, t));
        }
        assert_eq!(out, vec![a, set, list]);
        assert!(h.done());
    }

    #[test]
    fn failures_and_interim_responses_are_not_held_nor_release() {
        let t = Instant::now();
        let mut h = Holder::new(rule());
        // STATUS_NO_MORE_FILES: not a listing to hold.
        let end = frame(&[(SMB2_QUERY_DIRECTORY, 0x8000_0006, 1)], 8);
        assert_eq!(h.push(&end, t), vec![end.clone()]);
        let list = frame(&[(SMB2_QUERY_DIRECTORY, 0, 2)], 8);
        assert!(h.push(&list, t).is_empty());
        // An interim (STATUS_PENDING) SET_INFO answer does not release.
        let pending = frame(&[(SMB2_SET_INFO, STATUS_PENDING, 3)], 8);
        assert_eq!(h.push(&pending, t), vec![pending.clone()]);
        // A failed SET_INFO is still its response: it releases.
        let denied = frame(&[(SMB2_SET_INFO, 0xc000_0022, 3)], 8);
        assert_eq!(h.push(&denied, t), vec![denied.clone(), list]);
    }

    #[test]
    fn timeout_releases_and_says_so() {
        let t = Instant::now();
        let mut h = Holder::new(rule());
        let list = frame(&[(SMB2_QUERY_DIRECTORY, 0, 2)], 8);
        assert!(h.push(&list, t).is_empty());
        assert_eq!(h.deadline(), Some(t + Duration::from_secs(5)));
        assert_eq!(h.expire(t + Duration::from_secs(4)), None);
        assert_eq!(h.expire(t + Duration::from_secs(5)), Some(list));
        assert_eq!(h.stats.released_by, "timeout");
        assert!(h.done());
    }

    #[test]
    fn encrypted_frames_pass_and_are_counted() {
        let t = Instant::now();
        let mut h = Holder::new(rule());
        let mut enc = frame(&[(SMB2_QUERY_DIRECTORY, 0, 2)], 8);
        enc[4] = 0xfd;
        assert_eq!(h.push(&enc, t), vec![enc.clone()]);
        assert_eq!(h.stats.opaque_frames, 1);
        assert!(!h.stats.held);
    }

    #[test]
    fn not_armed_until_the_file_exists() {
        let dir = std::env::temp_dir().join(format!("relay-hold-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let arm = dir.join("arm");
        let mut h = Holder::new(HoldRule {
            rewrite_status: None,
            armed_by: Some(arm.clone()),
            ..rule()
        });
        let t = Instant::now();
        let list = frame(&[(SMB2_QUERY_DIRECTORY, 0, 2)], 8);
        assert_eq!(h.push(&list, t), vec![list.clone()]);
        std::fs::create_dir(&arm).unwrap();
        assert!(h.push(&list, t).is_empty());
        assert_eq!(h.finish(t), vec![list]);
        assert_eq!(h.stats.released_by, "closed");
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn rewrites_status_once_armed_in_every_chain_member() {
        const NO_EAS: u32 = 0xc000_0052;
        const DENIED: u32 = 0xc000_0022;
        let armed = std::env::temp_dir().join(format!("hold-rewrite-{}", std::process::id()));
        let _ = std::fs::remove_file(&armed);
        let mut h = Holder::new(HoldRule {
            command: NEVER,
            until: NEVER,
            timeout: Duration::from_secs(5),
            armed_by: Some(armed.clone()),
            rewrite_status: Some((NO_EAS, DENIED)),
        });
        let f = frame(&[(CREATE, 0, 1), (16, NO_EAS, 2), (6, 0, 3)], 9);
        let now = Instant::now();
        assert_eq!(h.push(&f, now), vec![f.clone()], "not armed: as it came");
        std::fs::write(&armed, b"").unwrap();
        let out = h.push(&f, now);
        let _ = std::fs::remove_file(&armed);
        assert_eq!(out.len(), 1);
        assert_eq!(
            chain(&out[0]),
            vec![(CREATE, 0, 1), (16, DENIED, 2), (6, 0, 3)]
        );
        assert_eq!(out[0].len(), f.len());
        assert_eq!(h.stats.rewritten, 1);
        assert!(!h.stats.held);
        // Split across reads, the next frame is still rewritten whole.
        std::fs::write(&armed, b"").unwrap();
        let mut got = h.push(&f[..10], now);
        got.extend(h.push(&f[10..], now));
        let _ = std::fs::remove_file(&armed);
        assert_eq!(chain(&got.concat())[1], (16, DENIED, 2));
    }
}
