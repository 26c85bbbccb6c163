//! Counting: SMB2 command and NT status names, and [`DirCounts`], the
//! per-direction counters the parser fills and the stats file carries.

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

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
