//! NEGOTIATE (MS-SMB2 2.2.3, 2.2.4): dialects 2.0.2, 2.1, 3.0, 3.0.2 and 3.1.1, with the
//! 3.1.1 negotiate contexts the client uses — preauth integrity (SHA-512)
//! and signing capabilities.

use super::header::HEADER_LEN;
use super::{put_u16, put_u32, region, slice, u16_at, u32_at, Result, WireError};
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

/// Field offsets of the NEGOTIATE response body (after the header).
mod field {
    pub const STRUCTURE_SIZE: usize = 0;
    pub const SECURITY_MODE: usize = 2;
    pub const DIALECT: usize = 4;
    pub const CONTEXT_COUNT: usize = 6;
    pub const SERVER_GUID: usize = 8;
    pub const CAPABILITIES: usize = 24;
    pub const MAX_TRANSACT: usize = 28;
    pub const MAX_READ: usize = 32;
    pub const MAX_WRITE: usize = 36;
    pub const SECURITY_BUFFER_OFFSET: usize = 56;
    pub const SECURITY_BUFFER_LENGTH: usize = 58;
    pub const CONTEXT_OFFSET: usize = 60;
    /// Length of the fixed part.
    pub const LEN: usize = 64;
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
        let base = out.len() - HEADER_LEN;
        let with_ctx = self.dialects.contains(&dialect::SMB3_1_1);
        put_u16(out, 36);
        put_u16(out, self.dialects.len() as u16);
        put_u16(out, self.security_mode);
        put_u16(out, 0);
        put_u32(out, self.capabilities);
        out.extend_from_slice(&self.client_guid);
        let ctx_off_pos = out.len();
        put_u32(out, 0); // NegotiateContextOffset, patched below
        let ctx_count = 2 + u16::from(!self.ciphers.is_empty());
        put_u16(out, if with_ctx { ctx_count } else { 0 });
        put_u16(out, 0);
        for d in self.dialects {
            put_u16(out, *d);
        }
        if !with_ctx {
            return;
        }
        // Contexts start 8-aligned (relative to the header).
        while !(out.len() - base).is_multiple_of(8) {
            out.push(0);
        }
        let off = (out.len() - base) as u32;
        out[ctx_off_pos..ctx_off_pos + 4].copy_from_slice(&off.to_le_bytes());
        // Preauth integrity.
        put_u16(out, ctx::PREAUTH_INTEGRITY);
        put_u16(out, 2 + 2 + 2 + 32);
        put_u32(out, 0);
        put_u16(out, 1);
        put_u16(out, 32);
        put_u16(out, HASH_SHA512);
        out.extend_from_slice(&self.salt);
        while !(out.len() - base).is_multiple_of(8) {
            out.push(0);
        }
        // Signing capabilities.
        put_u16(out, ctx::SIGNING);
        put_u16(out, 2 + 2 * self.signing_algs.len() as u16);
        put_u32(out, 0);
        put_u16(out, self.signing_algs.len() as u16);
        for a in self.signing_algs {
            put_u16(out, *a);
        }
        if self.ciphers.is_empty() {
            return;
        }
        while !(out.len() - base).is_multiple_of(8) {
            out.push(0);
        }
        // Encryption capabilities.
        put_u16(out, ctx::ENCRYPTION);
        put_u16(out, 2 + 2 * self.ciphers.len() as u16);
        put_u32(out, 0);
        put_u16(out, self.ciphers.len() as u16);
        for c in self.ciphers {
            put_u16(out, *c);
        }
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
        let b = slice(msg, HEADER_LEN, field::LEN)?;
        if u16_at(b, field::STRUCTURE_SIZE)? != 65 {
            return Err(WireError::new("negotiate structure size"));
        }
        let security_mode = u16_at(b, field::SECURITY_MODE)?;
        let dialect = u16_at(b, field::DIALECT)?;
        let ctx_count = u16_at(b, field::CONTEXT_COUNT)? as usize;
        let mut server_guid = [0u8; 16];
        server_guid.copy_from_slice(slice(b, field::SERVER_GUID, 16)?);
        let capabilities = u32_at(b, field::CAPABILITIES)?;
        let max_transact = u32_at(b, field::MAX_TRANSACT)?;
        let max_read = u32_at(b, field::MAX_READ)?;
        let max_write = u32_at(b, field::MAX_WRITE)?;
        let sec_off = u16_at(b, field::SECURITY_BUFFER_OFFSET)? as usize;
        let sec_len = u16_at(b, field::SECURITY_BUFFER_LENGTH)? as usize;
        let ctx_off = u32_at(b, field::CONTEXT_OFFSET)? as usize;
        let security_buffer = region(msg, sec_off, sec_len)?.to_vec();
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
        if ctx_count > 64 {
            return Err(WireError::new("too many negotiate contexts"));
        }
        let mut off = ctx_off;
        for i in 0..ctx_count {
            if i > 0 {
                off = off.checked_add(7).ok_or(WireError::new("context offset"))? & !7;
            }
            let ty = u16_at(msg, off)?;
            let len = u16_at(msg, off + 2)? as usize;
            let data = slice(msg, off + 8, len)?;
            match ty {
                ctx::PREAUTH_INTEGRITY => {
                    if u16_at(data, 0)? != 1 {
                        return Err(WireError::new("preauth algorithm count"));
                    }
                    r.preauth_hash = Some(u16_at(data, 4)?);
                }
                ctx::ENCRYPTION => {
                    if u16_at(data, 0)? != 1 {
                        return Err(WireError::new("cipher count"));
                    }
                    r.cipher = Some(u16_at(data, 2)?);
                }
                ctx::SIGNING => {
                    if u16_at(data, 0)? != 1 {
                        return Err(WireError::new("signing algorithm count"));
                    }
                    r.signing_alg = Some(u16_at(data, 2)?);
                }
                _ => {}
            }
            off = off + 8 + len;
        }
        Ok(r)
    }
}
