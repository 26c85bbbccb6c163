//! Byte layouts the hostile server writes and the few request fields it
//! reads (MS-SMB2 2.2.x, MS-FSCC 2.4), written out by hand so the fixture
//! shares no code with the client it attacks. Pure functions, no I/O.

/// SMB2 command codes.
pub mod cmd {
    pub const NEGOTIATE: u16 = 0;
    pub const SESSION_SETUP: u16 = 1;
    pub const LOGOFF: u16 = 2;
    pub const TREE_CONNECT: u16 = 3;
    pub const TREE_DISCONNECT: u16 = 4;
    pub const CREATE: u16 = 5;
    pub const CLOSE: u16 = 6;
    pub const READ: u16 = 8;
    pub const WRITE: u16 = 9;
    pub const IOCTL: u16 = 11;
    pub const ECHO: u16 = 13;
    pub const QUERY_DIRECTORY: u16 = 14;
    pub const QUERY_INFO: u16 = 16;
    pub const SET_INFO: u16 = 17;
}

/// NT statuses the server answers with.
pub mod status {
    pub const SUCCESS: u32 = 0;
    pub const PENDING: u32 = 0x0000_0103;
    pub const NO_MORE_FILES: u32 = 0x8000_0006;
    pub const END_OF_FILE: u32 = 0xc000_0011;
    pub const MORE_PROCESSING_REQUIRED: u32 = 0xc000_0016;
    pub const OBJECT_NAME_NOT_FOUND: u32 = 0xc000_0034;
    pub const OBJECT_NAME_COLLISION: u32 = 0xc000_0035;
    pub const NOT_SUPPORTED: u32 = 0xc000_00bb;
    pub const INVALID_PARAMETER: u32 = 0xc000_000d;
    pub const NO_EAS_ON_FILE: u32 = 0xc000_0052;
    pub const LOGON_FAILURE: u32 = 0xc000_006d;
}

pub const HEADER_LEN: usize = 64;
const FLAG_RESPONSE: u32 = 0x1;
const FLAG_ASYNC: u32 = 0x2;
const FLAG_RELATED: u32 = 0x4;

pub fn u16_at(b: &[u8], o: usize) -> u16 {
    b.get(o..o + 2)
        .map_or(0, |s| u16::from_le_bytes([s[0], s[1]]))
}
pub fn u32_at(b: &[u8], o: usize) -> u32 {
    b.get(o..o + 4)
        .map_or(0, |s| u32::from_le_bytes([s[0], s[1], s[2], s[3]]))
}
pub fn u64_at(b: &[u8], o: usize) -> u64 {
    b.get(o..o + 8).map_or(0, |s| {
        u64::from_le_bytes([s[0], s[1], s[2], s[3], s[4], s[5], s[6], s[7]])
    })
}

/// Appends little-endian fields.
pub trait Put {
    fn u8(&mut self, v: u8) -> &mut Self;
    fn u16(&mut self, v: u16) -> &mut Self;
    fn u32(&mut self, v: u32) -> &mut Self;
    fn u64(&mut self, v: u64) -> &mut Self;
    fn zeros(&mut self, n: usize) -> &mut Self;
}

impl Put for Vec<u8> {
    fn u8(&mut self, v: u8) -> &mut Self {
        self.push(v);
        self
    }
    fn u16(&mut self, v: u16) -> &mut Self {
        self.extend_from_slice(&v.to_le_bytes());
        self
    }
    fn u32(&mut self, v: u32) -> &mut Self {
        self.extend_from_slice(&v.to_le_bytes());
        self
    }
    fn u64(&mut self, v: u64) -> &mut Self {
        self.extend_from_slice(&v.to_le_bytes());
        self
    }
    fn zeros(&mut self, n: usize) -> &mut Self {
        self.resize(self.len() + n, 0);
        self
    }
}

/// The request header fields the server looks at.
#[derive(Clone, Copy, Debug, Default)]
pub struct ReqHdr {
    pub command: u16,
    pub credit_charge: u16,
    pub flags: u32,
    pub message_id: u64,
    pub tree_id: u32,
    pub session_id: u64,
}

impl ReqHdr {
    pub fn parse(m: &[u8]) -> Option<ReqHdr> {
        if m.len() < HEADER_LEN || m[..4] != *b"\xfeSMB" {
            return None;
        }
        Some(ReqHdr {
            credit_charge: u16_at(m, 6),
            command: u16_at(m, 12),
            flags: u32_at(m, 16),
            message_id: u64_at(m, 24),
            tree_id: u32_at(m, 36),
            session_id: u64_at(m, 40),
        })
    }
    pub fn related(&self) -> bool {
        self.flags & FLAG_RELATED != 0
    }
}

