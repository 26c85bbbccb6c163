//! NTLMSSP (MS-NLMP) with NTLMv2 responses, raw (not SPNEGO-wrapped), as
//! SESSION_SETUP tokens: the NEGOTIATE message, a bounds-checked parser for
//! the server's CHALLENGE, and the AUTHENTICATE message with the session key
//! derived from it.
//!
//! No key exchange, no MIC, no NTLMv1: SMB signing keys come from the
//! session base key (MS-NLMP 3.3.2), which is also the exported key when
//! KEY_EXCH is not negotiated. Pure functions; randomness and time are
//! passed in.

use crate::secret::{Redacted, Secret};
use crate::wire::{put_fixed, set_u16, set_u32, slice, u16_at, u32_at, utf16le};
use crate::wire::{Result, WireError};
use alloc::vec::Vec;
use hmac::{Hmac, KeyInit, Mac};
use md4::{Digest, Md4};
use md5::Md5;
use zeroize::Zeroize;

/// Message signature.
pub const SIGNATURE: &[u8; 8] = b"NTLMSSP\0";

/// Negotiate flags.
pub mod flags {
    pub const UNICODE: u32 = 0x0000_0001;
    pub const REQUEST_TARGET: u32 = 0x0000_0004;
    pub const SIGN: u32 = 0x0000_0010;
    pub const NTLM: u32 = 0x0000_0200;
    pub const ANONYMOUS: u32 = 0x0000_0800;
    pub const ALWAYS_SIGN: u32 = 0x0000_8000;
    pub const EXTENDED_SESSIONSECURITY: u32 = 0x0008_0000;
    pub const TARGET_INFO: u32 = 0x0080_0000;
    pub const F128: u32 = 0x2000_0000;
    pub const KEY_EXCH: u32 = 0x4000_0000;
    pub const F56: u32 = 0x8000_0000;
}

/// The flags the client asks for.
pub const CLIENT_FLAGS: u32 = flags::UNICODE
    | flags::REQUEST_TARGET
    | flags::NTLM
    | flags::ALWAYS_SIGN
    | flags::EXTENDED_SESSIONSECURITY
    | flags::TARGET_INFO
    | flags::F128
    | flags::F56;

/// Field offsets of the three messages and their parts, each relative to
/// the start of its structure, named as MS-NLMP names them. Every field of
/// a layout is listed, including those the client leaves zero or skips.
#[allow(dead_code)]
mod field {
    use core::ops::Range;
    /// Signature, then MessageType: the start of every message.
    pub const SIGNATURE: Range<usize> = 0..8;
    pub const MESSAGE_TYPE: usize = 8;

    /// NEGOTIATE_MESSAGE (MS-NLMP 2.2.1.1), without Version.
    pub mod negotiate_message {
        pub const NEGOTIATE_FLAGS: usize = 12;
        pub const DOMAIN_NAME_FIELDS: usize = 16;
        pub const WORKSTATION_FIELDS: usize = 24;
        /// Length of the message as the client sends it.
        pub const LEN: usize = 32;
    }

    /// CHALLENGE_MESSAGE (MS-NLMP 2.2.1.2).
    pub mod challenge_message {
        pub const TARGET_NAME_FIELDS: usize = 12;
        pub const NEGOTIATE_FLAGS: usize = 20;
        pub const SERVER_CHALLENGE: usize = 24;
        pub const RESERVED: usize = 32;
        pub const TARGET_INFO_FIELDS: usize = 40;
        pub const VERSION: usize = 48;
    }

    /// AUTHENTICATE_MESSAGE (MS-NLMP 2.2.1.3), without Version and MIC:
    /// six *Fields from LmChallengeResponseFields on, then NegotiateFlags.
    pub mod authenticate_message {
        pub const LM_CHALLENGE_RESPONSE_FIELDS: usize = 12;
        pub const NT_CHALLENGE_RESPONSE_FIELDS: usize = 20;
        pub const DOMAIN_NAME_FIELDS: usize = 28;
        pub const USER_NAME_FIELDS: usize = 36;
        pub const WORKSTATION_FIELDS: usize = 44;
        pub const ENCRYPTED_RANDOM_SESSION_KEY_FIELDS: usize = 52;
        pub const NEGOTIATE_FLAGS: usize = 60;
        /// Where the payload starts.
        pub const PAYLOAD: usize = 64;
    }

