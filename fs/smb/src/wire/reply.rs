//! The reply gate: every reply body the client parses enters through
//! [`ReplyBody::new_checked`], and only there is its StructureSize read
//! and its fixed part checked. [`Reply`] is the table of every reply type
//! and its StructureSize (Linux's `smb2_rsp_struct_sizes`); after the gate
//! a parser reads fields through the typed accessors and turns each (offset,
//! length) pair into bytes through one offset rule ([`ReplyBody::area`]).
//!
//! Stateless; reads only the message it is given; knows the header's
//! length and the byte accessors, nothing of the messages that use it.

use super::header::HEADER_LEN;
use super::{bytes16_at, expect_structure_size, slice, u16_at, u32_at, u64_at, u8_at};
use super::{Result, WireError};

/// Declares [`Reply`] and its table from one list, so that
/// [`Reply::ALL`] holds every variant by construction.
macro_rules! replies {
    ($($(#[doc = $doc:literal])* $kind:ident = $size:literal, $what:literal;)*) => {
        /// Every reply body the client parses, with its StructureSize
        /// (MS-SMB2 2.2); an error names the reply.
        #[derive(Clone, Copy, Debug, PartialEq, Eq)]
        pub enum Reply {
            $($(#[doc = $doc])* $kind,)*
        }

        impl Reply {
            /// Every reply type, in table order.
            pub const ALL: &'static [Reply] = &[$(Reply::$kind,)*];

            /// The StructureSize a reply of this type carries.
            pub const fn structure_size(self) -> u16 {
                match self {
                    $(Reply::$kind => $size,)*
                }
            }

            /// The error a wrong StructureSize gives.
            const fn what(self) -> &'static str {
                match self {
                    $(Reply::$kind => $what,)*
                }
            }
        }
    };
}

replies! {
    /// ERROR Response (2.2.2): what a failed command carries; the one
    /// byte of ErrorData that StructureSize counts may be left out.
    Error = 9, "error structure size";
    /// NEGOTIATE Response (2.2.4).
    Negotiate = 65, "negotiate structure size";
    /// SESSION_SETUP Response (2.2.6).
    SessionSetup = 9, "session setup structure size";
    /// LOGOFF and TREE_DISCONNECT Responses (2.2.8, 2.2.12).
    Small = 4, "structure size 4 expected";
    /// TREE_CONNECT Response (2.2.10).
    TreeConnect = 16, "tree connect structure size";
    /// CREATE Response (2.2.14).
    Create = 89, "create structure size";
    /// CLOSE Response (2.2.16).
    Close = 60, "close structure size";
    /// READ Response (2.2.20).
    Read = 17, "read structure size";
    /// WRITE Response (2.2.22).
    Write = 17, "write structure size";
    /// IOCTL Response (2.2.32).
    Ioctl = 49, "ioctl structure size";
    /// QUERY_DIRECTORY and QUERY_INFO Responses (2.2.34, 2.2.38): the same
    /// layout, one output buffer.
    QueryOutput = 9, "query response structure size";
    /// SET_INFO Response (2.2.40).
    SetInfo = 2, "set_info structure size";
}

impl Reply {
    /// Length of the fixed part: the StructureSize, less the one byte of
    /// the variable part that an odd StructureSize counts (MS-SMB2 2.2:
    /// the size is the same however long the variable part is).
    pub const fn fixed_len(self) -> usize {
        (self.structure_size() & !1) as usize
    }
}

/// A reply seen through its fixed part: the one place where a reply's
/// StructureSize is read and where an (offset, length) pair of a reply
/// becomes bytes (the smoltcp `Packet` habit: a checked view over the
/// buffer, fields read through it).
///
/// [`ReplyBody::new_checked`] checks that the fixed part is there and that
/// its StructureSize is the reply type's. [`ReplyBody::area`] is the offset
/// rule, Linux's `smb2_calc_size`: a data area must begin at or after the
/// end of the fixed part (the header's 64 bytes plus the body's fixed
/// bytes) and end inside the message. An area that begins inside the header
/// or the fixed part is refused ("data area offset overlaps SMB2 header"),
/// one that runs past the end is refused ("buffer outside message"); a zero
/// length is an empty area wherever it points. The one exception is READ's
/// DataOffset ([`ReplyBody::read_data`]).
#[derive(Clone, Copy, Debug)]
pub struct ReplyBody<'a> {
    msg: &'a [u8],
    fixed: &'a [u8],
}

impl<'a> ReplyBody<'a> {
    /// The body of the whole reply `msg` (header included) as a reply of
    /// type `kind`: a message too short for the fixed part is "truncated",
    /// a wrong StructureSize is refused with the reply's name.
    pub fn new_checked(msg: &'a [u8], kind: Reply) -> Result<Self> {
        let fixed = slice(msg, HEADER_LEN, kind.fixed_len())?;
        expect_structure_size(fixed, 0, kind.structure_size(), kind.what())?;
        Ok(ReplyBody { msg, fixed })
    }

    /// The fixed part (offsets relative to the end of the header), for the
    /// structures inside it that have their own parsers (FileId, times).
    pub fn fixed(&self) -> &'a [u8] {
        self.fixed
    }

    /// The whole message, header included.
    pub fn msg(&self) -> &'a [u8] {
        self.msg
    }

    /// The byte at `off` of the fixed part.
    pub fn u8(&self, off: usize) -> Result<u8> {
        u8_at(self.fixed, off)
    }

    /// The little-endian u16 at `off` of the fixed part.
    pub fn u16(&self, off: usize) -> Result<u16> {
        u16_at(self.fixed, off)
    }

    /// The little-endian u32 at `off` of the fixed part.
    pub fn u32(&self, off: usize) -> Result<u32> {
        u32_at(self.fixed, off)
    }

    /// The little-endian u64 at `off` of the fixed part.
    pub fn u64(&self, off: usize) -> Result<u64> {
        u64_at(self.fixed, off)
    }

    /// The 16 bytes at `off` of the fixed part (a GUID).
    pub fn bytes16(&self, off: usize) -> Result<[u8; 16]> {
        bytes16_at(self.fixed, off)
    }

    /// The first offset (from the start of the header) a data area may
    /// have: the end of the fixed part.
    pub fn floor(&self) -> usize {
        HEADER_LEN + self.fixed.len()
    }

    /// The data area at `off` (from the start of the header), `len` bytes,
    /// by the offset rule above.
    pub fn area(&self, off: usize, len: usize) -> Result<&'a [u8]> {
        if len == 0 {
            return Ok(&[]);
        }
        if off < self.floor() {
            return Err(OVERLAPS_HEADER);
        }
        slice(self.msg, off, len).map_err(|_| OUTSIDE)
    }

    /// The data area from `off` to the end of the message, by the same
    /// rule, for a list whose length the reply does not carry (NEGOTIATE's
    /// contexts): it must hold at least one byte.
    pub fn area_to_end(&self, off: usize) -> Result<&'a [u8]> {
        self.area(off, self.msg.len().saturating_sub(off).max(1))
    }

    /// READ's DataOffset, the rule's one exception (Linux's
    /// `handle_read_data`): an offset below the end of the READ response's
    /// fixed part means the data begins right after it (Windows Server 2008
    /// answers DataOffset 0 at end of file); past the end it is refused as
    /// any other area.
    pub fn read_data(&self, off: usize, len: usize) -> Result<&'a [u8]> {
        self.area(off.max(self.floor()), len)
    }
}

