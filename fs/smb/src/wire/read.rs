//! READ (MS-SMB2 2.2.19, 2.2.20).

use super::create::FileId;
use super::header::HEADER_LEN;
use super::reply::{Reply, ReplyBody};
use super::Result;
use super::{put_fixed, set_u16, set_u32, set_u64};
use alloc::vec::Vec;

/// Field offsets, each relative to the start of its body (after the
/// header), named as MS-SMB2 names them. Every field of a layout is listed,
/// including those the client leaves zero or does not read.
#[allow(dead_code)]
mod field {
    /// SMB2 READ Request (MS-SMB2 2.2.19).
    pub mod request {
        pub const STRUCTURE_SIZE: usize = 0;
        pub const PADDING: usize = 2;
        pub const FLAGS: usize = 3;
        pub const LENGTH: usize = 4;
        pub const OFFSET: usize = 8;
        pub const FILE_ID: usize = 16;
        pub const MINIMUM_COUNT: usize = 32;
        pub const CHANNEL: usize = 36;
        pub const REMAINING_BYTES: usize = 40;
        pub const READ_CHANNEL_INFO_OFFSET: usize = 44;
        pub const READ_CHANNEL_INFO_LENGTH: usize = 46;
        /// The variable part: one byte, as StructureSize counts it, even
        /// with no channel info.
        pub const BUFFER: usize = 48;
        /// Length of the body as sent: the fixed part and the one byte.
        pub const LEN: usize = BUFFER + 1;
    }

    /// SMB2 READ Response (MS-SMB2 2.2.20); its StructureSize and length
    /// are the reply gate's ([`crate::wire::reply::Reply::Read`]).
    pub mod response {
        pub const STRUCTURE_SIZE: usize = 0;
        pub const DATA_OFFSET: usize = 2;
        pub const RESERVED: usize = 3;
        pub const DATA_LENGTH: usize = 4;
        pub const DATA_REMAINING: usize = 8;
        pub const RESERVED2: usize = 12;
    }
}

/// StructureSize of the READ request (MS-SMB2 2.2.19): the 48-byte fixed
/// part plus one byte of Buffer.
const REQUEST_SIZE: u16 = 49;

/// Padding asked of the server: where, counted from the start of the
/// header, the data should begin in the reply (right after its fixed part:
/// 64 + 16).
const REPLY_DATA_OFFSET: u8 = (HEADER_LEN + Reply::Read.fixed_len()) as u8;

/// A READ request body.
#[derive(Clone, Copy, Debug)]
pub struct ReadRequest {
    pub length: u32,
    pub offset: u64,
    pub file_id: FileId,
    pub minimum: u32,
}

impl ReadRequest {
    /// Appends the body after a [`HEADER_LEN`]-byte header already in `out`.
    pub fn emit(&self, out: &mut Vec<u8>) {
        use field::request as f;
        let b = put_fixed(out, f::LEN);
        set_u16(b, f::STRUCTURE_SIZE, REQUEST_SIZE);
        b[f::PADDING] = REPLY_DATA_OFFSET;
        b[f::FLAGS] = 0;
        set_u32(b, f::LENGTH, self.length);
        set_u64(b, f::OFFSET, self.offset);
        self.file_id.write(b, f::FILE_ID);
        set_u32(b, f::MINIMUM_COUNT, self.minimum);
        set_u32(b, f::CHANNEL, 0); // none
        set_u32(b, f::REMAINING_BYTES, 0);
        set_u16(b, f::READ_CHANNEL_INFO_OFFSET, 0);
        set_u16(b, f::READ_CHANNEL_INFO_LENGTH, 0);
        b[f::BUFFER] = 0;
    }
}

/// A parsed READ response.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ReadResponse<'a> {
    pub data: &'a [u8],
    pub remaining: u32,
}

impl<'a> ReadResponse<'a> {
    /// Parses a whole response message (header included).
    pub fn parse(msg: &'a [u8]) -> Result<Self> {
        use field::response as f;
        let body = ReplyBody::new_checked(msg, Reply::Read)?;
        let off = body.u8(f::DATA_OFFSET)? as usize;
        let len = body.u32(f::DATA_LENGTH)? as usize;
        Ok(ReadResponse {
            data: body.read_data(off, len)?,
            remaining: body.u32(f::DATA_REMAINING)?,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::vec;

    /// A READ request (MS-SMB2 2.2.19), written out by hand.
    #[test]
    fn read_request_bytes() {
        let mut out = vec![0u8; 64];
        ReadRequest {
            length: 0x1_0000,
            offset: 0x0203,
            file_id: FileId {
                persistent: 5,
                volatile: 6,
            },
            minimum: 1,
        }
        .emit(&mut out);
        #[rustfmt::skip]
        let want: [u8; 49] = [
            49, 0,                   // StructureSize
            0x50,                    // Padding
            0,                       // Flags
            0, 0, 1, 0,              // Length
            3, 2, 0, 0, 0, 0, 0, 0,  // Offset
            5, 0, 0, 0, 0, 0, 0, 0,  // FileId.Persistent
            6, 0, 0, 0, 0, 0, 0, 0,  // FileId.Volatile
            1, 0, 0, 0,              // MinimumCount
            0, 0, 0, 0,              // Channel
            0, 0, 0, 0,              // RemainingBytes
            0, 0,                    // ReadChannelInfoOffset
            0, 0,                    // ReadChannelInfoLength
            0,                       // Buffer
        ];
        assert_eq!(&out[64..], &want[..]);
    }

    /// A READ response (MS-SMB2 2.2.20), written out by hand.
    #[test]
    fn read_response_bytes() {
        let mut msg = vec![0u8; 64];
        #[rustfmt::skip]
        msg.extend_from_slice(&[
            17, 0,                   // StructureSize
            80,                      // DataOffset: 64 + 16
            0,                       // Reserved
            3, 0, 0, 0,              // DataLength
            7, 0, 0, 0,              // DataRemaining
            0, 0, 0, 0,              // Reserved2
            b'x', b'y', b'z',        // Buffer
        ]);
        let r = ReadResponse::parse(&msg).unwrap();
        assert_eq!(
            r,
            ReadResponse {
                data: b"xyz",
                remaining: 7,
            }
        );
        assert!(ReadResponse::parse(&msg[..msg.len() - 1]).is_err());
        msg[64] = 16;
        assert!(ReadResponse::parse(&msg).is_err());
    }
}