    /// The Len / MaxLen / BufferOffset triple of every *Fields.
    pub mod fields {
        pub const LEN: usize = 0;
        pub const MAX_LEN: usize = 2;
        pub const BUFFER_OFFSET: usize = 4;
        /// Length of the triple.
        pub const SIZE: usize = 8;
    }

    /// AV_PAIR (MS-NLMP 2.2.2.1).
    pub mod av_pair {
        pub const AV_ID: usize = 0;
        pub const AV_LEN: usize = 2;
        pub const VALUE: usize = 4;
    }

    /// NTLMv2_CLIENT_CHALLENGE (MS-NLMP 2.2.2.7), the blob after
    /// NTProofStr.
    pub mod client_challenge {
        pub const RESP_TYPE: usize = 0;
        pub const HI_RESP_TYPE: usize = 1;
        pub const RESERVED1: usize = 2;
        pub const RESERVED2: usize = 4;
        pub const TIMESTAMP: usize = 8;
        pub const CHALLENGE_FROM_CLIENT: usize = 16;
        pub const RESERVED3: usize = 24;
        /// The server's AV pairs, then four zero bytes (MS-NLMP 3.3.2).
        pub const AV_PAIRS: usize = 28;
    }
}

/// MessageType values (MS-NLMP 2.2.1).
mod message_type {
    pub const NEGOTIATE: u32 = 1;
    pub const CHALLENGE: u32 = 2;
    pub const AUTHENTICATE: u32 = 3;
}

/// RespType and HiRespType of NTLMv2_CLIENT_CHALLENGE: both 1.
const CLIENT_CHALLENGE_VERSION: u8 = 1;
/// The zero bytes after the AV pairs in the NTLMv2 blob (MS-NLMP 3.3.2:
/// `ServerName || Z(4)`).
const BLOB_TRAILER: usize = 4;
/// Length of an LMv2 response (zeros when the server sent a timestamp).
const LM_RESPONSE_LEN: usize = 24;

/// AV pair id MsvAvTimestamp.
const AV_TIMESTAMP: u16 = 7;
/// AV pair id MsvAvEOL.
const AV_EOL: u16 = 0;

type HmacMd5 = Hmac<Md5>;

fn hmac_md5(key: &[u8], parts: &[&[u8]]) -> [u8; 16] {
    let mut m = <HmacMd5 as KeyInit>::new_from_slice(key).expect("HMAC takes any key length");
    for p in parts {
        m.update(p);
    }
    let mut out = [0u8; 16];
    out.copy_from_slice(&m.finalize().into_bytes());
    out
}

/// Who logs in. The password is a [`Secret`]: redacted in `Debug`,
/// zeroed on drop.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Credentials {
    pub user: alloc::string::String,
    pub password: Secret,
    pub domain: alloc::string::String,
    pub workstation: alloc::string::String,
}

impl Credentials {
    /// No user name and no password: a null session (`sec=none`), which
    /// authenticates anonymously and has no key (MS-NLMP 3.1.5.1.2).
    pub fn is_anonymous(&self) -> bool {
        self.user.is_empty() && self.password.is_empty()
    }
}

/// The NT hash: MD4 of the UTF-16LE password.
pub fn nt_hash(password: &str) -> [u8; 16] {
    let d = Md4::digest(utf16le(password));
    let mut out = [0u8; 16];
    out.copy_from_slice(&d);
    out
}

/// NTOWFv2 = HMAC-MD5(NT hash, UTF-16LE(upper(user) + domain)).
pub fn ntowfv2(password: &str, user: &str, domain: &str) -> [u8; 16] {
    let mut ud = user.to_uppercase();
    ud.push_str(domain);
    let mut h = nt_hash(password);
    let key = hmac_md5(&h, &[&utf16le(&ud)]);
    h.zeroize();
    key
}

