//! The latency relay: a TCP forwarder that adds a fixed one-way delay in each
//! direction, watches the NetBIOS/SMB2 framing on the way through, counts
//! frames, SMB2 commands and NT statuses per direction (compounds included),
//! and can inject faults (drop, stall, corrupt a byte, forge a signature).
//!
//! It is the observer that does not trust the client's own counters: the
//! `latency-relay` binary wraps [`run_connection`], started by QEMU as
//! `guestfwd=…-cmd:latency-relay …` (one process per guest connection, the
//! connection on stdin/stdout) or listening on a loopback port for host tests.
//!
//! Layers, bottom up:
//! - [`StreamParser`]: a byte-stream state machine for one direction. It is
//!   fed the chunks as they pass, never holds bytes back (so it adds no
//!   latency), keeps a copy of the current frame to walk compound chains,
//!   flips bytes in place for the corrupt/forge faults, and tells the caller
//!   where to cut the stream for drop/stall. Garbage (anything that is not a
//!   NetBIOS session frame carrying SMB) is counted as unparsed and skipped
//!   until a plausible frame header is found again.
//! - The delay line: a reader thread stamps each chunk with `read time +
//!   delay` and a writer thread writes it at that absolute instant, so
//!   chunks keep their spacing and delays never accumulate.
//! - Stats: one JSON file per connection ([`ConnStats`]), rewritten
//!   atomically (temp file + rename) after every complete frame and on
//!   close; [`load_stats_dir`] and [`Totals`] sum a directory of them.
//!
//! Stats file `<stats-dir>/conn-<start ms>-<pid>-<seq>.json` (schema
//! `latency-relay/1`): `id`, `pid`, `ordinal`, `target`, `delay_ms`,
//! `started_unix_ms`, `updated_unix_ms`, `updates`, `closed`,
//! `close_reason`, `round_trips` (client SMB frames; a compound is one),
//! `client_to_server` and `server_to_client` ([`DirCounts`]: `bytes`,
//! `frames`, `smb2_frames`, `compound_frames`, `messages`, `smb1_frames`,
//! `encrypted_frames`, `compressed_frames`, `netbios_other`,
//! `unparsed_frames`, `unparsed_bytes`, `bad_chains`, `truncated_frames`,
//! `signed_messages`, `commands` {name → n}, and on the server side
//! `statuses` {"0xc0000052" → n} and `command_statuses` {name → {status →
//! n}}), `faults` (in force), `fault_stats` (`dropped`, `stalled`,
//! `corrupted`, `forged`), `segments` (segment-on-echo only: per segment
//! `round_trips` and both directions' counts).
//!
//! Timing of the numbers: by default a background thread rewrites the file
//! whenever it changed, so forwarding never waits for the disk and the file
//! lags by one write at most; the file written at close is exact.
//! `--sync-stats` writes before each frame is forwarded (a client that holds
//! a reply finds it counted). To split one connection into phases (mount,
//! cold listing, warm listing) exactly, have the client send an SMB2 ECHO
//! at each phase start and run with `--segment-on-echo`: each ECHO opens a
//! segment and is counted in it (one round trip to subtract).
//!
//! It touches only loopback sockets (both ends are checked to be loopback),
//! the stats directory, and for the stdio mode the process's stdin/stdout.

use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, VecDeque};
use std::io::{self, Read, Write};
use std::net::{Shutdown, SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicUsize, Ordering};
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

/// `schema` field of every stats file.
pub const SCHEMA: &str = "latency-relay/1";

/// SMB2 header length.
pub const SMB2_HEADER_LEN: usize = 64;
/// Offset of the 16-byte signature inside an SMB2 header.
pub const SMB2_SIGNATURE_OFFSET: usize = 48;
/// SMB2 command code of ECHO (segment marker, see [`RelayConfig::segment_on_echo`]).
pub const SMB2_ECHO: u16 = 0x000d;
/// `Flags` bit: the message is signed.
pub const SMB2_FLAGS_SIGNED: u32 = 0x0000_0008;

const PROTO_SMB2: [u8; 4] = [0xfe, b'S', b'M', b'B'];
const PROTO_TRANSFORM: [u8; 4] = [0xfd, b'S', b'M', b'B'];
const PROTO_COMPRESSED: [u8; 4] = [0xfc, b'S', b'M', b'B'];
const PROTO_SMB1: [u8; 4] = [0xff, b'S', b'M', b'B'];

