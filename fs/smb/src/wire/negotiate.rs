//! NEGOTIATE (MS-SMB2 2.2.3, 2.2.4): dialects 2.0.2, 2.1, 3.0, 3.0.2 and 3.1.1, with the
//! 3.1.1 negotiate contexts the client uses — preauth integrity (SHA-512)
//! and signing capabilities.

use super::header::HEADER_LEN;
use super::reply::{Reply, ReplyBody};
use super::{put_fixed, put_u16, set_u16, set_u32, slice, u16_at};
use super::{Result, WireError};
use alloc::vec::Vec;

/// Dialect revision numbers.
pub mod dialect {
    pub const SMB2_0_2: u16 = 0x0202;
    pub const SMB2_1: u16 = 0x0210;
    pub const SMB3_0: u16 = 0x0300;
    pub const SMB3_0_2: u16 = 0x0302;
    pub const SMB3_1_1: u16 = 0x0311;

    /// The dialect as Linux's `vers=` spells it (`"3.1.1"`), `"?"` if unknown.
    pub fn name(d: u16) -> &'static str {
        match d {
            SMB2_0_2 => "2.0",
            SMB2_1 => "2.1",
            SMB3_0 => "3.0",
            SMB3_0_2 => "3.0.2",
            SMB3_1_1 => "3.1.1",
            _ => "?",
        }
    }
}

/// SecurityMode bits.
pub mod security_mode {
    pub const SIGNING_ENABLED: u16 = 0x1;
    pub const SIGNING_REQUIRED: u16 = 0x2;
}

/// Negotiate context types.
pub mod ctx {
    pub const PREAUTH_INTEGRITY: u16 = 1;
    pub const ENCRYPTION: u16 = 2;
    pub const SIGNING: u16 = 8;
}

/// Preauth hash algorithm SHA-512.
pub const HASH_SHA512: u16 = 1;

/// Cipher ids of the encryption-capabilities context (MS-SMB2 2.2.3.1.2).
pub mod cipher {
    pub const AES_128_CCM: u16 = 1;
    pub const AES_128_GCM: u16 = 2;
    pub const AES_256_CCM: u16 = 3;
    pub const AES_256_GCM: u16 = 4;
}

/// Global capability ENCRYPTION (3.0 / 3.0.2: the client can encrypt).
pub const CAP_ENCRYPTION: u32 = 0x40;

/// Signing algorithm ids of the signing-capabilities context.
pub mod sign_alg {
    pub const HMAC_SHA256: u16 = 0;
    pub const AES_CMAC: u16 = 1;
    pub const AES_GMAC: u16 = 2;
}

/// Field offsets, each relative to the start of its structure (after the
/// header for a body), named as MS-SMB2 names them.
#[allow(dead_code)]
mod field {
    /// SMB2 NEGOTIATE Request (MS-SMB2 2.2.3).
    pub mod request {
        pub const STRUCTURE_SIZE: usize = 0;
        pub const DIALECT_COUNT: usize = 2;
        pub const SECURITY_MODE: usize = 4;
        pub const RESERVED: usize = 6;
        pub const CAPABILITIES: usize = 8;
        pub const CLIENT_GUID: usize = 12;
        /// NegotiateContextOffset (3.1.1; ClientStartTime before).
        pub const NEGOTIATE_CONTEXT_OFFSET: usize = 28;
        pub const NEGOTIATE_CONTEXT_COUNT: usize = 32;
        pub const RESERVED2: usize = 34;
        /// The dialect list, after the fixed part.
        pub const DIALECTS: usize = 36;
        /// Length of the fixed part.
        pub const LEN: usize = DIALECTS;
    }

    /// SMB2 NEGOTIATE Response (MS-SMB2 2.2.4); its StructureSize and
    /// length are the reply gate's ([`crate::wire::reply::Reply::Negotiate`]).
    pub mod response {
        pub const STRUCTURE_SIZE: usize = 0;
        pub const SECURITY_MODE: usize = 2;
        pub const DIALECT: usize = 4;
        pub const CONTEXT_COUNT: usize = 6;
        pub const SERVER_GUID: usize = 8;
        pub const CAPABILITIES: usize = 24;
        pub const MAX_TRANSACT: usize = 28;
        pub const MAX_READ: usize = 32;
        pub const MAX_WRITE: usize = 36;
        pub const SYSTEM_TIME: usize = 40;
        pub const SERVER_START_TIME: usize = 48;
        pub const SECURITY_BUFFER_OFFSET: usize = 56;
        pub const SECURITY_BUFFER_LENGTH: usize = 58;
        pub const CONTEXT_OFFSET: usize = 60;
    }

