//! CREATE (MS-SMB2 2.2.13, 2.2.14) and CLOSE (2.2.15, 2.2.16).

use super::header::HEADER_LEN;
use super::reply::{Reply, ReplyBody};
use super::{put_fixed, set_u16, set_u32, set_u64, u64_at, utf16le, Result};
use alloc::vec::Vec;

/// Field offsets, each relative to the start of its structure (after the
/// header for a body), named as MS-SMB2 names them. Every field of a layout
/// is listed, including those the client leaves zero or does not read.
#[allow(dead_code)]
mod field {
    /// SMB2_FILEID (MS-SMB2 2.2.14.1).
    pub mod file_id {
        pub const PERSISTENT: usize = 0;
        pub const VOLATILE: usize = 8;
        /// Length of the structure.
        pub const LEN: usize = 16;
    }

    /// The four FILETIMEs that CREATE and CLOSE replies and the MS-FSCC
    /// information classes carry, always in this order.
    pub mod times {
        pub const CREATION_TIME: usize = 0;
        pub const LAST_ACCESS_TIME: usize = 8;
        pub const LAST_WRITE_TIME: usize = 16;
        pub const CHANGE_TIME: usize = 24;
    }

    /// SMB2 CREATE Request (MS-SMB2 2.2.13).
    pub mod create_request {
        pub const STRUCTURE_SIZE: usize = 0;
        pub const SECURITY_FLAGS: usize = 2;
        pub const REQUESTED_OPLOCK_LEVEL: usize = 3;
        pub const IMPERSONATION_LEVEL: usize = 4;
        pub const SMB_CREATE_FLAGS: usize = 8;
        pub const RESERVED: usize = 16;
        pub const DESIRED_ACCESS: usize = 24;
        pub const FILE_ATTRIBUTES: usize = 28;
        pub const SHARE_ACCESS: usize = 32;
        pub const CREATE_DISPOSITION: usize = 36;
        pub const CREATE_OPTIONS: usize = 40;
        pub const NAME_OFFSET: usize = 44;
        pub const NAME_LENGTH: usize = 46;
        pub const CREATE_CONTEXTS_OFFSET: usize = 48;
        pub const CREATE_CONTEXTS_LENGTH: usize = 52;
        /// The variable part (the name), right after the fixed part.
        pub const BUFFER: usize = 56;
        /// Length of the fixed part.
        pub const LEN: usize = BUFFER;
    }

    /// SMB2 CREATE Response (MS-SMB2 2.2.14); its StructureSize and length
    /// are the reply gate's ([`crate::wire::reply::Reply::Create`]).
    pub mod create_response {
        pub const STRUCTURE_SIZE: usize = 0;
        pub const OPLOCK_LEVEL: usize = 2;
        pub const FLAGS: usize = 3;
        pub const CREATE_ACTION: usize = 4;
        /// CreationTime, LastAccessTime, LastWriteTime, ChangeTime
        /// ([`super::times`]).
        pub const TIMES: usize = 8;
        pub const ALLOCATION_SIZE: usize = 40;
        pub const END_OF_FILE: usize = 48;
        pub const FILE_ATTRIBUTES: usize = 56;
        pub const RESERVED2: usize = 60;
        pub const FILE_ID: usize = 64;
        pub const CREATE_CONTEXTS_OFFSET: usize = 80;
        pub const CREATE_CONTEXTS_LENGTH: usize = 84;
    }

    /// SMB2 CLOSE Request (MS-SMB2 2.2.15).
    pub mod close_request {
        pub const STRUCTURE_SIZE: usize = 0;
        pub const FLAGS: usize = 2;
        pub const RESERVED: usize = 4;
        pub const FILE_ID: usize = 8;
        /// Length of the structure.
        pub const LEN: usize = 24;
    }

    /// SMB2 CLOSE Response (MS-SMB2 2.2.16); its StructureSize and length
    /// are the reply gate's ([`crate::wire::reply::Reply::Close`]).
    pub mod close_response {
        pub const STRUCTURE_SIZE: usize = 0;
        pub const FLAGS: usize = 2;
        pub const RESERVED: usize = 4;
        /// CreationTime, LastAccessTime, LastWriteTime, ChangeTime
        /// ([`super::times`]).
        pub const TIMES: usize = 8;
        pub const ALLOCATION_SIZE: usize = 40;
        pub const END_OF_FILE: usize = 48;
        pub const FILE_ATTRIBUTES: usize = 56;
    }
}

/// StructureSize of the CREATE request (MS-SMB2 2.2.13): the 56-byte fixed
/// part plus one byte of Buffer, whatever the name's length.
const CREATE_REQUEST_SIZE: u16 = 57;
/// StructureSize of the CLOSE request (MS-SMB2 2.2.15).
const CLOSE_REQUEST_SIZE: u16 = 24;

/// Zero bytes of Buffer sent for an empty name (the share root); they end
/// the message on an 8-byte boundary (64 + 56 + 8 = 128).
const EMPTY_NAME_PAD: usize = 8;

