//! SET_INFO (MS-SMB2 2.2.39, 2.2.40) and the file information classes the
//! client sets (MS-FSCC 2.4): FileRenameInformation (10, the SMB2 form),
//! FileDispositionInformation (13, delete on close) and
//! FileEndOfFileInformation (20, truncate/extend).

use super::create::FileId;
use super::header::HEADER_LEN;
use super::reply::{Reply, ReplyBody};
use super::{put_fixed, set_u16, set_u32, set_u64, utf16le, Result};
use alloc::vec::Vec;

/// Field offsets, each relative to the start of its structure (after the
/// header for a body), named as MS-SMB2 and MS-FSCC name them. Every field
/// of a layout is listed, including those the client leaves zero. The
/// SET_INFO Response (MS-SMB2 2.2.40) is its StructureSize alone, which the
/// reply gate reads ([`crate::wire::reply::Reply::SetInfo`]).
#[allow(dead_code)]
mod field {
    /// SMB2 SET_INFO Request (MS-SMB2 2.2.39).
    pub mod request {
        pub const STRUCTURE_SIZE: usize = 0;
        pub const INFO_TYPE: usize = 2;
        pub const FILE_INFO_CLASS: usize = 3;
        pub const BUFFER_LENGTH: usize = 4;
        pub const BUFFER_OFFSET: usize = 8;
        pub const RESERVED: usize = 10;
        pub const ADDITIONAL_INFORMATION: usize = 12;
        pub const FILE_ID: usize = 16;
        /// The variable part (the information), after the fixed part.
        pub const BUFFER: usize = 32;
        /// Length of the fixed part.
        pub const LEN: usize = BUFFER;
    }

    /// FILE_RENAME_INFORMATION_TYPE_2 (MS-FSCC FileRenameInformation, the
    /// form SMB2 uses: RootDirectory is 8 bytes).
    pub mod rename {
        pub const REPLACE_IF_EXISTS: usize = 0;
        pub const RESERVED: usize = 1;
        pub const ROOT_DIRECTORY: usize = 8;
        pub const FILE_NAME_LENGTH: usize = 16;
        pub const FILE_NAME: usize = 20;
        /// Length of the fixed part.
        pub const LEN: usize = FILE_NAME;
    }
}

/// StructureSize of the SET_INFO request (MS-SMB2 2.2.39): the 32-byte
/// fixed part plus one byte of Buffer.
const REQUEST_SIZE: u16 = 33;

/// Info classes set with SET_INFO (info type 1, file).
pub mod class {
    pub const RENAME: u8 = 10;
    pub const DISPOSITION: u8 = 13;
    pub const END_OF_FILE: u8 = 20;
}

/// A SET_INFO request body.
#[derive(Clone, Copy, Debug)]
pub struct SetInfoRequest<'a> {
    pub info_type: u8,
    pub class: u8,
    pub file_id: FileId,
    pub buffer: &'a [u8],
}

impl SetInfoRequest<'_> {
    /// Appends the body after a [`HEADER_LEN`]-byte header already in `out`.
    pub fn emit(&self, out: &mut Vec<u8>) {
        use field::request as f;
        let b = put_fixed(out, f::LEN);
        set_u16(b, f::STRUCTURE_SIZE, REQUEST_SIZE);
        b[f::INFO_TYPE] = self.info_type;
        b[f::FILE_INFO_CLASS] = self.class;
        set_u32(b, f::BUFFER_LENGTH, self.buffer.len() as u32);
        set_u16(b, f::BUFFER_OFFSET, (HEADER_LEN + f::BUFFER) as u16);
        set_u32(b, f::ADDITIONAL_INFORMATION, 0);
        self.file_id.write(b, f::FILE_ID);
        if self.buffer.is_empty() {
            out.push(0);
        } else {
            out.extend_from_slice(self.buffer);
        }
    }
}

