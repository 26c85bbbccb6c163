//! The SMB 3.x TRANSFORM_HEADER (MS-SMB2 2.2.41): the 52 bytes in front of
//! an encrypted message (or compound chain). The AEAD tag travels in
//! `Signature`; the additional authenticated data is the header from
//! `Nonce` to its end, so the session id, the size and the nonce cannot be
//! changed without the tag failing. Layout only: the ciphers are in
//! [`crate::crypto`].

use super::{
    put_fixed, set_u16, set_u32, set_u64, slice, u16_at, u32_at, u64_at, Result, WireError,
};
use alloc::vec::Vec;

/// Transform header length in bytes.
pub const TRANSFORM_LEN: usize = 52;
/// The protocol id `\xfdSMB` that marks a transform header.
pub const PROTOCOL_ID: [u8; 4] = [0xfd, b'S', b'M', b'B'];
/// `Flags` (3.1.1) / `EncryptionAlgorithm` (3.0.x): both say "encrypted"
/// with the value 1 (3.0.x names it SMB2_ENCRYPTION_AES128_CCM).
pub const FLAG_ENCRYPTED: u16 = 0x0001;

/// Field offsets of SMB2 TRANSFORM_HEADER (MS-SMB2 2.2.41).
mod field {
    use core::ops::Range;
    pub const PROTOCOL: Range<usize> = 0..4;
    pub const SIGNATURE: Range<usize> = 4..20;
    pub const NONCE: Range<usize> = 20..36;
    pub const ORIGINAL_SIZE: usize = 36;
    pub const RESERVED: usize = 40;
    pub const FLAGS: usize = 42;
    pub const SESSION_ID: usize = 44;
    /// What the AEAD authenticates: Nonce through SessionId.
    pub const AAD: core::ops::Range<usize> = 20..52;
}

/// Where the authenticated data lies in a transform header.
pub const AAD: core::ops::Range<usize> = field::AAD;
/// Where the tag lies in a transform header.
pub const SIGNATURE: core::ops::Range<usize> = field::SIGNATURE;

/// Does `frame` start with a transform header's protocol id?
pub fn is_transform(frame: &[u8]) -> bool {
    frame.get(field::PROTOCOL) == Some(&PROTOCOL_ID[..])
}

/// A parsed transform header.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TransformHeader {
    /// The AEAD tag over the AAD and the encrypted message.
    pub signature: [u8; 16],
    /// 11 bytes used by CCM, 12 by GCM; the rest zero.
    pub nonce: [u8; 16],
    /// Length of the plaintext message that follows (encrypted).
    pub original_size: u32,
    pub flags: u16,
    pub session_id: u64,
}

impl TransformHeader {
    /// Parses the header at the start of `frame` and checks that exactly
    /// `original_size` encrypted bytes follow it.
    pub fn parse(frame: &[u8]) -> Result<Self> {
        if frame.len() < TRANSFORM_LEN {
            return Err(WireError::new("short transform header"));
        }
        if !is_transform(frame) {
            return Err(WireError::new("not a transform header"));
        }
        let mut signature = [0u8; 16];
        signature.copy_from_slice(slice(
            frame,
            field::SIGNATURE.start,
            field::SIGNATURE.len(),
        )?);
        let mut nonce = [0u8; 16];
        nonce.copy_from_slice(slice(frame, field::NONCE.start, field::NONCE.len())?);
        let h = TransformHeader {
            signature,
            nonce,
            original_size: u32_at(frame, field::ORIGINAL_SIZE)?,
            flags: u16_at(frame, field::FLAGS)?,
            session_id: u64_at(frame, field::SESSION_ID)?,
        };
        if h.flags != FLAG_ENCRYPTED {
            return Err(WireError::new("transform flags"));
        }
        if frame.len() - TRANSFORM_LEN != h.original_size as usize {
            return Err(WireError::new("transform size mismatch"));
        }
        Ok(h)
    }

    /// Appends the [`TRANSFORM_LEN`] header bytes (the caller appends the
    /// ciphertext).
    pub fn emit(&self, out: &mut Vec<u8>) {
        let b = put_fixed(out, TRANSFORM_LEN);
        b[field::PROTOCOL].copy_from_slice(&PROTOCOL_ID);
        b[field::SIGNATURE].copy_from_slice(&self.signature);
        b[field::NONCE].copy_from_slice(&self.nonce);
        set_u32(b, field::ORIGINAL_SIZE, self.original_size);
        set_u16(b, field::RESERVED, 0);
        set_u16(b, field::FLAGS, self.flags);
        set_u64(b, field::SESSION_ID, self.session_id);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A transform header (MS-SMB2 2.2.41), written out by hand.
    #[test]
    fn transform_header_bytes() {
        let mut v = Vec::new();
        TransformHeader {
            signature: [0xaa; 16],
            nonce: [0xbb; 16],
            original_size: 0x0102,
            flags: FLAG_ENCRYPTED,
            session_id: 0x0304,
        }
        .emit(&mut v);
        let mut want = Vec::new();
        want.extend_from_slice(&[0xfd, b'S', b'M', b'B']); // ProtocolId
        want.extend_from_slice(&[0xaa; 16]); // Signature
        want.extend_from_slice(&[0xbb; 16]); // Nonce
        #[rustfmt::skip]
        want.extend_from_slice(&[
            2, 1, 0, 0,              // OriginalMessageSize
            0, 0,                    // Reserved
            1, 0,                    // Flags: encrypted
            4, 3, 0, 0, 0, 0, 0, 0,  // SessionId
        ]);
        assert_eq!(v, want);
    }

    #[test]
    fn round_trip_and_checks() {
        let h = TransformHeader {
            signature: [1; 16],
            nonce: [2; 16],
            original_size: 3,
            flags: FLAG_ENCRYPTED,
            session_id: 0x1122_3344_5566_7788,
        };
        let mut v = Vec::new();
        h.emit(&mut v);
        assert_eq!(v.len(), TRANSFORM_LEN);
        v.extend_from_slice(b"abc");
        assert!(is_transform(&v));
        assert_eq!(TransformHeader::parse(&v).unwrap(), h);
        // A size that does not match what follows, a short frame, a plain
        // SMB2 header: errors, not panics.
        assert!(TransformHeader::parse(&v[..v.len() - 1]).is_err());
        assert!(TransformHeader::parse(&v[..10]).is_err());
        let mut plain = v.clone();
        plain[0] = 0xfe;
        assert!(TransformHeader::parse(&plain).is_err());
        let mut bad_flags = v.clone();
        bad_flags[42] = 2;
        assert!(TransformHeader::parse(&bad_flags).is_err());
    }
}
