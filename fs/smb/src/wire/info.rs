//! File information classes read by QUERY_INFO for stat (MS-FSCC 2.4):
//! FileBasicInformation (4), FileStandardInformation (5) and
//! FileAllInformation (18), which begins with the two and adds the inode
//! number and EaSize.

use super::create::FileTimes;
use super::{slice, u32_at, u64_at, u8_at, Result};

/// Field offsets, each relative to the start of its structure, named as
/// MS-FSCC names them. Every field of a layout is listed, including those
/// the client does not read.
#[allow(dead_code)]
mod field {
    /// FILE_BASIC_INFORMATION (MS-FSCC FileBasicInformation).
    pub mod basic {
        /// CreationTime, LastAccessTime, LastWriteTime, ChangeTime.
        pub const TIMES: usize = 0;
        pub const FILE_ATTRIBUTES: usize = 32;
        pub const RESERVED: usize = 36;
        /// Length of the structure.
        pub const LEN: usize = 40;
    }

    /// FILE_STANDARD_INFORMATION (MS-FSCC FileStandardInformation).
    pub mod standard {
        pub const ALLOCATION_SIZE: usize = 0;
        pub const END_OF_FILE: usize = 8;
        pub const NUMBER_OF_LINKS: usize = 16;
        pub const DELETE_PENDING: usize = 20;
        pub const DIRECTORY: usize = 21;
        pub const RESERVED: usize = 22;
        /// Length of the structure.
        pub const LEN: usize = 24;
    }

    /// FILE_ALL_INFORMATION (MS-FSCC FileAllInformation): one structure of
    /// each class after the other.
    pub mod all {
        pub const BASIC_INFORMATION: usize = 0;
        pub const STANDARD_INFORMATION: usize = 40;
        /// FileInternalInformation: IndexNumber (8 bytes).
        pub const INTERNAL_INFORMATION: usize = 64;
        /// FileEaInformation: EaSize (4 bytes).
        pub const EA_INFORMATION: usize = 72;
        pub const ACCESS_INFORMATION: usize = 76;
        pub const POSITION_INFORMATION: usize = 80;
        pub const MODE_INFORMATION: usize = 88;
        pub const ALIGNMENT_INFORMATION: usize = 92;
        pub const NAME_INFORMATION: usize = 96;
    }

    /// FILE_INTERNAL_INFORMATION (MS-FSCC FileInternalInformation).
    pub mod internal {
        pub const INDEX_NUMBER: usize = 0;
    }

    /// FILE_EA_INFORMATION (MS-FSCC FileEaInformation).
    pub mod ea {
        pub const EA_SIZE: usize = 0;
    }
}

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

/// Parses FileBasicInformation (40 bytes) into `st`; the trailing Reserved
/// field may be missing.
pub fn parse_basic(b: &[u8], st: &mut FileStat) -> Result<()> {
    use field::basic as f;
    slice(b, 0, f::RESERVED)?;
    st.times = FileTimes::parse(b, f::TIMES)?;
    st.attributes = u32_at(b, f::FILE_ATTRIBUTES)?;
    Ok(())
}

/// Parses FileStandardInformation (24 bytes) into `st`.
pub fn parse_standard(b: &[u8], st: &mut FileStat) -> Result<()> {
    use field::standard as f;
    st.allocation_size = u64_at(b, f::ALLOCATION_SIZE)?;
    st.end_of_file = u64_at(b, f::END_OF_FILE)?;
    st.nlink = u32_at(b, f::NUMBER_OF_LINKS)?;
    st.delete_pending = u8_at(b, f::DELETE_PENDING)? != 0;
    st.directory = u8_at(b, f::DIRECTORY)? != 0;
    Ok(())
}

/// Parses FileAllInformation (the fixed part; the trailing name is ignored).
pub fn parse_all(b: &[u8]) -> Result<FileStat> {
    use field::all as f;
    let mut st = FileStat::default();
    parse_basic(slice(b, f::BASIC_INFORMATION, field::basic::LEN)?, &mut st)?;
    parse_standard(
        slice(b, f::STANDARD_INFORMATION, field::standard::LEN)?,
        &mut st,
    )?;
    st.file_id = Some(u64_at(
        b,
        f::INTERNAL_INFORMATION + field::internal::INDEX_NUMBER,
    )?);
    st.ea_size = Some(u32_at(b, f::EA_INFORMATION + field::ea::EA_SIZE)?);
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