/// Name of an SMB2 command code (`"QUERY_INFO"`), or `"0x0013"` when unknown.
pub fn command_name(code: u16) -> String {
    const NAMES: [&str; 19] = [
        "NEGOTIATE",
        "SESSION_SETUP",
        "LOGOFF",
        "TREE_CONNECT",
        "TREE_DISCONNECT",
        "CREATE",
        "CLOSE",
        "FLUSH",
        "READ",
        "WRITE",
        "LOCK",
        "IOCTL",
        "CANCEL",
        "ECHO",
        "QUERY_DIRECTORY",
        "CHANGE_NOTIFY",
        "QUERY_INFO",
        "SET_INFO",
        "OPLOCK_BREAK",
    ];
    match NAMES.get(code as usize) {
        Some(n) => (*n).to_string(),
        None => format!("0x{code:04x}"),
    }
}

/// Key under which a status is counted: lower-case hex, `"0xc0000052"`.
pub fn status_key(status: u32) -> String {
    format!("0x{status:08x}")
}

/// Symbolic name of the NT statuses an SMB2 client commonly meets.
pub fn status_name(status: u32) -> Option<&'static str> {
    Some(match status {
        0x0000_0000 => "STATUS_SUCCESS",
        0x0000_0103 => "STATUS_PENDING",
        0x0000_010c => "STATUS_NOTIFY_ENUM_DIR",
        0x8000_0005 => "STATUS_BUFFER_OVERFLOW",
        0x8000_0006 => "STATUS_NO_MORE_FILES",
        0xc000_0003 => "STATUS_INVALID_INFO_CLASS",
        0xc000_000d => "STATUS_INVALID_PARAMETER",
        0xc000_000f => "STATUS_NO_SUCH_FILE",
        0xc000_0010 => "STATUS_INVALID_DEVICE_REQUEST",
        0xc000_0016 => "STATUS_MORE_PROCESSING_REQUIRED",
        0xc000_0022 => "STATUS_ACCESS_DENIED",
        0xc000_0023 => "STATUS_BUFFER_TOO_SMALL",
        0xc000_0033 => "STATUS_OBJECT_NAME_INVALID",
        0xc000_0034 => "STATUS_OBJECT_NAME_NOT_FOUND",
        0xc000_0035 => "STATUS_OBJECT_NAME_COLLISION",
        0xc000_003a => "STATUS_OBJECT_PATH_NOT_FOUND",
        0xc000_0043 => "STATUS_SHARING_VIOLATION",
        0xc000_0052 => "STATUS_NO_EAS_ON_FILE",
        0xc000_006d => "STATUS_LOGON_FAILURE",
        0xc000_00bb => "STATUS_NOT_SUPPORTED",
        0xc000_00cc => "STATUS_BAD_NETWORK_NAME",
        0xc000_0120 => "STATUS_CANCELLED",
        0xc000_0128 => "STATUS_FILE_CLOSED",
        0xc000_0203 => "STATUS_USER_SESSION_DELETED",
        0xc000_0225 => "STATUS_NOT_FOUND",
        0xc000_035c => "STATUS_NETWORK_SESSION_EXPIRED",
        0xc000_a000 => "STATUS_INVALID_SIGNATURE",
        _ => return None,
    })
}

/// Direction of a byte stream through the relay.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Direction {
    /// Client (guest) → server (Samba): requests.
    ClientToServer,
    /// Server → client: responses.
    ServerToClient,
}

/// Counters for one direction (one connection, one segment, or a sum).
///
/// A *frame* is one NetBIOS session message (4-byte header + payload); an
/// SMB2 compound is one frame holding several *messages* (SMB2 headers
/// chained by `NextCommand`). Client → server SMB frames are round trips.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct DirCounts {
    /// Bytes seen (forwarded or, after a fault, swallowed).
    pub bytes: u64,
    /// NetBIOS session messages (type 0x00) that completed.
    pub frames: u64,
    /// Frames carrying SMB2 (`0xFE 'SMB'`).
    pub smb2_frames: u64,
    /// SMB2 frames with more than one message (compounds).
    pub compound_frames: u64,
    /// SMB2 messages (each header of each compound counts).
    pub messages: u64,
    /// Frames carrying SMB1 (`0xFF 'SMB'`).
    pub smb1_frames: u64,
    /// Frames carrying an SMB3 transform header (`0xFD 'SMB'`, encrypted).
    pub encrypted_frames: u64,
    /// Frames carrying an SMB3 compression header (`0xFC 'SMB'`).
    pub compressed_frames: u64,
    /// Other NetBIOS session-service packets (keepalive 0x85, 0x81–0x84).
    pub netbios_other: u64,
    /// Times the stream was not SMB framing (garbage) and parsing had to
    /// resynchronise, plus frames too short to hold a protocol id.
    pub unparsed_frames: u64,
    /// Bytes skipped while resynchronising.
    pub unparsed_bytes: u64,
    /// Compound chains with a bad `NextCommand` (walk stopped there), or an
    /// SMB2 frame shorter than a header.
    pub bad_chains: u64,
    /// Frame cut short by the end of the stream.
    pub truncated_frames: u64,
    /// SMB2 messages by command name (`"QUERY_INFO"`).
    pub commands: BTreeMap<String, u64>,
    /// Server → client only: messages by NT status (`"0xc0000052"`).
    pub statuses: BTreeMap<String, u64>,
    /// Server → client only: command name → status → messages.
    pub command_statuses: BTreeMap<String, BTreeMap<String, u64>>,
    /// Messages with the SIGNED flag set.
    pub signed_messages: u64,
}

