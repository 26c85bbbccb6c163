//! Message signing and key derivation (MS-SMB2 3.1.4.1, 3.1.4.2, 3.2.5.3).
//!
//! - 2.1: HMAC-SHA256 keyed with the session key, first 16 bytes.
//! - 3.0.x: AES-128-CMAC with a key from the SP800-108 counter-mode KDF
//!   (HMAC-SHA256), label `SMB2AESCMAC\0`, context `SmbSign\0`.
//! - 3.1.1: label `SMBSigningKey\0`, context = the preauth integrity hash;
//!   the algorithm comes from the signing-capabilities context (AES-CMAC,
//!   AES-GMAC or HMAC-SHA256).
//!
//! AES-GMAC is `aes-gcm` with an empty plaintext (its `polyval` builds for
//! `x86_64-unknown-none` with the soft backend the kernel target selects);
//! a test checks it against a portable GHASH written out here.
//!
//! [`PreauthHash`] chains SHA-512 over the NEGOTIATE and SESSION_SETUP
//! messages.
//!
//! Encryption (MS-SMB2 3.1.4.3, 3.2.4.1.4, 3.2.5.1.1.1): a [`Sealer`] holds
//! the session's two cipher keys — client→server ("ServerIn") and
//! server→client ("ServerOut") — derived with the same KDF: 3.0.x labels
//! `SMB2AESCCM\0` with contexts `ServerIn \0` / `ServerOut\0`; 3.1.1 labels
//! `SMBC2SCipherKey\0` / `SMBS2CCipherKey\0` with the preauth hash as
//! context. [`Sealer::seal`] wraps a message (or a compound chain) in a
//! transform header; [`Sealer::open`] checks and unwraps one. The AEADs are
//! RustCrypto's `aes-gcm` and `ccm` over the `aes` block cipher.
//!
//! Pure computation: no state beyond the keys and a nonce counter, no I/O.

use crate::wire::header::{flags, Header, HEADER_LEN, SIGNATURE as SIG};
use crate::wire::negotiate::{cipher, sign_alg};
use crate::wire::transform::{self, TransformHeader, TRANSFORM_LEN};
use aes::cipher::Array;
#[cfg(test)]
use aes::cipher::BlockCipherEncrypt;
use aes::Aes128;
use aes_gcm::aead::AeadInOut;
use aes_gcm::Aes128Gcm;
use alloc::boxed::Box;
use alloc::vec::Vec;
use cmac::Cmac;
use hmac::{Hmac, KeyInit, Mac};
use sha2::{Digest, Sha256, Sha512};

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
/// branch-free (the test oracle of [`gmac`]: 128 steps a block, far too
/// slow for signing 1 MB reads, which is why `gmac` uses `aes-gcm`).
#[cfg(test)]
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
/// signature field).
pub fn gmac(key: &[u8; 16], nonce: &[u8; 12], aad: &[u8], zero_at: usize) -> [u8; 16] {
    let g = <Aes128Gcm as KeyInit>::new_from_slice(key).expect("16-byte key");
    let mut masked;
    let aad = if zero_at < aad.len() {
        masked = aad.to_vec();
        let end = (zero_at + 16).min(masked.len());
        masked[zero_at..end].fill(0);
        &masked[..]
    } else {
        aad
    };
    let mut empty: [u8; 0] = [];
    g.encrypt_inout_detached(&Array::from(*nonce), aad, (&mut empty[..]).into())
        .expect("GMAC input far below the AEAD limits")
        .into()
}

/// [`gmac`] written out over the block cipher: GHASH in portable code.
#[cfg(test)]
fn gmac_reference(key: &[u8; 16], nonce: &[u8; 12], aad: &[u8], zero_at: usize) -> [u8; 16] {
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

/// A session's signing key and algorithm. The key is redacted in `Debug`
/// and zeroed on drop.
#[derive(Clone, PartialEq, Eq)]
pub struct Signer {
    pub alg: SignAlg,
    pub key: [u8; 16],
}

impl core::fmt::Debug for Signer {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Signer")
            .field("alg", &self.alg)
            .field("key", &crate::secret::Redacted)
            .finish()
    }
}

impl Drop for Signer {
    fn drop(&mut self) {
        zeroize::Zeroize::zeroize(&mut self.key);
    }
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
                if h.command() == crate::wire::cmd::CANCEL {
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

/// AES-128-CCM as SMB 3 uses it: 16-byte tag, 11-byte nonce.
type Aes128Ccm = ccm::Ccm<Aes128, ccm::consts::U16, ccm::consts::U11>;

/// The cipher of an encrypted session.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Cipher {
    Aes128Ccm,
    Aes128Gcm,
}

impl Cipher {
    /// From an encryption-capabilities cipher id (128-bit ones only).
    pub fn from_id(id: u16) -> Option<Self> {
        match id {
            cipher::AES_128_CCM => Some(Cipher::Aes128Ccm),
            cipher::AES_128_GCM => Some(Cipher::Aes128Gcm),
            _ => None,
        }
    }

