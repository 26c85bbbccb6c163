//! The 64-byte SMB2 header (MS-SMB2 2.2.1), sync and async forms.
//!
//! [`Header`] is a zero-copy view over a buffer that starts with a header;
//! [`Header::new_checked`] validates the length, protocol id and structure
//! size, after which the accessors cannot panic. [`HeaderRepr`] is the parsed
//! form used by the state machine and by `emit`.

use super::{expect_structure_size, put_fixed, set_u16, set_u32, set_u64, Result, WireError};
use alloc::vec::Vec;
use core::ops::Range;

/// Header length in bytes.
pub const HEADER_LEN: usize = 64;
/// The protocol id `\xfeSMB`.
pub const PROTOCOL_ID: [u8; 4] = [0xfe, b'S', b'M', b'B'];
/// StructureSize of the header (MS-SMB2 2.2.1): its length.
const STRUCTURE_SIZE: u16 = HEADER_LEN as u16;
/// ProcessId of the sync form: reserved; the value Windows clients send.
const PROCESS_ID: u32 = 0xfeff;
/// Where the signature lies in a header (what signing leaves out).
pub const SIGNATURE: Range<usize> = field::SIGNATURE;
/// Where NextCommand lies in a header (the compound chain's link).
pub const NEXT_COMMAND: usize = field::NEXT_COMMAND;

/// Header flag bits.
pub mod flags {
    /// The message is a response.
    pub const SERVER_TO_REDIR: u32 = 0x1;
    /// Async header form (AsyncId instead of TreeId).
    pub const ASYNC: u32 = 0x2;
    /// Compound member related to the previous one.
    pub const RELATED: u32 = 0x4;
    /// The message is signed.
    pub const SIGNED: u32 = 0x8;
}

/// Field offsets of SMB2 Packet Header - SYNC and ASYNC (MS-SMB2 2.2.1.1,
/// 2.2.1.2); the two differ only at 32..40.
mod field {
    use core::ops::Range;
    pub const PROTOCOL: Range<usize> = 0..4;
    pub const STRUCTURE_SIZE: usize = 4;
    pub const CREDIT_CHARGE: usize = 6;
    pub const STATUS: usize = 8;
    pub const COMMAND: usize = 12;
    pub const CREDITS: usize = 14;
    pub const FLAGS: usize = 16;
    pub const NEXT_COMMAND: usize = 20;
    pub const MESSAGE_ID: usize = 24;
    /// AsyncId (async form): 8 bytes.
    pub const ASYNC_ID: usize = 32;
    /// ProcessId (sync form: Reserved), then TreeId.
    pub const PROCESS_ID: usize = 32;
    pub const TREE_ID: usize = 36;
    pub const SESSION_ID: usize = 40;
    pub const SIGNATURE: Range<usize> = 48..64;
}

/// A read view of an SMB2 header at the start of a buffer.
#[derive(Debug, Clone, Copy)]
pub struct Header<T: AsRef<[u8]>> {
    buffer: T,
}

fn le16(b: &[u8], o: usize) -> u16 {
    u16::from_le_bytes([b[o], b[o + 1]])
}
fn le32(b: &[u8], o: usize) -> u32 {
    u32::from_le_bytes([b[o], b[o + 1], b[o + 2], b[o + 3]])
}
fn le64(b: &[u8], o: usize) -> u64 {
    let mut a = [0u8; 8];
    a.copy_from_slice(&b[o..o + 8]);
    u64::from_le_bytes(a)
}

impl<T: AsRef<[u8]>> Header<T> {
    /// Wraps a buffer without checks; accessors panic if it is shorter than
    /// [`HEADER_LEN`]. Only for buffers this crate built itself.
    pub fn new_unchecked(buffer: T) -> Self {
        Header { buffer }
    }

    /// Wraps a buffer after checking length, protocol id and structure size.
    pub fn new_checked(buffer: T) -> Result<Self> {
        let b = buffer.as_ref();
        if b.len() < HEADER_LEN {
            return Err(WireError::new("short header"));
        }
        if b[field::PROTOCOL] != PROTOCOL_ID {
            return Err(WireError::new("not an SMB2 header"));
        }
        expect_structure_size(
            b,
            field::STRUCTURE_SIZE,
            STRUCTURE_SIZE,
            "bad header structure size",
        )?;
        Ok(Header { buffer })
    }