fn add_map(a: &mut BTreeMap<String, u64>, b: &BTreeMap<String, u64>) {
    for (k, v) in b {
        *a.entry(k.clone()).or_default() += v;
    }
}

fn sub_map(a: &mut BTreeMap<String, u64>, b: &BTreeMap<String, u64>) {
    for (k, v) in b {
        let e = a.entry(k.clone()).or_default();
        *e = e.saturating_sub(*v);
    }
    a.retain(|_, v| *v != 0);
}

impl DirCounts {
    /// Count of one command (0 when absent).
    pub fn command(&self, name: &str) -> u64 {
        self.commands.get(name).copied().unwrap_or(0)
    }

    /// Count of one status (0 when absent).
    pub fn status(&self, status: u32) -> u64 {
        self.statuses.get(&status_key(status)).copied().unwrap_or(0)
    }

    /// Add `o` into `self`.
    pub fn add(&mut self, o: &DirCounts) {
        self.bytes += o.bytes;
        self.frames += o.frames;
        self.smb2_frames += o.smb2_frames;
        self.compound_frames += o.compound_frames;
        self.messages += o.messages;
        self.smb1_frames += o.smb1_frames;
        self.encrypted_frames += o.encrypted_frames;
        self.compressed_frames += o.compressed_frames;
        self.netbios_other += o.netbios_other;
        self.unparsed_frames += o.unparsed_frames;
        self.unparsed_bytes += o.unparsed_bytes;
        self.bad_chains += o.bad_chains;
        self.truncated_frames += o.truncated_frames;
        self.signed_messages += o.signed_messages;
        add_map(&mut self.commands, &o.commands);
        add_map(&mut self.statuses, &o.statuses);
        for (k, m) in &o.command_statuses {
            add_map(self.command_statuses.entry(k.clone()).or_default(), m);
        }
    }

    /// `self - earlier` (saturating): what happened between two snapshots.
    pub fn since(&self, earlier: &DirCounts) -> DirCounts {
        let mut d = self.clone();
        let e = earlier;
        d.bytes = d.bytes.saturating_sub(e.bytes);
        d.frames = d.frames.saturating_sub(e.frames);
        d.smb2_frames = d.smb2_frames.saturating_sub(e.smb2_frames);
        d.compound_frames = d.compound_frames.saturating_sub(e.compound_frames);
        d.messages = d.messages.saturating_sub(e.messages);
        d.smb1_frames = d.smb1_frames.saturating_sub(e.smb1_frames);
        d.encrypted_frames = d.encrypted_frames.saturating_sub(e.encrypted_frames);
        d.compressed_frames = d.compressed_frames.saturating_sub(e.compressed_frames);
        d.netbios_other = d.netbios_other.saturating_sub(e.netbios_other);
        d.unparsed_frames = d.unparsed_frames.saturating_sub(e.unparsed_frames);
        d.unparsed_bytes = d.unparsed_bytes.saturating_sub(e.unparsed_bytes);
        d.bad_chains = d.bad_chains.saturating_sub(e.bad_chains);
        d.truncated_frames = d.truncated_frames.saturating_sub(e.truncated_frames);
        d.signed_messages = d.signed_messages.saturating_sub(e.signed_messages);
        sub_map(&mut d.commands, &e.commands);
        sub_map(&mut d.statuses, &e.statuses);
        for (k, m) in &e.command_statuses {
            if let Some(dm) = d.command_statuses.get_mut(k) {
                sub_map(dm, m);
            }
        }
        d.command_statuses.retain(|_, m| !m.is_empty());
        d
    }

    /// Request frames that cost a round trip: every client → server frame
    /// that carries SMB (SMB2, SMB1, encrypted or compressed).
    pub fn round_trips(&self) -> u64 {
        self.smb2_frames + self.smb1_frames + self.encrypted_frames + self.compressed_frames
    }
}

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

