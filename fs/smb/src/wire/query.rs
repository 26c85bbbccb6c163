//! QUERY_DIRECTORY (MS-SMB2 2.2.33, 2.2.34) and QUERY_INFO (2.2.37, 2.2.38).
//! Both replies carry one output buffer; [`OutputResponse`] parses either.
//! The buffers' contents are decoded in [`super::dirinfo`], [`super::info`]
//! and [`super::ea`].

use super::create::FileId;
use super::header::HEADER_LEN;
use super::reply::{Reply, ReplyBody};
use super::Result;
use super::{put_fixed, set_u16, set_u32, utf16le};
use alloc::vec::Vec;

/// Field offsets, each relative to the start of its body (after the
/// header), named as MS-SMB2 names them. Every field of a layout is listed,
/// including those the client leaves zero or does not read.
#[allow(dead_code)]
mod field {
    /// SMB2 QUERY_DIRECTORY Request (MS-SMB2 2.2.33).
    pub mod query_directory_request {
        pub const STRUCTURE_SIZE: usize = 0;
        pub const FILE_INFORMATION_CLASS: usize = 2;
        pub const FLAGS: usize = 3;
        pub const FILE_INDEX: usize = 4;
        pub const FILE_ID: usize = 8;
        pub const FILE_NAME_OFFSET: usize = 24;
        pub const FILE_NAME_LENGTH: usize = 26;
        pub const OUTPUT_BUFFER_LENGTH: usize = 28;
        /// The variable part (the search pattern), after the fixed part.
        pub const BUFFER: usize = 32;
        /// Length of the fixed part.
        pub const LEN: usize = BUFFER;
    }

    /// SMB2 QUERY_INFO Request (MS-SMB2 2.2.37).
    pub mod query_info_request {
        pub const STRUCTURE_SIZE: usize = 0;
        pub const INFO_TYPE: usize = 2;
        pub const FILE_INFO_CLASS: usize = 3;
        pub const OUTPUT_BUFFER_LENGTH: usize = 4;
        pub const INPUT_BUFFER_OFFSET: usize = 8;
        pub const RESERVED: usize = 10;
        pub const INPUT_BUFFER_LENGTH: usize = 12;
        pub const ADDITIONAL_INFORMATION: usize = 16;
        pub const FLAGS: usize = 20;
        pub const FILE_ID: usize = 24;
        /// The variable part (the input buffer), after the fixed part.
        pub const BUFFER: usize = 40;
        /// Length of the fixed part.
        pub const LEN: usize = BUFFER;
    }

    /// SMB2 QUERY_DIRECTORY Response (MS-SMB2 2.2.34) and SMB2 QUERY_INFO
    /// Response (2.2.38): the same layout; its StructureSize and length are
    /// the reply gate's ([`crate::wire::reply::Reply::QueryOutput`]).
    pub mod output_response {
        pub const STRUCTURE_SIZE: usize = 0;
        pub const OUTPUT_BUFFER_OFFSET: usize = 2;
        pub const OUTPUT_BUFFER_LENGTH: usize = 4;
    }
}