/// The messages of a (compound) request frame.
pub fn split(frame: &[u8]) -> Vec<&[u8]> {
    let mut out = Vec::new();
    let mut off = 0;
    while off < frame.len() && out.len() < 64 {
        let rest = &frame[off..];
        let next = u32_at(rest, 20) as usize;
        if next == 0 || next > rest.len() {
            out.push(rest);
            break;
        }
        out.push(&rest[..next]);
        off += next;
    }
    out
}

/// A reply header for `req` (async when `async_id` is given).
pub fn reply_header(req: &ReqHdr, st: u32, credits: u16, async_id: Option<u64>) -> Vec<u8> {
    let mut h = Vec::with_capacity(HEADER_LEN);
    h.extend_from_slice(b"\xfeSMB");
    h.u16(64)
        .u16(req.credit_charge)
        .u32(st)
        .u16(req.command)
        .u16(credits);
    let mut fl = FLAG_RESPONSE | (req.flags & FLAG_RELATED);
    if async_id.is_some() {
        fl |= FLAG_ASYNC;
    }
    h.u32(fl).u32(0).u64(req.message_id);
    match async_id {
        Some(a) => h.u64(a),
        None => h.u32(0).u32(req.tree_id),
    };
    h.u64(req.session_id).zeros(16);
    h
}

/// Chains reply messages into one frame (8-byte aligned, NextCommand set).
pub fn chain(msgs: Vec<Vec<u8>>) -> Vec<u8> {
    let n = msgs.len();
    let mut out = Vec::new();
    for (i, mut m) in msgs.into_iter().enumerate() {
        if i + 1 < n {
            m.resize(m.len().next_multiple_of(8), 0);
            let len = m.len() as u32;
            m[20..24].copy_from_slice(&len.to_le_bytes());
        }
        out.extend_from_slice(&m);
    }
    out
}

/// The ERROR response body (MS-SMB2 2.2.2).
pub fn error_body() -> Vec<u8> {
    let mut b = Vec::new();
    b.u16(9).u8(0).u8(0).u32(0).u8(0);
    b
}

/// A body of StructureSize 4 (LOGOFF, TREE_DISCONNECT, ECHO).
pub fn small_body() -> Vec<u8> {
    let mut b = Vec::new();
    b.u16(4).u16(0);
    b
}

/// NEGOTIATE response choosing `dialect` (no contexts, no security blob).
pub fn negotiate_body(dialect: u16, max_io: u32) -> Vec<u8> {
    negotiate_body_for(dialect, false, max_io)
}

/// The server's GUID.
const GUID: &[u8; 16] = b"hostile-server!!";
/// The server's capabilities: LARGE_MTU.
const CAPS: u32 = 0x4;

/// The server's SecurityMode: signing enabled, and required if `sign`.
fn security_mode(sign: bool) -> u16 {
    1 | if sign { 2 } else { 0 }
}

/// NEGOTIATE response choosing `dialect`, signing required if `sign`; on
/// 3.1.1 with one negotiate context (preauth integrity, SHA-512) at
/// offset 128, right after the fixed part.
pub fn negotiate_body_for(dialect: u16, sign: bool, max_io: u32) -> Vec<u8> {
    let v311 = dialect == 0x0311;
    let mut b = Vec::new();
    b.u16(65)
        .u16(security_mode(sign))
        .u16(dialect)
        .u16(v311 as u16);
    b.extend_from_slice(GUID);
    b.u32(CAPS)
        .u32(max_io)
        .u32(max_io)
        .u32(max_io)
        .u64(133_000_000_000_000_000)
        .u64(0)
        .u16(0)
        .u16(0)
        .u32(if v311 { 128 } else { 0 });
    if v311 {
        // PREAUTH_INTEGRITY_CAPABILITIES: one algorithm (SHA-512), 32
        // bytes of salt.
        b.u16(1).u16(38).u32(0);
        b.u16(1).u16(32).u16(1);
        b.extend_from_slice(&[0x5a; 32]);
    }
    b
}