/// Counts of one segment of a connection (segment-on-echo mode).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct SegmentStats {
    /// Client → server SMB frames.
    pub round_trips: u64,
    /// Requests.
    pub client_to_server: DirCounts,
    /// Responses.
    pub server_to_client: DirCounts,
}

/// The stats file of one connection (`<stats-dir>/conn-*.json`).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct ConnStats {
    /// Always [`SCHEMA`].
    pub schema: String,
    /// Unique id: `<start unix ms>-<pid>-<seq>` (also the file name stem).
    pub id: String,
    /// Relay process id.
    pub pid: u32,
    /// Connections seen before this one (stats files already in the stats
    /// dir, else this process's earlier connections), from 0.
    pub ordinal: u64,
    /// Server address.
    pub target: String,
    /// One-way delay per direction, milliseconds.
    pub delay_ms: f64,
    /// Connection start, ms since the Unix epoch.
    pub started_unix_ms: u64,
    /// Last rewrite, ms since the Unix epoch.
    pub updated_unix_ms: u64,
    /// Number of rewrites of this file so far.
    pub updates: u64,
    /// The connection is over (final numbers).
    pub closed: bool,
    /// Why it ended (`"client closed"`, `"server closed"`, `"dropped"`, …).
    pub close_reason: String,
    /// Client → server SMB frames (a compound counts once).
    pub round_trips: u64,
    /// Requests.
    pub client_to_server: DirCounts,
    /// Responses.
    pub server_to_client: DirCounts,
    /// Faults in force on this connection (none when `fault_conns` has
    /// been used up).
    pub faults: Faults,
    /// Faults applied.
    pub fault_stats: FaultStats,
    /// Per-segment counts (segment-on-echo mode only; empty otherwise).
    pub segments: Vec<SegmentStats>,
}

/// Sums over many connections (see [`load_stats_dir`]).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Totals {
    /// Connections summed.
    pub connections: u64,
    /// Of which still open.
    pub open: u64,
    /// Client → server SMB frames.
    pub round_trips: u64,
    /// Requests.
    pub client_to_server: DirCounts,
    /// Responses.
    pub server_to_client: DirCounts,
    /// Faults applied (dropped/stalled: any connection).
    pub fault_stats: FaultStats,
}

impl Totals {
    /// Sum of `conns`.
    pub fn sum(conns: &[ConnStats]) -> Totals {
        let mut t = Totals::default();
        for c in conns {
            t.connections += 1;
            t.open += u64::from(!c.closed);
            t.round_trips += c.round_trips;
            t.client_to_server.add(&c.client_to_server);
            t.server_to_client.add(&c.server_to_client);
            t.fault_stats.dropped |= c.fault_stats.dropped;
            t.fault_stats.stalled |= c.fault_stats.stalled;
            t.fault_stats.corrupted += c.fault_stats.corrupted;
            t.fault_stats.forged += c.fault_stats.forged;
        }
        t
    }

    /// `self - earlier`: the traffic between two snapshots of a directory.
    pub fn since(&self, earlier: &Totals) -> Totals {
        Totals {
            connections: self.connections.saturating_sub(earlier.connections),
            open: self.open,
            round_trips: self.round_trips.saturating_sub(earlier.round_trips),
            client_to_server: self.client_to_server.since(&earlier.client_to_server),
            server_to_client: self.server_to_client.since(&earlier.server_to_client),
            fault_stats: FaultStats {
                dropped: self.fault_stats.dropped,
                stalled: self.fault_stats.stalled,
                corrupted: self
                    .fault_stats
                    .corrupted
                    .saturating_sub(earlier.fault_stats.corrupted),
                forged: self
                    .fault_stats
                    .forged
                    .saturating_sub(earlier.fault_stats.forged),
            },
        }
    }
}

/// Read every `conn-*.json` in `dir`, sorted by id (start time first).
/// Files that do not parse are an error naming the file.
pub fn load_stats_dir(dir: &Path) -> io::Result<Vec<ConnStats>> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir)? {
        let p = e?.path();
        let name = p.file_name().and_then(|n| n.to_str()).unwrap_or("");
        if !(name.starts_with("conn-") && name.ends_with(".json")) {
            continue;
        }
        let text = std::fs::read_to_string(&p)?;
        let c: ConnStats = serde_json::from_str(&text).map_err(|e| {
            io::Error::new(io::ErrorKind::InvalidData, format!("{}: {e}", p.display()))
        })?;
        out.push(c);
    }
    out.sort_by(|a, b| {
        (a.started_unix_ms, &a.id)
            .partial_cmp(&(b.started_unix_ms, &b.id))
            .unwrap_or(std::cmp::Ordering::Equal)
    });
    Ok(out)
}

