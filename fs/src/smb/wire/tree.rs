//! TREE_CONNECT (MS-SMB2 2.2.9, 2.2.10); TREE_DISCONNECT uses
//! [`super::session::emit_small`].

use super::header::HEADER_LEN;
use super::{put_u16, slice, u16_at, u32_at, u8_at, utf16le, Result, WireError};
use alloc::vec::Vec;

/// TREE_CONNECT request: fixed part before the path.
const REQUEST_FIXED: usize = 8;

/// Field offsets of the TREE_CONNECT response body (after the header).
mod field {
    pub const STRUCTURE_SIZE: usize = 0;
    pub const SHARE_TYPE: usize = 2;
    pub const SHARE_FLAGS: usize = 4;
    pub const CAPABILITIES: usize = 8;
    pub const MAXIMAL_ACCESS: usize = 12;
    /// Length of the body.
    pub const LEN: usize = 16;
}

/// A TREE_CONNECT request body for the UNC path `\\server\share`.
#[derive(Clone, Debug)]
pub struct TreeConnectRequest<'a> {
    pub unc: &'a str,
}

impl TreeConnectRequest<'_> {
    /// Appends the body after a [`HEADER_LEN`]-byte header already in `out`.
    pub fn emit(&self, out: &mut Vec<u8>) {
        let path = utf16le(self.unc);
        put_u16(out, 9);
        put_u16(out, 0);
        put_u16(out, (HEADER_LEN + REQUEST_FIXED) as u16);
        put_u16(out, path.len() as u16);
        out.extend_from_slice(&path);
    }
}

/// A parsed TREE_CONNECT response.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TreeConnectResponse {
    pub share_type: u8,
    pub share_flags: u32,
    pub capabilities: u32,
    pub maximal_access: u32,
}

impl TreeConnectResponse {
    /// Parses a whole response message (header included).
    pub fn parse(msg: &[u8]) -> Result<Self> {
        let b = slice(msg, HEADER_LEN, field::LEN)?;
        if u16_at(b, field::STRUCTURE_SIZE)? != 16 {
            return Err(WireError::new("tree connect structure size"));
        }
        Ok(TreeConnectResponse {
            share_type: u8_at(b, field::SHARE_TYPE)?,
            share_flags: u32_at(b, field::SHARE_FLAGS)?,
            capabilities: u32_at(b, field::CAPABILITIES)?,
            maximal_access: u32_at(b, field::MAXIMAL_ACCESS)?,
        })
    }
}