/// IOCTL response to FSCTL_VALIDATE_NEGOTIATE_INFO: what the NEGOTIATE
/// response said, 24 bytes of output right after the fixed part.
pub fn validate_negotiate_body(dialect: u16, sign: bool) -> Vec<u8> {
    let mut b = Vec::new();
    b.u16(49).u16(0).u32(0x0014_0204);
    b.u64(u64::MAX).u64(u64::MAX);
    b.u32(112).u32(0).u32(112).u32(24).u32(0).u32(0);
    b.u32(CAPS);
    b.extend_from_slice(GUID);
    b.u16(security_mode(sign)).u16(dialect);
    b
}

/// Points the data offset of the reply `r` (header included) at `off`,
/// leaving the data where it is; an error reply (but SESSION_SETUP's
/// MORE_PROCESSING_REQUIRED, which carries the challenge) is left alone. The field
/// by command: READ's DataOffset (one byte), QUERY_INFO's and
/// QUERY_DIRECTORY's OutputBufferOffset, SESSION_SETUP's
/// SecurityBufferOffset, IOCTL's OutputOffset, NEGOTIATE's
/// NegotiateContextOffset.
pub fn set_data_offset(r: &mut [u8], off: u32) {
    let st = u32_at(r, 8);
    if st >> 30 == 3 && st != status::MORE_PROCESSING_REQUIRED {
        return;
    }
    let (at, width) = match u16_at(r, 12) {
        cmd::READ => (HEADER_LEN + 2, 1),
        cmd::QUERY_INFO | cmd::QUERY_DIRECTORY => (HEADER_LEN + 2, 2),
        cmd::SESSION_SETUP => (HEADER_LEN + 4, 2),
        cmd::IOCTL => (HEADER_LEN + 32, 4),
        cmd::NEGOTIATE => (HEADER_LEN + 60, 4),
        _ => return,
    };
    if let Some(f) = r.get_mut(at..at + width) {
        f.copy_from_slice(&off.to_le_bytes()[..width]);
    }
}

/// Calls `f` on each message of a chained reply frame (NextCommand).
pub fn for_each_message(frame: &mut [u8], mut f: impl FnMut(&mut [u8])) {
    let mut off = 0;
    while off < frame.len() {
        let rest = &mut frame[off..];
        let next = u32_at(rest, 20) as usize;
        if next == 0 || next > rest.len() {
            f(rest);
            return;
        }
        f(&mut rest[..next]);
        off += next;
    }
}

/// A FILE_FULL_EA_INFORMATION list: one EA per name, value `v`.
pub fn full_eas(names: &[Vec<u8>]) -> Vec<u8> {
    let mut out = Vec::new();
    for (i, n) in names.iter().enumerate() {
        let mut e = Vec::new();
        e.u32(0).u8(0).u8(n.len() as u8).u16(1);
        e.extend_from_slice(n);
        e.u8(0).u8(b'v');
        if i + 1 < names.len() {
            e.resize(e.len().next_multiple_of(4), 0);
            let len = e.len() as u32;
            e[0..4].copy_from_slice(&len.to_le_bytes());
        }
        out.extend_from_slice(&e);
    }
    out
}

/// SESSION_SETUP response carrying `token`.
pub fn session_body(token: &[u8]) -> Vec<u8> {
    let mut b = Vec::new();
    b.u16(9)
        .u16(0)
        .u16((HEADER_LEN + 8) as u16)
        .u16(token.len() as u16);
    b.extend_from_slice(token);
    b
}

/// An NTLMSSP CHALLENGE with an empty target name and just MsvAvEOL.
pub fn ntlm_challenge() -> Vec<u8> {
    ntlm_challenge_at(None)
}

/// The same CHALLENGE, with an MsvAvTimestamp (FILETIME) when `ts` is
/// given, as every Windows server since Vista sends (and asks for a MIC
/// with).
pub fn ntlm_challenge_at(ts: Option<u64>) -> Vec<u8> {
    let mut t = Vec::new();
    t.extend_from_slice(b"NTLMSSP\0");
    t.u32(2);
    t.u16(0).u16(0).u32(56); // TargetNameFields
    t.u32(0x0080_0000 | 0x0008_0000 | 0x0000_0200 | 0x1); // TARGET_INFO | ESS | NTLM | UNICODE
    t.extend_from_slice(&[1, 2, 3, 4, 5, 6, 7, 8]);
    t.zeros(8);
    let ti_len = if ts.is_some() { 16 } else { 4 };
    t.u16(ti_len).u16(ti_len).u32(56); // TargetInfoFields
    t.zeros(8); // Version
    if let Some(ts) = ts {
        t.u16(7).u16(8); // MsvAvTimestamp
        t.extend_from_slice(&ts.to_le_bytes());
    }
    t.u16(0).u16(0); // MsvAvEOL
    t
}

