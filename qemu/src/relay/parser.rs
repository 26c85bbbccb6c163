//! The stream parser: [`StreamParser`], one direction's framing state
//! machine (NetBIOS, SMB2 headers, compound chains, resync after garbage),
//! and the [`Faults`] it applies as bytes pass.

use serde::{Deserialize, Serialize};
use std::collections::VecDeque;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use super::*;

/// SMB2 header length.
pub const SMB2_HEADER_LEN: usize = 64;
/// Offset of the 16-byte signature inside an SMB2 header.
pub const SMB2_SIGNATURE_OFFSET: usize = 48;
/// SMB2 command code of ECHO (segment marker, see [`RelayConfig::segment_on_echo`]).
pub const SMB2_ECHO: u16 = 0x000d;
/// `Flags` bit: the message is signed.
pub const SMB2_FLAGS_SIGNED: u32 = 0x0000_0008;

pub(super) const PROTO_SMB2: [u8; 4] = [0xfe, b'S', b'M', b'B'];
pub(super) const PROTO_TRANSFORM: [u8; 4] = [0xfd, b'S', b'M', b'B'];
pub(super) const PROTO_COMPRESSED: [u8; 4] = [0xfc, b'S', b'M', b'B'];
pub(super) const PROTO_SMB1: [u8; 4] = [0xff, b'S', b'M', b'B'];

/// Faults to inject. Frame numbers count NetBIOS session messages (type
/// 0x00) per direction, from 1.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Faults {
    /// Forward the first N client frames; when frame N+1 begins, close both
    /// sides (it is not forwarded).
    pub drop_after: Option<u64>,
    /// Forward the first N client frames; from frame N+1 on, forward
    /// nothing in either direction but keep both sockets open (client bytes
    /// are read and discarded) until the client closes.
    pub stall_after: Option<u64>,
    /// XOR 0xFF into one byte of the Nth server frame: the byte at
    /// `corrupt_offset` of its payload (clamped to the last byte).
    pub corrupt_after: Option<u64>,
    /// Payload offset for `corrupt_after` (default 64: the first body byte
    /// after the SMB2 header, i.e. the low byte of StructureSize).
    pub corrupt_offset: usize,
    /// From the Nth server frame on, XOR 0xFF into the first signature byte
    /// of every SMB2 header (every message of a compound), and into the
    /// first signature byte of a transform header.
    pub forge_signature_after: Option<u64>,
}

impl Default for Faults {
    fn default() -> Self {
        Faults {
            drop_after: None,
            stall_after: None,
            corrupt_after: None,
            corrupt_offset: SMB2_HEADER_LEN,
            forge_signature_after: None,
        }
    }
}

/// What the faults did (per connection).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct FaultStats {
    /// The connection was dropped by `drop_after`.
    pub dropped: bool,
    /// Forwarding stopped by `stall_after`.
    pub stalled: bool,
    /// Bytes flipped by `corrupt_after` (0 or 1).
    pub corrupted: u64,
    /// Signature bytes flipped by `forge_signature_after`.
    pub forged: u64,
}

/// A cut the caller must make in the client → server stream.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Cut {
    /// Close both sides (`drop_after`).
    Drop,
    /// Stop forwarding, keep sockets open (`stall_after`).
    Stall,
}

/// Result of [`StreamParser::feed`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Fed {
    /// Frames (of any kind) completed by this chunk.
    pub frames_done: u32,
    /// Set when a drop/stall fault fires: forward only `data[..offset]`,
    /// then act. The parser ignores everything after a cut.
    pub cut: Option<(usize, Cut)>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum State {
    Header,
    Body,
    Resync,
    Cut,
}

/// One direction's framing state machine (see the module docs).
#[derive(Debug)]
pub struct StreamParser {
    dir: Direction,
    faults: Faults,
    state: State,
    hdr: [u8; 4],
    hdr_len: usize,
    frame_type: u8,
    frame_len: usize,
    frame: Vec<u8>,
    /// Session-message frames started so far in this direction.
    started: u64,
    window: VecDeque<u8>,
    refeeding: bool,
    segment_on_echo: bool,
    segment: Arc<AtomicUsize>,
    /// Totals for this direction.
    pub counts: DirCounts,
    /// Counts per segment (only with segment-on-echo).
    pub segments: Vec<DirCounts>,
    /// What faults did in this direction.
    pub fault_stats: FaultStats,
}