    /// Its name as Linux's `DebugData` prints it.
    pub fn name(self) -> &'static str {
        match self {
            Cipher::Aes128Ccm => "AES-128-CCM",
            Cipher::Aes128Gcm => "AES-128-GCM",
        }
    }

    /// Nonce bytes used (CCM 11, GCM 12; the transform field holds 16).
    fn nonce_len(self) -> usize {
        match self {
            Cipher::Aes128Ccm => 11,
            Cipher::Aes128Gcm => 12,
        }
    }
}

/// One direction's key, expanded once.
enum Aead {
    Ccm(Box<Aes128Ccm>),
    Gcm(Box<Aes128Gcm>),
}

impl Aead {
    fn new(c: Cipher, key: &[u8; 16]) -> Self {
        match c {
            Cipher::Aes128Ccm => Aead::Ccm(Box::new(
                <Aes128Ccm as KeyInit>::new_from_slice(key).expect("16-byte key"),
            )),
            Cipher::Aes128Gcm => Aead::Gcm(Box::new(
                <Aes128Gcm as KeyInit>::new_from_slice(key).expect("16-byte key"),
            )),
        }
    }

    /// Encrypts `buf` in place; returns the tag.
    fn encrypt(&self, nonce: &[u8; 16], aad: &[u8], buf: &mut [u8]) -> Option<[u8; 16]> {
        let tag = match self {
            Aead::Ccm(c) => {
                let n = Array::try_from(&nonce[..11]).ok()?;
                c.encrypt_inout_detached(&n, aad, buf.into()).ok()?.into()
            }
            Aead::Gcm(g) => {
                let n = Array::try_from(&nonce[..12]).ok()?;
                g.encrypt_inout_detached(&n, aad, buf.into()).ok()?.into()
            }
        };
        Some(tag)
    }

    /// Decrypts `buf` in place if `tag` authenticates it and `aad`.
    fn decrypt(&self, nonce: &[u8; 16], aad: &[u8], buf: &mut [u8], tag: &[u8; 16]) -> bool {
        match self {
            Aead::Ccm(c) => Array::try_from(&nonce[..11]).is_ok_and(|n| {
                c.decrypt_inout_detached(&n, aad, buf.into(), &Array::from(*tag))
                    .is_ok()
            }),
            Aead::Gcm(g) => Array::try_from(&nonce[..12]).is_ok_and(|n| {
                g.decrypt_inout_detached(&n, aad, buf.into(), &Array::from(*tag))
                    .is_ok()
            }),
        }
    }
}

/// Why [`Sealer::open`] refused a frame.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OpenError {
    /// The transform header is malformed or its size does not match.
    Malformed,
    /// It names another session.
    WrongSession,
    /// The tag did not verify: tampered, or the keys differ.
    BadTag,
}

/// A session's encryption state: both keys and the nonce counter.
pub struct Sealer {
    pub cipher: Cipher,
    session_id: u64,
    encrypt: Aead,
    decrypt: Aead,
    /// Nonces are this counter (8 bytes LE) followed by `salt`: unique per
    /// key for the session's life (a key never outlives its session).
    next_nonce: u64,
    salt: [u8; 4],
}

impl core::fmt::Debug for Sealer {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Sealer")
            .field("cipher", &self.cipher)
            .field("session_id", &self.session_id)
            .finish_non_exhaustive()
    }
}

impl Sealer {
    /// Dialect 3.0 / 3.0.2 keys (always AES-128-CCM there).
    pub fn smb30(session_key: &[u8; 16], session_id: u64, salt: [u8; 4]) -> Self {
        let mut enc = kdf(session_key, b"SMB2AESCCM\0", b"ServerIn \0");
        let mut dec = kdf(session_key, b"SMB2AESCCM\0", b"ServerOut\0");
        let s = Self::with_keys(Cipher::Aes128Ccm, &enc, &dec, session_id, salt);
        zeroize::Zeroize::zeroize(&mut enc);
        zeroize::Zeroize::zeroize(&mut dec);
        s
    }

    /// Dialect 3.1.1 keys: the same preauth hash as the signing key.
    pub fn smb311(
        session_key: &[u8; 16],
        cipher: Cipher,
        preauth: &PreauthHash,
        session_id: u64,
        salt: [u8; 4],
    ) -> Self {
        let mut enc = kdf(session_key, b"SMBC2SCipherKey\0", &preauth.0);
        let mut dec = kdf(session_key, b"SMBS2CCipherKey\0", &preauth.0);
        let s = Self::with_keys(cipher, &enc, &dec, session_id, salt);
        zeroize::Zeroize::zeroize(&mut enc);
        zeroize::Zeroize::zeroize(&mut dec);
        s
    }

    /// From explicit keys (`enc`: what this side sends with; `dec`: what it
    /// receives with). A server's sealer is a client's with the keys swapped.
    pub fn with_keys(
        cipher: Cipher,
        enc: &[u8; 16],
        dec: &[u8; 16],
        session_id: u64,
        salt: [u8; 4],
    ) -> Self {
        Sealer {
            cipher,
            session_id,
            encrypt: Aead::new(cipher, enc),
            decrypt: Aead::new(cipher, dec),
            next_nonce: 0,
            salt,
        }
    }

