//! CREATE (MS-SMB2 2.2.13, 2.2.14) and CLOSE (2.2.15, 2.2.16).

use super::{put_u16, put_u32, put_u64, slice, u16_at, u32_at, u64_at, u8_at, utf16le};
use super::{Result, WireError};
use alloc::vec::Vec;

/// An open's file id (persistent, volatile).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub struct FileId {
    pub persistent: u64,
    pub volatile: u64,
}

impl FileId {
    /// The id used by related compound members: "the file the previous
    /// request opened".
    pub const RELATED: FileId = FileId {
        persistent: u64::MAX,
        volatile: u64::MAX,
    };

    /// Appends the 16 bytes.
    pub fn emit(&self, out: &mut Vec<u8>) {
        put_u64(out, self.persistent);
        put_u64(out, self.volatile);
    }

    /// Reads 16 bytes at `off`.
    pub fn parse(b: &[u8], off: usize) -> Result<Self> {
        Ok(FileId {
            persistent: u64_at(b, off)?,
            volatile: u64_at(b, off + 8)?,
        })
    }
}

/// Access mask bits the client asks for.
pub mod access {
    pub const FILE_READ_DATA: u32 = 0x1;
    pub const FILE_WRITE_DATA: u32 = 0x2;
    pub const FILE_APPEND_DATA: u32 = 0x4;
    pub const FILE_READ_EA: u32 = 0x8;
    pub const FILE_WRITE_EA: u32 = 0x10;
    pub const FILE_READ_ATTRIBUTES: u32 = 0x80;
    pub const FILE_WRITE_ATTRIBUTES: u32 = 0x100;
    pub const DELETE: u32 = 0x0001_0000;
    pub const READ_CONTROL: u32 = 0x0002_0000;
    pub const SYNCHRONIZE: u32 = 0x0010_0000;
    pub const GENERIC_READ: u32 = 0x8000_0000;
}

/// ShareAccess bits.
pub mod share {
    pub const ALL: u32 = 0x7; // read | write | delete
}

/// CreateDisposition FILE_OPEN: open an existing file, fail if missing.
pub const FILE_OPEN: u32 = 1;
/// CreateDisposition FILE_CREATE: create, fail (OBJECT_NAME_COLLISION) if
/// it exists.
pub const FILE_CREATE: u32 = 2;
/// CreateDisposition FILE_OPEN_IF: open, or create if missing.
pub const FILE_OPEN_IF: u32 = 3;
/// CreateDisposition FILE_OVERWRITE_IF: open and truncate, or create.
pub const FILE_OVERWRITE_IF: u32 = 5;

/// CreateAction values of a CREATE response.
pub mod action {
    pub const OPENED: u32 = 1;
    pub const CREATED: u32 = 2;
    pub const OVERWRITTEN: u32 = 3;
}

/// CreateOptions bits.
pub mod options {
    pub const DIRECTORY_FILE: u32 = 0x1;
    pub const NON_DIRECTORY_FILE: u32 = 0x40;
    pub const DELETE_ON_CLOSE: u32 = 0x1000;
    pub const OPEN_REPARSE_POINT: u32 = 0x0020_0000;
}

/// A CREATE request body.
#[derive(Clone, Debug)]
pub struct CreateRequest<'a> {
    pub desired_access: u32,
    pub file_attributes: u32,
    pub share_access: u32,
    pub disposition: u32,
    pub options: u32,
    /// Share-relative path with backslashes, no leading separator; empty
    /// for the share root.
    pub path: &'a str,
}

impl CreateRequest<'_> {
    /// Appends the body after a 64-byte header already in `out`.
    pub fn emit(&self, out: &mut Vec<u8>) {
        let name = utf16le(self.path);
        put_u16(out, 57);
        out.push(0); // SecurityFlags
        out.push(0); // RequestedOplockLevel: none
        put_u32(out, 2); // ImpersonationLevel: Impersonation
        put_u64(out, 0); // SmbCreateFlags
        put_u64(out, 0); // Reserved
        put_u32(out, self.desired_access);
        put_u32(out, self.file_attributes);
        put_u32(out, self.share_access);
        put_u32(out, self.disposition);
        put_u32(out, self.options);
        put_u16(out, 64 + 56);
        put_u16(out, name.len() as u16);
        put_u32(out, 0); // CreateContextsOffset
        put_u32(out, 0); // CreateContextsLength
        if name.is_empty() {
            // The variable part may not be empty.
            out.extend_from_slice(&[0u8; 8]);
        } else {
            out.extend_from_slice(&name);
        }
    }
}

/// Timestamps and sizes common to CREATE, CLOSE and the info classes
/// (times are FILETIME: 100 ns since 1601).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct FileTimes {
    pub creation: u64,
    pub last_access: u64,
    pub last_write: u64,
    pub change: u64,
}