/// Bytes of a resync pattern: NetBIOS type 0, 3 length bytes, protocol id.
const RESYNC_LEN: usize = 8;

fn is_smb_protocol(p: &[u8]) -> bool {
    p.len() >= 4
        && [PROTO_SMB2, PROTO_TRANSFORM, PROTO_COMPRESSED, PROTO_SMB1]
            .iter()
            .any(|x| p[..4] == x[..])
}

fn le_u16(b: &[u8], off: usize) -> Option<u16> {
    Some(u16::from_le_bytes(b.get(off..off + 2)?.try_into().ok()?))
}

fn le_u32(b: &[u8], off: usize) -> Option<u32> {
    Some(u32::from_le_bytes(b.get(off..off + 4)?.try_into().ok()?))
}

impl StreamParser {
    /// A parser for `dir` applying `faults` (only the faults of its
    /// direction are used: drop/stall on client → server, corrupt/forge on
    /// server → client).
    pub fn new(dir: Direction, faults: Faults) -> Self {
        Self::with_segments(dir, faults, None)
    }

    /// Like [`StreamParser::new`]; with `Some(shared)`, counts are also
    /// kept per segment, and a client frame whose first command is ECHO
    /// starts a new segment (the index lives in `shared`, which both
    /// directions of a connection must share).
    pub fn with_segments(dir: Direction, faults: Faults, shared: Option<Arc<AtomicUsize>>) -> Self {
        StreamParser {
            dir,
            faults,
            state: State::Header,
            hdr: [0; 4],
            hdr_len: 0,
            frame_type: 0,
            frame_len: 0,
            frame: Vec::new(),
            started: 0,
            window: VecDeque::new(),
            refeeding: false,
            segment_on_echo: shared.is_some(),
            segment: shared.unwrap_or_default(),
            counts: DirCounts::default(),
            segments: Vec::new(),
            fault_stats: FaultStats::default(),
        }
    }

    /// Direction this parser watches.
    pub fn direction(&self) -> Direction {
        self.dir
    }

    /// Feed the next chunk of the stream. Bytes may be changed in place
    /// (corrupt/forge faults); forward `data[..cut]` when `cut` is set, all
    /// of `data` otherwise.
    pub fn feed(&mut self, data: &mut [u8]) -> Fed {
        let mut fed = Fed::default();
        if self.state == State::Cut {
            self.counts.bytes += data.len() as u64;
            return fed;
        }
        let mut i = 0;
        while i < data.len() {
            match self.state {
                State::Cut => break,
                State::Header => {
                    if self.hdr_len == 0 && data[i] == 0 {
                        if let Some(c) = self.cut_due() {
                            self.state = State::Cut;
                            fed.cut = Some((i, c));
                            break;
                        }
                    }
                    self.hdr[self.hdr_len] = data[i];
                    self.hdr_len += 1;
                    i += 1;
                    if self.hdr_len == 4 {
                        self.start_frame(&mut fed);
                    }
                }
                State::Body => {
                    let before = self.frame.len();
                    let mut take = (data.len() - i).min(self.frame_len - before);
                    if self.frame_type == 0 && before < 4 {
                        // Look at the protocol id before swallowing more.
                        take = take.min(4 - before);
                    }
                    self.frame.extend_from_slice(&data[i..i + take]);
                    if !self.refeeding {
                        self.apply_faults(before, &mut data[i..i + take]);
                    }
                    i += take;
                    let have = self.frame.len();
                    if self.frame_type == 0
                        && before < 4
                        && have >= 4
                        && !is_smb_protocol(&self.frame)
                    {
                        self.enter_resync();
                        continue;
                    }
                    if have == self.frame_len {
                        self.finish_frame();
                        fed.frames_done += 1;
                    }
                }
                State::Resync => {
                    self.window.push_back(data[i]);
                    i += 1;
                    self.drain_window();
                    if self.window.len() < RESYNC_LEN {
                        continue;
                    }
                    let w = &self.window;
                    let found = w[0] == 0 && is_smb_protocol(&[w[4], w[5], w[6], w[7]]);
                    if !found {
                        self.window.pop_front();
                        self.counts.unparsed_bytes += 1;
                        self.drain_window();
                        continue;
                    }
                    let mut copy: Vec<u8> = self.window.drain(..).collect();
                    self.state = State::Header;
                    self.hdr_len = 0;
                    // Re-feed the window: its bytes were already forwarded
                    // (or are in this chunk before `i`), so faults skip them.
                    self.refeeding = true;
                    let inner = self.feed(&mut copy);
                    self.refeeding = false;
                    fed.frames_done += inner.frames_done;
                    if let Some((_, c)) = inner.cut {
                        // The frame began in bytes already forwarded: cut at
                        // the earliest point still ours.
                        fed.cut = Some((i, c));
                        break;
                    }
                }
            }
        }
        if !self.refeeding {
            self.counts.bytes += data.len() as u64;
        }
        fed
    }