/// How one connection is relayed.
#[derive(Clone, Debug)]
pub struct RelayConfig {
    /// Server address (must be loopback).
    pub target: SocketAddr,
    /// One-way delay added in each direction.
    pub delay: Duration,
    /// Directory for one stats file per connection (created if missing).
    pub stats_dir: Option<PathBuf>,
    /// Keep per-segment counts; a client frame starting with ECHO begins a
    /// new segment (so a harness can mark phases in-band).
    pub segment_on_echo: bool,
    /// Faults to inject.
    pub faults: Faults,
    /// Apply the faults only to the first K connections (counted through
    /// the stats dir, so across guestfwd processes; per process without
    /// one). `None`: every connection. Lets a client reconnect cleanly.
    pub fault_conns: Option<u64>,
    /// Rewrite the stats file inline after every frame, before forwarding
    /// it (a client holding a reply then always finds it counted), instead
    /// of in a background writer that coalesces updates (the default, so
    /// forwarding never waits for the disk). Use with a tmpfs stats dir.
    pub sync_stats: bool,
    /// Timeout for connecting to the target.
    pub connect_timeout: Duration,
}

impl RelayConfig {
    /// A plain relay to `target` with no delay, stats or faults.
    pub fn new(target: SocketAddr) -> Self {
        RelayConfig {
            target,
            delay: Duration::ZERO,
            stats_dir: None,
            segment_on_echo: false,
            faults: Faults::default(),
            fault_conns: None,
            sync_stats: false,
            connect_timeout: Duration::from_secs(5),
        }
    }

    /// The `latency-relay` flags that reproduce this config (stdio mode),
    /// e.g. for QEMU's `guestfwd=…-cmd:latency-relay ARGS`.
    pub fn to_args(&self) -> Vec<String> {
        let mut a = vec!["--target".to_string(), self.target.to_string()];
        if !self.delay.is_zero() {
            a.push("--delay-ms".into());
            a.push(format!("{}", self.delay.as_secs_f64() * 1000.0));
        }
        if let Some(d) = &self.stats_dir {
            a.push("--stats-dir".into());
            a.push(d.display().to_string());
        }
        if self.segment_on_echo {
            a.push("--segment-on-echo".into());
        }
        if self.sync_stats {
            a.push("--sync-stats".into());
        }
        let f = &self.faults;
        for (flag, v) in [
            ("--drop-after", f.drop_after),
            ("--stall-after", f.stall_after),
            ("--corrupt-after", f.corrupt_after),
            ("--forge-signature-after", f.forge_signature_after),
        ] {
            if let Some(n) = v {
                a.push(flag.into());
                a.push(n.to_string());
            }
        }
        if let Some(k) = self.fault_conns {
            a.push("--fault-conns".into());
            a.push(k.to_string());
        }
        if f.corrupt_offset != SMB2_HEADER_LEN {
            a.push("--corrupt-offset".into());
            a.push(f.corrupt_offset.to_string());
        }
        a
    }
}

/// The client end of a relayed connection.
pub enum ClientConn {
    /// A TCP connection accepted by the `--listen` mode.
    Tcp(TcpStream),
    /// Raw reader/writer (QEMU guestfwd: stdin/stdout). Closing it is up to
    /// the caller (the process exits).
    Pipe(Box<dyn Read + Send>, Box<dyn Write + Send>),
}

fn unix_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0)
}

/// Refuse anything but loopback: the relay must never reach elsewhere.
pub fn check_loopback(addr: &SocketAddr, what: &str) -> io::Result<()> {
    if addr.ip().is_loopback() {
        Ok(())
    } else {
        Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("{what} {addr} is not a loopback address; the relay only uses loopback"),
        ))
    }
}

/// The stats and the "needs writing" flag, under one lock.
struct StatsState {
    stats: ConnStats,
    dirty: bool,
    stop: bool,
}

struct Shared {
    state: Mutex<StatsState>,
    /// Wakes the stats writer thread.
    wake: std::sync::Condvar,
    /// Write inline (under the lock) instead of in the writer thread.
    sync_stats: bool,
    file: Option<PathBuf>,
    stalled: AtomicBool,
    dropped: AtomicBool,
    closing: AtomicBool,
    server: TcpStream,
    client: Option<TcpStream>,
}