/// The session base key from NTOWFv2 and the NTProofStr (the first 16
/// bytes of the NT response).
pub fn session_base_key(ntowfv2: &[u8; 16], nt_proof: &[u8]) -> [u8; 16] {
    hmac_md5(ntowfv2, &[nt_proof])
}

/// The NEGOTIATE message (no domain or workstation supplied).
pub fn negotiate_message() -> Vec<u8> {
    use field::negotiate_message as f;
    let mut v = Vec::with_capacity(f::LEN);
    let b = put_fixed(&mut v, f::LEN);
    b[field::SIGNATURE].copy_from_slice(SIGNATURE);
    set_u32(b, field::MESSAGE_TYPE, message_type::NEGOTIATE);
    set_u32(b, f::NEGOTIATE_FLAGS, CLIENT_FLAGS);
    // DomainNameFields and WorkstationFields stay zero: empty.
    v
}

/// A parsed CHALLENGE message.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Challenge<'a> {
    pub flags: u32,
    pub server_challenge: [u8; 8],
    pub target_name: &'a [u8],
    pub target_info: &'a [u8],
}

/// The payload a *Fields triple at `at` points to, bounds checked.
fn payload_field(msg: &[u8], at: usize) -> Result<&[u8]> {
    let len = u16_at(msg, at + field::fields::LEN)? as usize;
    let off = u32_at(msg, at + field::fields::BUFFER_OFFSET)? as usize;
    if len == 0 {
        return Ok(&[]);
    }
    slice(msg, off, len).map_err(|_| WireError::new("NTLM field outside message"))
}

impl<'a> Challenge<'a> {
    /// Parses a CHALLENGE message; every field is bounds checked and the AV
    /// pair list must be well formed up to its EOL.
    pub fn parse(msg: &'a [u8]) -> Result<Self> {
        use field::challenge_message as f;
        if slice(msg, field::SIGNATURE.start, field::SIGNATURE.len())? != SIGNATURE {
            return Err(WireError::new("not NTLMSSP"));
        }
        if u32_at(msg, field::MESSAGE_TYPE)? != message_type::CHALLENGE {
            return Err(WireError::new("not an NTLM CHALLENGE"));
        }
        let target_name = payload_field(msg, f::TARGET_NAME_FIELDS)?;
        let flags = u32_at(msg, f::NEGOTIATE_FLAGS)?;
        let mut server_challenge = [0u8; 8];
        let sc = slice(msg, f::SERVER_CHALLENGE, server_challenge.len())?;
        server_challenge.copy_from_slice(sc);
        let target_info = if flags & flags::TARGET_INFO != 0 {
            payload_field(msg, f::TARGET_INFO_FIELDS)?
        } else {
            &[]
        };
        let c = Challenge {
            flags,
            server_challenge,
            target_name,
            target_info,
        };
        c.av_pairs()?;
        Ok(c)
    }

    /// The AV pairs of the target info as (id, value), up to MsvAvEOL.
    pub fn av_pairs(&self) -> Result<Vec<(u16, &'a [u8])>> {
        use field::av_pair as f;
        let ti = self.target_info;
        let mut out = Vec::new();
        let mut off = 0usize;
        while off < ti.len() {
            let id = u16_at(ti, off + f::AV_ID)?;
            let len = u16_at(ti, off + f::AV_LEN)? as usize;
            let val = slice(ti, off + f::VALUE, len)?;
            if id == AV_EOL {
                return Ok(out);
            }
            out.push((id, val));
            off += f::VALUE + len;
        }
        if ti.is_empty() {
            Ok(out)
        } else {
            Err(WireError::new("AV pairs without EOL"))
        }
    }

    /// The server's MsvAvTimestamp, if given.
    pub fn timestamp(&self) -> Option<u64> {
        let pairs = self.av_pairs().ok()?;
        let (_, v) = pairs.into_iter().find(|(id, _)| *id == AV_TIMESTAMP)?;
        let b: [u8; 8] = v.try_into().ok()?;
        Some(u64::from_le_bytes(b))
    }
}