/// ImpersonationLevel Impersonation (MS-SMB2 2.2.13): the server may act
/// as the client on its own system.
const IMPERSONATION: u32 = 2;

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

    /// Writes the 16 bytes at `off` of a buffer an emitter sized itself.
    pub fn write(&self, b: &mut [u8], off: usize) {
        set_u64(b, off + field::file_id::PERSISTENT, self.persistent);
        set_u64(b, off + field::file_id::VOLATILE, self.volatile);
    }

    /// Reads 16 bytes at `off`.
    pub fn parse(b: &[u8], off: usize) -> Result<Self> {
        Ok(FileId {
            persistent: u64_at(b, off + field::file_id::PERSISTENT)?,
            volatile: u64_at(b, off + field::file_id::VOLATILE)?,
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
    /// Appends the body after a [`HEADER_LEN`]-byte header already in `out`.
    pub fn emit(&self, out: &mut Vec<u8>) {
        use field::create_request as f;
        let name = utf16le(self.path);
        let b = put_fixed(out, f::LEN);
        set_u16(b, f::STRUCTURE_SIZE, CREATE_REQUEST_SIZE);
        b[f::SECURITY_FLAGS] = 0;
        b[f::REQUESTED_OPLOCK_LEVEL] = 0; // none
        set_u32(b, f::IMPERSONATION_LEVEL, IMPERSONATION);
        set_u64(b, f::SMB_CREATE_FLAGS, 0);
        set_u32(b, f::DESIRED_ACCESS, self.desired_access);
        set_u32(b, f::FILE_ATTRIBUTES, self.file_attributes);
        set_u32(b, f::SHARE_ACCESS, self.share_access);
        set_u32(b, f::CREATE_DISPOSITION, self.disposition);
        set_u32(b, f::CREATE_OPTIONS, self.options);
        set_u16(b, f::NAME_OFFSET, (HEADER_LEN + f::BUFFER) as u16);
        set_u16(b, f::NAME_LENGTH, name.len() as u16);
        set_u32(b, f::CREATE_CONTEXTS_OFFSET, 0);
        set_u32(b, f::CREATE_CONTEXTS_LENGTH, 0);
        if name.is_empty() {
            // The variable part may not be empty: the share root sends
            // EMPTY_NAME_PAD zero bytes with NameLength 0.
            out.extend_from_slice(&[0u8; EMPTY_NAME_PAD]);
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
        use field::times as f;
        Ok(FileTimes {
            creation: u64_at(b, off + f::CREATION_TIME)?,
            last_access: u64_at(b, off + f::LAST_ACCESS_TIME)?,
            last_write: u64_at(b, off + f::LAST_WRITE_TIME)?,
            change: u64_at(b, off + f::CHANGE_TIME)?,
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
        use field::create_response as f;
        let body = ReplyBody::new_checked(msg, Reply::Create)?;
        Ok(CreateResponse {
            oplock: body.u8(f::OPLOCK_LEVEL)?,
            create_action: body.u32(f::CREATE_ACTION)?,
            times: FileTimes::parse(body.fixed(), f::TIMES)?,
            allocation_size: body.u64(f::ALLOCATION_SIZE)?,
            end_of_file: body.u64(f::END_OF_FILE)?,
            attributes: body.u32(f::FILE_ATTRIBUTES)?,
            file_id: FileId::parse(body.fixed(), f::FILE_ID)?,
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
    /// Appends the body after a [`HEADER_LEN`]-byte header already in `out`.
    pub fn emit(&self, out: &mut Vec<u8>) {
        self.emit_flags(out, 0);
    }

    /// Appends the body with `flags` ([`CLOSE_POSTQUERY_ATTRIB`]).
    pub fn emit_flags(&self, out: &mut Vec<u8>, flags: u16) {
        use field::close_request as f;
        let b = put_fixed(out, f::LEN);
        set_u16(b, f::STRUCTURE_SIZE, CLOSE_REQUEST_SIZE);
        set_u16(b, f::FLAGS, flags);
        self.file_id.write(b, f::FILE_ID);
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
    use field::close_response as f;
    let body = ReplyBody::new_checked(msg, Reply::Close)?;
    if body.u16(f::FLAGS)? & CLOSE_POSTQUERY_ATTRIB == 0 {
        return Ok(None);
    }
    Ok(Some(CloseAttrs {
        times: FileTimes::parse(body.fixed(), f::TIMES)?,
        allocation_size: body.u64(f::ALLOCATION_SIZE)?,
        end_of_file: body.u64(f::END_OF_FILE)?,
        attributes: body.u32(f::FILE_ATTRIBUTES)?,
    }))
}

/// Checks a CLOSE response body.
pub fn parse_close(msg: &[u8]) -> Result<()> {
    ReplyBody::new_checked(msg, Reply::Close).map(|_| ())
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