    /// The stream ended: count a partial frame or window as truncated.
    pub fn finish(&mut self) {
        match self.state {
            State::Header if self.hdr_len > 0 => {
                self.counts.truncated_frames += 1;
                self.counts.unparsed_bytes += self.hdr_len as u64;
            }
            State::Body => {
                self.counts.truncated_frames += 1;
                self.counts.unparsed_bytes += 4 + self.frame.len() as u64;
            }
            State::Resync => self.counts.unparsed_bytes += self.window.len() as u64,
            _ => {}
        }
        self.hdr_len = 0;
        self.frame.clear();
        self.window.clear();
        if self.state != State::Cut {
            self.state = State::Header;
        }
    }

    fn cut_due(&mut self) -> Option<Cut> {
        if self.dir != Direction::ClientToServer {
            return None;
        }
        if self.faults.drop_after == Some(self.started) {
            self.fault_stats.dropped = true;
            return Some(Cut::Drop);
        }
        if self.faults.stall_after == Some(self.started) {
            self.fault_stats.stalled = true;
            return Some(Cut::Stall);
        }
        None
    }

    fn start_frame(&mut self, fed: &mut Fed) {
        let ty = self.hdr[0];
        if !matches!(ty, 0x00 | 0x81..=0x85) {
            self.enter_resync();
            return;
        }
        self.frame_type = ty;
        self.frame_len = u32::from_be_bytes([0, self.hdr[1], self.hdr[2], self.hdr[3]]) as usize;
        self.frame.clear();
        if ty == 0 {
            self.started += 1;
        }
        self.state = State::Body;
        if self.frame_len == 0 {
            self.finish_frame();
            fed.frames_done += 1;
        }
    }

    /// Not SMB framing: move what was taken as a frame into the resync
    /// window, dropping its first byte (a frame cannot start there).
    fn enter_resync(&mut self) {
        self.counts.unparsed_frames += 1;
        if self.frame_type == 0 && self.state == State::Body {
            // That "frame" was garbage: it does not count as started.
            self.started = self.started.saturating_sub(1);
        }
        self.window.clear();
        self.window
            .extend(self.hdr[1..self.hdr_len].iter().copied());
        if self.state == State::Body {
            self.window.extend(self.frame.iter().copied());
        }
        self.counts.unparsed_bytes += 1;
        self.frame.clear();
        self.hdr_len = 0;
        self.state = State::Resync;
        self.drain_window();
    }

    /// Drop leading window bytes that cannot start a frame (non-zero).
    fn drain_window(&mut self) {
        while self.window.front().is_some_and(|&b| b != 0) {
            self.window.pop_front();
            self.counts.unparsed_bytes += 1;
        }
    }

