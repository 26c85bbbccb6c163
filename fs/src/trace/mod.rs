//! Lookup tracing: one line per step of a walk, for students and debugging.
//!
//! Off by default and cheap when off: each trace point is one relaxed load of
//! a read-mostly flag and a predictable branch; the line is only formatted
//! when tracing is on. The host (vfsh, the kernel's serial console) installs
//! a sink that receives each formatted line.
//!
//! A step of the path walk is one typed event ([`crate::walk_event`]),
//! whose text line goes through this module's flag and sink.
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

/// Is tracing on? Always false with `--cfg fs_notrace` (no load at all).
#[inline(always)]
pub fn enabled() -> bool {
    !cfg!(fs_notrace) && ENABLED.load(Ordering::Relaxed)
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
/// build that shows what tracing costs when it is off. Their arguments are
/// still type-checked, behind a constant `false`, so a value computed only
/// for a trace line is not an unused variable there.
#[cfg(fs_notrace)]
#[macro_export]
macro_rules! trace {
    ($($arg:tt)*) => {
        if false {
            let _ = format_args!($($arg)*);
        }
    };
}