/// StructureSize of the QUERY_DIRECTORY request (MS-SMB2 2.2.33): the
/// 32-byte fixed part plus one byte of Buffer.
const QUERY_DIRECTORY_REQUEST_SIZE: u16 = 33;
/// StructureSize of the QUERY_INFO request (MS-SMB2 2.2.37): the 40-byte
/// fixed part plus one byte of Buffer.
const QUERY_INFO_REQUEST_SIZE: u16 = 41;

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
    /// Appends the body after a [`HEADER_LEN`]-byte header already in `out`.
    pub fn emit(&self, out: &mut Vec<u8>) {
        use field::query_directory_request as f;
        let pat = utf16le(self.pattern);
        let b = put_fixed(out, f::LEN);
        set_u16(b, f::STRUCTURE_SIZE, QUERY_DIRECTORY_REQUEST_SIZE);
        b[f::FILE_INFORMATION_CLASS] = self.class;
        b[f::FLAGS] = self.flags;
        set_u32(b, f::FILE_INDEX, 0);
        self.file_id.write(b, f::FILE_ID);
        set_u16(b, f::FILE_NAME_OFFSET, (HEADER_LEN + f::BUFFER) as u16);
        set_u16(b, f::FILE_NAME_LENGTH, pat.len() as u16);
        set_u32(b, f::OUTPUT_BUFFER_LENGTH, self.output_len);
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
    /// Appends the body after a [`HEADER_LEN`]-byte header already in `out`.
    pub fn emit(&self, out: &mut Vec<u8>) {
        use field::query_info_request as f;
        let b = put_fixed(out, f::LEN);
        set_u16(b, f::STRUCTURE_SIZE, QUERY_INFO_REQUEST_SIZE);
        b[f::INFO_TYPE] = self.info_type;
        b[f::FILE_INFO_CLASS] = self.class;
        set_u32(b, f::OUTPUT_BUFFER_LENGTH, self.output_len);
        // No input: offset 0, not one pointing at the pad byte.
        let input_offset = if self.input.is_empty() {
            0
        } else {
            (HEADER_LEN + f::BUFFER) as u16
        };
        set_u16(b, f::INPUT_BUFFER_OFFSET, input_offset);
        set_u32(b, f::INPUT_BUFFER_LENGTH, self.input.len() as u32);
        set_u32(b, f::ADDITIONAL_INFORMATION, self.additional_info);
        set_u32(b, f::FLAGS, self.flags);
        self.file_id.write(b, f::FILE_ID);
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
        use field::output_response as f;
        let body = ReplyBody::new_checked(msg, Reply::QueryOutput)?;
        let off = body.u16(f::OUTPUT_BUFFER_OFFSET)? as usize;
        let len = body.u32(f::OUTPUT_BUFFER_LENGTH)? as usize;
        Ok(OutputResponse {
            data: body.area(off, len)?,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::vec;

    /// A QUERY_DIRECTORY request (MS-SMB2 2.2.33), written out by hand.
    #[test]
    fn query_directory_request_bytes() {
        let mut out = vec![0u8; 64];
        QueryDirectoryRequest {
            class: 37,
            flags: qd_flags::RESTART_SCANS,
            file_id: FileId::RELATED,
            pattern: "*",
            output_len: 0x1_0000,
        }
        .emit(&mut out);
        #[rustfmt::skip]
        let want: [u8; 34] = [
            33, 0,                   // StructureSize
            37,                      // FileInformationClass
            1,                       // Flags: RESTART_SCANS
            0, 0, 0, 0,              // FileIndex
            0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, // FileId.Persistent
            0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, // FileId.Volatile
            96, 0,                   // FileNameOffset: 64 + 32
            2, 0,                    // FileNameLength
            0, 0, 1, 0,              // OutputBufferLength
            b'*', 0,                 // Buffer: the pattern, UTF-16LE
        ];
        assert_eq!(&out[64..], &want[..]);
        // No pattern: a zero byte of Buffer.
        let mut none = vec![0u8; 64];
        QueryDirectoryRequest {
            class: 2,
            flags: 0,
            file_id: FileId::default(),
            pattern: "",
            output_len: 0,
        }
        .emit(&mut none);
        assert_eq!(none.len(), 64 + 33);
        assert_eq!(&none[64 + 26..64 + 28], &[0, 0]);
    }

    /// QUERY_INFO requests with and without an input buffer (MS-SMB2
    /// 2.2.37), written out by hand.
    #[test]
    fn query_info_request_bytes() {
        let mut out = vec![0u8; 64];
        QueryInfoRequest {
            info_type: info_type::FILE,
            class: 15,
            output_len: 0x800,
            input: b"EA",
            additional_info: 0,
            flags: 0,
            file_id: FileId {
                persistent: 1,
                volatile: 2,
            },
        }
        .emit(&mut out);
        #[rustfmt::skip]
        let want: [u8; 42] = [
            41, 0,                   // StructureSize
            1,                       // InfoType: file
            15,                      // FileInfoClass
            0, 8, 0, 0,              // OutputBufferLength
            104, 0,                  // InputBufferOffset: 64 + 40
            0, 0,                    // Reserved
            2, 0, 0, 0,              // InputBufferLength
            0, 0, 0, 0,              // AdditionalInformation
            0, 0, 0, 0,              // Flags
            1, 0, 0, 0, 0, 0, 0, 0,  // FileId.Persistent
            2, 0, 0, 0, 0, 0, 0, 0,  // FileId.Volatile
            b'E', b'A',              // Buffer: the input
        ];
        assert_eq!(&out[64..], &want[..]);

        let mut out = vec![0u8; 64];
        QueryInfoRequest {
            info_type: info_type::FILESYSTEM,
            class: 7,
            output_len: 0x18,
            input: b"",
            additional_info: 0x11,
            flags: 0x22,
            file_id: FileId::RELATED,
        }
        .emit(&mut out);
        #[rustfmt::skip]
        let want: [u8; 41] = [
            41, 0,                   // StructureSize
            2,                       // InfoType: filesystem
            7,                       // FileInfoClass
            0x18, 0, 0, 0,           // OutputBufferLength
            0, 0,                    // InputBufferOffset: none
            0, 0,                    // Reserved
            0, 0, 0, 0,              // InputBufferLength
            0x11, 0, 0, 0,           // AdditionalInformation
            0x22, 0, 0, 0,           // Flags
            0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, // FileId.Persistent
            0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, // FileId.Volatile
            0,                       // Buffer
        ];
        assert_eq!(&out[64..], &want[..]);
    }

    /// A QUERY_INFO / QUERY_DIRECTORY response (MS-SMB2 2.2.38, 2.2.34),
    /// written out by hand.
    #[test]
    fn output_response_bytes() {
        let mut msg = vec![0u8; 64];
        #[rustfmt::skip]
        msg.extend_from_slice(&[
            9, 0,                    // StructureSize
            72, 0,                   // OutputBufferOffset: 64 + 8
            4, 0, 0, 0,              // OutputBufferLength
            1, 2, 3, 4,              // Buffer
        ]);
        assert_eq!(OutputResponse::parse(&msg).unwrap().data, &[1, 2, 3, 4]);
        assert!(OutputResponse::parse(&msg[..msg.len() - 1]).is_err());
        msg[64] = 8;
        assert!(OutputResponse::parse(&msg).is_err());
    }
}
