//! Fuzz harness of the kernel command-line parser (`kernel/src/cmdline.rs`),
//! shared by the cargo-fuzz target `fuzz/fuzz_targets/cmdline.rs` and the
//! stable replay `fuzz/stable/cmdline_replay.rs`. The including crate root
//! declares `mod smbargs` and `mod cmdline` (by `#[path]` into
//! `kernel/src/`) and depends on `bench` (the parser hands benchmark words
//! to `bench::params`). Pure code.

use crate::cmdline as kcmdline;

/// Any bytes give a Config or an error that renders; parsing is a pure
/// function (the same bytes give the same verdict and the same error text).
pub fn cmdline(data: &[u8]) {
    use std::fmt::Write;
    let first = kcmdline::parse_bytes(data);
    let again = kcmdline::parse_bytes(data);
    assert_eq!(first.is_ok(), again.is_ok(), "parse is not deterministic");
    if let (Err(a), Err(b)) = (&first, &again) {
        let (mut sa, mut sb) = (String::new(), String::new());
        let _ = write!(sa, "{a}");
        let _ = write!(sb, "{b}");
        assert!(!sa.is_empty(), "empty error message");
        assert_eq!(sa, sb, "error text is not deterministic");
    }
    if data.first() == Some(&b'?') {
        let mut s = String::new();
        let _ = write!(s, "{}", kcmdline::Help);
        assert!(s.contains("selftest"));
    }
}
