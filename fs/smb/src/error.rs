//! What an SMB operation can fail with ([`SmbError`]) and the dialects
//! the client offers ([`DIALECTS`], which the no-common-dialect error
//! names by bit).
//!
//! Below every layer that fails: it uses only the wire layer's error and
//! dialect names. Touches nothing.

use crate::wire::{self, WireError};

use core::fmt;

/// What an SMB operation can fail with.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SmbError {
    /// The server answered with this NT status.
    Status(u32),
    /// A reply was malformed.
    Wire(WireError),
    /// A reply's signature did not verify (or a reply that had to be
    /// signed was not): forged or corrupted.
    BadSignature,
    /// No reply within the timeout (soft mounts report it as EIO).
    Timeout,
    /// The connection dropped; the next operation reconnects.
    Disconnected,
    /// Could not (re)connect.
    ConnectFailed,
    /// The server broke the protocol (unexpected reply, dialect or flags).
    Protocol(&'static str),
    /// Authentication could not proceed (bad challenge, guest fallback).
    Auth(&'static str),
    /// A reply did not decrypt (bad tag, wrong session, malformed
    /// transform) or came in clear on an encrypting session: EIO.
    DecryptFailed,
    /// Encryption is needed (by `seal` or by the server) and this session
    /// cannot provide it: 2.x dialect, guest session, no common cipher.
    EncryptionUnavailable(&'static str),
    /// The server refused a session or share that was not encrypted
    /// (ACCESS_DENIED where encryption was not offered or not on).
    EncryptionRequired,
    /// A response whose flags decide the session's security (the final
    /// SESSION_SETUP's SessionFlags, TREE_CONNECT's ShareFlags) came
    /// unsigned where it must be signed, or with a signature that does
    /// not verify: a man in the middle may have struck a request for
    /// encryption. The mount fails (EACCES) with the reason.
    Unverified(&'static str),
    /// NEGOTIATE found no common dialect (STATUS_NOT_SUPPORTED).
    /// `offered`: bit i set for [`DIALECTS`]`[i]` offered; `server`: what
    /// the server picks from all of them (0 if unknown), for the hint.
    NoCommonDialect { offered: u8, server: u16 },
    /// TREE_CONNECT failed with this status (BAD_NETWORK_NAME is ENODEV at
    /// mount, as the issue's `No such device` says).
    Share(u32),
    /// Not enough credits granted to send a request.
    NoCredits,
    /// The caller passed something unusable (e.g. a path too long).
    Invalid(&'static str),
    /// What a reply asked us to keep does not fit in memory now (memory
    /// admission or a fallible allocation said no): ENOMEM.
    NoMemory(&'static str),
}

impl From<WireError> for SmbError {
    fn from(e: WireError) -> Self {
        SmbError::Wire(e)
    }
}

impl fmt::Display for SmbError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SmbError::Status(s) => write!(f, "server returned status 0x{s:08x}"),
            SmbError::Wire(e) => write!(f, "{e}"),
            SmbError::BadSignature => f.write_str("reply signature invalid"),
            SmbError::Timeout => f.write_str("request timed out"),
            SmbError::Disconnected => f.write_str("connection dropped"),
            SmbError::ConnectFailed => f.write_str("cannot connect to server"),
            SmbError::Protocol(s) => write!(f, "protocol violation: {s}"),
            SmbError::Auth(s) => write!(f, "authentication failed: {s}"),
            SmbError::DecryptFailed => f.write_str("reply did not decrypt"),
            SmbError::EncryptionUnavailable(s) => write!(f, "encryption unavailable: {s}"),
            SmbError::EncryptionRequired => {
                f.write_str("encryption required by the server (mount with seal)")
            }
            SmbError::Unverified(s) => write!(f, "{s}: its security flags cannot be trusted"),
            SmbError::NoCommonDialect { offered, server } => {
                f.write_str("server supports none of the offered dialects (offered ")?;
                let mut first = true;
                for (i, d) in DIALECTS.iter().enumerate().rev() {
                    if offered & (1 << i) != 0 {
                        if !first {
                            f.write_str(", ")?;
                        }
                        first = false;
                        f.write_str(wire::negotiate::dialect::name(*d))?;
                    }
                }
                match *server {
                    0 => f.write_str(")"),
                    d => write!(f, "; try vers={})", wire::negotiate::dialect::name(d)),
                }
            }
            SmbError::Share(s) => write!(f, "tree connect failed: status 0x{s:08x}"),
            SmbError::NoCredits => f.write_str("no credits"),
            SmbError::Invalid(s) => write!(f, "invalid argument: {s}"),
            SmbError::NoMemory(s) => write!(f, "out of memory: {s}"),
        }
    }
}

/// The dialects this client speaks, in order (bit i of
/// [`SmbError::NoCommonDialect`]'s `offered` is `DIALECTS[i]`).
pub const DIALECTS: [u16; 5] = [0x0202, 0x0210, 0x0300, 0x0302, 0x0311];

impl SmbError {
    /// The NT status, if the server sent one.
    pub fn status(&self) -> Option<u32> {
        match self {
            SmbError::Status(s) | SmbError::Share(s) => Some(*s),
            _ => None,
        }
    }
}

/// Result of an SMB operation.
pub type SmbResult<T> = Result<T, SmbError>;