impl Shared {
    /// Merge one direction's parser state into the stats and get the file
    /// rewritten: inline with `sync_stats`, else by the writer thread, which
    /// coalesces updates so forwarding never waits for the disk.
    fn publish(&self, p: &StreamParser, close: Option<&str>) {
        let mut st = lock(&self.state);
        let s = &mut st.stats;
        match p.direction() {
            Direction::ClientToServer => {
                s.client_to_server = p.counts.clone();
                s.round_trips = p.counts.round_trips();
                s.fault_stats.dropped |= p.fault_stats.dropped;
                s.fault_stats.stalled |= p.fault_stats.stalled;
            }
            Direction::ServerToClient => {
                s.server_to_client = p.counts.clone();
                s.fault_stats.corrupted = p.fault_stats.corrupted;
                s.fault_stats.forged = p.fault_stats.forged;
            }
        }
        if !p.segments.is_empty() {
            if s.segments.len() < p.segments.len() {
                s.segments.resize(p.segments.len(), SegmentStats::default());
            }
            for (i, seg) in p.segments.iter().enumerate() {
                match p.direction() {
                    Direction::ClientToServer => {
                        s.segments[i].client_to_server = seg.clone();
                        s.segments[i].round_trips = seg.round_trips();
                    }
                    Direction::ServerToClient => s.segments[i].server_to_client = seg.clone(),
                }
            }
        }
        if let Some(reason) = close {
            if s.close_reason.is_empty() {
                s.close_reason = reason.to_string();
            }
        }
        if self.sync_stats || self.file.is_none() {
            Self::write_locked(&mut st.stats, self.file.as_deref());
        } else {
            st.dirty = true;
            self.wake.notify_one();
        }
    }

    /// The stats writer thread: rewrite the file whenever it is dirty.
    fn writer_loop(&self) {
        let Some(file) = self.file.as_deref() else {
            return;
        };
        loop {
            let snapshot = {
                let mut st = lock(&self.state);
                while !st.dirty && !st.stop {
                    st = match self.wake.wait(st) {
                        Ok(g) => g,
                        Err(p) => p.into_inner(),
                    };
                }
                if !st.dirty {
                    return;
                }
                st.dirty = false;
                st.stats.updated_unix_ms = unix_ms();
                st.stats.updates += 1;
                st.stats.clone()
            };
            Self::write_file(&snapshot, file);
        }
    }

    /// Stop the writer thread (it writes a pending update first).
    fn stop_writer(&self, writer: Option<std::thread::JoinHandle<()>>) {
        lock(&self.state).stop = true;
        self.wake.notify_all();
        if let Some(w) = writer {
            let _ = w.join();
        }
    }

    fn write_locked(s: &mut ConnStats, file: Option<&Path>) {
        s.updated_unix_ms = unix_ms();
        s.updates += 1;
        if let Some(file) = file {
            Self::write_file(s, file);
        }
    }

    /// Atomic rewrite: temp file + rename, so readers never see half a file.
    fn write_file(s: &ConnStats, file: &Path) {
        let Ok(text) = serde_json::to_string_pretty(s) else {
            return;
        };
        let tmp = file.with_extension("json.tmp");
        if std::fs::write(&tmp, text).is_ok() {
            let _ = std::fs::rename(&tmp, file);
        }
    }

    fn close_all(&self) {
        self.closing.store(true, Ordering::SeqCst);
        let _ = self.server.shutdown(Shutdown::Both);
        if let Some(c) = &self.client {
            let _ = c.shutdown(Shutdown::Both);
        }
    }
}

enum Item {
    Data(Instant, Vec<u8>),
    Eof(Instant),
}

/// Where a direction's bytes go: a socket half or the client pipe.
enum Dest {
    Tcp(TcpStream),
    Pipe(Box<dyn Write + Send>),
}

impl Dest {
    fn write_chunk(&mut self, b: &[u8]) -> io::Result<()> {
        match self {
            Dest::Tcp(s) => s.write_all(b),
            Dest::Pipe(w) => {
                w.write_all(b)?;
                w.flush()
            }
        }
    }

    fn close_write(&mut self) {
        match self {
            Dest::Tcp(s) => {
                let _ = s.shutdown(Shutdown::Write);
            }
            Dest::Pipe(w) => {
                let _ = w.flush();
            }
        }
    }
}

/// Per-process connection counter (part of the stats id).
static CONN_SEQ: AtomicU32 = AtomicU32::new(0);

