//! SESSION_SETUP (MS-SMB2 2.2.5, 2.2.6) and LOGOFF (2.2.7, 2.2.8).

use super::header::HEADER_LEN;
use super::{put_u16, put_u32, put_u64, region, slice, u16_at, Result, WireError};
use alloc::vec::Vec;

/// SESSION_SETUP request: fixed part before the security buffer.
const REQUEST_FIXED: usize = 24;

/// Field offsets of the SESSION_SETUP response body (after the header).
mod field {
    pub const STRUCTURE_SIZE: usize = 0;
    pub const SESSION_FLAGS: usize = 2;
    pub const SECURITY_BUFFER_OFFSET: usize = 4;
    pub const SECURITY_BUFFER_LENGTH: usize = 6;
    /// Length of the fixed part.
    pub const LEN: usize = 8;
}

/// A SESSION_SETUP request body.
#[derive(Clone, Debug)]
pub struct SessionSetupRequest<'a> {
    pub security_mode: u8,
    pub capabilities: u32,
    pub previous_session_id: u64,
    /// The security token (raw NTLMSSP here).
    pub token: &'a [u8],
}

impl SessionSetupRequest<'_> {
    /// Appends the body after a [`HEADER_LEN`]-byte header already in `out`.
    pub fn emit(&self, out: &mut Vec<u8>) {
        out.push(25);
        out.push(0);
        out.push(0); // Flags
        out.push(self.security_mode);
        put_u32(out, self.capabilities);
        put_u32(out, 0); // Channel
        put_u16(out, (HEADER_LEN + REQUEST_FIXED) as u16);
        put_u16(out, self.token.len() as u16);
        put_u64(out, self.previous_session_id);
        out.extend_from_slice(self.token);
    }
}

/// A parsed SESSION_SETUP response.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SessionSetupResponse<'a> {
    pub session_flags: u16,
    pub token: &'a [u8],
}

impl<'a> SessionSetupResponse<'a> {
    /// Parses a whole response message (header included).
    pub fn parse(msg: &'a [u8]) -> Result<Self> {
        let b = slice(msg, HEADER_LEN, field::LEN)?;
        if u16_at(b, field::STRUCTURE_SIZE)? != 9 {
            return Err(WireError::new("session setup structure size"));
        }
        let session_flags = u16_at(b, field::SESSION_FLAGS)?;
        let off = u16_at(b, field::SECURITY_BUFFER_OFFSET)? as usize;
        let len = u16_at(b, field::SECURITY_BUFFER_LENGTH)? as usize;
        Ok(SessionSetupResponse {
            session_flags,
            token: region(msg, off, len)?,
        })
    }
}

/// Body of LOGOFF, TREE_DISCONNECT and their responses: StructureSize 4.
pub fn emit_small(out: &mut Vec<u8>) {
    put_u16(out, 4);
    put_u16(out, 0);
}

/// Checks a LOGOFF / TREE_DISCONNECT response body.
pub fn parse_small(msg: &[u8]) -> Result<()> {
    if u16_at(msg, HEADER_LEN)? != 4 {
        return Err(WireError::new("structure size 4 expected"));
    }
    Ok(())
}