/// The NTLMv2 computation of MS-NLMP 3.3.2. The session key is redacted
/// in `Debug` and zeroed on drop.
#[derive(Clone, PartialEq, Eq)]
pub struct NtlmV2 {
    /// NTProofStr followed by the client blob.
    pub nt_response: Vec<u8>,
    /// LMv2 response (zeros when the server sent a timestamp).
    pub lm_response: Vec<u8>,
    /// The session base key (= exported session key without KEY_EXCH).
    pub session_key: [u8; 16],
}

impl core::fmt::Debug for NtlmV2 {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("NtlmV2")
            .field("nt_response", &self.nt_response)
            .field("lm_response", &self.lm_response)
            .field("session_key", &Redacted)
            .finish()
    }
}

impl Drop for NtlmV2 {
    fn drop(&mut self) {
        self.session_key.zeroize();
    }
}

/// Computes the NTLMv2 responses and session key. `time` is a FILETIME.
pub fn ntlmv2(
    creds: &Credentials,
    server_challenge: &[u8; 8],
    target_info: &[u8],
    client_challenge: &[u8; 8],
    time: u64,
    lm_zero: bool,
) -> NtlmV2 {
    use field::client_challenge as f;
    let mut key = ntowfv2(&creds.password, &creds.user, &creds.domain);
    let mut blob = Vec::with_capacity(f::AV_PAIRS + target_info.len() + BLOB_TRAILER);
    let b = put_fixed(&mut blob, f::AV_PAIRS);
    b[f::RESP_TYPE] = CLIENT_CHALLENGE_VERSION;
    b[f::HI_RESP_TYPE] = CLIENT_CHALLENGE_VERSION;
    b[f::TIMESTAMP..f::CHALLENGE_FROM_CLIENT].copy_from_slice(&time.to_le_bytes());
    b[f::CHALLENGE_FROM_CLIENT..f::RESERVED3].copy_from_slice(client_challenge);
    blob.extend_from_slice(target_info);
    blob.extend_from_slice(&[0u8; BLOB_TRAILER]);
    let proof = hmac_md5(&key, &[server_challenge, &blob]);
    let mut nt_response = proof.to_vec();
    nt_response.extend_from_slice(&blob);
    let lm_response = if lm_zero {
        alloc::vec![0u8; LM_RESPONSE_LEN]
    } else {
        let mut v = hmac_md5(&key, &[server_challenge, client_challenge]).to_vec();
        v.extend_from_slice(client_challenge);
        v
    };
    let session_key = hmac_md5(&key, &[&proof]);
    key.zeroize();
    NtlmV2 {
        nt_response,
        lm_response,
        session_key,
    }
}

/// Builds the AUTHENTICATE message answering `ch`; returns it with the
/// session key. `now` (FILETIME) is used when the server sent no timestamp.
pub fn authenticate_message(
    creds: &Credentials,
    ch: &Challenge<'_>,
    client_challenge: &[u8; 8],
    now: u64,
) -> (Vec<u8>, [u8; 16]) {
    let ts = ch.timestamp();
    let r = ntlmv2(
        creds,
        &ch.server_challenge,
        ch.target_info,
        client_challenge,
        ts.unwrap_or(now),
        ts.is_some(),
    );
    let unicode = ch.flags & flags::UNICODE != 0;
    let enc = |s: &str| {
        if unicode {
            utf16le(s)
        } else {
            s.as_bytes().to_vec()
        }
    };
    let domain = enc(&creds.domain);
    let user = enc(&creds.user);
    let ws = enc(&creds.workstation);
    let fl = (CLIENT_FLAGS & ch.flags) | if unicode { flags::UNICODE } else { 0 };
    // The last payload is the (empty) EncryptedRandomSessionKey.
    let v = build_authenticate(
        [&r.lm_response, &r.nt_response, &domain, &user, &ws, &[]],
        fl & !flags::KEY_EXCH,
    );
    (v, r.session_key)
}

