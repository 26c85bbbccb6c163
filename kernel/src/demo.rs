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
//! - `demo=table` (`make run`'s default): statneg through the default
//!   frontend (`stat`: the system call path, `bench::params::Frontend`) on
//!   min(4, CPUs) tasks in [`TABLE_ROUNDS`] rounds (`rounds=N` fewer); a
//!   round runs every design once (a warm-up and a measured window each),
//!   every second round backwards ([`bench::rounds`]). Its title names the
//!   frontend and the lock; then one table of each design's median round
//!   (ops/s and per-op counters), a line `vcpus=V host_cores=C lock=K
//!   frontend=F` (C from `host_cores=`, `?` without it), when V > C
//!   `overcommit: V vCPUs on C host cores`, the lock and why
//!   ([`kernel::demotable::demo_lock`]: the figures' qspinlock unless
//!   `lock=` or overcommit says otherwise), then per design its median,
//!   min–max and per-round ratio to the baseline (windows below a tenth of
//!   their design's median flagged and left out of the ratios), a sign
//!   test per pair of designs with Holm's correction over the pairs, and
//!   the pairs it cannot tell apart.
//!
//! Touches: the console, the fs crate's trace switch and a fresh tmpfs per
//! design; the table runs `bench` through [`crate::benchrun`] and is laid
//! out by [`kernel::demotable`]. Safe code only.

use alloc::string::String;
use alloc::vec::Vec;
use core::fmt;

use bench::params::{Bench, Design, Frontend, LockKind, Params};
use bench::rounds::{
    Flagged, PairLine, PairsHeader, Rounds, RoundsHeader, RoundsLine, Verdict, Window,
};
use fs::vfs::Vfs;
use kernel::demotable::{demo_lock, Header, Line, Row, MIN_DESIGN_WIDTH, TABLE_ROUNDS};

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

/// Each window's warm-up, seconds (a fresh tmpfs per window).
pub const TABLE_WARMUP_S: u32 = 1;
/// Each window's measured seconds: [`TABLE_ROUNDS`] (8) rounds of 4
/// designs of 1 + 2 s are 96 s, and each window's fresh tmpfs, shrink and
/// grace period add to it: about two minutes under TCG on a busy 2-core
/// host.
pub const TABLE_SECS: u32 = 2;

/// `demo=table` (`host_cores`: what `host_cores=` said; `asked`: what
/// `lock=` said; `rounds`: what `rounds=` said, else [`TABLE_ROUNDS`]).
/// Returns false if a run failed.
pub fn table_demo(host_cores: Option<u32>, asked: Option<LockKind>, rounds: Option<u32>) -> bool {
    let table_rounds = rounds.map_or(TABLE_ROUNDS, |n| n as usize);
    let vcpus = smp::online_count();
    let tasks = vcpus.min(4);
    let (lock, why) = demo_lock(asked, vcpus, host_cores);
    let designs: Vec<Design> = Design::all().collect();
    let names: Vec<&str> = designs.iter().map(|d| d.name()).collect();
    let frontend = Frontend::DEFAULT;
    let mut rounds = Rounds::new(designs.len());
    for round in 0..table_rounds {
        for i in bench::rounds::order(designs.len(), round) {
            let p = Params {
                bench: Bench::Statneg,
                tasks,
                design: designs[i],
                warmup: TABLE_WARMUP_S,
                secs: TABLE_SECS,
                lock,
                pause: 0,
                names: bench::params::DEFAULT_NAMES,
                frontend,
            };
            // The will-it-scale block goes to the log only (debug level).
            let mut text = String::new();
            let r = benchrun::run_to(&p, &mut text);
            log::debug!("demo: round {round}: {p}:\n{text}");
            fs::dcache::shrink_all();
            rcu::synchronize_rcu();
            match r {
                Ok(s) => rounds.push(
                    i,
                    Window {
                        ops: s.average,
                        per_op: s.per_op.unwrap_or_default(),
                    },
                ),
                Err(e) => {
                    kprintln!("demo: {p}: {e}");
                    return false;
                }
            }
        }
    }
    kprintln!(
        "statneg frontend={frontend} lock={lock} (every task stat()s /nonexistent in a tmpfs through the system call path), {table_rounds} rounds of {TABLE_WARMUP_S} s warm-up + {TABLE_SECS} s measured per design, designs interleaved (every second round backwards), this guest:"
    );
    // The design column as wide as the registry's longest name.
    let w = fs::dcache::design::name_width(MIN_DESIGN_WIDTH);
    kprintln!("{}", Header(w));
    for (i, name) in names.iter().enumerate() {
        let m = rounds.median_window(i).unwrap_or_default();
        let row = Row {
            design: name,
            tasks,
            ops: m.ops,
            per_op: m.per_op,
        };
        kprintln!("{}", Line(w, &row));
    }
    match host_cores {
        Some(c) => kprintln!("vcpus={vcpus} host_cores={c} lock={lock} frontend={frontend}"),
        None => kprintln!("vcpus={vcpus} host_cores=? lock={lock} frontend={frontend}"),
    }
    if let Some(c) = host_cores.filter(|&c| (c as usize) < vcpus) {
        kprintln!(
            "overcommit: {vcpus} vCPUs on {c} host cores (the host deschedules vCPUs: ops/s vary from run to run)"
        );
    }
    kprintln!("{why}");
    kprintln!(
        "each row above is the design's median round (ops/s and its per-op counts); per round, ÷base = ops/s ÷ {}'s in the same round:",
        names[0]
    );
    kprintln!("{}", RoundsHeader(w));
    for (i, name) in names.iter().enumerate() {
        kprintln!("{}", RoundsLine(w, &rounds, i, 0, name));
    }
    kprintln!("{}", Flagged(&rounds, &names));
    let tested = rounds.tested();
    kprintln!("{}", PairsHeader(rounds.rounds(), tested.len()));
    for t in &tested {
        kprintln!("{}", PairLine(t, &names));
    }
    kprintln!("{}", Verdict(&tested, &names));
    true
}

/// Run the demo `which` and exit.
pub fn run(
    which: kernel::cmdline::Demo,
    trace_on: bool,
    host_cores: Option<u32>,
    lock: Option<LockKind>,
    rounds: Option<u32>,
) -> ! {
    let ok = match which {
        kernel::cmdline::Demo::Trace => trace_demo(trace_on),
        kernel::cmdline::Demo::Table => table_demo(host_cores, lock, rounds),
        kernel::cmdline::Demo::Pingpong => crate::benchrun::pingpong(),
    };
    exit(if ok {
        ExitCode::Success
    } else {
        ExitCode::RunFailed
    })
}
