//! WRITE (MS-SMB2 2.2.21, 2.2.22).

use super::create::FileId;
use super::{put_u16, put_u32, put_u64, slice, u16_at, u32_at, Result, WireError};
use alloc::vec::Vec;

/// A WRITE request body; the data follows the fixed part (offset 64+48).
#[derive(Clone, Copy, Debug)]
pub struct WriteRequest<'a> {
    pub offset: u64,
    pub file_id: FileId,
    pub data: &'a [u8],
}

impl WriteRequest<'_> {
    /// Appends the body after a 64-byte header already in `out`.
    pub fn emit(&self, out: &mut Vec<u8>) {
        put_u16(out, 49);
        put_u16(out, 64 + 48); // DataOffset
        put_u32(out, self.data.len() as u32);
        put_u64(out, self.offset);
        self.file_id.emit(out);
        put_u32(out, 0); // Channel
        put_u32(out, 0); // RemainingBytes
        put_u16(out, 0); // WriteChannelInfoOffset
        put_u16(out, 0); // WriteChannelInfoLength
        put_u32(out, 0); // Flags
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
    let b = slice(msg, 64, 16)?;
    if u16_at(b, 0)? != 17 {
        return Err(WireError::new("write structure size"));
    }
    u32_at(b, 4)
}

#[cfg(test)]
mod tests {
    use super::*;

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
