//! The SMB2/3 wire layer: byte layouts of the messages the client sends and
//! the replies it parses, nothing else.
//!
//! Each message has a parse/emit form in its own file (the smoltcp habit):
//! the fixed 64-byte header has a zero-copy view ([`header::Header`]) whose
//! field offsets live in a private `field` module and a validated
//! [`header::HeaderRepr`]; every request body has a `Repr` with `emit` and
//! every reply body a `Repr` with `parse`. Every reply body enters through
//! one gate, [`reply`] (StructureSize, then the fixed part, then typed
//! fields and data areas by one offset rule), and every list chained by an
//! offset to its next entry is walked by one walker, [`chain`]. All parsing
//! goes through the checked accessors below, so a short, truncated or hostile buffer yields
//! a [`WireError`] and never a panic or an out-of-bounds slice. Offsets
//! inside a message are relative to the start of its SMB2 header, as the
//! protocol defines them.
//!
//! This layer keeps no state, takes no locks and never touches a transport;
//! sessions, credits, signing and retries live in [`super::conn`].

pub mod chain;
pub mod compound;
pub mod create;
pub mod dirinfo;
pub mod ea;
pub mod error_response;
pub mod header;
pub mod info;
pub mod ioctl;
pub mod negotiate;
pub mod netbios;
pub mod query;
pub mod read;
pub mod reply;
pub mod session;
pub mod setinfo;
pub mod transform;
pub mod tree;
pub mod write;

#[cfg(test)]
mod tests;

use alloc::string::String;
use alloc::vec::Vec;
use core::fmt;

/// A malformed message: the bytes do not form what their header claims.
///
/// Opaque on purpose (every failure means "bad bytes"); `what` names the
/// check that failed, for the log.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WireError {
    /// The failed check, e.g. `"truncated"`.
    pub what: &'static str,
}

impl WireError {
    /// A wire error naming the failed check.
    pub const fn new(what: &'static str) -> Self {
        WireError { what }
    }
}

impl fmt::Display for WireError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "malformed SMB2 message ({})", self.what)
    }
}

/// Result of a wire parse.
pub type Result<T> = core::result::Result<T, WireError>;

const TRUNC: WireError = WireError::new("truncated");

/// `buf[off..off + len]`, or an error if any part lies outside `buf`.
pub fn slice(buf: &[u8], off: usize, len: usize) -> Result<&[u8]> {
    let end = off.checked_add(len).ok_or(TRUNC)?;
    buf.get(off..end).ok_or(TRUNC)
}

/// Byte at `off`.
pub fn u8_at(buf: &[u8], off: usize) -> Result<u8> {
    buf.get(off).copied().ok_or(TRUNC)
}

/// Little-endian u16 at `off`.
pub fn u16_at(buf: &[u8], off: usize) -> Result<u16> {
    let s = slice(buf, off, 2)?;
    Ok(u16::from_le_bytes([s[0], s[1]]))
}

/// Little-endian u32 at `off`.
pub fn u32_at(buf: &[u8], off: usize) -> Result<u32> {
    let s = slice(buf, off, 4)?;
    Ok(u32::from_le_bytes([s[0], s[1], s[2], s[3]]))
}

/// Little-endian u64 at `off`.
pub fn u64_at(buf: &[u8], off: usize) -> Result<u64> {
    let s = slice(buf, off, 8)?;
    let mut a = [0u8; 8];
    a.copy_from_slice(s);
    Ok(u64::from_le_bytes(a))
}

/// 16 bytes at `off`.
pub fn bytes16_at(buf: &[u8], off: usize) -> Result<[u8; 16]> {
    let s = slice(buf, off, 16)?;
    let mut a = [0u8; 16];
    a.copy_from_slice(s);
    Ok(a)
}

/// Checks that the StructureSize (a little-endian u16) at `off` of `buf` is
/// `want`, or fails with `what`: the one place a StructureSize is read, for
/// the header's gate ([`header::Header::new_checked`]) and the reply gate
/// ([`reply::ReplyBody::new_checked`]).
pub(crate) fn expect_structure_size(
    buf: &[u8],
    off: usize,
    want: u16,
    what: &'static str,
) -> Result<()> {
    if u16_at(buf, off)? != want {
        return Err(WireError::new(what));
    }
    Ok(())
}

/// Appends a little-endian u16.
pub fn put_u16(out: &mut Vec<u8>, v: u16) {
    out.extend_from_slice(&v.to_le_bytes());
}

/// Appends a little-endian u32.
pub fn put_u32(out: &mut Vec<u8>, v: u32) {
    out.extend_from_slice(&v.to_le_bytes());
}

/// Appends a little-endian u64.
pub fn put_u64(out: &mut Vec<u8>, v: u64) {
    out.extend_from_slice(&v.to_le_bytes());
}

/// Appends `len` zero bytes and returns them, for an emitter to fill in
/// field by field with [`set_u16`] and friends at its `field` offsets
/// (fields it leaves alone, the Reserved ones, stay zero).
pub fn put_fixed(out: &mut Vec<u8>, len: usize) -> &mut [u8] {
    let start = out.len();
    out.resize(start + len, 0);
    &mut out[start..]
}

