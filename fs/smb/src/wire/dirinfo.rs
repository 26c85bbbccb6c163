//! Directory entry records returned by QUERY_DIRECTORY (MS-FSCC 2.4):
//! FileFullDirectoryInformation (class 2), FileIdBothDirectoryInformation
//! (class 37) and FileIdExtdDirectoryInformation (class 60).
//!
//! All three carry a 32-bit field after the name length that holds the
//! entry's EaSize — except on a reparse point in classes 2 and 37, where it
//! holds the reparse tag instead. [`DirInfo`] keeps the two apart so a
//! caller never mistakes a tag for an EA size.

use super::chain::{self, Rule};
use super::create::FileTimes;
use super::{from_utf16le, slice, u32_at, u64_at, Result, WireError};
use alloc::string::String;
use alloc::vec::Vec;

/// Field offsets, each relative to the start of its record, named as
/// MS-FSCC names them. Every field of a layout is listed, including those
/// the client does not read.
#[allow(dead_code)]
mod field {
    /// The fields all three records share, at the same offsets.
    pub mod common {
        pub const NEXT_ENTRY_OFFSET: usize = 0;
        pub const FILE_INDEX: usize = 4;
        /// CreationTime, LastAccessTime, LastWriteTime, ChangeTime.
        pub const TIMES: usize = 8;
        pub const END_OF_FILE: usize = 40;
        pub const ALLOCATION_SIZE: usize = 48;
        pub const FILE_ATTRIBUTES: usize = 56;
        pub const FILE_NAME_LENGTH: usize = 60;
        /// EaSize, or the reparse tag on a reparse point (classes 2, 37).
        pub const EA_SIZE: usize = 64;
    }

    /// FILE_FULL_DIR_INFORMATION (MS-FSCC FileFullDirectoryInformation).
    pub mod full_directory {
        /// The name, right after the fixed part.
        pub const FILE_NAME: usize = 68;
    }

    /// FILE_ID_BOTH_DIR_INFORMATION (MS-FSCC
    /// FileIdBothDirectoryInformation).
    pub mod id_both_directory {
        pub const SHORT_NAME_LENGTH: usize = 68;
        pub const RESERVED1: usize = 69;
        pub const SHORT_NAME: usize = 70;
        pub const RESERVED2: usize = 94;
        pub const FILE_ID: usize = 96;
        /// The name, right after the fixed part.
        pub const FILE_NAME: usize = 104;
    }

    /// FILE_ID_EXTD_DIR_INFORMATION (MS-FSCC
    /// FileIdExtdDirectoryInformation).
    pub mod id_extd_directory {
        pub const REPARSE_POINT_TAG: usize = 68;
        /// A 128-bit FileId; the client keeps its low 64 bits.
        pub const FILE_ID: usize = 72;
        /// The name, right after the fixed part.
        pub const FILE_NAME: usize = 88;
    }
}

/// Records after the first start 8-aligned (MS-FSCC: "each MUST be aligned
/// on an 8-byte boundary").
const RECORD_ALIGN: usize = 8;

/// Info classes.
pub mod class {
    pub const FULL_DIRECTORY: u8 = 2;
    pub const ID_BOTH_DIRECTORY: u8 = 37;
    pub const ID_EXTD_DIRECTORY: u8 = 60;
}

/// File attribute bits (MS-FSCC 2.6).
pub mod attr {
    pub const READONLY: u32 = 0x1;
    pub const HIDDEN: u32 = 0x2;
    pub const SYSTEM: u32 = 0x4;
    pub const DIRECTORY: u32 = 0x10;
    pub const ARCHIVE: u32 = 0x20;
    pub const NORMAL: u32 = 0x80;
    pub const REPARSE_POINT: u32 = 0x400;
}

/// One directory entry, as the filesystem layer uses it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DirInfo {
    pub name: String,
    pub attributes: u32,
    pub end_of_file: u64,
    pub allocation_size: u64,
    pub times: FileTimes,
    /// EaSize: `Some(0)` means "no EAs at all". `None` when the field held
    /// a reparse tag instead (classes 2 and 37 on a reparse point).
    pub ea_size: Option<u32>,
    /// Reparse tag, when the entry is a reparse point and the class says it.
    pub reparse_tag: Option<u32>,
    /// Server inode number (FileId); `None` for class 2.
    pub file_id: Option<u64>,
}

