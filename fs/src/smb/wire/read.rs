//! READ (MS-SMB2 2.2.19, 2.2.20).

use super::create::FileId;
use super::{put_u16, put_u32, put_u64, region, slice, u16_at, u32_at, u8_at, Result, WireError};
use alloc::vec::Vec;

/// A READ request body.
#[derive(Clone, Copy, Debug)]
pub struct ReadRequest {
    pub length: u32,
    pub offset: u64,
    pub file_id: FileId,
    pub minimum: u32,
}

impl ReadRequest {
    /// Appends the body after a 64-byte header already in `out`.
    pub fn emit(&self, out: &mut Vec<u8>) {
        put_u16(out, 49);
        out.push(0x50); // Padding: where the data should start in the reply
        out.push(0); // Flags
        put_u32(out, self.length);
        put_u64(out, self.offset);
        self.file_id.emit(out);
        put_u32(out, self.minimum);
        put_u32(out, 0); // Channel
        put_u32(out, 0); // RemainingBytes
        put_u16(out, 0);
        put_u16(out, 0);
        out.push(0);
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
        let b = slice(msg, 64, 16)?;
        if u16_at(b, 0)? != 17 {
            return Err(WireError::new("read structure size"));
        }
        let off = u8_at(b, 2)? as usize;
        let len = u32_at(b, 4)? as usize;
        Ok(ReadResponse {
            data: region(msg, off, len)?,
            remaining: u32_at(b, 8)?,
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