    /// SMB2 NEGOTIATE_CONTEXT (MS-SMB2 2.2.3.1).
    pub mod context {
        pub const CONTEXT_TYPE: usize = 0;
        pub const DATA_LENGTH: usize = 2;
        pub const RESERVED: usize = 4;
        pub const DATA: usize = 8;
        /// Length of the fixed part.
        pub const LEN: usize = DATA;
    }

    /// SMB2_PREAUTH_INTEGRITY_CAPABILITIES (MS-SMB2 2.2.3.1.1), one hash
    /// algorithm.
    pub mod preauth {
        pub const HASH_ALGORITHM_COUNT: usize = 0;
        pub const SALT_LENGTH: usize = 2;
        pub const HASH_ALGORITHMS: usize = 4;
        /// The salt, after the one hash algorithm.
        pub const SALT: usize = 6;
    }

    /// SMB2_ENCRYPTION_CAPABILITIES and SMB2_SIGNING_CAPABILITIES (MS-SMB2
    /// 2.2.3.1.2, 2.2.3.1.7): a count, then that many u16 ids.
    pub mod id_list {
        pub const COUNT: usize = 0;
        pub const IDS: usize = 2;
    }
}

/// StructureSize of the NEGOTIATE request (MS-SMB2 2.2.3).
const REQUEST_SIZE: u16 = 36;
/// Negotiate contexts start 8-aligned (relative to the header).
const CONTEXT_ALIGN: usize = 8;
/// Most negotiate contexts accepted in a response.
const MAX_CONTEXTS: usize = 64;
/// Length of the preauth salt the client sends.
const SALT_LEN: usize = 32;
/// Length of one id (dialect, hash, cipher, signing algorithm).
const ID_LEN: usize = 2;

/// Appends one negotiate context header of `ty` with `data_len` bytes
/// of data to follow.
fn put_context(out: &mut Vec<u8>, ty: u16, data_len: usize) {
    use field::context as c;
    let b = put_fixed(out, c::LEN);
    set_u16(b, c::CONTEXT_TYPE, ty);
    set_u16(b, c::DATA_LENGTH, data_len as u16);
    set_u32(b, c::RESERVED, 0);
}

/// Appends a count-then-ids list (signing and encryption capabilities).
fn put_id_list(out: &mut Vec<u8>, ids: &[u16]) {
    put_u16(out, ids.len() as u16);
    for id in ids {
        put_u16(out, *id);
    }
}

/// A NEGOTIATE request body.
#[derive(Clone, Debug)]
pub struct NegotiateRequest<'a> {
    pub dialects: &'a [u16],
    pub security_mode: u16,
    pub capabilities: u32,
    pub client_guid: [u8; 16],
    /// Preauth salt (3.1.1 only; sent when 3.1.1 is among the dialects).
    pub salt: [u8; 32],
    /// Signing algorithms offered, most preferred first (3.1.1 only).
    pub signing_algs: &'a [u16],
    /// Ciphers offered, most preferred first (3.1.1 only; empty: no
    /// encryption context).
    pub ciphers: &'a [u16],
}

