//! NTLMSSP (MS-NLMP) with NTLMv2 responses, raw (not SPNEGO-wrapped), as
//! SESSION_SETUP tokens: the NEGOTIATE message, a bounds-checked parser for
//! the server's CHALLENGE, and the AUTHENTICATE message with the session key
//! derived from it.
//!
//! The AUTHENTICATE binds the exchange (MS-NLMP 3.1.5.1.2): the NTLMv2
//! response carries the server's AV pairs, MsvAvTargetName (the SPN
//! `cifs/<server>`) and, when the server sent a timestamp, MsvAvFlags with
//! "MIC present"; the MIC is HMAC-MD5 under the exported session key over
//! the NEGOTIATE, the CHALLENGE and the AUTHENTICATE (its MIC zeroed), so
//! a server that checks it notices any change to the three messages. The
//! NTProofStr covers the AV pairs, so the flag cannot be struck.
//!
//! No key exchange, no NTLMv1, no channel bindings (SMB runs over no TLS
//! channel to bind to): SMB signing keys come from the session base key
//! (MS-NLMP 3.3.2), which is also the exported key when KEY_EXCH is not
//! negotiated. Every length the messages carry is a u16; a field that
//! would not fit is refused ([`TooLong`]), never wrapped. Pure functions;
//! randomness and time are passed in.

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

    /// AUTHENTICATE_MESSAGE (MS-NLMP 2.2.1.3): six *Fields from
    /// LmChallengeResponseFields on, NegotiateFlags, Version (zero: the
    /// VERSION flag is not negotiated) and the MIC.
    pub mod authenticate_message {
        use core::ops::Range;
        pub const LM_CHALLENGE_RESPONSE_FIELDS: usize = 12;
        pub const NT_CHALLENGE_RESPONSE_FIELDS: usize = 20;
        pub const DOMAIN_NAME_FIELDS: usize = 28;
        pub const USER_NAME_FIELDS: usize = 36;
        pub const WORKSTATION_FIELDS: usize = 44;
        pub const ENCRYPTED_RANDOM_SESSION_KEY_FIELDS: usize = 52;
        pub const NEGOTIATE_FLAGS: usize = 60;
        pub const VERSION: usize = 64;
        pub const MIC: Range<usize> = 72..88;
        /// Where the payload starts.
        pub const PAYLOAD: usize = 88;
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

/// AV pair ids (MS-NLMP 2.2.2.1).
pub mod av_id {
    pub const EOL: u16 = 0;
    pub const FLAGS: u16 = 6;
    pub const TIMESTAMP: u16 = 7;
    pub const TARGET_NAME: u16 = 9;
    pub const CHANNEL_BINDINGS: u16 = 10;
}
/// MsvAvFlags bit: the AUTHENTICATE carries a MIC.
pub const AV_FLAG_MIC: u32 = 0x2;

/// A field of an NTLM message whose length would not fit its u16 length
/// field (MS-NLMP 2.2.1.3, 2.2.2.1) or the SESSION_SETUP request's
/// SecurityBufferLength: the message is refused, not wrapped. The text
/// names the field, in the words a failed mount shows.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TooLong(pub &'static str);

impl TooLong {
    /// True when what grew is the server's part (its CHALLENGE's
    /// TargetInfo, echoed in the NTLMv2 response, which dominates the
    /// whole message), not one of the mount's own names.
    pub fn from_server(&self) -> bool {
        self.0 == NT_RESPONSE || self.0 == MESSAGE
    }
}

/// [`TooLong`]'s names.
const NT_RESPONSE: &str =
    "NTLM CHALLENGE TargetInfo too long: the NTLMv2 response would exceed 64 KiB";
const DOMAIN: &str = "domain name too long for NTLM (64 KiB)";
const USER: &str = "user name too long for NTLM (64 KiB)";
const WORKSTATION: &str = "workstation name too long for NTLM (64 KiB)";
const TARGET_NAME: &str = "server name too long for the NTLM target name (64 KiB)";
const MESSAGE: &str = "NTLM CHALLENGE TargetInfo too long: the AUTHENTICATE would exceed 64 KiB";
const NAMES: &str = "user, domain and workstation names too long together for NTLM (64 KiB)";

/// A length as its u16 field, or [`TooLong`] naming the field.
fn len16(n: usize, what: &'static str) -> core::result::Result<u16, TooLong> {
    u16::try_from(n).map_err(|_| TooLong(what))
}

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

/// The NT hash: MD4 of the UTF-16LE password. The UTF-16LE copy of the
/// password and the digest's own copy are zeroed before they are freed.
pub fn nt_hash(password: &str) -> [u8; 16] {
    let mut wide = utf16le(password);
    let mut d = Md4::digest(&wide);
    wide.as_mut_slice().zeroize();
    let mut out = [0u8; 16];
    out.copy_from_slice(&d);
    d.as_mut_slice().zeroize();
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
    /// The whole CHALLENGE message as received (the MIC covers it).
    pub raw: &'a [u8],
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
            raw: msg,
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
            if id == av_id::EOL {
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
        let (_, v) = pairs.into_iter().find(|(id, _)| *id == av_id::TIMESTAMP)?;
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

/// The AV pairs of the client's NTLMv2 response (MS-NLMP 3.1.5.1.2,
/// 2.2.2.1): the server's own, in its order and unchanged (a server
/// compares them with what it sent: Samba refuses a missing or changed
/// name or timestamp), then MsvAvFlags — the server's flags, with "MIC
/// present" when `mic` — and MsvAvTargetName, the SPN `spn` in UTF-16LE,
/// then MsvAvEOL. A server's own MsvAvFlags or MsvAvTargetName gives way
/// to the client's.
pub fn client_av_pairs(
    ch: &Challenge<'_>,
    spn: &str,
    mic: bool,
) -> core::result::Result<Vec<u8>, TooLong> {
    let pairs = ch.av_pairs().unwrap_or_default();
    let mut av_flags = 0u32;
    let mut out = Vec::with_capacity(ch.target_info.len() + 2 * spn.len() + 24);
    fn push(
        out: &mut Vec<u8>,
        id: u16,
        value: &[u8],
        what: &'static str,
    ) -> core::result::Result<(), TooLong> {
        let len = len16(value.len(), what)?;
        out.extend_from_slice(&id.to_le_bytes());
        out.extend_from_slice(&len.to_le_bytes());
        out.extend_from_slice(value);
        Ok(())
    }
    for (id, value) in pairs {
        match id {
            av_id::FLAGS => {
                if let Ok(b) = <[u8; 4]>::try_from(value) {
                    av_flags |= u32::from_le_bytes(b);
                }
            }
            av_id::TARGET_NAME => {}
            _ => push(&mut out, id, value, NT_RESPONSE)?,
        }
    }
    if mic {
        av_flags |= AV_FLAG_MIC;
    }
    if av_flags != 0 {
        push(&mut out, av_id::FLAGS, &av_flags.to_le_bytes(), NT_RESPONSE)?;
    }
    push(&mut out, av_id::TARGET_NAME, &utf16le(spn), TARGET_NAME)?;
    push(&mut out, av_id::EOL, &[], NT_RESPONSE)?;
    Ok(out)
}

/// The MIC of an AUTHENTICATE message (MS-NLMP 3.1.5.1.2): HMAC-MD5 under
/// the exported session key over the NEGOTIATE, the CHALLENGE and the
/// AUTHENTICATE with its MIC field zero.
pub fn mic(
    exported_session_key: &[u8; 16],
    negotiate: &[u8],
    challenge: &[u8],
    auth: &[u8],
) -> [u8; 16] {
    use field::authenticate_message as a;
    let zero = [0u8; 16];
    let (head, tail) = match (auth.get(..a::MIC.start), auth.get(a::MIC.end..)) {
        (Some(h), Some(t)) => (h, t),
        _ => (auth, &[][..]),
    };
    hmac_md5(
        exported_session_key,
        &[negotiate, challenge, head, &zero, tail],
    )
}

/// Builds the AUTHENTICATE message answering `ch` (received after the
/// client sent `negotiate`) for the service principal `spn`
/// (`cifs/<server>`); returns it with the session key. `now` (FILETIME)
/// is used when the server sent no timestamp. With a server timestamp
/// (every server since Windows Vista, Samba, impacket) the message carries
/// a MIC and MsvAvFlags says so (MS-NLMP 3.1.5.1.2: the client SHOULD);
/// without one there is no MIC, as Windows does, since such a server
/// predates it. MsvAvTargetName is there either way.
pub fn authenticate_message(
    creds: &Credentials,
    ch: &Challenge<'_>,
    negotiate: &[u8],
    spn: &str,
    client_challenge: &[u8; 8],
    now: u64,
) -> core::result::Result<(Vec<u8>, [u8; 16]), TooLong> {
    let ts = ch.timestamp();
    let with_mic = ts.is_some();
    let target_info = client_av_pairs(ch, spn, with_mic)?;
    let r = ntlmv2(
        creds,
        &ch.server_challenge,
        &target_info,
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
    let mut v = build_authenticate(
        [&r.lm_response, &r.nt_response, &domain, &user, &ws, &[]],
        fl & !flags::KEY_EXCH,
    )?;
    if with_mic {
        let m = mic(&r.session_key, negotiate, ch.raw, &v);
        v[field::authenticate_message::MIC].copy_from_slice(&m);
    }
    Ok((v, r.session_key))
}

/// The anonymous AUTHENTICATE message answering `ch` (MS-NLMP 3.1.5.1.2
/// and 3.3.2, user name and password both empty): NTLMSSP_NEGOTIATE_ANONYMOUS
/// set, an empty NtChallengeResponse, a one-byte zero
/// LmChallengeResponse, no domain or user name, no session key and so no
/// MIC. Nothing in it depends on a secret, so a session set up with it
/// has no key to sign or seal with — none is derived, whatever the
/// server's flags say.
pub fn anonymous_authenticate_message(
    ch: &Challenge<'_>,
    workstation: &str,
) -> core::result::Result<Vec<u8>, TooLong> {
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

/// An AUTHENTICATE message (Version and MIC zero) from its six payloads,
/// in the order of their *Fields from LmChallengeResponseFields on, and
/// its NegotiateFlags. A payload, or the whole message (the SESSION_SETUP
/// request's u16 SecurityBufferLength carries it), past 65,535 bytes is
/// [`TooLong`].
fn build_authenticate(
    fields: [&[u8]; 6],
    negotiate_flags: u32,
) -> core::result::Result<Vec<u8>, TooLong> {
    use field::authenticate_message as a;
    use field::fields as t;
    const FIELDS: [&str; 6] = [NT_RESPONSE, NT_RESPONSE, DOMAIN, USER, WORKSTATION, MESSAGE];
    let total = a::PAYLOAD + fields.iter().map(|f| f.len()).sum::<usize>();
    let mut lens = [0u16; 6];
    for (i, f) in fields.iter().enumerate() {
        lens[i] = len16(f.len(), FIELDS[i])?;
    }
    // Too long only together: blamed on the server's TargetInfo (in the
    // NtChallengeResponse) when that outweighs the mount's own names.
    let names: usize = fields[2..5].iter().map(|f| f.len()).sum();
    len16(
        total,
        if fields[1].len() >= names {
            MESSAGE
        } else {
            NAMES
        },
    )?;
    let mut v = Vec::with_capacity(total);
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
        set_u16(b, at + t::LEN, lens[i]);
        set_u16(b, at + t::MAX_LEN, lens[i]);
        set_u32(b, at + t::BUFFER_OFFSET, off as u32);
        off += f.len();
    }
    set_u32(b, a::NEGOTIATE_FLAGS, negotiate_flags);
    for f in fields {
        v.extend_from_slice(f);
    }
    Ok(v)
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
        let a = anonymous_authenticate_message(&ch, &creds.workstation).unwrap();
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

    /// The CHALLENGE of MS-NLMP 4.2.4.3 (server challenge 0123456789abcdef,
    /// TargetInfo: MsvAvNbDomainName "Domain", MsvAvNbComputerName
    /// "Server"), with `extra` AV pairs before the EOL.
    fn challenge_4_2_4(extra: &[u8]) -> Vec<u8> {
        let mut ti = Vec::new();
        ti.extend_from_slice(&[2, 0, 12, 0]);
        ti.extend_from_slice(&utf16le("Domain"));
        ti.extend_from_slice(&[1, 0, 12, 0]);
        ti.extend_from_slice(&utf16le("Server"));
        ti.extend_from_slice(extra);
        ti.extend_from_slice(&[0, 0, 0, 0]);
        let name = utf16le("Server");
        let mut m = Vec::new();
        m.extend_from_slice(SIGNATURE);
        put_u32(&mut m, 2);
        let at = 56u32;
        m.extend_from_slice(&(name.len() as u16).to_le_bytes());
        m.extend_from_slice(&(name.len() as u16).to_le_bytes());
        put_u32(&mut m, at);
        put_u32(&mut m, 0xe28a_8233);
        m.extend_from_slice(&[1, 0x23, 0x45, 0x67, 0x89, 0xab, 0xcd, 0xef]);
        m.extend_from_slice(&[0; 8]);
        m.extend_from_slice(&(ti.len() as u16).to_le_bytes());
        m.extend_from_slice(&(ti.len() as u16).to_le_bytes());
        put_u32(&mut m, at + name.len() as u32);
        m.extend_from_slice(&[6, 0, 0x70, 0x17, 0, 0, 0, 0x0f]);
        m.extend_from_slice(&name);
        m.extend_from_slice(&ti);
        m
    }

    fn creds_4_2_4() -> Credentials {
        Credentials {
            user: "User".into(),
            password: "Password".into(),
            domain: "Domain".into(),
            workstation: "COMPUTER".into(),
        }
    }

    /// The client's AV pairs: the server's in order and unchanged, then
    /// MsvAvFlags (0x2, MIC present) when asked, MsvAvTargetName (the SPN
    /// in UTF-16LE), MsvAvEOL — written out by hand. A server's own
    /// MsvAvFlags is kept with the MIC bit added; its MsvAvTargetName
    /// gives way to ours.
    #[test]
    fn client_av_pairs_layout() {
        let m = challenge_4_2_4(&[]);
        let ch = Challenge::parse(&m).unwrap();
        let mut want = Vec::new();
        want.extend_from_slice(&[2, 0, 12, 0]);
        want.extend_from_slice(&utf16le("Domain"));
        want.extend_from_slice(&[1, 0, 12, 0]);
        want.extend_from_slice(&utf16le("Server"));
        let mut with_mic = want.clone();
        with_mic.extend_from_slice(&[6, 0, 4, 0, 2, 0, 0, 0]);
        for v in [&mut want, &mut with_mic] {
            v.extend_from_slice(&[9, 0, 22, 0]);
            v.extend_from_slice(&utf16le("cifs/Server"));
            v.extend_from_slice(&[0, 0, 0, 0]);
        }
        assert_eq!(client_av_pairs(&ch, "cifs/Server", false).unwrap(), want);
        assert_eq!(client_av_pairs(&ch, "cifs/Server", true).unwrap(), with_mic);
        // The server's MsvAvFlags (0x1) and a MsvAvTargetName of its own.
        let mut extra = alloc::vec![6, 0, 4, 0, 1, 0, 0, 0, 9, 0, 2, 0, b'x', 0];
        extra.extend_from_slice(&[7, 0, 8, 0, 1, 2, 3, 4, 5, 6, 7, 8]);
        let m = challenge_4_2_4(&extra);
        let ch = Challenge::parse(&m).unwrap();
        let got = client_av_pairs(&ch, "cifs/S", true).unwrap();
        let mut want = Vec::new();
        want.extend_from_slice(&[2, 0, 12, 0]);
        want.extend_from_slice(&utf16le("Domain"));
        want.extend_from_slice(&[1, 0, 12, 0]);
        want.extend_from_slice(&utf16le("Server"));
        want.extend_from_slice(&[7, 0, 8, 0, 1, 2, 3, 4, 5, 6, 7, 8]);
        want.extend_from_slice(&[6, 0, 4, 0, 3, 0, 0, 0]);
        want.extend_from_slice(&[9, 0, 12, 0]);
        want.extend_from_slice(&utf16le("cifs/S"));
        want.extend_from_slice(&[0, 0, 0, 0]);
        assert_eq!(got, want);
    }

    /// The AUTHENTICATE with a MIC, on MS-NLMP 4.2.4's user, password,
    /// domain, server challenge and client challenge, the server's
    /// timestamp 0x01d0_0000_0000_0000: NTProofStr, session key and MIC
    /// against values computed apart, with impacket's `ntlm.NTOWFv2` and
    /// Python's `hmac` over the message bytes (commit message). The MIC
    /// field sits at 72..88 (after NegotiateFlags and an empty Version),
    /// the payload starts at 88, the NTLMv2 blob carries MsvAvFlags 0x2,
    /// and changing any byte of the three messages changes the MIC.
    #[test]
    fn authenticate_mic_known_answer() {
        let ts = 0x01d0_0000_0000_0000u64.to_le_bytes();
        let mut tpair = alloc::vec![7, 0, 8, 0];
        tpair.extend_from_slice(&ts);
        let chm = challenge_4_2_4(&tpair);
        let ch = Challenge::parse(&chm).unwrap();
        let neg = negotiate_message();
        let (a, key) =
            authenticate_message(&creds_4_2_4(), &ch, &neg, "cifs/Server", &[0xaa; 8], 0).unwrap();
        use field::authenticate_message as f;
        let nt = payload_field(&a, f::NT_CHALLENGE_RESPONSE_FIELDS).unwrap();
        assert_eq!(u32_at(&a, f::LM_CHALLENGE_RESPONSE_FIELDS + 4).unwrap(), 88);
        assert_eq!(&a[f::VERSION..f::MIC.start], &[0; 8]);
        let blob = &nt[16..];
        assert_eq!(&blob[8..16], &ts, "the server's timestamp");
        assert_eq!(&blob[16..24], &[0xaa; 8]);
        let pairs = &blob[28..];
        let flags_pair = [6u8, 0, 4, 0, 2, 0, 0, 0];
        assert!(pairs.windows(8).any(|w| w == flags_pair), "MsvAvFlags");
        assert_eq!(
            payload_field(&a, f::LM_CHALLENGE_RESPONSE_FIELDS).unwrap(),
            &[0u8; 24],
            "LMv2 is Z(24) when the server sent a timestamp"
        );
        assert_eq!(nt[..16].to_vec(), hex("19accaa782376afb06acd482efe9744b"));
        assert_eq!(key.to_vec(), hex("c7588ebb699e3b2af0a868e7ac7c50e0"));
        assert_eq!(a[f::MIC].to_vec(), hex("77ee20109f80cc4a6cc3dff7fc41ad4c"));
        // Any byte of the three messages is covered.
        let m0 = mic(&key, &neg, &chm, &a);
        assert_eq!(&a[f::MIC], &m0);
        for (i, which) in [(0usize, 0u8), (30, 1), (100, 2)] {
            let (mut n, mut c, mut x) = (neg.clone(), chm.clone(), a.clone());
            match which {
                0 => n[i] ^= 1,
                1 => c[i] ^= 1,
                _ => x[i] ^= 1,
            }
            assert_ne!(mic(&key, &n, &c, &x), m0, "byte {i} of message {which}");
        }
        // The MIC's own bytes are not (they are zeroed before the MAC).
        let mut x = a.clone();
        x[f::MIC.start] ^= 0xff;
        assert_eq!(mic(&key, &neg, &chm, &x), m0);
        // Without a server timestamp: no MsvAvFlags, MIC field zero.
        let chm = challenge_4_2_4(&[]);
        let ch = Challenge::parse(&chm).unwrap();
        let (a, _) =
            authenticate_message(&creds_4_2_4(), &ch, &neg, "cifs/Server", &[0xaa; 8], 5).unwrap();
        assert_eq!(&a[f::MIC], &[0; 16]);
        let nt = payload_field(&a, f::NT_CHALLENGE_RESPONSE_FIELDS).unwrap();
        assert!(!nt.windows(4).any(|w| w == [6, 0, 4, 0]));
    }

    /// Every u16 length the AUTHENTICATE carries: a field past 65,535
    /// bytes, or a whole message past it (the SESSION_SETUP request's
    /// SecurityBufferLength), is refused with its name, never wrapped.
    #[test]
    fn every_u16_length_is_refused_not_wrapped() {
        let chm = challenge_4_2_4(&[]);
        let ch = Challenge::parse(&chm).unwrap();
        let neg = negotiate_message();
        let long = "x".repeat(32_768); // 65,536 bytes in UTF-16LE
        let half = "x".repeat(20_000); // 40,000 bytes: fits alone
        let build = |c: &Credentials, spn: &str| {
            authenticate_message(c, &ch, &neg, spn, &[1; 8], 0).map(|_| ())
        };
        let base = creds_4_2_4();
        let cases: [(Credentials, &str, &str); 5] = [
            (
                Credentials {
                    domain: long.clone(),
                    ..base.clone()
                },
                "cifs/s",
                DOMAIN,
            ),
            (
                Credentials {
                    user: long.clone(),
                    ..base.clone()
                },
                "cifs/s",
                USER,
            ),
            (
                Credentials {
                    workstation: long.clone(),
                    ..base.clone()
                },
                "cifs/s",
                WORKSTATION,
            ),
            (base.clone(), &long, TARGET_NAME),
            (
                Credentials {
                    user: half.clone(),
                    workstation: half.clone(),
                    ..base.clone()
                },
                "cifs/s",
                NAMES,
            ),
        ];
        for (c, spn, what) in cases {
            assert_eq!(build(&c, spn), Err(TooLong(what)), "{what}");
        }
        assert_eq!(
            anonymous_authenticate_message(&ch, &long).map(|_| ()),
            Err(TooLong(WORKSTATION))
        );
        // The bound is 65,535 itself; a 64,000-byte domain still fits.
        assert_eq!(len16(65_535, USER), Ok(65_535));
        assert_eq!(len16(65_536, USER), Err(TooLong(USER)));
        let fits = Credentials {
            domain: "x".repeat(32_000),
            ..base.clone()
        };
        build(&fits, "cifs/s").unwrap();
        // The server's TargetInfo: an NTLMv2 response past 65,535 bytes.
        let mut pair = alloc::vec![1u8, 0];
        pair.extend_from_slice(&65_450u16.to_le_bytes());
        pair.extend(core::iter::repeat_n(b'A', 65_450));
        let big = challenge_4_2_4(&pair);
        let ch = Challenge::parse(&big).unwrap();
        let r = authenticate_message(&base, &ch, &neg, "cifs/s", &[1; 8], 0).map(|_| ());
        assert_eq!(r, Err(TooLong(NT_RESPONSE)));
        // A TargetInfo whose response fits while the message does not.
        let mut pair = alloc::vec![1u8, 0];
        pair.extend_from_slice(&65_380u16.to_le_bytes());
        pair.extend(core::iter::repeat_n(b'A', 65_380));
        let big = challenge_4_2_4(&pair);
        let ch = Challenge::parse(&big).unwrap();
        let r = authenticate_message(&base, &ch, &neg, "cifs/s", &[1; 8], 0).map(|_| ());
        assert_eq!(r, Err(TooLong(MESSAGE)));
        assert!(TooLong(MESSAGE).from_server());
        assert!(!TooLong(NAMES).from_server());
        assert!(TooLong(NT_RESPONSE).from_server());
        assert!(!TooLong(USER).from_server());
    }
}
