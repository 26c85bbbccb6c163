//! File information classes read by QUERY_INFO for stat (MS-FSCC 2.4):
//! FileBasicInformation (4), FileStandardInformation (5) and
//! FileAllInformation (18), which begins with the two and adds the inode
//! number and EaSize.

use super::create::FileTimes;
use super::{slice, u32_at, u64_at, u8_at, Result};

/// Info classes.
pub mod class {
    pub const BASIC: u8 = 4;
    pub const STANDARD: u8 = 5;
    pub const ALL: u8 = 18;
}

/// What stat needs of a file.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct FileStat {
    pub times: FileTimes,
    pub attributes: u32,
    pub allocation_size: u64,
    pub end_of_file: u64,
    pub nlink: u32,
    pub delete_pending: bool,
    pub directory: bool,
    /// IndexNumber (FileAll only).
    pub file_id: Option<u64>,
    /// EaSize (FileAll only).
    pub ea_size: Option<u32>,
}

/// Parses FileBasicInformation (40 bytes) into `st`.
pub fn parse_basic(b: &[u8], st: &mut FileStat) -> Result<()> {
    slice(b, 0, 36)?;
    st.times = FileTimes::parse(b, 0)?;
    st.attributes = u32_at(b, 32)?;
    Ok(())
}

/// Parses FileStandardInformation (24 bytes) into `st`.
pub fn parse_standard(b: &[u8], st: &mut FileStat) -> Result<()> {
    st.allocation_size = u64_at(b, 0)?;
    st.end_of_file = u64_at(b, 8)?;
    st.nlink = u32_at(b, 16)?;
    st.delete_pending = u8_at(b, 20)? != 0;
    st.directory = u8_at(b, 21)? != 0;
    Ok(())
}

/// Parses FileAllInformation (the fixed part; the trailing name is ignored).
pub fn parse_all(b: &[u8]) -> Result<FileStat> {
    let mut st = FileStat::default();
    parse_basic(slice(b, 0, 40)?, &mut st)?;
    parse_standard(slice(b, 40, 24)?, &mut st)?;
    st.file_id = Some(u64_at(b, 64)?);
    st.ea_size = Some(u32_at(b, 72)?);
    Ok(st)
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::vec::Vec;

    /// FileAllInformation (MS-FSCC FILE_ALL_INFORMATION), written out by
    /// hand: Basic, Standard, Internal, EA, Access, Position, Mode,
    /// Alignment, then the name.
    #[test]
    fn all_information_bytes() {
        let mut b = Vec::new();
        #[rustfmt::skip]
        b.extend_from_slice(&[
            // FileBasicInformation
            1, 0, 0, 0, 0, 0, 0, 0,  // CreationTime
            2, 0, 0, 0, 0, 0, 0, 0,  // LastAccessTime
            3, 0, 0, 0, 0, 0, 0, 0,  // LastWriteTime
            4, 0, 0, 0, 0, 0, 0, 0,  // ChangeTime
            0x10, 0, 0, 0,           // FileAttributes
            0, 0, 0, 0,              // Reserved
            // FileStandardInformation
            0, 0x10, 0, 0, 0, 0, 0, 0, // AllocationSize
            0x99, 0, 0, 0, 0, 0, 0, 0, // EndOfFile
            3, 0, 0, 0,              // NumberOfLinks
            1,                       // DeletePending
            1,                       // Directory
            0, 0,                    // Reserved
            // FileInternalInformation
            0x78, 0x56, 0x34, 0x12, 0, 0, 0, 0, // IndexNumber
            // FileEaInformation
            40, 0, 0, 0,             // EaSize
            // FileAccessInformation
            0xff, 0x01, 0x1f, 0,     // AccessFlags
            // FilePositionInformation
            0, 0, 0, 0, 0, 0, 0, 0,  // CurrentByteOffset
            // FileModeInformation
            0, 0, 0, 0,              // Mode
            // FileAlignmentInformation
            0, 0, 0, 0,              // AlignmentRequirement
            // FileNameInformation
            2, 0, 0, 0,              // FileNameLength
            b'd', 0,                 // FileName
        ]);
        let st = parse_all(&b).unwrap();
        assert_eq!(
            st,
            FileStat {
                times: FileTimes {
                    creation: 1,
                    last_access: 2,
                    last_write: 3,
                    change: 4,
                },
                attributes: 0x10,
                allocation_size: 0x1000,
                end_of_file: 0x99,
                nlink: 3,
                delete_pending: true,
                directory: true,
                file_id: Some(0x1234_5678),
                ea_size: Some(40),
            }
        );
        // FileBasicInformation and FileStandardInformation alone.
        let mut one = FileStat::default();
        parse_basic(&b[..40], &mut one).unwrap();
        parse_standard(&b[40..64], &mut one).unwrap();
        assert_eq!(one.attributes, 0x10);
        assert_eq!(one.nlink, 3);
        assert!(parse_basic(&b[..35], &mut one).is_err());
        assert!(parse_standard(&b[40..61], &mut one).is_err());
        assert!(parse_all(&b[..75]).is_err());
    }
}