    fn b(&self) -> &[u8] {
        self.buffer.as_ref()
    }
    pub fn credit_charge(&self) -> u16 {
        le16(self.b(), field::CREDIT_CHARGE)
    }
    pub fn status(&self) -> u32 {
        le32(self.b(), field::STATUS)
    }
    pub fn command(&self) -> u16 {
        le16(self.b(), field::COMMAND)
    }
    pub fn credits(&self) -> u16 {
        le16(self.b(), field::CREDITS)
    }
    pub fn flags(&self) -> u32 {
        le32(self.b(), field::FLAGS)
    }
    pub fn next_command(&self) -> u32 {
        le32(self.b(), field::NEXT_COMMAND)
    }
    pub fn message_id(&self) -> u64 {
        le64(self.b(), field::MESSAGE_ID)
    }
    /// AsyncId; meaningful only when the ASYNC flag is set.
    pub fn async_id(&self) -> u64 {
        le64(self.b(), field::ASYNC_ID)
    }
    /// TreeId; meaningful only in the sync form.
    pub fn tree_id(&self) -> u32 {
        le32(self.b(), field::TREE_ID)
    }
    pub fn session_id(&self) -> u64 {
        le64(self.b(), field::SESSION_ID)
    }
    pub fn signature(&self) -> [u8; 16] {
        let mut s = [0u8; 16];
        s.copy_from_slice(&self.b()[field::SIGNATURE]);
        s
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> Header<T> {
    /// Overwrites the signature field.
    pub fn set_signature(&mut self, sig: &[u8; 16]) {
        self.buffer.as_mut()[field::SIGNATURE].copy_from_slice(sig);
    }
    /// Overwrites the flags field.
    pub fn set_flags(&mut self, v: u32) {
        set_u32(self.buffer.as_mut(), field::FLAGS, v);
    }
    /// Overwrites NextCommand.
    pub fn set_next_command(&mut self, v: u32) {
        set_u32(self.buffer.as_mut(), field::NEXT_COMMAND, v);
    }
}

/// The parsed header.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct HeaderRepr {
    pub credit_charge: u16,
    /// NT status (responses); ChannelSequence/Reserved in requests.
    pub status: u32,
    pub command: u16,
    /// CreditRequest in requests, CreditResponse in responses.
    pub credits: u16,
    pub flags: u32,
    pub next_command: u32,
    pub message_id: u64,
    /// `Some` for the async form.
    pub async_id: Option<u64>,
    pub tree_id: u32,
    pub session_id: u64,
    pub signature: [u8; 16],
}

impl HeaderRepr {
    /// Parses the header at the start of `buf`.
    pub fn parse(buf: &[u8]) -> Result<Self> {
        let h = Header::new_checked(buf)?;
        let is_async = h.flags() & flags::ASYNC != 0;
        Ok(HeaderRepr {
            credit_charge: h.credit_charge(),
            status: h.status(),
            command: h.command(),
            credits: h.credits(),
            flags: h.flags(),
            next_command: h.next_command(),
            message_id: h.message_id(),
            async_id: if is_async { Some(h.async_id()) } else { None },
            tree_id: if is_async { 0 } else { h.tree_id() },
            session_id: h.session_id(),
            signature: h.signature(),
        })
    }

    /// Appends the [`HEADER_LEN`] header bytes.
    pub fn emit(&self, out: &mut Vec<u8>) {
        let b = put_fixed(out, HEADER_LEN);
        b[field::PROTOCOL].copy_from_slice(&PROTOCOL_ID);
        set_u16(b, field::STRUCTURE_SIZE, STRUCTURE_SIZE);
        set_u16(b, field::CREDIT_CHARGE, self.credit_charge);
        set_u32(b, field::STATUS, self.status);
        set_u16(b, field::COMMAND, self.command);
        set_u16(b, field::CREDITS, self.credits);
        let mut fl = self.flags & !flags::ASYNC;
        if self.async_id.is_some() {
            fl |= flags::ASYNC;
        }
        set_u32(b, field::FLAGS, fl);
        set_u32(b, field::NEXT_COMMAND, self.next_command);
        set_u64(b, field::MESSAGE_ID, self.message_id);
        match self.async_id {
            Some(a) => set_u64(b, field::ASYNC_ID, a),
            None => {
                set_u32(b, field::PROCESS_ID, PROCESS_ID);
                set_u32(b, field::TREE_ID, self.tree_id);
            }
        }
        set_u64(b, field::SESSION_ID, self.session_id);
        b[field::SIGNATURE].copy_from_slice(&self.signature);
    }