/// Relay one client connection to `cfg.target` until both directions end
/// (or a drop fault fires); returns the final stats (also written to the
/// stats dir). In `Pipe` mode the client → server reader may still be
/// blocked on its reader when this returns; the caller then exits.
pub fn run_connection(client: ClientConn, cfg: &RelayConfig) -> io::Result<ConnStats> {
    check_loopback(&cfg.target, "target")?;
    let started = unix_ms();
    let seq = CONN_SEQ.fetch_add(1, Ordering::Relaxed);
    let pid = std::process::id();
    let id = format!("{started}-{pid}-{seq}");
    // The connection's ordinal: earlier stats files in the dir (so it
    // spans guestfwd's one-process-per-connection), else this process's.
    let (file, ordinal) = match &cfg.stats_dir {
        Some(d) => {
            std::fs::create_dir_all(d)?;
            let earlier = std::fs::read_dir(d)?
                .filter_map(|e| e.ok())
                .filter(|e| {
                    let n = e.file_name();
                    let n = n.to_string_lossy();
                    n.starts_with("conn-") && n.ends_with(".json")
                })
                .count() as u64;
            (Some(d.join(format!("conn-{id}.json"))), earlier)
        }
        None => (None, u64::from(seq)),
    };
    let faulty = cfg.fault_conns.is_none_or(|k| ordinal < k);
    let faults = if faulty {
        cfg.faults.clone()
    } else {
        Faults::default()
    };
    let mut stats = ConnStats {
        schema: SCHEMA.into(),
        id,
        pid,
        target: cfg.target.to_string(),
        delay_ms: cfg.delay.as_secs_f64() * 1000.0,
        started_unix_ms: started,
        ordinal,
        faults: faults.clone(),
        ..ConnStats::default()
    };
    // Claim the ordinal at once (the file exists from here on).
    Shared::write_locked(&mut stats, file.as_deref());
    let server = match TcpStream::connect_timeout(&cfg.target, cfg.connect_timeout) {
        Ok(s) => s,
        Err(e) => {
            stats.closed = true;
            stats.close_reason = format!("connect to {} failed: {e}", cfg.target);
            Shared::write_locked(&mut stats, file.as_deref());
            return Err(io::Error::new(e.kind(), stats.close_reason));
        }
    };
    server.set_nodelay(true)?;
    let (client_reader, client_writer, client_sock): (Box<dyn Read + Send>, Dest, _) = match client
    {
        ClientConn::Tcp(s) => {
            s.set_nodelay(true)?;
            (Box::new(s.try_clone()?), Dest::Tcp(s.try_clone()?), Some(s))
        }
        ClientConn::Pipe(r, w) => (r, Dest::Pipe(w), None),
    };
    let shared = Arc::new(Shared {
        state: Mutex::new(StatsState {
            stats,
            dirty: false,
            stop: false,
        }),
        wake: std::sync::Condvar::new(),
        sync_stats: cfg.sync_stats,
        file,
        stalled: AtomicBool::new(false),
        dropped: AtomicBool::new(false),
        closing: AtomicBool::new(false),
        server: server.try_clone()?,
        client: client_sock,
    });
    let writer = match (&shared.file, cfg.sync_stats) {
        (Some(_), false) => {
            let sh = shared.clone();
            Some(
                std::thread::Builder::new()
                    .name("relay-stats".into())
                    .spawn(move || sh.writer_loop())?,
            )
        }
        _ => None,
    };
    let segment = cfg.segment_on_echo.then(|| Arc::new(AtomicUsize::new(0)));
    let c2s =
        StreamParser::with_segments(Direction::ClientToServer, faults.clone(), segment.clone());
    let s2c = StreamParser::with_segments(Direction::ServerToClient, faults, segment);

    let (done_tx, done_rx) = mpsc::channel::<Direction>();
    let up = spawn_direction(
        client_reader,
        Dest::Tcp(server.try_clone()?),
        c2s,
        cfg.delay,
        shared.clone(),
        done_tx.clone(),
    )?;
    let down = spawn_direction(
        Box::new(server),
        client_writer,
        s2c,
        cfg.delay,
        shared.clone(),
        done_tx,
    )?;
    // The connection ends when responses stop (server closed, error, drop)
    // or when a drop fault fires on the request side.
    let mut finished_up = false;
    while let Ok(d) = done_rx.recv() {
        match d {
            Direction::ServerToClient => break,
            Direction::ClientToServer => {
                finished_up = true;
                if shared.dropped.load(Ordering::SeqCst) || shared.stalled.load(Ordering::SeqCst) {
                    break;
                }
            }
        }
    }
    shared.close_all();
    let _ = down.join();
    if finished_up || shared.client.is_some() {
        let _ = up.join();
    }
    shared.stop_writer(writer);
    let mut st = lock(&shared.state);
    let s = &mut st.stats;
    s.closed = true;
    if s.close_reason.is_empty() {
        s.close_reason = "closed".into();
    }
    Shared::write_locked(s, shared.file.as_deref());
    Ok(s.clone())
}