/// The anonymous AUTHENTICATE message answering `ch` (MS-NLMP 3.1.5.1.2
/// and 3.3.2, user name and password both empty): NTLMSSP_NEGOTIATE_ANONYMOUS
/// set, an empty NtChallengeResponse, a one-byte zero
/// LmChallengeResponse, no domain or user name, no session key. Nothing
/// in it depends on a secret, so a session set up with it has no key to
/// sign or seal with — none is derived, whatever the server's flags say.
pub fn anonymous_authenticate_message(ch: &Challenge<'_>, workstation: &str) -> Vec<u8> {
    let unicode = ch.flags & flags::UNICODE != 0;
    let ws = if unicode {
        utf16le(workstation)
    } else {
        workstation.as_bytes().to_vec()
    };
    let lm = [0u8; 1];
    build_authenticate(
        [&lm, &[], &[], &[], &ws, &[]],
        (CLIENT_FLAGS & ch.flags & !flags::KEY_EXCH)
            | flags::ANONYMOUS
            | if unicode { flags::UNICODE } else { 0 },
    )
}

/// An AUTHENTICATE message (without Version and MIC) from its six
/// payloads, in the order of their *Fields from LmChallengeResponseFields
/// on, and its NegotiateFlags.
fn build_authenticate(fields: [&[u8]; 6], negotiate_flags: u32) -> Vec<u8> {
    use field::authenticate_message as a;
    use field::fields as t;
    let mut v = Vec::with_capacity(a::PAYLOAD + fields.iter().map(|f| f.len()).sum::<usize>());
    let b = put_fixed(&mut v, a::PAYLOAD);
    b[field::SIGNATURE].copy_from_slice(SIGNATURE);
    set_u32(b, field::MESSAGE_TYPE, message_type::AUTHENTICATE);
    debug_assert_eq!(
        a::LM_CHALLENGE_RESPONSE_FIELDS + fields.len() * t::SIZE,
        a::NEGOTIATE_FLAGS
    );
    let mut off = a::PAYLOAD;
    for (i, f) in fields.iter().enumerate() {
        let at = a::LM_CHALLENGE_RESPONSE_FIELDS + i * t::SIZE;
        set_u16(b, at + t::LEN, f.len() as u16);
        set_u16(b, at + t::MAX_LEN, f.len() as u16);
        set_u32(b, at + t::BUFFER_OFFSET, off as u32);
        off += f.len();
    }
    set_u32(b, a::NEGOTIATE_FLAGS, negotiate_flags);
    for f in fields {
        v.extend_from_slice(f);
    }
    v
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::put_u32;

    fn hex(s: &str) -> Vec<u8> {
        (0..s.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
            .collect()
    }

    // MS-NLMP 4.2.4 (NTLMv2 authentication) test values.
    #[test]
    fn ms_nlmp_ntlmv2_vector() {
        assert_eq!(
            nt_hash("Password").to_vec(),
            hex("a4f49c406510bdcab6824ee7c30fd852")
        );
        assert_eq!(
            ntowfv2("Password", "User", "Domain").to_vec(),
            hex("0c868a403bfd7a93a3001ef22ef02e3f")
        );
        let creds = Credentials {
            user: "User".into(),
            password: "Password".into(),
            domain: "Domain".into(),
            workstation: "COMPUTER".into(),
        };
        let mut ti = Vec::new();
        ti.extend_from_slice(&[2, 0, 12, 0]);
        ti.extend_from_slice(&utf16le("Domain"));
        ti.extend_from_slice(&[1, 0, 12, 0]);
        ti.extend_from_slice(&utf16le("Server"));
        ti.extend_from_slice(&[0, 0, 0, 0]);
        let r = ntlmv2(
            &creds,
            &[1, 0x23, 0x45, 0x67, 0x89, 0xab, 0xcd, 0xef],
            &ti,
            &[0xaa; 8],
            0,
            false,
        );
        assert_eq!(
            r.nt_response[..16].to_vec(),
            hex("68cd0ab851e51c96aabc927bebef6a1c")
        );
        assert_eq!(
            r.session_key.to_vec(),
            hex("8de40ccadbc14a82f15cb0ad0de95ca3")
        );
        assert_eq!(
            r.lm_response[..16].to_vec(),
            hex("86c35097ac9cec102554764a57cccc19")
        );
    }

    #[test]
    fn challenge_parse_rejects_bad_fields() {
        let mut m = Vec::new();
        m.extend_from_slice(SIGNATURE);
        put_u32(&mut m, 2);
        m.extend_from_slice(&[0, 0, 0, 0, 48, 0, 0, 0]); // target name
        put_u32(&mut m, CLIENT_FLAGS);
        m.extend_from_slice(&[9; 8]);
        m.extend_from_slice(&[0; 8]);
        m.extend_from_slice(&[8, 0, 8, 0, 48, 0, 0, 0]); // target info
        m.extend_from_slice(&[7, 0, 0, 0, 0, 0, 0, 0]); // ts pair header… (8 bytes)
                                                        // target info: timestamp pair truncated on purpose below
        let mut ok = m.clone();
        ok.truncate(48);
        ok.extend_from_slice(&[0, 0, 0, 0, 0, 0, 0, 0]);
        assert!(Challenge::parse(&ok).is_ok());
        let mut bad = ok.clone();
        bad[40] = 200; // target info length beyond the message
        assert!(Challenge::parse(&bad).is_err());
        let mut bad = ok.clone();
        bad[48] = 1;
        bad[50] = 50; // AV pair longer than the target info
        assert!(Challenge::parse(&bad).is_err());
        for n in 0..ok.len() {
            let _ = Challenge::parse(&ok[..n]);
        }
    }

    /// Null credentials answer with MS-NLMP's anonymous AUTHENTICATE:
    /// ANONYMOUS set, NtChallengeResponse empty, LmChallengeResponse one
    /// zero byte, no domain or user; nothing derived from a password.
    #[test]
    fn anonymous_authenticate_carries_no_response() {
        let mut m = Vec::new();
        m.extend_from_slice(SIGNATURE);
        put_u32(&mut m, 2);
        m.extend_from_slice(&[0, 0, 0, 0, 48, 0, 0, 0]);
        put_u32(&mut m, CLIENT_FLAGS | flags::KEY_EXCH);
        m.extend_from_slice(&[9; 8]);
        m.extend_from_slice(&[0; 8]);
        m.extend_from_slice(&[4, 0, 4, 0, 48, 0, 0, 0]);
        m.extend_from_slice(&[0, 0, 0, 0]);
        let ch = Challenge::parse(&m).unwrap();
        let creds = Credentials {
            user: "".into(),
            password: "".into(),
            domain: "".into(),
            workstation: "WS".into(),
        };
        assert!(creds.is_anonymous());
        let a = anonymous_authenticate_message(&ch, &creds.workstation);
        let field = |at: usize| payload_field(&a, at).unwrap().to_vec();
        use field::authenticate_message as f;
        assert_eq!(field(f::LM_CHALLENGE_RESPONSE_FIELDS), [0u8]);
        assert!(field(f::NT_CHALLENGE_RESPONSE_FIELDS).is_empty());
        assert!(field(f::DOMAIN_NAME_FIELDS).is_empty());
        assert!(field(f::USER_NAME_FIELDS).is_empty());
        assert_eq!(field(f::WORKSTATION_FIELDS), utf16le("WS"));
        assert!(field(f::ENCRYPTED_RANDOM_SESSION_KEY_FIELDS).is_empty());
        let fl = u32_at(&a, f::NEGOTIATE_FLAGS).unwrap();
        assert_ne!(fl & flags::ANONYMOUS, 0);
        assert_eq!(fl & flags::KEY_EXCH, 0);
        // A user with an empty password is not anonymous.
        let named = Credentials {
            user: "u".into(),
            ..creds.clone()
        };
        assert!(!named.is_anonymous());
    }
}
