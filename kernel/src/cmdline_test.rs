//! Self-test of the command-line parser (listed in `crate::selftest`): the
//! library's `kernel::cmdline::parse`, run once more inside the guest, where
//! it must work before the heap exists (a known line parses, an unknown key
//! and a bad value are refused with the word they name).
//!
//! Safe code only; beside `cmdline.rs`, but declared by the binary
//! (`main.rs`), since it runs in the guest and the parser lives in the
//! library half of this crate. Touches nothing but the parser.

use alloc::format;

use crate::ktest::{ensure, TestResult};

pub(crate) fn cmdline_parser() -> TestResult {
    use kernel::cmdline::{parse, CmdlineError};
    let c = parse("selftest hz=250").map_err(|e| format!("{e}"))?;
    ensure!(c.selftest && c.hz == 250, "parsed {c:?}");
    ensure!(
        parse("bogus=1") == Err(CmdlineError::UnknownKey("bogus")),
        "bogus=1 accepted"
    );
    ensure!(parse("hz=x").is_err(), "hz=x accepted");
    Ok(())
}
