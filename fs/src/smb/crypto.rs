//! Message signing and key derivation (MS-SMB2 3.1.4.1, 3.1.4.2, 3.2.5.3).
//!
//! - 2.1: HMAC-SHA256 keyed with the session key, first 16 bytes.
//! - 3.0.x: AES-128-CMAC with a key from the SP800-108 counter-mode KDF
//!   (HMAC-SHA256), label `SMB2AESCMAC\0`, context `SmbSign\0`.
//! - 3.1.1: label `SMBSigningKey\0`, context = the preauth integrity hash;
//!   the algorithm comes from the signing-capabilities context (AES-CMAC,
//!   AES-GMAC or HMAC-SHA256).
//!
//! AES-GMAC is computed here (GHASH in portable code over the `aes` block
//! cipher) rather than through `aes-gcm`, whose `polyval` backend does not
//! compile for `x86_64-unknown-none`; a test checks it against `aes-gcm`.
//!
//! [`PreauthHash`] chains SHA-512 over the NEGOTIATE and SESSION_SETUP
//! messages. Pure computation: no state beyond the key, no I/O.

use crate::smb::wire::header::{flags, Header, HEADER_LEN};
use crate::smb::wire::negotiate::sign_alg;
use aes::cipher::{Array, BlockCipherEncrypt};
use aes::Aes128;
use cmac::Cmac;
use hmac::{Hmac, KeyInit, Mac};
use sha2::{Digest, Sha256, Sha512};

/// Signature field range in the header.
const SIG: core::ops::Range<usize> = 48..64;

/// SP800-108 counter-mode KDF with HMAC-SHA256, one block, L = 128 bits:
/// HMAC(key, 1u32 BE || label || 0x00 || context || 128u32 BE)[..16].
/// `label` and `context` include their trailing NULs where the protocol
/// names them so.
pub fn kdf(key: &[u8], label: &[u8], context: &[u8]) -> [u8; 16] {
    let mut m = <Hmac<Sha256> as KeyInit>::new_from_slice(key).expect("HMAC takes any key length");
    m.update(&1u32.to_be_bytes());
    m.update(label);
    m.update(&[0]);
    m.update(context);
    m.update(&128u32.to_be_bytes());
    let mut out = [0u8; 16];
    out.copy_from_slice(&m.finalize().into_bytes()[..16]);
    out
}

/// Multiplication in GF(2^128) with GCM's bit order (SP800-38D 6.3),
/// branch-free.
fn gf128_mul(x: u128, y: u128) -> u128 {
    const R: u128 = 0xe1 << 120;
    let mut z = 0u128;
    let mut v = y;
    for i in 0..128 {
        let bit = (x >> (127 - i)) & 1;
        z ^= v & 0u128.wrapping_sub(bit);
        v = (v >> 1) ^ (R & 0u128.wrapping_sub(v & 1));
    }
    z
}

/// AES-128-GMAC: the GCM tag of `aad` with an empty plaintext and a 96-bit
/// nonce. The 16 bytes of `aad` at `zero_at` are taken as zero (the SMB2
/// signature field), so the message need not be copied.
pub fn gmac(key: &[u8; 16], nonce: &[u8; 12], aad: &[u8], zero_at: usize) -> [u8; 16] {
    let aes = <Aes128 as aes::cipher::KeyInit>::new(&Array::from(*key));
    let mut h = Array::from([0u8; 16]);
    aes.encrypt_block(&mut h);
    let h = u128::from_be_bytes(h.into());
    let mut y = 0u128;
    for (i, chunk) in aad.chunks(16).enumerate() {
        let mut b = [0u8; 16];
        b[..chunk.len()].copy_from_slice(chunk);
        let start = i * 16;
        for (j, byte) in b.iter_mut().enumerate().take(chunk.len()) {
            let k = start + j;
            if k >= zero_at && k < zero_at + 16 {
                *byte = 0;
            }
        }
        y = gf128_mul(y ^ u128::from_be_bytes(b), h);
    }
    let lens = ((aad.len() as u128) * 8) << 64;
    y = gf128_mul(y ^ lens, h);
    let mut j0 = [0u8; 16];
    j0[..12].copy_from_slice(nonce);
    j0[15] = 1;
    let mut ek = Array::from(j0);
    aes.encrypt_block(&mut ek);
    (u128::from_be_bytes(ek.into()) ^ y).to_be_bytes()
}

