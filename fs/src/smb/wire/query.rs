//! QUERY_DIRECTORY (MS-SMB2 2.2.33, 2.2.34) and QUERY_INFO (2.2.37, 2.2.38).
//! Both replies carry one output buffer; [`OutputResponse`] parses either.
//! The buffers' contents are decoded in [`super::dirinfo`], [`super::info`]
//! and [`super::ea`].

use super::create::FileId;
use super::{put_u16, put_u32, region, slice, u16_at, u32_at, utf16le, Result, WireError};
use alloc::vec::Vec;

/// QUERY_DIRECTORY flags.
pub mod qd_flags {
    pub const RESTART_SCANS: u8 = 0x1;
    pub const RETURN_SINGLE_ENTRY: u8 = 0x2;
    pub const REOPEN: u8 = 0x10;
}

/// QUERY_INFO info types.
pub mod info_type {
    pub const FILE: u8 = 1;
    pub const FILESYSTEM: u8 = 2;
}

/// A QUERY_DIRECTORY request body.
#[derive(Clone, Debug)]
pub struct QueryDirectoryRequest<'a> {
    pub class: u8,
    pub flags: u8,
    pub file_id: FileId,
    pub pattern: &'a str,
    pub output_len: u32,
}

impl QueryDirectoryRequest<'_> {
    /// Appends the body after a 64-byte header already in `out`.
    pub fn emit(&self, out: &mut Vec<u8>) {
        let pat = utf16le(self.pattern);
        put_u16(out, 33);
        out.push(self.class);
        out.push(self.flags);
        put_u32(out, 0); // FileIndex
        self.file_id.emit(out);
        put_u16(out, 64 + 32);
        put_u16(out, pat.len() as u16);
        put_u32(out, self.output_len);
        if pat.is_empty() {
            out.push(0);
        } else {
            out.extend_from_slice(&pat);
        }
    }
}

/// A QUERY_INFO request body.
#[derive(Clone, Debug)]
pub struct QueryInfoRequest<'a> {
    pub info_type: u8,
    pub class: u8,
    pub output_len: u32,
    /// Input buffer (the FILE_GET_EA_INFORMATION list for EA queries).
    pub input: &'a [u8],
    pub additional_info: u32,
    pub flags: u32,
    pub file_id: FileId,
}

impl QueryInfoRequest<'_> {
    /// Appends the body after a 64-byte header already in `out`.
    pub fn emit(&self, out: &mut Vec<u8>) {
        put_u16(out, 41);
        out.push(self.info_type);
        out.push(self.class);
        put_u32(out, self.output_len);
        put_u16(out, if self.input.is_empty() { 0 } else { 64 + 40 });
        put_u16(out, 0);
        put_u32(out, self.input.len() as u32);
        put_u32(out, self.additional_info);
        put_u32(out, self.flags);
        self.file_id.emit(out);
        if self.input.is_empty() {
            out.push(0);
        } else {
            out.extend_from_slice(self.input);
        }
    }
}

/// The reply of QUERY_DIRECTORY or QUERY_INFO: one output buffer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct OutputResponse<'a> {
    pub data: &'a [u8],
}

impl<'a> OutputResponse<'a> {
    /// Parses a whole response message (header included).
    pub fn parse(msg: &'a [u8]) -> Result<Self> {
        let b = slice(msg, 64, 8)?;
        if u16_at(b, 0)? != 9 {
            return Err(WireError::new("query response structure size"));
        }
        let off = u16_at(b, 2)? as usize;
        let len = u32_at(b, 4)? as usize;
        Ok(OutputResponse {
            data: region(msg, off, len)?,
        })
    }
}