impl NegotiateRequest<'_> {
    /// Appends the body after a [`HEADER_LEN`]-byte header already in `out`.
    pub fn emit(&self, out: &mut Vec<u8>) {
        use field::request as f;
        let base = out.len() - HEADER_LEN;
        let with_ctx = self.dialects.contains(&dialect::SMB3_1_1);
        // Preauth integrity and signing always; encryption when offered.
        let ctx_count = 2 + u16::from(!self.ciphers.is_empty());
        let body = out.len();
        let b = put_fixed(out, f::LEN);
        set_u16(b, f::STRUCTURE_SIZE, REQUEST_SIZE);
        set_u16(b, f::DIALECT_COUNT, self.dialects.len() as u16);
        set_u16(b, f::SECURITY_MODE, self.security_mode);
        set_u32(b, f::CAPABILITIES, self.capabilities);
        b[f::CLIENT_GUID..f::CLIENT_GUID + self.client_guid.len()]
            .copy_from_slice(&self.client_guid);
        // NegotiateContextOffset stays 0 unless patched below.
        set_u16(
            b,
            f::NEGOTIATE_CONTEXT_COUNT,
            if with_ctx { ctx_count } else { 0 },
        );
        for d in self.dialects {
            put_u16(out, *d);
        }
        if !with_ctx {
            return;
        }
        // Contexts start 8-aligned (relative to the header).
        while !(out.len() - base).is_multiple_of(CONTEXT_ALIGN) {
            out.push(0);
        }
        let off = (out.len() - base) as u32;
        set_u32(&mut out[body..], f::NEGOTIATE_CONTEXT_OFFSET, off);
        // Preauth integrity: one hash algorithm, then the salt.
        put_context(out, ctx::PREAUTH_INTEGRITY, field::preauth::SALT + SALT_LEN);
        put_u16(out, 1); // HashAlgorithmCount
        put_u16(out, SALT_LEN as u16);
        put_u16(out, HASH_SHA512);
        out.extend_from_slice(&self.salt);
        while !(out.len() - base).is_multiple_of(CONTEXT_ALIGN) {
            out.push(0);
        }
        // Signing capabilities.
        put_context(
            out,
            ctx::SIGNING,
            field::id_list::IDS + ID_LEN * self.signing_algs.len(),
        );
        put_id_list(out, self.signing_algs);
        if self.ciphers.is_empty() {
            return;
        }
        while !(out.len() - base).is_multiple_of(CONTEXT_ALIGN) {
            out.push(0);
        }
        // Encryption capabilities.
        put_context(
            out,
            ctx::ENCRYPTION,
            field::id_list::IDS + ID_LEN * self.ciphers.len(),
        );
        put_id_list(out, self.ciphers);
    }
}

/// A parsed NEGOTIATE response.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NegotiateResponse {
    pub security_mode: u16,
    pub dialect: u16,
    pub server_guid: [u8; 16],
    pub capabilities: u32,
    pub max_transact: u32,
    pub max_read: u32,
    pub max_write: u32,
    /// The GSS/SPNEGO token offered by the server (may be empty).
    pub security_buffer: Vec<u8>,
    /// Preauth hash algorithm chosen (3.1.1).
    pub preauth_hash: Option<u16>,
    /// Signing algorithm chosen through the signing context (3.1.1).
    pub signing_alg: Option<u16>,
    /// Cipher chosen through the encryption context (3.1.1; `Some(0)`:
    /// none of those offered).
    pub cipher: Option<u16>,
}

