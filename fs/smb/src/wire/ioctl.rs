//! IOCTL (MS-SMB2 2.2.31, 2.2.32) for the one FSCTL the client sends:
//! FSCTL_VALIDATE_NEGOTIATE_INFO (2.2.31.4 request, 2.2.32.6 response),
//! which lets a 3.0 / 3.0.2 session prove after the fact that nobody
//! rewrote the NEGOTIATE exchange. Stateless.

use super::header::HEADER_LEN;
use super::reply::{Reply, ReplyBody};
use super::{bytes16_at, put_fixed, put_u16, set_u16, set_u32, u16_at, u32_at};
use super::{Result, WireError};
use alloc::vec::Vec;

/// FSCTL_VALIDATE_NEGOTIATE_INFO.
pub const FSCTL_VALIDATE_NEGOTIATE_INFO: u32 = 0x0014_0204;
/// Flags: the CtlCode is an FSCTL (not an IOCTL).
const IOCTL_IS_FSCTL: u32 = 1;

/// Field offsets relative to the start of each body, as MS-SMB2 names them.
#[allow(dead_code)]
mod field {
    /// SMB2 IOCTL Request (MS-SMB2 2.2.31).
    pub mod request {
        pub const STRUCTURE_SIZE: usize = 0;
        pub const RESERVED: usize = 2;
        pub const CTL_CODE: usize = 4;
        pub const FILE_ID: usize = 8;
        pub const INPUT_OFFSET: usize = 24;
        pub const INPUT_COUNT: usize = 28;
        pub const MAX_INPUT_RESPONSE: usize = 32;
        pub const OUTPUT_OFFSET: usize = 36;
        pub const OUTPUT_COUNT: usize = 40;
        pub const MAX_OUTPUT_RESPONSE: usize = 44;
        pub const FLAGS: usize = 48;
        pub const RESERVED2: usize = 52;
        /// The input buffer, after the fixed part.
        pub const BUFFER: usize = 56;
        pub const LEN: usize = BUFFER;
    }

    /// SMB2 IOCTL Response (MS-SMB2 2.2.32); its StructureSize and length
    /// are the reply gate's ([`crate::wire::reply::Reply::Ioctl`]).
    pub mod response {
        pub const STRUCTURE_SIZE: usize = 0;
        pub const RESERVED: usize = 2;
        pub const CTL_CODE: usize = 4;
        pub const FILE_ID: usize = 8;
        pub const INPUT_OFFSET: usize = 24;
        pub const INPUT_COUNT: usize = 28;
        pub const OUTPUT_OFFSET: usize = 32;
        pub const OUTPUT_COUNT: usize = 36;
        pub const FLAGS: usize = 40;
        pub const RESERVED2: usize = 44;
    }

    /// VALIDATE_NEGOTIATE_INFO response (MS-SMB2 2.2.32.6).
    pub mod vni {
        pub const CAPABILITIES: usize = 0;
        pub const GUID: usize = 4;
        pub const SECURITY_MODE: usize = 20;
        pub const DIALECT: usize = 22;
        pub const LEN: usize = 24;
    }
}

/// StructureSize of the request: the fixed part plus one byte of Buffer.
const REQUEST_SIZE: u16 = 57;

/// The VALIDATE_NEGOTIATE_INFO request: what the client sent in its
/// NEGOTIATE, repeated under the session's signature.
#[derive(Clone, Debug)]
pub struct ValidateNegotiateRequest<'a> {
    pub capabilities: u32,
    pub client_guid: [u8; 16],
    pub security_mode: u16,
    pub dialects: &'a [u16],
}

