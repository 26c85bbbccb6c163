//! The caller's memory as a system call sees it (Linux `uaccess`): a
//! pointer into memory the caller mapped, which may be bad.
//!
//! A system call gets addresses, not slices. Linux copies a path from one
//! with `strncpy_from_user`, which reads until the terminating NUL and
//! answers `EFAULT` when the bytes run into memory that is not mapped
//! before a NUL was found; it writes a result with `copy_to_user`, which
//! answers `EFAULT` the same way. Here a caller buffer is the mapped bytes
//! from the pointer on ([`UserPtr::new`]): everything past the slice's end
//! is unmapped, and [`UserPtr::bad`] is a pointer with nothing mapped at all
//! (`NULL`, or a wild address). So a path whose NUL lies inside the slice
//! copies, one without a NUL faults once the copy reaches the end, exactly
//! as a string at the end of a mapping does in Linux.
//!
//! The copy goes a word at a time with a zero-byte test on each word
//! (Linux's `do_strncpy_from_user` with `has_zero`), so its cost grows with
//! the name as Linux's does.
//!
//! Touches nothing but the two buffers it is given.

use alloc::vec::Vec;

use crate::errno::Errno;

/// A read-only caller pointer: the bytes mapped from it on, or none.
#[derive(Clone, Copy, Debug)]
pub struct UserPtr<'a> {
    mapped: Option<&'a [u8]>,
}

impl<'a> UserPtr<'a> {
    /// A pointer to `mapped[0]`; memory past `mapped`'s end is unmapped.
    pub const fn new(mapped: &'a [u8]) -> Self {
        UserPtr {
            mapped: Some(mapped),
        }
    }

    /// A pointer with nothing mapped behind it: every read faults.
    pub const fn bad() -> Self {
        UserPtr { mapped: None }
    }
}

/// A writable caller pointer: the bytes mapped from it on, or none.
#[derive(Debug)]
pub struct UserPtrMut<'a> {
    mapped: Option<&'a mut [u8]>,
}

impl<'a> UserPtrMut<'a> {
    /// A pointer to `mapped[0]`; memory past `mapped`'s end is unmapped.
    pub fn new(mapped: &'a mut [u8]) -> Self {
        UserPtrMut {
            mapped: Some(mapped),
        }
    }

    /// A pointer with nothing mapped behind it: every write faults.
    pub fn bad() -> Self {
        UserPtrMut { mapped: None }
    }
}

/// Bytes per word of the copy.
const WORD: usize = 8;
/// `0x0101…01`: the low bit of every byte.
const ONES: u64 = u64::from_ne_bytes([0x01; WORD]);
/// `0x8080…80`: the high bit of every byte.
const HIGHS: u64 = u64::from_ne_bytes([0x80; WORD]);

/// Does `w` hold a zero byte? (Linux `has_zero`: exact, no false positive
/// once the lowest zero byte is found by index below.)
#[inline]
fn has_zero(w: u64) -> bool {
    w.wrapping_sub(ONES) & !w & HIGHS != 0
}

/// Linux `strncpy_from_user(dst, src, count)`: copy the NUL-terminated
/// string at `src` into `dst` (cleared first; its capacity should be
/// `count` so the copy never reallocates), at most `count` bytes.
///
/// Returns the string's length without its NUL; `count` when no NUL lies
/// in the first `count` bytes (the caller decides that is too long);
/// `EFAULT` when the copy reaches unmapped memory before a NUL. `dst` holds
/// the string (without NUL) on success.
pub fn strncpy_from_user(
    dst: &mut Vec<u8>,
    src: UserPtr<'_>,
    count: usize,
) -> Result<usize, Errno> {
    dst.clear();
    let Some(mapped) = src.mapped else {
        return Err(Errno::EFAULT);
    };
    let readable = &mapped[..mapped.len().min(count)];
    let mut words = readable.chunks_exact(WORD);
    for chunk in words.by_ref() {
        let mut b = [0u8; WORD];
        b.copy_from_slice(chunk);
        dst.extend_from_slice(chunk);
        if has_zero(u64::from_ne_bytes(b)) {
            // The first zero byte ends the string; what follows it in the
            // word was copied, as in Linux, and is cut off again here.
            let at = dst.len() - WORD + b.iter().position(|&c| c == 0).unwrap_or(WORD);
            dst.truncate(at);
            return Ok(at);
        }
    }
    for &c in words.remainder() {
        if c == 0 {
            return Ok(dst.len());
        }
        dst.push(c);
    }
    if readable.len() == count {
        // `count` bytes and no NUL: as long as it may be, and longer.
        Ok(count)
    } else {
        // The mapping ended before a NUL did.
        Err(Errno::EFAULT)
    }
}

/// Linux `copy_to_user(dst, src, len)`: all of `src` or `EFAULT` (a write
/// that would cross the end of the mapping writes nothing here; Linux may
/// leave a partial copy, which a faulting caller must not read anyway).
pub fn copy_to_user(dst: &mut UserPtrMut<'_>, src: &[u8]) -> Result<(), Errno> {
    match dst.mapped.as_deref_mut() {
        Some(m) if m.len() >= src.len() => {
            m[..src.len()].copy_from_slice(src);
            Ok(())
        }
        _ => Err(Errno::EFAULT),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn copies_up_to_the_nul_at_every_alignment() {
        let mut dst = Vec::with_capacity(64);
        for n in 0..40 {
            let mut src: Vec<u8> = (0..n).map(|i| b'a' + (i % 26) as u8).collect();
            src.push(0);
            src.extend_from_slice(b"after");
            assert_eq!(strncpy_from_user(&mut dst, UserPtr::new(&src), 64), Ok(n));
            assert_eq!(&dst[..], &src[..n]);
        }
    }

    #[test]
    fn too_long_is_count_and_unmapped_is_efault() {
        let mut dst = Vec::new();
        let src = [b'x'; 20];
        assert_eq!(strncpy_from_user(&mut dst, UserPtr::new(&src), 20), Ok(20));
        assert_eq!(strncpy_from_user(&mut dst, UserPtr::new(&src), 16), Ok(16));
        assert_eq!(
            strncpy_from_user(&mut dst, UserPtr::new(&src), 21),
            Err(Errno::EFAULT)
        );
        assert_eq!(
            strncpy_from_user(&mut dst, UserPtr::bad(), 21),
            Err(Errno::EFAULT)
        );
        let mut out = [0u8; 4];
        assert_eq!(
            copy_to_user(&mut UserPtrMut::new(&mut out), b"abcd"),
            Ok(())
        );
        assert_eq!(&out, b"abcd");
        assert_eq!(
            copy_to_user(&mut UserPtrMut::new(&mut out), b"abcde"),
            Err(Errno::EFAULT)
        );
        assert_eq!(
            copy_to_user(&mut UserPtrMut::bad(), b"a"),
            Err(Errno::EFAULT)
        );
    }
}