    /// True for a response.
    pub fn is_response(&self) -> bool {
        self.flags & flags::SERVER_TO_REDIR != 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn roundtrip_sync_and_async() {
        for async_id in [None, Some(0x1122_3344_5566_7788)] {
            let r = HeaderRepr {
                credit_charge: 1,
                status: 0xc000_0052,
                command: 16,
                credits: 31,
                flags: flags::SERVER_TO_REDIR | flags::SIGNED,
                next_command: 0,
                message_id: 40511,
                async_id,
                tree_id: if async_id.is_some() { 0 } else { 0x29 },
                session_id: 0xdead_beef,
                signature: [7; 16],
            };
            let mut v = Vec::new();
            r.emit(&mut v);
            assert_eq!(v.len(), HEADER_LEN);
            let p = HeaderRepr::parse(&v).unwrap();
            let mut want = r;
            if async_id.is_some() {
                want.flags |= flags::ASYNC;
            }
            assert_eq!(p, want);
        }
    }

    /// A sync header (MS-SMB2 2.2.1.2), written out by hand.
    #[test]
    fn sync_header_bytes() {
        let r = HeaderRepr {
            credit_charge: 1,
            status: 0,
            command: 5,
            credits: 64,
            flags: flags::SIGNED,
            next_command: 0x80,
            message_id: 0x0102,
            async_id: None,
            tree_id: 0x0a0b,
            session_id: 0x1122_3344,
            signature: [0xee; 16],
        };
        let mut v = Vec::new();
        r.emit(&mut v);
        #[rustfmt::skip]
        let want: [u8; 64] = [
            0xfe, b'S', b'M', b'B',  // ProtocolId
            64, 0,                   // StructureSize
            1, 0,                    // CreditCharge
            0, 0, 0, 0,              // ChannelSequence/Reserved
            5, 0,                    // Command: CREATE
            64, 0,                   // CreditRequest
            8, 0, 0, 0,              // Flags: SIGNED
            0x80, 0, 0, 0,           // NextCommand
            2, 1, 0, 0, 0, 0, 0, 0,  // MessageId
            0xff, 0xfe, 0, 0,        // Reserved (ProcessId)
            0x0b, 0x0a, 0, 0,        // TreeId
            0x44, 0x33, 0x22, 0x11, 0, 0, 0, 0, // SessionId
            0xee, 0xee, 0xee, 0xee, 0xee, 0xee, 0xee, 0xee, // Signature
            0xee, 0xee, 0xee, 0xee, 0xee, 0xee, 0xee, 0xee,
        ];
        assert_eq!(v, want);
        // The async form (2.2.1.1): AsyncId where ProcessId and TreeId were.
        let mut a = Vec::new();
        HeaderRepr {
            async_id: Some(0x0807_0605_0403_0201),
            ..r
        }
        .emit(&mut a);
        assert_eq!(&a[16..20], &[0xa, 0, 0, 0]);
        assert_eq!(&a[32..40], &[1, 2, 3, 4, 5, 6, 7, 8]);
        assert_eq!(&a[..16], &want[..16]);
        assert_eq!(&a[40..], &want[40..]);
    }

    #[test]
    fn rejects_short_and_foreign() {
        assert!(HeaderRepr::parse(&[0xfe, b'S', b'M', b'B']).is_err());
        let mut v = Vec::new();
        HeaderRepr::default().emit(&mut v);
        v[0] = 0xff;
        assert!(HeaderRepr::parse(&v).is_err());
        v[0] = 0xfe;
        v[4] = 65;
        assert!(HeaderRepr::parse(&v).is_err());
    }
}