/// The 3.1.1 preauth integrity hash: H0 = 0^64, Hn = SHA-512(Hn-1 || msg).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PreauthHash(pub [u8; 64]);

impl Default for PreauthHash {
    fn default() -> Self {
        PreauthHash([0; 64])
    }
}

impl PreauthHash {
    /// Chains one whole message (header included, no transport framing).
    pub fn update(&mut self, msg: &[u8]) {
        let mut h = Sha512::new();
        h.update(self.0);
        h.update(msg);
        self.0.copy_from_slice(&h.finalize());
    }
}

/// The signing algorithm of a session.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SignAlg {
    HmacSha256,
    AesCmac,
    AesGmac,
}

impl SignAlg {
    /// From a signing-capabilities id.
    pub fn from_id(id: u16) -> Option<Self> {
        match id {
            sign_alg::HMAC_SHA256 => Some(SignAlg::HmacSha256),
            sign_alg::AES_CMAC => Some(SignAlg::AesCmac),
            sign_alg::AES_GMAC => Some(SignAlg::AesGmac),
            _ => None,
        }
    }
}

/// A session's signing key and algorithm.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Signer {
    pub alg: SignAlg,
    pub key: [u8; 16],
}

impl Signer {
    /// Dialect 2.x: HMAC-SHA256 with the session key.
    pub fn smb2(session_key: &[u8; 16]) -> Self {
        Signer {
            alg: SignAlg::HmacSha256,
            key: *session_key,
        }
    }

    /// Dialect 3.0 / 3.0.2: AES-CMAC with the derived key.
    pub fn smb30(session_key: &[u8; 16]) -> Self {
        Signer {
            alg: SignAlg::AesCmac,
            key: kdf(session_key, b"SMB2AESCMAC\0", b"SmbSign\0"),
        }
    }

    /// Dialect 3.1.1 with the negotiated algorithm and the preauth hash
    /// taken before the final SESSION_SETUP response.
    pub fn smb311(session_key: &[u8; 16], alg: SignAlg, preauth: &PreauthHash) -> Self {
        Signer {
            alg,
            key: kdf(session_key, b"SMBSigningKey\0", &preauth.0),
        }
    }

    /// The signature of one message (its signature field counted as zero).
    /// `msg` must hold at least a header.
    pub fn signature(&self, msg: &[u8]) -> [u8; 16] {
        let zero = [0u8; 16];
        let mut out = [0u8; 16];
        match self.alg {
            SignAlg::HmacSha256 => {
                let mut m = <Hmac<Sha256> as KeyInit>::new_from_slice(&self.key)
                    .expect("HMAC takes any key length");
                m.update(&msg[..SIG.start]);
                m.update(&zero);
                m.update(&msg[SIG.end..]);
                out.copy_from_slice(&m.finalize().into_bytes()[..16]);
            }
            SignAlg::AesCmac => {
                let mut m =
                    <Cmac<Aes128> as KeyInit>::new_from_slice(&self.key).expect("16-byte key");
                m.update(&msg[..SIG.start]);
                m.update(&zero);
                m.update(&msg[SIG.end..]);
                out.copy_from_slice(&m.finalize().into_bytes());
            }
            SignAlg::AesGmac => {
                let h = Header::new_unchecked(msg);
                let mut nonce = [0u8; 12];
                nonce[..8].copy_from_slice(&h.message_id().to_le_bytes());
                let mut role = 0u32;
                if h.flags() & flags::SERVER_TO_REDIR != 0 {
                    role |= 1;
                }
                if h.command() == crate::smb::wire::cmd::CANCEL {
                    role |= 2;
                }
                nonce[8..].copy_from_slice(&role.to_le_bytes());
                out = gmac(&self.key, &nonce, msg, SIG.start);
            }
        }
        out
    }

