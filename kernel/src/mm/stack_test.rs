//! Self-test of guarded stacks (listed in `crate::selftest`): a fresh stack
//! has the promised layout, its pages read through the fault probe, and the
//! page under it faults.
//!
//! Safe code only; beside `stack`, as `poison_test` is beside `poison`.
//! Touches: one stack (allocated and leaked, as kernel stacks are), the
//! fault probe of `crate::arch`.

use alloc::string::String;

use crate::arch::probe;
use crate::ktest::{ensure, TestResult};

pub(crate) fn guarded_stack() -> TestResult {
    let s = crate::mm::stack::alloc(8192).map_err(String::from)?;
    ensure!(
        s.bottom == s.guard + 4096 && s.top == s.bottom + 8192,
        "stack layout {s:?}"
    );
    ensure!(
        crate::mm::stack::is_guard_page(s.guard),
        "guard page not recognised"
    );
    let top_word = probe::read_u64((s.top - 8) as u64);
    let bottom_word = probe::read_u64(s.bottom as u64);
    ensure!(
        top_word.is_ok() && bottom_word.is_ok(),
        "stack pages not readable: {top_word:?} {bottom_word:?}"
    );
    let guard = probe::read_u64((s.bottom - 8) as u64);
    ensure!(
        guard.is_err(),
        "the word under the stack is readable: {guard:?}"
    );
    ensure!(
        crate::mm::stack::readable(s.bottom, 8192) && !crate::mm::stack::readable(s.guard, 8),
        "bounds"
    );
    Ok(())
}
