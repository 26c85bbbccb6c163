//! The reply gate: a reply body seen through its checked fixed part, and
//! the offset rule for its data areas.
//!
//! Stateless; reads only the message it is given.

use super::header;
use super::{slice, u16_at, Result, WireError};

/// A reply seen through its fixed part: the one place where an (offset,
/// length) pair of a reply becomes bytes (the smoltcp `Packet` habit: a
/// checked view over the buffer, fields read through it).
///
/// [`ReplyBody::new`] checks the StructureSize and that the fixed part is
/// there. [`ReplyBody::area`] is the offset rule, Linux's `smb2_calc_size`:
/// a data area must begin at or after the end of the fixed part (the
/// header's 64 bytes plus the body's fixed bytes; an odd StructureSize
/// counts the first byte of the variable part, as MS-SMB2 does) and end
/// inside the message. An area that begins inside the header or the fixed
/// part is refused ("data area offset overlaps SMB2 header"), one that runs
/// past the end is refused ("buffer outside message"); a zero length is an
/// empty area wherever it points. The one exception is READ's DataOffset
/// ([`ReplyBody::read_data`]).
#[derive(Clone, Copy, Debug)]
pub struct ReplyBody<'a> {
    msg: &'a [u8],
    fixed: &'a [u8],
}

impl<'a> ReplyBody<'a> {
    /// The body of the whole reply `msg` (header included) whose fixed part
    /// is `fixed_len` bytes and whose StructureSize must be
    /// `structure_size`; `what` names the reply in the error.
    pub fn new(
        msg: &'a [u8],
        structure_size: u16,
        fixed_len: usize,
        what: &'static str,
    ) -> Result<Self> {
        let fixed = slice(msg, header::HEADER_LEN, fixed_len)?;
        if u16_at(fixed, 0)? != structure_size {
            return Err(WireError::new(what));
        }
        Ok(ReplyBody { msg, fixed })
    }

    /// The fixed part (offsets relative to the end of the header).
    pub fn fixed(&self) -> &'a [u8] {
        self.fixed
    }

    /// The whole message, header included.
    pub fn msg(&self) -> &'a [u8] {
        self.msg
    }

    /// The first offset (from the start of the header) a data area may
    /// have: the end of the fixed part.
    pub fn floor(&self) -> usize {
        header::HEADER_LEN + self.fixed.len()
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
