//! Demonstrations and the lookup trace on the console.
//!
//! - `trace=lookup`: [`enable_trace`] installs a trace sink that prints each
//!   line of the fs crate's walk trace to the console prefixed `# `, and
//!   turns tracing on. Off by default: each trace point then costs one
//!   relaxed load and a not-taken branch.
//! - `demo=trace`: for each ENOENT design, a tmpfs with `/a/b`, a header
//!   `== design D`, and the trace of `stat("/a/b/missing")` done twice (the
//!   second shows what the first left behind: the negative design's cached
//!   dentry answers it).
//! - `demo=table` (`make run`'s default): statneg on min(4, CPUs) tasks for
//!   1 s per design, one table of ops/s and per-op counters, then a line
//!   `vcpus=V host_cores=C lock=K` (C from `host_cores=`, `?` without it)
//!   and, when V > C, `overcommit: V vCPUs on C host cores`.
//!
//! Touches: the console, the fs crate's trace switch and a fresh tmpfs per
//! design; the table runs `bench` through [`crate::benchrun`] and is laid
//! out by [`kernel::demotable`]. Safe code only.

use alloc::string::String;
use core::fmt;

use bench::params::{Bench, Design, Params};
use fs::vfs::Vfs;
use kernel::demotable::{Header, Line, Row, MIN_DESIGN_WIDTH};

use crate::benchrun;
use crate::console::kprintln;
use crate::exit::{exit, ExitCode};
use crate::smp;
use crate::sync::rcu;

fn sink(args: fmt::Arguments<'_>) {
    crate::console::print(format_args!("# {args}\n"));
}

/// `trace=lookup`: every walk step goes to the console as `# …`.
pub fn enable_trace() {
    fs::trace::set_sink(sink);
    fs::trace::enable(true);
}

/// The path the trace demo looks up.
pub const MISSING: &[u8] = b"/a/b/missing";

fn errno_or_ok<T>(r: &fs::KResult<T>) -> &'static str {
    match r {
        Ok(_) => "found",
        Err(e) => e.name(),
    }
}

/// `demo=trace`. Returns false if a lookup gave a wrong answer.
pub fn trace_demo(keep_on: bool) -> bool {
    fs::trace::set_sink(sink);
    let mut ok = true;
    for d in Design::all() {
        let vfs = match Vfs::new_tmpfs(&d.mount_opts()) {
            Ok(v) => v,
            Err(e) => {
                kprintln!("demo: tmpfs {}: {e}", d.mount_opts());
                return false;
            }
        };
        fs::trace::enable(keep_on);
        let made = vfs
            .mkdir(b"/a", 0o755)
            .and_then(|_| vfs.mkdir(b"/a/b", 0o755));
        if let Err(e) = made {
            kprintln!("demo: mkdir /a/b: {e}");
            return false;
        }
        kprintln!("== design {d}");
        for n in ["first", "second"] {
            kprintln!("-- {n} stat(\"/a/b/missing\")");
            fs::trace::enable(true);
            let r = vfs.stat(MISSING);
            fs::trace::enable(keep_on);
            kprintln!("-> {}", errno_or_ok(&r));
            ok &= matches!(r, Err(fs::Errno::ENOENT));
        }
    }
    fs::dcache::shrink_all();
    rcu::synchronize_rcu();
    ok
}

/// `demo=table` (`host_cores`: what `host_cores=` said). Returns false if
/// a run failed.
pub fn table_demo(host_cores: Option<u32>) -> bool {
    let tasks = smp::online_count().min(4);
    let mut rows = alloc::vec::Vec::new();
    for design in Design::all() {
        let p = Params {
            bench: Bench::Statneg,
            tasks,
            design,
            warmup: 0,
            secs: 1,
            lock: fs::sync::rawlock::default_kind(),
            pause: 0,
            names: bench::params::DEFAULT_NAMES,
            frontend: bench::params::Frontend::DEFAULT,
        };
        // The will-it-scale block goes to the log only (debug level).
        let mut text = String::new();
        let r = benchrun::run_to(&p, &mut text);
        log::debug!("demo: {p}:\n{text}");
        fs::dcache::shrink_all();
        rcu::synchronize_rcu();
        match r {
            Ok(s) => rows.push(Row {
                design: design.name(),
                tasks,
                ops: s.average,
                per_op: s.per_op.unwrap_or_default(),
            }),
            Err(e) => {
                kprintln!("demo: {p}: {e}");
                return false;
            }
        }
    }
    kprintln!("statneg (every task stats /nonexistent in a tmpfs), 1 s per design, this guest:");
    // The design column as wide as the registry's longest name.
    let w = fs::dcache::design::name_width(MIN_DESIGN_WIDTH);
    kprintln!("{}", Header(w));
    for r in &rows {
        kprintln!("{}", Line(w, r));
    }
    let vcpus = smp::online_count();
    let lock = fs::sync::rawlock::default_kind();
    match host_cores {
        Some(c) => kprintln!("vcpus={vcpus} host_cores={c} lock={lock}"),
        None => kprintln!("vcpus={vcpus} host_cores=? lock={lock}"),
    }
    if let Some(c) = host_cores.filter(|&c| (c as usize) < vcpus) {
        kprintln!(
            "overcommit: {vcpus} vCPUs on {c} host cores (the host deschedules vCPUs: ops/s vary from run to run)"
        );
    }
    true
}

/// Run the demo `which` and exit.
pub fn run(which: kernel::cmdline::Demo, trace_on: bool, host_cores: Option<u32>) -> ! {
    let ok = match which {
        kernel::cmdline::Demo::Trace => trace_demo(trace_on),
        kernel::cmdline::Demo::Table => table_demo(host_cores),
        kernel::cmdline::Demo::Pingpong => crate::benchrun::pingpong(),
    };
    exit(if ok {
        ExitCode::Success
    } else {
        ExitCode::RunFailed
    })
}
