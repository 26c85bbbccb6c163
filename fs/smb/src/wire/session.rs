//! SESSION_SETUP (MS-SMB2 2.2.5, 2.2.6) and LOGOFF (2.2.7, 2.2.8).

use super::header::HEADER_LEN;
use super::reply::{Reply, ReplyBody};
use super::{put_fixed, set_u16, set_u32, set_u64, Result};
use alloc::vec::Vec;

/// Field offsets, each relative to the start of its body (after the
/// header), named as MS-SMB2 names them.
#[allow(dead_code)]
mod field {
    /// SMB2 SESSION_SETUP Request (MS-SMB2 2.2.5).
    pub mod request {
        pub const STRUCTURE_SIZE: usize = 0;
        pub const FLAGS: usize = 2;
        pub const SECURITY_MODE: usize = 3;
        pub const CAPABILITIES: usize = 4;
        pub const CHANNEL: usize = 8;
        pub const SECURITY_BUFFER_OFFSET: usize = 12;
        pub const SECURITY_BUFFER_LENGTH: usize = 14;
        pub const PREVIOUS_SESSION_ID: usize = 16;
        /// The variable part (the security token), after the fixed part.
        pub const BUFFER: usize = 24;
        /// Length of the fixed part.
        pub const LEN: usize = BUFFER;
    }

    /// SMB2 SESSION_SETUP Response (MS-SMB2 2.2.6); its StructureSize and
    /// length are the reply gate's ([`crate::wire::reply::Reply::SessionSetup`]).
    pub mod response {
        pub const STRUCTURE_SIZE: usize = 0;
        pub const SESSION_FLAGS: usize = 2;
        pub const SECURITY_BUFFER_OFFSET: usize = 4;
        pub const SECURITY_BUFFER_LENGTH: usize = 6;
    }

    /// SMB2 LOGOFF Request and Response (MS-SMB2 2.2.7, 2.2.8), and
    /// TREE_DISCONNECT's (2.2.11, 2.2.12): the same four bytes.
    pub mod small {
        pub const STRUCTURE_SIZE: usize = 0;
        pub const RESERVED: usize = 2;
        /// Length of the structure.
        pub const LEN: usize = 4;
    }
}

/// StructureSize of the SESSION_SETUP request (MS-SMB2 2.2.5): the 24-byte
/// fixed part plus one byte of Buffer.
const REQUEST_SIZE: u16 = 25;
/// StructureSize of the LOGOFF and TREE_DISCONNECT requests (their
/// responses' is the reply gate's, [`Reply::Small`]).
const SMALL_SIZE: u16 = 4;

/// A SESSION_SETUP request body.
#[derive(Clone, Debug)]
pub struct SessionSetupRequest<'a> {
    pub security_mode: u8,
    pub capabilities: u32,
    pub previous_session_id: u64,
    /// The security token (raw NTLMSSP here).
    pub token: &'a [u8],
}

impl SessionSetupRequest<'_> {
    /// Appends the body after a [`HEADER_LEN`]-byte header already in `out`.
    pub fn emit(&self, out: &mut Vec<u8>) {
        use field::request as f;
        let b = put_fixed(out, f::LEN);
        set_u16(b, f::STRUCTURE_SIZE, REQUEST_SIZE);
        b[f::FLAGS] = 0; // not a channel binding
        b[f::SECURITY_MODE] = self.security_mode;
        set_u32(b, f::CAPABILITIES, self.capabilities);
        set_u32(b, f::CHANNEL, 0);
        set_u16(
            b,
            f::SECURITY_BUFFER_OFFSET,
            (HEADER_LEN + f::BUFFER) as u16,
        );
        set_u16(b, f::SECURITY_BUFFER_LENGTH, self.token.len() as u16);
        set_u64(b, f::PREVIOUS_SESSION_ID, self.previous_session_id);
        out.extend_from_slice(self.token);
    }
}

/// A parsed SESSION_SETUP response.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SessionSetupResponse<'a> {
    pub session_flags: u16,
    pub token: &'a [u8],
}

impl<'a> SessionSetupResponse<'a> {
    /// Parses a whole response message (header included).
    pub fn parse(msg: &'a [u8]) -> Result<Self> {
        use field::response as f;
        let body = ReplyBody::new_checked(msg, Reply::SessionSetup)?;
        let session_flags = body.u16(f::SESSION_FLAGS)?;
        let off = body.u16(f::SECURITY_BUFFER_OFFSET)? as usize;
        let len = body.u16(f::SECURITY_BUFFER_LENGTH)? as usize;
        Ok(SessionSetupResponse {
            session_flags,
            token: body.area(off, len)?,
        })
    }
}

/// Body of LOGOFF, TREE_DISCONNECT and their responses: StructureSize 4.
pub fn emit_small(out: &mut Vec<u8>) {
    use field::small as f;
    let b = put_fixed(out, f::LEN);
    set_u16(b, f::STRUCTURE_SIZE, SMALL_SIZE);
    set_u16(b, f::RESERVED, 0);
}

/// Checks a LOGOFF / TREE_DISCONNECT response body.
pub fn parse_small(msg: &[u8]) -> Result<()> {
    ReplyBody::new_checked(msg, Reply::Small).map(|_| ())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A SESSION_SETUP request (MS-SMB2 2.2.5) and the LOGOFF body (2.2.7),
    /// written out by hand.
    #[test]
    fn session_setup_and_logoff_bytes() {
        let mut out = alloc::vec![0u8; 64];
        SessionSetupRequest {
            security_mode: 1,
            capabilities: 0x1,
            previous_session_id: 0x0102,
            token: b"NTLM",
        }
        .emit(&mut out);
        #[rustfmt::skip]
        let want: [u8; 28] = [
            25, 0,                   // StructureSize
            0,                       // Flags
            1,                       // SecurityMode: signing enabled
            1, 0, 0, 0,              // Capabilities: DFS
            0, 0, 0, 0,              // Channel
            88, 0,                   // SecurityBufferOffset: 64 + 24
            4, 0,                    // SecurityBufferLength
            2, 1, 0, 0, 0, 0, 0, 0,  // PreviousSessionId
            b'N', b'T', b'L', b'M',  // Buffer: the token
        ];
        assert_eq!(&out[64..], &want[..]);
        let mut small = alloc::vec![0u8; 64];
        emit_small(&mut small);
        assert_eq!(&small[64..], &[4, 0, 0, 0]);
        assert_eq!(parse_small(&small), Ok(()));
        small[64] = 5;
        assert!(parse_small(&small).is_err());
    }
}