impl NegotiateResponse {
    /// Parses a whole response message (header included).
    pub fn parse(msg: &[u8]) -> Result<Self> {
        use field::response as f;
        let body = ReplyBody::new_checked(msg, Reply::Negotiate)?;
        let security_mode = body.u16(f::SECURITY_MODE)?;
        let dialect = body.u16(f::DIALECT)?;
        let ctx_count = body.u16(f::CONTEXT_COUNT)? as usize;
        let server_guid = body.bytes16(f::SERVER_GUID)?;
        let capabilities = body.u32(f::CAPABILITIES)?;
        let max_transact = body.u32(f::MAX_TRANSACT)?;
        let max_read = body.u32(f::MAX_READ)?;
        let max_write = body.u32(f::MAX_WRITE)?;
        let sec_off = body.u16(f::SECURITY_BUFFER_OFFSET)? as usize;
        let sec_len = body.u16(f::SECURITY_BUFFER_LENGTH)? as usize;
        let ctx_off = body.u32(f::CONTEXT_OFFSET)? as usize;
        let security_buffer = body.area(sec_off, sec_len)?.to_vec();
        let mut r = NegotiateResponse {
            security_mode,
            dialect,
            server_guid,
            capabilities,
            max_transact,
            max_read,
            max_write,
            security_buffer,
            preauth_hash: None,
            signing_alg: None,
            cipher: None,
        };
        if dialect != dialect::SMB3_1_1 {
            return Ok(r);
        }
        if ctx_count > MAX_CONTEXTS {
            return Err(WireError::new("too many negotiate contexts"));
        }
        if ctx_count == 0 {
            return Ok(r);
        }
        // The context list is a data area too: from its offset to the end
        // of the message, by the same rule. Contexts after the first begin
        // 8-aligned, counted from the start of the header.
        let list = body.area_to_end(ctx_off)?;
        use field::context as c;
        let mut off = ctx_off;
        for i in 0..ctx_count {
            if i > 0 {
                off = off
                    .checked_add(CONTEXT_ALIGN - 1)
                    .ok_or(WireError::new("context offset"))?
                    & !(CONTEXT_ALIGN - 1);
            }
            let at = off - ctx_off;
            let ty = u16_at(list, at + c::CONTEXT_TYPE)?;
            let len = u16_at(list, at + c::DATA_LENGTH)? as usize;
            let data = slice(list, at + c::DATA, len)?;
            // A response names exactly one choice in each context.
            match ty {
                ctx::PREAUTH_INTEGRITY => {
                    if u16_at(data, field::preauth::HASH_ALGORITHM_COUNT)? != 1 {
                        return Err(WireError::new("preauth algorithm count"));
                    }
                    r.preauth_hash = Some(u16_at(data, field::preauth::HASH_ALGORITHMS)?);
                }
                ctx::ENCRYPTION => {
                    if u16_at(data, field::id_list::COUNT)? != 1 {
                        return Err(WireError::new("cipher count"));
                    }
                    r.cipher = Some(u16_at(data, field::id_list::IDS)?);
                }
                ctx::SIGNING => {
                    if u16_at(data, field::id_list::COUNT)? != 1 {
                        return Err(WireError::new("signing algorithm count"));
                    }
                    r.signing_alg = Some(u16_at(data, field::id_list::IDS)?);
                }
                _ => {}
            }
            off = off + c::DATA + len;
        }
        Ok(r)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A 3.1.1 NEGOTIATE request with all three contexts (MS-SMB2 2.2.3,
    /// 2.2.3.1.1, 2.2.3.1.7, 2.2.3.1.2), written out by hand.
    #[test]
    fn negotiate_request_bytes() {
        let mut out = alloc::vec![0u8; 64];
        NegotiateRequest {
            dialects: &[dialect::SMB3_1_1],
            security_mode: security_mode::SIGNING_ENABLED,
            capabilities: CAP_ENCRYPTION,
            client_guid: [0x11; 16],
            salt: [0x22; 32],
            signing_algs: &[sign_alg::AES_GMAC],
            ciphers: &[cipher::AES_128_GCM],
        }
        .emit(&mut out);
        let mut want = alloc::vec![];
        #[rustfmt::skip]
        want.extend_from_slice(&[
            36, 0,                   // StructureSize
            1, 0,                    // DialectCount
            1, 0,                    // SecurityMode: signing enabled
            0, 0,                    // Reserved
            0x40, 0, 0, 0,           // Capabilities: ENCRYPTION
        ]);
        want.extend_from_slice(&[0x11; 16]); // ClientGuid
        #[rustfmt::skip]
        want.extend_from_slice(&[
            104, 0, 0, 0,            // NegotiateContextOffset: 64 + 40
            3, 0,                    // NegotiateContextCount
            0, 0,                    // Reserved2
            0x11, 0x03,              // Dialects: 3.1.1
            0, 0,                    // padding to 8
            1, 0,                    // ContextType: PREAUTH_INTEGRITY
            38, 0,                   // DataLength
            0, 0, 0, 0,              // Reserved
            1, 0,                    // HashAlgorithmCount
            32, 0,                   // SaltLength
            1, 0,                    // HashAlgorithms: SHA-512
        ]);
        want.extend_from_slice(&[0x22; 32]); // Salt
        #[rustfmt::skip]
        want.extend_from_slice(&[
            0, 0,                    // padding to 8
            8, 0,                    // ContextType: SIGNING_CAPABILITIES
            4, 0,                    // DataLength
            0, 0, 0, 0,              // Reserved
            1, 0,                    // SigningAlgorithmCount
            2, 0,                    // SigningAlgorithms: AES-GMAC
            0, 0, 0, 0,              // padding to 8
            2, 0,                    // ContextType: ENCRYPTION_CAPABILITIES
            4, 0,                    // DataLength
            0, 0, 0, 0,              // Reserved
            1, 0,                    // CipherCount
            2, 0,                    // Ciphers: AES-128-GCM
        ]);
        assert_eq!(&out[64..], &want[..]);

        // Without 3.1.1: no contexts, offset and count zero.
        let mut old = alloc::vec![0u8; 64];
        NegotiateRequest {
            dialects: &[dialect::SMB2_1, dialect::SMB3_0_2],
            security_mode: security_mode::SIGNING_REQUIRED,
            capabilities: 0,
            client_guid: [0x11; 16],
            salt: [0; 32],
            signing_algs: &[],
            ciphers: &[],
        }
        .emit(&mut old);
        assert_eq!(old.len(), 64 + 36 + 4);
        assert_eq!(&old[64 + 28..64 + 34], &[0; 6]);
        assert_eq!(&old[64 + 36..], &[0x10, 0x02, 0x02, 0x03]);
    }
}
