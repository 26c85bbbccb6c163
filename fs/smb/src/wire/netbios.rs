//! Direct-TCP session framing (MS-SMB2 2.1): each SMB2 message or compound
//! chain is preceded by a 4-byte header, a zero type byte and a 24-bit
//! big-endian length. Used by every stream transport (std TCP on the host,
//! smoltcp in the guest).

use super::{Result, WireError};

/// Frame type of a session message (RFC 1002 SESSION MESSAGE).
const SESSION_MESSAGE: u8 = 0x00;
/// Frame type of a NetBIOS keep-alive (RFC 1002 SESSION KEEP ALIVE).
const SESSION_KEEP_ALIVE: u8 = 0x85;

/// Largest length the 24-bit field can carry.
pub const MAX_FRAME: usize = 0x00ff_ffff;

/// What a 4-byte frame header announces.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FrameHeader {
    /// A session message of this many bytes follows.
    Message(usize),
    /// A NetBIOS keep-alive (type 0x85); carries no payload to deliver.
    Keepalive(usize),
}

/// The header for a message of `len` bytes.
pub fn emit_header(len: usize) -> Result<[u8; 4]> {
    if len > MAX_FRAME {
        return Err(WireError::new("frame too long"));
    }
    Ok([
        SESSION_MESSAGE,
        (len >> 16) as u8,
        (len >> 8) as u8,
        len as u8,
    ])
}

/// Parses a frame header.
pub fn parse_header(h: [u8; 4]) -> Result<FrameHeader> {
    let len = ((h[1] as usize) << 16) | ((h[2] as usize) << 8) | h[3] as usize;
    match h[0] {
        SESSION_MESSAGE => Ok(FrameHeader::Message(len)),
        SESSION_KEEP_ALIVE => Ok(FrameHeader::Keepalive(len)),
        _ => Err(WireError::new("bad frame type")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    #[test]
    fn roundtrip() {
        let h = emit_header(0x01_2345).unwrap();
        assert_eq!(h, [0, 1, 0x23, 0x45]);
        assert_eq!(parse_header(h).unwrap(), FrameHeader::Message(0x01_2345));
        assert!(emit_header(MAX_FRAME + 1).is_err());
        assert!(parse_header([0x81, 0, 0, 0]).is_err());
        assert_eq!(parse_header([0x85, 0, 0, 0]), Ok(FrameHeader::Keepalive(0)));
    }
}