/// Writes a little-endian u16 at `off` of a buffer the emitter sized
/// itself ([`put_fixed`]); an offset outside it is a bug in the emitter,
/// never bad input, and panics.
pub fn set_u16(buf: &mut [u8], off: usize, v: u16) {
    buf[off..off + 2].copy_from_slice(&v.to_le_bytes());
}

/// Writes a little-endian u32 at `off` (see [`set_u16`]).
pub fn set_u32(buf: &mut [u8], off: usize, v: u32) {
    buf[off..off + 4].copy_from_slice(&v.to_le_bytes());
}

/// Writes a little-endian u64 at `off` (see [`set_u16`]).
pub fn set_u64(buf: &mut [u8], off: usize, v: u64) {
    buf[off..off + 8].copy_from_slice(&v.to_le_bytes());
}

/// Pads `out` with zeros to a multiple of `align` bytes.
pub fn pad_to(out: &mut Vec<u8>, align: usize) {
    while !out.len().is_multiple_of(align) {
        out.push(0);
    }
}

/// UTF-16LE encoding of `s` (SMB2 names and paths).
pub fn utf16le(s: &str) -> Vec<u8> {
    let mut v = Vec::with_capacity(s.len() * 2);
    for u in s.encode_utf16() {
        v.extend_from_slice(&u.to_le_bytes());
    }
    v
}

/// Decodes UTF-16LE; odd lengths and unpaired surrogates are errors.
pub fn from_utf16le(b: &[u8]) -> Result<String> {
    if !b.len().is_multiple_of(2) {
        return Err(WireError::new("odd UTF-16 length"));
    }
    let units = b.chunks_exact(2).map(|c| u16::from_le_bytes([c[0], c[1]]));
    char::decode_utf16(units)
        .collect::<core::result::Result<String, _>>()
        .map_err(|_| WireError::new("bad UTF-16"))
}

/// SMB2 command codes (MS-SMB2 2.2.1).
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
    pub const CANCEL: u16 = 12;
    pub const ECHO: u16 = 13;
    pub const QUERY_DIRECTORY: u16 = 14;
    pub const QUERY_INFO: u16 = 16;
    pub const SET_INFO: u16 = 17;
    pub const OPLOCK_BREAK: u16 = 18;
}

/// NT status codes the client gives meaning to.
pub mod status {
    pub const SUCCESS: u32 = 0;
    pub const PENDING: u32 = 0x0000_0103;
    pub const BUFFER_OVERFLOW: u32 = 0x8000_0005;
    pub const NO_MORE_FILES: u32 = 0x8000_0006;
    pub const INVALID_PARAMETER: u32 = 0xc000_000d;
    pub const NO_SUCH_FILE: u32 = 0xc000_000f;
    pub const INVALID_DEVICE_REQUEST: u32 = 0xc000_0010;
    pub const END_OF_FILE: u32 = 0xc000_0011;
    pub const MORE_PROCESSING_REQUIRED: u32 = 0xc000_0016;
    pub const ACCESS_DENIED: u32 = 0xc000_0022;
    pub const BUFFER_TOO_SMALL: u32 = 0xc000_0023;
    pub const OBJECT_NAME_INVALID: u32 = 0xc000_0033;
    pub const OBJECT_NAME_NOT_FOUND: u32 = 0xc000_0034;
    pub const OBJECT_NAME_COLLISION: u32 = 0xc000_0035;
    pub const OBJECT_PATH_NOT_FOUND: u32 = 0xc000_003a;
    pub const NO_EAS_ON_FILE: u32 = 0xc000_0052;
    pub const EA_CORRUPT_ERROR: u32 = 0xc000_0053;
    pub const LOGON_FAILURE: u32 = 0xc000_006d;
    pub const INSUFFICIENT_RESOURCES: u32 = 0xc000_009a;
    pub const FILE_IS_A_DIRECTORY: u32 = 0xc000_00ba;
    pub const NOT_SUPPORTED: u32 = 0xc000_00bb;
    pub const NETWORK_NAME_DELETED: u32 = 0xc000_00c9;
    pub const BAD_NETWORK_NAME: u32 = 0xc000_00cc;
    pub const NOT_A_DIRECTORY: u32 = 0xc000_0103;
    pub const CANCELLED: u32 = 0xc000_0120;
    pub const USER_SESSION_DELETED: u32 = 0xc000_0203;
    pub const NETWORK_SESSION_EXPIRED: u32 = 0xc000_035c;
    pub const INVALID_INFO_CLASS: u32 = 0xc000_0003;
    pub const SHARING_VIOLATION: u32 = 0xc000_0043;
    pub const DELETE_PENDING: u32 = 0xc000_0056;
    pub const DISK_FULL: u32 = 0xc000_007f;
    pub const MEDIA_WRITE_PROTECTED: u32 = 0xc000_00a2;
    pub const NOT_SAME_DEVICE: u32 = 0xc000_00d4;
    pub const DIRECTORY_NOT_EMPTY: u32 = 0xc000_0101;
    pub const CANNOT_DELETE: u32 = 0xc000_0121;
    pub const FILE_CLOSED: u32 = 0xc000_0128;

    /// Severity "error" (top two bits 11): the command failed.
    pub fn is_error(s: u32) -> bool {
        s >> 30 == 3
    }
}
