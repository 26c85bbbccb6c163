//! Lookup tracing: one line per step of a walk, for students and debugging.
//!
//! Off by default and cheap when off: each trace point is one relaxed load of
//! a read-mostly flag and a predictable branch; the line is only formatted
//! when tracing is on. The host (vfsh, the kernel's serial console) installs
//! a sink that receives each formatted line.
//!
//! Touches: two globals (the flag and the sink).

use core::fmt;

use core::sync::atomic::{AtomicBool, Ordering};

static ENABLED: AtomicBool = AtomicBool::new(false);
/// Where trace lines go. A lock is fine here: it is only taken while
/// tracing is on, which is never on a measured path.
static SINK: spin::RwLock<Option<fn(fmt::Arguments<'_>)>> = spin::RwLock::new(None);

/// Install the function that prints trace lines (replacing any earlier one).
pub fn set_sink(f: fn(fmt::Arguments<'_>)) {
    *SINK.write() = Some(f);
}

/// Turn tracing on or off.
pub fn enable(on: bool) {
    ENABLED.store(on, Ordering::Relaxed);
}

/// Is tracing on?
#[inline(always)]
pub fn enabled() -> bool {
    ENABLED.load(Ordering::Relaxed)
}

#[doc(hidden)]
#[cold]
pub fn emit(args: fmt::Arguments<'_>) {
    let f = *SINK.read();
    if let Some(f) = f {
        f(args)
    }
}

/// `trace!("fmt", args…)`: emit one trace line when tracing is on.
#[cfg(not(fs_notrace))]
#[macro_export]
macro_rules! trace {
    ($($arg:tt)*) => {
        if $crate::trace::enabled() {
            $crate::trace::emit(format_args!($($arg)*));
        }
    };
}

/// With `--cfg fs_notrace` the trace points compile to nothing: the A/B
/// build that shows what tracing costs when it is off.
#[cfg(fs_notrace)]
#[macro_export]
macro_rules! trace {
    ($($arg:tt)*) => {};
}

// ---------------------------------------------------------------------------
// Walk steps (the `teaching` feature): the same walk as the text lines above,
// as structured events, for `trace json`, the step-through page
// (docs/explore/) and the race hook (`vfsh race STEP CMD…`).
//
// Without the feature (the kernel, and so every benchmark, builds fs
// without it) `step!` expands to nothing: no flag load, no call, no hook.

/// A sequence count the walk read at a step: `now == None` is a sample
/// (the walk remembers `sampled` to check later); `Some(now)` is a check,
/// which passes when nothing was written since (`now == sampled`).
#[derive(Clone, Copy, Debug)]
pub struct SeqNote {
    /// `d_seq`, `dir_seq`, `rename_seq` or `mount_seq` (the counts of
    /// `rename_lock` and `mount_lock`).
    pub which: &'static str,
    pub sampled: u32,
    pub now: Option<u32>,
}

impl SeqNote {
    /// A sample.
    pub fn sample(which: &'static str, sampled: u32) -> Self {
        SeqNote {
            which,
            sampled,
            now: None,
        }
    }
    /// A check of `sampled` against the count read `now`.
    pub fn check(which: &'static str, sampled: u32, now: u32) -> Self {
        SeqNote {
            which,
            sampled,
            now: Some(now),
        }
    }
    /// Did the check pass (or is this a sample)?
    pub fn ok(&self) -> bool {
        self.now.is_none_or(|n| n == self.sampled)
    }
}

/// One step of a walk, as the step sink receives it.
pub struct Step<'a> {
    /// The step's function as the trace names it (`lookup_fast`,
    /// `step_into`, `try_to_unlazy`, …); with `name` it makes the step name
    /// `race` matches (`lookup_fast b`).
    pub func: &'static str,
    /// The component (or the path, for `walk`), or empty.
    pub name: &'a [u8],
    /// In RCU-walk (else ref-walk).
    pub rcu: bool,
    /// The dentry this step is about (found, stood on, allocated).
    pub dentry: Option<&'a crate::dcache::Dentry>,
    /// A sequence sample or check.
    pub seq: Option<SeqNote>,
    /// A lock this step takes (`i_rwsem shared`, …).
    pub lock: Option<&'static str>,
    /// Did this step allocate a dentry?
    pub alloc: bool,
    /// The handover reason, for `try_to_unlazy` and `restart`.
    pub reason: Option<crate::stats::FallbackReason>,
    /// What happened, in a few words.
    pub what: &'a str,
}

static STEPS_ON: AtomicBool = AtomicBool::new(false);
static STEP_SINK: spin::RwLock<Option<fn(&Step<'_>)>> = spin::RwLock::new(None);

/// Install the function that receives walk steps (replacing any earlier one).
pub fn set_step_sink(f: fn(&Step<'_>)) {
    *STEP_SINK.write() = Some(f);
}

/// Turn step events on or off.
pub fn enable_steps(on: bool) {
    STEPS_ON.store(on, Ordering::Relaxed);
}

/// Are step events on?
#[inline(always)]
pub fn steps_enabled() -> bool {
    STEPS_ON.load(Ordering::Relaxed)
}

#[doc(hidden)]
#[cold]
pub fn emit_step(s: &Step<'_>) {
    let f = *STEP_SINK.read();
    if let Some(f) = f {
        f(s)
    }
}

/// `step!(func, name, rcu, field: value…)`: hand one [`Step`] to the step
/// sink when steps are on. Unnamed fields default to none/false/"".
#[cfg(all(feature = "teaching", not(fs_notrace)))]
#[macro_export]
macro_rules! step {
    (@set $s:ident, dentry, $v:expr) => { $s.dentry = Some($v) };
    (@set $s:ident, seq, $v:expr) => { $s.seq = Some($v) };
    (@set $s:ident, seq_opt, $v:expr) => { $s.seq = $v };
    (@set $s:ident, lock, $v:expr) => { $s.lock = Some($v) };
    (@set $s:ident, reason, $v:expr) => { $s.reason = Some($v) };
    (@set $s:ident, $f:ident, $v:expr) => { $s.$f = $v };
    ($func:expr, $name:expr, $rcu:expr $(, $field:ident : $val:expr)* $(,)?) => {
        if $crate::trace::steps_enabled() {
            #[allow(unused_mut)]
            let mut s = $crate::trace::Step {
                func: $func,
                name: $name,
                rcu: $rcu,
                dentry: None,
                seq: None,
                lock: None,
                alloc: false,
                reason: None,
                what: "",
            };
            $( $crate::step!(@set s, $field, $val); )*
            $crate::trace::emit_step(&s);
        }
    };
}

/// Without the `teaching` feature (or with `--cfg fs_notrace`) step points
/// compile to nothing.
#[cfg(not(all(feature = "teaching", not(fs_notrace))))]
#[macro_export]
macro_rules! step {
    ($($arg:tt)*) => {};
}