/// FileRenameInformation for SMB2: the new share-relative name (backslash
/// separators), replacing an existing target when `replace` is set.
pub fn rename_info(new_path: &str, replace: bool) -> Vec<u8> {
    use field::rename as f;
    let name = utf16le(new_path);
    let mut out = Vec::with_capacity(f::LEN + name.len());
    let b = put_fixed(&mut out, f::LEN);
    b[f::REPLACE_IF_EXISTS] = replace as u8;
    set_u64(b, f::ROOT_DIRECTORY, 0);
    set_u32(b, f::FILE_NAME_LENGTH, name.len() as u32);
    out.extend_from_slice(&name);
    out
}

/// FileDispositionInformation (one byte, DeletePending): delete the file
/// when the last handle closes.
pub fn disposition_info(delete: bool) -> Vec<u8> {
    alloc::vec![delete as u8]
}

/// FileEndOfFileInformation (one little-endian u64, EndOfFile): the new
/// size.
pub fn end_of_file_info(size: u64) -> Vec<u8> {
    size.to_le_bytes().to_vec()
}

/// Checks a SET_INFO response body (StructureSize 2).
pub fn parse_set_info(msg: &[u8]) -> Result<()> {
    ReplyBody::new_checked(msg, Reply::SetInfo).map(|_| ())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::{u16_at, u32_at};

    #[test]
    fn set_info_layout() {
        let info = rename_info("a\\b", true);
        assert_eq!(info.len(), 20 + 6);
        assert_eq!(info[0], 1);
        assert_eq!(u32_at(&info, 16).unwrap(), 6);
        let mut out = alloc::vec![0u8; 64];
        SetInfoRequest {
            info_type: 1,
            class: class::RENAME,
            file_id: FileId::RELATED,
            buffer: &info,
        }
        .emit(&mut out);
        assert_eq!(u16_at(&out, 64).unwrap(), 33);
        assert_eq!(out[66], 1);
        assert_eq!(out[67], 10);
        assert_eq!(u32_at(&out, 68).unwrap(), 26);
        assert_eq!(u16_at(&out, 72).unwrap(), 96);
        assert_eq!(&out[96..], &info[..]);
        assert_eq!(end_of_file_info(5), [5, 0, 0, 0, 0, 0, 0, 0]);
        assert_eq!(disposition_info(true), [1]);
        let mut reply = alloc::vec![0u8; 64];
        reply.extend_from_slice(&[2, 0]);
        assert_eq!(parse_set_info(&reply), Ok(()));
        assert!(parse_set_info(&reply[..65]).is_err());
    }

    /// A SET_INFO request carrying FileEndOfFileInformation (MS-SMB2
    /// 2.2.39; MS-FSCC FILE_END_OF_FILE_INFORMATION) and a rename buffer
    /// (MS-FSCC FILE_RENAME_INFORMATION_TYPE_2), by hand.
    #[test]
    fn set_info_bytes() {
        let eof = end_of_file_info(0x0102_0304);
        let mut out = alloc::vec![0u8; 64];
        SetInfoRequest {
            info_type: 1,
            class: class::END_OF_FILE,
            file_id: FileId {
                persistent: 3,
                volatile: 4,
            },
            buffer: &eof,
        }
        .emit(&mut out);
        #[rustfmt::skip]
        let want: [u8; 40] = [
            33, 0,                   // StructureSize
            1,                       // InfoType: file
            20,                      // FileInfoClass: FileEndOfFileInformation
            8, 0, 0, 0,              // BufferLength
            96, 0,                   // BufferOffset: 64 + 32
            0, 0,                    // Reserved
            0, 0, 0, 0,              // AdditionalInformation
            3, 0, 0, 0, 0, 0, 0, 0,  // FileId.Persistent
            4, 0, 0, 0, 0, 0, 0, 0,  // FileId.Volatile
            4, 3, 2, 1, 0, 0, 0, 0,  // Buffer: EndOfFile
        ];
        assert_eq!(&out[64..], &want[..]);

        #[rustfmt::skip]
        let rename: [u8; 22] = [
            0,                       // ReplaceIfExists
            0, 0, 0, 0, 0, 0, 0,     // Reserved
            0, 0, 0, 0, 0, 0, 0, 0,  // RootDirectory
            2, 0, 0, 0,              // FileNameLength
            b'z', 0,                 // FileName
        ];
        assert_eq!(rename_info("z", false), rename);
        assert_eq!(disposition_info(false), [0]);
    }
}