/// TREE_CONNECT response (a disk share).
pub fn tree_body() -> Vec<u8> {
    let mut b = Vec::new();
    b.u16(16).u8(1).u8(0).u32(0).u32(0).u32(0x001f_01ff);
    b
}

const T: u64 = 133_000_000_000_000_000;

/// CREATE response for an object of `size` bytes.
pub fn create_body(fid: u64, dir: bool, size: u64) -> Vec<u8> {
    let mut b = Vec::new();
    b.u16(89).u8(0).u8(0).u32(1);
    b.u64(T).u64(T).u64(T).u64(T);
    b.u64(size).u64(size).u32(attrs(dir)).u32(0);
    b.u64(fid).u64(fid).u32(0).u32(0);
    b
}

fn attrs(dir: bool) -> u32 {
    if dir {
        0x10
    } else {
        0x80
    }
}

/// CLOSE response, with the attributes when `postquery`.
pub fn close_body(postquery: bool, dir: bool, size: u64) -> Vec<u8> {
    let mut b = Vec::new();
    b.u16(60).u16(postquery as u16).u32(0);
    if postquery {
        b.u64(T)
            .u64(T)
            .u64(T)
            .u64(T)
            .u64(size)
            .u64(size)
            .u32(attrs(dir));
    } else {
        b.zeros(52);
    }
    b
}

/// QUERY_INFO / QUERY_DIRECTORY response carrying `data`.
pub fn output_body(data: &[u8]) -> Vec<u8> {
    let mut b = Vec::new();
    b.u16(9).u16((HEADER_LEN + 8) as u16).u32(data.len() as u32);
    b.extend_from_slice(data);
    b
}

/// FileAllInformation of an object.
pub fn all_info(dir: bool, size: u64, ino: u64) -> Vec<u8> {
    let mut b = Vec::new();
    b.u64(T).u64(T).u64(T).u64(T).u32(attrs(dir)).u32(0);
    b.u64(size).u64(size).u32(1).u8(0).u8(dir as u8).u16(0);
    b.u64(ino)
        .u32(0)
        .u32(0x001f_01ff)
        .u64(0)
        .u32(0)
        .u32(0)
        .u32(0);
    b
}

/// FileIdBothDirectoryInformation records for `(utf16 name, dir, size,
/// ino)`.
pub fn dir_records(entries: &[(Vec<u16>, bool, u64, u64)]) -> Vec<u8> {
    let mut out = Vec::new();
    for (i, (name, dir, size, ino)) in entries.iter().enumerate() {
        let start = out.len();
        let mut r = Vec::new();
        r.u32(0).u32(0).u64(T).u64(T).u64(T).u64(T);
        r.u64(*size)
            .u64(*size)
            .u32(attrs(*dir))
            .u32(name.len() as u32 * 2)
            .u32(0);
        r.u8(0).u8(0).zeros(24).u16(0).u64(*ino);
        for c in name {
            r.u16(*c);
        }
        if i + 1 < entries.len() {
            r.resize(r.len().next_multiple_of(8), 0);
            let len = r.len() as u32;
            r[0..4].copy_from_slice(&len.to_le_bytes());
        }
        out.extend_from_slice(&r);
        debug_assert_eq!(start % 8, 0);
    }
    out
}

/// READ response carrying `data`.
pub fn read_body(data: &[u8]) -> Vec<u8> {
    let mut b = Vec::new();
    b.u16(17).u8((HEADER_LEN + 16) as u8).u8(0);
    b.u32(data.len() as u32).u32(0).u32(0);
    b.extend_from_slice(data);
    b
}

/// WRITE response counting `count` bytes.
pub fn write_body(count: u32) -> Vec<u8> {
    let mut b = Vec::new();
    b.u16(17).u16(0).u32(count).u32(0).u16(0).u16(0);
    b
}

/// SET_INFO response.
pub fn set_info_body() -> Vec<u8> {
    let mut b = Vec::new();
    b.u16(2);
    b
}

/// UTF-16LE code units of a string.
pub fn utf16(s: &str) -> Vec<u16> {
    s.encode_utf16().collect()
}

/// The UTF-16 string at `off`, `len` bytes.
pub fn utf16_at(m: &[u8], off: usize, len: usize) -> String {
    let b = m.get(off..off + len).unwrap_or(&[]);
    let u: Vec<u16> = b
        .chunks_exact(2)
        .map(|c| u16::from_le_bytes([c[0], c[1]]))
        .collect();
    String::from_utf16_lossy(&u)
}
