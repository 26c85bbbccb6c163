//! WRITE (MS-SMB2 2.2.21, 2.2.22).

use super::create::FileId;
use super::header::HEADER_LEN;
use super::reply::{Reply, ReplyBody};
use super::{put_fixed, set_u16, set_u32, set_u64, Result};
use alloc::vec::Vec;

/// Field offsets, each relative to the start of its body (after the
/// header), named as MS-SMB2 names them. Every field of a layout is listed,
/// including those the client leaves zero or does not read.
#[allow(dead_code)]
mod field {
    /// SMB2 WRITE Request (MS-SMB2 2.2.21).
    pub mod request {
        pub const STRUCTURE_SIZE: usize = 0;
        pub const DATA_OFFSET: usize = 2;
        pub const LENGTH: usize = 4;
        pub const OFFSET: usize = 8;
        pub const FILE_ID: usize = 16;
        pub const CHANNEL: usize = 32;
        pub const REMAINING_BYTES: usize = 36;
        pub const WRITE_CHANNEL_INFO_OFFSET: usize = 40;
        pub const WRITE_CHANNEL_INFO_LENGTH: usize = 42;
        pub const FLAGS: usize = 44;
        /// The variable part (the data), right after the fixed part.
        pub const BUFFER: usize = 48;
        /// Length of the fixed part.
        pub const LEN: usize = BUFFER;
    }

    /// SMB2 WRITE Response (MS-SMB2 2.2.22); its StructureSize and length
    /// are the reply gate's ([`crate::wire::reply::Reply::Write`]).
    pub mod response {
        pub const STRUCTURE_SIZE: usize = 0;
        pub const RESERVED: usize = 2;
        pub const COUNT: usize = 4;
        pub const REMAINING: usize = 8;
        pub const WRITE_CHANNEL_INFO_OFFSET: usize = 12;
        pub const WRITE_CHANNEL_INFO_LENGTH: usize = 14;
    }
}

/// StructureSize of the WRITE request (MS-SMB2 2.2.21): the 48-byte fixed
/// part plus one byte of Buffer.
const REQUEST_SIZE: u16 = 49;

/// A WRITE request body; the data follows the fixed part (DataOffset
/// [`HEADER_LEN`] + 48).
#[derive(Clone, Copy, Debug)]
pub struct WriteRequest<'a> {
    pub offset: u64,
    pub file_id: FileId,
    pub data: &'a [u8],
}

impl WriteRequest<'_> {
    /// Appends the body after a [`HEADER_LEN`]-byte header already in `out`.
    pub fn emit(&self, out: &mut Vec<u8>) {
        use field::request as f;
        let b = put_fixed(out, f::LEN);
        set_u16(b, f::STRUCTURE_SIZE, REQUEST_SIZE);
        set_u16(b, f::DATA_OFFSET, (HEADER_LEN + f::BUFFER) as u16);
        set_u32(b, f::LENGTH, self.data.len() as u32);
        set_u64(b, f::OFFSET, self.offset);
        self.file_id.write(b, f::FILE_ID);
        set_u32(b, f::CHANNEL, 0); // none
        set_u32(b, f::REMAINING_BYTES, 0);
        set_u16(b, f::WRITE_CHANNEL_INFO_OFFSET, 0);
        set_u16(b, f::WRITE_CHANNEL_INFO_LENGTH, 0);
        set_u32(b, f::FLAGS, 0);
        if self.data.is_empty() {
            // The variable part may not be empty.
            out.push(0);
        } else {
            out.extend_from_slice(self.data);
        }
    }
}

/// Bytes written, from a whole WRITE response message.
pub fn parse_write(msg: &[u8]) -> Result<u32> {
    use field::response as f;
    ReplyBody::new_checked(msg, Reply::Write)?.u32(f::COUNT)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::{u16_at, u32_at};

    #[test]
    fn write_request_layout() {
        let mut out = alloc::vec![0u8; 64];
        WriteRequest {
            offset: 0x1122,
            file_id: FileId {
                persistent: 1,
                volatile: 2,
            },
            data: b"abc",
        }
        .emit(&mut out);
        assert_eq!(out.len(), 64 + 48 + 3);
        assert_eq!(u16_at(&out, 64).unwrap(), 49);
        assert_eq!(u16_at(&out, 66).unwrap(), 112);
        assert_eq!(u32_at(&out, 68).unwrap(), 3);
        assert_eq!(&out[112..], b"abc");
        let mut reply = alloc::vec![0u8; 64];
        reply.extend_from_slice(&[17, 0, 0, 0, 3, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0]);
        assert_eq!(parse_write(&reply), Ok(3));
        reply[64] = 9;
        assert!(parse_write(&reply).is_err());
        assert!(parse_write(&reply[..70]).is_err());
    }

    /// A WRITE request and response (MS-SMB2 2.2.21, 2.2.22), by hand.
    #[test]
    fn write_bytes() {
        let mut out = alloc::vec![0u8; 64];
        WriteRequest {
            offset: 0x0a0b,
            file_id: FileId {
                persistent: 7,
                volatile: 8,
            },
            data: b"hi",
        }
        .emit(&mut out);
        #[rustfmt::skip]
        let want: [u8; 50] = [
            49, 0,                   // StructureSize
            112, 0,                  // DataOffset: 64 + 48
            2, 0, 0, 0,              // Length
            0x0b, 0x0a, 0, 0, 0, 0, 0, 0, // Offset
            7, 0, 0, 0, 0, 0, 0, 0,  // FileId.Persistent
            8, 0, 0, 0, 0, 0, 0, 0,  // FileId.Volatile
            0, 0, 0, 0,              // Channel
            0, 0, 0, 0,              // RemainingBytes
            0, 0,                    // WriteChannelInfoOffset
            0, 0,                    // WriteChannelInfoLength
            0, 0, 0, 0,              // Flags
            b'h', b'i',              // Buffer
        ];
        assert_eq!(&out[64..], &want[..]);
        // No data: one zero byte of Buffer, Length 0.
        let mut empty = alloc::vec![0u8; 64];
        WriteRequest {
            offset: 0,
            file_id: FileId::default(),
            data: b"",
        }
        .emit(&mut empty);
        assert_eq!(empty.len(), 64 + 49);
        assert_eq!(&empty[68..72], &[0, 0, 0, 0]);

        let mut reply = alloc::vec![0u8; 64];
        #[rustfmt::skip]
        reply.extend_from_slice(&[
            17, 0,                   // StructureSize
            0, 0,                    // Reserved
            0x34, 0x12, 0, 0,        // Count
            0, 0, 0, 0,              // Remaining
            0, 0,                    // WriteChannelInfoOffset
            0, 0,                    // WriteChannelInfoLength
        ]);
        assert_eq!(parse_write(&reply), Ok(0x1234));
    }
}