    /// `msg` (one message or a compound chain) in a transform header.
    pub fn seal(&mut self, msg: &[u8]) -> Vec<u8> {
        let mut nonce = [0u8; 16];
        nonce[..8].copy_from_slice(&self.next_nonce.to_le_bytes());
        let n = self.cipher.nonce_len();
        nonce[8..n].copy_from_slice(&self.salt[..n - 8]);
        self.next_nonce += 1;
        let mut out = Vec::with_capacity(TRANSFORM_LEN + msg.len());
        TransformHeader {
            signature: [0; 16],
            nonce,
            original_size: msg.len() as u32,
            flags: transform::FLAG_ENCRYPTED,
            session_id: self.session_id,
        }
        .emit(&mut out);
        out.extend_from_slice(msg);
        let (head, body) = out.split_at_mut(TRANSFORM_LEN);
        let tag = self
            .encrypt
            .encrypt(&nonce, &head[transform::AAD], body)
            .expect("SMB messages are far below the AEAD length limits");
        out[transform::SIGNATURE].copy_from_slice(&tag);
        out
    }

    /// The plaintext of a transform frame, after checking its header, its
    /// session and its tag. Never panics on hostile input.
    pub fn open(&self, frame: &[u8]) -> Result<Vec<u8>, OpenError> {
        let h = TransformHeader::parse(frame).map_err(|_| OpenError::Malformed)?;
        if h.session_id != self.session_id {
            return Err(OpenError::WrongSession);
        }
        let mut body = frame[TRANSFORM_LEN..].to_vec();
        if !self
            .decrypt
            .decrypt(&h.nonce, &frame[transform::AAD], &mut body, &h.signature)
        {
            return Err(OpenError::BadTag);
        }
        Ok(body)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::header::HeaderRepr;

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
    fn gmac_matches_the_portable_ghash_with_and_without_mask() {
        for len in [0usize, 1, 15, 16, 17, 64, 100, 333] {
            let aad: Vec<u8> = (0..len).map(|i| (i * 7 + 3) as u8).collect();
            for zero_at in [0, 5, 48, usize::MAX - 16] {
                assert_eq!(
                    gmac(&[0x5a; 16], &[9; 12], &aad, zero_at),
                    gmac_reference(&[0x5a; 16], &[9; 12], &aad, zero_at),
                    "len {len} zero_at {zero_at}"
                );
            }
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

    #[test]
    fn seal_open_both_ciphers_and_refuse_tampering() {
        for c in [Cipher::Aes128Ccm, Cipher::Aes128Gcm] {
            let (k1, k2) = ([1u8; 16], [2u8; 16]);
            let mut client = Sealer::with_keys(c, &k1, &k2, 77, [9; 4]);
            let mut server = Sealer::with_keys(c, &k2, &k1, 77, [8; 4]);
            let msg: Vec<u8> = (0..1000).map(|i| i as u8).collect();
            let f = client.seal(&msg);
            assert_eq!(f.len(), TRANSFORM_LEN + msg.len());
            assert_ne!(&f[TRANSFORM_LEN..], &msg[..], "{c:?}: not encrypted");
            assert_eq!(server.open(&f).unwrap(), msg, "{c:?}");
            // Nonces differ between messages.
            let f2 = client.seal(&msg);
            assert_ne!(f[20..36], f2[20..36]);
            // Any flipped byte (header AAD, tag, ciphertext) fails.
            for at in [4, 25, 44, TRANSFORM_LEN, f.len() - 1] {
                let mut t = f.clone();
                t[at] ^= 0x40;
                assert!(server.open(&t).is_err(), "{c:?} byte {at}");
            }
            // Wrong direction's key, another session, truncation.
            assert_eq!(client.open(&f).unwrap_err(), OpenError::BadTag);
            let other = Sealer::with_keys(c, &k2, &k1, 78, [0; 4]);
            assert_eq!(other.open(&f).unwrap_err(), OpenError::WrongSession);
            assert_eq!(
                server.open(&f[..f.len() - 1]).unwrap_err(),
                OpenError::Malformed
            );
            let back = server.seal(b"reply");
            assert_eq!(client.open(&back).unwrap(), b"reply");
        }
    }

    // MS-SMB2 3.0 CCM test vector idea, checked against the crate itself:
    // the KDF labels give four distinct keys per session.
    #[test]
    fn key_labels_differ_per_direction_and_dialect() {
        let sk = [0x42u8; 16];
        let p = PreauthHash([5; 64]);
        let keys = [
            kdf(&sk, b"SMB2AESCCM\0", b"ServerIn \0"),
            kdf(&sk, b"SMB2AESCCM\0", b"ServerOut\0"),
            kdf(&sk, b"SMBC2SCipherKey\0", &p.0),
            kdf(&sk, b"SMBS2CCipherKey\0", &p.0),
        ];
        for i in 0..4 {
            for j in i + 1..4 {
                assert_ne!(keys[i], keys[j]);
            }
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
