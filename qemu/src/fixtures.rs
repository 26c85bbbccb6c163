//! Tests that cannot silently not run: the one place a test decides what a
//! missing fixture (root, Samba, QEMU, the kernel image, a helper binary)
//! means.
//!
//! A test that finds its fixture missing calls [`skip`] and returns. What
//! that does depends on `REQUIRE_FIXTURES`:
//! - `REQUIRE_FIXTURES=1` (what `make test` sets): the test fails, and the
//!   panic message names the test, the fixture and the reason
//!   (`cifs_samba: needs Samba, which is missing here: smbd not installed …`).
//! - unset (plain `cargo test`): the test passes without checking anything,
//!   one `SKIP test: needs FIXTURE: reason` line goes to stderr at once
//!   (past the harness's output capture, so it is seen), and when the test
//!   binary exits it prints `SKIPPED: N tests of this binary did not run
//!   (missing fixtures; REQUIRE_FIXTURES=1 makes that a failure)`.
//!
//! Touches: the process environment (read), stderr, and one function run by
//! the process's exit for the closing count (`ctor`'s `#[dtor]`).

use std::io::Write;
use std::sync::atomic::{AtomicUsize, Ordering};

/// The environment variable that turns a missing fixture into a failure.
pub const REQUIRE_FIXTURES: &str = "REQUIRE_FIXTURES";

/// Tests of this process that skipped.
static SKIPPED: AtomicUsize = AtomicUsize::new(0);

/// True when `REQUIRE_FIXTURES=1`: a missing fixture is then a failure.
pub fn required() -> bool {
    std::env::var(REQUIRE_FIXTURES).is_ok_and(|v| v == "1")
}

/// How many tests of this process have skipped so far.
pub fn skipped() -> usize {
    SKIPPED.load(Ordering::Relaxed)
}

/// The test running on this thread cannot run because `fixture` (a short
/// name: `"Samba"`, `"root"`, `"QEMU"`, `"the kernel image"`) is missing,
/// for `why`; `file` names the test file (`"smb_samba"`). Under
/// `REQUIRE_FIXTURES=1` this panics with all three; otherwise it notes the
/// skip (see the module docs) and the caller returns.
pub fn skip(file: &str, fixture: &str, why: impl std::fmt::Display) {
    let test = test_name(file);
    if required() {
        panic!(
            "{test}: needs {fixture}, which is missing here: {why} \
             ({REQUIRE_FIXTURES}=1: a missing fixture is a failure)"
        );
    }
    SKIPPED.fetch_add(1, Ordering::Relaxed);
    // Straight to the stderr handle, not `eprintln!`: the test harness
    // captures the macros' output of passing tests, and a skip must be seen.
    let _ = writeln!(std::io::stderr(), "SKIP {test}: needs {fixture}: {why}");
}

/// `file::test`: the harness names each test's thread after the test.
fn test_name(file: &str) -> String {
    match std::thread::current().name() {
        Some(t) if t != "main" => format!("{file}::{t}"),
        _ => file.to_string(),
    }
}

/// The closing count, printed by the process's exit (after the harness's
/// `test result:` line), only when a test of this binary skipped.
///
/// The test harness has no end-of-run hook and `std` runs nothing at exit,
/// so `ctor`'s `#[dtor]` registers this with the C library's `atexit` when
/// the binary starts (the crate holds the raw registration). Code run
/// from `exit` finds parts of `std` shut down: this one reads an atomic
/// and writes to the unbuffered stderr handle, ignoring errors, and never
/// panics or unwinds. (`ctor` 1.x wants the function marked as unchecked
/// code, which the fence keeps to its three places; 0.6 takes a safe one.)
#[ctor::dtor]
fn print_skipped() {
    let n = skipped();
    if n == 0 {
        return;
    }
    let _ = writeln!(
        std::io::stderr(),
        "SKIPPED: {n} test{} of this binary did not run (missing fixtures; \
         {REQUIRE_FIXTURES}=1 makes that a failure)",
        if n == 1 { "" } else { "s" }
    );
}
