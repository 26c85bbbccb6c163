//! TREE_CONNECT (MS-SMB2 2.2.9, 2.2.10); TREE_DISCONNECT uses
//! [`super::session::emit_small`].

use super::header::HEADER_LEN;
use super::reply::{Reply, ReplyBody};
use super::{put_fixed, set_u16, utf16le, Result};
use alloc::vec::Vec;

/// Field offsets, each relative to the start of its body (after the
/// header), named as MS-SMB2 names them.
#[allow(dead_code)]
mod field {
    /// SMB2 TREE_CONNECT Request (MS-SMB2 2.2.9).
    pub mod request {
        pub const STRUCTURE_SIZE: usize = 0;
        /// Flags (3.1.1), Reserved before.
        pub const FLAGS: usize = 2;
        pub const PATH_OFFSET: usize = 4;
        pub const PATH_LENGTH: usize = 6;
        /// The variable part (the UNC path), after the fixed part.
        pub const BUFFER: usize = 8;
        /// Length of the fixed part.
        pub const LEN: usize = BUFFER;
    }

    /// SMB2 TREE_CONNECT Response (MS-SMB2 2.2.10); its StructureSize and
    /// length are the reply gate's ([`crate::wire::reply::Reply::TreeConnect`]).
    pub mod response {
        pub const STRUCTURE_SIZE: usize = 0;
        pub const SHARE_TYPE: usize = 2;
        pub const RESERVED: usize = 3;
        pub const SHARE_FLAGS: usize = 4;
        pub const CAPABILITIES: usize = 8;
        pub const MAXIMAL_ACCESS: usize = 12;
    }
}

/// StructureSize of the TREE_CONNECT request (MS-SMB2 2.2.9): the 8-byte
/// fixed part plus one byte of Buffer.
const REQUEST_SIZE: u16 = 9;

/// A TREE_CONNECT request body for the UNC path `\\server\share`.
#[derive(Clone, Debug)]
pub struct TreeConnectRequest<'a> {
    pub unc: &'a str,
}

impl TreeConnectRequest<'_> {
    /// Appends the body after a [`HEADER_LEN`]-byte header already in `out`.
    pub fn emit(&self, out: &mut Vec<u8>) {
        use field::request as f;
        let path = utf16le(self.unc);
        let b = put_fixed(out, f::LEN);
        set_u16(b, f::STRUCTURE_SIZE, REQUEST_SIZE);
        set_u16(b, f::FLAGS, 0);
        set_u16(b, f::PATH_OFFSET, (HEADER_LEN + f::BUFFER) as u16);
        set_u16(b, f::PATH_LENGTH, path.len() as u16);
        out.extend_from_slice(&path);
    }
}

/// A parsed TREE_CONNECT response.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TreeConnectResponse {
    pub share_type: u8,
    pub share_flags: u32,
    pub capabilities: u32,
    pub maximal_access: u32,
}

impl TreeConnectResponse {
    /// Parses a whole response message (header included).
    pub fn parse(msg: &[u8]) -> Result<Self> {
        use field::response as f;
        let body = ReplyBody::new_checked(msg, Reply::TreeConnect)?;
        Ok(TreeConnectResponse {
            share_type: body.u8(f::SHARE_TYPE)?,
            share_flags: body.u32(f::SHARE_FLAGS)?,
            capabilities: body.u32(f::CAPABILITIES)?,
            maximal_access: body.u32(f::MAXIMAL_ACCESS)?,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A TREE_CONNECT request (MS-SMB2 2.2.9), written out by hand.
    #[test]
    fn tree_connect_request_bytes() {
        let mut out = alloc::vec![0u8; 64];
        TreeConnectRequest { unc: "\\\\h\\s" }.emit(&mut out);
        #[rustfmt::skip]
        let want: [u8; 18] = [
            9, 0,                    // StructureSize
            0, 0,                    // Flags
            72, 0,                   // PathOffset: 64 + 8
            10, 0,                   // PathLength
            b'\\', 0, b'\\', 0, b'h', 0, b'\\', 0, b's', 0, // Buffer
        ];
        assert_eq!(&out[64..], &want[..]);
    }
}
