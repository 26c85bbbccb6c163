//! SET_INFO (MS-SMB2 2.2.39, 2.2.40) and the file information classes the
//! client sets (MS-FSCC 2.4): FileRenameInformation (10, the SMB2 form),
//! FileDispositionInformation (13, delete on close) and
//! FileEndOfFileInformation (20, truncate/extend).

use super::create::FileId;
use super::{put_u16, put_u32, put_u64, slice, u16_at, utf16le, Result, WireError};
use alloc::vec::Vec;

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
    /// Appends the body after a 64-byte header already in `out`.
    pub fn emit(&self, out: &mut Vec<u8>) {
        put_u16(out, 33);
        out.push(self.info_type);
        out.push(self.class);
        put_u32(out, self.buffer.len() as u32);
        put_u16(out, 64 + 32); // BufferOffset
        put_u16(out, 0); // Reserved
        put_u32(out, 0); // AdditionalInformation
        self.file_id.emit(out);
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
    let name = utf16le(new_path);
    let mut b = Vec::with_capacity(20 + name.len());
    b.push(replace as u8);
    b.extend_from_slice(&[0u8; 7]);
    put_u64(&mut b, 0); // RootDirectory
    put_u32(&mut b, name.len() as u32);
    b.extend_from_slice(&name);
    b
}

/// FileDispositionInformation: delete the file when the last handle closes.
pub fn disposition_info(delete: bool) -> Vec<u8> {
    alloc::vec![delete as u8]
}

/// FileEndOfFileInformation: the new size.
pub fn end_of_file_info(size: u64) -> Vec<u8> {
    size.to_le_bytes().to_vec()
}

/// Checks a SET_INFO response body (StructureSize 2).
pub fn parse_set_info(msg: &[u8]) -> Result<()> {
    let b = slice(msg, 64, 2)?;
    if u16_at(b, 0)? != 2 {
        return Err(WireError::new("set_info structure size"));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::smb::wire::u32_at;

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