impl DirInfo {
    /// True for directories.
    pub fn is_dir(&self) -> bool {
        self.attributes & attr::DIRECTORY != 0
    }
}

/// Fixed part length of a record of `class`, or `None` if unsupported.
pub fn fixed_len(class: u8) -> Option<usize> {
    match class {
        class::FULL_DIRECTORY => Some(field::full_directory::FILE_NAME),
        class::ID_BOTH_DIRECTORY => Some(field::id_both_directory::FILE_NAME),
        class::ID_EXTD_DIRECTORY => Some(field::id_extd_directory::FILE_NAME),
        _ => None,
    }
}

/// Parses one output buffer of records of `class`, chained by their
/// NextEntryOffset: 8-aligned, at least the fixed part ([`chain`]).
pub fn parse(class: u8, buf: &[u8]) -> Result<Vec<DirInfo>> {
    use field::common as f;
    let fixed = fixed_len(class).ok_or(WireError::new("unsupported dir class"))?;
    let rule = Rule {
        next_at: f::NEXT_ENTRY_OFFSET,
        align: RECORD_ALIGN,
        min: fixed,
        max: usize::MAX,
        what: "bad NextEntryOffset",
    };
    let mut out = Vec::new();
    for entry in chain::walk(buf, rule) {
        let rec = entry?.bytes;
        slice(rec, 0, fixed)?;
        let times = FileTimes::parse(rec, f::TIMES)?;
        let end_of_file = u64_at(rec, f::END_OF_FILE)?;
        let allocation_size = u64_at(rec, f::ALLOCATION_SIZE)?;
        let attributes = u32_at(rec, f::FILE_ATTRIBUTES)?;
        let name_len = u32_at(rec, f::FILE_NAME_LENGTH)? as usize;
        let ea_or_tag = u32_at(rec, f::EA_SIZE)?;
        let name = from_utf16le(slice(rec, fixed, name_len)?)?;
        let reparse = attributes & attr::REPARSE_POINT != 0;
        let (ea_size, reparse_tag, file_id) = match class {
            class::ID_EXTD_DIRECTORY => {
                use field::id_extd_directory as x;
                let tag = u32_at(rec, x::REPARSE_POINT_TAG)?;
                (
                    Some(ea_or_tag),
                    reparse.then_some(tag),
                    Some(u64_at(rec, x::FILE_ID)?),
                )
            }
            _ => {
                let id = if class == class::ID_BOTH_DIRECTORY {
                    Some(u64_at(rec, field::id_both_directory::FILE_ID)?)
                } else {
                    None
                };
                if reparse {
                    (None, Some(ea_or_tag), id)
                } else {
                    (Some(ea_or_tag), None, id)
                }
            }
        };
        out.push(DirInfo {
            name,
            attributes,
            end_of_file,
            allocation_size,
            times,
            ea_size,
            reparse_tag,
            file_id,
        });
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::vec::Vec;

    /// The part every class shares (MS-FSCC FILE_FULL_DIR_INFORMATION,
    /// FILE_ID_BOTH_DIR_INFORMATION, FILE_ID_EXTD_DIR_INFORMATION): from
    /// NextEntryOffset through EaSize.
    #[rustfmt::skip]
    fn common(next: u32, attributes: u32, name_len: u32, ea: u32) -> Vec<u8> {
        let mut b = Vec::new();
        b.extend_from_slice(&next.to_le_bytes()); // NextEntryOffset
        b.extend_from_slice(&[0, 0, 0, 0]);       // FileIndex
        b.extend_from_slice(&[1, 0, 0, 0, 0, 0, 0, 0]); // CreationTime
        b.extend_from_slice(&[2, 0, 0, 0, 0, 0, 0, 0]); // LastAccessTime
        b.extend_from_slice(&[3, 0, 0, 0, 0, 0, 0, 0]); // LastWriteTime
        b.extend_from_slice(&[4, 0, 0, 0, 0, 0, 0, 0]); // ChangeTime
        b.extend_from_slice(&[5, 0, 0, 0, 0, 0, 0, 0]); // EndOfFile
        b.extend_from_slice(&[0, 0x10, 0, 0, 0, 0, 0, 0]); // AllocationSize
        b.extend_from_slice(&attributes.to_le_bytes()); // FileAttributes
        b.extend_from_slice(&name_len.to_le_bytes());   // FileNameLength
        b.extend_from_slice(&ea.to_le_bytes());         // EaSize / tag
        b
    }

    const TIMES: FileTimes = FileTimes {
        creation: 1,
        last_access: 2,
        last_write: 3,
        change: 4,
    };

    #[test]
    fn full_directory_bytes() {
        // Two records, the first padded to 8 bytes: 68 + 2 -> 72.
        let mut b = common(72, attr::ARCHIVE, 2, 6);
        b.extend_from_slice(b"f\0"); // FileName
        b.extend_from_slice(&[0, 0]);
        b.extend_from_slice(&common(0, attr::REPARSE_POINT, 2, 0xa000_001d));
        b.extend_from_slice(b"l\0");
        let l = parse(class::FULL_DIRECTORY, &b).unwrap();
        assert_eq!(
            l[0],
            DirInfo {
                name: "f".into(),
                attributes: attr::ARCHIVE,
                end_of_file: 5,
                allocation_size: 0x1000,
                times: TIMES,
                ea_size: Some(6),
                reparse_tag: None,
                file_id: None,
            }
        );
        assert_eq!(l[1].ea_size, None);
        assert_eq!(l[1].reparse_tag, Some(0xa000_001d));
        // A name that runs into the next record is refused (FileNameLength
        // 6 in a 72-byte record whose name begins at 68).
        let mut long = b.clone();
        long[60] = 6;
        assert!(parse(class::FULL_DIRECTORY, &long).is_err());
        // A NextEntryOffset inside the fixed part, or unaligned, is refused.
        for next in [8, 70] {
            b[0] = next;
            assert!(parse(class::FULL_DIRECTORY, &b).is_err(), "{next}");
        }
    }

    #[test]
    fn id_both_directory_bytes() {
        let mut b = common(0, attr::DIRECTORY, 4, 0);
        b.push(0); // ShortNameLength
        b.push(0); // Reserved1
        b.extend_from_slice(&[0; 24]); // ShortName
        b.extend_from_slice(&[0, 0]); // Reserved2
        b.extend_from_slice(&0x77u64.to_le_bytes()); // FileId
        b.extend_from_slice(b"d\0e\0"); // FileName
        assert_eq!(b.len(), 104 + 4);
        let l = parse(class::ID_BOTH_DIRECTORY, &b).unwrap();
        assert_eq!(l.len(), 1);
        assert_eq!(l[0].name, "de");
        assert!(l[0].is_dir());
        assert_eq!(l[0].file_id, Some(0x77));
        assert_eq!(l[0].ea_size, Some(0));
        assert!(parse(class::ID_BOTH_DIRECTORY, &b[..107]).is_err());
    }

    #[test]
    fn id_extd_directory_bytes() {
        let mut b = common(0, attr::REPARSE_POINT, 2, 9);
        b.extend_from_slice(&0xa000_000cu32.to_le_bytes()); // ReparsePointTag
        b.extend_from_slice(&0x55u64.to_le_bytes()); // FileId, low half
        b.extend_from_slice(&[0; 8]); // FileId, high half
        b.extend_from_slice(b"s\0"); // FileName
        assert_eq!(b.len(), 88 + 2);
        let l = parse(class::ID_EXTD_DIRECTORY, &b).unwrap();
        assert_eq!(l[0].ea_size, Some(9));
        assert_eq!(l[0].reparse_tag, Some(0xa000_000c));
        assert_eq!(l[0].file_id, Some(0x55));
        assert_eq!(fixed_len(1), None);
        assert!(parse(1, &b).is_err());
    }
}
