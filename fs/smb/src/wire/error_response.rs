//! The SMB2 ERROR response body (MS-SMB2 2.2.2): what a failed command
//! carries instead of its own response.

use super::reply::{Reply, ReplyBody};
use super::Result;

/// Field offsets of SMB2 ERROR Response (MS-SMB2 2.2.2), after the header;
/// its StructureSize and length are the reply gate's ([`Reply::Error`]).
#[allow(dead_code)]
mod field {
    pub const STRUCTURE_SIZE: usize = 0;
    pub const CONTEXT_COUNT: usize = 2;
    pub const RESERVED: usize = 3;
    pub const BYTE_COUNT: usize = 4;
    /// ErrorData, right after the fixed part: a data area of ByteCount
    /// bytes.
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
        let body = ReplyBody::new_checked(msg, Reply::Error)?;
        let count = body.u32(field::BYTE_COUNT)? as usize;
        Ok(ErrorResponse {
            context_count: body.u8(field::CONTEXT_COUNT)?,
            data: body.area(body.floor(), count)?,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// ERROR responses (MS-SMB2 2.2.2), written out by hand.
    #[test]
    fn error_response_bytes() {
        let mut msg = alloc::vec![0u8; 64];
        #[rustfmt::skip]
        msg.extend_from_slice(&[
            9, 0,                    // StructureSize
            0,                       // ErrorContextCount
            0,                       // Reserved
            0, 0, 0, 0,              // ByteCount
            0,                       // ErrorData: the pad byte
        ]);
        let e = ErrorResponse::parse(&msg).unwrap();
        assert_eq!((e.context_count, e.data), (0, &[][..]));
        // Without the pad byte: accepted.
        assert!(ErrorResponse::parse(&msg[..72]).is_ok());
        // ByteCount 2 with two bytes of ErrorData.
        msg[68] = 2;
        msg.push(7);
        assert_eq!(ErrorResponse::parse(&msg).unwrap().data, &[0, 7]);
        assert!(ErrorResponse::parse(&msg[..73]).is_err());
        msg[64] = 8;
        assert!(ErrorResponse::parse(&msg).is_err());
    }
}
