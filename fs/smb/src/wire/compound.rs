//! Compound chains (MS-SMB2 3.2.4.1.4 / 3.3.5.2.7): several messages in one
//! frame, each but the last padded to 8 bytes with `NextCommand` giving the
//! distance to the next header. [`chain()`] builds one; [`split`] cuts a
//! received frame into its messages with every offset checked.

use super::chain::{self, Rule};
use super::header::{Header, HEADER_LEN, NEXT_COMMAND};
use super::{pad_to, Result};
use alloc::vec::Vec;
use core::ops::Range;

/// Most messages accepted in one received chain.
pub const MAX_CHAIN: usize = 32;
/// Every member but the last is padded so the next header starts 8-aligned
/// (MS-SMB2 3.2.4.1.4).
const MEMBER_ALIGN: usize = 8;

/// The chain of a received compound: NextCommand 8-aligned, at least a
/// header, at most [`MAX_CHAIN`] members.
const CHAIN: Rule = Rule {
    next_at: NEXT_COMMAND,
    align: MEMBER_ALIGN,
    min: HEADER_LEN,
    max: MAX_CHAIN,
    what: "bad NextCommand",
};

/// Joins whole messages (each starting with its header) into one chain:
/// pads every member but the last to 8 bytes and sets its NextCommand.
/// Returns the frame and each member's byte range (the region a signature
/// covers).
pub fn chain(msgs: &[Vec<u8>]) -> (Vec<u8>, Vec<Range<usize>>) {
    let mut out = Vec::new();
    let mut ranges = Vec::with_capacity(msgs.len());
    for (i, m) in msgs.iter().enumerate() {
        let start = out.len();
        out.extend_from_slice(m);
        let last = i + 1 == msgs.len();
        if !last {
            pad_to(&mut out, MEMBER_ALIGN);
            let next = (out.len() - start) as u32;
            Header::new_unchecked(&mut out[start..]).set_next_command(next);
        } else {
            Header::new_unchecked(&mut out[start..]).set_next_command(0);
        }
        ranges.push(start..out.len());
    }
    (out, ranges)
}

/// Cuts a received frame into its messages ([`chain::walk`]). Each range
/// starts at a valid header; a NextCommand that is unaligned, shorter than
/// a header or points past the end is an error, as is a chain of more than
/// [`MAX_CHAIN`] members.
pub fn split(frame: &[u8]) -> Result<Vec<Range<usize>>> {
    let mut out = Vec::new();
    for member in chain::walk(frame, CHAIN) {
        let m = member?;
        Header::new_checked(m.bytes)?;
        out.push(m.at..m.at + m.bytes.len());
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::super::header::HeaderRepr;
    use super::*;

    fn msg(cmd: u16, body: usize) -> Vec<u8> {
        let mut v = Vec::new();
        HeaderRepr {
            command: cmd,
            ..Default::default()
        }
        .emit(&mut v);
        v.resize(v.len() + body, 0xaa);
        v
    }

    #[test]
    fn chain_then_split() {
        let (f, r) = chain(&[msg(5, 57), msg(16, 41), msg(6, 24)]);
        assert_eq!(r[0], 0..128);
        assert_eq!(r[1], 128..240);
        assert_eq!(r[2], 240..328);
        assert_eq!(split(&f).unwrap(), r);
    }

    #[test]
    fn hostile_next_command() {
        let (mut f, _) = chain(&[msg(5, 57), msg(6, 24)]);
        for bad in [7u32, 8, 60, 1000, u32::MAX, 129] {
            f[20..24].copy_from_slice(&bad.to_le_bytes());
            assert!(split(&f).is_err(), "{bad}");
        }
    }
}