impl ValidateNegotiateRequest<'_> {
    /// Appends the IOCTL body after a [`HEADER_LEN`]-byte header in `out`.
    pub fn emit(&self, out: &mut Vec<u8>) {
        use field::request as f;
        let input_len = 24 + 2 * self.dialects.len();
        let b = put_fixed(out, f::LEN);
        set_u16(b, f::STRUCTURE_SIZE, REQUEST_SIZE);
        set_u32(b, f::CTL_CODE, FSCTL_VALIDATE_NEGOTIATE_INFO);
        // No file: both halves of the FileId all ones.
        b[f::FILE_ID..f::FILE_ID + 16].fill(0xff);
        set_u32(b, f::INPUT_OFFSET, (HEADER_LEN + f::BUFFER) as u32);
        set_u32(b, f::INPUT_COUNT, input_len as u32);
        set_u32(b, f::MAX_OUTPUT_RESPONSE, field::vni::LEN as u32);
        set_u32(b, f::FLAGS, IOCTL_IS_FSCTL);
        let i = put_fixed(out, 24);
        set_u32(i, 0, self.capabilities);
        i[4..20].copy_from_slice(&self.client_guid);
        set_u16(i, 20, self.security_mode);
        set_u16(i, 22, self.dialects.len() as u16);
        for &d in self.dialects {
            put_u16(out, d);
        }
    }
}

/// The server's VALIDATE_NEGOTIATE_INFO answer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ValidateNegotiateResponse {
    pub capabilities: u32,
    pub server_guid: [u8; 16],
    pub security_mode: u16,
    pub dialect: u16,
}

impl ValidateNegotiateResponse {
    /// Parses a whole IOCTL response message (header included).
    pub fn parse(msg: &[u8]) -> Result<Self> {
        use field::response as f;
        let body = ReplyBody::new_checked(msg, Reply::Ioctl)?;
        if body.u32(f::CTL_CODE)? != FSCTL_VALIDATE_NEGOTIATE_INFO {
            return Err(WireError::new("ioctl ctl code"));
        }
        let off = body.u32(f::OUTPUT_OFFSET)? as usize;
        let len = body.u32(f::OUTPUT_COUNT)? as usize;
        if len < field::vni::LEN {
            return Err(WireError::new("validate negotiate output too short"));
        }
        let o = body.area(off, len)?;
        use field::vni as v;
        Ok(ValidateNegotiateResponse {
            capabilities: u32_at(o, v::CAPABILITIES)?,
            server_guid: bytes16_at(o, v::GUID)?,
            security_mode: u16_at(o, v::SECURITY_MODE)?,
            dialect: u16_at(o, v::DIALECT)?,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::vec;

    #[test]
    fn request_layout_and_response_round_trip() {
        let mut out = vec![0u8; HEADER_LEN];
        ValidateNegotiateRequest {
            capabilities: 0x44,
            client_guid: [3; 16],
            security_mode: 1,
            dialects: &[0x0300, 0x0302],
        }
        .emit(&mut out);
        assert_eq!(out.len(), HEADER_LEN + 56 + 24 + 4);
        assert_eq!(u32_at(&out, HEADER_LEN + 4).unwrap(), 0x0014_0204);
        assert_eq!(u32_at(&out, HEADER_LEN + 24).unwrap(), 120);
        assert_eq!(u32_at(&out, HEADER_LEN + 28).unwrap(), 28);
        assert_eq!(u16_at(&out, 120 + 22).unwrap(), 2);
        assert_eq!(u16_at(&out, 120 + 26).unwrap(), 0x0302);

        let mut msg = vec![0u8; HEADER_LEN + 48];
        set_u16(&mut msg[HEADER_LEN..], 0, 49);
        set_u32(&mut msg[HEADER_LEN..], 4, FSCTL_VALIDATE_NEGOTIATE_INFO);
        set_u32(&mut msg[HEADER_LEN..], 32, 112);
        set_u32(&mut msg[HEADER_LEN..], 36, 24);
        let mut o = [0u8; 24];
        set_u32(&mut o, 0, 7);
        o[4..20].fill(9);
        set_u16(&mut o, 20, 3);
        set_u16(&mut o, 22, 0x0302);
        msg.extend_from_slice(&o);
        let r = ValidateNegotiateResponse::parse(&msg).unwrap();
        assert_eq!(r.dialect, 0x0302);
        assert_eq!(r.server_guid, [9; 16]);
        assert!(ValidateNegotiateResponse::parse(&msg[..msg.len() - 1]).is_err());
    }
}