impl FileTimes {
    /// Reads four FILETIMEs at `off`.
    pub fn parse(b: &[u8], off: usize) -> Result<Self> {
        Ok(FileTimes {
            creation: u64_at(b, off)?,
            last_access: u64_at(b, off + 8)?,
            last_write: u64_at(b, off + 16)?,
            change: u64_at(b, off + 24)?,
        })
    }
}

/// A parsed CREATE response.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CreateResponse {
    pub oplock: u8,
    pub create_action: u32,
    pub times: FileTimes,
    pub allocation_size: u64,
    pub end_of_file: u64,
    pub attributes: u32,
    pub file_id: FileId,
}

impl CreateResponse {
    /// Parses a whole response message (header included).
    pub fn parse(msg: &[u8]) -> Result<Self> {
        let b = slice(msg, 64, 88)?;
        if u16_at(b, 0)? != 89 {
            return Err(WireError::new("create structure size"));
        }
        Ok(CreateResponse {
            oplock: u8_at(b, 2)?,
            create_action: u32_at(b, 4)?,
            times: FileTimes::parse(b, 8)?,
            allocation_size: u64_at(b, 40)?,
            end_of_file: u64_at(b, 48)?,
            attributes: u32_at(b, 56)?,
            file_id: FileId::parse(b, 64)?,
        })
    }
}

/// A CLOSE request body.
#[derive(Clone, Copy, Debug)]
pub struct CloseRequest {
    pub file_id: FileId,
}

/// CLOSE flag SMB2_CLOSE_FLAG_POSTQUERY_ATTRIB: the reply carries the
/// file's times and sizes as they are after the close.
pub const CLOSE_POSTQUERY_ATTRIB: u16 = 0x1;

impl CloseRequest {
    /// Appends the body after a 64-byte header already in `out`.
    pub fn emit(&self, out: &mut Vec<u8>) {
        self.emit_flags(out, 0);
    }

    /// Appends the body with `flags` ([`CLOSE_POSTQUERY_ATTRIB`]).
    pub fn emit_flags(&self, out: &mut Vec<u8>, flags: u16) {
        put_u16(out, 24);
        put_u16(out, flags);
        put_u32(out, 0);
        self.file_id.emit(out);
    }
}

/// The attributes of a CLOSE reply asked with [`CLOSE_POSTQUERY_ATTRIB`]
/// (`None` when the server left them out: Flags without the bit).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CloseAttrs {
    pub times: FileTimes,
    pub allocation_size: u64,
    pub end_of_file: u64,
    pub attributes: u32,
}

/// Parses a CLOSE response and its post-query attributes.
pub fn parse_close_attrs(msg: &[u8]) -> Result<Option<CloseAttrs>> {
    parse_close(msg)?;
    let b = slice(msg, 64, 60)?;
    if u16_at(b, 2)? & CLOSE_POSTQUERY_ATTRIB == 0 {
        return Ok(None);
    }
    Ok(Some(CloseAttrs {
        times: FileTimes::parse(b, 8)?,
        allocation_size: u64_at(b, 40)?,
        end_of_file: u64_at(b, 48)?,
        attributes: u32_at(b, 56)?,
    }))
}