    /// Signs one message in place: sets the SIGNED flag and the signature.
    pub fn sign(&self, msg: &mut [u8]) {
        debug_assert!(msg.len() >= HEADER_LEN);
        let mut h = Header::new_unchecked(&mut *msg);
        let fl = h.flags() | flags::SIGNED;
        h.set_flags(fl);
        h.set_signature(&[0; 16]);
        let s = self.signature(msg);
        Header::new_unchecked(msg).set_signature(&s);
    }

    /// Checks the signature of a received message (constant-time compare).
    pub fn verify(&self, msg: &[u8]) -> bool {
        if msg.len() < HEADER_LEN {
            return false;
        }
        let want = self.signature(msg);
        let got = &msg[SIG];
        want.iter().zip(got).fold(0u8, |a, (x, y)| a | (x ^ y)) == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::smb::wire::header::HeaderRepr;
    use alloc::vec::Vec;

    #[test]
    fn sign_verify_each_alg_and_reject_forgery() {
        for alg in [SignAlg::HmacSha256, SignAlg::AesCmac, SignAlg::AesGmac] {
            let s = Signer { alg, key: [3; 16] };
            let mut m = Vec::new();
            HeaderRepr {
                command: 5,
                message_id: 9,
                flags: flags::SERVER_TO_REDIR,
                ..Default::default()
            }
            .emit(&mut m);
            m.extend_from_slice(b"body bytes");
            s.sign(&mut m);
            assert!(s.verify(&m), "{alg:?}");
            let mut f = m.clone();
            *f.last_mut().unwrap() ^= 1;
            assert!(!s.verify(&f), "{alg:?}");
            let other = Signer { alg, key: [4; 16] };
            assert!(!other.verify(&m));
        }
    }

    #[test]
    fn gmac_matches_aes_gcm() {
        use aes_gcm::aead::AeadInOut;
        use aes_gcm::{Aes128Gcm, Nonce};
        for len in [0usize, 1, 15, 16, 17, 64, 100, 333] {
            let aad: Vec<u8> = (0..len).map(|i| (i * 7 + 3) as u8).collect();
            let key = [0x5a; 16];
            let nonce = [9u8; 12];
            let g = <Aes128Gcm as KeyInit>::new_from_slice(&key).unwrap();
            let mut empty: [u8; 0] = [];
            let tag = g
                .encrypt_inout_detached(&Nonce::from(nonce), &aad, (&mut empty[..]).into())
                .unwrap();
            // zero_at beyond the data: nothing masked.
            assert_eq!(
                gmac(&key, &nonce, &aad, usize::MAX - 16)[..],
                tag[..],
                "len {len}"
            );
        }
    }

    // RFC 4493 example 1 (AES-CMAC of the empty message), through the crate.
    #[test]
    fn cmac_known_answer() {
        let key = [
            0x2b, 0x7e, 0x15, 0x16, 0x28, 0xae, 0xd2, 0xa6, 0xab, 0xf7, 0x15, 0x88, 0x09, 0xcf,
            0x4f, 0x3c,
        ];
        let m = <Cmac<Aes128> as KeyInit>::new_from_slice(&key).unwrap();
        assert_eq!(
            m.finalize().into_bytes()[..],
            [
                0xbb, 0x1d, 0x69, 0x29, 0xe9, 0x59, 0x37, 0x28, 0x7f, 0xa3, 0x7d, 0x12, 0x9b, 0x75,
                0x67, 0x46
            ]
        );
    }
}
