//! The hostile server's side of SMB 3.0 and 3.1.1 signing: the NTLMv2
//! session key from the client's AUTHENTICATE (the server knows the
//! password), the check of the AUTHENTICATE's MIC (MS-NLMP 3.1.5.1.2, as
//! a Windows server makes it), the SP800-108 signing keys of MS-SMB2 3.1.4.2 (3.1.1's over
//! the preauth integrity hash), and AES-CMAC signatures. Written from the
//! specifications (MS-NLMP 3.3.2, MS-SMB2 3.1.4.1), not from the client,
//! so a mistake in one is not mirrored in the other. Pure functions.

use aes::Aes128;
use cmac::Cmac;
use hmac::{Hmac, KeyInit, Mac};
use md4::{Digest as _, Md4};
use md5::Md5;
use sha2::{Sha256, Sha512};

fn hmac_md5(key: &[u8], parts: &[&[u8]]) -> [u8; 16] {
    let mut m = <Hmac<Md5> as KeyInit>::new_from_slice(key).expect("any key length");
    for p in parts {
        m.update(p);
    }
    m.finalize().into_bytes().into()
}

fn utf16(s: &str) -> Vec<u8> {
    s.encode_utf16().flat_map(|u| u.to_le_bytes()).collect()
}

/// (offset, length) of the NTLM field at `at` of the message at `m`.
fn field(m: &[u8], at: usize) -> Option<&[u8]> {
    let len = u16::from_le_bytes(m.get(at..at + 2)?.try_into().ok()?) as usize;
    let off = u32::from_le_bytes(m.get(at + 4..at + 8)?.try_into().ok()?) as usize;
    m.get(off..off.checked_add(len)?)
}

/// The session key of the NTLMv2 AUTHENTICATE message inside `request`
/// (a SESSION_SETUP request, raw or SPNEGO-wrapped) for `password`: the
/// SessionBaseKey (no key exchange), or `None` if there is no such
/// message or it has no NTLMv2 response (an anonymous one). An empty user
/// name is the null user, whose password is empty: the key of an NTLMv2
/// response over it is what anyone on the path can compute.
pub fn session_key(request: &[u8], password: &str) -> Option<[u8; 16]> {
    let at = request.windows(8).position(|w| w == b"NTLMSSP\0")?;
    let m = &request[at..];
    if m.get(8..12)? != [3, 0, 0, 0] {
        return None;
    }
    let nt = field(m, 20)?;
    let domain = field(m, 28)?;
    let user = field(m, 36)?;
    let user: Vec<u16> = user
        .chunks_exact(2)
        .map(|c| u16::from_le_bytes([c[0], c[1]]))
        .collect();
    let user = String::from_utf16_lossy(&user).to_uppercase();
    let password = if user.is_empty() { "" } else { password };
    let nt_hash: [u8; 16] = Md4::digest(utf16(password)).into();
    let ntowfv2 = hmac_md5(&nt_hash, &[&utf16(&user), domain]);
    Some(hmac_md5(&ntowfv2, &[nt.get(..16)?]))
}

/// What the AUTHENTICATE inside `request` says of its MIC: `None` when
/// its NTLMv2 response's MsvAvFlags does not announce one (or there is
/// no such message), else whether the MIC verifies: HMAC-MD5 under the
/// session key for `password` over `negotiate` || `challenge` || the
/// AUTHENTICATE with its MIC (bytes 72..88) zeroed.
pub fn mic_verifies(
    request: &[u8],
    negotiate: &[u8],
    challenge: &[u8],
    password: &str,
) -> Option<bool> {
    let at = request.windows(8).position(|w| w == b"NTLMSSP\0")?;
    let m = &request[at..];
    let nt = field(m, 20)?;
    // AV pairs after NTProofStr (16) and the blob's fixed 28 bytes.
    let mut pairs = nt.get(44..)?;
    let mut flags = 0u32;
    while pairs.len() >= 4 {
        let id = u16::from_le_bytes([pairs[0], pairs[1]]);
        let len = u16::from_le_bytes([pairs[2], pairs[3]]) as usize;
        let v = pairs.get(4..4 + len)?;
        if id == 0 {
            break;
        }
        if id == 6 && len == 4 {
            flags = u32::from_le_bytes(v.try_into().ok()?);
        }
        pairs = &pairs[4 + len..];
    }
    if flags & 0x2 == 0 {
        return None;
    }
    let key = session_key(request, password)?;
    let mut zeroed = m.get(..88)?.to_vec();
    zeroed[72..88].fill(0);
    let want = hmac_md5(&key, &[negotiate, challenge, &zeroed, &m[88..]]);
    Some(want[..] == m[72..88])
}

/// The SP800-108 counter-mode KDF with HMAC-SHA256 (MS-SMB2 3.1.4.2),
/// 128 bits out.
fn kdf(key: &[u8], label: &[u8], context: &[u8]) -> [u8; 16] {
    let mut m = <Hmac<Sha256> as KeyInit>::new_from_slice(key).expect("any key length");
    m.update(&[0, 0, 0, 1]);
    m.update(label);
    m.update(&[0]);
    m.update(context);
    m.update(&[0, 0, 0, 128]);
    let mut out = [0u8; 16];
    out.copy_from_slice(&m.finalize().into_bytes()[..16]);
    out
}

/// The 3.0 / 3.0.2 signing key.
pub fn signing_key_30(session_key: &[u8; 16]) -> [u8; 16] {
    kdf(session_key, b"SMB2AESCMAC\0", b"SmbSign\0")
}

/// The 3.1.1 signing key over the preauth hash.
pub fn signing_key_311(session_key: &[u8; 16], preauth: &[u8; 64]) -> [u8; 16] {
    kdf(session_key, b"SMBSigningKey\0", preauth)
}

/// The preauth integrity hash after `msg` (SHA-512 chain).
pub fn preauth_update(h: &mut [u8; 64], msg: &[u8]) {
    let mut d = Sha512::new();
    d.update(*h);
    d.update(msg);
    h.copy_from_slice(&d.finalize());
}

/// Signs one message in place with AES-CMAC: SMB2_FLAGS_SIGNED set, the
/// signature over the message with its signature field zero.
pub fn sign(key: &[u8; 16], msg: &mut [u8]) {
    if msg.len() < 64 {
        return;
    }
    msg[16] |= 0x8;
    msg[48..64].fill(0);
    let mut m = <Cmac<Aes128> as KeyInit>::new_from_slice(key).expect("16-byte key");
    m.update(msg);
    let sig: [u8; 16] = m.finalize().into_bytes().into();
    msg[48..64].copy_from_slice(&sig);
}