/// Checks a CLOSE response body.
pub fn parse_close(msg: &[u8]) -> Result<()> {
    if u16_at(msg, 64)? != 60 {
        return Err(WireError::new("close structure size"));
    }
    slice(msg, 64, 60).map(|_| ())
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::vec;

    /// A CREATE request for `a` (MS-SMB2 2.2.13), written out by hand.
    #[test]
    fn create_request_bytes() {
        let mut out = vec![0u8; 64];
        CreateRequest {
            desired_access: access::FILE_READ_DATA
                | access::FILE_READ_ATTRIBUTES
                | access::SYNCHRONIZE,
            file_attributes: 0x80,
            share_access: share::ALL,
            disposition: FILE_OPEN_IF,
            options: options::NON_DIRECTORY_FILE,
            path: "a",
        }
        .emit(&mut out);
        #[rustfmt::skip]
        let want: [u8; 58] = [
            57, 0,                   // StructureSize
            0,                       // SecurityFlags
            0,                       // RequestedOplockLevel
            2, 0, 0, 0,              // ImpersonationLevel: Impersonation
            0, 0, 0, 0, 0, 0, 0, 0,  // SmbCreateFlags
            0, 0, 0, 0, 0, 0, 0, 0,  // Reserved
            0x81, 0, 0x10, 0,        // DesiredAccess
            0x80, 0, 0, 0,           // FileAttributes
            7, 0, 0, 0,              // ShareAccess
            3, 0, 0, 0,              // CreateDisposition
            0x40, 0, 0, 0,           // CreateOptions
            120, 0,                  // NameOffset: 64 + 56
            2, 0,                    // NameLength
            0, 0, 0, 0,              // CreateContextsOffset
            0, 0, 0, 0,              // CreateContextsLength
            b'a', 0,                 // Buffer: the name, UTF-16LE
        ];
        assert_eq!(&out[64..], &want[..]);

        // The share root: an empty name, and 8 zero bytes of Buffer.
        let mut root = vec![0u8; 64];
        CreateRequest {
            desired_access: 0,
            file_attributes: 0,
            share_access: 0,
            disposition: FILE_OPEN,
            options: 0,
            path: "",
        }
        .emit(&mut root);
        assert_eq!(root.len(), 64 + 56 + 8);
        assert_eq!(&root[64 + 44..64 + 48], &[120, 0, 0, 0]);
        assert!(root[64 + 56..].iter().all(|&b| b == 0));
    }

    /// A CREATE response (MS-SMB2 2.2.14), written out by hand.
    #[test]
    fn create_response_bytes() {
        let mut msg = vec![0u8; 64];
        #[rustfmt::skip]
        msg.extend_from_slice(&[
            89, 0,                   // StructureSize
            1,                       // OplockLevel
            0,                       // Flags
            2, 0, 0, 0,              // CreateAction: created
            1, 0, 0, 0, 0, 0, 0, 0,  // CreationTime
            2, 0, 0, 0, 0, 0, 0, 0,  // LastAccessTime
            3, 0, 0, 0, 0, 0, 0, 0,  // LastWriteTime
            4, 0, 0, 0, 0, 0, 0, 0,  // ChangeTime
            0, 0x10, 0, 0, 0, 0, 0, 0, // AllocationSize
            5, 0, 0, 0, 0, 0, 0, 0,  // EndofFile
            0x20, 0, 0, 0,           // FileAttributes
            0, 0, 0, 0,              // Reserved2
            0x11, 0, 0, 0, 0, 0, 0, 0, // FileId.Persistent
            0x22, 0, 0, 0, 0, 0, 0, 0, // FileId.Volatile
            0, 0, 0, 0,              // CreateContextsOffset
            0, 0, 0, 0,              // CreateContextsLength
        ]);
        let r = CreateResponse::parse(&msg).unwrap();
        assert_eq!(
            r,
            CreateResponse {
                oplock: 1,
                create_action: action::CREATED,
                times: FileTimes {
                    creation: 1,
                    last_access: 2,
                    last_write: 3,
                    change: 4,
                },
                allocation_size: 0x1000,
                end_of_file: 5,
                attributes: 0x20,
                file_id: FileId {
                    persistent: 0x11,
                    volatile: 0x22,
                },
            }
        );
        assert!(CreateResponse::parse(&msg[..64 + 87]).is_err());
        msg[64] = 88;
        assert!(CreateResponse::parse(&msg).is_err());
    }

    /// CLOSE request and response (MS-SMB2 2.2.15, 2.2.16), by hand.
    #[test]
    fn close_bytes() {
        let fid = FileId {
            persistent: 0x0102,
            volatile: 0x0304,
        };
        let mut out = vec![0u8; 64];
        CloseRequest { file_id: fid }.emit_flags(&mut out, CLOSE_POSTQUERY_ATTRIB);
        #[rustfmt::skip]
        let want: [u8; 24] = [
            24, 0,                   // StructureSize
            1, 0,                    // Flags: POSTQUERY_ATTRIB
            0, 0, 0, 0,              // Reserved
            2, 1, 0, 0, 0, 0, 0, 0,  // FileId.Persistent
            4, 3, 0, 0, 0, 0, 0, 0,  // FileId.Volatile
        ];
        assert_eq!(&out[64..], &want[..]);
        let mut plain = vec![0u8; 64];
        CloseRequest { file_id: fid }.emit(&mut plain);
        assert_eq!(plain[66], 0);

        let mut msg = vec![0u8; 64];
        #[rustfmt::skip]
        msg.extend_from_slice(&[
            60, 0,                   // StructureSize
            1, 0,                    // Flags: POSTQUERY_ATTRIB
            0, 0, 0, 0,              // Reserved
            1, 0, 0, 0, 0, 0, 0, 0,  // CreationTime
            2, 0, 0, 0, 0, 0, 0, 0,  // LastAccessTime
            3, 0, 0, 0, 0, 0, 0, 0,  // LastWriteTime
            4, 0, 0, 0, 0, 0, 0, 0,  // ChangeTime
            0, 2, 0, 0, 0, 0, 0, 0,  // AllocationSize
            9, 0, 0, 0, 0, 0, 0, 0,  // EndofFile
            0x10, 0, 0, 0,           // FileAttributes
        ]);
        assert_eq!(
            parse_close_attrs(&msg).unwrap(),
            Some(CloseAttrs {
                times: FileTimes {
                    creation: 1,
                    last_access: 2,
                    last_write: 3,
                    change: 4,
                },
                allocation_size: 0x200,
                end_of_file: 9,
                attributes: 0x10,
            })
        );
        msg[66] = 0;
        assert_eq!(parse_close_attrs(&msg).unwrap(), None);
        assert!(parse_close(&msg[..64 + 59]).is_err());
        msg[64] = 24;
        assert!(parse_close(&msg).is_err());
    }
}