    fn apply_faults(&mut self, before: usize, slice: &mut [u8]) {
        if self.dir != Direction::ServerToClient || self.frame_type != 0 {
            return;
        }
        let after = before + slice.len();
        let n = self.started;
        let mut targets: Vec<(usize, bool)> = Vec::new();
        if self.faults.corrupt_after == Some(n) && self.frame_len > 0 {
            targets.push((self.faults.corrupt_offset.min(self.frame_len - 1), false));
        }
        if self.faults.forge_signature_after.is_some_and(|k| n >= k) {
            let f = &self.frame;
            if f.get(..4) == Some(&PROTO_TRANSFORM[..]) {
                // Transform header: signature at 4..20.
                targets.push((4, true));
            }
            let mut off = 0usize;
            while f.get(off..off + 4) == Some(&PROTO_SMB2[..]) {
                targets.push((off + SMB2_SIGNATURE_OFFSET, true));
                match le_u32(f, off + 20) {
                    Some(0) | None => break,
                    Some(next) if (next as usize) < SMB2_HEADER_LEN => break,
                    Some(next) => off += next as usize,
                }
            }
        }
        for (t, forge) in targets {
            if t >= before && t < after && t < self.frame_len {
                slice[t - before] ^= 0xff;
                self.frame[t] ^= 0xff;
                if forge {
                    self.fault_stats.forged += 1;
                } else {
                    self.fault_stats.corrupted += 1;
                }
            }
        }
    }

    fn finish_frame(&mut self) {
        self.state = State::Header;
        self.hdr_len = 0;
        let frame = std::mem::take(&mut self.frame);
        let mut c = DirCounts::default();
        if self.frame_type != 0 {
            c.netbios_other += 1;
        } else {
            c.frames += 1;
            let proto = frame.get(..4);
            if proto == Some(&PROTO_SMB2[..]) {
                c.smb2_frames += 1;
                self.count_smb2(&frame, &mut c);
            } else if proto == Some(&PROTO_SMB1[..]) {
                c.smb1_frames += 1;
            } else if proto == Some(&PROTO_TRANSFORM[..]) {
                c.encrypted_frames += 1;
            } else if proto == Some(&PROTO_COMPRESSED[..]) {
                c.compressed_frames += 1;
            } else {
                c.unparsed_frames += 1;
            }
        }
        self.counts.add(&c);
        if self.segment_on_echo {
            let idx = self.segment.load(Ordering::SeqCst);
            if self.segments.len() <= idx {
                self.segments.resize(idx + 1, DirCounts::default());
            }
            self.segments[idx].add(&c);
        }
        self.frame = frame;
        self.frame.clear();
    }

    fn count_smb2(&mut self, f: &[u8], c: &mut DirCounts) {
        let mut off = 0usize;
        let mut msgs = 0u64;
        loop {
            if off + SMB2_HEADER_LEN > f.len() || f[off..off + 4] != PROTO_SMB2 {
                c.bad_chains += 1;
                break;
            }
            let cmd = le_u16(f, off + 12).unwrap_or(0);
            let flags = le_u32(f, off + 16).unwrap_or(0);
            if msgs == 0
                && cmd == SMB2_ECHO
                && self.segment_on_echo
                && self.dir == Direction::ClientToServer
            {
                self.segment.fetch_add(1, Ordering::SeqCst);
            }
            msgs += 1;
            let name = command_name(cmd);
            if flags & SMB2_FLAGS_SIGNED != 0 {
                c.signed_messages += 1;
            }
            if self.dir == Direction::ServerToClient {
                let st = status_key(le_u32(f, off + 8).unwrap_or(0));
                *c.statuses.entry(st.clone()).or_default() += 1;
                *c.command_statuses
                    .entry(name.clone())
                    .or_default()
                    .entry(st)
                    .or_default() += 1;
            }
            *c.commands.entry(name).or_default() += 1;
            let next = le_u32(f, off + 20).unwrap_or(0) as usize;
            if next == 0 {
                break;
            }
            if next < SMB2_HEADER_LEN || off + next >= f.len() {
                c.bad_chains += 1;
                break;
            }
            off += next;
        }
        c.messages += msgs;
        if msgs > 1 {
            c.compound_frames += 1;
        }
    }
}