/// The offset rule's refusal of an area inside the header or fixed part.
const OVERLAPS_HEADER: WireError = WireError::new("data area offset overlaps SMB2 header");
/// The offset rule's refusal of an area past the end of the message.
const OUTSIDE: WireError = WireError::new("buffer outside message");

#[cfg(test)]
mod tests {
    use super::*;

    /// The table: every fixed part is what MS-SMB2 gives it, and the gate
    /// asks exactly that many bytes.
    #[test]
    fn fixed_parts_follow_the_structure_sizes() {
        let want = [
            (Reply::Error, 8),
            (Reply::Negotiate, 64),
            (Reply::SessionSetup, 8),
            (Reply::Small, 4),
            (Reply::TreeConnect, 16),
            (Reply::Create, 88),
            (Reply::Close, 60),
            (Reply::Read, 16),
            (Reply::Write, 16),
            (Reply::Ioctl, 48),
            (Reply::QueryOutput, 8),
            (Reply::SetInfo, 2),
        ];
        assert_eq!(Reply::ALL.len(), want.len());
        for (kind, len) in want {
            assert_eq!(kind.fixed_len(), len, "{kind:?}");
            let mut msg = alloc::vec![0u8; HEADER_LEN + len];
            msg[HEADER_LEN..HEADER_LEN + 2].copy_from_slice(&kind.structure_size().to_le_bytes());
            let body = ReplyBody::new_checked(&msg, kind).unwrap();
            assert_eq!((body.fixed().len(), body.floor()), (len, HEADER_LEN + len));
            let short = ReplyBody::new_checked(&msg[..msg.len() - 1], kind);
            assert_eq!(short.unwrap_err().what, "truncated", "{kind:?}");
        }
    }
}