/// Start one direction: a reader thread (parse, fault, stamp) and, when
/// there is a delay, a writer thread (the delay line).
fn spawn_direction(
    mut src: Box<dyn Read + Send>,
    dest: Dest,
    mut parser: StreamParser,
    delay: Duration,
    shared: Arc<Shared>,
    done: mpsc::Sender<Direction>,
) -> io::Result<std::thread::JoinHandle<()>> {
    let dir = parser.direction();
    let dest = Arc::new(Mutex::new(dest));
    let (tx, writer) = if delay.is_zero() {
        (None, None)
    } else {
        // Bounded: a stuck destination eventually stops the reader too.
        let (tx, rx) = mpsc::sync_channel::<Item>(4096);
        let dest = dest.clone();
        let shared = shared.clone();
        let h = std::thread::Builder::new()
            .name(format!("relay-delay-{dir:?}"))
            .spawn(move || delay_writer(rx, dest, shared))?;
        (Some(tx), Some(h))
    };
    std::thread::Builder::new()
        .name(format!("relay-read-{dir:?}"))
        .spawn(move || {
            let mut buf = vec![0u8; 64 * 1024];
            let reason = loop {
                let n = match src.read(&mut buf) {
                    Ok(0) => break "eof",
                    Ok(n) => n,
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                    Err(_) => break "read error",
                };
                let stamp = Instant::now() + delay;
                let chunk = &mut buf[..n];
                let fed = parser.feed(chunk);
                let stalled = shared.stalled.load(Ordering::SeqCst);
                let fwd = match fed.cut {
                    Some((k, _)) => k,
                    None => n,
                };
                let mut out_ok = true;
                if fed.frames_done > 0 || fed.cut.is_some() {
                    // Published before forwarding: with `sync_stats`, a
                    // client holding a reply also finds it in the file.
                    parser_publish(&shared, &parser, fed.cut);
                }
                if !stalled && fwd > 0 {
                    let data = chunk[..fwd].to_vec();
                    out_ok = match &tx {
                        Some(tx) => tx.send(Item::Data(stamp, data)).is_ok(),
                        None => lock(&dest).write_chunk(&data).is_ok(),
                    };
                }
                match fed.cut {
                    Some((_, Cut::Drop)) => {
                        shared.dropped.store(true, Ordering::SeqCst);
                        break "dropped";
                    }
                    Some((_, Cut::Stall)) => shared.stalled.store(true, Ordering::SeqCst),
                    None => {}
                }
                if !out_ok {
                    break "write error";
                }
            };
            parser.finish();
            let reason = match (dir, reason) {
                (_, "dropped") => "dropped by fault".to_string(),
                (Direction::ClientToServer, "eof") => "client closed".to_string(),
                (Direction::ServerToClient, "eof") => "server closed".to_string(),
                (d, r) => format!("{r} ({d:?})"),
            };
            let closing = shared.closing.load(Ordering::SeqCst);
            shared.publish(&parser, (!closing).then_some(reason.as_str()));
            match tx {
                Some(tx) => {
                    let _ = tx.send(Item::Eof(Instant::now() + delay));
                    drop(tx);
                    if let Some(w) = writer {
                        let _ = w.join();
                    }
                }
                None => lock(&dest).close_write(),
            }
            if dir == Direction::ClientToServer && shared.stalled.load(Ordering::SeqCst) {
                // Stalled and the client gave up: nothing more will flow.
                shared.close_all();
            }
            let _ = done.send(dir);
        })
}

fn parser_publish(shared: &Shared, parser: &StreamParser, cut: Option<(usize, Cut)>) {
    if let Some((_, c)) = cut {
        let reason = match c {
            Cut::Drop => "dropped by fault",
            Cut::Stall => "stalled by fault",
        };
        shared.publish(parser, Some(reason));
    } else {
        shared.publish(parser, None);
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    match m.lock() {
        Ok(g) => g,
        Err(p) => p.into_inner(),
    }
}

/// The delay line's writer: waits for each chunk's absolute deadline, so the
/// spacing of chunks is kept and the delay never accumulates.
fn delay_writer(rx: mpsc::Receiver<Item>, dest: Arc<Mutex<Dest>>, shared: Arc<Shared>) {
    while let Ok(item) = rx.recv() {
        let (when, data) = match item {
            Item::Data(w, d) => (w, Some(d)),
            Item::Eof(w) => (w, None),
        };
        let now = Instant::now();
        if when > now {
            std::thread::sleep(when - now);
        }
        match data {
            Some(d) => {
                if shared.stalled.load(Ordering::SeqCst) || shared.dropped.load(Ordering::SeqCst) {
                    continue;
                }
                if lock(&dest).write_chunk(&d).is_err() {
                    shared.close_all();
                    // Keep draining so the reader never blocks on us.
                    continue;
                }
            }
            None => {
                lock(&dest).close_write();
                return;
            }
        }
    }
}

#[cfg(test)]
mod tests;
