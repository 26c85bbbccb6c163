//! The SMB2 ERROR response body (MS-SMB2 2.2.2): what a failed command
//! carries instead of its own response.

use super::header::HEADER_LEN;
use super::{slice, u16_at, u32_at, u8_at, Result, WireError};

/// Field offsets of the ERROR body (after the header).
mod field {
    pub const STRUCTURE_SIZE: usize = 0;
    pub const CONTEXT_COUNT: usize = 2;
    pub const BYTE_COUNT: usize = 4;
    pub const ERROR_DATA: usize = 8;
}

/// A parsed ERROR response body.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ErrorResponse<'a> {
    pub context_count: u8,
    pub data: &'a [u8],
}

impl<'a> ErrorResponse<'a> {
    /// Parses the body of a whole message (header included). Samba and
    /// Windows send StructureSize 9 with ByteCount 0 and one pad byte;
    /// some servers omit the pad byte, which is accepted.
    pub fn parse(msg: &'a [u8]) -> Result<Self> {
        if u16_at(msg, HEADER_LEN + field::STRUCTURE_SIZE)? != 9 {
            return Err(WireError::new("error structure size"));
        }
        let context_count = u8_at(msg, HEADER_LEN + field::CONTEXT_COUNT)?;
        let count = u32_at(msg, HEADER_LEN + field::BYTE_COUNT)? as usize;
        let data = if count == 0 {
            &[][..]
        } else {
            slice(msg, HEADER_LEN + field::ERROR_DATA, count)?
        };
        Ok(ErrorResponse {
            context_count,
            data,
        })
    }
}
