//! Fuzz harness of the kernel command line: the one command-line parser
//! (`bench::cmdline`) over the kernel's key tables (`kernel::cmdline`, its
//! own keys beside `bench::params::keys`), shared by the stable replay
//! (`replay.rs` beside this file) and the cargo-fuzz target
//! `fuzz/fuzz_targets/cmdline.rs`, which reaches it through this library's
//! `fuzz` feature. Pure code.
//!
//! The kernel parses its command line before its heap exists, so an
//! allocation anywhere in parsing or in rendering the error is a kernel
//! panic ("memory allocation of 5 bytes failed") that a host fuzzer, which
//! has a heap, would never see. This harness therefore installs
//! `assert_no_alloc`'s allocator for the whole binary and runs the parser
//! and the error's `Display` with allocation forbidden on this thread: any
//! allocation there fails the input. The binary that runs it installs
//! `assert_no_alloc::AllocDisabler` as its global allocator (a library
//! cannot choose the allocator of its users); [`allocation_is_detected`]
//! tells whether it did.

use core::fmt::{self, Write};

use crate::cmdline as kcmdline;

/// A fixed buffer to render messages into without allocating (what the
/// kernel's console does); text past its end is counted, not kept.
struct Buf<const N: usize> {
    bytes: [u8; N],
    len: usize,
    total: usize,
}

impl<const N: usize> Buf<N> {
    fn new() -> Self {
        Buf {
            bytes: [0; N],
            len: 0,
            total: 0,
        }
    }
    /// What was kept (may end inside a UTF-8 sequence when cut).
    fn bytes(&self) -> &[u8] {
        &self.bytes[..self.len]
    }
    /// Bytes written in all, kept or not.
    fn total(&self) -> usize {
        self.total
    }
}

impl<const N: usize> Write for Buf<N> {
    fn write_str(&mut self, s: &str) -> fmt::Result {
        let b = s.as_bytes();
        let m = b.len().min(N - self.len);
        self.bytes[self.len..self.len + m].copy_from_slice(&b[..m]);
        self.len += m;
        self.total += b.len();
        Ok(())
    }
}

/// The verdict and the rendered error of one parse, made with allocation
/// forbidden; returns how many allocations were attempted (0 is right).
fn parse_without_heap(data: &[u8], out: &mut Buf<8192>) -> (bool, u32) {
    let before = assert_no_alloc::violation_count();
    let ok = assert_no_alloc::assert_no_alloc(|| match kcmdline::parse_bytes(data) {
        Ok(_) => true,
        Err(e) => {
            let _ = write!(out, "{e}");
            false
        }
    });
    (ok, assert_no_alloc::violation_count() - before)
}

/// Any bytes give a Config or an error that renders; parsing is a pure
/// function (the same bytes give the same verdict and the same error text)
/// and never allocates, errors and the help text included.
pub fn cmdline(data: &[u8]) {
    let (mut a, mut b) = (Buf::new(), Buf::new());
    let (first, allocs) = parse_without_heap(data, &mut a);
    assert_eq!(
        allocs, 0,
        "the parser allocated {allocs} times (the kernel has no heap yet)"
    );
    let (again, _) = parse_without_heap(data, &mut b);
    assert_eq!(first, again, "parse is not deterministic");
    if !first {
        assert!(a.total() > 0, "empty error message");
        assert_eq!(a.bytes(), b.bytes(), "error text is not deterministic");
    }
    if data.first() == Some(&b'?') {
        let mut h: Buf<16384> = Buf::new();
        let before = assert_no_alloc::violation_count();
        assert_no_alloc::assert_no_alloc(|| {
            let _ = write!(h, "{}", kcmdline::Help);
        });
        assert_eq!(assert_no_alloc::violation_count(), before, "Help allocated");
        assert!(h.bytes().windows(8).any(|w| w == b"selftest"));
    }
}

/// The harness must catch an allocating parser: a check that cannot fail
/// would prove nothing.
pub fn allocation_is_detected() -> u32 {
    let before = assert_no_alloc::violation_count();
    assert_no_alloc::assert_no_alloc(|| {
        core::hint::black_box(std::string::String::from("x"));
    });
    assert_no_alloc::violation_count() - before
}
